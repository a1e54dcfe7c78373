"""Saving and loading fitted models: a metadata header checked before anything in the file is unpickled.

A model file is a magic line, one line of JSON metadata, then the model as a joblib pickle. The header is
read and checked as plain text first (format, task, versions, and the sha256 of the pickle that follows),
so a file that is not a klue-baselines model, or was saved for another task or library version, or was
damaged, is refused without unpickling a byte of it. Unpickling can run code: a model file that passes
these checks still deserves the trust one gives a program, so load only model files from a trusted source.
"""
from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any, Sequence

import joblib

from baselines.dataio import atomic_output, file_sha256

FORMAT = "klue-baselines-model/2"
MAGIC = b"KLUE-BASELINES-MODEL\n"
_HEADER_LIMIT = 1 << 20  # a header is a few hundred bytes; a longer first line is not one
_CHECKED_VERSIONS = ("klue_baselines", "kiwipiepy", "scikit_learn")
TRUST_NOTE = ("Model files are pickles: load only files from a trusted source (the header is checked before "
              "unpickling, but a crafted file that passes it can still run code).")


class ModelFileError(Exception):
    """A model file that is not ours, is damaged, or belongs to another task or library version."""


def training_digest(paths: Sequence[Path]) -> str:
    """One sha256 over the training files' own sha256s, in order."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(file_sha256(path).encode())
    return digest.hexdigest()


def save_model(path: Path, model: Any, task: str, model_name: str, train_files: Sequence[Path],
               versions: dict[str, str]) -> dict:
    buffer = io.BytesIO()
    joblib.dump(model, buffer, compress=3)
    payload = buffer.getvalue()
    metadata = {"format": FORMAT, "task": task, "model": model_name, "versions": versions,
                "training_data_sha256": training_digest(train_files),
                "training_files": [str(p) for p in train_files],
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
    expected = {"format": str, "task": str, "model": str, "versions": dict, "payload_sha256": str,
                "payload_bytes": int}
    if not isinstance(metadata, dict):
        raise ModelFileError(f"{path}: damaged model header (expected a JSON object)")
    for key, kind in expected.items():
        if not isinstance(metadata.get(key), kind) or isinstance(metadata.get(key), bool):
            raise ModelFileError(f"{path}: damaged model header ('{key}' should be {kind.__name__}, "
                                 f"found {type(metadata.get(key)).__name__})")
    if metadata["format"] != FORMAT:
        raise ModelFileError(f"{path}: model file format {metadata['format']!r}, this version reads {FORMAT!r}")
    return metadata, offset


def load_model(path: Path, task: str, versions: dict[str, str]) -> tuple[Any, dict]:
    """The model and its metadata; ModelFileError, before anything is unpickled, when the file is not a
    model file, is damaged, is for another task or was written with other versions of the toolkit,
    kiwipiepy or scikit-learn (their models may not load or behave alike)."""
    metadata, offset = read_metadata(path)
    if metadata["task"] != task:
        raise ModelFileError(f"{path}: this model was trained for {metadata['task']}, not {task}")
    for library in _CHECKED_VERSIONS:
        saved, current = metadata["versions"].get(library), versions.get(library)
        if saved != current:
            raise ModelFileError(f"{path}: saved with {library} {saved}, but this is {current}; "
                                 f"train the model again with this version")
    with open(path, "rb") as handle:
        handle.seek(offset)
        payload = handle.read()
    if len(payload) != metadata["payload_bytes"] or hashlib.sha256(payload).hexdigest() != metadata["payload_sha256"]:
        raise ModelFileError(f"{path}: damaged model file (the model's bytes do not match the sha256 in its "
                             f"header)")
    try:
        model = joblib.load(io.BytesIO(payload))
    except Exception as error:  # joblib raises many kinds for a damaged payload
        raise ModelFileError(f"{path}: not a readable model ({type(error).__name__}: {error})") from None
    return model, metadata
