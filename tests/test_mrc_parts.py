"""The MRC reader's parts, each fitted, tested and explained alone: the listwise ranker, the answer type model and
the no-answer decision."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from baselines.tasks.mrc.answer_types import ANSWER_TYPES, AnswerTypeModel
from baselines.tasks.mrc.decision import CORRECT, UNANSWERABLE, WORDING_COLUMN, WRONG, AnswerDecision
from baselines.tasks.mrc.ranking import ListwiseRanker, listwise_loss
from baselines.tasks.mrc.reader import EVIDENCE_NAMES


def planted_candidates(questions: int, seed: int) -> tuple[list[sparse.csr_matrix], list[np.ndarray]]:
    """Per question, 5 to 9 candidates of 4 features; the gold one has the largest feature 0, the others are
    noise."""
    rng = np.random.default_rng(seed)
    blocks, gold = [], []
    for _ in range(questions):
        size = int(rng.integers(5, 10))
        rows = rng.normal(size=(size, 4))
        best = int(rng.integers(size))
        rows[best, 0] = rows[:, 0].max() + 1.0
        marks = np.zeros(size, dtype=bool)
        marks[best] = True
        blocks.append(sparse.csr_matrix(rows))
        gold.append(marks)
    return blocks, gold


def test_the_listwise_gradient_is_the_loss_s_slope():
    blocks, gold = planted_candidates(12, seed=0)
    weights = np.random.default_rng(1).normal(size=4)
    stacked = [sparse.vstack(blocks, format="csr")]
    loss, gradient = listwise_loss(weights, stacked, gold, alpha=0.3)
    step = 1e-6
    numeric = [(listwise_loss(weights + step * unit, stacked, gold, 0.3)[0]
                - listwise_loss(weights - step * unit, stacked, gold, 0.3)[0]) / (2 * step) for unit in np.eye(4)]
    assert np.allclose(gradient, numeric, atol=1e-6) and loss > 0


def test_the_listwise_ranker_puts_the_planted_gold_first_and_warm_starts():
    blocks, gold = planted_candidates(200, seed=2)
    with pytest.raises(NotFittedError):
        ListwiseRanker().decision_function(blocks[0])
    ranker = ListwiseRanker(alpha=0.01).fit(blocks, gold)  # several blocks read as one stack
    assert np.allclose(ranker.coef_, ListwiseRanker(alpha=0.01).fit(sparse.vstack(blocks), gold).coef_, atol=1e-6)
    test_blocks, test_gold = planted_candidates(100, seed=3)
    assert ranker.score(test_blocks, test_gold) >= 0.95
    assert abs(ranker.coef_[0]) == abs(ranker.coef_).max()
    # A warm start begins where the previous fit ended: one more step stays at the optimum, where one step
    # from zeros is far from it.
    warm = ListwiseRanker(alpha=0.01, warm_start=True).fit(blocks, gold)
    assert np.allclose(warm.set_params(max_iter=1).fit(blocks, gold).coef_, ranker.coef_, atol=1e-3)
    assert not np.allclose(ListwiseRanker(alpha=0.01, max_iter=1).fit(blocks, gold).coef_, ranker.coef_, atol=0.1)
    with pytest.raises(ValueError, match="no training question"):
        clone(ranker).fit([], [])


def test_the_answer_type_model_learns_a_planted_focus_word_and_explains_it():
    X = [{"focus=도시": 1.0}, {"focus=사람": 1.0}, {"focus=날짜": 1.0}] * 20
    y = ["LC", "PS", "DT"] * 20
    model = AnswerTypeModel(C=10.0)
    with pytest.raises(NotFittedError):
        model.predict(X)
    model.fit(X, y)
    assert list(model.predict([{"focus=사람": 1.0}, {"focus=도시": 1.0}])) == ["PS", "LC"]
    assert model.score(X, y) == 1.0
    expected = model.expected([{"focus=날짜": 1.0}])
    assert expected.shape == (1, len(ANSWER_TYPES)) and expected[0].argmax() == ANSWER_TYPES.index("DT")
    assert expected[0, ANSWER_TYPES.index("O")] == 0.0  # a type never seen in training is never expected
    assert model.top_features(1)["answer type PS"][0][0] == "focus=사람"


def planted_evidence(questions: int, seed: int) -> tuple[list, list, list]:
    """Evidence whose first column (the ranker's best score) tells right spans from wrong ones and
    unanswerable questions; the question's words say nothing."""
    rng = np.random.default_rng(seed)
    X, y, groups = [], [], []
    for index in range(questions):
        outcome = (UNANSWERABLE, WRONG, CORRECT)[index % 3]
        evidence = rng.normal(size=len(EVIDENCE_NAMES) - 1)
        evidence[0] = {UNANSWERABLE: -2.0, WRONG: 0.0, CORRECT: 2.0}[outcome] + rng.normal(scale=0.3)
        X.append((f"질문 {index % 7}", evidence))
        y.append((outcome, {UNANSWERABLE: 0.0, WRONG: 0.2, CORRECT: 1.0}[outcome]))
        groups.append(f"passage {index // 3}")
    return X, y, groups


def test_the_decision_answers_where_the_evidence_says_right_and_declines_elsewhere():
    X, y, groups = planted_evidence(150, seed=4)
    decision = AnswerDecision(folds=3)
    with pytest.raises(NotFittedError):
        decision.predict(X)
    decision.fit(X, y, groups=groups)
    test_X, test_y, _groups = planted_evidence(60, seed=5)
    answered = decision.predict(test_X)
    assert all(answered[i] for i, (outcome, _rouge) in enumerate(test_y) if outcome == CORRECT)
    assert not any(answered[i] for i, (outcome, _rouge) in enumerate(test_y) if outcome == UNANSWERABLE)
    assert decision.score(test_X, test_y) > 1.3  # of 2 at best; always answering earns 0.73 here
    assert np.array_equal(decision.decision_function(test_X) > decision.threshold_, answered)
    assert decision.top_features(EVIDENCE_NAMES, 1)["no-answer decision: for answering"][0][0] == "best_score"
    assert EVIDENCE_NAMES[WORDING_COLUMN] == "wording"


def test_a_decision_with_one_outcome_always_answers_or_never():
    X, y, groups = planted_evidence(30, seed=6)
    answerable = [(x, (CORRECT, 1.0)) for x, _outcome in zip(X, y)]
    always = AnswerDecision().fit([x for x, _ in answerable], [o for _, o in answerable], groups=groups)
    assert always.answer_model_ is None and always.predict(X).all()
    never = AnswerDecision().fit(X, [(UNANSWERABLE, 0.0)] * len(X), groups=groups)
    assert not never.predict(X).any() and never.wording_model_ is None
