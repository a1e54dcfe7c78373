"""NER: character-level IOB2 tagging of persons, locations, organisations, dates, times and quantities."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from sklearn.base import BaseEstimator

from baselines import scoring
from baselines.dataio import DataError, looks_like_jsonl, read_tsv_blocks, require
from baselines.taskspec import PredictionError, TaskSpec, align_predictions, jsonl_records

TAGS = scoring.NER_TAGS


@dataclass
class NerSentence:
    guid: str
    text: str
    tags: list[str] | None = field(default=None)


def load(path: Path) -> list[NerSentence]:
    """The official character TSV: '## guid<TAB>marked-up sentence', then 'CHAR<TAB>TAG' rows."""
    records = []
    for block in read_tsv_blocks(path):
        chars, tags = [], []
        for number, columns in block.rows:
            if len(columns) != 2 or len(columns[0]) != 1:
                raise DataError(path, f"line {number} (guid {block.guid})",
                                f"expected 2 columns CHAR<TAB>NE_TAG with one character, got {columns!r}")
            if columns[1] not in TAGS:
                raise DataError(path, f"line {number} (guid {block.guid})",
                                f"tag {columns[1]!r} is not a KLUE-NER tag ({' '.join(TAGS)})")
            chars.append(columns[0])
            tags.append(columns[1])
        records.append(NerSentence(block.guid, "".join(chars), tags))
    return records


def load_input(path: Path) -> list[NerSentence]:
    """Official TSV, or JSONL with a 'text' per line."""
    if not looks_like_jsonl(path):
        return load(path)
    return jsonl_records(path, lambda row, guid, where: NerSentence(guid, require(row, "text", str, path, where)))


def targets(records: Sequence[NerSentence]) -> list[list[str]]:
    return [record.tags for record in records]


def entities(text: str, tags: Sequence[str]) -> list[dict]:
    """The entity spans of a tagged sentence, with character offsets (end exclusive), type and text."""
    return [{"start": start, "end": end, "type": kind, "text": text[start:end]}
            for kind, start, end in scoring.iob2_entities(tags)]


def predict(model, records: Sequence[NerSentence]) -> list[dict]:
    rows = []
    for record, tags in zip(records, model.predict(records)):
        tags = list(tags)
        rows.append({"guid": record.guid, "tags": tags, "entities": entities(record.text, tags)})
    return rows


def _scored_tags(record: NerSentence, tags: Sequence[str]) -> list[str]:
    """Predicted tags without the space positions (one tag per character, or per non-space character)."""
    if len(tags) == len(record.text):
        return [tag for char, tag in zip(record.text, tags) if not char.isspace()]
    if len(tags) == sum(not char.isspace() for char in record.text):
        return list(tags)
    raise PredictionError(f"prediction {record.guid} has {len(tags)} tags for a sentence of "
                          f"{len(record.text)} characters")


def score(records: Sequence[NerSentence], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    aligned = align_predictions(records, predictions, lambda r: r.guid)
    bad = [p.get("guid") for p in aligned if not isinstance(p.get("tags"), list)
           or not set(p["tags"]) <= set(TAGS)]
    if bad:
        raise PredictionError(f"{len(bad)} predictions lack 'tags' or use tags outside the KLUE-NER set "
                              f"(first: {', '.join(map(str, bad[:3]))})")
    gold = [_scored_tags(record, record.tags) for record in records]
    pred = [_scored_tags(record, p["tags"]) for record, p in zip(records, aligned)]
    return scoring.score_ner(gold, pred)


class AllOutsideTagger(BaseEstimator):
    """The trivial floor: every character is outside any entity."""

    def fit(self, records, y=None) -> "AllOutsideTagger":
        self.n_sentences_ = len(records)
        return self

    def predict(self, records) -> list[list[str]]:
        return [["O"] * len(record.text) for record in records]


def all_outside(random_state: int = 0, resources: dict | None = None) -> AllOutsideTagger:
    return AllOutsideTagger()


TASK = TaskSpec(
    code="ner", title="NER named entity recognition", folder="klue-ner-v1.1",
    train_file="klue-ner-v1.1_train.tsv", dev_file="klue-ner-v1.1_dev.tsv",
    load=load, load_input=load_input, targets=targets,
    models={"trivial": all_outside}, default_model="trivial",
    predict=predict, score=score, headline=("entity_macro_f1", "char_macro_f1"),
    prediction_example='{"guid": "klue-ner-v1_dev_00001-wikitree", "tags": ["B-PS", "O", "O", ...]}',
)
