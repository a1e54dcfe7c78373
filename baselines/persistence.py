"""Saving and loading fitted models with joblib, with a metadata record that is checked on load."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Sequence

import joblib

from baselines.dataio import atomic_output, file_sha256

FORMAT = "klue-baselines-model/1"


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
    metadata = {"format": FORMAT, "task": task, "model": model_name, "versions": versions,
                "training_data_sha256": training_digest(train_files),
                "training_files": [str(p) for p in train_files]}
    with atomic_output(Path(path), "wb") as handle:
        joblib.dump({"metadata": metadata, "model": model}, handle, compress=3)
    return metadata


def load_model(path: Path, task: str, versions: dict[str, str]) -> tuple[Any, dict]:
    """The model and its metadata; ModelFileError when the file is for another task or was written with
    other versions of the toolkit, kiwipiepy or scikit-learn (their models may not load or behave alike)."""
    try:
        payload = joblib.load(path)
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such model file") from None
    except Exception as error:  # joblib raises many kinds for a damaged or foreign file
        raise ModelFileError(f"{path}: not a readable model file ({type(error).__name__}: {error})") from None
    if not isinstance(payload, dict) or payload.get("metadata", {}).get("format") != FORMAT:
        raise ModelFileError(f"{path}: not a klue-baselines model file")
    metadata = payload["metadata"]
    if metadata["task"] != task:
        raise ModelFileError(f"{path}: this model was trained for {metadata['task']}, not {task}")
    for library in ("klue_baselines", "kiwipiepy", "scikit_learn"):
        saved, current = metadata["versions"].get(library), versions.get(library)
        if saved != current:
            raise ModelFileError(f"{path}: saved with {library} {saved}, but this is {current}; "
                                 f"train the model again with this version")
    return payload["model"], metadata
