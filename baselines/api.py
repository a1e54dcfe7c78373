"""The Python API: the steps the command line takes, as plain calls for notebooks and scripts.

    from baselines import api
    X, y = api.load_xy("ynat", "ynat-v1.1_train.json", plain=True)   # titles and topics
    model = api.fit("ynat", "ynat-v1.1_train.json")                  # or api.make_model("ynat").fit(X, y)
    api.predict("ynat", model, ["손흥민 시즌 10호 골"])                # prediction rows, as `predict` writes
    api.score("ynat", "ynat-v1.1_dev.json", "predictions.jsonl")     # the official metrics

Every function takes a task code ('ynat', 'sts', 'nli', 'ner', 're', 'dp', 'mrc', 'wos'). Files may be
official files or the raw JSONL that `predict` reads; errors are DataError, PredictionError or UsageError
with a one-line message that names the file and the record.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Sequence

from baselines import driver
from baselines.dataio import DataError, looks_like_jsonl, read_jsonl, read_text
from baselines.registry import get_task
from baselines.taskspec import PredictionError, TaskSpec

PathLike = str | os.PathLike


def _is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


def data_file(task: str, split: str = "train", data_dir: PathLike | None = None) -> Path:
    """The path of a task's official 'train' or 'dev' file under data_dir (else $KLUE_DATA_DIR, the download
    cache, or the shipped sample, as `run` looks them up)."""
    spec = get_task(task)
    if split not in ("train", "dev"):
        raise driver.UsageError(f"split must be 'train' or 'dev', not {split!r}")
    data = driver.resolve_data(spec, Path(data_dir).expanduser() if data_dir else None)
    path = data.train if split == "train" else data.dev
    if path is None:
        raise driver.UsageError(f"no {split} file for {task} in {data.source}")
    return path


def load(task: str, path: PathLike) -> list:
    """The records of an official file, or of the raw JSONL that `predict` reads (labels where given)."""
    spec = get_task(task)
    return (spec.load_input or spec.load)(Path(path))


def load_xy(task: str, path: PathLike, plain: bool = False) -> tuple[list, list]:
    """(X, y) of a labelled official file, ready for `fit`: X as the task's records, or with plain=True as
    plain inputs (titles, sentence pairs, sentences, raw-row dicts), which every model also takes."""
    spec = get_task(task)
    records = spec.load(Path(path))
    driver.check_labelled(spec, records, Path(path))
    return (spec.plain_inputs(records) if plain else records), spec.targets(records)


def resources(task: str, data_dir: PathLike | None = None) -> dict:
    """What a task's models and scorer need besides the data (RE's relation list, WoS's ontology), from
    the data directory, else the download cache, else the shipped sample."""
    spec = get_task(task)
    return spec.load_resources(driver.resolve_data(spec, data_dir).extras)


def make_model(task: str, model: str | None = None, *, seed: int = 0, data_dir: PathLike | None = None,
               **params: Any):
    """An unfitted estimator: the task's default model, or `model` ('trivial' for the floor), with `params`
    set over its defaults and checked against the model's constraints."""
    spec = get_task(task)
    _name, estimator = driver.build_model(spec, model, seed, resources(task, data_dir), params)
    return estimator


def fit(task: str, train: PathLike | Sequence, model: str | None = None, *, seed: int = 0,
        data_dir: PathLike | None = None, **params: Any):
    """A model fitted on a labelled file (path) or on labelled records."""
    spec = get_task(task)
    if _is_path(train):
        X, y = load_xy(task, train)
    else:
        X = list(train)
        driver.check_labelled(spec, X, Path("<records>"))
        y = spec.targets(X)
    return make_model(task, model, seed=seed, data_dir=data_dir, **params).fit(X, y)


def predict(task: str, model: Any, inputs: PathLike | Sequence) -> list[dict]:
    """Prediction rows as `predict` writes them (one dict per input, keyed by guid; plain inputs are named
    'input-N'). `inputs` is a file, records, or plain inputs."""
    spec = get_task(task)
    records = load(task, inputs) if _is_path(inputs) else spec.as_records(list(inputs))
    return spec.predict(model, records)


def evaluate(task: str, model: str | None = None, *, data_dir: PathLike | None = None,
             train: PathLike | None = None, dev: PathLike | None = None, cv: int = 0, seed: int = 0,
             log: Callable[[str], None] = lambda message: None, **params: Any) -> dict:
    """Train and score as `run` does, and return the record that `run` writes to results/<task>.json."""
    spec = get_task(task)
    data = driver.resolve_data(spec, data_dir, train, dev)
    record, _predictions = driver.evaluate_task(spec, data, model_name=model, seed=seed, cv=cv, log=log,
                                                params=params or None)
    return record


def read_predictions(task: str, path: PathLike) -> list[dict]:
    """A prediction file in any format `score` reads: JSONL keyed by guid, or the task's whole-file
    alternative (MRC's {question_id: answer} object, DP's official TSV)."""
    spec, path = get_task(task), Path(path)
    try:
        whole = json.loads(read_text(path))
    except json.JSONDecodeError:
        whole = None  # not one JSON document: JSON Lines, or a task's own format
    except RecursionError:
        raise DataError(path, None, "JSON nested too deeply to read") from None
    if isinstance(whole, dict) and "guid" not in whole:
        converted = spec.predictions_from_json(whole)
        if converted is not None:
            return converted
    if not looks_like_jsonl(path):
        if spec.predictions_from_path is not None:
            return spec.predictions_from_path(path)
        raise DataError(path, None, f"expected {spec.prediction_formats}")
    return [row for _number, row in read_jsonl(path)]


def score(task: str, gold: PathLike | Sequence, predictions: PathLike | Sequence[dict] | dict, *,
          data_dir: PathLike | None = None) -> dict[str, float]:
    """The official metrics (x100) and their breakdowns. `gold` is a labelled file or labelled records;
    `predictions` a file in any format `score` reads, a list of prediction dicts, or MRC's {id: answer}."""
    spec = get_task(task)
    gold_path = Path(gold) if _is_path(gold) else None
    records = spec.load(gold_path) if gold_path else list(gold)
    driver.check_gold(spec, records, gold_path or Path("<records>"))
    extras = driver.resolve_data(spec, data_dir, dev=gold_path).extras
    if _is_path(predictions):
        rows = read_predictions(task, predictions)
    elif isinstance(predictions, dict):
        rows = spec.predictions_from_json(predictions)
        if rows is None:
            raise PredictionError(f"expected {spec.prediction_formats}, not one object")
    else:
        rows = list(predictions)
    try:
        return spec.score(records, rows, spec.load_resources(extras))
    except PredictionError as error:
        if _is_path(predictions):
            raise PredictionError(f"{predictions}: {error}") from None
        raise


def task_spec(task: str) -> TaskSpec:
    """The task's declaration: files, models, metrics, formats (see baselines.taskspec)."""
    return get_task(task)
