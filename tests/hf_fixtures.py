"""Hugging Face `klue`-schema exports of official KLUE files, written by the `datasets` library itself
without hub access: rows as the shipped HF loading script (huggingface/datasets, datasets/klue/klue.py)
makes them, labels as names, encoded by `Dataset.from_dict` with the script's Features, then written with
`to_json`, `to_parquet` and `save_to_disk`. Used by the tests on the shipped sample, and by hand on ../shared:

    python tests/hf_fixtures.py ../shared/klue /tmp/klue-hf      # <config>/{train,validation}.{jsonl,parquet}

    python tests/hf_fixtures.py --sample tests/data/hf-jsonl        # the committed JSON Lines of the sample

Written independently of baselines.data.hf, so that a mistake in one shows against the other. The JSON Lines
that `datasets` writes of the shipped sample are committed (gzipped, under tests/data/hf-jsonl/), so that the
tests of reading them need only the core; a test with `datasets` installed checks that they are what it writes.
"""
from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

YNAT = ["IT과학", "경제", "사회", "생활문화", "세계", "스포츠", "정치"]
NLI = ["entailment", "neutral", "contradiction"]
NER = ["B-DT", "I-DT", "B-LC", "I-LC", "B-OG", "I-OG", "B-PS", "I-PS", "B-QT", "I-QT", "B-TI", "I-TI", "O"]
RE = ["no_relation", "org:dissolved", "org:founded", "org:place_of_headquarters", "org:alternate_names",
      "org:member_of", "org:members", "org:political/religious_affiliation", "org:product", "org:founded_by",
      "org:top_members/employees", "org:number_of_employees/members", "per:date_of_birth", "per:date_of_death",
      "per:place_of_birth", "per:place_of_death", "per:place_of_residence", "per:origin", "per:employee_of",
      "per:schools_attended", "per:alternate_names", "per:parents", "per:children", "per:siblings", "per:spouse",
      "per:other_family", "per:colleagues", "per:product", "per:religion", "per:title"]
FIELDS = {
    "ynat": ["guid", "title", "label", "url", "date"],
    "sts": ["guid", "source", "sentence1", "sentence2", "labels"],
    "re": ["guid", "sentence", "subject_entity", "object_entity", "label", "source"],
}


def _tsv_sentences(path: Path):
    """(header text, token rows) of a KLUE TSV: '## guid<TAB>text' headers, blank lines between sentences."""
    header, rows = None, []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.startswith("##"):
            header = line.split("\t", 1)[1] if "\t" in line else None
        elif line.strip():
            rows.append(line.split("\t"))
        elif rows:
            yield header, rows
            rows = []
    if rows:
        yield header, rows


def hf_rows(config: str, path: Path) -> list[dict]:
    """The rows that the HF loading script makes of an official file, ClassLabel columns as names (the
    script hands names to `datasets` too, which encodes them)."""
    if config in FIELDS:
        rows = [{key: row.get(key) for key in FIELDS[config]} for row in json.loads(path.read_text(encoding="utf-8"))]
        for row in rows:
            if config == "ynat":
                row["url"], row["date"] = row["url"] or "", row["date"] or ""
        return rows
    if config == "nli":
        return [{"guid": row["guid"], "source": row.get("source", row.get("genre")), "premise": row["premise"],
                 "hypothesis": row["hypothesis"], "label": row["gold_label"]}
                for row in json.loads(path.read_text(encoding="utf-8"))]
    if config == "ner":
        return [{"sentence": header, "tokens": [row[0] for row in rows], "ner_tags": [row[1] for row in rows]}
                for header, rows in _tsv_sentences(path)]
    if config == "dp":
        return [{"sentence": header, **{name: [int(row[column]) if name in ("index", "head") else row[column]
                                               for row in rows]
                                        for column, name in enumerate(["index", "word_form", "lemma", "pos", "head",
                                                                       "deprel"])}}
                for header, rows in _tsv_sentences(path)]
    if config == "mrc":
        rows = []
        for document in json.loads(path.read_text(encoding="utf-8"))["data"]:
            for paragraph in document["paragraphs"]:
                for qa in paragraph["qas"]:
                    answers = list(qa["answers"]) + list(qa.get("plausible_answers") or [])
                    rows.append({"title": document.get("title", ""), "context": paragraph["context"].strip(),
                                 "news_category": document.get("news_category", ""), "source": document.get("source"),
                                 "guid": qa["guid"], "is_impossible": qa["is_impossible"],
                                 "question_type": qa.get("question_type"), "question": qa["question"].strip(),
                                 "answers": {"answer_start": [a["answer_start"] for a in answers],
                                             "text": [a["text"].strip() for a in answers]}})
        return rows
    if config == "wos":
        rows = json.loads(path.read_text(encoding="utf-8"))
        return [{"guid": row["guid"], "domains": row["domains"],
                 "dialogue": [{"role": turn["role"], "text": turn["text"], "state": turn.get("state", [])}
                              for turn in row["dialogue"]]} for row in rows]
    raise KeyError(config)


def features(config: str, label_names: dict[str, list[str]] | None = None):
    """The script's Features of `config`; label_names replaces a ClassLabel's names (a draft's order, or
    names that are not KLUE's)."""
    from datasets import ClassLabel, Features, List, Sequence, Value
    names = {"ynat": YNAT, "nli": NLI, "ner": NER, "re": RE, **(label_names or {})}
    string, int32 = Value("string"), Value("int32")
    entity = {"word": string, "start_idx": int32, "end_idx": int32, "type": string}
    return Features({
        "ynat": lambda: {"guid": string, "title": string, "label": ClassLabel(names=names["ynat"]), "url": string,
                         "date": string},
        "sts": lambda: {"guid": string, "source": string, "sentence1": string, "sentence2": string,
                        "labels": {"label": Value("float64"), "real-label": Value("float64"),
                                   "binary-label": ClassLabel(names=["negative", "positive"])}},
        "nli": lambda: {"guid": string, "source": string, "premise": string, "hypothesis": string,
                        "label": ClassLabel(names=names["nli"])},
        "ner": lambda: {"sentence": string, "tokens": Sequence(string),
                        "ner_tags": Sequence(ClassLabel(names=names["ner"]))},
        "re": lambda: {"guid": string, "sentence": string, "subject_entity": entity, "object_entity": entity,
                       "label": ClassLabel(names=names["re"]), "source": string},
        "dp": lambda: {"sentence": string, "index": List(int32), "word_form": List(string), "lemma": List(string),
                       "pos": List(string), "head": List(int32), "deprel": List(string)},
        "mrc": lambda: {"title": string, "context": string, "news_category": string, "source": string,
                        "guid": string, "is_impossible": Value("bool"), "question_type": int32, "question": string,
                        "answers": Sequence({"answer_start": int32, "text": string})},
        "wos": lambda: {"guid": string, "domains": List(string),
                        "dialogue": List({"role": string, "text": string, "state": List(string)})},
    }[config]())


def dataset(config: str, rows: list[dict], label_names: dict[str, list[str]] | None = None):
    """A `datasets.Dataset` of HF rows, ClassLabel names encoded by `datasets` with the script's Features."""
    from datasets import Dataset
    columns = {name: [row[name] for row in rows] for name in (rows[0] if rows else {})}
    return Dataset.from_dict(columns, features=features(config, label_names))


def write_jsonl(rows, path: Path) -> Path:
    """A Dataset (or rows, as a user writes predictions) as JSON Lines: Dataset.to_json for a Dataset."""
    if isinstance(rows, list):
        path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    else:
        rows.to_json(str(path), force_ascii=False)
    return path


def write_parquet(data, path: Path) -> Path:
    data.to_parquet(str(path))
    return path


def write_saved_dataset(data, folder: Path) -> Path:
    data.save_to_disk(str(folder))
    return folder


OFFICIAL = {"ynat": ("ynat-v1.1", "ynat-v1.1_{}.json"), "sts": ("klue-sts-v1.1", "klue-sts-v1.1_{}.json"),
            "nli": ("klue-nli-v1.1", "klue-nli-v1.1_{}.json"), "ner": ("klue-ner-v1.1", "klue-ner-v1.1_{}.tsv"),
            "re": ("klue-re-v1.1", "klue-re-v1.1_{}.json"), "dp": ("klue-dp-v1.1", "klue-dp-v1.1_{}.tsv"),
            "mrc": ("klue-mrc-v1.1", "klue-mrc-v1.1_{}.json"), "wos": ("wos-v1.1", "wos-v1.1_{}.json")}


def export_folder(source: Path, target: Path) -> list[Path]:
    """Every official (or partial: 'train.first5000') file under `source`, as <config>/<name>.jsonl and
    .parquet under `target`, with the name's split ('dev' -> 'validation')."""
    written = []
    for config, (folder, pattern) in OFFICIAL.items():
        for path in sorted((source / folder).glob(pattern.format("*"))):
            stem = path.name[len(pattern.split("{}")[0]):-len(pattern.split("{}")[1])].replace("dev", "validation")
            data = dataset(config, hf_rows(config, path))
            (target / config).mkdir(parents=True, exist_ok=True)
            written.append(write_jsonl(data, target / config / f"{stem}.jsonl"))
            written.append(write_parquet(data, target / config / f"{stem}.parquet"))
        for extra in ("ontology.json",):  # WoS's ontology is not part of the HF dataset: it goes beside
            if (source / folder / extra).is_file():
                written.append(Path(shutil.copy(source / folder / extra, target / config / extra)))
    return written


SAMPLE_EXPORTS = Path(__file__).with_name("data") / "hf-jsonl"


def sample_jsonl_exports(target: Path) -> list[Path]:
    """The shipped sample's train and dev files of every built-in task, as `datasets` writes them to JSON Lines,
    gzipped with no time stamp (so that rewriting them changes no byte): <code>/{train,validation}.jsonl.gz."""
    from baselines import api
    from baselines.runner.registry import TASK_CODES
    written = []
    for code in TASK_CODES:
        (target / code).mkdir(parents=True, exist_ok=True)
        for split, name in (("train", "train"), ("dev", "validation")):
            plain = write_jsonl(dataset(code, hf_rows(code, api.data_file(code, split))),
                                target / code / f"{name}.jsonl")
            packed = target / code / f"{name}.jsonl.gz"
            with open(packed, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
                out.write(plain.read_bytes())
            plain.unlink()
            written.append(packed)
    return written


if __name__ == "__main__":
    if sys.argv[1] == "--sample":
        written_paths = sample_jsonl_exports(Path(sys.argv[2]))
    else:
        written_paths = export_folder(Path(sys.argv[1]), Path(sys.argv[2]))
    for written_path in written_paths:
        print(written_path)
