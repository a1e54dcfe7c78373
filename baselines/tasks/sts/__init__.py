"""STS: semantic similarity of a sentence pair on a 0-5 scale (binary 'similar' at >= 3)."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from numbers import Integral
from pathlib import Path
from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.decomposition import TruncatedSVD
from sklearn.dummy import DummyRegressor
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import f1_score
from sklearn.model_selection import KFold, cross_val_predict
from sklearn.preprocessing import normalize

from baselines.display import html
from baselines.metrics import scoring, tallies
from baselines.data.fileio import DataError, InputWarning, guid_of, looks_like_jsonl, read_json, require, require_list
from baselines.models.estimators import FloorInputs, TaskModel, plain_pair, records_from
from baselines.models.params import FOLDS_OR_OFF, ITERATIONS, NGRAM_RANGE, POSITIVE, SEED, Interval
from baselines.errors import caller_stacklevel
from baselines.metrics.teaching import Comparison
from baselines.data import grown
from baselines.taskspec import (Reading, Modelling, Scoring, Presentation, Benchmarks, Probe, HIDDEN_TEXT,
                                length_in_words, HIST_GRADIENT_BOOSTING_PARTS, TFIDF_PARTS, ModelEntry, TaskSpec,
                                align_predictions, check_numbers, jsonl_records)
from features.analysis import analyze
from features.normalize import nfc_fields
from features.pairs import EMBEDDING_FEATURES, embedding_alignment, overlap_features
from features.vectorize import CharacterNgrams, MorphemeNgrams


@dataclass
class StsExample:
    guid: str
    sentence1: str
    sentence2: str
    score: float | None = None  # the unrounded 'real-label' that the official Pearson r uses
    source: str | None = None


def load(path: Path) -> list[StsExample]:
    """An official STS JSON file; the gold score is labels['real-label'] (optional for unlabelled input)."""
    return records_from_rows(require_list(read_json(path), path), path)


def records_from_rows(rows: list, path: Path) -> list[StsExample]:
    """Records of rows in the official layout, which the Hugging Face klue 'sts' schema keeps (a test split's
    'labels' may be null: no gold)."""
    records = []
    for index, row in enumerate(rows):
        where = guid_of(row, index)
        gold = None
        if row.get("labels") is not None:
            labels = require(row, "labels", dict, path, where)
            gold = require(labels, "real-label", (int, float), path, where)
            if not 0 <= gold <= 5:
                raise DataError(path, where, f"real-label {gold} is outside 0-5")
        records.append(StsExample(
            guid=require(row, "guid", str, path, where),
            sentence1=require(row, "sentence1", str, path, where),
            sentence2=require(row, "sentence2", str, path, where),
            score=None if gold is None else float(gold), source=row.get("source"),
        ))
    return records


def load_input(path: Path) -> list[StsExample]:
    """Official JSON, or JSONL with 'sentence1' and 'sentence2' per line."""
    if not looks_like_jsonl(path):
        return load(path)
    return jsonl_records(path, lambda row, guid, where: StsExample(
        guid, require(row, "sentence1", str, path, where), require(row, "sentence2", str, path, where),
        source=row.get("source")))


def as_records(X: Sequence) -> list[StsExample]:
    """StsExample records, or plain (sentence1, sentence2) pairs."""
    return records_from(X, StsExample, lambda item, guid, where: StsExample(guid, *plain_pair(item, where)))


def in_nfc(records: Sequence[StsExample]) -> list[StsExample]:
    """The records with their sentences in NFC (see features.normalize)."""
    return [nfc_fields(record, "sentence1", "sentence2") for record in records]


def plain_inputs(records: Sequence[StsExample]) -> list[tuple[str, str]]:
    """(sentence1, sentence2) pairs (without the source, which plain pairs do not carry)."""
    return [(record.sentence1, record.sentence2) for record in records]


def headline(records: Sequence[StsExample], y: Sequence[float], predicted: Sequence[float]) -> float:
    return scoring.score_sts([float(v) for v in y], [float(v) for v in predicted])["pearsonr"]


def targets(records: Sequence[StsExample]) -> list[float]:
    return [record.score for record in records]


def predict(model, records: Sequence[StsExample]) -> list[dict]:
    values = model.predict(records)
    return [{"guid": r.guid, "score": round(float(min(5.0, max(0.0, v))), 6)} for r, v in zip(records, values)]


def scored_similarities(records: Sequence[StsExample], predictions: Sequence[dict]) -> tuple[list, list[float]]:
    """Gold and predicted scores in record order, the predictions checked."""
    aligned = align_predictions(records, predictions)
    check_numbers(aligned, "score")
    outside = [p["guid"] for p in aligned if not 0 <= p["score"] <= 5]
    if outside:
        warnings.warn(InputWarning(f"{len(outside)} predicted scores are outside 0-5 (first: "
                                   f"{', '.join(map(str, outside[:3]))}); scored as given, as the official code does"),
                      stacklevel=caller_stacklevel())
    return targets(records), [float(p["score"]) for p in aligned]


def score(records: Sequence[StsExample], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    return scoring.score_sts(*scored_similarities(records, predictions))


def tally(records: Sequence[StsExample], predictions: Sequence[dict], resources: dict) -> tallies.Tally:
    return tallies.tally_sts(*scored_similarities(records, predictions))


class TrainingMean(TaskModel, FloorInputs, DummyRegressor):
    """The trivial floor: the mean training score for every pair (scikit-learn's DummyRegressor, with plain
    pairs and Pearson r as its score, which is undefined, NaN, for this constant prediction)."""

    _to_records = staticmethod(as_records)
    _headline = staticmethod(headline)
    _analyses_text = False



# TF-IDF views of a sentence whose cosine similarities become features: (name, analyser).
VIEWS = (
    ("morph1", MorphemeNgrams((1, 1))),
    ("morph12", MorphemeNgrams((1, 2))),
    ("content", MorphemeNgrams((1, 1), with_tags=False, content_only=True)),
    ("char13", CharacterNgrams((1, 3))),
    ("char24", CharacterNgrams((2, 4))),
)


# Views whose TF-IDF space is also reduced by SVD (LSA), giving a similarity that survives synonyms.
LATENT_VIEWS = ("char24",)


# How a pair was made, by the suffix of its 'source': round-trip translation and human paraphrase both give
# pairs meant to be similar; 'sampled' pairs were drawn from the same domain.
PAIR_METHODS = {"rtt": "paraphrase", "para": "paraphrase", "sampled": "sampled"}


def source_parts(source: str | None) -> tuple[str, str]:
    """'airbnb-rtt' -> ('airbnb', 'paraphrase'), 'paraKQC-sampled' -> ('paraKQC', 'sampled'); anything else
    keeps its domain with method 'unknown'. Domain and method are separate features, not one 'source', because
    a model that knows the six sources apart learns their training means, which dev does not share (a
    leave-one-domain-out cross-validation on train scored the split features above the six sources)."""
    domain, _, suffix = (source or "unknown").rpartition("-")
    if not domain:
        return suffix, "unknown"
    return domain, PAIR_METHODS.get(suffix, "unknown")


def _row_cosines(first, second) -> np.ndarray:
    """Cosine of matching rows of two L2-normalised matrices (sparse or dense)."""
    product = first.multiply(second) if hasattr(first, "multiply") else first * second
    return np.asarray(product.sum(axis=1)).ravel()


class SourceColumns:
    """Mixin for the STS regressors: one-hot columns of each pair's source domain and pair-making method
    (source_parts), those seen in training kept in `domains_` and `methods_` when `fit`."""

    def _source_columns(self, records: Sequence[StsExample], fit: bool) -> list[np.ndarray]:
        parts = [source_parts(r.source) for r in records]
        if fit:
            self.domains_ = sorted({domain for domain, _ in parts})
            self.methods_ = sorted({method for _, method in parts})
        return ([np.array([float(domain == known) for domain, _ in parts]) for known in self.domains_]
                + [np.array([float(method == known) for _, method in parts]) for known in self.methods_])


class SimilarityRegressor(TaskModel, SourceColumns, RegressorMixin, BaseEstimator):
    """Sentence-pair similarity features (TF-IDF cosines at morpheme and character level, LSA cosine,
    content overlaps, soft alignment, alignment in Kiwi's embeddings, length ratios, cue mismatches, the
    source's domain and how the pair was made) -> gradient boosting regression of the 0-5 score, shifted by
    the amount that maximises binary F1 in a cross-validation on the training pairs.

    Parameters
    ----------
    svd_components : int
        Dimensions of the LSA space of the character 2-4-gram view.
    learning_rate, max_iter, max_leaf_nodes, min_samples_leaf
        Those of the HistGradientBoostingRegressor.
    shift_folds : int
        Folds of the cross-validation that picks the F1 shift; 0 or 1: no shift.
    embedding_alignment : bool
        Add features.pairs.embedding_alignment (each content morpheme's best cosine on the other side in
        Kiwi's CoNg embeddings, both ways and the lowest, the share with no near word, the same for nouns and
        predicates apart, and the summed vectors' cosine). On by default: by 3-fold CV on the training pairs it
        raised Pearson r in each fold (results/tuning/sts-features-gbr-embedding-alignment.json).
    random_state : int

    Attributes
    ----------
    vectorizers_ : dict of TfidfVectorizer
        One per view of VIEWS.
    svds_ : dict of TruncatedSVD
    domains_, methods_ : list of str
        The sources' domains and pair-making methods seen in training (one-hot features).
    regressor_ : HistGradientBoostingRegressor
    shift_ : float
        Added to every prediction before clipping to 0-5.

    X is a sequence of StsExample records or of plain (sentence1, sentence2) pairs (their source unknown).
    """

    _to_records = staticmethod(as_records)
    _in_nfc = staticmethod(in_nfc)
    _headline = staticmethod(headline)

    _parameter_constraints = {
        # A dense n x k matrix: 1,000 components of the 11,668 training pairs are 93 MB. A tree of 20-pair
        # leaves (the default) has at most 583 of them on those pairs, far below 4,096.
        "svd_components": [Interval(Integral, 1, 1000, closed="both")], "learning_rate": [POSITIVE],
        "max_iter": [ITERATIONS], "max_leaf_nodes": [Interval(Integral, 2, 4096, closed="both")],
        "min_samples_leaf": [Interval(Integral, 1, 10_000, closed="both")],
        "shift_folds": [*FOLDS_OR_OFF], "embedding_alignment": ["boolean"], "random_state": [SEED],
    }

    def __init__(self, *, svd_components: int = 150, learning_rate: float = 0.05, max_iter: int = 400,
                 max_leaf_nodes: int = 31, min_samples_leaf: int = 20, shift_folds: int = 3,
                 embedding_alignment: bool = True, random_state: int = 0):
        self.svd_components = svd_components
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.shift_folds = shift_folds
        self.embedding_alignment = embedding_alignment
        self.random_state = random_state

    def layout_mismatch(self) -> str | None:
        """What keeps this fitted model from predicting with this version (one saved before the embedding
        features, whose regressor reads fewer columns); None when it can."""
        if hasattr(self, "regressor_") and not hasattr(self, "embedding_alignment"):
            return "this STS model was saved by a version without the embedding features"
        return None

    def _features(self, records: Sequence[StsExample], fit: bool) -> np.ndarray:
        analyses = analyze([t for r in records for t in (r.sentence1, r.sentence2)])
        first, second = analyses[0::2], analyses[1::2]
        if fit:
            self.vectorizers_ = {name: TfidfVectorizer(analyzer=analyser, sublinear_tf=True).fit(analyses)
                                 for name, analyser in VIEWS}
        # Each view reads every sentence once; a pair's two sentences are its rows 2i and 2i + 1. A TF-IDF row
        # and its SVD projection depend on that sentence alone, so the slices equal the sides transformed apart.
        matrices = {name: vectorizer.transform(analyses) for name, vectorizer in self.vectorizers_.items()}
        if fit:
            # No more components than the view has terms: a small or narrow training set (a probe that shows only
            # lengths) has fewer than svd_components, which TruncatedSVD refuses; a full file has thousands.
            with np.errstate(divide="ignore", invalid="ignore"):  # a view of one term has no variance to share out
                self.svds_ = {view: TruncatedSVD(min(self.svd_components, matrices[view].shape[1]),
                                                 random_state=self.random_state).fit(matrices[view])
                              for view in LATENT_VIEWS}
        columns = [_row_cosines(matrix[0::2], matrix[1::2]) for matrix in matrices.values()]
        for view, svd in self.svds_.items():
            latent = svd.transform(matrices[view])
            columns.append(_row_cosines(normalize(latent[0::2]), normalize(latent[1::2])))
        overlaps = [overlap_features(a, b) for a, b in zip(first, second)]
        names = sorted(overlaps[0]) if overlaps else []
        columns.extend(np.array([o[name] for o in overlaps]) for name in names)
        if self.embedding_alignment:
            aligned = [embedding_alignment(a, b) for a, b in zip(first, second)]
            columns.extend(np.array([a[name] for a in aligned]) for name in EMBEDDING_FEATURES)
        columns.extend(self._source_columns(records, fit))
        return np.column_stack(columns)

    def fit(self, X: Sequence, y: Sequence[float]) -> "SimilarityRegressor":
        """Learn a similarity score from the pair's similarity features with gradient boosting.

        Parameters
        ----------
        X : sequence of StsExample or (str, str)
            Training sentence pairs, as records or plain (sentence1, sentence2) tuples.
        y : sequence of float
            The gold similarity of each pair, 0 to 5.

        Returns
        -------
        self : SimilarityRegressor
            The fitted model.
        """
        features, gold = self._features(self._fit_records(X), fit=True), np.asarray(y, dtype=float)
        self.regressor_ = self._regressor().fit(features, gold)
        self.shift_ = 0.0
        if self.shift_folds >= 2:
            folds = KFold(self.shift_folds, shuffle=True, random_state=self.random_state)
            self.shift_ = best_f1_shift(gold, cross_val_predict(self._regressor(), features, gold, cv=folds))
        return self

    def _regressor(self) -> HistGradientBoostingRegressor:
        return HistGradientBoostingRegressor(
            learning_rate=self.learning_rate, max_iter=self.max_iter, max_leaf_nodes=self.max_leaf_nodes,
            min_samples_leaf=self.min_samples_leaf, random_state=self.random_state)

    def predict(self, X: Sequence) -> np.ndarray:
        """The similarity of each pair.

        Parameters
        ----------
        X : sequence of StsExample or (str, str)

        Returns
        -------
        ndarray of shape (n_pairs,)
            Scores clipped to the 0-5 range; 3 or more counts as paraphrase in the official F1.
        """
        records = self._fitted_records(X)
        return np.clip(self.regressor_.predict(self._features(records, fit=False)) + self.shift_, 0.0, 5.0)


class CharacterSimilarityRegressor(TaskModel, SourceColumns, RegressorMixin, BaseEstimator):
    """The fast setting, with no Kiwi: the cosine of the two sentences' TF-IDF vectors over character n-grams,
    their lengths (ratio, difference, sum), the source's domain and how the pair was made -> gradient boosting
    regression of the 0-5 score.

    Parameters
    ----------
    ngram_range : (int, int)
        Character n-grams of the TF-IDF (across spaces, as scikit-learn's analyzer='char').
    learning_rate, max_iter
        Those of the HistGradientBoostingRegressor (whose early stopping on a tenth of the pairs, seeded,
        scikit-learn turns on above 10,000 of them).
    random_state : int

    Attributes
    ----------
    vectorizer_ : TfidfVectorizer
    domains_, methods_ : list of str
        The sources' domains and pair-making methods seen in training (one-hot features).
    regressor_ : HistGradientBoostingRegressor

    X is a sequence of StsExample records or of plain (sentence1, sentence2) pairs (their source unknown).
    """

    _to_records = staticmethod(as_records)
    _in_nfc = staticmethod(in_nfc)
    _headline = staticmethod(headline)

    _analyses_text = False  # characters only: no Kiwi

    _parameter_constraints = {"ngram_range": [NGRAM_RANGE], "learning_rate": [POSITIVE], "max_iter": [ITERATIONS],
                              "random_state": [SEED]}

    def __init__(self, *, ngram_range: tuple[int, int] = (1, 2), learning_rate: float = 0.1, max_iter: int = 100,
                 random_state: int = 0):
        self.ngram_range = ngram_range
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.random_state = random_state

    def _features(self, records: Sequence[StsExample], fit: bool) -> np.ndarray:
        sentences = [text for r in records for text in (r.sentence1, r.sentence2)]
        if fit:
            self.vectorizer_ = TfidfVectorizer(analyzer="char", ngram_range=tuple(self.ngram_range),
                                               sublinear_tf=True)
            matrix = self.vectorizer_.fit_transform(sentences)
        else:
            matrix = self.vectorizer_.transform(sentences)
        first = np.array([len(r.sentence1) for r in records], dtype=float)
        second = np.array([len(r.sentence2) for r in records], dtype=float)
        columns = [_row_cosines(matrix[0::2], matrix[1::2]),
                   np.minimum(first, second) / np.maximum(np.maximum(first, second), 1.0),
                   np.abs(first - second), first + second]
        columns.extend(self._source_columns(records, fit))
        return np.column_stack(columns)

    def fit(self, X: Sequence, y: Sequence[float]) -> "CharacterSimilarityRegressor":
        """Learn a similarity score from the pair's character cosine, lengths and source.

        Parameters
        ----------
        X : sequence of StsExample or (str, str)
            Training sentence pairs, as records or plain (sentence1, sentence2) tuples.
        y : sequence of float
            The gold similarity of each pair, 0 to 5.

        Returns
        -------
        self : CharacterSimilarityRegressor
            The fitted model.
        """
        features = self._features(self._fit_records(X), fit=True)
        self.regressor_ = HistGradientBoostingRegressor(learning_rate=self.learning_rate, max_iter=self.max_iter,
                                                        random_state=self.random_state)
        self.regressor_.fit(features, np.asarray(y, dtype=float))
        return self

    def predict(self, X: Sequence) -> np.ndarray:
        """The similarity of each pair.

        Parameters
        ----------
        X : sequence of StsExample or (str, str)

        Returns
        -------
        ndarray of shape (n_pairs,)
            Scores clipped to the 0-5 range; 3 or more counts as paraphrase in the official F1.
        """
        records = self._fitted_records(X)
        return np.clip(self.regressor_.predict(self._features(records, fit=False)), 0.0, 5.0)


# Shifts of the predicted score tried for the binary F1; a shift leaves Pearson r unchanged (up to clipping).
SHIFTS = np.round(np.arange(-0.5, 0.501, 0.05), 2)


def best_f1_shift(gold: np.ndarray, predicted: np.ndarray) -> float:
    """The shift of out-of-fold predictions that maximises binary F1 at the official threshold (the smallest
    in size among ties). A squared-loss regressor is not tuned for a cut at 3; moving every score by the
    same amount tunes the cut, and Pearson r does not change under a constant shift."""
    similar = gold >= scoring.STS_THRESHOLD
    scores = [f1_score(similar, np.clip(predicted + shift, 0.0, 5.0) >= scoring.STS_THRESHOLD, zero_division=0)
              for shift in SHIFTS]
    best = max(scores)
    return float(min((shift for shift, f1 in zip(SHIFTS, scores) if f1 == best), key=abs))



def compare(records: Sequence[StsExample], aligned: Sequence[dict]) -> Comparison:
    """A score, not a class: each pair is as wrong as its distance from the gold score. The groups are the
    pairs' sources (how and from what they were made), each with its own Pearson r and F1 and its mean gold
    and predicted scores: most of an STS Pearson r is telling paraphrases from sampled pairs, and these rows
    show how well the pairs are ordered within each kind, and whether a kind is scored too high."""
    comparison = Comparison("sentence pair", group_by="source", ranked_by="the distance from the gold score",
                            wrong=[abs(float(p["score"]) - r.score) for r, p in zip(records, aligned)],
                            shown=[(f"{r.score:.1f}", f"{float(p['score']):.2f}") for r, p in zip(records, aligned)])
    by_source: dict[str, list[tuple[float, float]]] = {}
    for record, prediction in zip(records, aligned):
        by_source.setdefault(record.source or "(none)", []).append((record.score, float(prediction["score"])))
    for source, pairs in sorted(by_source.items()):
        gold, predicted = zip(*pairs)
        scores = scoring.score_sts(gold, predicted)
        comparison.groups.append({
            "group": source, "pairs": len(pairs),
            "pearsonr": None if math.isnan(scores["pearsonr"]) else scores["pearsonr"], "f1": scores["f1"],
            "gold_mean": float(np.mean(gold)), "predicted_mean": float(np.mean(predicted))})
    return comparison


def first_sentence_only(records: Sequence[StsExample]) -> list[StsExample]:
    return [replace(record, sentence2=HIDDEN_TEXT, source=None) for record in records]


def lengths_only(records: Sequence[StsExample]) -> list[StsExample]:
    return [replace(record, sentence1=length_in_words(record.sentence1), sentence2=length_in_words(record.sentence2),
                    source=None) for record in records]


def source_only(records: Sequence[StsExample]) -> list[StsExample]:
    return [replace(record, sentence1=HIDDEN_TEXT, sentence2=HIDDEN_TEXT) for record in records]


# The default reads each pair's source (its domain and how the pair was made) besides the sentences: the probes that
# show part of the sentences hide it, and one shows it alone.
PROBES = (
    Probe("one sentence", "the first sentence; the second and the pair's source are hidden", first_sentence_only),
    Probe("lengths", "the two sentences' lengths alone (one of 17 characters made '17자'); the source hidden",
          lengths_only),
    Probe("source", "the pair's source alone (its domain and how the pair was made); both sentences hidden",
          source_only),
)


TASK = TaskSpec(
    code="sts",
    title="STS semantic textual similarity",
    folder="klue-sts-v1.1",
    train_file="klue-sts-v1.1_train.json",
    dev_file="klue-sts-v1.1_dev.json",
    reading=Reading(
        texts=lambda records: [t for r in records for t in (r.sentence1, r.sentence2)],
        load=load,
        from_hf=records_from_rows,
        load_input=load_input,
        as_records=as_records,
        plain_inputs=plain_inputs,
    ),
    modelling=Modelling(
        targets=targets,
        models={"features-gbr": ModelEntry(SimilarityRegressor), "fast": ModelEntry(CharacterSimilarityRegressor),
                "trivial": ModelEntry(TrainingMean, {"strategy": "mean"})},
        default_model="features-gbr",
        predict=predict,
        saved_types=(SimilarityRegressor, CharacterSimilarityRegressor, TrainingMean,
                     TruncatedSVD, *TFIDF_PARTS, CharacterNgrams, MorphemeNgrams,
                     HistGradientBoostingRegressor, *HIST_GRADIENT_BOOSTING_PARTS, "sklearn._loss.link.IdentityLink",
                     "sklearn._loss.loss.HalfSquaredError", "sklearn._loss._loss.CyHalfSquaredError"),
    ),
    scoring=Scoring(
        score=score,
        tally=tally,
        headline=("pearsonr", "f1"),
        prediction_example='{"guid": "klue-sts-v1_dev_00000", "score": 4.2}',
        compare=compare,
        trainer_score=scoring.score_sts,
    ),
    presentation=Presentation(drawer=html.draw_labelled, page_form="pair"),
    benchmarks=Benchmarks(grow=grown.first_of_pair, peer="tfidf-cosine", probes=PROBES),
)
