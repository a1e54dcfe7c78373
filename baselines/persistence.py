"""Saving and loading fitted models: a metadata header checked before anything in the file is read as a model.

A model file is a magic line, one line of JSON metadata, then the model. With the `secure` extra installed
(skops), the model is stored with skops.io, which rebuilds objects from data without running code from the
file, and loads only types from this toolkit and the libraries its models are made of. Without it, the
model is a joblib pickle. Either way the header is read and checked as plain text first (format, task,
versions, and the sha256 of the model bytes that follow), so a file that is not a klue-baselines model, or
was saved for another task or library version, or was damaged, is refused without reading a byte of it
as a model. A pickle can run code when it is loaded, and anyone can write a valid header for one: like
numpy.load(allow_pickle=False), a pickled payload is loaded only with explicit consent (trust_pickle).
"""
from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any, Sequence

import joblib
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from baselines.dataio import atomic_output, file_sha256
from baselines.registry import get_task
from baselines.errors import ModelFileError

FORMAT = "klue-baselines-model/2"
MAGIC = b"KLUE-BASELINES-MODEL\n"
_HEADER_LIMIT = 1 << 20  # a header is a few hundred bytes; a longer first line is not one
_CHECKED_VERSIONS = ("klue_baselines", "kiwipiepy", "scikit_learn")
# The packages whose types a skops model file may hold: this toolkit's estimators and feature makers, and
# the libraries they are built from. A type from anywhere else is refused, not loaded.
TRUSTED_PACKAGES = ("baselines", "features", "sklearn", "sklearn_crfsuite", "pycrfsuite")


def skops_io():
    """skops.io when the `secure` extra is installed, else None."""
    try:
        import skops.io
    except ImportError:
        return None
    return skops.io


def training_digest(paths: Sequence[Path]) -> str:
    """One sha256 over the training files' own sha256s, in order."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(file_sha256(path).encode())
    return digest.hexdigest()


def save_model(path: Path, model: Any, task: str, model_name: str, train_files: Sequence[Path],
               versions: dict[str, str]) -> dict:
    """Write `model` with its metadata header: through skops where the `secure` extra is installed, else as
    a joblib pickle. Returns the metadata."""
    secure = skops_io()
    if secure is not None:
        payload, payload_format = secure.dumps(model, compression=zipfile.ZIP_DEFLATED), "skops"
    else:
        buffer = io.BytesIO()
        joblib.dump(model, buffer, compress=3)
        payload, payload_format = buffer.getvalue(), "joblib"
    metadata = {"format": FORMAT, "task": task, "model": model_name, "versions": versions,
                "training_data_sha256": training_digest(train_files),
                "training_files": [str(p) for p in train_files], "payload_format": payload_format,
                "payload_sha256": hashlib.sha256(payload).hexdigest(), "payload_bytes": len(payload)}
    with atomic_output(Path(path), "wb") as handle:
        handle.write(MAGIC)
        handle.write(json.dumps(metadata, ensure_ascii=False).encode("utf-8") + b"\n")
        handle.write(payload)
    return metadata


def read_metadata(path: Path) -> tuple[dict, int]:
    """The checked header of a model file and the offset where its pickle starts; nothing is unpickled."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(len(MAGIC))
            line = handle.readline(_HEADER_LIMIT)
            offset = handle.tell()
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such model file") from None
    except OSError as error:
        raise ModelFileError(f"{path}: cannot read ({error.strerror})") from None
    if magic != MAGIC:
        raise ModelFileError(f"{path}: not a klue-baselines model file (it does not start with the model "
                             f"header; files saved before version 2 of the format must be trained again)")
    try:
        metadata = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ModelFileError(f"{path}: damaged model header (not one line of JSON)") from None
    expected = {"format": str, "task": str, "model": str, "versions": dict, "payload_format": str,
                "payload_sha256": str, "payload_bytes": int}
    if not isinstance(metadata, dict):
        raise ModelFileError(f"{path}: damaged model header (expected a JSON object)")
    for key, kind in expected.items():
        if not isinstance(metadata.get(key), kind) or isinstance(metadata.get(key), bool):
            raise ModelFileError(f"{path}: damaged model header ('{key}' should be {kind.__name__}, "
                                 f"found {type(metadata.get(key)).__name__})")
    if metadata["format"] != FORMAT:
        raise ModelFileError(f"{path}: model file format {metadata['format']!r}, this version reads {FORMAT!r}")
    if metadata["payload_format"] not in ("skops", "joblib"):
        raise ModelFileError(f"{path}: damaged model header (unknown payload_format "
                             f"{metadata['payload_format']!r})")
    return metadata, offset


PICKLE_CONSENT = "--trust-pickle (CLI) or trust_pickle=True (API)"


def model_types(task: str) -> dict[str, type]:
    """The estimator class of each of `task`'s models, by model name."""
    return {name: entry.estimator for name, entry in get_task(task).models.items()}


def load_model(path: Path, task: str, versions: dict[str, str], trust_pickle: bool = False) -> tuple[Any, dict]:
    """The model and its metadata; ModelFileError, before anything is unpickled, when the file is not a
    model file, is damaged, is for another task, names a model that the task does not have or was written
    with other versions of the toolkit, kiwipiepy or scikit-learn (their models may not load or behave
    alike), and when its model is a pickle and trust_pickle is not given; after loading, when the object is
    not a fitted estimator of the class that its header's model name makes."""
    metadata, offset = read_metadata(path)
    if metadata["task"] != task:
        raise ModelFileError(f"{path}: this model was trained for {metadata['task']}, not {task}")
    known = model_types(task)
    expected = known.get(metadata["model"])
    if expected is None:
        raise ModelFileError(f"{path}: its header names model {metadata['model']!r}, which {task} does not have "
                             f"({', '.join(sorted(known))})")
    for library in _CHECKED_VERSIONS:
        saved, current = metadata["versions"].get(library), versions.get(library)
        if saved != current:
            raise ModelFileError(f"{path}: saved with {library} {saved}, but this is {current}; "
                                 f"train the model again with this version")
    if metadata["payload_format"] == "joblib" and not trust_pickle:
        raise ModelFileError(f"{path}: the model is a pickle, which can run any code when loaded; if you trust "
                             f"the file's source, load it with {PICKLE_CONSENT}")
    with open(path, "rb") as handle:
        handle.seek(offset)
        payload = handle.read()
    if len(payload) != metadata["payload_bytes"] or hashlib.sha256(payload).hexdigest() != metadata["payload_sha256"]:
        raise ModelFileError(f"{path}: damaged model file (the model's bytes do not match the sha256 in its "
                             f"header)")
    if metadata["payload_format"] == "skops":
        model = _load_skops(path, payload)
    else:
        try:
            model = joblib.load(io.BytesIO(payload))
        except Exception as error:  # joblib raises many kinds for a damaged payload
            raise ModelFileError(f"{path}: not a readable model ({type(error).__name__}: {error})") from None
    if not isinstance(model, expected):
        raise ModelFileError(f"{path}: holds a {type(model).__name__}, not the {expected.__name__} that a {task} "
                             f"{metadata['model']} model is")
    try:
        check_is_fitted(model)
    except NotFittedError:
        raise ModelFileError(f"{path}: holds a {expected.__name__} that was never fitted") from None
    # The package version stays while a model's features change between commits: a model that can tell
    # what it was fitted on says so here, not with a shape error at predict time.
    mismatch = getattr(model, "layout_mismatch", None)
    problem = mismatch() if callable(mismatch) else None
    if problem:
        raise ModelFileError(f"{path}: {problem}; train the model again with this version")
    # Any model saved before a hyper-parameter was added lacks it, and would fail when it is read (NER's
    # gazetteer): refused here, for every model, whatever its own layout_mismatch knows.
    missing = [name for name in expected().get_params(deep=False) if not hasattr(model, name)]
    if missing:
        raise ModelFileError(f"{path}: this {task} {metadata['model']} model was saved by a version without the "
                             f"hyper-parameters {', '.join(missing)}; train the model again with this version")
    return model, metadata


def _load_skops(path: Path, payload: bytes) -> Any:
    """A skops payload, loaded only when every type it names comes from TRUSTED_PACKAGES."""
    secure = skops_io()
    if secure is None:
        raise ModelFileError(f"{path}: this model was saved with skops; install the secure extra to load it "
                             f"(pip install 'klue-baselines[secure]')")
    try:
        untrusted = secure.get_untrusted_types(data=payload)
        foreign = [name for name in untrusted if name.split(".", 1)[0] not in TRUSTED_PACKAGES]
        if foreign:
            raise ModelFileError(f"{path}: the model names types from outside this toolkit and its libraries, "
                                 f"which are not loaded: {', '.join(sorted(foreign)[:5])}")
        return secure.loads(payload, trusted=untrusted)
    except ModelFileError:
        raise
    except Exception as error:  # skops raises many kinds for a damaged payload
        raise ModelFileError(f"{path}: not a readable model ({type(error).__name__}: {error})") from None
