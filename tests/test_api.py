"""The Python API makes the command line's calls: load, fit, predict, evaluate and score, on the sample."""
from __future__ import annotations

import json

import pytest

from baselines import api
from baselines.errors import UsageError
from baselines.taskspec import PredictionError
from baselines.runner.persistence import read_metadata


def test_load_xy_gives_records_or_plain_inputs():
    records, y = api.load_xy("nli", api.data_file("nli", "dev"))
    plain, y_plain = api.load_xy("nli", api.data_file("nli", "dev"), plain=True)
    assert y == y_plain and len(records) == len(plain)
    assert plain[0] == (records[0].premise, records[0].hypothesis)


def test_fit_predict_and_score_agree_with_the_cli_formats(tmp_path):
    model = api.fit("ynat", api.data_file("ynat", "train"), "trivial")
    rows = api.predict("ynat", model, ["제목 하나", "제목 둘"])
    assert [row["guid"] for row in rows] == ["input-0", "input-1"] and "probs" in rows[0]
    dev = api.data_file("ynat", "dev")
    predictions = api.predict("ynat", model, dev)
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in predictions), encoding="utf-8")
    assert api.score("ynat", dev, predictions) == api.score("ynat", dev, path)


def test_score_takes_an_mrc_answer_object():
    dev = api.data_file("mrc", "dev")
    records = api.load("mrc", dev)
    answers = {record.guid: (record.answers[0].text if record.answers else "") for record in records}
    assert api.score("mrc", dev, answers)["exact_match"] == 100.0
    with pytest.raises(PredictionError, match="questions without prediction|gold items have no prediction"):
        api.score("mrc", dev, dict(list(answers.items())[1:]))


def test_evaluate_returns_the_record_that_run_writes():
    record = api.evaluate("dp", "trivial")
    assert record["task"] == "dp" and record["protocol"] == "sample" and "uas_micro_f1" in record["headline"]


def test_make_model_checks_its_parameters():
    assert api.make_model("ner", c2=0.1).c2 == 0.1
    with pytest.raises(UsageError, match="'c2' parameter"):
        api.make_model("ner", c2=-1)


def test_evaluate_scores_a_fitted_model_as_it_is():
    model = api.fit("ynat", api.data_file("ynat", "train"), "trivial")
    record = api.evaluate("ynat", model)
    assert record["model"] == "MostFrequentTopic" and record["protocol"] == "sample"
    assert record["trained_on"] == [] and [f["name"] for f in record["files"]] == ["ynat-v1.1_dev.json"]
    assert record["metrics"] == api.evaluate("ynat", "trivial")["metrics"]
    with pytest.raises(UsageError, match="saved or fitted model"):
        api.evaluate("ynat", model, cv=2)


def test_train_saves_a_model_that_load_model_reads_back(tmp_path):
    path = api.train("nli", tmp_path / "nli.model", "trivial")
    name, model = api.load_model("nli", path)
    dev = api.data_file("nli", "dev")
    assert name == "trivial" and api.predict("nli", model, dev) == api.predict("nli", api.fit(
        "nli", api.data_file("nli", "train"), "trivial"), dev)


def test_model_name_follows_pos_only_where_a_task_has_it():
    assert api.model_name("dp", pos="kiwi") == "mst-kiwi" and api.model_name("dp") == "mst"
    with pytest.raises(UsageError, match="pos applies to: dp"):
        api.model_name("ynat", pos="kiwi")
    with pytest.raises(UsageError, match="not both"):
        api.model_name("dp", "mst", pos="gold")


def test_run_writes_sample_results_only_where_asked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    records = api.run(["ynat"], "trivial")
    assert records[0]["sample"] and not (tmp_path / "results").exists()
    api.run(["ynat"], "trivial", results_dir=tmp_path / "out", predictions_dir=tmp_path / "predictions",
            command="klue-baselines run ynat --model trivial")
    recorded = json.loads((tmp_path / "out" / "ynat.json").read_text(encoding="utf-8"))["runs"]["trivial"]
    assert recorded["command"] == "klue-baselines run ynat --model trivial"
    assert recorded["metrics"] == records[0]["metrics"]
    assert (tmp_path / "predictions" / "ynat-trivial.jsonl").is_file()
    assert (tmp_path / "out" / "README.md").is_file()


def test_predict_file_writes_what_it_returns(tmp_path):
    rows = api.predict_file("dp", api.data_file("dp", "dev"), tmp_path / "dp.jsonl", model="trivial")
    written = [json.loads(line) for line in (tmp_path / "dp.jsonl").read_text(encoding="utf-8").splitlines()]
    assert written == rows
    with pytest.raises(UsageError, match="output_format tsv"):
        api.predict_file("ynat", api.data_file("ynat", "dev"), tmp_path / "y.tsv", model="trivial",
                         output_format="tsv")


def test_training_and_fitting_locate_the_data_once(tmp_path, monkeypatch):
    """api.train found the training file, then fit looked for its resources again: one lookup now."""
    calls = []
    find = api.find_data
    monkeypatch.setattr(api, "find_data", lambda *args, **kwargs: calls.append(args) or find(*args, **kwargs))
    path = api.train("re", tmp_path / "re.model", "trivial", log=lambda message: None)
    assert len(calls) == 1 and calls[0][0].code == "re"
    # What was located is what the model was trained on and scored with: the sample's file and relation list.
    metadata, _offset = read_metadata(path)
    assert metadata["training_files"] == [str(api.data_file("re", "train"))]
    calls.clear()
    model = api.saved_or_fitted("re", model="trivial", log=lambda message: None)
    assert len(calls) == 1 and calls[0][0].code == "re"
    assert set(model.classes_) <= set(api.resources("re")["relations"])
