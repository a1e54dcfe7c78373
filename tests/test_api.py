"""The Python API makes the command line's calls: load, fit, predict, evaluate and score, on the sample."""
from __future__ import annotations

import json

import pytest

from baselines import api
from baselines.driver import UsageError
from baselines.taskspec import PredictionError


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
