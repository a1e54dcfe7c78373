"""YNAT: topic classification of Yonhap news headlines (title only, as in the official setup)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from sklearn.dummy import DummyClassifier

from baselines import scoring
from baselines.dataio import guid_of, looks_like_jsonl, read_json, require, require_list
from baselines.taskspec import (TaskSpec, align_predictions, check_labels, jsonl_records,
                                label_predictions, labels_from)

LABELS = ("IT과학", "경제", "사회", "생활문화", "세계", "스포츠", "정치")


@dataclass
class YnatExample:
    guid: str
    title: str
    label: str | None = None
    url: str | None = None
    date: str | None = None


def load(path: Path) -> list[YnatExample]:
    """An official YNAT JSON file (url and date optional; label optional for unlabelled input)."""
    records = []
    for index, row in enumerate(require_list(read_json(path), path)):
        where = guid_of(row, index)
        records.append(YnatExample(
            guid=require(row, "guid", str, path, where),
            title=require(row, "title", str, path, where),
            label=row.get("label"), url=row.get("url"), date=row.get("date"),
        ))
    labels_from(path, records, LABELS)
    return records


def load_input(path: Path) -> list[YnatExample]:
    """Official JSON, or JSONL with a 'title' per line (and optionally 'guid')."""
    if not looks_like_jsonl(path):
        return load(path)
    return jsonl_records(path, lambda row, guid, where: YnatExample(guid, require(row, "title", str, path, where)))


def targets(records: Sequence[YnatExample]) -> list[str]:
    return [record.label for record in records]


def score(records: Sequence[YnatExample], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    predicted = check_labels(align_predictions(records, predictions, lambda r: r.guid), "label", LABELS)
    return scoring.score_ynat(targets(records), predicted)


def most_frequent_label(random_state: int = 0, resources: dict | None = None) -> DummyClassifier:
    return DummyClassifier(strategy="prior", random_state=random_state)


TASK = TaskSpec(
    code="ynat", title="YNAT topic classification", folder="ynat-v1.1",
    train_file="ynat-v1.1_train.json", dev_file="ynat-v1.1_dev.json",
    load=load, load_input=load_input, targets=targets,
    models={"trivial": most_frequent_label}, default_model="trivial",
    predict=label_predictions, score=score, headline=("macro_f1",),
    prediction_example='{"guid": "ynat-v1_dev_00000", "label": "사회"}',
)
