"""The official KLUE metrics, quirks included, as pure functions over plain Python values.

Every function returns a dict of floats scaled by 100. The official numbers carry the names used by the
KLUE reference implementation (KLUE-baseline, ``klue_baseline/metrics``); breakdowns sit beside them
under keys with a ``/`` (for example ``class_f1/스포츠``) and are not part of the official scores.
"""
from __future__ import annotations

import difflib
import math
import re
import string
import warnings
from collections import Counter, defaultdict
from typing import Mapping, Sequence

import numpy as np
from scipy import stats
from sklearn import metrics

NER_ENTITY_TYPES = ("PS", "LC", "OG", "DT", "TI", "QT")
NER_TAGS = tuple(f"{prefix}-{kind}" for kind in NER_ENTITY_TYPES for prefix in "BI") + ("O",)

# KLUE-DP relation labels in the order of the reference implementation: LAS collapses every index from
# DP_OTHERS_INDEX on into one class, so the order is part of the metric.
DP_LABELS = (
    "NP", "NP_AJT", "VP", "NP_SBJ", "VP_MOD", "NP_OBJ", "AP", "NP_CNJ", "NP_MOD", "VNP", "DP", "VP_AJT",
    "VNP_MOD", "NP_CMP", "VP_SBJ", "VP_CMP", "VP_OBJ", "VNP_CMP", "AP_MOD", "X_AJT", "VP_CNJ", "VNP_AJT",
    "IP", "X", "X_SBJ", "VNP_OBJ", "VNP_SBJ", "X_OBJ", "AP_AJT", "L", "X_MOD", "X_CNJ", "VNP_CNJ", "X_CMP",
    "AP_CMP", "AP_SBJ", "R", "NP_SVJ",
)
DP_OTHERS_INDEX = 15
STS_THRESHOLD = 3.0
RE_NO_RELATION = "no_relation"


def _check_lengths(name: str, gold: Sequence, pred: Sequence) -> None:
    if len(gold) != len(pred):
        raise ValueError(f"{name}: {len(gold)} gold items but {len(pred)} predictions")
    if not gold:
        raise ValueError(f"{name}: nothing to score")


def _per_class_f1(gold: Sequence[str], pred: Sequence[str], prefix: str = "class_f1") -> dict[str, float]:
    labels = sorted(set(gold) | set(pred))
    scores = metrics.f1_score(gold, pred, labels=labels, average=None, zero_division=0)
    return {f"{prefix}/{label}": float(score) * 100 for label, score in zip(labels, scores)}


def score_ynat(gold: Sequence[str], pred: Sequence[str]) -> dict[str, float]:
    """Macro F1 over the topic labels seen in gold or prediction."""
    _check_lengths("macro F1", gold, pred)
    result = {"macro_f1": float(metrics.f1_score(gold, pred, average="macro")) * 100}
    result.update(_per_class_f1(gold, pred))
    return result


def score_nli(gold: Sequence[str], pred: Sequence[str]) -> dict[str, float]:
    """Accuracy of the entailment / neutral / contradiction labels."""
    _check_lengths("accuracy", gold, pred)
    result = {"accuracy": float(metrics.accuracy_score(gold, pred)) * 100}
    result.update(_per_class_f1(gold, pred))
    return result


def score_sts(gold: Sequence[float], pred: Sequence[float]) -> dict[str, float]:
    """Pearson r on the unrounded gold scores (NaN, undefined, when either side is constant), and binary F1
    with both sides thresholded at 3.0. Scores outside 0-5 are scored as given, as the official code does."""
    _check_lengths("Pearson r and F1", gold, pred)
    gold_arr = np.asarray(gold, dtype=float)
    pred_arr = np.asarray(pred, dtype=float)
    # Pearson r of a constant series is undefined (0/0); the official scipy call returns NaN there, and so
    # does this, without scipy's warning. Tables print it as 'n/a', JSON as null.
    constant = np.ptp(pred_arr) == 0 or np.ptp(gold_arr) == 0
    pearson = math.nan if constant else stats.pearsonr(gold_arr, pred_arr)[0]
    f1 = metrics.f1_score(gold_arr >= STS_THRESHOLD, pred_arr >= STS_THRESHOLD, zero_division=0)
    return {"pearsonr": float(pearson) * 100, "f1": float(f1) * 100}


def iob2_entities(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Strict IOB2 entities as (type, start, end-exclusive): an entity starts with B-, continues with I-
    of the same type; an I- that starts nothing is not an entity."""
    entities = []
    kind, start = None, 0
    for position, tag in enumerate(list(tags) + ["O"]):
        prefix, _, tag_kind = tag.partition("-")
        if kind is not None and not (prefix == "I" and tag_kind == kind):
            entities.append((kind, start, position))
            kind = None
        if prefix == "B":
            kind, start = tag_kind, position
    return entities


def _concatenate_ner(sequences: Sequence[Sequence[str]]) -> list[str]:
    """One O before and after every sentence, as the [CLS]/[SEP] positions of the official scorer."""
    flat: list[str] = []
    for sequence in sequences:
        flat.append("O")
        flat.extend(sequence)
        flat.append("O")
    return flat


def score_ner(gold_tags: Sequence[Sequence[str]], pred_tags: Sequence[Sequence[str]]) -> dict[str, float]:
    """Entity macro F1 (strict IOB2) and character macro F1 over the 13 tags.

    Tags are per sentence, one per scored character (the caller drops the U+0020 spaces). As in seqeval,
    which the official scorer calls, the entity macro average runs over the types present in gold or
    predictions (a type in neither is left out, not scored 0), and is NaN (undefined) when there are none.
    """
    _check_lengths("entity and character F1", gold_tags, pred_tags)
    for index, (gold, pred) in enumerate(zip(gold_tags, pred_tags)):
        if len(gold) != len(pred):
            raise ValueError(f"ner: sentence {index} has {len(gold)} gold tags but {len(pred)} predicted")
        unknown = set(pred) - set(NER_TAGS)
        if unknown:
            raise ValueError(f"ner: sentence {index} has tags outside the KLUE tag set: {sorted(unknown)}")
    gold_flat = _concatenate_ner(gold_tags)
    pred_flat = _concatenate_ner(pred_tags)

    gold_entities = set(iob2_entities(gold_flat))
    pred_entities = set(iob2_entities(pred_flat))
    result: dict[str, float] = {}
    type_f1 = []
    present = {entity[0] for entity in gold_entities | pred_entities}
    for kind in NER_ENTITY_TYPES:
        if kind not in present:
            continue
        gold_k = {entity for entity in gold_entities if entity[0] == kind}
        pred_k = {entity for entity in pred_entities if entity[0] == kind}
        true_positive = len(gold_k & pred_k)
        precision = true_positive / len(pred_k) if pred_k else 0.0
        recall = true_positive / len(gold_k) if gold_k else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        type_f1.append(f1)
        result[f"entity_f1/{kind}"] = f1 * 100
    char_f1 = metrics.f1_score(gold_flat, pred_flat, labels=list(NER_TAGS), average="macro", zero_division=1)
    entity_f1 = math.fsum(type_f1) / len(type_f1) if type_f1 else math.nan
    return {"entity_macro_f1": entity_f1 * 100, "char_macro_f1": float(char_f1) * 100, **result}


def score_re(
    gold: Sequence[str],
    pred: Sequence[str],
    probs: np.ndarray | Sequence[Sequence[float]] | None,
    labels: Sequence[str],
) -> dict[str, float]:
    """Micro F1 without no_relation, and the mean one-vs-rest AUPRC (trapezoid rule) over all labels, with each
    label's own area as auprc/<label>.

    ``probs`` columns follow ``labels`` (relation_list.json order); without them only micro F1 is given.
    """
    _check_lengths("relation F1 and AUPRC", gold, pred)
    labels = list(labels)
    unknown = (set(gold) | set(pred)) - set(labels)
    if unknown:
        raise ValueError(f"re: labels outside the relation list: {sorted(unknown)[:5]}")
    relations = [label for label in labels if label != RE_NO_RELATION]
    micro = metrics.f1_score(gold, pred, labels=relations, average="micro", zero_division=0)
    result = {"micro_f1": float(micro) * 100}
    if probs is not None:
        prob_arr = np.asarray(probs, dtype=float)
        if prob_arr.shape != (len(gold), len(labels)):
            raise ValueError(f"re: probs must have shape {(len(gold), len(labels))}, not {prob_arr.shape}")
        gold_arr = np.asarray(gold)
        areas = []
        with warnings.catch_warnings():
            # A label absent from gold has no positives; the reference scores it as sklearn does, quietly.
            warnings.simplefilter("ignore", UserWarning)
            for column, label in enumerate(labels):
                precision, recall, _ = metrics.precision_recall_curve(gold_arr == label, prob_arr[:, column])
                areas.append(metrics.auc(recall, precision))
        result["auprc"] = float(np.mean(areas)) * 100
        # Each relation's own area: the mean hides which relations rank worse than a constant score would.
        result.update({f"auprc/{label}": float(area) * 100 for label, area in zip(labels, areas)})
    result.update(_per_class_f1(gold, pred))
    return result


def _flatten_checked(name: str, gold: Sequence[Sequence], pred: Sequence[Sequence]) -> tuple[list, list]:
    _check_lengths(name, gold, pred)
    flat_gold, flat_pred = [], []
    for index, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(f"{name}: sentence {index} has {len(g)} gold items but {len(p)} predicted")
        flat_gold.extend(g)
        flat_pred.extend(p)
    return flat_gold, flat_pred


def score_dp(
    gold_heads: Sequence[Sequence[int]],
    gold_deprels: Sequence[Sequence[str]],
    pred_heads: Sequence[Sequence[int]],
    pred_deprels: Sequence[Sequence[str]],
    dep_labels: Sequence[str] = DP_LABELS,
) -> dict[str, float]:
    """UAS and LAS, each as micro and macro F1, with the reference implementation's LAS quirks."""
    head_gold, head_pred = _flatten_checked("dp heads", gold_heads, pred_heads)
    rel_gold, rel_pred = _flatten_checked("dp deprels", gold_deprels, pred_deprels)
    if len(head_gold) != len(rel_gold):
        raise ValueError("dp: heads and deprels differ in length")
    label_index = {label: index for index, label in enumerate(dep_labels)}
    unknown = (set(rel_gold) | set(rel_pred)) - set(label_index)
    if unknown:
        raise ValueError(f"dp: relation labels outside the KLUE-DP label set: {sorted(unknown)[:5]}")

    others, pad = -3, -2

    def collapse(label: str) -> int:
        index = label_index[label]
        return others if index >= DP_OTHERS_INDEX else index

    type_gold = [collapse(label) for label in rel_gold]
    type_pred = [collapse(label) if hp == hg else pad for label, hp, hg in zip(rel_pred, head_pred, head_gold)]
    return {
        "uas_macro_f1": float(metrics.f1_score(head_gold, head_pred, average="macro")) * 100,
        "uas_micro_f1": float(metrics.accuracy_score(head_gold, head_pred)) * 100,
        "las_macro_f1": float(metrics.f1_score(type_gold, type_pred, average="macro")) * 100,
        "las_micro_f1": float(metrics.f1_score(type_gold, type_pred, average="micro")) * 100,
    }


_ASCII_PUNCTUATION = re.compile("[" + re.escape(string.punctuation) + "]")


def normalize_mrc_answer(text: str) -> str:
    """Lower-case, drop ASCII punctuation, collapse white space (CJK brackets and quotes stay)."""
    return " ".join(_ASCII_PUNCTUATION.sub("", text.lower()).split())


def mrc_exact_match(pred: str, answers: Sequence[str]) -> float:
    """1.0 when the normalised prediction equals one normalised gold answer ('' for an unanswerable
    question, whose `answers` are []), else 0.0."""
    prediction = normalize_mrc_answer(pred)
    return max(float(prediction == normalize_mrc_answer(g)) for g in list(answers) or [""])


def mrc_rouge_w(pred: str, gold: str) -> float:
    """The official 'ROUGE-W': character F1 of the longest common consecutive substring, found as the
    official code finds it, by difflib.SequenceMatcher with its default autojunk. For a gold answer of 200
    or more characters, autojunk ignores its frequent characters, so the match can be shorter than the true
    longest common substring; the official scores carry that, and so do these."""
    pred_n, gold_n = normalize_mrc_answer(pred), normalize_mrc_answer(gold)
    if not gold_n:
        return float(not pred_n)
    length = difflib.SequenceMatcher(None, pred_n, gold_n).find_longest_match(0, len(pred_n), 0, len(gold_n)).size
    if length == 0:
        return 0.0
    precision, recall = length / len(pred_n), length / len(gold_n)
    return 2 * precision * recall / (precision + recall)


def mrc_question_scores(prediction: str, answers: Sequence[str]) -> tuple[float, float]:
    """One question's exact match and ROUGE-W, each the max over its gold answers ('' when it has none)."""
    return mrc_exact_match(prediction, answers), max(mrc_rouge_w(prediction, g) for g in list(answers) or [""])


def score_mrc(
    gold_answers: Mapping[str, Sequence[str]],
    pred: Mapping[str, str],
    question_types: Mapping[str, object] | None = None,
) -> dict[str, float]:
    """Exact match and 'ROUGE-W' (see mrc_rouge_w), max over gold answers, mean over questions.

    ``gold_answers`` maps a question id to its gold answer texts, ``[]`` for an unanswerable question
    (whose only correct answer is the empty string).
    """
    if set(gold_answers) != set(pred):
        missing = sorted(set(gold_answers) - set(pred))
        extra = sorted(set(pred) - set(gold_answers))
        raise ValueError(f"mrc: {len(missing)} questions without prediction, {len(extra)} unknown ids")
    if not gold_answers:
        raise ValueError("mrc: nothing to score")
    groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for question_id, answers in gold_answers.items():
        pair = mrc_question_scores(pred[question_id], answers)
        groups["all"].append(pair)
        groups["answerable" if answers else "unanswerable"].append(pair)
        if question_types and question_types.get(question_id) is not None:
            groups[f"type_{question_types[question_id]}"].append(pair)
    result: dict[str, float] = {}
    for group, pairs in groups.items():
        em, rouge = np.mean(pairs, axis=0) * 100
        suffix = "" if group == "all" else f"/{group}"
        result[f"exact_match{suffix}"] = float(em)
        result[f"rouge_w{suffix}"] = float(rouge)
    return result


# The n-best depths at which the MRC diagnostics look for the answer.
N_BEST_SIZES = (5, 20)


def mrc_reader_diagnostics(gold: dict[str, list[str]], predictions: Sequence[dict]) -> dict[str, float]:
    """The two parts of a reader measured apart (not official metrics). The span scorer: EM and ROUGE-W
    of the best span on the answerable questions. The no-answer decision: ROC AUC of the reader's belief
    for telling answerable questions from unanswerable ones. And what the reader would score if it knew
    which questions have no answer (best span where there is an answer, '' elsewhere). Predictions that all
    carry an n-best list (the reader's distinct best spans, best first) also get the share of answerable
    questions with an answer among its first 5 and 20."""
    best = {p["guid"]: p["best_span"] for p in predictions}
    answerable = {guid: answers for guid, answers in gold.items() if answers}
    diagnostics = {}
    if answerable:
        spans = score_mrc(answerable, {guid: best[guid] for guid in answerable})
        diagnostics["best_span_exact_match/answerable"] = spans["exact_match"]
        diagnostics["best_span_rouge_w/answerable"] = spans["rouge_w"]
        if all(isinstance(p.get("n_best"), list) for p in predictions):
            # Where the n-best list holds the answer below its first place, the ranking lost it; where the
            # list lacks it, the candidates or the retrieval did (or a ranking that put it lower still).
            listed = {p["guid"]: p["n_best"] for p in predictions}
            depths = []  # the place of each answerable question's first right span in its list
            for guid, answers in answerable.items():
                right = {normalize_mrc_answer(g) for g in answers}
                depths.append(next((place for place, text in enumerate(listed[guid])
                                    if normalize_mrc_answer(text) in right), math.inf))
            for size in N_BEST_SIZES:
                diagnostics[f"top_{size}_exact_match/answerable"] = 100.0 * float(np.mean(np.array(depths) < size))
    told = score_mrc(gold, {guid: best[guid] if answers else "" for guid, answers in gold.items()})
    diagnostics["told_exact_match"] = told["exact_match"]
    diagnostics["told_rouge_w"] = told["rouge_w"]
    beliefs = [p.get("belief") for p in predictions]
    has_answer = [bool(gold[p["guid"]]) for p in predictions]
    known = [b for b in beliefs if b is not None]
    if known and len(set(has_answer)) == 2:
        # A question without candidate spans has no belief: it ranks below every other.
        floor = min(known) - 1.0
        beliefs = [floor if b is None else b for b in beliefs]
        diagnostics["answerable_auc"] = float(metrics.roc_auc_score(has_answer, beliefs))
    return diagnostics


def wos_slot(state_item: str) -> str:
    domain, slot, _value = state_item.split("-", 2)
    return f"{domain}-{slot}"


def turn_f1(gold: Sequence[str], pred: Sequence[str]) -> float:
    """TRADE's per-turn F1 over the lists as given: a repeated predicted item counts again as a false
    positive, as in the reference implementation."""
    if not gold:
        return float(not pred)
    true_positive = sum(item in pred for item in gold)
    false_positive = sum(item not in gold for item in pred)
    precision = true_positive / (true_positive + false_positive) if pred else 0.0
    recall = true_positive / len(gold)
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def score_wos(gold_states: Sequence[Sequence[str]], pred_states: Sequence[Sequence[str]]) -> dict[str, float]:
    """Joint goal accuracy (state sets equal) and TRADE-style slot F1 over user turns, plus per-slot
    accuracy."""
    _check_lengths("joint goal accuracy and slot F1", gold_states, pred_states)
    gold_sets = [set(g) for g in gold_states]
    pred_sets = [set(p) for p in pred_states]
    joint = [gold == pred for gold, pred in zip(gold_sets, pred_sets)]
    turn_f1s = [turn_f1(list(gold), list(pred)) for gold, pred in zip(gold_states, pred_states)]
    slots = sorted({wos_slot(item) for state in gold_sets + pred_sets for item in state})
    slot_correct: Counter = Counter()
    for gold, pred in zip(gold_sets, pred_sets):
        gold_by_slot = {wos_slot(item): item for item in gold}
        pred_by_slot = {wos_slot(item): item for item in pred}
        for slot in slots:
            slot_correct[slot] += gold_by_slot.get(slot) == pred_by_slot.get(slot)
    result = {"joint_goal_accuracy": float(np.mean(joint)) * 100, "slot_f1": float(np.mean(turn_f1s)) * 100}
    result.update({f"slot_accuracy/{slot}": slot_correct[slot] / len(gold_sets) * 100 for slot in slots})
    return result
