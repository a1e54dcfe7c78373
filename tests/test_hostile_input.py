"""Bad, careless and hostile input: every case gets a one-line error or a stated warning, never a silent
wrong score, code run from a model file, a damaged file or a hang. One test (or more) per kind of input."""
from __future__ import annotations

import gc
import hashlib
import io
import json
import os
import pickle
import re
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from baselines import api

from baselines.bench import determinism, reproduce

from baselines.data import sources

from baselines.runner import evaluate as evaluation, persistence, results
from baselines.runtime import provenance
from baselines.cli import main
from baselines.data.fileio import DataError, atomic_output, file_sha256, write_json_atomic, write_jsonl_atomic
from baselines.data.sources import official_manifest, sample_dir
from baselines.models.estimators import TrainingDataError
from baselines.runner.persistence import ModelFileError, load_model, read_metadata
from baselines.runner.registry import TASK_CODES, get_task
from baselines.tasks import ner as ner_task
from features.analysis import MorphemeAnalyzer
from features.cache import AnalysisCache, CacheWarning
from helpers import cli, json_records, refused, sample_file, write_json


def write_lines(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


# 1. Scoring never returns a number for garbage.

def test_gold_without_labels_is_an_error_for_wos(tmp_path):
    dialogues = json_records("wos")
    for dialogue in dialogues:
        for turn in dialogue["dialogue"]:
            turn.pop("state", None)
    gold = tmp_path / "wos-dev.json"
    write_json_atomic(gold, dialogues)
    predictions = write_lines(tmp_path / "p.jsonl", [{"guid": d["guid"], "states": []} for d in dialogues])
    error = refused("score", "wos", "--gold", gold, "--predictions", predictions)
    assert str(gold) in error and dialogues[0]["guid"] in error and "no gold label" in error
    # The same file as a dev file for `run` is refused before anything is trained or recorded.
    (tmp_path / "ontology.json").write_bytes((sample_dir() / "wos-v1.1" / "ontology.json").read_bytes())
    error = refused("run", "wos", "--dev", gold, "--cv", "2", "--results-dir", tmp_path / "r")
    assert "no gold label" in error and not (tmp_path / "r" / "wos.json").exists()


def test_duplicate_guids_in_gold_and_in_predictions(tmp_path):
    records = json_records("ynat")
    gold = tmp_path / "gold.json"
    write_json_atomic(gold, records + records[:1])
    rows = [{"guid": r["guid"], "label": r["label"]} for r in records]
    predictions = write_lines(tmp_path / "p.jsonl", rows)
    error = refused("score", "ynat", "--gold", gold, "--predictions", predictions)
    assert str(gold) in error and records[0]["guid"] in error and "more than once" in error

    twice = write_lines(tmp_path / "twice.jsonl", rows + [{"guid": records[3]["guid"], "label": "경제"}])
    error = refused("score", "ynat", "--gold", sample_file("ynat"), "--predictions", twice)
    assert str(twice) in error and records[3]["guid"] in error and "more than one prediction" in error


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", '"4.5"', "true", "null"])
def test_sts_scores_must_be_finite_numbers(tmp_path, value):
    records = json_records("sts")
    lines = [json.dumps({"guid": r["guid"], "score": 3.0}) for r in records]
    lines[2] = '{"guid": "%s", "score": %s}' % (records[2]["guid"], value)
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    error = refused("score", "sts", "--gold", sample_file("sts"), "--predictions", predictions)
    assert records[2]["guid"] in error and "finite number" in error


def test_sts_scores_outside_the_scale_warn_and_are_scored_as_given(tmp_path):
    records = json_records("sts")
    rows = [{"guid": r["guid"], "score": r["labels"]["real-label"] * 2 - 1} for r in records]
    predictions = write_lines(tmp_path / "p.jsonl", rows)
    code, output = cli("score", "sts", "--gold", sample_file("sts"), "--predictions", predictions)
    assert code == 0, output
    assert "Warning:" in output and "outside 0-5" in output
    # A linear map of gold keeps Pearson r at 100: the values were used as given, not clipped.
    assert re.search(r"^pearsonr +100\.00$", output, re.MULTILINE)


def test_sts_pearson_of_a_constant_prediction_prints_as_undefined(tmp_path):
    records = json_records("sts")
    predictions = write_lines(tmp_path / "p.jsonl", [{"guid": r["guid"], "score": 2.5} for r in records])
    code, output = cli("score", "sts", "--gold", sample_file("sts"), "--predictions", predictions)
    assert code == 0 and "n/a" in output
    code, output = cli("score", "sts", "--gold", sample_file("sts"), "--predictions", predictions, "--json")
    assert json.loads(output)["metrics"]["pearsonr"] is None


def test_sts_floor_row_is_undefined_in_results(tmp_path):
    code, output = cli("run", "sts", "--model", "trivial", "--results-dir", tmp_path)
    assert code == 0, output
    record = json.loads((tmp_path / "sts.json").read_text(encoding="utf-8"))["runs"]["trivial"]
    assert record["metrics"]["pearsonr"] is None and record["headline"]["pearsonr"] is None
    assert "| sts | pearsonr | 100 | n/a | - | - |" in (tmp_path / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("probs, message", [
    ({"no_relation": float("nan")}, "finite numbers >= 0"),
    ({"no_relation": -0.1}, "finite numbers >= 0"),
    ({"no_relation": "high"}, "finite numbers >= 0"),
    ({"per:nonsense": 0.5}, "not in relation_list.json"),
])
def test_re_probabilities_are_checked(tmp_path, probs, message):
    records = json_records("re")
    rows = [{"guid": r["guid"], "label": "no_relation", "probs": {"no_relation": 1.0}} for r in records]
    rows[1]["probs"] = probs
    predictions = tmp_path / "p.jsonl"
    # json.dumps writes NaN as the bare token NaN, which Python's json reads back: the hostile case.
    predictions.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    error = refused("score", "re", "--gold", sample_file("re"), "--predictions", predictions)
    assert records[1]["guid"] in error and message in error


def test_mrc_belief_must_be_a_finite_number_or_null(tmp_path):
    gold = sample_file("mrc")
    guids = [q["guid"] for d in json.loads(gold.read_text(encoding="utf-8"))["data"]
             for p in d["paragraphs"] for q in p["qas"]]
    rows = [{"guid": g, "answer": "", "best_span": "", "belief": None} for g in guids]
    rows[0]["belief"] = float("inf")
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    error = refused("score", "mrc", "--gold", gold, "--predictions", predictions)
    assert guids[0] in error and "'belief'" in error


def test_an_mrc_n_best_list_must_be_a_list_of_strings(tmp_path):
    gold = sample_file("mrc")
    guids = [q["guid"] for d in json.loads(gold.read_text(encoding="utf-8"))["data"]
             for p in d["paragraphs"] for q in p["qas"]]
    rows = [{"guid": g, "answer": "", "best_span": "", "belief": None, "n_best": []} for g in guids]
    rows[1]["n_best"] = "서울"  # a string is not a list of spans
    rows[2]["n_best"] = ["서울", 3]
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    error = refused("score", "mrc", "--gold", gold, "--predictions", predictions)
    assert "2 predictions" in error and guids[1] in error and guids[2] in error and "'n_best'" in error


def test_ner_drops_only_u0020_spaces():
    from baselines.tasks import ner

    record = ner.NerSentence("s1", "가\u3000나 다", ["B-PS", "O", "I-PS", "O", "B-LC"])
    # One tag per character but the U+0020 space: the ideographic space is a character and is scored.
    assert ner._scored_tags(record, ["B-PS", "O", "O", "B-LC"]) == ["B-PS", "O", "O", "B-LC"]
    with pytest.raises(Exception, match="has 3 tags"):
        ner._scored_tags(record, ["B-PS", "O", "B-LC"])
    assert ner._scored_tags(record, record.tags) == ["B-PS", "O", "I-PS", "B-LC"]


def test_an_re_training_label_outside_the_relation_list_is_an_error(tmp_path):
    rows = json_records("re", "train")
    rows[3]["label"] = "per:favourite_food"
    train = tmp_path / "re-train.json"
    write_json_atomic(train, rows)
    for command in (["train", "re", "--train", train, "--out", tmp_path / "re.model"],
                    ["run", "re", "--train", train, "--dev", sample_file("re"), "--results-dir", tmp_path]):
        error = refused(*command)
        assert f"{train}: guid {rows[3]['guid']}: label 'per:favourite_food' is not in relation_list.json" in error
    assert not (tmp_path / "re.model").exists()


def test_a_wos_gold_slot_outside_the_ontology_is_an_error_but_a_new_value_is_not(tmp_path):
    shutil.copy(sample_file("wos").parent / "ontology.json", tmp_path / "ontology.json")
    dialogues = json_records("wos")
    user_turns = [turn for turn in dialogues[1]["dialogue"] if turn["role"] == "user"]
    user_turns[1]["state"] = user_turns[1]["state"] + ["관광-경치 좋은-우리 동네 뒷산"]  # a value of no ontology
    dev = tmp_path / "wos-dev.json"
    write_json_atomic(dev, dialogues)
    code, output = cli("run", "wos", "--model", "trivial", "--train", sample_file("wos", "train"), "--dev", dev,
                       "--results-dir", tmp_path)
    assert code == 0, output
    user_turns[1]["state"].append("관광-최애 음식-김치")
    write_json_atomic(dev, dialogues)
    error = refused("run", "wos", "--model", "trivial", "--train", sample_file("wos", "train"), "--dev", dev,
                    "--results-dir", tmp_path)
    assert f"{dev}: guid {dialogues[1]['guid']}: user turn 2 has slot '관광-최애 음식', which is not in ontology.json" in (
        error)


def test_dp_heads_that_are_not_integers_are_an_error(tmp_path):
    records = api.load("dp", sample_file("dp"))
    gold_rows = [{"guid": r.guid, "heads": [w.head for w in r.words], "deprels": [w.deprel for w in r.words]}
                 for r in records]
    predictions = tmp_path / "dp.jsonl"
    for broken in ({"heads": [str(head) for head in gold_rows[2]["heads"]]}, {"heads": [True] * len(records[2].words)},
                   {"heads": [len(records[2].words) + 1] * len(records[2].words)},
                   {"deprels": [["NP"]] * len(records[2].words)}):
        write_lines(predictions, gold_rows[:2] + [{**gold_rows[2], **broken}] + gold_rows[3:])
        error = refused("score", "dp", "--gold", sample_file("dp"), "--predictions", predictions)
        assert records[2].guid in error and ("eojeol numbers" in error or "outside the KLUE-DP set" in error), error


def test_an_output_that_is_one_of_the_inputs_is_refused_and_left_alone(tmp_path):
    train = tmp_path / "train.json"
    shutil.copy(sample_file("ynat", "train"), train)
    link = tmp_path / "link.json"
    link.symlink_to(train)
    original = train.read_bytes()
    predictions = write_lines(tmp_path / "p.jsonl", [{"guid": r["guid"], "label": r["label"]}
                                                     for r in json_records("ynat")])
    for command in (["train", "ynat", "--model", "trivial", "--train", train, "--out", link],
                    ["predict", "ynat", "--train", train, "--input", train, "--output", train],
                    ["report", "ynat", "--gold", sample_file("ynat"), "--predictions", predictions, "--out",
                     predictions]):
        error = refused(*command)
        assert "is also an input of this command" in error, error
    assert train.read_bytes() == original and predictions.read_text(encoding="utf-8").count("\n") == 100


def test_an_mrc_boolean_written_as_a_string_is_an_error(tmp_path):
    document = json.loads(sample_file("mrc").read_text(encoding="utf-8"))
    question = document["data"][0]["paragraphs"][0]["qas"][0]
    question["is_impossible"] = "false"
    gold = tmp_path / "mrc.json"
    write_json_atomic(gold, document)
    error = refused("run", "mrc", "--model", "trivial", "--dev", gold, "--cv", "2")
    assert f"guid {question['guid']}: 'is_impossible' should be true or false, not 'false'" in error
    row = {"title": "", "context": "가나다", "news_category": "", "source": "s", "guid": "q1", "is_impossible": "false",
           "question_type": 1, "question": "가?", "answers": {"answer_start": [0], "text": ["가"]}}
    with pytest.raises(DataError, match="'is_impossible' should be true or false"):
        api.records_from_hf("mrc", [row])


# 2. Model files are refused before anything in them is unpickled.

class PlantedCode:
    """A pickle that runs code when loaded: it touches a marker file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_planted_pickle_is_refused_before_it_runs(tmp_path):
    marker = tmp_path / "code-ran"
    for payload in (PlantedCode(marker), {"metadata": {"format": "klue-baselines-model/1", "task": "ynat"},
                                          "model": PlantedCode(marker)}):
        planted = tmp_path / "model.joblib"
        planted.write_bytes(pickle.dumps(payload))
        error = refused("predict", "ynat", "--model", planted, "--input", sample_file("ynat"))
        assert "not a klue-baselines model file" in error
        assert not marker.exists()


@pytest.mark.parametrize("header", [b"{}", b"not json", b'{"format": "klue-baselines-model/2", "task": 3}', b"[]"])
def test_damaged_model_metadata_is_a_one_line_error(tmp_path, header):
    damaged = tmp_path / "model.joblib"
    damaged.write_bytes(b"KLUE-BASELINES-MODEL\n" + header + b"\n" + pickle.dumps(PlantedCode(tmp_path / "ran")))
    error = refused("evaluate", "ynat", "--model", damaged, "--dev", sample_file("ynat"))
    assert "damaged model header" in error and not (tmp_path / "ran").exists()


def test_a_changed_model_payload_is_refused(tmp_path):
    path = tmp_path / "ynat.joblib"
    code, output = cli("train", "ynat", "--model", "trivial", "--out", path)
    assert code == 0, output
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match="do not match the sha256"):
        load_model(path, "ynat", provenance.versions())


class ForeignModel:
    """A type from outside the toolkit and its libraries: a skops file naming it must not load."""

    def predict(self, records):
        return ["경제"] * len(records)


@pytest.mark.parametrize("task", ["sts", "nli"])
def test_models_are_saved_with_skops_and_load_with_identical_predictions(tmp_path, task):
    pytest.importorskip("skops.io", reason="the secure extra (skops) is not installed")
    path = tmp_path / "model.joblib"
    code, output = cli("train", task, "--out", path)
    assert code == 0, output
    metadata, _offset = read_metadata(path)
    assert metadata["payload_format"] == "skops"
    outputs = []
    for model in (None, path):
        out = tmp_path / f"p{len(outputs)}.jsonl"
        code, text = cli("predict", task, "--input", sample_file(task), "--output", out,
                         *(["--model", model] if model else []))
        assert code == 0, text
        outputs.append(out.read_text(encoding="utf-8"))
    assert outputs[0] == outputs[1]


def test_without_the_secure_extra_models_are_pickles_that_load_only_with_consent(tmp_path, monkeypatch):
    monkeypatch.setattr(persistence, "skops_io", lambda: None)
    path = tmp_path / "ynat.joblib"
    code, output = cli("train", "ynat", "--model", "trivial", "--out", path)
    assert code == 0, output
    assert read_metadata(path)[0]["payload_format"] == "joblib"
    error = refused("predict", "ynat", "--model", path, "--input", sample_file("ynat"))
    assert "is a pickle" in error and "--trust-pickle" in error and "trust_pickle=True" in error
    with pytest.raises(ModelFileError, match="trust_pickle=True"):
        api.load_model("ynat", path)
    assert api.load_model("ynat", path, trust_pickle=True)[0] == "trivial"
    code, output = cli("predict", "ynat", "--model", path, "--trust-pickle", "--input", sample_file("ynat"))
    assert code == 0 and output.count("\n") == len(json_records("ynat")), output


def planted_model_file(path: Path, payload: bytes, task: str = "ynat", model: str = "tfidf-lr",
                       payload_format: str = "joblib") -> Path:
    """A model file with a header as `train` writes it (copied from a real one's fields, sha256 fixed) in
    front of any payload."""
    metadata = {"format": persistence.FORMAT, "task": task, "model": model, "versions": provenance.versions(),
                "training_data_sha256": "0" * 64, "training_files": [], "payload_format": payload_format,
                "payload_sha256": hashlib.sha256(payload).hexdigest(), "payload_bytes": len(payload)}
    path.write_bytes(persistence.MAGIC + json.dumps(metadata).encode() + b"\n" + payload)
    return path


def test_a_pickle_behind_a_valid_header_does_not_run_without_consent(tmp_path):
    pytest.importorskip("skops.io", reason="the case is a skops install that still unpickled")
    marker = tmp_path / "code-ran"
    planted = planted_model_file(tmp_path / "model.joblib", pickle.dumps(PlantedCode(marker)))
    for command in (["predict", "ynat", "--input", sample_file("ynat")], ["evaluate", "ynat"], ["explain", "ynat"]):
        error = refused(*command, "--model", planted)
        assert f"{planted}: the model is a pickle" in error and "--trust-pickle" in error
    assert not marker.exists()


def test_a_model_file_must_hold_the_fitted_estimator_its_header_names(tmp_path):
    pytest.importorskip("skops.io", reason="the secure extra (skops) is not installed")
    train = sample_file("ynat", "train")
    ynat = api.fit("ynat", train, "trivial")
    cases = [("str", "hello", "ynat", "trivial", "holds a str, not the MostFrequentTopic that a ynat trivial model"),
             ("other-task", ynat, "nli", "trivial",  # refused by the list of what NLI's models hold, before loading
              "baselines.tasks.ynat.MostFrequentTopic, which no nli model of this toolkit holds"),
             ("unknown-name", ynat, "ynat", "bert",
              "names model 'bert', which ynat does not have (fast, tfidf-lr, trivial)"),
             ("unfitted", get_task("ynat").models["trivial"].build(), "ynat", "trivial", "never fitted")]
    for name, model, task, model_name, expected in cases:
        path = tmp_path / f"{name}.model"
        persistence.save_model(path, model, task, model_name, [train], provenance.versions())
        error = refused("predict", task, "--model", path, "--input", sample_file(task))
        assert expected in error, (name, error)


def test_a_skops_file_with_a_foreign_type_is_refused(tmp_path):
    pytest.importorskip("skops.io", reason="the secure extra (skops) is not installed")
    path = tmp_path / "ynat.joblib"
    persistence.save_model(path, ForeignModel(), "ynat", "tfidf-lr", [sample_file("ynat", "train")],
                           provenance.versions())
    with pytest.raises(ModelFileError, match="ForeignModel, which no ynat model of this toolkit holds"):
        load_model(path, "ynat", provenance.versions())



class Stand:
    """An object planted in a model file, whose names the test then rewrites as an attacker would."""

    def __init__(self, **attributes):
        self.__dict__.update(attributes)


def _planted_function():
    """A function planted in a model file; the test renames it."""


def planted_skops_file(path: Path, task: str, value, rewrite) -> Path:
    """The task's trivial model, fitted on the sample, with `value` set on it as the attribute 'planted' and
    saved through skops; `rewrite(node)` then returns what the schema holds there instead (another class or
    function, another kind of node), and the payload and header are written again to match."""
    import skops.io
    model = api.fit(task, sample_file(task, "train"), "trivial", log=lambda message: None)
    model.planted = value
    with zipfile.ZipFile(io.BytesIO(skops.io.dumps(model))) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    schema = json.loads(files["schema.json"])
    attributes = schema["content"]["content"]
    attributes["planted"] = rewrite(attributes["planted"])
    files["schema.json"] = json.dumps(schema).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return planted_model_file(path, buffer.getvalue(), task, "trivial", payload_format="skops")


def renamed(module: str, name: str, kind: str | None = None):
    """A rewrite that gives a node another class or function (and, with `kind`, another kind of node)."""
    def rewrite(node):
        node.update({"__module__": module, "__class__": name}, **({"__loader__": kind} if kind else {}))
        return node
    return rewrite


def called_with(module: str, name: str):
    """A rewrite that turns a planted tuple of arguments into a node that skops loads by calling module.name
    with them (how it rebuilds scikit-learn's losses)."""
    def rewrite(arguments):
        empty = {"__class__": "dict", "__module__": "builtins", "__loader__": "DictNode", "content": {},
                 "key_types": {"__class__": "list", "__module__": "builtins", "__loader__": "ListNode", "content": []}}
        return {"__class__": name, "__module__": module, "__loader__": "LossNode", "__reduce__": {"args": arguments},
                "content": empty}
    return rewrite


def bit_generator(name: str):
    """A rewrite of a planted numpy Generator that names another bit generator, which skops would call."""
    def rewrite(node):
        node["content"]["bit_generator"]["content"]["bit_generator"]["content"] = json.dumps(name)
        return node
    return rewrite


SHELL_MARKER = "planted-command-ran"
# Each: (task, the planted value, its rewrite, what the one-line error names).
PLANTED_NODES = {
    "check_output called as a loss": ("ynat", (["touch", SHELL_MARKER],),
                                      called_with("sklearn.utils._testing", "check_output"),
                                      "sklearn.utils._testing.check_output"),
    "check_output as a function": ("ynat", _planted_function, renamed("sklearn.utils._testing", "check_output"),
                                   "sklearn.utils._testing.check_output"),
    "array_api_compat's numpy": ("ynat", _planted_function, renamed("sklearn.externals.array_api_compat.numpy",
                                                                    "asarray"), "array_api_compat.numpy.asarray"),
    "an estimator outside the list": ("ynat", Stand(), renamed("sklearn.ensemble._forest", "RandomForestClassifier"),
                                      "RandomForestClassifier"),
    "builtins.eval": ("ynat", _planted_function, renamed("builtins", "eval"), "builtins.eval"),
    "numpy.load": ("ynat", _planted_function, renamed("numpy", "load"), "numpy.load"),
    "numpy.savetxt called": ("ynat", ([SHELL_MARKER, [1.0]],), called_with("numpy", "savetxt"), "numpy.savetxt"),
    "os.remove": ("ynat", _planted_function, renamed("os", "remove"), "os.remove"),
    "a number that is check_output": ("ynat", np.float64(1.0), renamed("sklearn.utils._testing", "check_output"),
                                      "check_output stored as NdArrayNode"),
    "a dict that is check_output": ("ynat", {"a": 1}, renamed("sklearn.utils._testing", "check_output"),
                                    "check_output stored as DictNode"),
    "a bound method": ("ynat", Stand(), renamed("baselines.tasks.ynat", "MostFrequentTopic", "MethodNode"),
                       "a MethodNode"),
    "a bit generator that is not one": ("sts", np.random.default_rng(0), bit_generator("seed"),
                                        "the bit generator 'seed'"),
    "the CRF's own state": ("ner", Stand(), renamed("sklearn_crfsuite.estimator", "CRF"), "sklearn_crfsuite"),
    "a node of no kind": ("ynat", Stand(), lambda node: {**node, "__loader__": ["ObjectNode"]},
                          "a node of no kind skops knows"),
}


@pytest.mark.parametrize("case", PLANTED_NODES)
def test_a_skops_file_naming_anything_outside_the_task_s_list_is_refused_before_it_acts(tmp_path, monkeypatch,
                                                                                      case):
    pytest.importorskip("skops.io", reason="the secure extra (skops) is not installed")
    monkeypatch.chdir(tmp_path)  # where the planted command and savetxt would write
    task, value, rewrite, named = PLANTED_NODES[case]
    planted = planted_skops_file(tmp_path / "model.skops", task, value, rewrite)
    error = refused("predict", task, "--model", planted, "--input", sample_file(task))
    assert named in error and "it is not loaded" in error, error
    assert not (tmp_path / SHELL_MARKER).exists()


def test_a_skops_file_cannot_make_a_file_resource_that_deletes_a_file(tmp_path):
    """sklearn_crfsuite's FileResource deletes the file that it names when it is freed (and closes its fd):
    a model file that holds one is refused, and the file and descriptor are still there afterwards."""
    pytest.importorskip("skops.io", reason="the secure extra (skops) is not installed")
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me", encoding="utf-8")
    descriptor = os.open(tmp_path / "held-open", os.O_CREAT | os.O_RDWR)
    try:
        resource = Stand(name=str(victim), auto=True, fd=descriptor, keep_tempfiles=False, suffix="", prefix="")
        planted = planted_skops_file(tmp_path / "ner.skops", "ner", resource,
                                     renamed("sklearn_crfsuite._fileresource", "FileResource"))
        for command in (["predict", "ner", "--input", sample_file("ner")], ["evaluate", "ner"]):
            error = refused(*command, "--model", planted)
            assert "sklearn_crfsuite._fileresource.FileResource" in error, error
        gc.collect()
        assert victim.read_text(encoding="utf-8") == "keep me"
        os.fstat(descriptor)  # still open
    finally:
        os.close(descriptor)


def test_the_ner_crf_travels_as_its_weights_not_as_sklearn_crfsuite_objects(tmp_path):
    pytest.importorskip("skops.io", reason="the secure extra (skops) is not installed")
    from sklearn.frozen import FrozenEstimator
    ner = get_task("ner").models["crf"].build().set_params(max_iterations=5, neighbours=0, type_folds=0)
    records = get_task("ner").load(sample_file("ner", "train"))[:40]
    ner.fit(records, get_task("ner").targets(records))
    path = tmp_path / "ner.model"
    persistence.save_model(path, ner, "ner", "crf", [sample_file("ner", "train")], provenance.versions())
    header, payload = path.read_bytes().split(b"\n", 2)[1:]  # the header names the versions, crfsuite's among them
    assert b"sklearn_crfsuite" in header and b"sklearn_crfsuite" not in payload and b"pycrfsuite" not in payload
    loaded, _ = load_model(path, "ner", provenance.versions())
    assert loaded.crf_.state_features_ == ner.crf_.state_features_
    # A model of another task that holds the CRF (MRC's tagger) may name CharacterCRF; NER's own list holds
    # nothing of MRC's.
    assert "baselines.tasks.ner.CharacterCRF" in persistence.saved_type_names("mrc")
    assert "baselines.tasks.mrc.reader.SpanRanker" not in persistence.saved_type_names("ner")
    assert persistence.full_name(FrozenEstimator) in persistence.saved_type_names("mrc")


def test_crf_weights_that_are_not_a_crfsuite_model_are_refused(tmp_path, monkeypatch):
    pytest.importorskip("skops.io", reason="the secure extra (skops) is not installed")
    ner = get_task("ner").models["crf"].build().set_params(max_iterations=5, neighbours=0, type_folds=0)
    records = get_task("ner").load(sample_file("ner", "train"))[:40]
    ner.fit(records, get_task("ner").targets(records))
    monkeypatch.setattr(ner_task, "crf_model", lambda crf: b"lCRF not a model")
    path = tmp_path / "ner.model"
    persistence.save_model(path, ner, "ner", "crf", [sample_file("ner", "train")], provenance.versions())
    error = refused("predict", "ner", "--model", path, "--input", sample_file("ner"))
    assert "not a readable model" in error


@pytest.mark.parametrize("damage, expected", [("loop", "points outside the tree or back"),
                                               ("outside", "points outside the tree or back"),
                                               ("feature", "splits on a feature that the model does not have"),
                                               ("categorical", "categorical split")])
def test_boosted_trees_whose_indices_would_read_outside_them_are_refused(tmp_path, damage, expected):
    """scikit-learn walks a boosted tree by the child and feature indices it stores, unchecked: a model file
    whose tree loops or points outside is refused, not run."""
    pytest.importorskip("skops.io", reason="the secure extra (skops) is not installed")
    spec = get_task("sts")
    records = spec.load(sample_file("sts", "train"))
    model = spec.models["features-gbr"].build().set_params(max_iter=5, svd_components=5)
    model.fit(records, spec.targets(records))
    nodes = model.regressor_._predictors[0][0].nodes
    split = int(np.flatnonzero(nodes["is_leaf"] == 0)[-1])
    if damage == "loop":
        nodes["left"][split] = 0
    elif damage == "outside":
        nodes["right"][split] = len(nodes) + 1000
    elif damage == "feature":
        nodes["feature_idx"][split] = model.regressor_.n_features_in_
    else:
        nodes["is_categorical"][split] = 1
    path = tmp_path / "sts.model"
    persistence.save_model(path, model, "sts", "features-gbr", [sample_file("sts", "train")], provenance.versions())
    error = refused("predict", "sts", "--model", path, "--input", sample_file("sts"))
    assert expected in error, error


# 3. Files the toolkit writes.

def test_written_files_follow_the_umask_and_keep_existing_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        write_json_atomic(tmp_path / "new.json", {"a": 1})
        assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o644
        existing = tmp_path / "existing.json"
        existing.write_text("{}")
        existing.chmod(0o640)
        write_json_atomic(existing, {"b": 2})
        assert stat.S_IMODE(existing.stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_writing_a_symlink_writes_its_target(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_json_atomic(link, {"written": True})
    assert link.is_symlink() and json.loads(target.read_text()) == {"written": True}


def test_writing_a_fifo_writes_through_and_keeps_it(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    write_jsonl_atomic(fifo, [{"guid": "a"}])
    reader.join(timeout=10)
    assert received == ['{"guid": "a"}\n'] and stat.S_ISFIFO(fifo.stat().st_mode)


def test_dev_null_stays_a_device(tmp_path):
    code, output = cli("predict", "ynat", "--input", sample_file("ynat"), "--output", "/dev/null",
                       "--train", sample_file("ynat", "train"))
    assert code == 0, output
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_an_output_folder_below_a_file_is_refused_before_training(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = CliRunner().invoke(main, ["run", "ynat", "--results-dir", str(blocker / "results")])
    assert result.exit_code == 1 and "is a file" in result.output
    assert "fitting" not in result.output  # nothing was trained
    error = refused("train", "ynat", "--out", blocker / "model.joblib")
    assert "is a file" in error


def test_a_part_file_left_by_a_killed_writer_is_cleaned_up(tmp_path):
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(finished.stdout)
    leftover = tmp_path / f".out.json.{dead_pid}.part"
    leftover.write_text("half")
    live = tmp_path / f".out.json.{os.getppid()}.part"  # a live process's write in progress is left alone
    live.write_text("busy")
    write_json_atomic(tmp_path / "out.json", [1])
    assert not leftover.exists() and live.exists()


def test_an_interrupted_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_output(path) as handle:
            handle.write("new, half written")
            raise RuntimeError("killed")
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_param_value_never_steers_a_file_out_of_its_folder(tmp_path):
    record = {"task": "mrc", "model": "span-ranker", "params": {"x": "../../../etc/passwd"}}
    stem = results.run_file_stem(record)
    assert "/" not in stem and ".." not in stem
    assert (tmp_path / f"{stem}.jsonl").resolve().parent == tmp_path.resolve()


def test_a_run_killed_after_a_results_file_leaves_no_stale_readme_after_the_next_command(tmp_path):
    results_dir = tmp_path / "results"
    code, output = cli("run", "ynat", "nli", "--model", "trivial", "--results-dir", results_dir)
    assert code == 0, output
    ynat_file, readme = results_dir / "ynat.json", results_dir / "README.md"

    def ynat_seeds() -> list:
        return sorted(run["seed"] for run in json.loads(ynat_file.read_text(encoding="utf-8"))["runs"].values())

    # README.md is written with ynat.json, not at the end of the run: it shows the new YNAT run while NLI's
    # model is still being fitted, and a SIGKILL then leaves it current. The run is held in NLI's fit (which
    # waits for a signal that never comes) until it is killed: the kill lands there, however fast the machine.
    held_in_nli = ("import signal, sys; from baselines.runner.registry import get_task; "
                   "get_task('nli').models['tfidf-lr'].estimator.fit = lambda *args, **kwargs: signal.pause(); "
                   "from baselines.cli import main; main()")
    process = subprocess.Popen([sys.executable, "-c", held_in_nli, "-q", "run", "ynat", "nli", "--seed", "7",
                                "--results-dir", str(results_dir)], cwd=tmp_path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    while "run ynat nli --seed 7" not in readme.read_text(encoding="utf-8"):
        assert process.poll() is None, "the run ended before it reached NLI's fit"
        time.sleep(0.01)  # polling a file that the run writes; the run itself waits for the kill
    process.kill()
    assert process.wait() == -signal.SIGKILL and ynat_seeds() == [0, 7]
    # The window between ynat.json and README.md, whether or not the kill fell into it: README.md as a killed
    # run of the old code left it.
    stale = readme.read_text(encoding="utf-8").replace("run ynat nli --seed 7", "")
    readme.write_text(stale, encoding="utf-8")
    code, output = cli("run", "sts", "--model", "trivial", "--results-dir", results_dir)
    assert code == 0, output
    healed = readme.read_text(encoding="utf-8")
    assert "run ynat nli --seed 7" in healed and "| sts | trivial |" in healed


# 4. CLI values.

@pytest.mark.parametrize("args, message", [
    (["--workers", "-3", "tasks"], "--workers"),
    (["--workers", "0", "run", "ynat"], "--workers"),
    (["run", "ynat", "--cv", "1"], "1 fold"),
    (["run", "ynat", "--seed", "-1"], "--seed"),
    (["run", "ynat", "--param", "C=-1"], "'C' parameter"),
    (["run", "ynat", "--param", "C=abc"], "'C' parameter"),
    (["run", "ynat", "--param", "C=NaN"], "'C' parameter"),
    (["run", "ynat", "--param", "max_iter=0"], "'max_iter' parameter"),
    (["run", "ynat", "--param", "C=1", "--param", "C=2"], "more than once"),
    (["run", "ner", "--param", "type_folds=1"], "'type_folds' parameter"),
    (["tune", "ynat", "--param", "C=1,2", "--folds", "100000"], "100000 folds need"),
    (["tune", "ynat", "--param", "C=1,-2"], "'C' parameter"),
    (["download", "ynat", "--mirror", "not-a-url"], "not an http"),
])
def test_bad_option_values_are_refused_before_any_work(args, message):
    result = CliRunner().invoke(main, ["--quiet", *args])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "Error:" in result.output and message in result.output, result.output


def test_ctrl_c_inside_a_c_extension_aborts_without_a_traceback(monkeypatch, tmp_path):
    def interrupted_in_c(*args, **kwargs):
        # What CPython raises when a C function (Kiwi's analysis) returns while a KeyboardInterrupt is pending.
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as pending:
            raise SystemError("<built-in method analyze> returned a result with an exception set") from pending

    monkeypatch.setattr(api, "run", interrupted_in_c)
    result = CliRunner().invoke(main, ["run", "ynat", "--results-dir", str(tmp_path)])
    assert result.exit_code == 1 and result.output.strip().endswith("Aborted!"), result.output
    assert "Traceback" not in result.output and "SystemError" not in result.output
    monkeypatch.setattr(api, "run", lambda *args, **kwargs: 1 / 0)  # any other failure still surfaces
    assert isinstance(CliRunner().invoke(main, ["run", "ynat"]).exception, ZeroDivisionError)


def test_more_stacking_folds_than_premises_is_one_error_line(tmp_path):
    few = tmp_path / "klue-nli-v1.1_train.json"
    few.write_text(json.dumps(json.loads(sample_file("nli", "train").read_text(encoding="utf-8"))[:12]),
                   encoding="utf-8")
    line = refused("run", "nli", "--train", few, "--dev", sample_file("nli"), "--param", "stack_folds=20",
                   "--param", "neighbours=0", "--results-dir", tmp_path)
    assert "stack_folds=20 needs at least 20 premises in the training data" in line


@pytest.mark.parametrize("task, assignment, accepted", [
    ("ynat", "min_df=1001", "[1, 1000]"),
    ("ynat", "char_ngrams=[1,11]", "1 <= low <= high <= 10"),
    ("nli", "stack_folds=21", "[2, 20]"),
    ("nli", "stack_folds=1", "[2, 20]"),
    ("nli", "n_jobs=1000", "[1, 64]"),
    ("re", "window=51", "[0, 50]"),
    ("re", "min_count=100000", "[1, 1000]"),
    ("sts", "shift_folds=100", "[2, 20]"),
    ("sts", "min_samples_leaf=10001", "[1, 10000]"),
    ("ner", "type_folds=21", "[2, 20]"),
    ("dp", "dimension=1099511627776", "[1024, 67108864]"),
    ("dp", "min_count=1001", "[1, 1000]"),
    ("mrc", "calibration_folds=21", "[2, 20]"),
    ("mrc", "max_calibration_questions=100001", "[1, 100000]"),
    ("wos", "selection_folds=21", "[2, 20]"),
    ("wos", "min_df=5000", "[1, 1000]"),
])
def test_every_count_hyper_parameter_has_an_upper_bound(tmp_path, task, assignment, accepted):
    line = refused("run", task, "--param", assignment, "--results-dir", tmp_path)
    assert f"'{assignment.split('=')[0]}' parameter" in line and accepted in line, line


def test_a_missing_or_wrong_ner_file_for_the_mrc_reader_is_one_error_line(tmp_path):
    line = refused("run", "mrc", "--param", f"ner_train={tmp_path / 'absent.tsv'}")
    assert "absent.tsv" in line and "no such file" in line
    not_ner = sample_dir() / "klue-mrc-v1.1" / "klue-mrc-v1.1_train.json"
    line = refused("run", "mrc", "--param", f"ner_train={not_ner}")
    assert "klue-mrc-v1.1_train.json" in line


# 5. Text and trees.

def test_a_lone_surrogate_is_replaced_with_a_warning_and_the_batch_survives(tmp_path):
    inputs = tmp_path / "titles.jsonl"
    inputs.write_text('{"title": "손흥민 시즌 10호 골"}\n{"title": "깨진 \\ud800 문자"}\n{"title": "\\u0000제어\\u001b문자"}\n',
                      encoding="utf-8")
    output = tmp_path / "out.jsonl"
    code, text = cli("predict", "ynat", "--input", inputs, "--output", output, "--train", sample_file("ynat", "train"))
    assert code == 0, text
    assert "Warning:" in text and "lone surrogate" in text and "line 2" in text
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [row["guid"] for row in rows] == ["line-1", "line-2", "line-3"]


def test_the_analyser_survives_a_lone_surrogate_from_python():
    analyses = MorphemeAnalyzer(use_cache=False).analyze(["정상 문장", "안녕\ud800하세요"])
    assert analyses[0].forms and analyses[1].text == "안녕\ud800하세요" and "하" in analyses[1].forms


@pytest.mark.parametrize("heads, problem", [
    ([2, 3, 2], "form a cycle"), ([1, 0, 2], "its own head"), ([2, 3, 1], "form a cycle"), ([2, 3, 2, 3], "cycle"),
])
def test_dp_trees_that_are_not_trees_are_refused(tmp_path, heads, problem):
    rows = "\n".join(f"{i}\t어절{i}\t어절{i}\tNNG\t{h}\tNP" for i, h in enumerate(heads, start=1))
    gold = tmp_path / "dp.tsv"
    gold.write_text(f"## klue-dp-bad\t{' '.join(f'어절{i}' for i in range(1, len(heads) + 1))}\n{rows}\n\n",
                    encoding="utf-8")
    predictions = write_lines(tmp_path / "p.jsonl", [{"guid": "klue-dp-bad", "heads": heads, "deprels": ["NP"] * 4}])
    error = refused("score", "dp", "--gold", gold, "--predictions", predictions)
    assert "klue-dp-bad" in error and str(gold) in error and (problem in error or "root" in error)


def test_no_root_is_refused():
    from baselines.tasks.dp import tree_problem

    assert "root" in tree_problem([2, 1])
    assert tree_problem([2, 0, 2]) is None


def test_deeply_nested_json_and_empty_files(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    assert "nested too deeply" in refused("score", "ynat", "--gold", deep, "--predictions", deep)
    deep_line = tmp_path / "deep.jsonl"
    deep_line.write_text('{"a": ' + "[" * 200_000 + "]" * 200_000 + "}\n")
    assert "nested too deeply" in refused("score", "ynat", "--gold", sample_file("ynat"), "--predictions", deep_line)
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    assert "holds no ynat records" in refused("run", "ynat", "--dev", empty, "--train", sample_file("ynat", "train"))
    blank = tmp_path / "blank.tsv"
    blank.write_text("")
    assert "holds no ner records" in refused("score", "ner", "--gold", blank, "--predictions", blank)


# 6. Cache.

def test_a_locked_cache_warns_and_the_run_goes_on_uncached(tmp_path):
    texts = ["잠긴 캐시에도 분석은 계속된다."]
    expected = MorphemeAnalyzer(use_cache=False).analyze(texts)
    holder = AnalysisCache(tmp_path, "options")
    holder.put_many([])  # creates the database
    lock = sqlite3.connect(holder.path, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        analyzer = MorphemeAnalyzer(cache_dir=tmp_path)
        analyzer._cache = AnalysisCache(tmp_path, analyzer.options_key(), timeout=0.2)
        with pytest.warns(CacheWarning, match="cannot be used"):
            assert analyzer.analyze(texts) == expected
        assert analyzer.cache.disabled
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert holder.path.exists()  # never deleted: the other process still holds it


@pytest.mark.parametrize("where", ["below-a-file", "a-file"])
def test_a_cache_that_cannot_be_a_folder_warns(tmp_path, where):
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    cache_dir = blocker / "cache" if where == "below-a-file" else blocker
    texts = ["캐시 폴더가 파일 아래에 있다."]
    with pytest.warns(CacheWarning):
        assert MorphemeAnalyzer(cache_dir=cache_dir).analyze(texts) == MorphemeAnalyzer(use_cache=False).analyze(texts)
    assert blocker.read_text() == ""


def test_a_read_only_cache_warns(tmp_path):
    texts = ["읽기 전용 캐시"]
    MorphemeAnalyzer(cache_dir=tmp_path).analyze(["다른 문장"])
    uri = f"file:{tmp_path / 'analyses.sqlite3'}?mode=ro"
    analyzer = MorphemeAnalyzer(cache_dir=tmp_path)
    cache = analyzer.cache
    cache._connection = sqlite3.connect(uri, uri=True, isolation_level=None)
    with pytest.warns(CacheWarning, match="readonly"):
        assert analyzer.analyze(texts) == MorphemeAnalyzer(use_cache=False).analyze(texts)


# 7. The sample is never official.

def test_copies_of_the_sample_are_recorded_as_sample_and_never_rewrite_results(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train, dev = tmp_path / "ynat-v1.1_train.json", tmp_path / "ynat-v1.1_dev.json"
    train.write_bytes(sample_file("ynat", "train").read_bytes())
    dev.write_bytes(sample_file("ynat").read_bytes())
    code, output = cli("run", "ynat", "--model", "trivial", "--train", train, "--dev", dev)
    assert code == 0 and "sample" in output
    assert not (tmp_path / "results").exists()
    code, output = cli("run", "ynat", "--model", "trivial", "--data-dir", tmp_path)
    assert code == 0 and not (tmp_path / "results").exists()
    # Given a results folder that holds KLUE runs, a sample run is refused before training.
    official = {"task": "ynat", "runs": {"tfidf-lr": {"sample": False, "headline": {"macro_f1": 83.0}}}}
    write_json_atomic(tmp_path / "klue-results" / "ynat.json", official)
    error = refused("run", "ynat", "--model", "trivial", "--train", train, "--dev", dev,
                    "--results-dir", tmp_path / "klue-results")
    assert "holds runs on KLUE data" in error
    assert json.loads((tmp_path / "klue-results" / "ynat.json").read_text()) == official


# 8. Download.

class EndlessHandler(BaseHTTPRequestHandler):
    """Serves more bytes than any manifest size, without a Content-Length, and counts what it sent."""
    sent = 0

    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        chunk = b"x" * 65536
        try:
            for _ in range(400):  # at most 25 MiB, so the test ends even if the client kept reading
                self.wfile.write(chunk)
                type(self).sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format, *args):
        pass


def test_download_stops_reading_past_the_manifest_size(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), EndlessHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        result = CliRunner().invoke(main, ["--quiet", "download", "re", "--data-dir", str(tmp_path / "data"),
                                           "--mirror", f"http://127.0.0.1:{server.server_address[1]}"])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert result.exit_code == 1 and "sent more than the expected" in result.output
    assert not list((tmp_path / "data").rglob("*.json"))
    biggest = max(f.size for f in official_manifest().values() if f.name.startswith(("klue-re", "relation")))
    assert biggest < 25 * 2**20  # the server could send more than every RE file; the client stopped first


# 9. Reproducible results.

def test_reproduce_reruns_recorded_commands_and_fails_on_a_difference(tmp_path):
    run = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "run", "ynat", "nli", "--model", "trivial",
                          "--results-dir", "results"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    record = json.loads((tmp_path / "results" / "ynat.json").read_text(encoding="utf-8"))["runs"]["trivial"]
    assert len(record["code"]["source_sha256"]) == 64
    assert record["command"] == "klue-baselines -q run ynat nli --model trivial --results-dir results"

    same = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "reproduce", "ynat", "nli"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "2 of 2 recorded scores reproduced" in same.stdout and "Warning" not in same.stderr

    data = json.loads((tmp_path / "results" / "ynat.json").read_text(encoding="utf-8"))
    data["runs"]["trivial"]["versions"]["kiwipiepy"] = "0.1.0"
    write_json_atomic(tmp_path / "results" / "ynat.json", data)
    other_kiwi = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "reproduce", "ynat"], cwd=tmp_path,
                                capture_output=True, text=True)
    installed = provenance.versions()["kiwipiepy"]
    assert other_kiwi.stderr.startswith(f"Warning: kiwipiepy: the rows recorded 0.1.0; installed {installed}\n")
    assert "pip install -c results/constraints.txt" in other_kiwi.stderr
    assert "kiwipiepy==" in (tmp_path / "results" / "constraints.txt").read_text(encoding="utf-8")

    data = json.loads((tmp_path / "results" / "nli.json").read_text(encoding="utf-8"))
    assert data["runs"]["trivial"]["machine"] == provenance.machine()
    data["runs"]["trivial"]["headline"]["accuracy"] += 0.0001
    write_json_atomic(tmp_path / "results" / "nli.json", data)
    different = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "reproduce", "ynat", "nli"],
                               cwd=tmp_path, capture_output=True, text=True)
    assert different.returncode == 1 and "DIFFERENT" in different.stdout
    assert "recorded on" not in different.stdout  # recorded here: the machine does not explain it

    # A row recorded with other kernels says so, with this machine's for comparison.
    data["runs"]["trivial"]["machine"]["kiwi_arch"] = "avx512vnni"
    write_json_atomic(tmp_path / "results" / "nli.json", data)
    elsewhere = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "reproduce", "ynat", "nli"],
                               cwd=tmp_path, capture_output=True, text=True)
    assert "nli trivial: recorded on" in elsewhere.stdout and "Kiwi kernels avx512vnni" in elsewhere.stdout
    assert "ynat trivial" not in elsewhere.stdout.split("reproduced")[-1]  # the same scores need no note
    assert "this machine: " in elsewhere.stdout

    # A row recorded by other code says so, whether or not its scores moved.
    here = provenance.code_version().get("git_commit")
    for task in ("nli", "ynat"):
        data = json.loads((tmp_path / "results" / f"{task}.json").read_text(encoding="utf-8"))
        data["runs"]["trivial"]["code"]["git_commit"] = "0" * 40
        write_json_atomic(tmp_path / "results" / f"{task}.json", data)
    older = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "reproduce", "ynat", "nli"],
                           cwd=tmp_path, capture_output=True, text=True)
    if here:  # HEAD as the rerun saw it (this process's may be older, if a commit came meanwhile)
        assert re.search(r"nli trivial: recorded by the code at 0000000, rerun at [0-9a-f]{7}: differs", older.stdout)
        assert re.search(r"ynat trivial: recorded by the code at 0000000, rerun at [0-9a-f]{7}: reproduced",
                         older.stdout)
    else:
        assert "this code is not a git checkout" in older.stdout


def test_reproduce_names_the_code_each_row_was_rerun_by():
    """A commit can land while a long reproduce runs: each row's note names the code its own rerun recorded."""
    early, late, recorded = "a" * 40, "b" * 40, "c" * 40
    comparisons = [reproduce.Comparison("ynat", "fast", "macro_f1", 81.84, 81.84, None, recorded, early),
                   reproduce.Comparison("mrc", "fast", "exact_match", 31.93, 31.93, None, recorded, late),
                   reproduce.Comparison("wos", "fast", "slot_f1", 90.69, 90.69, None, late, late),
                   reproduce.Comparison("dp", "fast", "uas_micro_f1", 85.67, 85.67, None, recorded, None)]
    assert reproduce.code_notes(comparisons, late) == [
        "ynat fast: recorded by the code at ccccccc, rerun at aaaaaaa: reproduced all the same",
        "mrc fast: recorded by the code at ccccccc, rerun at bbbbbbb: reproduced all the same",
        "dp fast: recorded by the code at ccccccc, rerun at bbbbbbb: reproduced all the same"]


def test_reproduce_runs_only_the_installed_toolkits_run_and_writes_only_to_its_scratch_folder(tmp_path):
    run = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "run", "ynat", "--model", "trivial",
                          "--results-dir", "results"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    # A baselines/ folder beside results/ must not be what runs.
    planted = tmp_path / "baselines"
    planted.mkdir()
    marker = tmp_path / "planted-code-ran"
    for name in ("__init__.py", "cli.py"):
        (planted / name).write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    results_file = tmp_path / "results" / "ynat.json"
    data = json.loads(results_file.read_text(encoding="utf-8"))
    recorded = data["runs"]["trivial"]["command"]
    data["runs"]["trivial"]["command"] = recorded + " --plots figures --predictions-dir predictions"
    write_json_atomic(results_file, data)
    code, output = cli("reproduce", "ynat", "--results-dir", tmp_path / "results")
    assert code == 0 and "1 of 1 recorded scores reproduced" in output, output
    assert not marker.exists() and not (tmp_path / "figures").exists() and not (tmp_path / "predictions").exists()
    # Only `run` is rerun: a recorded bench command with the word run in it is not.
    data["runs"]["trivial"]["command"] = "klue-baselines bench learning-curve ynat --data-dir run --plots figures"
    write_json_atomic(results_file, data)
    code, output = cli("reproduce", "ynat", "--results-dir", tmp_path / "results")
    assert code == 1 and "not rerun: only `klue-baselines run` commands are rerun" in output, output
    assert not (tmp_path / "figures").exists()
    data["runs"]["trivial"]["command"] = recorded + " --no-such-option 3"
    write_json_atomic(results_file, data)
    code, output = cli("reproduce", "ynat", "--results-dir", tmp_path / "results")
    assert code == 1 and "is not one `run` takes (No such option" in output and "--no-such-option" in output, output
    # Malformed fields: one line each, no traceback, and nothing read from stdin.
    for field, value, expected in (("command", 42, "'command' should be the recorded command line, not int"),
                                   ("command", None, "'command' should be the recorded command line, not NoneType"),
                                   ("headline", [1, 2], "'headline' should be an object of metric names")):
        data["runs"]["trivial"] = {**data["runs"]["trivial"], "command": recorded, field: value}
        write_json_atomic(results_file, data)
        error = refused("reproduce", "ynat", "--results-dir", tmp_path / "results")
        assert f"{results_file}: run trivial: {expected}" in error, error


def test_all_default_models_predict_alike_under_other_kernels_threads_and_hash_seeds(tmp_path):
    """`bench determinism` on the sample: every default model, rerun under other OpenBLAS kernels, 1 and 2 BLAS
    and OpenMP threads, numpy's loops without AVX2 and another PYTHONHASHSEED each, predicts every row alike."""
    chosen = determinism.variants()
    assert len({variant.environment["PYTHONHASHSEED"] for variant in chosen}) == len(chosen) >= 3
    assert {variant.environment["OPENBLAS_NUM_THREADS"] for variant in chosen} == {"1", "2"}
    report, path = api.determinism(results_dir=tmp_path, at_once=2)
    written = json.loads(path.read_text(encoding="utf-8"))
    assert path == tmp_path / "determinism.json" and [bench["sample"] for bench in written["benches"]] == [True]
    assert written["benches"][0]["model"] is None  # the default models: what `--model fast` is kept beside
    assert {stem.split("-")[0] for stem in report["tasks"]} == set(TASK_CODES)
    different = {stem: [(v["name"], v["first_differing"][:3]) for v in entry["variants"] if v["differing_rows"]]
                 for stem, entry in report["tasks"].items() if not entry["identical"]}
    assert report["identical"] and not different, different
    assert all(entry["rows"] > 0 and entry["headline"] for entry in report["tasks"].values())


def test_determinism_json_keeps_the_latest_bench_of_each_task_and_model(tmp_path):
    path = tmp_path / "determinism.json"
    bench = {"nli": {"task_codes": ["nli"], "identical": True}, "ner": {"task_codes": ["ner"], "identical": False},
             "ynat-sts": {"task_codes": ["ynat", "sts"], "identical": True}}
    for name in ("nli", "ner", "ynat-sts"):
        write_json_atomic(path, determinism.merged_file(path, bench[name]))
    assert [b["task_codes"] for b in json.loads(path.read_text())["benches"]] == [["ynat", "sts"], ["nli"], ["ner"]]
    assert json.loads(path.read_text())["identical"] is False
    rerun = {"task_codes": ["ner"], "identical": True}
    written = determinism.merged_file(path, rerun)
    assert written["identical"] is True and written["benches"][-1] is rerun and len(written["benches"]) == 3
    write_json_atomic(path, written)
    fast = {"task_codes": ["nli"], "model": "fast", "identical": True}
    with_fast = determinism.merged_file(path, fast)  # another model of the task: kept beside the default's
    assert [(b["task_codes"], b.get("model")) for b in with_fast["benches"]] == [
        (["ynat", "sts"], None), (["nli"], None), (["nli"], "fast"), (["ner"], None)]
    write_json_atomic(path, with_fast)
    fast_again = {"task_codes": ["nli"], "model": "fast", "identical": False}
    assert determinism.merged_file(path, fast_again)["benches"][2] is fast_again
    assert determinism.merged_file(path, fast_again)["benches"][1]["identical"] is True
    path.write_text('{"tasks": {}, "identical": true}')  # the single-report form of earlier versions
    assert determinism.merged_file(path, rerun)["benches"] == [rerun]


def test_determinism_compares_predictions_not_only_scores():
    reference = [{"guid": "a", "label": "x", "probs": {"x": 0.6, "y": 0.4}}, {"guid": "b", "belief": -0.4527289068}]
    last_bits = [{"guid": "a", "label": "x", "probs": {"x": 0.600001, "y": 0.4}},
                 {"guid": "b", "belief": -0.45272890681}]
    assert determinism.differing_rows(reference, last_bits) == []
    relabelled = [{"guid": "a", "label": "y", "probs": {"x": 0.6, "y": 0.4}}, reference[1]]
    assert determinism.differing_rows(reference, relabelled) == [{"guid": "a", "fields": ["label"]}]
    assert determinism.differing_rows(reference, reference[:1]) == [{"guid": "b", "fields": ["belief", "guid"]}]
    # A kernel pinned by the environment is kept; threads and numpy's loops still vary.
    pinned = determinism.variants(flags=["pni", "avx", "avx2"], machine="x86_64", pinned_kernel="Prescott")
    assert {v.environment["OPENBLAS_CORETYPE"] for v in pinned} == {"Prescott"} and len(pinned) == 3
    assert [v.environment.get("OPENBLAS_CORETYPE") for v in determinism.variants(
        flags=["pni", "avx", "avx2"], machine="x86_64", pinned_kernel="")] == ["Haswell", "Sandybridge", "Prescott",
                                                                               "Haswell"]


# 10. Portability.

def test_the_package_imports_and_runs_without_the_resource_module(tmp_path):
    # Windows has neither the resource module nor /proc.
    script = ("import sys, pathlib; sys.modules['resource'] = None\n"
              "from baselines.runner import evaluate as evaluation\n"
              "from baselines.runtime import memory\n"
              "memory._STATUS = memory._CLEAR_REFS = pathlib.Path('/nonexistent/proc')\n"
              "from baselines.data.locate import locate\n"
              "from baselines.runner.registry import get_task\n"
              "spec = get_task('ynat')\n"
              "data = locate(spec)\n"
              "record, _ = evaluation.evaluate_task(spec, data, model_name='trivial')\n"
              "print(record['peak_rss_mb'], record['headline']['macro_f1'] > 0)\n")
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.split() == ["None", "True"]


def test_numbers_are_not_booleans_counts_are_bounded_and_the_bad_value_is_named(tmp_path):
    for assignment, expected in (("C=true", "'C' parameter of TopicClassifier must be a number, not true"),
                                 ("neighbours=1000000000", "'neighbours' parameter of TopicClassifier must be an int "
                                                           "in the range [0, 100]"),
                                 ("max_iter=1000000000", "'max_iter' parameter")):
        error = refused("run", "ynat", "--param", assignment, "--results-dir", tmp_path)
        assert expected in error, error
    error = refused("tune", "ynat", "--param", "C=1,abc", "--results-dir", tmp_path)
    assert "'abc'" in error and "got 1 " not in error, error


def test_runs_recorded_by_two_processes_at_once_are_all_kept(tmp_path):
    base = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "run", "ynat", "--model", "trivial",
                           "--results-dir", "results"], cwd=tmp_path, capture_output=True, text=True)
    assert base.returncode == 0, base.stderr
    script = ("import json, sys; from pathlib import Path; from baselines import results\n"
              "record = json.loads(Path('results/ynat.json').read_text())['runs']['trivial']\n"
              "for number in range(60):\n"
              "    results.record_run(Path('results'), dict(record, params={'writer': sys.argv[1], 'n': number}))\n")
    writers = [subprocess.Popen([sys.executable, "-c", script, name], cwd=tmp_path) for name in ("a", "b")]
    assert [writer.wait() for writer in writers] == [0, 0]
    runs = json.loads((tmp_path / "results" / "ynat.json").read_text(encoding="utf-8"))["runs"]
    assert len(runs) == 1 + 2 * 60
    assert (tmp_path / "results" / "README.md").read_text(encoding="utf-8").count("| ynat | trivial") == 1 + 2 * 60


def test_an_hf_row_without_its_label_is_unlabelled_not_a_crash():
    records = api.records_from_hf("ynat", [{"guid": "a", "title": "제목", "url": "", "date": ""}])
    assert records[0].label is None
    with pytest.raises(DataError, match="guid a: has no gold label"):
        api.fit("ynat", records, "trivial")


@pytest.mark.parametrize("task", ["ner", "dp"])
def test_a_byte_order_mark_is_read_past_in_tsv_conllu_and_jsonl(tmp_path, task):
    gold = tmp_path / sample_file(task).name
    gold.write_bytes(b"\xef\xbb\xbf" + sample_file(task).read_bytes())
    assert api.load(task, gold) == api.load(task, sample_file(task))
    rows = api.predict(task, api.fit(task, sample_file(task, "train"), "trivial"), sample_file(task))
    predictions = tmp_path / "p.jsonl"
    predictions.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(row, ensure_ascii=False) + "\n"
                                                      for row in rows).encode("utf-8"))
    assert api.score(task, gold, predictions) == api.score(task, sample_file(task), rows)
    if task == "dp":
        conllu = tmp_path / "dp.conllu"
        records = api.load("dp", sample_file("dp"))
        api.task_spec("dp").prediction_files.writers["conllu"](conllu, records, rows)
        conllu.write_bytes(b"\xef\xbb\xbf" + conllu.read_bytes())
        assert api.score("dp", sample_file("dp"), conllu) == api.score("dp", sample_file("dp"), rows)


def test_conllu_heads_take_ascii_digits_only_and_a_tree_has_one_root(tmp_path):
    records = api.load("dp", sample_file("dp"))
    gold = [{"heads": [w.head for w in r.words], "deprels": [w.deprel for w in r.words]} for r in records]
    conllu = tmp_path / "gold.conllu"
    api.task_spec("dp").prediction_files.writers["conllu"](conllu, records, gold)
    lines = conllu.read_text(encoding="utf-8").split("\n")
    first_token = next(number for number, line in enumerate(lines) if line and not line.startswith("#"))
    columns = lines[first_token].split("\t")
    superscript = lines[:first_token] + ["\t".join(columns[:6] + ["²"] + columns[7:])] + lines[first_token + 1:]
    conllu.write_text("\n".join(superscript), encoding="utf-8")
    error = refused("run", "dp", "--model", "trivial", "--train", sample_file("dp", "train"), "--dev", conllu)
    assert "HEAD '²' is not 0 (root)" in error
    two_roots = [list(map(int, [w.head for w in records[0].words]))]
    root = two_roots[0].index(0)
    other = 0 if root != 0 else 1
    heads = [0 if index == other else head for index, head in enumerate(two_roots[0])]
    api.task_spec("dp").prediction_files.writers["conllu"](conllu, records, [{**gold[0], "heads": heads}] + gold[1:])
    error = refused("run", "dp", "--model", "trivial", "--train", conllu, "--dev", sample_file("dp"))
    assert f"sent_id {records[0].guid}" in error and "are all attached to the root (HEAD 0): a tree has one" in error


def test_protocols_are_named_from_the_bytes_not_from_names_or_record_counts(tmp_path, monkeypatch):
    spec = get_task("ynat")
    named_as_official = write_json(tmp_path / spec.dev_file, json_records("ynat"))
    train = write_json(tmp_path / spec.train_file, json_records("ynat", "train"))
    dev_file, train_file = evaluation.describe_file(named_as_official), evaluation.describe_file(train)
    assert dev_file["origin"] == "custom" and evaluation.protocol_name(spec, 0, train_file, dev_file) == "custom"
    # Listed as derivations of the official files (as an export of exactly the official records would be):
    # whole, they make the official protocol; a listed part of train makes official-partial-train; a listed
    # part of dev is scored under a protocol only by cross-fitting.
    listed = {entry["sha256"]: sources.DerivedFile(official, 1, entry["sha256"], 1, part, "a test copy")
              for entry, official, part in ((train_file, spec.train_file, False), (dev_file, spec.dev_file, False))}
    monkeypatch.setattr(sources, "derived_manifest", lambda: listed)
    train_file, dev_file = evaluation.describe_file(train), evaluation.describe_file(named_as_official)
    assert (train_file["origin"], train_file["official_name"]) == ("derived", spec.train_file)
    assert evaluation.protocol_name(spec, 0, train_file, dev_file) == "official"
    assert evaluation.protocol_name(spec, 0, train_file, dev_file, train_records=300) == "official-partial-train"
    assert evaluation.protocol_name(spec, 0, {**train_file, "part": True}, dev_file) == "official-partial-train"
    assert evaluation.protocol_name(spec, 0, train_file, {**dev_file, "part": True}) == "custom"
    assert evaluation.protocol_name(spec, 5, None, {**dev_file, "part": True}) == "dev-crossfit"
    # The dev file's bytes given as training data stand for no training file.
    assert evaluation.protocol_name(spec, 0, dev_file, dev_file) == "custom"
    code, output = cli("run", "ynat", "--model", "trivial", "--train", sample_file("ynat", "train"), "--dev",
                       sample_file("ynat"), "--results-dir", tmp_path / "results")
    assert code == 0 and "sample" in output  # the sample's bytes, however named, stay the sample


def test_a_modified_dev_file_is_recorded_custom_with_its_sha256_everywhere(tmp_path):
    rows = json_records("nli")
    rows[0]["gold_label"] = "neutral" if rows[0]["gold_label"] != "neutral" else "entailment"
    modified = write_json(tmp_path / "klue-nli-v1.1_dev.json", rows)
    train = write_json(tmp_path / "klue-nli-v1.1_train.json", json_records("nli", "train")[:-1])  # not the sample
    code, output = cli("run", "nli", "--model", "trivial", "--train", train, "--dev", modified,
                       "--results-dir", tmp_path / "results")
    assert code == 0, output
    assert [line.split()[-1] for line in output.splitlines() if line.startswith("nli ")] == ["custom"]
    record = json.loads((tmp_path / "results" / "nli.json").read_text(encoding="utf-8"))["runs"]["trivial"]
    assert record["protocol"] == "custom"
    dev = next(entry for entry in record["files"] if entry["path"] == str(modified))
    assert (dev["origin"], dev["records"], dev["sha256"]) == ("custom", len(rows), file_sha256(modified))
    readme = (tmp_path / "results" / "README.md").read_text(encoding="utf-8")
    assert "| custom † |" in readme and "| custom | a train or dev file that is neither" in readme


def test_a_misspelt_or_capitalised_task_name_is_found_before_any_file():
    line = refused("predict", "ynta", "--input", "no-such-file.json")
    assert "unknown task 'ynta' (did you mean ynat?)" in line and "no-such-file" not in line
    code, output = cli("run", "YNAT", "--model", "trivial", "--results-dir", "/nonexistent-dir-for-test/results")
    assert "unknown task" not in output
    assert api.data_file("YNAT", "validation") == api.data_file("ynat", "dev")
    with pytest.raises(ValueError, match=r"unknown task 'ynta' \(did you mean ynat\?\)"):
        api.make_model("ynta")
    assert get_task("NLI") is get_task("nli")


def test_a_hyper_parameter_typo_gets_the_closest_name():
    line = refused("run", "ynat", "--param", "c=2")
    assert "no hyper-parameters ['c'] (did you mean C?)" in line


@pytest.mark.parametrize("task, other, named", [("ynat", "nli", "an NLI file"), ("nli", "ynat", "a YNAT file"),
                                                ("ner", "dp", "a DP file"), ("mrc", "wos", "a WoS file"),
                                                ("sts", "re", "an RE file"), ("wos", "mrc", "an MRC file")])
def test_a_file_of_another_tasks_format_says_whose_it_is(task, other, named):
    with pytest.raises(DataError, match=f"this looks like {named}, and the task is"):
        api.load(task, sample_file(other))
    line = refused("score", task, "--gold", sample_file(other), "--predictions", sample_file(other))
    assert f"this looks like {named}" in line


def test_too_few_titles_for_min_df_or_a_single_topic_name_the_cause(tmp_path):
    titles = json.loads(sample_file("ynat", "train").read_text(encoding="utf-8"))
    with pytest.raises(TrainingDataError, match=r"min_df=2 .* there are 1: .*\(min_df=1\)"):
        api.fit("ynat", api.records_from_hf("ynat", titles[:1]))
    one_topic = [row for row in titles if row["label"] == titles[0]["label"]][:4]
    train = tmp_path / "ynat-v1.1_train.json"
    train.write_text(json.dumps(one_topic, ensure_ascii=False), encoding="utf-8")
    line = refused("run", "ynat", "--train", train, "--dev", sample_file("ynat"), "--results-dir", tmp_path)
    assert f"all 4 are '{titles[0]['label']}'" in line


@pytest.mark.parametrize("task, param, suffix, what, wrong, taken", [
    ("ner", "re_train", "json", "KLUE-RE training file", ("klue-nli-v1.1", "klue-nli-v1.1_train.json"), "re gazetteer"),
    ("re", "dp_train", "tsv", "KLUE-DP training file", ("klue-ner-v1.1", "klue-ner-v1.1_train.tsv"), "dp model"),
])
def test_a_missing_or_wrong_file_of_another_task_is_one_error_line(tmp_path, task, param, suffix, what, wrong, taken):
    line = refused("run", task, "--param", f"{param}={tmp_path / ('absent.' + suffix)}")
    assert f"absent.{suffix}" in line and "no such file" in line and what in line
    not_theirs = sample_dir().joinpath(*wrong)
    line = refused("run", task, "--param", f"{param}={not_theirs}")
    assert wrong[1] in line
    line = refused("run", "ynat", "--param", f"{param}={not_theirs}")
    assert param in line
    line = refused("tune", task, "--model", "trivial", "--param", f"{param}=null", "--results-dir", tmp_path)
    assert f"trivial takes no {taken}, so no {param}" in line
    line = refused("run", task, "--model", "trivial", "--param", f"{param}={not_theirs}", "--results-dir", tmp_path)
    assert f"trivial takes no {taken}, so no {param}" in line


def test_a_determinism_run_that_fails_is_one_error_line_and_another_tasks_file_is_made_absolute(tmp_path,
                                                                                               monkeypatch):
    # The variants run in a scratch folder: a relative re_train must reach them as the user's file.
    monkeypatch.chdir(tmp_path)
    line = refused("bench", "determinism", "ner", "--param", "re_train=absent-re.json", "--results-dir", tmp_path)
    assert "failed under" in line and f"{tmp_path / 'absent-re.json'}: no such file" in line
    assert not (tmp_path / "determinism.json").exists()


def test_reproduce_of_one_task_reruns_that_task_only_of_a_command_that_ran_several(tmp_path):
    """The floors of YNAT, STS, NLI and RE were recorded by one command; `reproduce sts` reruns it for STS alone."""
    from baselines.cli.scores import run as run_command

    recorded = "klue-baselines -q run ynat sts nli re --data-dir data --model trivial"
    (tmp_path / "data").mkdir()
    arguments = reproduce.rerun_arguments(recorded, run_command, tmp_path, tmp_path / "out", tmp_path / "cache",
                                          {"sts"})
    assert arguments[arguments.index("run") + 1:arguments.index("--model")] == ["sts"]
    every = reproduce.rerun_arguments(recorded, run_command, tmp_path, tmp_path / "out", tmp_path / "cache")
    assert every[every.index("run") + 1:every.index("--model")] == ["ynat", "sts", "nli", "re"]
