"""Hugging Face `klue` exports (JSON Lines, parquet, save_to_disk) in, HF-style predictions and CoNLL-U out:
the same records and scores as from the official files."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from baselines import api

from baselines.data import hf
from baselines.cli import main
from baselines.data.fileio import DataError
from baselines.runner.registry import TASK_CODES, get_task
from baselines.taskspec import align_predictions
from hf_fixtures import (NLI, SAMPLE_EXPORTS, dataset, hf_rows, sample_jsonl_exports, write_jsonl, write_parquet,
                         write_saved_dataset)
from helpers import beats_the_sample_floor



def needs_the_hf_packages() -> None:
    """Skip where pyarrow (the hf extra: parquet and save_to_disk) or datasets (which writes the HF fixtures) is
    missing; the tests of JSON Lines, CoNLL-U and predictions that need neither run with the core alone."""
    pytest.importorskip("pyarrow", reason="parquet and save_to_disk exports need the hf extra (pyarrow)")
    pytest.importorskip("datasets", reason="the HF fixtures are written by the datasets library (the test extra)")


FORMATS = ("jsonl", "parquet", "disk")


@pytest.fixture(scope="module")
def jsonl_exports(tmp_path_factory) -> Path:
    """The shipped sample as `datasets` exports it to JSON Lines (committed, so that reading it needs only the core):
    <config>/{train,validation}.jsonl, WoS's ontology beside its files as a user would put it."""
    root = tmp_path_factory.mktemp("hf")
    for code in TASK_CODES:
        folder = root / code
        folder.mkdir()
        for name in ("train", "validation"):
            (folder / f"{name}.jsonl").write_bytes(gzip.decompress(
                (SAMPLE_EXPORTS / code / f"{name}.jsonl.gz").read_bytes()))
        for extra in get_task(code).extra_files:
            shutil.copy(api.data_file(code, "dev").parent / extra, folder / extra)
    return root


@pytest.fixture(scope="module")
def exports(jsonl_exports) -> Path:
    """The JSON Lines exports and, beside them, the same data written by `to_parquet` and `save_to_disk`:
    <config>/{train,validation}.parquet and <config>/{train,validation}/."""
    needs_the_hf_packages()
    for code in TASK_CODES:
        for split, name in (("train", "train"), ("dev", "validation")):
            data = dataset(code, hf_rows(code, api.data_file(code, split)))
            write_parquet(data, jsonl_exports / code / f"{name}.parquet")
            write_saved_dataset(data, jsonl_exports / code / name)
    return jsonl_exports


def exports_of(request, kind: str) -> Path:
    """The folder of exports that holds `kind`: JSON Lines with the core alone, the others with the hf packages."""
    return request.getfixturevalue("jsonl_exports" if kind == "jsonl" else "exports")


def export(root: Path, code: str, split: str, kind: str) -> Path:
    name = "validation" if split == "dev" else "train"
    return root / code / (name if kind == "disk" else f"{name}.{kind}")


def comparable(code: str, records: list) -> tuple:
    """What must survive the trip through HF: inputs and gold (NER and DP guids differ by design). STS's
    scores to 9 decimals: Dataset.to_json writes floats with 10 significant digits, as pandas does."""
    spec = get_task(code)
    targets = spec.modelling.targets(records)
    return spec.reading.plain_inputs(records), [round(t, 9) for t in targets] if code == "sts" else targets


@pytest.mark.parametrize("kind", FORMATS)
@pytest.mark.parametrize("code", TASK_CODES)
def test_hf_exports_read_as_the_official_records(request, code, kind):
    exports = exports_of(request, kind)
    official = api.load(code, api.data_file(code, "dev"))
    from_hf = api.load(code, export(exports, code, "dev", kind))
    assert comparable(code, from_hf) == comparable(code, official)
    if code not in ("ner", "dp"):
        assert [r.guid for r in from_hf] == [r.guid for r in official]
    else:
        assert [r.guid for r in from_hf] == [f"row-{i}" for i in range(len(official))]  # not a whole split


@pytest.mark.parametrize("kind", ("jsonl", "parquet"))
@pytest.mark.parametrize("code", TASK_CODES)
def test_a_model_scores_the_same_from_hf_files(request, code, kind):
    exports = exports_of(request, kind)
    official = api.evaluate(code, "trivial", train=api.data_file(code, "train"), dev=api.data_file(code, "dev"))
    from_hf = api.evaluate(code, "trivial", train=export(exports, code, "train", kind),
                           dev=export(exports, code, "dev", kind))
    assert from_hf["metrics"] == official["metrics"]


def test_the_committed_json_lines_are_what_datasets_writes_of_the_sample(tmp_path):
    """The committed exports that the core's tests read are the shipped sample's, as today's `datasets` writes
    them: a changed sample, or a `datasets` that writes otherwise, shows here."""
    needs_the_hf_packages()
    for written in sample_jsonl_exports(tmp_path):
        committed = SAMPLE_EXPORTS / written.relative_to(tmp_path)
        assert gzip.decompress(written.read_bytes()) == gzip.decompress(committed.read_bytes()), committed


def test_a_data_dir_of_hf_exports(jsonl_exports):
    exports = jsonl_exports
    data = api.locate("nli", exports)
    assert data.train == exports / "nli" / "train.jsonl" and data.dev == exports / "nli" / "validation.jsonl"
    record = api.evaluate("re", "trivial", data_dir=exports)  # RE's relation list: the official one by default
    assert record["metrics"]["micro_f1"] == api.evaluate("re", "trivial")["metrics"]["micro_f1"]


def test_nli_labels_follow_the_shipped_classlabel_order(jsonl_exports):
    exports = jsonl_exports
    rows = [json.loads(line) for line in (exports / "nli" / "validation.jsonl").read_text(encoding="utf-8").split("\n")
            if line]
    records = api.load("nli", exports / "nli" / "validation.jsonl")
    assert NLI == ["entailment", "neutral", "contradiction"]
    assert [NLI[row["label"]] for row in rows] == [record.label for record in records]
    assert {row["label"] for row in rows} == {0, 1, 2}


@pytest.mark.parametrize("kind", ["parquet", "disk", "dataset"])
def test_classlabel_names_are_read_from_the_data_where_it_carries_them(tmp_path, kind):
    needs_the_hf_packages()
    draft = ["entailment", "contradiction", "neutral"]  # an order no shipped version had
    official = api.load("nli", api.data_file("nli", "dev"))
    data = dataset("nli", hf_rows("nli", api.data_file("nli", "dev")), {"nli": draft})
    assert data[0]["label"] == draft.index(official[0].label)
    if kind == "dataset":
        records = api.records_from_hf("nli", data)
    else:
        path = (write_parquet(data, tmp_path / "draft.parquet") if kind == "parquet"
                else write_saved_dataset(data, tmp_path / "draft"))
        records = api.load("nli", path)
    assert [r.label for r in records] == [r.label for r in official]
    # JSON Lines carry no names: there the shipped order is used, as the README says.
    rows = api.records_from_hf("nli", data.to_list())
    assert [r.label for r in rows] == [NLI[draft.index(r.label)] for r in official]


@pytest.mark.parametrize("kind", ["parquet", "disk"])
def test_classlabel_names_other_than_the_official_set_are_one_line_errors(tmp_path, kind):
    needs_the_hf_packages()
    rows = [dict(row, label=NLI.index(row["label"])) for row in hf_rows("nli", api.data_file("nli", "dev"))[:3]]
    data = dataset("nli", rows, {"nli": ["yes", "maybe", "no"]})
    path = (write_parquet(data, tmp_path / "odd.parquet") if kind == "parquet"
            else write_saved_dataset(data, tmp_path / "odd"))
    predictions = write_jsonl([{"label": 0}] * 3, tmp_path / "predictions.jsonl")
    result = CliRunner().invoke(main, ["-q", "score", "nli", "--gold", str(path), "--predictions", str(predictions)])
    assert result.exit_code != 0 and len(result.output.strip().splitlines()) == 1, result.output
    assert result.output.startswith(f"Error: {path}") and "'label' ClassLabel names are not those of HF klue nli" in (
        result.output) and "not a class of it: yes, maybe, no; missing: entailment, neutral, contradiction" in (
        result.output)
    repeated = {"label": {"_type": "ClassLabel", "names": ["entailment", "neutral", "contradiction", "neutral"]}}
    with pytest.raises(DataError, match="a name repeated"):  # datasets does not write it; a hand-edited file may
        hf.file_schema("nli", repeated, path)


def test_draft_ner_fields_name_the_shipped_ones(tmp_path):
    draft = tmp_path / "ner.jsonl"
    write_jsonl([{"sentence": "가", "char": ["가"], "ne_tag": [12]}] * 2, draft)
    result = CliRunner().invoke(main, ["-q", "run", "ner", "--model", "trivial", "--train", str(draft), "--dev",
                                       str(draft)])
    assert result.exit_code != 0 and "(sentence, tokens, ner_tags)" in result.output


def test_unknown_schemas_and_folders_are_one_line_errors(exports, tmp_path):
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"text": "가", "tag": 1}\n{"text": "나", "tag": 2}\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["-q", "run", "ynat", "--model", "trivial", "--train", str(odd), "--dev",
                                       str(odd)])
    assert result.exit_code != 0 and len(result.output.strip().splitlines()) == 1
    assert "fields tag, text" in result.output and "(guid, title, label, url, date)" in result.output
    (tmp_path / "dict").mkdir()
    (tmp_path / "dict" / "dataset_dict.json").write_text('{"splits": ["train"]}', encoding="utf-8")
    shutil.copytree(exports / "ynat" / "train", tmp_path / "dict" / "train")
    with pytest.raises(DataError, match="DatasetDict; give one split's folder \\(train\\)"):
        api.load("ynat", tmp_path / "dict")
    with pytest.raises(DataError, match="outside the 7 classes"):
        hf.label_name(hf.SCHEMAS["ynat"], "label", 7, odd, "row 1")
    assert hf.label_name(hf.SCHEMAS["ynat"], "label", -1, odd, "row 1") is None  # HF's 'no label' (test splits)


def test_guidless_rows_of_a_whole_split_get_the_official_stems():
    assert hf.positional_guids(hf.SCHEMAS["ner"], 5000)[42] == "klue-ner-v1_dev_00042"
    assert hf.positional_guids(hf.SCHEMAS["dp"], 10000)[7] == "klue-dp-v1_train_00007"
    assert hf.positional_guids(hf.SCHEMAS["dp"], 3)[2] == "row-2"
    guids = ("klue-ner-v1_dev_00000-wikitree", "klue-ner-v1_dev_00001-nsmc")
    gold = [type("R", (), {"guid": guid})() for guid in guids]
    predictions = [{"guid": "klue-ner-v1_dev_00001", "tags": ["O"]}, {"guid": "klue-ner-v1_dev_00000", "tags": []}]
    assert align_predictions(gold, predictions) == predictions[::-1]


@pytest.mark.parametrize("code", ["ynat", "sts", "nli", "ner", "re", "dp", "mrc"])
def test_hf_style_predictions_score_as_the_official_ones(jsonl_exports, code, tmp_path):
    dev = api.data_file(code, "dev")
    rows = api.predict(code, api.fit(code, api.data_file(code, "train")), dev)
    expected = api.score(code, dev, rows)
    path = tmp_path / "hf.jsonl"
    write_jsonl(hf.to_hf_predictions(code, rows), path)
    assert "guid" not in json.loads(path.read_text(encoding="utf-8").split("\n")[0])
    if code == "mrc":  # the reader's diagnostics need its best span and belief, which HF answers do not carry
        expected = {key: value for key, value in expected.items() if key.startswith(("exact_match", "rouge_w"))}
    assert api.score(code, dev, path) == expected
    # the gold read from HF's JSON Lines: STS's scores are written there to 10 significant digits (as pandas does)
    assert api.score(code, export(jsonl_exports, code, "dev", "jsonl"), path) == pytest.approx(expected, abs=1e-6)
    write_jsonl(hf.to_hf_predictions(code, rows)[:-1], path)
    with pytest.raises(DataError, match="predictions without guids for .* gold records"):
        api.score(code, dev, path)


def test_predict_writes_hf_predictions(exports, tmp_path):
    output = tmp_path / "ynat-hf.jsonl"
    result = CliRunner().invoke(main, ["-q", "predict", "ynat", "--input", str(export(exports, "ynat", "dev", "disk")),
                                       "--output", str(output), "--format", "hf"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").split("\n") if line]
    # The class probabilities are kept, as HF users keep probabilities: a list in ClassLabel order.
    assert all(set(row) == {"label", "probs"} and isinstance(row["label"], int) for row in rows)
    assert all(len(row["probs"]) == 7 and row["probs"][row["label"]] == max(row["probs"]) for row in rows)
    scored = CliRunner().invoke(main, ["-q", "score", "ynat", "--gold", str(export(exports, "ynat", "dev", "jsonl")),
                                       "--predictions", str(output), "--json"])
    assert scored.exit_code == 0
    assert beats_the_sample_floor("ynat", "macro_f1", json.loads(scored.output)["metrics"]["macro_f1"])
    report = api.report("ynat", export(exports, "ynat", "dev", "jsonl"), output)
    assert report["errors_ranked_by"] == "the probability the model gave its wrong label"
    assert report["errors"] and all(0 < error["how_wrong"] < 1 for error in report["errors"])


def test_dp_conllu_out_parses_and_reads_back(tmp_path):
    needs_the_hf_packages()
    conllu = pytest.importorskip("conllu")
    dev = api.data_file("dp", "dev")
    output = tmp_path / "dp.conllu"
    rows = api.predict_file("dp", dev, output, output_format="conllu")
    sentences = conllu.parse(output.read_text(encoding="utf-8"))
    records = api.load("dp", dev)
    assert len(sentences) == len(records)
    first = sentences[0]
    assert first.metadata["sent_id"] == records[0].guid and first.metadata["text"] == records[0].text
    assert [token["head"] for token in first] == rows[0]["heads"]
    assert [token["xpos"] for token in first] == [word.pos for word in records[0].words]
    assert [token["deprel"] for token in first] == rows[0]["deprels"]
    assert api.score("dp", dev, output) == api.score("dp", dev, rows)  # CoNLL-U predictions
    gold_conllu = tmp_path / "gold.conllu"
    api.task_spec("dp").scoring.prediction_files.writers["conllu"](gold_conllu, records, [
        {"heads": [w.head for w in r.words], "deprels": [w.deprel for w in r.words]} for r in records])
    assert comparable("dp", api.load("dp", gold_conllu)) == comparable("dp", records)  # CoNLL-U gold and training


def test_hostile_exports_are_one_line_errors(tmp_path):
    needs_the_hf_packages()
    fake = tmp_path / "fake.parquet"
    fake.write_bytes(b"PAR1 not really parquet")
    folder = tmp_path / "saved"
    folder.mkdir()
    (folder / "state.json").write_text('{"_data_files": [{"filename": "../../etc/passwd"}]}', encoding="utf-8")
    broken_state = tmp_path / "broken"
    broken_state.mkdir()
    (broken_state / "state.json").write_text("{", encoding="utf-8")
    runner = CliRunner()
    for bad, expected in ((fake, "not a readable parquet file"), (folder, "not a readable Arrow stream"),
                          (broken_state, "save_to_disk state")):
        result = runner.invoke(main, ["-q", "score", "ynat", "--gold", str(bad), "--predictions", str(fake)])
        assert result.exit_code != 0 and result.output.startswith("Error: ") and expected in result.output
        assert len(result.output.strip().splitlines()) == 1
    # The file that state.json names is looked for inside the folder only.
    assert str(folder / "passwd") in runner.invoke(main, ["-q", "score", "ynat", "--gold", str(folder),
                                                          "--predictions", str(fake)]).output


@pytest.mark.parametrize("code", TASK_CODES)
def test_a_dataset_object_and_its_rows_convert_as_files_do(code):
    needs_the_hf_packages()
    data = dataset(code, hf_rows(code, api.data_file(code, "dev")))
    official = comparable(code, api.load(code, api.data_file(code, "dev")))
    assert comparable(code, api.records_from_hf(code, data)) == official
    assert comparable(code, api.records_from_hf(code, data.to_list())) == official


def test_the_hub_needs_the_datasets_package(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_datasets(name, *args, **kwargs):
        if name == "datasets":
            raise ImportError("no datasets here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_datasets)
    with pytest.raises(api.UsageError, match=r'pip install "klue-baselines\[hf\]"'):
        api.load_hub("ynat")


def test_a_saved_dataset_whose_info_disagrees_with_its_arrow_files_is_read_by_the_info_with_a_warning(tmp_path):
    """save_to_disk writes the features twice, in dataset_info.json and in each Arrow file's schema; where a
    hand-edited dataset_info.json gives other ClassLabel names, datasets.load_from_disk follows it, and so do we,
    saying that the two disagree."""
    needs_the_hf_packages()
    from baselines.errors import InputWarning
    official = api.load("nli", api.data_file("nli", "dev"))
    folder = write_saved_dataset(dataset("nli", hf_rows("nli", api.data_file("nli", "dev"))), tmp_path / "nli")
    info_path = folder / "dataset_info.json"
    info = json.loads(info_path.read_text(encoding="utf-8"))
    edited = ["neutral", "entailment", "contradiction"]
    info["features"]["label"]["names"] = edited
    info_path.write_text(json.dumps(info), encoding="utf-8")
    with pytest.warns(InputWarning, match="dataset_info.json gives 'label' the classes neutral, entailment, "
                                          "contradiction, but .*arrow carries entailment, neutral, contradiction"):
        records = api.load("nli", folder)
    assert [record.label for record in records] == [edited[NLI.index(record.label)] for record in official]
