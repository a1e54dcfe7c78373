"""A teaching report of predictions against gold: per-class precision, recall, F1 and support, a confusion
matrix, and the errors a class should look at first."""
from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

from baselines.taskspec import Comparison  # what a task's `compare` gives, part of the contract


def per_class(comparison: Comparison) -> list[dict[str, Any]]:
    """Precision, recall and F1 (x100) and gold support of each class, from scikit-learn's
    precision_recall_fscore_support (0 where a class is never predicted or never gold)."""
    labels = sorted((set(comparison.gold) | set(comparison.predicted)) - {comparison.outside})
    if not labels:
        return []
    precision, recall, f1, support = precision_recall_fscore_support(
        comparison.gold, comparison.predicted, labels=labels, zero_division=0)
    # Plain floats, not numpy's: a notebook shows them as numbers, and json writes them.
    return [{"label": label, "precision": round(100 * float(p), 4), "recall": round(100 * float(r), 4),
             "f1": round(100 * float(f), 4), "support": int(s)}
            for label, p, r, f, s in zip(labels, precision, recall, f1, support)]


def confusion(comparison: Comparison) -> dict[str, Any]:
    """Rows: gold; columns: predicted; the outside label, if any, last."""
    labels = sorted(set(comparison.gold) | set(comparison.predicted), key=lambda label: (
        label == comparison.outside, label))
    matrix = confusion_matrix(comparison.gold, comparison.predicted, labels=labels) if labels else []
    return {"labels": labels, "matrix": [[int(count) for count in row] for row in matrix]}


def worst_errors(comparison: Comparison, ids: Sequence[str], inputs: Sequence[Any], count: int) -> list[dict]:
    """The `count` records that are most wrong (ties in file order), with their input, gold and prediction."""
    order = sorted((index for index, wrong in enumerate(comparison.wrong) if wrong > 0),
                   key=lambda index: -comparison.wrong[index])
    return [{"guid": ids[index], "input": inputs[index], "gold": comparison.shown[index][0],
             "predicted": comparison.shown[index][1], "how_wrong": round(comparison.wrong[index], 4)}
            for index in order[:count]]


def precision_recall_rows(counts: dict[str, Counter], support_key: str = "support") -> list[dict[str, Any]]:
    """Precision, recall and F1 (x100) per group from {group: Counter(tp=, fp=, fn=)}, with the gold count
    (tp + fn) as `support_key`: for scores that are not one label per unit (WoS's slot values)."""
    rows = []
    for group, count in sorted(counts.items()):
        tp, fp, fn = count["tp"], count["fp"], count["fn"]
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        rows.append({"group": group, "precision": round(100 * precision, 4), "recall": round(100 * recall, 4),
                     "f1": round(100 * f1, 4), support_key: tp + fn})
    return rows
