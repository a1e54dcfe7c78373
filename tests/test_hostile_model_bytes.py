"""Hostile model bytes: what reaches C code (crfsuite) is checked against its format first, nothing is inflated past
the stated ceiling, and seeded random mutations of real model files never crash the process or go past it."""
from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from baselines import api
from baselines.errors import ModelFileError
from baselines.models.crfsuite_format import check_crfsuite_model
from baselines.runner import persistence
from baselines.runner.registry import get_task
from baselines.runtime import provenance
from baselines.tasks import ner as ner_task
from fuzz_model_bytes import with_payload

pytest.importorskip("skops.io", reason="the secure extra (skops) is in the test extra; model files here are skops")
FUZZ = Path(__file__).with_name("fuzz_model_bytes.py")
# Fuzzed loads may take memory for what they build, never the ceiling's worth: far below INFLATED_LIMIT.
FUZZ_MEMORY_MB = 128


def fitted(task: str, model: str, records: int, **params):
    spec = get_task(task)
    estimator = spec.modelling.models[model].build().set_params(**params)
    rows = spec.reading.load(api.data_file(task, "train"))[:records]
    return estimator.fit(rows, spec.modelling.targets(rows))


def saved(path: Path, model, task: str, name: str) -> Path:
    persistence.save_model(path, model, task, name, [api.data_file(task, "train")], provenance.versions())
    return path


@pytest.fixture(scope="module")
def small_crf():
    return fitted("ner", "crf", 20, max_iterations=5, neighbours=0, type_folds=0)


@pytest.fixture(scope="module")
def model_files(small_crf, tmp_path_factory):
    folder = tmp_path_factory.mktemp("model-files")
    return {"ner": saved(folder / "ner.model", small_crf, "ner", "crf"),
            "ynat": saved(folder / "ynat.model", fitted("ynat", "tfidf-lr", 40), "ynat", "tfidf-lr")}


def test_the_crfsuite_models_that_crfsuite_writes_pass_the_check(small_crf):
    fast = fitted("ner", "fast", 20, epochs=1, neighbours=0)
    for model in (small_crf, fast):
        check_crfsuite_model(ner_task.crf_model(model.crf_))


HEADER_FIELDS = ["size", "type", "version", "features", "labels", "attributes", "off_features", "off_labels",
                 "off_attributes", "off_label_refs", "off_attribute_refs"]


@pytest.mark.parametrize("field, value, refusal", [
    ("size", 12, "the header gives the model 12 bytes"),
    ("version", 99, "crfsuite model version 99"),
    ("labels", 0, "the model has 0 labels"),
    ("labels", 100_000, "the model has 100,000 labels"),
    ("attributes", 1 << 31, "the attribute references chunk"),
    ("off_features", 1 << 31, "the features chunk's header"),
    ("off_labels", 1 << 31, "the labels database's header"),
    ("off_attributes", 1 << 30, "the attributes database's header"),
    ("off_label_refs", 0xFFFFFFF0, "the label references chunk's header"),
    ("off_attribute_refs", 48, "the attribute references chunk at offset 48 does not start with AFRF"),
])
def test_an_offset_or_count_that_leads_out_of_the_bytes_is_refused_before_crfsuite_reads_it(small_crf, field, value,
                                                                                             refusal):
    """Each of these, given to crfsuite's C reader, reads outside its buffer (the process dies with signal 11)."""
    model = bytearray(ner_task.crf_model(small_crf.crf_))
    struct.pack_into("<I", model, 4 + 4 * HEADER_FIELDS.index(field), value)
    with pytest.raises(ValueError, match=refusal):
        ner_task.crf_from_model(bytes(model))


def test_a_hash_table_with_no_empty_bucket_is_refused(small_crf):
    """crfsuite's look-up of an attribute probes its table until it finds an empty bucket: a full one never ends."""
    model = bytearray(ner_task.crf_model(small_crf.crf_))
    attributes = struct.unpack_from("<I", model, 36)[0]
    for table in range(256):
        offset, buckets = struct.unpack_from("<II", model, attributes + 24 + 8 * table)
        if buckets:
            for bucket in range(buckets):
                struct.pack_into("<I", model, attributes + offset + 8 * bucket + 4, 24 + 2048)
            break
    with pytest.raises(ValueError, match="has no empty bucket"):
        check_crfsuite_model(bytes(model))


def test_a_crafted_crf_in_a_model_file_is_one_error_line_and_the_process_lives_on(small_crf, tmp_path, monkeypatch):
    model = bytearray(ner_task.crf_model(small_crf.crf_))
    struct.pack_into("<I", model, 32, len(model) + 1000)  # the labels' offset, past the end
    monkeypatch.setattr(ner_task, "crf_model", lambda crf: bytes(model))
    path = saved(tmp_path / "ner.model", small_crf, "ner", "crf")
    monkeypatch.undo()
    finished = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "predict", "ner", "--model", str(path),
                               "--input", str(api.data_file("ner", "dev"))], capture_output=True, text=True)
    assert finished.returncode == 1, finished.returncode  # not -11
    assert finished.stderr.startswith(f"Error: {path}: not a readable model (ValueError: the labels database's "
                                      f"header"), finished.stderr


def run_fuzz(*arguments) -> dict:
    finished = subprocess.run([sys.executable, str(FUZZ), *map(str, arguments)], capture_output=True, text=True,
                              timeout=600)
    assert finished.returncode == 0, f"the fuzzed reader ended with {finished.returncode}: {finished.stderr[-2000:]}"
    return json.loads(finished.stdout.splitlines()[-1])


def test_mutated_crfsuite_models_never_crash_crfsuite(small_crf, tmp_path):
    """300 seeded mutations of a real crfsuite model through crf_from_model, each that it takes then used to tag
    and read back; without the format check, this run dies by signal 11 within its first 300."""
    path = tmp_path / "ner.crfsuite"
    path.write_bytes(ner_task.crf_model(small_crf.crf_))
    report = run_fuzz("crfsuite", path, 0, 300)
    assert report["failed"] == 0, report["first_failure"]
    assert report["refused"] > 100 and report["taken"] > 10, report  # both sides of the check are reached
    assert report["peak_mb"] - report["start_peak_mb"] < FUZZ_MEMORY_MB, report


@pytest.mark.parametrize("task", ["ner", "ynat"])
def test_mutated_model_files_are_refused_in_one_line_or_load_and_never_crash(model_files, task, tmp_path):
    """150 seeded mutations of a real model file (its arrays' headers, the CRF's bytes, the schema, the archive),
    each with a header whose sha256 matches: every one loads or is a ModelFileError."""
    report = run_fuzz("model-file", task, model_files[task], 0, 150, tmp_path)
    assert report["failed"] == 0, report["first_failure"]
    assert report["refused"] > 50 and report["taken"] > 0, report
    assert report["peak_mb"] - report["start_peak_mb"] < FUZZ_MEMORY_MB, report


def rewritten(path: Path, target: Path, change) -> Path:
    """A copy of model file `path` whose archive entries `change` edits (a dict of name -> bytes), with a header
    that matches, as anyone can write one."""
    metadata, offset = persistence.read_metadata(path)
    with zipfile.ZipFile(io.BytesIO(path.read_bytes()[offset:])) as archive:
        entries = {info.filename: archive.read(info) for info in archive.infolist()}
    change(entries)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    target.write_bytes(with_payload(metadata, buffer.getvalue()))
    return target


def first_array(entries: dict) -> str:
    return next(name for name in entries if name.endswith(".npy"))


def test_an_array_whose_header_claims_more_than_its_bytes_is_refused_before_numpy_allocates_it(model_files, tmp_path):
    def claim_a_terabyte(entries):
        array = np.zeros(3)
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"shape": (1 << 37,), "fortran_order": False,
                                                      "descr": "<f8"})
        entries[first_array(entries)] = header.getvalue() + array.tobytes()

    path = rewritten(model_files["ynat"], tmp_path / "claims.model", claim_a_terabyte)
    with pytest.raises(ModelFileError, match=r"damaged model \(its array .*\.npy is 152 bytes, not the "
                                             r"1,099,511,627,904 of its shape \(137438953472,\)"):
        persistence.load_model(path, "ynat", provenance.versions())


def test_an_entry_named_again_and_again_counts_each_time_it_would_be_read(model_files, tmp_path):
    def name_it_ten_thousand_times(entries):
        schema = json.loads(entries["schema.json"])
        node = next(node for node in persistence._schema_nodes(schema) if node.get("__loader__") == "NdArrayNode")
        entries[node["file"]] = _npy(np.zeros(1 << 17))  # 1 MiB, a few KB compressed
        schema["repeated"] = [node] * 10_000  # wherever a node stands, skops reads its entry
        entries["schema.json"] = json.dumps(schema).encode()

    path = rewritten(model_files["ynat"], tmp_path / "repeated.model", name_it_ten_thousand_times)
    assert path.stat().st_size < 1 << 20  # a small file that would inflate to 10 GB
    with pytest.raises(ModelFileError, match=r"the model would take 10,4\d\d,\d{3},\d{3} bytes inflated, more than "
                                             r"a model file may \(2,147,483,648\)"):
        persistence.load_model(path, "ynat", provenance.versions())


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def test_a_compressed_entry_that_would_inflate_past_the_ceiling_is_refused_before_it_is_read(model_files, tmp_path,
                                                                                           monkeypatch):
    """The 2.2 MB file of the report inflated to 2.3 GiB; here the ceiling is lowered so that a 64 MiB array of
    zeros (64 KB compressed) stands for it."""
    def zeros(entries):
        entries[first_array(entries)] = _npy(np.zeros(1 << 23))

    path = rewritten(model_files["ynat"], tmp_path / "zeros.model", zeros)
    monkeypatch.setattr(persistence, "INFLATED_LIMIT", 1 << 24)
    with pytest.raises(ModelFileError, match="bytes inflated, more than a model file may \\(16,777,216\\)"):
        persistence.load_model(path, "ynat", provenance.versions())


def test_a_model_file_past_the_size_ceiling_is_refused_unread(model_files, tmp_path):
    path = tmp_path / "large.model"
    path.write_bytes(model_files["ynat"].read_bytes())
    with open(path, "r+b") as handle:
        handle.truncate(persistence.MODEL_FILE_LIMIT + 1)  # sparse: no disk is written
    with pytest.raises(ModelFileError, match=f"{persistence.MODEL_FILE_LIMIT + 1:,} bytes, more than a model file "
                                             f"may hold"):
        persistence.load_model(path, "ynat", provenance.versions())


def _labels_cqdb(model: bytearray) -> int:
    return struct.unpack_from("<I", model, 32)[0]  # the header's off_labels


def _first_buckets(model: bytearray) -> int:
    """Where the labels database's first hash table in use gives its number of buckets."""
    cqdb = _labels_cqdb(model)
    return next(cqdb + 24 + 8 * table + 4 for table in range(256)
                if struct.unpack_from("<I", model, cqdb + 24 + 8 * table)[0])


def _unused_buckets(model: bytearray) -> int:
    """Where a table with no offset (not in use, but counted as crfsuite counts strings) gives its buckets."""
    cqdb = _labels_cqdb(model)
    return next(cqdb + 24 + 8 * table + 4 for table in range(256)
                if not struct.unpack_from("<I", model, cqdb + 24 + 8 * table)[0])


def _first_label_string(model: bytearray) -> int:
    """Where the labels database's string of id 0 starts (its id-to-string array leads to its record)."""
    cqdb = _labels_cqdb(model)
    backward = struct.unpack_from("<I", model, cqdb + 20)[0]
    return cqdb + struct.unpack_from("<I", model, cqdb + backward)[0] + 8


def _set(position_of, value: int):
    def change(model: bytearray) -> None:
        struct.pack_into("<I", model, position_of(model), value)
    return change


def _set_byte(position_of, value: int):
    def change(model: bytearray) -> None:
        model[position_of(model)] = value
    return change


# Each refusal of the string databases, with the whole message that says what was expected (a mutant that empties
# a message, or drops its check, fails here).
@pytest.mark.parametrize("change, refusal", [
    (_set(_labels_cqdb, 0x42444351), r"the labels database at offset [\d,]+ does not start with CQDB$"),
    (_set(lambda m: _labels_cqdb(m) + 12, 7), r"the labels database's byte-order mark is 0x7$"),
    (_set(lambda m: _labels_cqdb(m) + 4, 1 << 30),
     r"the labels database \(1,073,741,824 bytes at offset [\d,]+\) runs past the end of the model's [\d,]+ bytes$"),
    (_set(_first_buckets, 1 << 20), r"the labels database's hash tables hold more buckets than its bytes$"),
    (_set(_unused_buckets, 1 << 20), r"the labels database holds 524,\d+ strings, the model \d+$"),
    (_set(lambda m: _labels_cqdb(m) + 16, 99), r"the labels database's id-to-string array holds 99 ids, the model "),
    (_set(lambda m: _labels_cqdb(m) + struct.unpack_from("<I", m, _labels_cqdb(m) + 20)[0], 0),
     r"an id of the labels database has no string$"),
    (_set(lambda m: _first_label_string(m) - 8, 1 << 20),
     r"a string record of the labels database has an id of no label$"),
    (_set_byte(_first_label_string, 0x80),
     r"a string of the labels database (is not UTF-8|starts inside a character)$"),
    (_set_byte(_first_label_string, 0), r"a string of the labels database is empty or holds a line break$"),
    (_set_byte(_first_label_string, ord("\n")), r"a string of the labels database is empty or holds a line break$"),
])
def test_each_refusal_of_a_string_database_says_what_it_expected(small_crf, change, refusal):
    model = bytearray(ner_task.crf_model(small_crf.crf_))
    change(model)
    with pytest.raises(ValueError, match=refusal):
        check_crfsuite_model(bytes(model))


def test_a_string_is_checked_for_its_end_its_encoding_and_where_it_starts():
    from baselines.models.crfsuite_format import _check_strings
    data = np.frombuffer("가나\0다\0".encode("utf-8") + b"\xff\0ab", dtype=np.uint8)
    _check_strings(data, np.array([], dtype=np.int64), len(data), "labels")  # nothing to check
    _check_strings(data, np.array([0, 7]), 11, "labels")
    for starts, end, refusal in [([13], len(data), "a string of the labels has no terminating NUL within the model"),
                                 ([11], len(data), "a string of the labels is not UTF-8"),
                                 ([0, 1], 11, "a string of the labels starts inside a character"),
                                 ([6], 11, "a string of the labels is empty or holds a line break")]:
        with pytest.raises(ValueError, match=f"^{refusal}$"):
            _check_strings(data, np.array(starts), end, "labels")


def _npy_version(version: tuple[int, int]):
    """A change that writes the first array again in .npy format `version`, its values unchanged."""
    def change(entries):
        name = first_array(entries)
        array = np.load(io.BytesIO(entries[name]))
        buffer = io.BytesIO()
        np.lib.format.write_array(buffer, array, version=version)
        entries[name] = buffer.getvalue()
    return change


def test_arrays_in_npy_formats_1_and_2_load_and_any_other_is_refused_naming_it(model_files, tmp_path):
    expected, _ = persistence.load_model(model_files["ynat"], "ynat", provenance.versions())
    texts = ["손흥민 시즌 10호 골", "코스피 3000 돌파"]
    for version in ((1, 0), (2, 0)):
        path = rewritten(model_files["ynat"], tmp_path / f"npy-{version[0]}.model", _npy_version(version))
        loaded, _ = persistence.load_model(path, "ynat", provenance.versions())
        np.testing.assert_array_equal(loaded.predict(texts), expected.predict(texts))
    path = rewritten(model_files["ynat"], tmp_path / "npy-3.model", _npy_version((3, 0)))
    with pytest.raises(ModelFileError, match=r"array .*\.npy in \.npy format 3\.0"):
        persistence.load_model(path, "ynat", provenance.versions())


def test_an_array_of_python_objects_is_refused_before_it_is_unpickled(model_files, tmp_path):
    def objects(entries):
        buffer = io.BytesIO()
        np.save(buffer, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
        entries[first_array(entries)] = buffer.getvalue()

    path = rewritten(model_files["ynat"], tmp_path / "objects.model", objects)
    with pytest.raises(ModelFileError, match=r": its array .*\.npy holds Python objects, which no model of this "
                                             r"toolkit stores$"):
        persistence.load_model(path, "ynat", provenance.versions())


def _label_list(model: bytearray, label: int) -> int:
    """Where label `label`'s list of transition features starts (its count, then the feature ids)."""
    references = struct.unpack_from("<I", model, 40)[0]  # the header's off_label_refs
    return struct.unpack_from("<I", model, references + 12 + 4 * label)[0]


def _feature(model: bytearray, index: int) -> tuple[int, int]:
    """(type, source) of feature `index`."""
    return struct.unpack_from("<II", model, struct.unpack_from("<I", model, 28)[0] + 12 + 20 * index)


def _first_feature(model: bytearray, wanted) -> int:
    count = struct.unpack_from("<I", model, struct.unpack_from("<I", model, 28)[0] + 8)[0]
    return next(index for index in range(count) if wanted(*_feature(model, index)))


def _state_of_attribute_0(kind: int, source: int) -> bool:
    return kind == 0 and source == 0


def _transition_of_another_label(kind: int, source: int) -> bool:
    return kind == 1 and source != 0


@pytest.mark.parametrize("change, refusal", [
    # label 0 lists a state feature (attribute 0 -> a label): the right owner number, the wrong kind
    (lambda m: struct.pack_into("<I", m, _label_list(m, 0) + 4, _first_feature(m, _state_of_attribute_0)),
     "the label references chunk names a feature that is not its label's"),
    # label 0 lists another label's transition feature
    (lambda m: struct.pack_into("<I", m, _label_list(m, 0) + 4, _first_feature(m, _transition_of_another_label)),
     "the label references chunk names a feature that is not its label's"),
    (lambda m: struct.pack_into("<I", m, _label_list(m, 0) + 4, 1 << 30),
     "the label references chunk names a feature that the model does not have"),
    (lambda m: struct.pack_into("<I", m, _label_list(m, 0), 1 << 28),
     "a list of the label references chunk runs past the end of the model"),
    (lambda m: struct.pack_into("<I", m, struct.unpack_from("<I", m, 40)[0] + 12, len(m)),
     "an entry of the label references chunk points past the end of the model"),
    (lambda m: struct.pack_into("<I", m, struct.unpack_from("<I", m, 40)[0] + 8, 1),
     "the label references chunk does not hold an entry for every label"),
])
def test_each_refusal_of_the_feature_references_says_what_it_expected(small_crf, change, refusal):
    """crfsuite's tagger follows each label's and attribute's list of feature ids into the features chunk."""
    model = bytearray(ner_task.crf_model(small_crf.crf_))
    assert struct.unpack_from("<I", model, _label_list(model, 0))[0] > 0  # label 0 has transition features
    change(model)
    with pytest.raises(ValueError, match=f"^{refusal}$"):
        check_crfsuite_model(bytes(model))
