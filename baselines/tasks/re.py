"""RE: the relation between a subject and an object entity of a sentence (30 labels, no_relation included)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from sklearn.dummy import DummyClassifier

from baselines import scoring
from baselines.dataio import DataError, guid_of, looks_like_jsonl, read_json, require, require_list
from baselines.taskspec import PredictionError, TaskSpec, align_predictions, check_labels, jsonl_records, \
    label_predictions

RELATION_LIST = "relation_list.json"


@dataclass
class Entity:
    word: str
    start: int  # character offsets into the sentence, end inclusive as in the official files
    end: int
    type: str


@dataclass
class ReExample:
    guid: str
    sentence: str
    subject: Entity
    object: Entity
    label: str | None = None
    source: str | None = None


def _entity(row: dict, key: str, sentence: str, path: Path, where: str) -> Entity:
    value = require(row, key, dict, path, where)
    entity = Entity(
        word=require(value, "word", str, path, f"{where}, {key}"),
        start=require(value, "start_idx", int, path, f"{where}, {key}"),
        end=require(value, "end_idx", int, path, f"{where}, {key}"),
        type=require(value, "type", str, path, f"{where}, {key}"),
    )
    if not 0 <= entity.start <= entity.end < len(sentence) or sentence[entity.start:entity.end + 1] != entity.word:
        raise DataError(path, where, f"{key} offsets {entity.start}-{entity.end} do not hold its word "
                        f"{entity.word!r} (the sentence has {sentence[entity.start:entity.end + 1]!r} there)")
    return entity


def _example(row: dict, guid: str, path: Path, where: str) -> ReExample:
    sentence = require(row, "sentence", str, path, where)
    return ReExample(guid, sentence, _entity(row, "subject_entity", sentence, path, where),
                     _entity(row, "object_entity", sentence, path, where),
                     label=row.get("label"), source=row.get("source"))


def load(path: Path) -> list[ReExample]:
    """An official RE JSON file (label optional for unlabelled input)."""
    rows = require_list(read_json(path), path)
    return [_example(row, require(row, "guid", str, path, guid_of(row, index)), path, guid_of(row, index))
            for index, row in enumerate(rows)]


def load_input(path: Path) -> list[ReExample]:
    """Official JSON, or JSONL with 'sentence', 'subject_entity' and 'object_entity' as in the official file."""
    if not looks_like_jsonl(path):
        return load(path)
    return jsonl_records(path, lambda row, guid, where: _example(row, guid, path, where))


def load_resources(files: dict[str, Path]) -> dict:
    path = files[RELATION_LIST]
    data = read_json(path)
    relations = data.get("relations") if isinstance(data, dict) else None
    if not isinstance(relations, list) or scoring.RE_NO_RELATION not in relations:
        raise DataError(path, None, "expected {\"relations\": [...]} including 'no_relation'")
    return {"relations": [str(label) for label in relations]}


def targets(records: Sequence[ReExample]) -> list[str]:
    return [record.label for record in records]


def score(records: Sequence[ReExample], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    relations = resources["relations"]
    aligned = align_predictions(records, predictions, lambda r: r.guid)
    predicted = check_labels(aligned, "label", relations)
    gold = targets(records)
    unknown_gold = [r.guid for r in records if r.label not in relations]
    if unknown_gold:
        raise PredictionError(f"{len(unknown_gold)} gold records have labels outside {RELATION_LIST} "
                              f"(first: {', '.join(unknown_gold[:3])})")
    probs = None
    if all(isinstance(p.get("probs"), dict) for p in aligned):
        probs = np.array([[float(p["probs"].get(label, 0.0)) for label in relations] for p in aligned])
    return scoring.score_re(gold, predicted, probs, relations)


def prior_distribution(random_state: int = 0, resources: dict | None = None) -> DummyClassifier:
    """The trivial floor: the most frequent relation, with the training label distribution as probs."""
    return DummyClassifier(strategy="prior", random_state=random_state)


TASK = TaskSpec(
    code="re", title="RE relation extraction", folder="klue-re-v1.1",
    train_file="klue-re-v1.1_train.json", dev_file="klue-re-v1.1_dev.json", extra_files=(RELATION_LIST,),
    texts=lambda records: [r.sentence for r in records],
    load=load, load_input=load_input, load_resources=load_resources, targets=targets,
    models={"trivial": prior_distribution}, default_model="trivial",
    predict=label_predictions, score=score, headline=("micro_f1", "auprc"),
    prediction_example='{"guid": "klue-re-v1_dev_00000", "label": "no_relation", '
                       '"probs": {"no_relation": 0.91, "per:title": 0.02, ...}}',
)
