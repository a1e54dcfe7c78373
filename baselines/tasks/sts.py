"""STS: semantic similarity of a sentence pair on a 0-5 scale (binary 'similar' at >= 3)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from sklearn.dummy import DummyRegressor

from baselines import scoring
from baselines.dataio import DataError, guid_of, looks_like_jsonl, read_json, require, require_list
from baselines.taskspec import PredictionError, TaskSpec, align_predictions, jsonl_records


@dataclass
class StsExample:
    guid: str
    sentence1: str
    sentence2: str
    score: float | None = None  # the unrounded 'real-label' that the official Pearson r uses
    source: str | None = None


def load(path: Path) -> list[StsExample]:
    """An official STS JSON file; the gold score is labels['real-label'] (optional for unlabelled input)."""
    records = []
    for index, row in enumerate(require_list(read_json(path), path)):
        where = guid_of(row, index)
        gold = None
        if "labels" in row:
            labels = require(row, "labels", dict, path, where)
            gold = require(labels, "real-label", (int, float), path, where)
            if not 0 <= gold <= 5:
                raise DataError(path, where, f"real-label {gold} is outside 0-5")
        records.append(StsExample(
            guid=require(row, "guid", str, path, where),
            sentence1=require(row, "sentence1", str, path, where),
            sentence2=require(row, "sentence2", str, path, where),
            score=None if gold is None else float(gold), source=row.get("source"),
        ))
    return records


def load_input(path: Path) -> list[StsExample]:
    """Official JSON, or JSONL with 'sentence1' and 'sentence2' per line."""
    if not looks_like_jsonl(path):
        return load(path)
    return jsonl_records(path, lambda row, guid, where: StsExample(
        guid, require(row, "sentence1", str, path, where), require(row, "sentence2", str, path, where),
        source=row.get("source")))


def targets(records: Sequence[StsExample]) -> list[float]:
    return [record.score for record in records]


def predict(model, records: Sequence[StsExample]) -> list[dict]:
    values = model.predict(records)
    return [{"guid": r.guid, "score": round(float(min(5.0, max(0.0, v))), 6)} for r, v in zip(records, values)]


def score(records: Sequence[StsExample], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    aligned = align_predictions(records, predictions, lambda r: r.guid)
    bad = [p for p in aligned if isinstance(p.get("score"), bool) or not isinstance(p.get("score"), (int, float))]
    if bad:
        raise PredictionError(f"{len(bad)} predictions lack a numeric 'score' (first: {bad[0].get('guid')})")
    return scoring.score_sts(targets(records), [float(p["score"]) for p in aligned])


def training_mean(random_state: int = 0, resources: dict | None = None) -> DummyRegressor:
    return DummyRegressor(strategy="mean")


TASK = TaskSpec(
    code="sts", title="STS semantic textual similarity", folder="klue-sts-v1.1",
    train_file="klue-sts-v1.1_train.json", dev_file="klue-sts-v1.1_dev.json",
    load=load, load_input=load_input, targets=targets,
    models={"trivial": training_mean}, default_model="trivial",
    predict=predict, score=score, headline=("pearsonr", "f1"),
    prediction_example='{"guid": "klue-sts-v1_dev_00000", "score": 4.2}',
)
