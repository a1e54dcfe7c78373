"""Hugging Face `klue`-schema exports of official KLUE files, built here without hub access: rows as the HF
loading script (huggingface/datasets, datasets/klue/klue.py) makes them, written as `Dataset.to_json`,
`to_parquet` and `save_to_disk` would. Used by the tests on the shipped sample, and by hand on ../shared:

    python tests/hf_fixtures.py ../shared/klue /tmp/klue-hf      # <config>/{train,validation}.{jsonl,parquet}

Written independently of baselines.hf, so that a mistake in one shows against the other.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

YNAT = ["IT과학", "경제", "사회", "생활문화", "세계", "스포츠", "정치"]
NLI = ["entailment", "contradiction", "neutral"]
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
    """The rows that the HF loading script makes of an official file."""
    if config in FIELDS:
        rows = [{key: row.get(key) for key in FIELDS[config]} for row in json.loads(path.read_text(encoding="utf-8"))]
        names = {"ynat": YNAT, "re": RE}.get(config)
        for row in rows:
            if names is not None:
                row["label"] = names.index(row["label"])
            if config == "ynat":
                row["url"], row["date"] = row["url"] or "", row["date"] or ""
        return rows
    if config == "nli":
        return [{"guid": row["guid"], "source": row.get("source", row.get("genre")), "premise": row["premise"],
                 "hypothesis": row["hypothesis"], "label": NLI.index(row["gold_label"])}
                for row in json.loads(path.read_text(encoding="utf-8"))]
    if config == "ner":
        return [{"sentence": header, "char": [row[0] for row in rows], "ne_tag": [NER.index(row[1]) for row in rows]}
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


def write_jsonl(rows: list[dict], path: Path) -> Path:
    """As Dataset.to_json writes: one JSON object per line."""
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def write_parquet(rows: list[dict], path: Path) -> Path:
    import pyarrow
    import pyarrow.parquet
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(rows), str(path))
    return path


def write_saved_dataset(rows: list[dict], folder: Path) -> Path:
    """As Dataset.save_to_disk writes: an Arrow stream file, and state.json naming it."""
    import pyarrow
    import pyarrow.ipc
    folder.mkdir(parents=True, exist_ok=True)
    table = pyarrow.Table.from_pylist(rows)
    with pyarrow.ipc.new_stream(str(folder / "data-00000-of-00001.arrow"), table.schema) as writer:
        writer.write_table(table)
    (folder / "state.json").write_text(json.dumps({"_data_files": [{"filename": "data-00000-of-00001.arrow"}],
                                                   "_split": "validation"}), encoding="utf-8")
    (folder / "dataset_info.json").write_text("{}", encoding="utf-8")
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
            rows = hf_rows(config, path)
            (target / config).mkdir(parents=True, exist_ok=True)
            written.append(write_jsonl(rows, target / config / f"{stem}.jsonl"))
            written.append(write_parquet(rows, target / config / f"{stem}.parquet"))
        for extra in ("ontology.json",):  # WoS's ontology is not part of the HF dataset: it goes beside
            if (source / folder / extra).is_file():
                written.append(Path(shutil.copy(source / folder / extra, target / config / extra)))
    return written


if __name__ == "__main__":
    for written_path in export_folder(Path(sys.argv[1]), Path(sys.argv[2])):
        print(written_path)
