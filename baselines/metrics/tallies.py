"""The official metrics as sums over records, so that a thousand bootstrap resamples are scored at once.

A resample is a vector of weights, how many times it draws each record. Most KLUE metrics depend on the
records only through counts that add up over them (true positives per class, gold and predicted items,
matched words, a question's exact match...). A `Tally` holds those counts per record; the counts of a batch
of resamples are then one product, weights @ counts, and `finish` turns them into the metric, with the
same quirks as baselines.metrics.scoring (which labels a macro average runs over, zero_division, NaN where a
metric is undefined). RE's AUPRC is the one metric that is no sum: it is computed from the weights through
cumulative sums over each relation's records sorted by score.

Every function takes what the matching baselines.metrics.scoring function takes, grouped per record where a record
holds several scored items (NER and DP sentences, WoS dialogues). Values are scaled by 100 as there, and a
breakdown key that the scorer would leave out for a resample (a class absent from it) is NaN.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from baselines.metrics import scoring


@dataclass
class Tally:
    """`counts`: one row per record of the columns that add up; `finish`: their sums (one row per resample)
    and the weights -> {metric: one value per resample}."""
    counts: np.ndarray
    finish: Callable[[np.ndarray, np.ndarray], dict[str, np.ndarray]]

    def resampled(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """Each metric on each resample: `weights` has one row per resample, one column per record, each
        the number of times the resample draws the record."""
        draws = np.asarray(weights).astype(np.int32)
        return self.finish(draws.astype(float) @ self.counts, draws)


class Columns:
    """Named blocks of count columns, filled record by record."""

    def __init__(self, records: int, **widths: int):
        self.slices, start = {}, 0
        for name, width in widths.items():
            self.slices[name] = slice(start, start + width)
            start += width
        self.counts = np.zeros((records, start))

    def add(self, record: int, name: str, column: int = 0, amount: float = 1.0) -> None:
        self.counts[record, self.slices[name].start + column] += amount

    def of(self, sums: np.ndarray, name: str) -> np.ndarray:
        return sums[:, self.slices[name]]


def f1_of(true_positive: np.ndarray, gold: np.ndarray, predicted: np.ndarray, zero_division: float = 0.0) -> np.ndarray:
    """F1 = 2 TP / (gold + predicted), as scikit-learn computes it; `zero_division` where both are 0."""
    total = gold + predicted
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, 2 * true_positive / np.where(total > 0, total, 1), zero_division)


def _mean_where(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """The mean of each row's values over its present columns; NaN for a row with none."""
    count = present.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, np.where(present, values, 0).sum(axis=1) / np.where(count > 0, count, 1), np.nan)


def _label_columns(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> Columns:
    """Per record: a true positive, a gold and a predicted item of its labels (one item per record)."""
    index = {label: position for position, label in enumerate(labels)}
    columns = Columns(len(gold), tp=len(labels), gold=len(labels), pred=len(labels), items=1)
    for record, (g, p) in enumerate(zip(gold, pred)):
        columns.add(record, "gold", index[g])
        columns.add(record, "pred", index[p])
        columns.add(record, "items")
        if g == p:
            columns.add(record, "tp", index[g])
    return columns


def _class_f1(columns: Columns, sums: np.ndarray, labels: Sequence[str]) -> tuple[np.ndarray, np.ndarray, dict]:
    """Per-class F1 over the labels present in each resample (scoring._per_class_f1's keys), and the
    presence mask."""
    gold, pred = columns.of(sums, "gold"), columns.of(sums, "pred")
    present = gold + pred > 0
    f1 = f1_of(columns.of(sums, "tp"), gold, pred)
    return f1, present, {f"class_f1/{label}": np.where(present[:, i], f1[:, i] * 100, np.nan)
                         for i, label in enumerate(labels)}


def tally_ynat(gold: Sequence[str], pred: Sequence[str]) -> Tally:
    labels = sorted(set(gold) | set(pred))
    columns = _label_columns(gold, pred, labels)

    def finish(sums: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
        f1, present, per_class = _class_f1(columns, sums, labels)
        return {"macro_f1": _mean_where(f1, present) * 100, **per_class}
    return Tally(columns.counts, finish)


def tally_nli(gold: Sequence[str], pred: Sequence[str]) -> Tally:
    labels = sorted(set(gold) | set(pred))
    columns = _label_columns(gold, pred, labels)

    def finish(sums: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
        _f1, _present, per_class = _class_f1(columns, sums, labels)
        accuracy = columns.of(sums, "tp").sum(axis=1) / columns.of(sums, "items")[:, 0] * 100
        return {"accuracy": accuracy, **per_class}
    return Tally(columns.counts, finish)


def tally_sts(gold: Sequence[float], pred: Sequence[float]) -> Tally:
    x, y = np.asarray(gold, dtype=float), np.asarray(pred, dtype=float)
    # Pearson r from sums of moments about the whole set's means: centring first keeps the sums small, so
    # the resample's r agrees with scipy's to about 1e-12.
    dx, dy = x - x.mean(), y - y.mean()
    gold_positive, pred_positive = x >= scoring.STS_THRESHOLD, y >= scoring.STS_THRESHOLD
    counts = np.column_stack([np.ones_like(x), dx, dy, dx * dx, dy * dy, dx * dy,
                              gold_positive & pred_positive, gold_positive, pred_positive]).astype(float)

    def finish(sums: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
        n, sx, sy, sxx, syy, sxy, tp, g, p = sums.T
        drawn = weights > 0
        # As scoring.score_sts: r is undefined (NaN) when either side is constant on the resample.
        constant = np.zeros(len(weights), dtype=bool)
        for values in (x, y):
            constant |= np.where(drawn, values, -np.inf).max(axis=1) == np.where(drawn, values, np.inf).min(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = (n * sxy - sx * sy) / np.sqrt((n * sxx - sx * sx) * (n * syy - sy * sy))
        return {"pearsonr": np.where(constant, np.nan, r) * 100, "f1": f1_of(tp, g, p) * 100}
    return Tally(counts, finish)


def tally_ner(gold_tags: Sequence[Sequence[str]], pred_tags: Sequence[Sequence[str]]) -> Tally:
    kinds, tags = scoring.NER_ENTITY_TYPES, scoring.NER_TAGS
    kind_index = {kind: i for i, kind in enumerate(kinds)}
    tag_index = {tag: i for i, tag in enumerate(tags)}
    columns = Columns(len(gold_tags), entity_tp=len(kinds), entity_gold=len(kinds), entity_pred=len(kinds),
                      char_tp=len(tags), char_gold=len(tags), char_pred=len(tags))
    for record, (gold, pred) in enumerate(zip(gold_tags, pred_tags)):
        # Entities never cross a sentence: the scorer pads each sentence with an O on both sides.
        gold_entities, pred_entities = set(scoring.iob2_entities(gold)), set(scoring.iob2_entities(pred))
        for name, entities in (("entity_gold", gold_entities), ("entity_pred", pred_entities),
                               ("entity_tp", gold_entities & pred_entities)):
            for kind, _start, _end in entities:
                columns.add(record, name, kind_index[kind])
        for g, p in zip(["O", *gold, "O"], ["O", *pred, "O"]):
            columns.add(record, "char_gold", tag_index[g])
            columns.add(record, "char_pred", tag_index[p])
            if g == p:
                columns.add(record, "char_tp", tag_index[g])

    def finish(sums: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
        gold, pred = columns.of(sums, "entity_gold"), columns.of(sums, "entity_pred")
        present = gold + pred > 0
        entity_f1 = f1_of(columns.of(sums, "entity_tp"), gold, pred)
        char_f1 = f1_of(columns.of(sums, "char_tp"), columns.of(sums, "char_gold"), columns.of(sums, "char_pred"),
                        zero_division=1.0)
        return {"entity_macro_f1": _mean_where(entity_f1, present) * 100, "char_macro_f1": char_f1.mean(axis=1) * 100,
                **{f"entity_f1/{kind}": np.where(present[:, i], entity_f1[:, i] * 100, np.nan)
                   for i, kind in enumerate(kinds)}}
    return Tally(columns.counts, finish)


class PrecisionRecallAreas:
    """scikit-learn's precision_recall_curve then auc (the trapezoid rule) of one label, with each record
    counted as often as a resample draws it, for many resamples at once. The records are sorted by score
    once; at each distinct score (a threshold) the weighted true and predicted positives are cumulative
    sums. A threshold whose records are all undrawn is no point of the resample's curve: it repeats the point
    before it, or, before any drawn record, the curve's end point (recall 0, precision 1), and so adds no
    area."""

    def __init__(self, positive: np.ndarray, scores: np.ndarray):
        self.order = np.argsort(scores, kind="mergesort")[::-1]
        sorted_scores = scores[self.order]
        self.last_of_threshold = np.r_[np.flatnonzero(np.diff(sorted_scores)), len(scores) - 1]
        # Where the positives sit in score order, and how many of them each threshold has reached: the
        # true positives are a cumulative sum over the positives alone, a few percent of the records.
        self.positions = np.flatnonzero(positive[self.order])
        self.positives_reached = np.searchsorted(self.positions, self.last_of_threshold, side="right")

    def areas(self, draws: np.ndarray) -> np.ndarray:
        """The area under each resample's curve; `draws`: int32 counts, one row per resample. Counts stay
        integers until the divisions, so the sums are exact."""
        drawn = draws[:, self.order]
        predicted = np.cumsum(drawn, axis=1, dtype=np.int32)[:, self.last_of_threshold]
        positives_drawn = np.cumsum(drawn[:, self.positions], axis=1, dtype=np.int32)
        true_positives = np.hstack([np.zeros((len(draws), 1), dtype=np.int32), positives_drawn])[
            :, self.positives_reached]
        all_positives = true_positives[:, -1:]
        with np.errstate(divide="ignore", invalid="ignore"):
            precision = np.where(predicted > 0, true_positives / np.where(predicted > 0, predicted, 1), 1.0)
            # scikit-learn's rule for a resample without positives: recall 1 at every threshold.
            recall = np.where(all_positives > 0, true_positives / np.where(all_positives > 0, all_positives, 1), 1.0)
        recall = np.hstack([np.zeros((len(draws), 1)), np.where(predicted > 0, recall, 0.0)])
        precision = np.hstack([np.ones((len(draws), 1)), precision])
        return (np.diff(recall, axis=1) * (precision[:, 1:] + precision[:, :-1]) / 2).sum(axis=1)


def tally_re(gold: Sequence[str], pred: Sequence[str], probs: np.ndarray | None, labels: Sequence[str]) -> Tally:
    labels = list(labels)
    present_labels = sorted(set(gold) | set(pred))
    columns = _label_columns(gold, pred, present_labels)
    relation = np.array([label != scoring.RE_NO_RELATION for label in present_labels])
    gold_arr = np.asarray(gold)
    prob_arr = None if probs is None else np.asarray(probs, dtype=float)
    curves = [] if prob_arr is None else [PrecisionRecallAreas(gold_arr == label, prob_arr[:, column])
                                          for column, label in enumerate(labels)]

    def finish(sums: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
        _f1, _present, per_class = _class_f1(columns, sums, present_labels)
        tp = columns.of(sums, "tp")[:, relation].sum(axis=1)
        micro = f1_of(tp, columns.of(sums, "gold")[:, relation].sum(axis=1),
                      columns.of(sums, "pred")[:, relation].sum(axis=1))
        result = {"micro_f1": micro * 100}
        if curves:
            areas = [curve.areas(weights) for curve in curves]
            result["auprc"] = np.mean(areas, axis=0) * 100
            result.update({f"auprc/{label}": area * 100 for label, area in zip(labels, areas)})
        return {**result, **per_class}
    return Tally(columns.counts, finish)


def tally_dp(gold_heads: Sequence[Sequence[int]], gold_deprels: Sequence[Sequence[str]],
             pred_heads: Sequence[Sequence[int]], pred_deprels: Sequence[Sequence[str]],
             dep_labels: Sequence[str] = scoring.DP_LABELS) -> Tally:
    label_index = {label: index for index, label in enumerate(dep_labels)}
    others, pad = -3, -2  # scoring.score_dp's classes for the collapsed labels and a wrong head

    def collapse(label: str) -> int:
        index = label_index[label]
        return others if index >= scoring.DP_OTHERS_INDEX else index

    heads = sorted({h for sentence in [*gold_heads, *pred_heads] for h in sentence})
    head_index = {head: i for i, head in enumerate(heads)}
    predicted_types = {collapse(label) if hp == hg else pad
                       for hps, hgs, labels in zip(pred_heads, gold_heads, pred_deprels)
                       for hp, hg, label in zip(hps, hgs, labels)}
    types = sorted({collapse(label) for sentence in gold_deprels for label in sentence} | predicted_types)
    type_index = {kind: i for i, kind in enumerate(types)}
    columns = Columns(len(gold_heads), words=1, head_tp=len(heads), head_gold=len(heads), head_pred=len(heads),
                      type_tp=len(types), type_gold=len(types), type_pred=len(types))
    for record, sentence in enumerate(zip(gold_heads, gold_deprels, pred_heads, pred_deprels)):
        for hg, lg, hp, lp in zip(*sentence):
            columns.add(record, "words")
            columns.add(record, "head_gold", head_index[hg])
            columns.add(record, "head_pred", head_index[hp])
            tg, tp = collapse(lg), collapse(lp) if hp == hg else pad
            columns.add(record, "type_gold", type_index[tg])
            columns.add(record, "type_pred", type_index[tp])
            if hg == hp:
                columns.add(record, "head_tp", head_index[hg])
            if tg == tp:
                columns.add(record, "type_tp", type_index[tg])

    def finish(sums: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
        words = columns.of(sums, "words")[:, 0]
        result = {}
        for name in ("head", "type"):
            gold, pred, tp = (columns.of(sums, f"{name}_{part}") for part in ("gold", "pred", "tp"))
            macro = _mean_where(f1_of(tp, gold, pred), gold + pred > 0)
            # Micro F1 over every label of a single-label task is accuracy.
            metric = "uas" if name == "head" else "las"
            result[f"{metric}_macro_f1"] = macro * 100
            result[f"{metric}_micro_f1"] = tp.sum(axis=1) / words * 100
        return result
    return Tally(columns.counts, finish)


def tally_mrc(gold_answers: Mapping[str, Sequence[str]], pred: Mapping[str, str], order: Sequence[str],
              question_types: Mapping[str, object] | None = None) -> Tally:
    """`order`: the question ids in record order."""
    groups = ["all", "answerable", "unanswerable"] + sorted({f"type_{kind}" for kind in (question_types or {}).values()
                                                            if kind is not None})
    group_index = {group: i for i, group in enumerate(groups)}
    columns = Columns(len(order), questions=len(groups), em=len(groups), rouge=len(groups))
    for record, question_id in enumerate(order):
        em, rouge = scoring.mrc_question_scores(pred[question_id], gold_answers[question_id])
        kind = (question_types or {}).get(question_id)
        for group in ("all", "answerable" if gold_answers[question_id] else "unanswerable",
                      *([f"type_{kind}"] if kind is not None else [])):
            columns.add(record, "questions", group_index[group])
            columns.add(record, "em", group_index[group], em)
            columns.add(record, "rouge", group_index[group], rouge)

    def finish(sums: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
        questions = columns.of(sums, "questions")
        with np.errstate(divide="ignore", invalid="ignore"):
            em, rouge = (np.where(questions > 0, columns.of(sums, name) / questions, np.nan) * 100
                         for name in ("em", "rouge"))
        result = {}
        for i, group in enumerate(groups):
            suffix = "" if group == "all" else f"/{group}"
            result[f"exact_match{suffix}"], result[f"rouge_w{suffix}"] = em[:, i], rouge[:, i]
        return result
    return Tally(columns.counts, finish)


def tally_wos(gold_dialogues: Sequence[Sequence[Sequence[str]]],
              pred_dialogues: Sequence[Sequence[Sequence[str]]]) -> Tally:
    """Per dialogue, its user turns' states, gold and predicted."""
    slots = sorted({scoring.wos_slot(item) for dialogue in [*gold_dialogues, *pred_dialogues]
                    for state in dialogue for item in state})
    slot_index = {slot: i for i, slot in enumerate(slots)}
    columns = Columns(len(gold_dialogues), turns=1, joint=1, turn_f1=1, slot_seen=len(slots),
                      slot_wrong=len(slots))
    for record, (gold_states, pred_states) in enumerate(zip(gold_dialogues, pred_dialogues)):
        for gold, pred in zip(gold_states, pred_states):
            columns.add(record, "turns")
            columns.add(record, "joint", amount=float(set(gold) == set(pred)))
            columns.add(record, "turn_f1", amount=scoring.turn_f1(list(gold), list(pred)))
            gold_by_slot = {scoring.wos_slot(item): item for item in set(gold)}
            pred_by_slot = {scoring.wos_slot(item): item for item in set(pred)}
            for slot in set(gold_by_slot) | set(pred_by_slot):
                columns.add(record, "slot_seen", slot_index[slot])
                if gold_by_slot.get(slot) != pred_by_slot.get(slot):
                    columns.add(record, "slot_wrong", slot_index[slot])

    def finish(sums: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
        turns = columns.of(sums, "turns")
        seen, wrong = columns.of(sums, "slot_seen"), columns.of(sums, "slot_wrong")
        # A slot's accuracy counts every turn, right where neither side sets it; the scorer lists the slots
        # set in some state of the resample.
        accuracy = np.where(seen > 0, (turns - wrong) / turns * 100, np.nan)
        return {"joint_goal_accuracy": columns.of(sums, "joint")[:, 0] / turns[:, 0] * 100,
                "slot_f1": columns.of(sums, "turn_f1")[:, 0] / turns[:, 0] * 100,
                **{f"slot_accuracy/{slot}": accuracy[:, i] for i, slot in enumerate(slots)}}
    return Tally(columns.counts, finish)
