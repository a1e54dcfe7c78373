"""The official metrics from what a Hugging Face Trainer hands `compute_metrics`: logits or ids, and label ids, in
the HF `klue` dataset's order and ClassLabel order.

YNAT, NLI and RE: class logits (n, classes) or ids (n,); RE's AUPRC takes the softmax of the logits. STS: one
number a pair, (n,) or (n, 1), against the HF `labels['real-label']`. NER: tag logits (n, length, 13) or ids
(n, length) against label ids whose ignored positions are -100, as a word-piece model's alignment leaves them
(the first piece of each character token labelled, the rest -100): a whitespace token yields no piece, so each
sentence keeps one tag per non-space character, which is what the official scorer reads. Given the dataset's
`tokens`, a sentence that keeps a tag for every character has its spaces dropped too.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import numpy as np

from baselines.data.hf import SCHEMAS
from baselines.data.prediction_formats import COLUMNS

# The tasks whose predictions a Trainer gives as class logits, numbers or tags (their cards' prediction table).
TASKS = tuple(code for code, columns in COLUMNS.items() if columns.kind in ("label", "number", "tags"))
IGNORED = -100  # the label id that HF's data collators put where a position is not scored


def _arrays(evaluated: Any) -> tuple[Any, Any]:
    """(predictions, label ids) of an EvalPrediction or a (predictions, label_ids) pair."""
    if hasattr(evaluated, "predictions") and hasattr(evaluated, "label_ids"):
        predictions, labels = evaluated.predictions, evaluated.label_ids
    else:
        predictions, labels = evaluated
    if isinstance(predictions, tuple):  # a model that returns more than logits: the logits come first
        predictions = predictions[0]
    return predictions, labels


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def _class_ids(predictions: Any, classes: int, task: str) -> tuple[np.ndarray, np.ndarray | None]:
    """(predicted ids, class probabilities or None) from logits or ids."""
    array = np.asarray(predictions)
    if array.ndim == 2 and array.shape[1] == classes:
        return array.argmax(axis=1), _softmax(array.astype(float))
    if array.ndim == 1 and np.issubdtype(array.dtype, np.integer):
        return array, None
    raise ValueError(f"{task}: expected logits of shape (n, {classes}) or class ids of shape (n,), "
                     f"not an array of shape {array.shape}")


def _names(ids: np.ndarray, names: Sequence[str], task: str, what: str) -> list[str]:
    if ids.size and (ids.min() < 0 or ids.max() >= len(names)):
        raise ValueError(f"{task}: {what} ids must be 0-{len(names) - 1} (HF klue ClassLabel order)")
    return [names[int(index)] for index in ids]


def _tags(task: str, predictions: Any, labels: Any, tokens: Sequence[Sequence[str]] | None
          ) -> tuple[list[list[str]], list[list[str]]]:
    names = SCHEMAS[task].labels[COLUMNS[task].target]
    array, gold = np.asarray(predictions), np.asarray(labels)
    if array.ndim == 3:
        array = array.argmax(axis=-1)
    if array.shape != gold.shape or array.ndim != 2:
        raise ValueError(f"{task}: predictions of shape {np.asarray(predictions).shape} do not match label ids of "
                         f"shape {gold.shape}: expected (n, length[, {len(names)}]) against (n, length)")
    gold_tags, pred_tags = [], []
    for index, (predicted_row, gold_row) in enumerate(zip(array, gold)):
        kept = gold_row != IGNORED
        gold_names = _names(gold_row[kept], names, task, "label")
        pred_names = _names(predicted_row[kept], names, task, "predicted tag")
        if tokens is not None and len(gold_names) == len(tokens[index]):  # one tag per character: drop spaces
            gold_names, pred_names = ([tag for tag, char in zip(names, tokens[index]) if char != " "]
                                      for names in (gold_names, pred_names))
        gold_tags.append(gold_names)
        pred_tags.append(pred_names)
    return gold_tags, pred_tags


def metric(task: str, score: Callable[..., dict[str, float]],
           tokens: Sequence[Sequence[str]] | None = None) -> Callable[[Any], dict[str, float]]:
    """A `compute_metrics` for a Trainer of `task` (see the module docstring): it takes an EvalPrediction or a
    (predictions, label_ids) pair and returns the official metrics (x100) with their breakdowns, as `score`
    does, with `score`, the task's official scorer over labels, numbers or tags per sentence (its
    baselines.metrics.scoring function). `tokens`: the HF dataset's NER tokens (characters), to drop spaces
    where every character is tagged."""
    if task not in TASKS or score is None:
        raise ValueError(f"a Trainer metric is given for {', '.join(TASKS)}; score {task}'s predictions as files "
                         "(`score`, api.score)")
    # A scorer that ranks by class probabilities (RE's AUPRC) takes them and the class names after the labels.
    takes_probabilities = len(inspect.signature(score).parameters) == 4

    kind = COLUMNS[task].kind

    def compute_metrics(evaluated: Any) -> dict[str, float]:
        predictions, labels = _arrays(evaluated)
        if kind == "tags":
            gold, predicted = _tags(task, predictions, labels, tokens)
            return score(gold, predicted)
        if kind == "number":
            return score(np.asarray(labels, dtype=float).reshape(-1).tolist(),
                         np.asarray(predictions, dtype=float).reshape(-1).tolist())
        names = SCHEMAS[task].labels[COLUMNS[task].target]
        ids, probs = _class_ids(predictions, len(names), task)
        gold = _names(np.asarray(labels).reshape(-1), names, task, "label")
        predicted = _names(ids, names, task, "predicted class")
        return score(gold, predicted, probs, names) if takes_probabilities else score(gold, predicted)

    compute_metrics.__name__ = f"compute_{task}_metrics"
    return compute_metrics
