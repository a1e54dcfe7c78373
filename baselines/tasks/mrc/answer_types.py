"""MRC answer typing: passages tagged by an NER tagger (the reader's `tagger`), and the type of answer a question
expects (AnswerTypeModel)."""
from __future__ import annotations

import weakref
from bisect import bisect_right
from typing import Any, Iterable, Sequence

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_extraction import DictVectorizer
from sklearn.pipeline import make_pipeline
from sklearn.utils.validation import check_is_fitted

from baselines.models.explain import linear_top_features
from baselines.models.linear import OrderedLogisticRegression
from baselines.models.params import POSITIVE, check_hyper_parameters
from baselines.metrics.scoring import iob2_entities
from baselines.tasks.mrc.candidates import FEATURE_INDEX, NEXT_KINDS, SPAN_KINDS, WH_WORDS, question_type
from baselines.tasks.mrc.passages import sentence_ids
from features.analysis import analyze
from features.morphemes import Analysis

ENTITY_TYPES = ("PS", "LC", "OG", "DT", "TI", "QT")  # KLUE-NER's six
ANSWER_TYPES = ENTITY_TYPES + ("O",)  # 'O': the answer is not (mostly) a tagged entity
NONE = -1  # a span that no entity matches

# What a span is and what follows it (columns of the view's features), to cross with the expected type.
SHAPE_NAMES = tuple(f"span_{kind}" for kind in SPAN_KINDS) + tuple(f"next_{kind}" for kind in NEXT_KINDS)
SHAPE_COLUMNS = [FEATURE_INDEX[name] for name in SHAPE_NAMES]
TYPED_FEATURE_NAMES = (
    tuple(f"entity_{kind}" for kind in ENTITY_TYPES)
    + tuple(f"expected_{kind}*entity_{kind}" for kind in ENTITY_TYPES)
    + tuple(f"expected_{kind}*inside_{kind}" for kind in ENTITY_TYPES)
    + ("expected_O*not_entity", "type_agreement")
    + tuple(f"expected_{kind}*{shape}" for kind in ANSWER_TYPES for shape in SHAPE_NAMES)
)

def sentence_bounds(analysis: Analysis) -> list[tuple[int, int]]:
    """The (start, end) characters of each sentence of a passage (sentence_ids), in order."""
    bounds: dict[int, list[int]] = {}
    for index, sentence in enumerate(sentence_ids(analysis)):
        low_high = bounds.setdefault(sentence, [analysis.starts[index], analysis.ends[index]])
        low_high[1] = max(low_high[1], analysis.ends[index])
    return [(low, high) for low, high in bounds.values()]


def sentences_over(bounds: Sequence[tuple[int, int]], ranges: Iterable[tuple[int, int]]) -> set[int]:
    """The sentences (indices into `bounds`) that share a character with one of the (start, end) ranges."""
    lows = [low for low, _high in bounds]
    found = set()
    for start, end in ranges:
        index = max(bisect_right(lows, start) - 1, 0)
        while index < len(bounds) and bounds[index][0] < end:
            if bounds[index][1] > start:
                found.add(index)
            index += 1
    return found


class PassageEntities:
    """The entities a tagger finds in passages, tagged sentence by sentence (the tagger learnt from
    sentences) and only in the sentences asked for: a question's candidates come from its few best
    sentences, and tagging every sentence of every passage took half a minute of a cross-fit on the partial
    dev file. An entity is (start, end, type) in characters of its passage, the spaces at its edges left out."""

    def __init__(self, tagger: Any):
        self.tagger = tagger
        self._bounds: dict[str, list[tuple[int, int]]] = {}
        self._found: dict[str, dict[int, tuple[tuple[int, int, str], ...]]] = {}

    def entities(self, wanted: dict[str, Iterable[tuple[int, int]]]) -> dict[str, tuple[tuple[int, int, str], ...]]:
        """For each passage, the sorted entities of every sentence tagged so far, which include the sentences
        that its wanted (start, end) character ranges touch."""
        new = [context for context in wanted if context not in self._bounds]
        for context, analysis in zip(new, analyze(new)):
            self._bounds[context] = sentence_bounds(analysis)
            self._found[context] = {}
        pieces, owners = [], []
        for context, ranges in wanted.items():
            for sentence in sorted(sentences_over(self._bounds[context], ranges) - self._found[context].keys()):
                low, high = self._bounds[context][sentence]
                pieces.append(context[low:high])
                owners.append((context, sentence, low))
        tagged = self.tagger.predict(pieces) if pieces else []  # IOB2 tags, one per character of each piece
        for (context, sentence, offset), piece, tags in zip(owners, pieces, tagged):
            found = []
            for kind, low, high in iob2_entities(tags):
                text = piece[low:high]
                start = offset + low + (len(text) - len(text.lstrip()))
                end = offset + high - (len(text) - len(text.rstrip()))
                if start < end:
                    found.append((start, end, kind))
            self._found[context][sentence] = tuple(found)
        return {context: tuple(sorted(entity for sentence in self._found[context].values() for entity in sentence))
                for context in wanted}


# The entities each tagger has found, by tagger: a cache of this process, outside the readers (a reader that is
# saved, copied or cloned for a fold takes none with it), dropped with its tagger.
_PASSAGE_ENTITIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def passage_entities(tagger: Any) -> PassageEntities:
    """The PassageEntities of `tagger` in this process: each sentence is tagged once however many readers and
    folds share the tagger (a FrozenEstimator does, in every fold of a cross-fit)."""
    if tagger not in _PASSAGE_ENTITIES:
        _PASSAGE_ENTITIES[tagger] = PassageEntities(tagger)
    return _PASSAGE_ENTITIES[tagger]


class AnswerTypeModel(ClassifierMixin, BaseEstimator):
    """The type of answer a question expects (one of ANSWER_TYPES), from what its words say of it
    (question_type_features): a logistic regression, trained on the types that the tagger gives the training
    questions' answers.

    Parameters
    ----------
    C : float
        Inverse L2 penalty of the logistic regression.

    Attributes
    ----------
    classes_ : ndarray of str
        The answer types seen in training (a subset of ANSWER_TYPES).
    pipeline_ : Pipeline
        DictVectorizer, then OrderedLogisticRegression.
    """

    _parameter_constraints = {"C": [POSITIVE]}

    def __init__(self, *, C: float = 1.0):
        self.C = C

    def fit(self, X: Sequence[dict[str, float]], y: Sequence[str]) -> "AnswerTypeModel":
        """Learn the expected type from the question's features.

        Parameters
        ----------
        X : sequence of dict
            question_type_features of each training question.
        y : sequence of str
            The type of each question's answer (answer_type), two or more of them.

        Returns
        -------
        self : AnswerTypeModel
        """
        check_hyper_parameters(self)
        self.pipeline_ = make_pipeline(DictVectorizer(), OrderedLogisticRegression(C=self.C, max_iter=1000))
        self.pipeline_.fit(X, y)
        self.classes_ = self.pipeline_.classes_
        return self

    def predict_proba(self, X: Sequence[dict[str, float]]) -> np.ndarray:
        """The probability of each type in classes_.

        Parameters
        ----------
        X : sequence of dict
            question_type_features of each question.

        Returns
        -------
        ndarray of shape (n_questions, n_classes)
        """
        check_is_fitted(self)
        return self.pipeline_.predict_proba(X)

    def predict(self, X: Sequence[dict[str, float]]) -> np.ndarray:
        """The most probable type of each question.

        Parameters
        ----------
        X : sequence of dict

        Returns
        -------
        ndarray of shape (n_questions,)
        """
        probabilities = self.predict_proba(X)  # NotFittedError first
        return self.classes_[probabilities.argmax(axis=1)]

    def top_features(self, top_k: int = 10) -> dict[str, list[tuple[str, float]]]:
        """Per answer type, the question features that speak most for it."""
        check_is_fitted(self)
        return linear_top_features(self.pipeline_[0].get_feature_names_out(), self.pipeline_[-1], top_k,
                                   prefix="answer type ")

    def expected(self, X: Sequence[dict[str, float]]) -> np.ndarray:
        """predict_proba as columns of ANSWER_TYPES, what the reader's typed features read."""
        return over_answer_types(self.predict_proba(X), self.classes_)


def over_answer_types(probabilities: np.ndarray, classes: Sequence[str]) -> np.ndarray:
    """Probabilities over `classes` as columns of ANSWER_TYPES (0 for a type the classes lack)."""
    spread = np.zeros((len(probabilities), len(ANSWER_TYPES)))
    spread[:, [ANSWER_TYPES.index(kind) for kind in classes]] = probabilities
    return spread


def span_types(spans: Sequence[tuple[int, int]], entities: Sequence[tuple[int, int, str]]
               ) -> tuple[np.ndarray, np.ndarray]:
    """For each span, the type index (in ENTITY_TYPES) of the entity it is exactly, and of the entity it
    overlaps most otherwise; NONE where there is none."""
    exact = np.full(len(spans), NONE, dtype=np.int8)
    inside = np.full(len(spans), NONE, dtype=np.int8)
    by_bounds = {(start, end): ENTITY_TYPES.index(kind) for start, end, kind in entities}
    ends = [end for _start, end, _kind in entities]  # the tagger's entities do not overlap: ends are sorted too
    for index, (start, end) in enumerate(spans):
        if (start, end) in by_bounds:
            exact[index] = by_bounds[(start, end)]
            continue
        overlaps = _overlaps(start, end, entities, ends)
        if overlaps:
            inside[index] = ENTITY_TYPES.index(max(overlaps)[1])
    return exact, inside


def _overlaps(start: int, end: int, entities: Sequence[tuple[int, int, str]], ends: Sequence[int]
              ) -> list[tuple[int, str]]:
    """(characters in common, type) of each entity that overlaps start..end."""
    found = []
    for e_start, e_end, kind in entities[bisect_right(ends, start):]:
        if e_start >= end:
            break
        found.append((min(end, e_end) - max(start, e_start), kind))
    return found


def answer_type(context: str, answer: str, entities: Sequence[tuple[int, int, str]]) -> str:
    """The type the tagger gives a gold answer (at its first place in the passage): that of the entity that
    covers most of it, when that is at least half of it; else 'O'."""
    start = context.find(answer)
    if start < 0 or not answer:
        return "O"
    overlaps = _overlaps(start, start + len(answer), entities, [end for _start, end, _kind in entities])
    if overlaps and 2 * max(overlaps)[0] >= len(answer.strip()):
        return max(overlaps)[1]
    return "O"


def question_type_features(question: Analysis, related: dict[str, dict[str, float]]) -> dict[str, float]:
    """What tells the type of answer a question expects: its wh-word and the particle after it, the noun it
    asks about (the focus) with its nearest words in Kiwi's language model, the rule-based question type,
    its nouns and its last morphemes. KLUE questions are mostly '...의 X는?', without a wh-word, so the
    focus noun carries most of it."""
    rule, focus, particle = question_type(question)
    features = {f"rule={rule}": 1.0}
    wh = next((form for form in question.forms if form in WH_WORDS), None)
    if wh is not None:
        features[f"wh={wh}"] = 1.0
        features[f"wh={wh}|{particle}"] = 1.0
    if focus is not None:
        features[f"focus={focus}"] = 1.0
        for near, cosine in related.get(focus.lower(), {}).items():
            features[f"near_focus={near}"] = cosine
    for form, tag in zip(question.forms, question.sejong_tags):
        if tag in ("NNG", "NNP", "NNB", "NR", "SN"):
            features[f"noun={form if tag != 'SN' else '<number>'}"] = 1.0
    words = [(form, tag) for form, tag in zip(question.forms, question.sejong_tags) if not tag.startswith("S")]
    for position, (form, tag) in enumerate(words[-3:]):
        features[f"last{position - min(len(words), 3)}={form}/{tag}"] = 1.0
    return features


def typed_features(exact: np.ndarray, inside: np.ndarray, expected: np.ndarray, shapes: sparse.csr_matrix
                   ) -> sparse.csr_matrix:
    """Each span's rows of TYPED_FEATURE_NAMES: which entity it is, how well its type agrees with the
    expected answer type's probabilities `expected` (over ANSWER_TYPES), and its `shapes` (the SHAPE_COLUMNS
    of its features: a number, a proper noun, followed by a subject particle ...) weighed by each expected
    type: a descriptive answer ('O') is more often a common noun phrase than a date is."""
    count, kinds = len(exact), len(ENTITY_TYPES)
    block = np.zeros((count, 3 * kinds + 2), dtype=np.float32)
    rows = np.arange(count)
    is_exact, is_inside = exact != NONE, inside != NONE
    block[rows[is_exact], exact[is_exact]] = 1.0
    block[rows[is_exact], kinds + exact[is_exact]] = expected[exact[is_exact]]
    block[rows[is_inside], 2 * kinds + inside[is_inside]] = expected[inside[is_inside]]
    block[~is_exact, 3 * kinds] = expected[ANSWER_TYPES.index("O")]
    block[:, 3 * kinds + 1] = np.where(is_exact, expected[np.where(is_exact, exact, 0)],
                                       expected[ANSWER_TYPES.index("O")])
    # A type the question cannot expect (probability 0, as every type without a type classifier) adds no
    # entries, not explicit zeros: the official train file's rows would grow by 7 copies of their shapes.
    crosses = [shapes * probability if probability else sparse.csr_matrix(shapes.shape, dtype=np.float32)
               for probability in expected]
    return sparse.hstack([sparse.csr_matrix(block)] + crosses, format="csr")
