"""WoS: dialogue state tracking; after each user turn, every domain-slot-value mentioned so far."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from sklearn.base import BaseEstimator

from baselines import scoring
from baselines.dataio import DataError, guid_of, read_json, require, require_list
from baselines.taskspec import PredictionError, TaskSpec, align_predictions

ONTOLOGY = "ontology.json"
ROLES = ("user", "sys")


@dataclass
class WosTurn:
    role: str
    text: str
    state: list[str] | None = None  # user turns only: the cumulative 'domain-slot-value' strings


@dataclass
class WosDialogue:
    guid: str
    turns: list[WosTurn]
    domains: list[str] = field(default_factory=list)

    @property
    def user_turns(self) -> list[WosTurn]:
        return [turn for turn in self.turns if turn.role == "user"]


def _state(turn: dict, path: Path, where: str) -> list[str] | None:
    if "state" not in turn:
        return None
    state = require(turn, "state", list, path, where)
    for item in state:
        if not isinstance(item, str) or len(item.split("-", 2)) != 3:
            raise DataError(path, where, f"state item {item!r} is not a 'domain-slot-value' string")
    return state


def load(path: Path) -> list[WosDialogue]:
    """An official WoS JSON file: dialogues of alternating user/sys turns, a state on every user turn
    (states optional for unlabelled input)."""
    records = []
    for index, row in enumerate(require_list(read_json(path), path)):
        where = guid_of(row, index)
        guid = require(row, "guid", str, path, where)
        turns = []
        for turn_index, turn in enumerate(require(row, "dialogue", list, path, where)):
            turn_where = f"{where}, turn {turn_index}"
            role = require(turn, "role", str, path, turn_where)
            if role not in ROLES:
                raise DataError(path, turn_where, f"role {role!r} should be 'user' or 'sys'")
            turns.append(WosTurn(role, require(turn, "text", str, path, turn_where),
                                 _state(turn, path, turn_where) if role == "user" else None))
        records.append(WosDialogue(guid, turns, list(row.get("domains") or [])))
    return records


def load_resources(files: dict[str, Path]) -> dict:
    path = files[ONTOLOGY]
    ontology = read_json(path)
    if not isinstance(ontology, dict) or not all(isinstance(v, list) for v in ontology.values()):
        raise DataError(path, None, "expected an object mapping 'domain-slot' to its list of values")
    return {"ontology": ontology}


def targets(records: Sequence[WosDialogue]) -> list[list[list[str]]]:
    return [[turn.state or [] for turn in record.user_turns] for record in records]


def predict(model, records: Sequence[WosDialogue]) -> list[dict]:
    return [{"guid": record.guid, "states": [sorted(state) for state in states]}
            for record, states in zip(records, model.predict(records))]


def score(records: Sequence[WosDialogue], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    aligned = align_predictions(records, predictions, lambda r: r.guid)
    slots = set(resources["ontology"])
    gold, pred = [], []
    for record, prediction, gold_states in zip(records, aligned, targets(records)):
        states = prediction.get("states")
        if not isinstance(states, list) or len(states) != len(gold_states):
            raise PredictionError(f"prediction {record.guid} needs 'states' with one list per user turn "
                                  f"({len(gold_states)})")
        for state in states:
            unknown = [item for item in state if not isinstance(item, str)
                       or "-".join(item.split("-", 2)[:2]) not in slots]
            if unknown:
                raise PredictionError(f"prediction {record.guid} has slots outside the ontology: {unknown[:3]}")
        gold.extend(gold_states)
        pred.extend(states)
    return scoring.score_wos(gold, pred)


class EmptyStateTracker(BaseEstimator):
    """The trivial floor: no slot is ever set."""

    def fit(self, records, y=None) -> "EmptyStateTracker":
        self.n_dialogues_ = len(records)
        return self

    def predict(self, records) -> list[list[list[str]]]:
        return [[[] for _ in record.user_turns] for record in records]


def empty_state(random_state: int = 0, resources: dict | None = None) -> EmptyStateTracker:
    return EmptyStateTracker()


TASK = TaskSpec(
    code="wos", title="WoS dialogue state tracking", folder="wos-v1.1",
    train_file="wos-v1.1_train.json", dev_file="wos-v1.1_dev.json", extra_files=(ONTOLOGY,),
    texts=lambda records: [turn.text for r in records for turn in r.turns],
    load=load, load_resources=load_resources, targets=targets,
    models={"trivial": empty_state}, default_model="trivial",
    predict=predict, score=score, headline=("joint_goal_accuracy", "slot_f1"),
    prediction_example='{"guid": "wos-v1_dev_00000", "states": [["관광-이름-명동 쇼핑 거리"], [...], ...]}',
)
