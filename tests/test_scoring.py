"""The official metrics: reference vectors from the KLUE implementation, and hand-checked small cases."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from baselines.metrics import scoring


def _call(task: str, case: dict) -> dict:
    if task == "ynat":
        return scoring.score_ynat(case["gold"], case["pred"])
    if task == "nli":
        return scoring.score_nli(case["gold"], case["pred"])
    if task == "sts":
        return scoring.score_sts(case["gold"], case["pred"])
    if task == "ner":
        return scoring.score_ner(case["gold"], case["pred"])
    if task == "re":
        return scoring.score_re(case["gold"], case["pred"], case["probs"], case["labels"])
    if task == "dp":
        return scoring.score_dp(case["gold_heads"], case["gold_deprels"], case["pred_heads"],
                                case["pred_deprels"], case["dep_labels"])
    if task == "mrc":
        return scoring.score_mrc({e["guid"]: e["answers"] for e in case["examples"]}, case["pred"])
    if task == "wos":
        return scoring.score_wos(case["gold"], case["pred"])
    raise AssertionError(task)


TASKS = ("ynat", "nli", "sts", "ner", "re", "dp", "mrc", "wos")


@pytest.mark.parametrize("task", TASKS)
def test_reference_vectors(task, metric_vectors):
    cases = json.loads((metric_vectors / f"{task}.json").read_text(encoding="utf-8"))["cases"]
    assert cases
    for case in cases:
        got = _call(task, case)
        for metric, expected in case["expected"].items():
            assert got[metric] == pytest.approx(expected, abs=1e-6), (task, case["name"], metric)


def test_dp_label_order_is_the_reference_one(metric_vectors):
    case = json.loads((metric_vectors / "dp.json").read_text(encoding="utf-8"))["cases"][0]
    assert list(scoring.DP_LABELS) == case["dep_labels"]


def test_strict_iob2_ignores_an_entity_that_starts_with_i():
    tags = ["I-PS", "I-PS", "O", "B-LC", "I-LC", "B-LC", "I-OG", "B-DT"]
    assert scoring.iob2_entities(tags) == [("LC", 3, 5), ("LC", 5, 6), ("DT", 7, 8)]


def test_ner_entity_f1_counts_type_and_span():
    gold = [["B-PS", "I-PS", "O", "B-LC"]]
    pred = [["B-PS", "I-PS", "O", "B-OG"]]
    result = scoring.score_ner(gold, pred)
    assert result["entity_f1/PS"] == 100.0
    assert result["entity_f1/LC"] == 0.0 and result["entity_f1/OG"] == 0.0
    # seqeval, which the official scorer calls, averages over the types present in gold or predictions:
    # f1_score([gold], [pred], average="macro", mode="strict", scheme=IOB2) gives 0.3333.
    assert result["entity_macro_f1"] == pytest.approx(100 / 3)
    assert "entity_f1/DT" not in result


def test_ner_entity_f1_is_undefined_without_any_entity():
    # seqeval gives NaN (a mean over no types) when neither side has an entity.
    result = scoring.score_ner([["O", "O"]], [["O", "O"]])
    assert math.isnan(result["entity_macro_f1"])
    assert scoring.score_ner([["O", "O"]], [["B-PS", "O"]])["entity_macro_f1"] == 0.0


def test_sts_pearson_of_a_constant_prediction_is_undefined():
    # scipy.stats.pearsonr, which the official scorer calls, returns NaN for a constant input.
    result = scoring.score_sts([1.0, 2.0, 4.0], [3.0, 3.0, 3.0])
    assert math.isnan(result["pearsonr"])
    assert result["f1"] == pytest.approx(100 * 2 * (1 / 3) / (1 + 1 / 3))


def test_mrc_rouge_w_follows_sequence_matcher_autojunk_on_long_answers():
    # From the official rouge_w_score_for_klue_mrc: for a gold answer of 200 or more characters,
    # SequenceMatcher's autojunk treats its frequent characters as junk, so '다라마바' matches nothing in
    # 205 characters of a repeated ten-character run, though it matches four characters of its first 199.
    gold = ("가나다라마바사아자차" * 21)[:205]
    assert scoring.mrc_rouge_w("다라마바", gold) == 0.0
    assert scoring.mrc_rouge_w("가나다라마", gold) == pytest.approx(0.047619047619047616)
    assert scoring.mrc_rouge_w("다라마바", gold[:199]) == pytest.approx(0.03940886699507389)


def test_mrc_normalisation_keeps_cjk_brackets_and_drops_ascii_punctuation():
    assert scoring.normalize_mrc_answer("  ABC,  Corp. ") == "abc corp"
    assert scoring.normalize_mrc_answer("《이순신》") == "《이순신》"


def test_mrc_rouge_is_longest_common_substring_f1():
    # '서울시' vs gold '서울특별시': longest common consecutive run '서울' (2): P 2/3, R 2/5.
    assert scoring.mrc_rouge_w("서울시", "서울특별시") == pytest.approx(2 * (2 / 3) * (2 / 5) / (2 / 3 + 2 / 5))
    assert scoring.mrc_rouge_w("", "") == 1.0 and scoring.mrc_rouge_w("무언가", "") == 0.0


def test_mrc_breakdown_by_answerability():
    result = scoring.score_mrc({"a": ["서울"], "b": []}, {"a": "서울", "b": "부산"})
    assert result["exact_match"] == 50.0
    assert result["exact_match/answerable"] == 100.0 and result["exact_match/unanswerable"] == 0.0


def test_wos_per_slot_accuracy_and_repeated_predictions():
    gold = [["관광-이름-남산"], ["관광-이름-남산", "식당-지역-서울 동쪽"]]
    pred = [["관광-이름-남산"], ["관광-이름-남산", "관광-이름-남산"]]
    result = scoring.score_wos(gold, pred)
    assert result["joint_goal_accuracy"] == 50.0
    assert result["slot_accuracy/관광-이름"] == 100.0 and result["slot_accuracy/식당-지역"] == 50.0
    # Second turn: TP 1, FN 1, and both predicted copies count (FP 0, as each is in gold): P 1, R 0.5.
    assert result["slot_f1"] == pytest.approx((1 + 2 / 3) / 2 * 100)


def test_re_without_probabilities_gives_micro_f1_only():
    labels = ["no_relation", "per:title", "org:members"]
    result = scoring.score_re(["per:title", "no_relation"], ["per:title", "per:title"], None, labels)
    assert "auprc" not in result
    assert result["micro_f1"] == pytest.approx(2 * 0.5 * 1 / 1.5 * 100)


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="2 gold items but 1 predictions"):
        scoring.score_nli(["neutral", "neutral"], ["neutral"])


def test_re_gives_each_relations_own_area_beside_their_mean():
    labels = ["no_relation", "per:title", "org:members"]
    gold = ["per:title", "no_relation", "no_relation", "org:members"]
    # per:title ranked first by its column; org:members given one constant score (its curve: (0, 1) to
    # (1, 1/4)); no_relation ranked last where it is gold.
    probs = [[0.1, 0.4, 0.5], [0.5, 0.0, 0.5], [0.5, 0.0, 0.5], [0.3, 0.2, 0.5]]
    result = scoring.score_re(gold, ["per:title", "org:members", "org:members", "org:members"], probs, labels)
    assert result["auprc/per:title"] == pytest.approx(100.0)
    assert result["auprc/org:members"] == pytest.approx((1 + 1 / 4) / 2 * 100)
    assert result["auprc"] == pytest.approx(np.mean([result[f"auprc/{label}"] for label in labels]))


# Cases that mutation testing (mutmut over baselines/metrics/) found unchecked by the reference vectors.

def test_ner_scores_every_type_present_whatever_types_before_it_lack():
    """Types absent from gold and predictions are left out of the macro average (seqeval), and the types after
    them are still scored: a sentence of one QT entity, the last type, found."""
    tags = [["B-QT", "I-QT", "O"]]
    scores = scoring.score_ner(tags, tags)
    assert scores["entity_macro_f1"] == 100.0 and scores["entity_f1/QT"] == 100.0
    assert "entity_f1/PS" not in scores
    missed = scoring.score_ner([["B-QT", "I-QT", "O", "B-PS"]], [["B-QT", "I-QT", "O", "O"]])
    assert missed["entity_macro_f1"] == 50.0 and missed["entity_f1/PS"] == 0.0


def test_ner_refuses_tags_outside_the_klue_set():
    with pytest.raises(ValueError, match=r"ner: sentence 1 has tags outside the KLUE tag set: \['B-XX', 'I-PER'\]"):
        scoring.score_ner([["O"], ["O", "O"]], [["O"], ["B-XX", "I-PER"]])
    with pytest.raises(ValueError, match="ner: sentence 0 has 2 gold tags but 1 predicted"):
        scoring.score_ner([["O", "O"]], [["O"]])
