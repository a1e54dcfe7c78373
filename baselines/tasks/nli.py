"""NLI: does the premise entail, contradict or say nothing about the hypothesis."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from sklearn.dummy import DummyClassifier

from baselines import scoring
from baselines.dataio import guid_of, looks_like_jsonl, read_json, require, require_list
from baselines.taskspec import (TaskSpec, align_predictions, check_labels, jsonl_records,
                                label_predictions, labels_from)

LABELS = ("entailment", "neutral", "contradiction")


@dataclass
class NliExample:
    guid: str
    premise: str
    hypothesis: str
    label: str | None = None
    source: str | None = None


def load(path: Path) -> list[NliExample]:
    """An official NLI JSON file ('gold_label' optional for unlabelled input)."""
    records = []
    for index, row in enumerate(require_list(read_json(path), path)):
        where = guid_of(row, index)
        records.append(NliExample(
            guid=require(row, "guid", str, path, where),
            premise=require(row, "premise", str, path, where),
            hypothesis=require(row, "hypothesis", str, path, where),
            label=row.get("gold_label"), source=row.get("source"),
        ))
    labels_from(path, records, LABELS)
    return records


def load_input(path: Path) -> list[NliExample]:
    """Official JSON, or JSONL with 'premise' and 'hypothesis' per line."""
    if not looks_like_jsonl(path):
        return load(path)
    return jsonl_records(path, lambda row, guid, where: NliExample(
        guid, require(row, "premise", str, path, where), require(row, "hypothesis", str, path, where)))


def targets(records: Sequence[NliExample]) -> list[str]:
    return [record.label for record in records]


def score(records: Sequence[NliExample], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    predicted = check_labels(align_predictions(records, predictions, lambda r: r.guid), "label", LABELS)
    return scoring.score_nli(targets(records), predicted)


def most_frequent_label(random_state: int = 0, resources: dict | None = None) -> DummyClassifier:
    return DummyClassifier(strategy="prior", random_state=random_state)


TASK = TaskSpec(
    code="nli", title="NLI natural language inference", folder="klue-nli-v1.1",
    train_file="klue-nli-v1.1_train.json", dev_file="klue-nli-v1.1_dev.json",
    load=load, load_input=load_input, targets=targets,
    models={"trivial": most_frequent_label}, default_model="trivial",
    predict=label_predictions, score=score, headline=("accuracy",),
    prediction_example='{"guid": "klue-nli-v1_dev_00000", "label": "contradiction"}',
)
