"""MRC readers: the span ranker (candidates, ListwiseRanker, AnswerDecision, AnswerTypeModel) and the empty floor."""
from __future__ import annotations

import copy
import math
from bisect import bisect_right
from dataclasses import dataclass, replace
from numbers import Integral
from typing import Sequence

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.model_selection import GroupKFold, cross_val_predict
from sklearn.preprocessing import StandardScaler
from sklearn.exceptions import NotFittedError
from sklearn.utils.sparsefuncs import inplace_column_scale
from sklearn.utils.validation import check_is_fitted, check_memory

from baselines.metrics import scoring
from baselines.models.estimators import NothingLearnt, TaskModel
from baselines.models.explain import strongest
from baselines.models.params import (FOLDS, ITERATIONS, NEIGHBOURS, NON_NEGATIVE, POSITIVE, SEED, HasMethods,
                              Interval)
from baselines.tasks.mrc.answer_types import (ANSWER_TYPES, ENTITY_TYPES, SHAPE_COLUMNS, TYPED_FEATURE_NAMES,
                                              AnswerTypeModel, answer_type, over_answer_types, passage_entities,
                                              question_type_features, span_types, typed_features)
from baselines.tasks.mrc.candidates import (FEATURE_INDEX, FEATURE_NAMES, QUESTION_TYPES, VIEW_MEMO, QuestionView,
                                            content_set, question_terms, question_view, related_words)
from baselines.tasks.mrc.data import MrcQuestion, as_records, in_nfc
from baselines.tasks.mrc.decision import CORRECT, UNANSWERABLE, WORDING_COLUMN, WRONG, AnswerDecision
from baselines.tasks.mrc.passages import Retrieval, best_retrieval
from baselines.tasks.mrc.ranking import ListwiseRanker
from features.analysis import analyze, neighbours
from features.morphemes import Analysis
from features.normalize import nfc, nfc_text
from features.vectorize import neighbour_queries


@dataclass
class Reading:
    """What the reader makes of one question: its best span (empty when it has no candidate), its belief
    that the span is right rather than the question unanswerable (P(right) - P(unanswerable); None for a
    reader without a no-answer decision), whether it answers, what the question asks for by its words
    (QUESTION_TYPES), the answer type it expects (ANSWER_TYPES; None without a tagger) and its n-best list:
    the N_BEST best scored spans that differ as answers (as the metric normalises them), best first, so that
    the best span leads it."""
    best_span: str
    best_start: int
    belief: float | None
    answered: bool
    asks_for: str = "other"
    expected_type: str | None = None
    n_best: tuple[str, ...] = ()


# How many distinct spans a reading lists: enough to tell a ranking that misses the answer from one that
# puts it just behind the best span (results/mrc.json's top_5 and top_20 diagnostics).
N_BEST = 20


def n_best(texts: Sequence[str], scores: np.ndarray, size: int = N_BEST) -> tuple[str, ...]:
    """The `size` best scored texts that differ as answers (scoring.normalize_mrc_answer), best first; a tie
    keeps the earlier candidate first."""
    listed, seen = [], set()
    for index in np.argsort(-scores, kind="stable"):
        answer = scoring.normalize_mrc_answer(texts[index])
        if answer not in seen:
            seen.add(answer)
            listed.append(texts[index])
            if len(listed) == size:
                break
    return tuple(listed)


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
        """No answer to any question.

        Parameters
        ----------
        X : sequence of MrcQuestion or dict

        Returns
        -------
        list of (str, int)
            ('', 0) for each question.
        """
        return [("", 0) for _ in self._fitted_records(X)]



_ALL_FEATURES = FEATURE_NAMES + TYPED_FEATURE_NAMES  # the columns of a question's candidate rows
_TYPED_INDEX = {name: len(FEATURE_NAMES) + index for index, name in enumerate(TYPED_FEATURE_NAMES)}
_EXPECTED_ENTITY = [_TYPED_INDEX[f"expected_{kind}*entity_{kind}"] for kind in ENTITY_TYPES]
# What the words around the best span say of it: a span that the question's words surround is more often
# right, which is what the no-answer decision has to weigh.
_BEST_SPAN_CONTEXT = [FEATURE_INDEX[name] for name in (
    "left3", "right3", "left10", "right10", "left3_soft", "right3_soft", "weighted_proximity", "nearest_left",
    "nearest_right", "bigrams_left", "bigrams_right", "head_predicate_in_question", "modifier_in_question",
    "sentence_relative", "sentence_soft", "focus_after", "focus_before", "wh_particle_match")]
# The L2 penalties that the span ranker chooses from (alpha=None), by the held-out best span of its training
# questions; a log grid, tried from the most penalised one, whose weights start the next one's fit.
RANKER_ALPHAS = (1.0, 0.3, 0.1, 0.03)
# The columns of the no-answer decision's evidence (SpanRanker._evidence, with the wording at WORDING_COLUMN).
EVIDENCE_NAMES = (
    ("best_score", "score_margin", "best_probability", "overlap_probability", "best_span_sentence_share",
     "best_sentence_share", "passage_share", "log_candidates", "log_question_words", "log_missing_words",
     "passage_soft_share", "log_unrelated_words", "type_agreement", "best_typed_fit")[:WORDING_COLUMN]
    + ("wording",)
    + tuple(f"best_span_{FEATURE_NAMES[column]}" for column in _BEST_SPAN_CONTEXT)
    + tuple(f"question_type={kind}" for kind in QUESTION_TYPES) + tuple(f"expected={kind}" for kind in ANSWER_TYPES))
# Training questions whose candidate views are held at once. The ranker's rows are stacked per chunk, and each
# of the optimiser's products converts one stack to float64 for a moment: at 4,000, that moment was the fit's
# peak at the official size. Above the 1,080 questions of a cross-fitting fold on the dev file, so that those
# fits stack their rows once, as before.
VIEW_CHUNK = 2000


class SpanRanker(TaskModel, BaseEstimator):
    """Extractive reader: candidate spans from the sentences that match the question best (BM25 with soft
    matches), scored by a ListwiseRanker (the gold span against all candidates of its question), and an
    AnswerDecision on the best span's score, margin, type, the question's coverage and wording, learnt from
    held-out training questions. With a tagger (an NER model), candidates are typed, and an AnswerTypeModel
    of the answer type that each question expects (trained on the types of the training questions' gold
    answers) tells the ranker and the decision how well each candidate's type fits. Each of the three is an
    estimator of its own, fitted here on what the reader makes of the training questions.

    Parameters
    ----------
    alpha : float or None
        L2 penalty of the listwise ranker (on the mean loss, so it means the same for any data size). None:
        fit chooses it from RANKER_ALPHAS, the one under which most training questions get their gold span
        first in grouped folds (by passage; the folds that calibrate the no-answer decision).
    max_iter : int
        L-BFGS iterations of the ranker.
    top_sentences : int
        Candidate spans come from this many sentences that match the question best.
    max_eojeols, max_chars : int
        The longest candidate span, in eojeols and characters.
    calibration_folds : int
        Grouped folds over the training questions for the no-answer decision's held-out scores (and the
        expected answer types of the training questions).
    max_calibration_questions : int
        At most this many training questions calibrate the no-answer decision and choose alpha.
    abstain : bool
        False: always give the best span (for questions known to have an answer).
    neighbours : int
        Nearest morphemes of each question word in Kiwi's CoNg model that count as soft matches; 0: exact
        matches only.
    tagger : estimator or None
        A fitted NER model of this toolkit (its predict takes texts and returns IOB2 tags per character) that
        types the candidates; wrapped in sklearn.frozen.FrozenEstimator, it stays fitted when the reader is
        cloned (cross-fitting clones it per fold). `--param ner_train=FILE` on the command line, or
        `ner_train=FILE` in the API, fits the NER task's default model on FILE and sets it here, frozen. The
        reader keeps it, so a saved reader predicts without the file. None: no typing.
    type_C : float
        Inverse L2 penalty of the expected answer type classifier (a logistic regression).
    plausible_answers : bool
        The ranker also learns from the unanswerable training questions that come with plausible answers
        (KLUE gives them): which span the question would ask for is still a ranking to learn.
    memory : None, str or joblib.Memory
        Where question views (candidates and their features) are cached across readers and processes, as
        scikit-learn's `memory=`: a folder or a joblib.Memory. Whatever it is, the process keeps the latest
        4,000 views in memory, outside any reader (candidates.VIEW_MEMO), which a cross-fit that fits a reader
        fold after fold on the same questions reuses (when a fit or a prediction has more questions than that,
        it keeps none of theirs there: they would be dropped before they were asked for again).
    random_state : int

    Attributes
    ----------
    alpha_ : float
        The ranker's L2 penalty: `alpha`, or the one chosen from RANKER_ALPHAS.
    retrieval_ : Retrieval
        The sentence retrieval setting (BM25's k1 and b, the neighbours' share) under which most training
        questions have their answer in the first `top_sentences` sentences.
    tagger_ : estimator or None
        The tagger that typed the candidates (`tagger`, checked to be fitted).
    type_model_ : AnswerTypeModel or None
        The expected answer type classifier (None without a tagger, or when the training answers have a
        single type).
    scaler_ : StandardScaler
        Scales the candidates' features.
    ranker_ : ListwiseRanker
        Scores the candidates; its coef_ has one weight per FEATURE_NAMES + TYPED_FEATURE_NAMES.
    decision_ : AnswerDecision or None
        Whether to answer with the best span (None when it does not abstain).
    feature_names_ : tuple of str
        The names of the candidates' feature columns it was fitted on (FEATURE_NAMES + TYPED_FEATURE_NAMES
        then): a saved reader whose columns differ from this version's is refused when loaded.

    X is a sequence of MrcQuestion records or of dicts with 'context' and 'question'; y holds the gold
    answer texts of each question ([] for an unanswerable one).
    """

    _to_records = staticmethod(as_records)
    _headline = staticmethod(headline)

    _parameter_constraints = {
        "alpha": [None, NON_NEGATIVE], "max_iter": [ITERATIONS],
        # Candidate spans grow with these: the longest answer of the 1,350 dev questions here is 21 eojeols
        # and 90 characters, and no passage has 100 sentences.
        "top_sentences": [Interval(Integral, 1, 100, closed="both")],
        "max_eojeols": [Interval(Integral, 1, 50, closed="both")],
        "max_chars": [Interval(Integral, 1, 200, closed="both")],
        "neighbours": [NEIGHBOURS],
        "calibration_folds": [FOLDS],
        # Every calibration question's candidates are held at once; the official train file has 17,554.
        "max_calibration_questions": [Interval(Integral, 1, 100_000, closed="both")],
        "abstain": ["boolean"], "tagger": [None, HasMethods(["predict"])],
        "type_C": [POSITIVE], "plausible_answers": ["boolean"], "memory": [None, str, HasMethods(["cache"])],
        "random_state": [SEED],
    }

    def __init__(self, *, alpha: float | None = None, max_iter: int = 500, top_sentences: int = 3, max_eojeols: int = 4,
                 max_chars: int = 40, calibration_folds: int = 3, max_calibration_questions: int = 4000,
                 abstain: bool = True, neighbours: int = 10, tagger=None, type_C: float = 1.0,
                 plausible_answers: bool = True, memory=None, random_state: int = 0):
        self.alpha = alpha
        self.max_iter = max_iter
        self.top_sentences = top_sentences
        self.max_eojeols = max_eojeols
        self.max_chars = max_chars
        self.neighbours = neighbours
        self.calibration_folds = calibration_folds
        self.max_calibration_questions = max_calibration_questions
        self.abstain = abstain
        self.tagger = tagger
        self.type_C = type_C
        self.plausible_answers = plausible_answers
        self.memory = memory
        self.random_state = random_state

    def _views(self, records: Sequence[MrcQuestion], memoised: bool = True) -> list[QuestionView]:
        """The question views of `records`, from the process's memo (if `memoised`), else from `memory`, else
        built."""
        questions = analyze(r.question for r in records)
        contexts = analyze(r.context for r in records)
        settings = (self.top_sentences, self.max_eojeols, self.max_chars)
        self._prefetch_neighbours(questions)
        memory = check_memory(self.memory)
        build = question_view if memory.location is None else memory.cache(question_view)
        retrieval = getattr(self, "retrieval_", Retrieval())  # fit chooses it before it builds views

        def view(question: Analysis, context: Analysis) -> QuestionView:
            return build(question, context, *settings, related_words(question, self.neighbours), retrieval)

        if not memoised:
            return [view(q, c) for q, c in zip(questions, contexts)]
        return [VIEW_MEMO.get((r.question, r.context, self.neighbours, retrieval) + settings,
                              lambda q=q, c=c: view(q, c))
                for r, q, c in zip(records, questions, contexts)]

    @staticmethod
    def _memoises(records: Sequence[MrcQuestion]) -> bool:
        """Whether a pass over `records` keeps their views in the process's memo: only when they all fit in it.
        The memo drops the oldest first, so a pass over more questions than it holds (the official training
        file) would drop each view before the next pass over them asks for it: kept, they would only take
        memory (330 MB at the official size) beside the ranker's rows."""
        return len(records) <= VIEW_MEMO.capacity

    def _prefetch_neighbours(self, questions) -> None:
        if self.neighbours:
            neighbours((query for q in questions for query in neighbour_queries(q)), self.neighbours)

    def _entities(self, records: Sequence[MrcQuestion], ranges: Sequence[Sequence[tuple[int, int]]]
                  ) -> dict[str, tuple]:
        """The tagged entities of each passage (none without a tagger), in at least the sentences that the
        (start, end) character ranges of each record touch (its candidates, its answer); the sentences its
        tagger tagged before are not tagged again (passage_entities)."""
        if self.tagger_ is None:
            return dict.fromkeys((r.context for r in records), ())
        wanted: dict[str, list[tuple[int, int]]] = {}
        for record, record_ranges in zip(records, ranges):
            wanted.setdefault(record.context, []).extend(record_ranges)
        return passage_entities(self.tagger_).entities(wanted)

    @staticmethod
    def _rows(view: QuestionView, entities: Sequence, expected: np.ndarray) -> sparse.csr_matrix:
        """The candidates' unscaled rows: the view's features, then the typed ones."""
        if not len(entities) and not expected.any():
            # Nothing typed (no tagger): the view's own arrays, read as wider rows, not a copy of them.
            features = view.features
            return sparse.csr_matrix((features.data, features.indices, features.indptr),
                                     shape=(features.shape[0], len(_ALL_FEATURES)))
        exact, inside = span_types(view.spans, entities)
        shapes = view.features[:, SHAPE_COLUMNS]
        return sparse.hstack([view.features, typed_features(exact, inside, expected, shapes)], format="csr")

    @staticmethod
    def _learns_from(positive: np.ndarray) -> bool:
        """Whether the ranker learns from a question with these gold marks: its gold span is among its
        candidates, next to a wrong one."""
        return bool(positive.any() and not positive.all())

    @staticmethod
    def _kept_rows(rows: Sequence[sparse.csr_matrix], positives: Sequence[np.ndarray]
                   ) -> tuple[sparse.csr_matrix | None, list[np.ndarray]]:
        """The unscaled candidate rows, stacked, of the questions the ranker learns from (_learns_from), and
        their gold marks; None when there are none."""
        kept = [(block, positive) for block, positive in zip(rows, positives) if SpanRanker._learns_from(positive)]
        if not kept:
            return None, []
        return sparse.vstack([block for block, _positive in kept], format="csr"), [positive for _rows, positive in kept]

    def _scaled_float64(self, blocks: Sequence[sparse.csr_matrix]) -> sparse.csr_matrix:
        """The blocks of unscaled rows, scaled (in float32, as the ranker's rows are) and stacked in float64. In
        float64 once: scipy would convert float32 rows anew for each of the optimiser's products, which took
        two thirds of its time. Written block by block into the float64 arrays: a float32 stack beside them
        raised the peak at the official size by its 140 MB."""
        sizes = np.array([block.nnz for block in blocks])
        data, indices = np.empty(sizes.sum()), np.empty(sizes.sum(), dtype=np.int32)
        indptr = [np.zeros(1, dtype=np.int64)]
        offset = 0
        for block, size in zip(blocks, sizes):
            scaled = self.scaler_.transform(block)
            data[offset:offset + size], indices[offset:offset + size] = scaled.data, scaled.indices
            indptr.append(scaled.indptr[1:] + offset)
            offset += size
        rows = sum(block.shape[0] for block in blocks)
        return sparse.csr_matrix((data, indices, np.concatenate(indptr)), shape=(rows, blocks[0].shape[1]))

    def _scores(self, rows: sparse.csr_matrix, ranker: ListwiseRanker) -> np.ndarray:
        if not rows.shape[0]:
            return np.zeros(0)
        return ranker.decision_function(self._scaled(rows))

    def _scaled(self, rows: sparse.csr_matrix) -> sparse.csr_matrix:
        """scaler_.transform(rows) for one question's rows, without scikit-learn's checks of its input, which
        took longer than the scaling itself (asked 22,814 times in a 5-fold dev run: 12 of its 130 profiled
        seconds). The same arithmetic: a copy in a floating type, each value times 1 / scale_ of its column."""
        scaled = rows.copy() if rows.dtype in (np.float32, np.float64) else rows.astype(np.float64)
        inplace_column_scale(scaled, 1 / self.scaler_.scale_)
        return scaled

    @staticmethod
    def _evidence(view: QuestionView, rows: sparse.csr_matrix, expected: np.ndarray, scores: np.ndarray
                  ) -> np.ndarray:
        """What the no-answer decision knows of a question besides its wording: how sure the ranker is of its
        best span, that span's sentence and type, how much of the question the passage holds, and its type."""
        if len(scores):
            ranked = np.sort(scores)[::-1]
            top = ranked[0]
            margin = ranked[0] - ranked[1] if len(ranked) > 1 else 1.0
            powers = np.exp(scores - top)
            total = powers.sum()
            probability = 1.0 / total
            best = int(np.argmax(scores))
            top_share = float(rows[best, FEATURE_INDEX["sentence_share"]])
            # How well the best span's type fits what the question expects, and how well the best fitting
            # candidate of the kept sentences does: a question whose expected type is nowhere is likely
            # unanswerable.
            agreement = float(rows[:, _TYPED_INDEX["type_agreement"]].toarray().ravel()[best])
            best_typed = float(rows[:, _EXPECTED_ENTITY].toarray().max())
            best_start, best_end = view.spans[best]
            # The belief in the best span's words, shared with the candidates that overlap it (longer or
            # shorter cuts of the same phrase).
            overlap_mass = float(sum(share for share, (start, end) in zip(powers / total, view.spans)
                                     if start < best_end and best_start < end))
            around = rows[best, _BEST_SPAN_CONTEXT].toarray().ravel()
        else:  # no candidate: nothing to be sure of
            top = margin = probability = top_share = agreement = best_typed = overlap_mass = 0.0
            around = np.zeros(len(_BEST_SPAN_CONTEXT))
        values = [top, margin, probability, overlap_mass, top_share, view.best_sentence_share, view.passage_share,
                  math.log1p(len(scores)),
                  math.log1p(view.question_words), math.log1p(view.missing_words), view.passage_soft_share,
                  math.log1p(view.unrelated_words), agreement, best_typed]
        return np.concatenate([values, around, [float(view.question_type == kind) for kind in QUESTION_TYPES],
                               expected])

    @staticmethod
    def _positives(view: QuestionView, context: str, answers: Sequence[str]) -> np.ndarray:
        gold = {scoring.normalize_mrc_answer(answer) for answer in answers}
        return np.array([scoring.normalize_mrc_answer(context[s:e]) in gold for s, e in view.spans], dtype=bool)

    def _ranked_answers(self, record: MrcQuestion, answers: Sequence[str]) -> Sequence[str]:
        """The spans the ranker learns to put first: the gold answers, or for an unanswerable question the
        plausible answers that KLUE gives it (what its question would ask for if the passage said it)."""
        if answers or not self.plausible_answers:
            return answers
        return [answer.text for answer in record.plausible_answers]

    def _fitted_tagger(self):
        """`tagger`, after checking that it is fitted: the reader has no NER data to fit it with."""
        if self.tagger is None:
            return None
        try:
            check_is_fitted(self.tagger)
        except NotFittedError:
            raise ValueError(f"the tagger {type(self.tagger).__name__} is not fitted: the reader types candidates "
                             "with a fitted NER model (wrap it in sklearn.frozen.FrozenEstimator, so that cloning "
                             "the reader keeps it fitted)") from None
        return self.tagger

    def _choose_retrieval(self, records: Sequence[MrcQuestion], y: Sequence[Sequence[str]]) -> Retrieval:
        """The retrieval setting under which most answerable training questions have the sentence of their
        answer's first place in the passage among the first top_sentences."""
        questions = analyze(r.question for r in records)
        contexts = analyze(r.context for r in records)
        pairs = []
        for record, question, context, answers in zip(records, questions, contexts, y):
            start = record.context.find(answers[0]) if answers else -1
            if start < 0:
                continue
            terms, sentences = question_terms(content_set(question), context,
                                              related_words(question, self.neighbours))
            morpheme = bisect_right(context.ends, start)
            if morpheme < len(sentences):
                pairs.append((terms, sentences[morpheme]))
        return best_retrieval(pairs, self.top_sentences)

    def _type_features(self, records: Sequence[MrcQuestion]) -> list[dict[str, float]]:
        return [question_type_features(q, related_words(q, self.neighbours))
                for q in analyze(r.question for r in records)]

    def _expected(self, records: Sequence[MrcQuestion], features: list[dict[str, float]] | None = None
                  ) -> np.ndarray:
        """Each question's probabilities of ANSWER_TYPES (zeros without a type classifier); `features` are
        its _type_features when the caller has them."""
        if self.type_model_ is None or not len(records):
            return np.zeros((len(records), len(ANSWER_TYPES)))
        return self.type_model_.expected(self._type_features(records) if features is None else features)

    def _fit_expected_types(self, records: Sequence[MrcQuestion], y: Sequence[Sequence[str]]) -> np.ndarray:
        """Fits type_model_ on the training questions with an answer (a gold one, or a plausible one as the
        ranker learns from), labelled with the type the tagger gives that answer, and returns every training
        question's expected types: held out (folds by passage) for those it learnt from, so that the ranker
        learns how far to trust them."""
        self.type_model_ = None
        answers = [self._ranked_answers(record, gold) for record, gold in zip(records, y)]
        labelled = [i for i, texts in enumerate(answers) if texts]
        if self.tagger_ is None:
            return self._expected(records)
        places = [records[i].context.find(answers[i][0]) for i in labelled]  # where answer_type looks
        entities = self._entities([records[i] for i in labelled],
                                  [[(start, start + len(answers[i][0]))] if start >= 0 else []
                                   for i, start in zip(labelled, places)])
        labels = [answer_type(records[i].context, answers[i][0], entities[records[i].context]) for i in labelled]
        if len(set(labels)) < 2:
            return self._expected(records)
        features = self._type_features(records)
        learnt_from = [features[i] for i in labelled]
        model = AnswerTypeModel(C=self.type_C)
        passages = [records[i].context for i in labelled]
        folds = min(self.calibration_folds, len(set(passages)))
        held_out = None
        if folds >= 2:
            held_out = cross_val_predict(model, learnt_from, labels, groups=passages,
                                         cv=GroupKFold(n_splits=folds), method="predict_proba")
        self.type_model_ = model.fit(learnt_from, labels)
        expected = self._expected(records, features)
        if held_out is not None:
            expected[labelled] = over_answer_types(held_out, sorted(set(labels)))
        return expected

    def fit(self, X: Sequence, y: Sequence[Sequence[str]]) -> "SpanRanker":
        """Learn to rank candidate spans of the passage against the question, and when to answer nothing.

        Parameters
        ----------
        X : sequence of MrcQuestion or dict
            Training questions, as records or dicts with 'context' and 'question'.
        y : sequence of sequence of str
            The gold answer texts of each question; empty for an unanswerable one.

        Returns
        -------
        self : SpanRanker
            The fitted model.
        """
        records = in_nfc(self._fit_records(X))
        y = [[nfc(answer) for answer in answers] for answers in y]
        self._prefetch_neighbours(analyze(r.question for r in records))
        self.tagger_ = self._fitted_tagger()
        self.retrieval_ = self._choose_retrieval(records, y)
        expected = self._fit_expected_types(records, y)
        rng = np.random.default_rng(self.random_state)
        # The questions that calibrate the no-answer decision and choose alpha, in folds by passage.
        chosen = np.arange(len(records))
        calibrates = self.abstain or self.alpha is None
        if calibrates and len(chosen) > self.max_calibration_questions:
            chosen = np.sort(rng.choice(chosen, self.max_calibration_questions, replace=False))
        calibrating = set(chosen.tolist()) if calibrates else set()
        # Views are built VIEW_CHUNK questions at a time, and only the ranker's rows of each chunk and the
        # calibration questions' views are kept: all views of the official train file at once take 5 GB.
        self.scaler_ = StandardScaler(with_mean=False)
        blocks, gold, kept = [], [], {}
        memoised = self._memoises(records)
        for first in range(0, len(records), VIEW_CHUNK):
            chunk = records[first:first + VIEW_CHUNK]
            views = self._views(chunk, memoised)
            entities = self._entities(chunk, [view.spans for view in views])
            rows = [self._rows(view, entities[r.context], expected[first + offset])
                    for offset, (view, r) in enumerate(zip(views, chunk))]
            positives = [self._positives(v, r.context, self._ranked_answers(r, answers))
                         for v, r, answers in zip(views, chunk, y[first:first + VIEW_CHUNK])]
            # Scaled, not centred: the rows stay sparse, and a shift would not change any ranking. (The zero
            # row keeps the scaler defined when no question has a candidate.)
            self.scaler_.partial_fit(sparse.vstack(rows + (
                [sparse.csr_matrix((1, len(_ALL_FEATURES)), dtype=np.float32)] if first == 0 else [])))
            stacked, chunk_gold = self._kept_rows(rows, positives)
            if stacked is not None:
                blocks.append(stacked)
                gold.extend(chunk_gold)
            for offset, (view, block, positive) in enumerate(zip(views, rows, positives)):
                if first + offset in calibrating:
                    # The rows hold the view's features: kept twice, they were what took the fit on the
                    # official train file's size over 4 GB.
                    kept[first + offset] = (replace(view, features=None), block, positive, expected[first + offset])
            del views, rows, positives  # before the next chunk's are built
        for block in blocks:  # in place: a scaled copy beside them would hold the rows twice
            self.scaler_.transform(block, copy=False)
        groups = [records[i].context for i in chosen]
        passages, splits = len(set(groups)), []
        if calibrates and passages >= 2:
            folds = GroupKFold(n_splits=min(self.calibration_folds, passages))
            splits = list(folds.split(chosen, groups=groups))
        elif self.abstain:
            raise ValueError("the no-answer decision learns from held-out passages: training needs questions "
                             "from at least 2 passages (or abstain=False)")
        self.alpha_, inner_rankers = self._choose_alpha(splits, chosen, kept)
        self.ranker_ = ListwiseRanker(alpha=self.alpha_, max_iter=self.max_iter).fit(blocks, gold)
        self.feature_names_ = _ALL_FEATURES
        del blocks
        self.decision_ = None
        if self.abstain:
            evidence, outcomes = self._held_out_evidence(records, y, chosen, kept, splits, inner_rankers)
            self.decision_ = AnswerDecision(folds=self.calibration_folds).fit(
                evidence, outcomes, groups=[records[i].context for i in chosen])
        return self

    def _choose_alpha(self, splits: list[tuple[np.ndarray, np.ndarray]], chosen: np.ndarray,
                      kept: dict[int, tuple]) -> tuple[float, list[ListwiseRanker]]:
        """The ranker's penalty, and the rankers that it gives on each split's training part (positions into
        `chosen`; `kept` holds the rows and gold marks by question index): `alpha`, or the value of
        RANKER_ALPHAS under which most held-out questions get a gold span first (the most penalised one on a
        tie, or when there is no split: it is the safest on little data). One split's rows at a time."""
        alphas = RANKER_ALPHAS if self.alpha is None else (self.alpha,)
        right = np.zeros(len(alphas), dtype=int)
        rankers: list[list[ListwiseRanker]] = [[] for _alpha in alphas]  # by alpha, then by split
        for inner_train, inner_test in splits:
            learnt = [(block, positive) for _view, block, positive, _expected in
                      (kept[chosen[i]] for i in inner_train) if self._learns_from(positive)]
            if not learnt:
                raise ValueError("no training question has its answer among the candidate spans")
            inner_rows = self._scaled_float64([block for block, _positive in learnt])
            inner_gold = [positive for _block, positive in learnt]
            tested = [(block, positive) for _view, block, positive, _expected in
                      (kept[chosen[i]] for i in inner_test) if positive.any()] if len(alphas) > 1 else []
            ranker = ListwiseRanker(max_iter=self.max_iter, warm_start=True)
            for index, alpha in enumerate(alphas):  # each fit starts from the more penalised one's weights
                ranker.set_params(alpha=alpha).fit(inner_rows, inner_gold)
                rankers[index].append(copy.deepcopy(ranker))  # this alpha's weights, before the next fit
                right[index] += sum(bool(positive[np.argmax(self._scores(block, ranker))])
                                    for block, positive in tested)
            del inner_rows
        best = int(np.argmax(right))  # the first of the most right
        return alphas[best], rankers[best]

    def _held_out_evidence(self, records, y, chosen: np.ndarray, kept: dict[int, tuple],
                           splits: list[tuple[np.ndarray, np.ndarray]], inner_rankers: list[ListwiseRanker]
                           ) -> tuple[list[tuple[str, np.ndarray]], list[tuple[int, float]]]:
        """What the no-answer decision learns from, for the chosen training questions in their order: each
        question's text and evidence, from the ranker fitted without its passage (`inner_rankers`, one per
        split of `splits`, as positions into `chosen`; `kept` holds the views, rows, gold marks and expected
        types by question index), and what became of its best span (outcome, ROUGE-W)."""
        evidence: list = [None] * len(chosen)
        outcomes: list = [None] * len(chosen)
        for (_inner_train, inner_test), ranker in zip(splits, inner_rankers):
            for position, i in zip(inner_test, chosen[inner_test]):
                view, block, positive, expected = kept[i]
                scores = self._scores(block, ranker)
                evidence[position] = (records[i].question, self._evidence(view, block, expected, scores))
                if not y[i]:
                    outcomes[position] = (UNANSWERABLE, 0.0)
                    continue
                best = int(np.argmax(scores)) if len(scores) else -1
                start, end = view.spans[best] if best >= 0 else (0, 0)
                outcomes[position] = (CORRECT if best >= 0 and positive[best] else WRONG,
                                      max(scoring.mrc_rouge_w(records[i].context[start:end], g) for g in y[i]))
        return evidence, outcomes

    def layout_mismatch(self) -> str | None:
        """What keeps this fitted reader from reading with this version's candidate features (another number
        or order of columns, or a reader saved before it recorded them); None when it can."""
        if not hasattr(self, "ranker_"):  # not fitted: nothing to compare
            return None
        fitted = getattr(self, "feature_names_", None)
        if fitted is None:
            return "this MRC reader was saved by a version that did not record its candidate features"
        if tuple(fitted) != _ALL_FEATURES:
            return (f"this MRC reader was fitted on {len(fitted)} candidate features, and this version builds "
                    f"{len(_ALL_FEATURES)}")
        return None

    def top_features(self, top_k: int = 10) -> dict[str, list[tuple[str, float]]]:
        """The span ranker's weights of largest size (on standardised features: a positive weight raises a
        candidate, a negative one lowers it), then the evidence that speaks most for answering and for declining,
        and with a tagger, the question features that speak most for each expected answer type."""
        check_is_fitted(self)
        sections = {"span ranker": strongest(_ALL_FEATURES, self.ranker_.coef_, top_k, both_signs=True)}
        if self.decision_ is not None:
            sections.update(self.decision_.top_features(EVIDENCE_NAMES, top_k))
        if self.type_model_ is not None:
            sections.update(self.type_model_.top_features(top_k))
        return sections

    def read(self, X: Sequence) -> list[Reading]:
        """Each question's best span, the reader's belief in it and whether it answers with it. The reader
        reads NFC; its spans (the best one, its offset, the n-best) are taken from each record's own context,
        whole syllables where that context is decomposed (NFD)."""
        originals = self._fitted_records(X)
        contexts = [nfc_text(record.context) for record in originals]
        records = in_nfc(originals)
        views = self._views(records, self._memoises(records))
        entities = self._entities(records, [view.spans for view in views])
        expected = self._expected(records)
        readings, evidence, scored = [], [], []
        for record, context, view, question_expected in zip(records, contexts, views, expected):
            expected_type = ANSWER_TYPES[int(np.argmax(question_expected))] if self.type_model_ is not None else None
            rows = self._rows(view, entities[record.context], question_expected)
            scores = self._scores(rows, self.ranker_)
            if not len(scores):
                readings.append(Reading("", 0, None, False, view.question_type, expected_type))
                continue
            start, end = context.original_span(*view.spans[int(np.argmax(scores))])
            alternatives = n_best([context.original[slice(*context.original_span(s, e))] for s, e in view.spans],
                                  scores)
            scored.append(len(readings))
            evidence.append((record.question, self._evidence(view, rows, question_expected, scores)))
            readings.append(Reading(context.original[start:end], start, None, True, view.question_type,
                                    expected_type, alternatives))
        if self.decision_ is not None and scored:
            beliefs = self.decision_.decision_function(evidence)
            answers = self.decision_.predict(evidence) if beliefs is None else beliefs > self.decision_.threshold_
            shown = beliefs if beliefs is not None else [None] * len(scored)
            for index, answered, belief in zip(scored, answers, shown):
                readings[index] = replace(readings[index], answered=bool(answered),
                                          belief=None if belief is None else float(belief))
        return readings

    def predict(self, X: Sequence) -> list[tuple[str, int]]:
        """The answer to each question, or none.

        Parameters
        ----------
        X : sequence of MrcQuestion or dict

        Returns
        -------
        list of (str, int)
            For each question, the answer text and its character offset in the context; ('', 0) where the reader
            abstains. ``read`` gives the whole reading (belief, question type, alternatives).
        """
        return [(r.best_span, r.best_start) if r.answered else ("", 0) for r in self.read(X)]


