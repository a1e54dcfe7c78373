"""MRC readers: the span ranker with its no-answer decision, and the empty-answer floor."""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral
from typing import Sequence

import numpy as np
from scipy import optimize, sparse
from sklearn.base import BaseEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted, check_memory

from baselines import scoring
from baselines.estimators import NothingLearnt, TaskModel
from baselines.explain import strongest
from baselines.params import AT_LEAST_ONE, COUNT, NON_NEGATIVE, SEED, HasMethods, Interval
from baselines.tasks.mrc.candidates import (FEATURE_INDEX, FEATURE_NAMES, QUESTION_TYPES, QuestionView, ViewMemo,
                                            question_view, related_words)
from baselines.tasks.mrc.data import MrcQuestion, as_records
from features.analysis import analyze, neighbours
from features.vectorize import neighbour_queries


@dataclass
class Reading:
    """What the reader makes of one question: its best span (empty when it has no candidate), its belief
    that the span is right rather than the question unanswerable (P(right) - P(unanswerable); None for a
    reader without a no-answer decision) and whether it answers."""
    best_span: str
    best_start: int
    belief: float | None
    answered: bool


def headline(records: Sequence[MrcQuestion], y: Sequence[Sequence[str]], predicted: Sequence[tuple[str, int]]
             ) -> float:
    """Exact match, each question keyed by its position (plain inputs share no guids)."""
    gold = {str(index): list(answers) for index, answers in enumerate(y)}
    return scoring.score_mrc(gold, {str(index): answer for index, (answer, _start) in enumerate(predicted)}
                             )["exact_match"]


class EmptyAnswerReader(NothingLearnt, BaseEstimator):
    """The trivial floor: every question is declared unanswerable."""

    _to_records = staticmethod(as_records)
    _headline = staticmethod(headline)

    def predict(self, X: Sequence) -> list[tuple[str, int]]:
        return [("", 0) for _ in self._fitted_records(X)]


def empty_answer(random_state: int = 0, resources: dict | None = None) -> EmptyAnswerReader:
    return EmptyAnswerReader()


def _grouped_softmax(scores: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log-sum-exp of each group of consecutive scores, and each score's softmax share within its group
    (a score of -inf gets 0); every group needs one finite score."""
    peaks = np.maximum.reduceat(scores, starts)
    powers = np.exp(scores - np.repeat(peaks, sizes))
    totals = np.add.reduceat(powers, starts)
    return peaks + np.log(totals), powers / np.repeat(totals, sizes)



_UNANSWERABLE, _WRONG, _CORRECT = 0, 1, 2
VIEW_CHUNK = 4000  # training questions whose candidate views are held at once


class SpanRanker(TaskModel, BaseEstimator):
    """Extractive reader: candidate spans from the sentences that match the question best, a linear scorer
    trained listwise (the gold span against all candidates of its question), and a no-answer decision on
    the best span's score, margin and the question's coverage, with its threshold set by cross-validation
    on the training questions.

    Parameters
    ----------
    alpha : float
        L2 penalty of the listwise ranker (on the mean loss, so it means the same for any data size).
    max_iter : int
        L-BFGS iterations of the ranker.
    top_sentences : int
        Candidate spans come from this many sentences that cover most of the question.
    max_eojeols, max_chars : int
        The longest candidate span, in eojeols and characters.
    calibration_folds : int
        Grouped folds over the training questions for the no-answer decision's held-out scores.
    max_calibration_questions : int
        At most this many training questions calibrate the no-answer decision.
    abstain : bool
        False: always give the best span (for questions known to have an answer).
    neighbours : int
        Nearest morphemes of each question word in Kiwi's CoNg model that count as soft matches; 0: exact
        matches only.
    memory : None, str or joblib.Memory
        Where question views (candidates and their features) are cached across readers and processes, as
        scikit-learn's `memory=`: a folder or a joblib.Memory. Whatever it is, a reader also keeps the views
        of its own fits and predictions in memory (at most 4000, not saved with it), which a cross-fit that
        refits it fold after fold reuses.
    random_state : int

    Attributes
    ----------
    scaler_ : StandardScaler
        Scales the candidates' features.
    weights_ : ndarray
        The ranker's weights, one per FEATURE_NAMES.
    answer_model_ : Pipeline or None
        The no-answer decision (None when training had only one kind of question).
    threshold_ : float
        The belief above which the reader answers.

    X is a sequence of MrcQuestion records or of dicts with 'context' and 'question'; y holds the gold
    answer texts of each question ([] for an unanswerable one).
    """

    _to_records = staticmethod(as_records)
    _headline = staticmethod(headline)

    _parameter_constraints = {
        "alpha": [NON_NEGATIVE], "max_iter": [AT_LEAST_ONE], "top_sentences": [AT_LEAST_ONE],
        "max_eojeols": [AT_LEAST_ONE], "max_chars": [AT_LEAST_ONE], "neighbours": [COUNT],
        "calibration_folds": [Interval(Integral, 2, None, closed="left")],
        "max_calibration_questions": [AT_LEAST_ONE], "abstain": ["boolean"],
        "memory": [None, str, HasMethods(["cache"])], "random_state": [SEED],
    }

    def __init__(self, alpha: float = 0.25, max_iter: int = 500, top_sentences: int = 3, max_eojeols: int = 4,
                 max_chars: int = 40, calibration_folds: int = 3, max_calibration_questions: int = 4000,
                 abstain: bool = True, neighbours: int = 10, memory=None, random_state: int = 0):
        self.alpha = alpha
        self.max_iter = max_iter
        self.top_sentences = top_sentences
        self.max_eojeols = max_eojeols
        self.max_chars = max_chars
        self.neighbours = neighbours
        self.calibration_folds = calibration_folds
        self.max_calibration_questions = max_calibration_questions
        self.abstain = abstain
        self.memory = memory
        self.random_state = random_state

    def _views(self, records: Sequence[MrcQuestion]) -> list[QuestionView]:
        """The question views of `records`, from this reader's memo, else from `memory`, else built."""
        questions = analyze(r.question for r in records)
        contexts = analyze(r.context for r in records)
        settings = (self.top_sentences, self.max_eojeols, self.max_chars)
        if self.neighbours:
            neighbours((query for q in questions for query in neighbour_queries(q)), self.neighbours)
        memory = check_memory(self.memory)
        build = question_view if memory.location is None else memory.cache(question_view)
        if getattr(self, "_view_memo", None) is None:
            self._view_memo = ViewMemo()
        return [self._view_memo.get((r.question, r.context, self.neighbours) + settings,
                                    lambda q=q, c=c: build(q, c, *settings, related_words(q, self.neighbours)))
                for r, q, c in zip(records, questions, contexts)]

    def __getstate__(self) -> dict:
        # The memo of views is a cache of this process, not learnt state: a saved or copied reader leaves it.
        state = super().__getstate__()
        state.pop("_view_memo", None)
        return state

    @staticmethod
    def _kept_rows(views: Sequence[QuestionView], positives: Sequence[np.ndarray]
                   ) -> tuple[sparse.csr_matrix | None, list[np.ndarray]]:
        """The unscaled candidate rows, stacked, of the questions the ranker learns from (those whose gold span
        is among their candidates, next to a wrong one), and their gold marks; None when there are none."""
        kept = [(view.features, positive) for view, positive in zip(views, positives)
                if positive.any() and not positive.all()]
        if not kept:
            return None, []
        return sparse.vstack([rows for rows, _positive in kept], format="csr"), [positive for _rows, positive in kept]

    def _fit_weights(self, blocks: Sequence[sparse.csr_matrix], gold: Sequence[np.ndarray]) -> np.ndarray:
        """A listwise (softmax) ranker: for each training question whose gold span is among its candidates,
        the share of probability that its gold spans get among all its candidates is maximised (mean over
        the questions), under an L2 penalty of alpha/2. Every candidate counts, and this is the loss that
        picking the top span needs, where pairwise logistic regression on sampled negatives (tried first)
        learns to tell one span from a random other one. `blocks` hold the questions' scaled candidate rows,
        one after another in the order of `gold`: a fit on the official train file keeps them in several
        blocks, since one stacked copy besides them would double its peak memory."""
        if not gold:
            raise ValueError("no training question has its answer among the candidate spans")
        is_gold = np.concatenate(gold)
        sizes = np.array([len(positive) for positive in gold])
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        bounds = np.cumsum([0] + [block.shape[0] for block in blocks])

        def loss_and_gradient(weights: np.ndarray) -> tuple[float, np.ndarray]:
            scores = np.concatenate([block @ weights for block in blocks])
            all_log_sum, all_share = _grouped_softmax(scores, starts, sizes)
            gold_log_sum, gold_share = _grouped_softmax(np.where(is_gold, scores, -np.inf), starts, sizes)
            # A mean, not a sum: the penalty then means the same for the 60 questions of a test and the
            # 17,554 of the official training file.
            loss = float(np.mean(all_log_sum - gold_log_sum) + 0.5 * self.alpha * weights @ weights)
            residual = all_share - gold_share
            gradient = sum(block.T @ residual[low:high] for block, low, high in zip(blocks, bounds, bounds[1:]))
            return loss, gradient / len(gold) + self.alpha * weights

        fitted = optimize.minimize(loss_and_gradient, np.zeros(blocks[0].shape[1]), jac=True, method="L-BFGS-B",
                                   options={"maxiter": self.max_iter})
        return fitted.x

    def _scores(self, view: QuestionView, weights: np.ndarray) -> np.ndarray:
        if not view.spans:
            return np.zeros(0)
        return np.asarray(self.scaler_.transform(view.features) @ weights).ravel()

    @staticmethod
    def _question_features(view: QuestionView, scores: np.ndarray) -> np.ndarray:
        ranked = np.sort(scores)[::-1]
        top = ranked[0] if len(ranked) else 0.0
        margin = ranked[0] - ranked[1] if len(ranked) > 1 else (1.0 if len(ranked) else 0.0)
        probability = 1.0 / np.exp(scores - top).sum() if len(ranked) else 0.0
        best = int(np.argmax(scores)) if len(scores) else 0
        top_share = float(view.features[best, FEATURE_INDEX["sentence_share"]]) if len(scores) else 0.0
        values = [top, margin, probability, top_share, view.best_sentence_share, view.passage_share,
                  math.log1p(len(scores)),
                  math.log1p(view.question_words), math.log1p(view.missing_words), view.passage_soft_share,
                  math.log1p(view.unrelated_words)]
        return np.array(values + [float(view.question_type == kind) for kind in QUESTION_TYPES])

    @staticmethod
    def _positives(view: QuestionView, context: str, answers: Sequence[str]) -> np.ndarray:
        gold = {scoring.normalize_mrc_answer(answer) for answer in answers}
        return np.array([scoring.normalize_mrc_answer(context[s:e]) in gold for s, e in view.spans], dtype=bool)

    def fit(self, X: Sequence, y: Sequence[Sequence[str]]) -> "SpanRanker":
        records = self._fit_records(X)
        rng = np.random.default_rng(self.random_state)
        chosen = np.arange(len(records))  # the questions that calibrate the no-answer decision
        if self.abstain and len(chosen) > self.max_calibration_questions:
            chosen = np.sort(rng.choice(chosen, self.max_calibration_questions, replace=False))
        calibrating = set(chosen.tolist()) if self.abstain else set()
        # Views are built VIEW_CHUNK questions at a time, and only the ranker's rows of each chunk and the
        # calibration questions' views are kept: all views of the official train file at once take 5 GB.
        self.scaler_ = StandardScaler(with_mean=False)
        blocks, gold, kept_views, kept_positives = [], [], {}, {}
        for first in range(0, len(records), VIEW_CHUNK):
            chunk = records[first:first + VIEW_CHUNK]
            views = self._views(chunk)
            positives = [self._positives(v, r.context, answers)
                         for v, r, answers in zip(views, chunk, y[first:first + VIEW_CHUNK])]
            # Scaled, not centred: the rows stay sparse, and a shift would not change any ranking. (The zero
            # row keeps the scaler defined when no question has a candidate.)
            self.scaler_.partial_fit(sparse.vstack([v.features for v in views] + (
                [sparse.csr_matrix((1, len(FEATURE_NAMES)), dtype=np.float32)] if first == 0 else [])))
            rows, chunk_gold = self._kept_rows(views, positives)
            if rows is not None:
                blocks.append(rows)
                gold.extend(chunk_gold)
            for offset, (view, positive) in enumerate(zip(views, positives)):
                if first + offset in calibrating:
                    kept_views[first + offset], kept_positives[first + offset] = view, positive
        for block in blocks:  # in place: a scaled copy beside them would hold the rows twice
            self.scaler_.transform(block, copy=False)
        self.weights_ = self._fit_weights(blocks, gold)
        del blocks
        if self.abstain:
            self._fit_answer_decision(records, y, chosen, kept_views, kept_positives)
        else:
            self.answer_model_, self.threshold_ = None, -np.inf
        return self

    def _fit_answer_decision(self, records, y, chosen: np.ndarray, views: dict[int, QuestionView],
                             positives: dict[int, np.ndarray]) -> None:
        """Out-of-fold best spans of the chosen training questions (folds by passage) teach when to answer;
        `views` and `positives` are theirs, by question index."""
        groups = [records[i].context for i in chosen]
        folds = GroupKFold(n_splits=min(self.calibration_folds, len(set(groups))))
        rows, outcomes, rouges, passages = [], [], [], []
        for inner_train, inner_test in folds.split(chosen, groups=groups):
            inner_rows, inner_gold = self._kept_rows([views[chosen[i]] for i in inner_train],
                                                     [positives[chosen[i]] for i in inner_train])
            if inner_rows is None:
                raise ValueError("no training question has its answer among the candidate spans")
            weights = self._fit_weights([self.scaler_.transform(inner_rows, copy=False)], inner_gold)
            for i in chosen[inner_test]:
                passages.append(records[i].context)  # the rows come fold by fold, not in `chosen` order
                scores = self._scores(views[i], weights)
                rows.append(self._question_features(views[i], scores))
                if not y[i]:
                    outcomes.append(_UNANSWERABLE)
                    rouges.append(0.0)
                    continue
                best = int(np.argmax(scores)) if len(scores) else -1
                outcomes.append(_CORRECT if best >= 0 and positives[i][best] else _WRONG)
                start, end = views[i].spans[best] if best >= 0 else (0, 0)
                rouges.append(max(scoring.mrc_rouge_w(records[i].context[start:end], g) for g in y[i]))
        rows, outcomes, rouges = np.array(rows), np.array(outcomes), np.array(rouges)
        self.answer_model_ = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
        if len(set(outcomes)) < 2:  # nothing to decide: always answer, or never
            self.answer_model_ = None
            self.threshold_ = -np.inf if outcomes[0] != _UNANSWERABLE else np.inf
            return
        held_out = cross_val_predict(self.answer_model_, rows, outcomes, groups=passages,
                                     cv=GroupKFold(n_splits=folds.n_splits), method="predict_proba")
        self.answer_model_.fit(rows, outcomes)
        advantage = self._advantage(held_out, self.answer_model_.classes_)
        # Answering earns the span's EM and ROUGE; declining earns both for an unanswerable question.
        gain_answer = (outcomes == _CORRECT) + rouges
        gain_decline = 2.0 * (outcomes == _UNANSWERABLE)
        candidates = np.concatenate([[-np.inf], np.sort(advantage)])
        totals = [gain_answer[advantage > t].sum() + gain_decline[advantage <= t].sum() for t in candidates]
        best = int(np.argmax(totals))
        # Halfway to the next observed advantage, not on the last question answered or declined.
        above = candidates[best + 1] if best + 1 < len(candidates) else candidates[best] + 1.0
        self.threshold_ = float((candidates[best] + above) / 2 if np.isfinite(candidates[best]) else above - 1.0)

    @staticmethod
    def _advantage(probabilities: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """P(the best span is right) - P(the question is unanswerable)."""
        column = {label: index for index, label in enumerate(classes)}
        correct = probabilities[:, column[_CORRECT]] if _CORRECT in column else 0.0
        unanswerable = probabilities[:, column[_UNANSWERABLE]] if _UNANSWERABLE in column else 0.0
        return correct - unanswerable

    def top_features(self, top_k: int = 10) -> dict[str, list[tuple[str, float]]]:
        """The span ranker's weights of largest size (on standardised features: a positive weight raises a
        candidate, a negative one lowers it)."""
        check_is_fitted(self)
        return {"span ranker": strongest(FEATURE_NAMES, self.weights_, top_k, both_signs=True)}

    def read(self, X: Sequence) -> list[Reading]:
        """Each question's best span, the reader's belief in it and whether it answers with it."""
        records = self._fitted_records(X)
        readings = []
        for record, view in zip(records, self._views(records)):
            scores = self._scores(view, self.weights_)
            if not len(scores):
                readings.append(Reading("", 0, None, False))
                continue
            start, end = view.spans[int(np.argmax(scores))]
            belief = None
            if self.answer_model_ is not None:
                probabilities = self.answer_model_.predict_proba(self._question_features(view, scores)[None])
                belief = float(self._advantage(probabilities, self.answer_model_.classes_)[0])
                answered = belief > self.threshold_
            else:
                answered = self.threshold_ < 0
            readings.append(Reading(record.context[start:end], start, belief, bool(answered)))
        return readings

    def predict(self, X: Sequence) -> list[tuple[str, int]]:
        return [(r.best_span, r.best_start) if r.answered else ("", 0) for r in self.read(X)]


def span_ranker(random_state: int = 0, resources: dict | None = None) -> SpanRanker:
    return SpanRanker(random_state=random_state)
