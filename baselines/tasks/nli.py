"""NLI: does the premise entail, contradict or say nothing about the hypothesis."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.dummy import DummyClassifier
from sklearn.feature_extraction import DictVectorizer
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from baselines import hf, scoring
from baselines.dataio import guid_of, looks_like_jsonl, read_json, require, require_list
from baselines.estimators import TaskModel, plain_pair, records_from
from baselines.explain import LinearExplanation
from baselines.params import AT_LEAST_ONE, NGRAM_RANGE, NON_NEGATIVE, POSITIVE, SEED
from baselines.taskspec import (TaskSpec, align_predictions, check_gold_labels, check_labels, compare_labels,
                                jsonl_records, label_predictions)
from features.analysis import analyze
from features.morphemes import Analysis
from features.pairs import NEGATION_FORMS, QUANTITY_FORMS, TIME_FORMS, content_forms, overlap_features
from features.vectorize import MorphemeNgrams

LABELS = ("entailment", "neutral", "contradiction")


@dataclass
class NliExample:
    guid: str
    premise: str
    hypothesis: str
    label: str | None = None
    source: str | None = None


def load(path: Path) -> list[NliExample]:
    """An official NLI JSON file ('gold_label' optional for unlabelled input)."""
    return records_from_rows(require_list(read_json(path), path), path)


def records_from_rows(rows: list, path: Path) -> list[NliExample]:
    """Records of rows in the official layout."""
    records = []
    for index, row in enumerate(rows):
        where = guid_of(row, index)
        records.append(NliExample(
            guid=require(row, "guid", str, path, where),
            premise=require(row, "premise", str, path, where),
            hypothesis=require(row, "hypothesis", str, path, where),
            label=row.get("gold_label"), source=row.get("source"),
        ))
    check_gold_labels(path, records, LABELS)
    return records


def from_hf(rows: list[dict], path: Path) -> list[NliExample]:
    """Rows of the Hugging Face klue 'nli' schema: 'label' is a ClassLabel index (entailment, contradiction,
    neutral: not this project's order) where the official file has 'gold_label'."""
    return records_from_rows(hf.rows_with_label_names("nli", rows, path, "gold_label"), path)


def load_input(path: Path) -> list[NliExample]:
    """Official JSON, or JSONL with 'premise' and 'hypothesis' per line."""
    if not looks_like_jsonl(path):
        return load(path)
    return jsonl_records(path, lambda row, guid, where: NliExample(
        guid, require(row, "premise", str, path, where), require(row, "hypothesis", str, path, where)))


def as_records(X: Sequence) -> list[NliExample]:
    """NliExample records, or plain (premise, hypothesis) pairs."""
    return records_from(X, NliExample, lambda item, guid, where: NliExample(guid, *plain_pair(item, where)))


def plain_inputs(records: Sequence[NliExample]) -> list[tuple[str, str]]:
    """(premise, hypothesis) pairs."""
    return [(record.premise, record.hypothesis) for record in records]


def headline(records: Sequence[NliExample], y: Sequence[str], predicted: Sequence[str]) -> float:
    return scoring.score_nli([str(label) for label in y], [str(label) for label in predicted])["accuracy"]


def targets(records: Sequence[NliExample]) -> list[str]:
    return [record.label for record in records]


def score(records: Sequence[NliExample], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    predicted = check_labels(align_predictions(records, predictions, lambda r: r.guid), "label", LABELS)
    return scoring.score_nli(targets(records), predicted)



def cross_tokens(premise: Analysis, hypothesis: Analysis, max_pairs: int = 40) -> dict[str, float]:
    """Sparse indicator features of what the hypothesis adds: its content morphemes absent from the premise,
    the premise's absent from it, the cue words on each side, and pairs of added x dropped morphemes
    (a learnt lexicon of substitutions such as 가능/금지)."""
    premise_set, hypothesis_set = set(content_forms(premise)), set(content_forms(hypothesis))
    added, dropped = sorted(hypothesis_set - premise_set), sorted(premise_set - hypothesis_set)
    features = {f"added={t}": 1.0 for t in added}
    features.update({f"dropped={t}": 1.0 for t in dropped})
    cue_forms = NEGATION_FORMS | QUANTITY_FORMS | TIME_FORMS
    features.update({f"premise_cue={t}": 1.0 for t in set(premise.forms) & cue_forms})
    features.update({f"hypothesis_cue={t}": 1.0 for t in set(hypothesis.forms) & cue_forms})
    pairs = [f"swap={a}|{b}" for a in added for b in dropped][:max_pairs]
    features.update({pair: 1.0 for pair in pairs})
    return features


class MostFrequentInference(TaskModel, DummyClassifier):
    """The trivial floor: the most frequent label of the training pairs (scikit-learn's DummyClassifier, with
    plain pairs and accuracy as its score)."""

    _to_records = staticmethod(as_records)
    _headline = staticmethod(headline)
    _analyses_text = False


def most_frequent_label(random_state: int = 0, resources: dict | None = None) -> MostFrequentInference:
    return MostFrequentInference(strategy="prior", random_state=random_state)


class InferenceClassifier(TaskModel, LinearExplanation, ClassifierMixin, BaseEstimator):
    """TF-IDF of premise and of hypothesis (morpheme n-grams) plus cross-sentence features (what the
    hypothesis adds or drops, substitution pairs, overlap ratios, negation/quantity/time/number cues)
    -> multinomial logistic regression.

    Parameters
    ----------
    C : float
        Inverse L2 strength of the logistic regression.
    ngram_range : (int, int)
        Morpheme n-gram range of the premise and hypothesis TF-IDF views.
    min_df : int
        A feature must occur in this many training sentences.
    cross_weight : float
        Scale of the cross-sentence features against the TF-IDF columns.
    max_iter : int
    random_state : int

    Attributes
    ----------
    premise_vectorizer_, hypothesis_vectorizer_ : TfidfVectorizer
    cross_vectorizer_ : DictVectorizer
        The cross-sentence indicators.
    classifier_ : LogisticRegression
    classes_ : ndarray of str

    X is a sequence of NliExample records or of plain (premise, hypothesis) pairs.
    """

    _to_records = staticmethod(as_records)
    _headline = staticmethod(headline)

    _parameter_constraints = {
        "C": [POSITIVE], "ngram_range": [NGRAM_RANGE], "min_df": [AT_LEAST_ONE], "cross_weight": [NON_NEGATIVE],
        "max_iter": [AT_LEAST_ONE], "random_state": [SEED],
    }

    def __init__(self, C: float = 1.0, ngram_range: tuple[int, int] = (1, 2), min_df: int = 2,
                 cross_weight: float = 1.0, max_iter: int = 500, random_state: int = 0):
        self.C = C
        self.ngram_range = ngram_range
        self.min_df = min_df
        self.cross_weight = cross_weight
        self.max_iter = max_iter
        self.random_state = random_state

    def _analyses(self, records: Sequence[NliExample]):
        analyses = analyze([t for r in records for t in (r.premise, r.hypothesis)])
        return analyses[0::2], analyses[1::2]

    def _matrix(self, records: Sequence[NliExample], fit: bool) -> sparse.csr_matrix:
        premises, hypotheses = self._analyses(records)
        cross = [{**cross_tokens(p, h), **overlap_features(p, h)} for p, h in zip(premises, hypotheses)]
        if fit:
            self.premise_vectorizer_ = TfidfVectorizer(analyzer=MorphemeNgrams(self.ngram_range), min_df=self.min_df,
                                                       sublinear_tf=True)
            self.hypothesis_vectorizer_ = TfidfVectorizer(analyzer=MorphemeNgrams(self.ngram_range),
                                                          min_df=self.min_df, sublinear_tf=True)
            self.cross_vectorizer_ = DictVectorizer()
            parts = [self.premise_vectorizer_.fit_transform(premises),
                     self.hypothesis_vectorizer_.fit_transform(hypotheses),
                     self.cross_vectorizer_.fit_transform(cross)]
        else:
            parts = [self.premise_vectorizer_.transform(premises), self.hypothesis_vectorizer_.transform(hypotheses),
                     self.cross_vectorizer_.transform(cross)]
        parts[2] = parts[2] * self.cross_weight
        return sparse.hstack(parts, format="csr")

    def fit(self, X: Sequence, y: Sequence[str]) -> "InferenceClassifier":
        features = self._matrix(self._fit_records(X), fit=True)
        self.classifier_ = LogisticRegression(C=self.C, max_iter=self.max_iter, random_state=self.random_state)
        self.classifier_.fit(features, np.asarray(y))
        self.classes_ = self.classifier_.classes_
        return self

    def _explained_names(self) -> list[str]:
        return ([f"premise__{name}" for name in self.premise_vectorizer_.get_feature_names_out()]
                + [f"hypothesis__{name}" for name in self.hypothesis_vectorizer_.get_feature_names_out()]
                + [f"pair__{name}" for name in self.cross_vectorizer_.get_feature_names_out()])

    def _explained_matrix(self, records: Sequence[NliExample]) -> sparse.csr_matrix:
        return self._matrix(records, fit=False)

    def predict_proba(self, X: Sequence) -> np.ndarray:
        records = self._fitted_records(X)
        return self.classifier_.predict_proba(self._matrix(records, fit=False))

    def predict(self, X: Sequence) -> np.ndarray:
        probabilities = self.predict_proba(X)
        return self.classes_[probabilities.argmax(axis=1)]


def inference_classifier(random_state: int = 0, resources: dict | None = None) -> InferenceClassifier:
    return InferenceClassifier(random_state=random_state)


def compare(records: Sequence, aligned: Sequence[dict]):
    return compare_labels(aligned, targets(records), "sentence pair")


TASK = TaskSpec(
    code="nli", title="NLI natural language inference", folder="klue-nli-v1.1",
    train_file="klue-nli-v1.1_train.json", dev_file="klue-nli-v1.1_dev.json",
    texts=lambda records: [t for r in records for t in (r.premise, r.hypothesis)],
    load=load, from_hf=from_hf,
    load_input=load_input,
    as_records=as_records, plain_inputs=plain_inputs, targets=targets,
    models={"tfidf-lr": inference_classifier, "trivial": most_frequent_label}, default_model="tfidf-lr",
    predict=label_predictions, score=score, headline=("accuracy",),
    prediction_example='{"guid": "klue-nli-v1_dev_00000", "label": "contradiction"}',
    compare=compare,
)
