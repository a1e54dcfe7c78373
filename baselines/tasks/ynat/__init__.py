"""YNAT: topic classification of Yonhap news headlines (title only, as in the official setup)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import FeatureUnion

from baselines.display import html
from baselines.models.linear import OrderedLogisticRegression
from baselines.data import hf
from baselines.metrics import scoring, tallies
from baselines.data.fileio import guid_of, looks_like_jsonl, read_json, require, require_list
from baselines.models.estimators import FloorClassifier, TaskModel, plain_text, records_from
from baselines.models.explain import LinearExplanation
from baselines.models.params import ITERATIONS, MIN_COUNT, NEIGHBOURS, NGRAM_RANGE, POSITIVE, SEED, StrOptions
from baselines.data import grown
from baselines.taskspec import (Reading, Modelling, Scoring, Presentation, Benchmarks, Probe, length_in_words,
                                TFIDF_PARTS, ModelEntry, TaskSpec, align_predictions, check_gold_labels, check_labels,
                                compare_labels, jsonl_records, label_predictions)
from features.analysis import analyze
from features.normalize import nfc_fields
from features.vectorize import CharacterNgrams, MorphemeNeighbours, MorphemeNgrams, prefetch_neighbours

LABELS = ("IT과학", "경제", "사회", "생활문화", "세계", "스포츠", "정치")


@dataclass
class YnatExample:
    guid: str
    title: str
    label: str | None = None
    url: str | None = None
    date: str | None = None


def load(path: Path) -> list[YnatExample]:
    """An official YNAT JSON file (url and date optional; label optional for unlabelled input)."""
    return records_from_rows(require_list(read_json(path), path), path)


def records_from_rows(rows: list, path: Path) -> list[YnatExample]:
    """Records of rows in the official layout."""
    records = []
    for index, row in enumerate(rows):
        where = guid_of(row, index)
        records.append(YnatExample(
            guid=require(row, "guid", str, path, where),
            title=require(row, "title", str, path, where),
            label=row.get("label"), url=row.get("url"), date=row.get("date"),
        ))
    check_gold_labels(path, records, LABELS)
    return records


def from_hf(rows: list[dict], path: Path) -> list[YnatExample]:
    """Rows of the Hugging Face klue 'ynat' schema (label: a ClassLabel index)."""
    return records_from_rows(hf.rows_with_label_names("ynat", rows, path), path)


def load_input(path: Path) -> list[YnatExample]:
    """Official JSON, or JSONL with a 'title' per line (and optionally 'guid')."""
    if not looks_like_jsonl(path):
        return load(path)
    return jsonl_records(path, lambda row, guid, where: YnatExample(guid, require(row, "title", str, path, where)))


def as_records(X: Sequence) -> list[YnatExample]:
    """YnatExample records, or plain titles (str)."""
    return records_from(X, YnatExample, lambda item, guid, where: YnatExample(guid, plain_text(item, where)))


def in_nfc(records: Sequence[YnatExample]) -> list[YnatExample]:
    """The records with their titles in NFC (see features.normalize)."""
    return [nfc_fields(record, "title") for record in records]


def plain_inputs(records: Sequence[YnatExample]) -> list[str]:
    """The titles: what a user hands a model in a notebook."""
    return [record.title for record in records]


def headline(records: Sequence[YnatExample], y: Sequence[str], predicted: Sequence[str]) -> float:
    return scoring.score_ynat([str(label) for label in y], [str(label) for label in predicted])["macro_f1"]


def targets(records: Sequence[YnatExample]) -> list[str]:
    return [record.label for record in records]


def scored_labels(records: Sequence[YnatExample], predictions: Sequence[dict]) -> tuple[list[str], list[str]]:
    """Gold and predicted topics in record order, the predictions checked."""
    return targets(records), check_labels(align_predictions(records, predictions), "label", LABELS)


def score(records: Sequence[YnatExample], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    return scoring.score_ynat(*scored_labels(records, predictions))


def tally(records: Sequence[YnatExample], predictions: Sequence[dict], resources: dict) -> tallies.Tally:
    return tallies.tally_ynat(*scored_labels(records, predictions))


class MostFrequentTopic(FloorClassifier):
    """The trivial floor: the most frequent topic of the training titles (scikit-learn's DummyClassifier,
    with plain titles and macro F1 as its score)."""

    _to_records = staticmethod(as_records)
    _headline = staticmethod(headline)
    _analyses_text = False



class TopicClassifier(TaskModel, LinearExplanation, ClassifierMixin, BaseEstimator):
    """TF-IDF over Kiwi morpheme n-grams, character n-grams and the morphemes' nearest neighbours in Kiwi's
    language model -> logistic regression.

    Parameters
    ----------
    C : float
        Inverse L2 strength of the logistic regression.
    morpheme_ngrams, char_ngrams : (int, int)
        n-gram ranges of the morpheme ('form/TAG') and character TF-IDF views; None leaves that view out (not
        both).
    neighbours : int
        Nearest morphemes in Kiwi's CoNg language model added per content morpheme; 0 leaves them out. With
        neither morphemes nor neighbours the model runs no Kiwi at all (the fast setting).
    min_df : int
        A feature must occur in this many training titles.
    class_weight : 'balanced' or None
    max_iter : int
        Iterations of the logistic regression's solver.
    random_state : int

    Attributes
    ----------
    vectorizer_ : FeatureUnion
        The fitted TF-IDF views.
    classifier_ : OrderedLogisticRegression
    classes_ : ndarray of str
        The topics, in the order of predict_proba's columns.

    X is a sequence of YnatExample records or of plain titles (str).
    """

    _to_records = staticmethod(as_records)
    _in_nfc = staticmethod(in_nfc)
    _headline = staticmethod(headline)

    _parameter_constraints = {
        "C": [POSITIVE], "morpheme_ngrams": [NGRAM_RANGE, None], "char_ngrams": [NGRAM_RANGE, None],
        "neighbours": [NEIGHBOURS], "min_df": [MIN_COUNT], "class_weight": [StrOptions({"balanced"}), None],
        "max_iter": [ITERATIONS], "random_state": [SEED],
    }

    def __init__(self, *, C: float = 1.0, morpheme_ngrams: tuple[int, int] = (1, 2),
                 char_ngrams: tuple[int, int] = (1, 3), neighbours: int = 20, min_df: int = 2,
                 class_weight: str | None = None, max_iter: int = 300, random_state: int = 0):
        self.C = C
        self.morpheme_ngrams = morpheme_ngrams
        self.char_ngrams = char_ngrams
        self.neighbours = neighbours
        self.min_df = min_df
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.random_state = random_state

    def _features(self) -> FeatureUnion:
        if not (self.morpheme_ngrams or self.char_ngrams or self.neighbours):
            raise ValueError("TopicClassifier needs a view: morpheme_ngrams, char_ngrams or neighbours")
        parts = []
        if self.morpheme_ngrams:
            parts.append(("morphemes", TfidfVectorizer(analyzer=MorphemeNgrams(self.morpheme_ngrams),
                                                       min_df=self.min_df, sublinear_tf=True)))
        if self.char_ngrams:
            parts.append(("characters", TfidfVectorizer(analyzer=CharacterNgrams(self.char_ngrams),
                                                        min_df=self.min_df, sublinear_tf=True)))
        if self.neighbours:
            parts.append(("neighbours", TfidfVectorizer(analyzer=MorphemeNeighbours(self.neighbours),
                                                        min_df=self.min_df, sublinear_tf=True)))
        return FeatureUnion(parts)

    def uses_morpheme_analysis(self) -> bool:
        return bool(self.morpheme_ngrams or self.neighbours)

    def _analyses(self, records: Sequence[YnatExample]) -> list:
        """Kiwi's analyses of the titles, or the titles themselves when no view reads morphemes."""
        if not self.uses_morpheme_analysis():
            return [r.title for r in records]
        analyses = analyze(r.title for r in records)
        if self.neighbours:
            prefetch_neighbours(analyses, self.neighbours)
        return analyses

    def fit(self, X: Sequence, y: Sequence[str]) -> "TopicClassifier":
        """Learn the topic of a title from the TF-IDF of its morphemes, characters and neighbours.

        Parameters
        ----------
        X : sequence of YnatExample or str
            Training titles, as records or plain strings.
        y : sequence of str
            The topic of each title, one of the seven YNAT labels.

        Returns
        -------
        self : TopicClassifier
            The fitted model.
        """
        records = self._fit_records(X)
        self._check_min_df(records, "titles")
        self.vectorizer_ = self._features()
        features = self.vectorizer_.fit_transform(self._analyses(records))
        self.classifier_ = OrderedLogisticRegression(C=self.C, max_iter=self.max_iter, class_weight=self.class_weight)
        self.classifier_.fit(features, np.asarray(y))
        self.classes_ = self.classifier_.classes_
        return self

    def _explained_names(self) -> np.ndarray:
        return self.vectorizer_.get_feature_names_out()

    def _explained_matrix(self, records: Sequence[YnatExample]):
        return self.vectorizer_.transform(self._analyses(records))

    def predict_proba(self, X: Sequence) -> np.ndarray:
        """Probability of each topic for each title.

        Parameters
        ----------
        X : sequence of YnatExample or str

        Returns
        -------
        ndarray of shape (n_titles, n_classes)
            Columns in the order of ``classes_``.
        """
        records = self._fitted_records(X)  # first: NotFittedError before any fitted attribute is touched
        return self.classifier_.predict_proba(self._explained_matrix(records))

    def predict(self, X: Sequence) -> np.ndarray:
        """The most probable topic of each title.

        Parameters
        ----------
        X : sequence of YnatExample or str

        Returns
        -------
        ndarray of shape (n_titles,)
            One label of ``classes_`` per title.
        """
        probabilities = self.predict_proba(X)
        return self.classes_[probabilities.argmax(axis=1)]



def compare(records: Sequence, aligned: Sequence[dict]):
    return compare_labels(aligned, targets(records), "title", LABELS)


PROBE_CHARACTERS = 4  # the "few characters" of a title that the first- and last-characters probes see


def title_start(records: Sequence[YnatExample]) -> list[YnatExample]:
    return [replace(record, title=record.title[:PROBE_CHARACTERS]) for record in records]


def title_end(records: Sequence[YnatExample]) -> list[YnatExample]:
    return [replace(record, title=record.title[-PROBE_CHARACTERS:]) for record in records]


def title_length(records: Sequence[YnatExample]) -> list[YnatExample]:
    return [replace(record, title=length_in_words(record.title)) for record in records]


PROBES = (
    Probe("first characters", f"the title's first {PROBE_CHARACTERS} characters", title_start),
    Probe("last characters", f"the title's last {PROBE_CHARACTERS} characters", title_end),
    Probe("title length", "the title's length alone (a title of 17 characters made '17자')", title_length),
)


TASK = TaskSpec(
    code="ynat",
    title="YNAT topic classification",
    folder="ynat-v1.1",
    train_file="ynat-v1.1_train.json",
    dev_file="ynat-v1.1_dev.json",
    reading=Reading(
        texts=lambda records: [r.title for r in records],
        load=load,
        from_hf=from_hf,
        load_input=load_input,
        as_records=as_records,
        plain_inputs=plain_inputs,
    ),
    modelling=Modelling(
        targets=targets,
        models={"tfidf-lr": ModelEntry(TopicClassifier),
                # No Kiwi: character n-grams alone; the range and C best by 3-fold CV on the training titles, and the
                # fewest iterations within the spread between its folds (results/tuning/ynat-fast*.json).
                "fast": ModelEntry(TopicClassifier, {"morpheme_ngrams": None, "neighbours": 0, "char_ngrams": (2, 4),
                                                     "C": 2.0, "max_iter": 100}),
                "trivial": ModelEntry(MostFrequentTopic, {"strategy": "prior"})},
        default_model="tfidf-lr",
        predict=label_predictions,
        saved_types=(TopicClassifier, MostFrequentTopic, OrderedLogisticRegression, FeatureUnion, *TFIDF_PARTS,
                     CharacterNgrams, MorphemeNgrams, MorphemeNeighbours),
    ),
    scoring=Scoring(
        score=score,
        tally=tally,
        breakdown="class_f1",
        headline=("macro_f1",),
        prediction_example='{"guid": "ynat-v1_dev_00000", "label": "사회"}',
        compare=compare,
        trainer_score=scoring.score_ynat,
    ),
    presentation=Presentation(drawer=html.draw_labelled),
    benchmarks=Benchmarks(grow=grown.repeated, peer="fasttext", peer_text=lambda record: record.title,
                          doctor_fits_default=True, probes=PROBES),
)
