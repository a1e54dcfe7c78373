"""DP: dependency parsing over eojeols (whitespace words): a head and a relation label for each."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from sklearn.base import BaseEstimator

from baselines import scoring
from baselines.dataio import DataError, looks_like_jsonl, read_tsv_blocks, require
from baselines.taskspec import PredictionError, TaskSpec, align_predictions, jsonl_records

LABELS = scoring.DP_LABELS
COLUMNS = "INDEX WORD_FORM LEMMA POS HEAD DEPREL"


@dataclass
class DpWord:
    form: str
    lemma: str | None = None  # space-separated lemmas of the eojeol's morphemes, as in the data
    pos: str | None = None  # '+'-joined Sejong tags, as in the data
    head: int | None = None  # 0 = root, else the 1-based index of the head eojeol
    deprel: str | None = None


@dataclass
class DpSentence:
    guid: str
    text: str
    words: list[DpWord]


def _word(columns: list[str], position: int, size: int, path: Path, where: str) -> DpWord:
    if len(columns) != 6:
        raise DataError(path, where, f"expected 6 columns {COLUMNS}, got {len(columns)}")
    index, form, lemma, pos, head, deprel = columns
    if index != str(position):
        raise DataError(path, where, f"INDEX should be {position}, got {index!r}")
    if not head.isdigit() or not 0 <= int(head) <= size:
        raise DataError(path, where, f"HEAD {head!r} is not 0 (root) or an eojeol index 1-{size}")
    if deprel not in LABELS:
        raise DataError(path, where, f"DEPREL {deprel!r} is not a KLUE-DP relation")
    return DpWord(form, lemma, pos, int(head), deprel)


def load(path: Path) -> list[DpSentence]:
    """The official DP TSV: '## guid<TAB>sentence', then one row per eojeol with 6 columns."""
    records = []
    for block in read_tsv_blocks(path):
        size = len(block.rows)
        words = [_word(columns, position, size, path, f"line {number} (guid {block.guid})")
                 for position, (number, columns) in enumerate(block.rows, start=1)]
        records.append(DpSentence(block.guid, block.text, words))
    return records


def load_input(path: Path) -> list[DpSentence]:
    """Official TSV, or JSONL with a 'text' per line (eojeols are its whitespace-separated words)."""
    if not looks_like_jsonl(path):
        return load(path)

    def build(row: dict, guid: str, where: str) -> DpSentence:
        text = require(row, "text", str, path, where)
        if not text.split():
            raise DataError(path, where, "empty 'text'")
        return DpSentence(guid, text, [DpWord(form) for form in text.split()])

    return jsonl_records(path, build)


def targets(records: Sequence[DpSentence]) -> list[tuple[list[int], list[str]]]:
    return [([w.head for w in r.words], [w.deprel for w in r.words]) for r in records]


def predict(model, records: Sequence[DpSentence]) -> list[dict]:
    return [{"guid": record.guid, "heads": [int(h) for h in heads], "deprels": list(deprels)}
            for record, (heads, deprels) in zip(records, model.predict(records))]


def score(records: Sequence[DpSentence], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    aligned = align_predictions(records, predictions, lambda r: r.guid)
    for record, prediction in zip(records, aligned):
        heads, deprels = prediction.get("heads"), prediction.get("deprels")
        if not isinstance(heads, list) or not isinstance(deprels, list) \
                or len(heads) != len(record.words) or len(deprels) != len(record.words):
            raise PredictionError(f"prediction {record.guid} needs 'heads' and 'deprels' with "
                                  f"{len(record.words)} items each")
    bad = [p["guid"] for p in aligned if not set(p["deprels"]) <= set(LABELS)]
    if bad:
        raise PredictionError(f"{len(bad)} predictions use relations outside the KLUE-DP set "
                              f"(first: {', '.join(bad[:3])})")
    gold = targets(records)
    return scoring.score_dp([g[0] for g in gold], [g[1] for g in gold],
                            [p["heads"] for p in aligned], [p["deprels"] for p in aligned])


class AttachToNextParser(BaseEstimator):
    """The trivial floor: every eojeol depends on the next one (the last on the root), with the most
    frequent relation of the training data."""

    def fit(self, records, y) -> "AttachToNextParser":
        counts = Counter(label for _heads, deprels in y for label in deprels)
        self.deprel_ = min(counts, key=lambda label: (-counts[label], label))
        return self

    def predict(self, records) -> list[tuple[list[int], list[str]]]:
        output = []
        for record in records:
            size = len(record.words)
            output.append(([i + 2 for i in range(size - 1)] + [0], [self.deprel_] * size))
        return output


def attach_to_next(random_state: int = 0, resources: dict | None = None) -> AttachToNextParser:
    return AttachToNextParser()


TASK = TaskSpec(
    code="dp", title="DP dependency parsing", folder="klue-dp-v1.1",
    train_file="klue-dp-v1.1_train.tsv", dev_file="klue-dp-v1.1_dev.tsv",
    texts=lambda records: [r.text for r in records],
    load=load, load_input=load_input, targets=targets,
    models={"trivial": attach_to_next}, default_model="trivial",
    predict=predict, score=score, headline=("uas_micro_f1", "las_micro_f1", "uas_macro_f1", "las_macro_f1"),
    prediction_example='{"guid": "klue-dp-v1_dev_00000_wikitree", "heads": [2, 6, 4, 6, 6, 0], '
                       '"deprels": ["NP", "NP_SBJ", "NP_MOD", "NP_AJT", "NP_OBJ", "VP"]}',
)
