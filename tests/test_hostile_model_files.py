"""Hostile model files: a planted pickle, foreign or crafted skops data, damaged headers and payloads are
refused before anything in them runs, with one `Error:` line."""
from __future__ import annotations

import copy
import gc
import hashlib
import io
import json
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from baselines import api
from baselines.runner import persistence
from baselines.runtime import provenance
from baselines.runner.persistence import ModelFileError, load_model, read_metadata
from baselines.runner.registry import get_task
from baselines.tasks import ner as ner_task

from helpers import cli, fitted_on_sample, json_records, refused, sample_file


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
             ("unfitted", get_task("ynat").modelling.models["trivial"].build(), "ynat", "trivial", "never fitted")]
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
    ner = get_task("ner").modelling.models["crf"].build().set_params(max_iterations=5, neighbours=0, type_folds=0)
    records = get_task("ner").reading.load(sample_file("ner", "train"))[:40]
    ner.fit(records, get_task("ner").modelling.targets(records))
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
    ner = get_task("ner").modelling.models["crf"].build().set_params(max_iterations=5, neighbours=0, type_folds=0)
    records = get_task("ner").reading.load(sample_file("ner", "train"))[:40]
    ner.fit(records, get_task("ner").modelling.targets(records))
    monkeypatch.setattr(ner_task, "crf_model", lambda crf: b"lCRF not a model")
    path = tmp_path / "ner.model"
    persistence.save_model(path, ner, "ner", "crf", [sample_file("ner", "train")], provenance.versions())
    error = refused("predict", "ner", "--model", path, "--input", sample_file("ner"))
    assert "not a readable model" in error


@pytest.fixture(scope="module")
def small_boosted_sts():
    """STS's boosted trees, fitted once on the sample for the damage cases below, which only read it."""
    return fitted_on_sample("sts", "features-gbr", max_iter=5, svd_components=5)


@pytest.mark.parametrize("damage, expected", [("loop", "points outside the tree or back"),
                                               ("outside", "points outside the tree or back"),
                                               ("feature", "splits on a feature that the model does not have"),
                                               ("categorical", "categorical split")])
def test_boosted_trees_whose_indices_would_read_outside_them_are_refused(tmp_path, small_boosted_sts, damage,
                                                                         expected):
    """scikit-learn walks a boosted tree by the child and feature indices it stores, unchecked: a model file
    whose tree loops or points outside is refused, not run."""
    pytest.importorskip("skops.io", reason="the secure extra (skops) is not installed")
    model = copy.deepcopy(small_boosted_sts)  # each case damages its own copy of the one fitted model
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


def _with_first_tree_nodes(model, nodes):
    """A copy of the boosted model whose first tree holds `nodes`."""
    damaged = copy.deepcopy(model)
    damaged.regressor_._predictors[0][0].nodes = nodes
    return damaged


def test_boosted_tree_nodes_that_are_not_a_trees_records_are_refused(small_boosted_sts):
    """The checker reads each node's fields by name: nodes without them (plain numbers, other fields), none at all,
    or in two dimensions are refused with the one message; exactly the fields it reads, or a single leaf, pass."""
    nodes = small_boosted_sts.regressor_._predictors[0][0].nodes
    assert persistence.unsafe_trees(small_boosted_sts) is None
    wrong = "a boosted tree's nodes are not a tree's records"
    fields = nodes.dtype.fields
    renamed = nodes.copy().view(np.dtype({  # the same records, the field 'left' named otherwise
        "names": ["left_" if name == "left" else name for name in fields],
        "formats": [fields[name][0] for name in fields], "offsets": [fields[name][1] for name in fields],
        "itemsize": nodes.dtype.itemsize}))
    for broken in (np.zeros(len(nodes)), renamed, nodes[:0], np.stack([nodes, nodes])):
        assert persistence.unsafe_trees(_with_first_tree_nodes(small_boosted_sts, broken)) == wrong
    read = ["left", "right", "feature_idx", "is_leaf", "is_categorical"]
    only_read = np.zeros(len(nodes), dtype=[(name, nodes.dtype[name]) for name in read])
    for name in read:
        only_read[name] = nodes[name]
    assert persistence.unsafe_trees(_with_first_tree_nodes(small_boosted_sts, only_read)) is None
    leaf = nodes[:1].copy()
    leaf["is_leaf"] = 1
    assert persistence.unsafe_trees(_with_first_tree_nodes(small_boosted_sts, leaf)) is None


def test_only_boosted_models_have_their_trees_walked():
    """An object that merely has a `_predictors` attribute is not a boosted model: nothing of it is read."""
    from types import SimpleNamespace
    assert persistence.unsafe_trees(SimpleNamespace(_predictors=[[object()]])) is None


def test_each_damage_of_a_boosted_tree_has_its_own_whole_message(small_boosted_sts):
    """The exact message for each kind of damage, at the edges of each bound: a child that is its own node, a
    child one past the last node, a feature one below the first."""
    nodes = small_boosted_sts.regressor_._predictors[0][0].nodes
    split = int(np.flatnonzero(nodes["is_leaf"] == 0)[-1])
    outside = "a boosted tree's split points outside the tree or back to an earlier node"

    def damaged(field: str, value: int) -> str | None:
        broken = nodes.copy()
        broken[field][split] = value
        return persistence.unsafe_trees(_with_first_tree_nodes(small_boosted_sts, broken))

    assert damaged("left", split) == outside and damaged("right", split) == outside
    assert damaged("right", len(nodes)) == outside and damaged("left", len(nodes)) == outside
    assert damaged("right", len(nodes) - 1) is None  # the last node is still inside
    assert damaged("feature_idx", -1) == "a boosted tree splits on a feature that the model does not have"
    assert damaged("feature_idx", small_boosted_sts.regressor_.n_features_in_) == (
        "a boosted tree splits on a feature that the model does not have")
    assert damaged("is_categorical", 1) == (
        "a boosted tree has a categorical split, which no model of this toolkit makes")


def test_held_objects_are_each_met_once_and_object_arrays_are_looked_into(small_boosted_sts):
    """The walk over a model's parts ends on a cycle and yields each object once; a boosted model inside an object
    array is found there."""
    cycle: list = []
    cycle.append(cycle)
    shared = {"a": 1}
    assert [id(item) for item in persistence._held_objects([cycle, shared, shared])][1:] in (
        [id(shared), id(cycle)], [id(cycle), id(shared)])
    nodes = small_boosted_sts.regressor_._predictors[0][0].nodes.copy()
    nodes["is_categorical"][0] = 1
    inside = np.empty(1, dtype=object)
    inside[0] = _with_first_tree_nodes(small_boosted_sts, nodes)
    assert persistence.unsafe_trees({"models": inside}) == (
        "a boosted tree has a categorical split, which no model of this toolkit makes")


def test_a_skops_entry_of_an_unknown_compression_method_is_refused_in_one_line():
    """A fuzzed byte turned an entry's compression method into one zipfile does not know: its NotImplementedError
    is a refusal naming the file, as every other damage is."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("schema.json", "{}")
    payload = bytearray(buffer.getvalue())
    for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):  # local header and central directory
        start = payload.index(signature)
        payload[start + offset:start + offset + 2] = (99).to_bytes(2, "little")
    with pytest.raises(persistence.ModelFileError, match=r"^m\.model: not a readable model \(NotImplementedError: "):
        persistence._skops_schema(Path("m.model"), bytes(payload))
