"""MRC's no-answer decision: whether the reader gives its best span, from what the ranker makes of the question and
how the question is worded."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import GroupKFold, cross_val_predict
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from baselines.models.explain import class_rows, strongest
from baselines.models.linear import OrderedLogisticRegression
from baselines.models.params import FOLDS, check_hyper_parameters
from features.vectorize import Analyse, MorphemeNgrams

# What became of a training question's best held-out span: the outcomes the decision learns.
UNANSWERABLE, WRONG, CORRECT = 0, 1, 2
# The inverse penalties that the decision's logistic regression chooses from, by the held-out gain of its training
# questions: about 1,000 questions and 60 features, few of them strong.
DECISION_C = (0.01, 0.03, 0.1, 0.3, 1.0)
# Where the wording model's probability goes among a question's evidence (after the ranker's view of the best
# span, before the words around it).
WORDING_COLUMN = 14


def advantage(probabilities: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """P(the best span is right) - P(the question is unanswerable)."""
    column = {label: index for index, label in enumerate(classes)}
    correct = probabilities[:, column[CORRECT]] if CORRECT in column else 0.0
    unanswerable = probabilities[:, column[UNANSWERABLE]] if UNANSWERABLE in column else 0.0
    return correct - unanswerable


def wording_model() -> Pipeline:
    """Morpheme uni- and bigrams of a question -> P(it has an answer)."""
    return make_pipeline(Analyse(), TfidfVectorizer(analyzer=MorphemeNgrams((1, 2)), sublinear_tf=True),
                         OrderedLogisticRegression(C=1.0, max_iter=1000))


class AnswerDecision(BaseEstimator):
    """Whether to give the best span or no answer. A wording model tells answerable questions from
    unanswerable ones by their words alone; a logistic regression over the question's evidence (how sure the
    ranker is of its best span, that span's sentence and type, how much of the question the passage holds, its
    type, and the wording model's probability) gives P(the best span is right) and P(the question is
    unanswerable); the reader answers where their difference, its belief, is above a threshold. The penalty
    and the threshold are the ones that earn most (EM + ROUGE-W) on held-out training questions.

    KLUE's unanswerable questions are written to match their passage as well as answerable ones do: in 5 grouped
    folds over the partial dev file, neither their wording nor the share of the question that the passage or
    its best sentence holds tells them apart much better than chance (measured in the README's MRC section).

    Parameters
    ----------
    folds : int
        Grouped folds (by passage) for the held-out wording probabilities and beliefs.

    Attributes
    ----------
    wording_model_ : Pipeline or None
        None when the training questions are all answerable or all unanswerable.
    answer_model_ : Pipeline or None
        StandardScaler and logistic regression over the evidence; None when training had one outcome only.
    C_ : float or None
        The inverse penalty of answer_model_, chosen from DECISION_C (the smallest on a tie).
    threshold_ : float
        The belief above which the reader answers (-inf: always, inf: never).
    """

    _parameter_constraints = {"folds": [FOLDS]}

    def __init__(self, *, folds: int = 3):
        self.folds = folds

    def fit(self, X: Sequence[tuple[str, np.ndarray]], y: Sequence[tuple[int, float]],
            groups: Sequence[str]) -> "AnswerDecision":
        """Learn when to answer from training questions whose evidence was held out from the ranker.

        Parameters
        ----------
        X : sequence of (str, ndarray)
            Per question, its text and its evidence without the wording column (the reader's
            question_evidence, from a ranker that did not see the question's passage).
        y : sequence of (int, float)
            Per question, what became of its best span (UNANSWERABLE, WRONG or CORRECT) and that span's best
            ROUGE-W against the gold answers (0 for an unanswerable question).
        groups : sequence of str
            The passage of each question: folds keep a passage's questions together.

        Returns
        -------
        self : AnswerDecision
        """
        check_hyper_parameters(self)
        groups = list(groups)
        splits = list(GroupKFold(n_splits=min(self.folds, len(set(groups)))).split(X, groups=groups))
        questions = [question for question, _evidence in X]
        wording = self._fit_wording(questions, [outcome != UNANSWERABLE for outcome, _rouge in y], splits)
        # Fold after fold, each fold's held-out questions in their order: the order the beliefs were learnt in.
        order = np.concatenate([test for _train, test in splits])
        rows = np.array([np.insert(X[i][1], WORDING_COLUMN, wording[i]) for i in order])
        outcomes = np.array([y[i][0] for i in order])
        rouges = np.array([y[i][1] for i in order])
        passages = [groups[i] for i in order]
        if len(set(outcomes)) < 2:  # nothing to decide: always answer, or never
            self.answer_model_, self.C_ = None, None
            self.threshold_ = -np.inf if outcomes[0] != UNANSWERABLE else np.inf
            return self
        # Answering earns the span's EM and ROUGE; declining earns both for an unanswerable question.
        gain_answer = (outcomes == CORRECT) + rouges
        gain_decline = 2.0 * (outcomes == UNANSWERABLE)
        choices = []
        for C in DECISION_C:  # the penalty whose held-out beliefs earn most, the smallest C on a tie
            model = make_pipeline(StandardScaler(), OrderedLogisticRegression(C=C, max_iter=1000))
            held_out = cross_val_predict(model, rows, outcomes, groups=passages,
                                         cv=GroupKFold(n_splits=len(splits)), method="predict_proba")
            beliefs = advantage(held_out, np.unique(outcomes))
            candidates = np.concatenate([[-np.inf], np.sort(beliefs)])
            totals = [gain_answer[beliefs > t].sum() + gain_decline[beliefs <= t].sum() for t in candidates]
            choices.append((max(totals), -C, model, candidates, totals))
        _total, negative_C, self.answer_model_, candidates, totals = max(choices, key=lambda choice: choice[:2])
        self.C_ = -negative_C
        self.answer_model_.fit(rows, outcomes)
        best = int(np.argmax(totals))
        # Halfway to the next observed belief, not on the last question answered or declined.
        above = candidates[best + 1] if best + 1 < len(candidates) else candidates[best] + 1.0
        self.threshold_ = float((candidates[best] + above) / 2 if np.isfinite(candidates[best]) else above - 1.0)
        return self

    def _fit_wording(self, questions: list[str], answerable: list[bool],
                     splits: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """Fits wording_model_ and returns its held-out probability of an answer for each question (zeros
        when there is one kind of question only)."""
        if len(set(answerable)) < 2:
            self.wording_model_ = None
            return np.zeros(len(questions))
        self.wording_model_ = wording_model()
        held_out = cross_val_predict(self.wording_model_, questions, answerable, cv=splits,
                                     method="predict_proba")[:, 1]
        self.wording_model_.fit(questions, answerable)
        return held_out

    def wording(self, questions: Sequence[str]) -> np.ndarray:
        """The wording model's probability that each question has an answer (0 without one)."""
        check_is_fitted(self, "threshold_")
        if self.wording_model_ is None:
            return np.zeros(len(questions))
        return self.wording_model_.predict_proba(list(questions))[:, 1]

    def decision_function(self, X: Sequence[tuple[str, np.ndarray]]) -> np.ndarray | None:
        """The belief in each question's best span, P(right) - P(unanswerable); None without an answer model
        (training had one outcome only, and threshold_ says what to do).

        Parameters
        ----------
        X : sequence of (str, ndarray)
            Per question, its text and its evidence without the wording column.

        Returns
        -------
        ndarray of shape (n_questions,) or None
        """
        check_is_fitted(self, "threshold_")
        if self.answer_model_ is None:
            return None
        if not len(X):
            return np.zeros(0)
        wording = self.wording([question for question, _evidence in X])
        rows = np.array([np.insert(evidence, WORDING_COLUMN, value) for (_q, evidence), value in zip(X, wording)])
        return advantage(self.answer_model_.predict_proba(rows), self.answer_model_.classes_)

    def predict(self, X: Sequence[tuple[str, np.ndarray]]) -> np.ndarray:
        """Whether to answer each question.

        Parameters
        ----------
        X : sequence of (str, ndarray)

        Returns
        -------
        boolean ndarray of shape (n_questions,)
        """
        beliefs = self.decision_function(X)
        if beliefs is None:
            return np.full(len(X), self.threshold_ < 0)
        return beliefs > self.threshold_

    def top_features(self, names: Sequence[str], top_k: int = 10) -> dict[str, list[tuple[str, float]]]:
        """The evidence that speaks most for answering and for declining: the weights of P(right) minus those of
        P(unanswerable) on standardised evidence, `names` naming its columns (the wording at WORDING_COLUMN)."""
        check_is_fitted(self, "threshold_")
        if self.answer_model_ is None:
            return {}
        rows = class_rows(self.answer_model_[-1])
        zero = np.zeros(len(names))
        belief = rows.get(str(CORRECT), zero) - rows.get(str(UNANSWERABLE), zero)
        return {"no-answer decision: for answering": strongest(names, belief, top_k),
                "no-answer decision: for declining": strongest(names, -belief, top_k)}

    def score(self, X: Sequence[tuple[str, np.ndarray]], y: Sequence[tuple[int, float]]) -> float:
        """The mean gain per question of these decisions: EM + ROUGE-W of an answered span, 2 for declining an
        unanswerable question, 0 otherwise (2 at best).

        Parameters
        ----------
        X : sequence of (str, ndarray)
        y : sequence of (int, float)
            As in fit.

        Returns
        -------
        float
        """
        answered = self.predict(X)
        gains = [((outcome == CORRECT) + rouge) if answer else 2.0 * (outcome == UNANSWERABLE)
                 for answer, (outcome, rouge) in zip(answered, y)]
        return float(np.mean(gains)) if gains else float("nan")
