"""NLI: does the premise entail, contradict or say nothing about the hypothesis."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np
from joblib import Parallel, delayed
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.feature_extraction import DictVectorizer
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import GroupKFold

from baselines.display import html
from baselines.models.linear import OrderedLogisticRegression
from baselines.data import hf
from baselines.metrics import scoring, tallies
from baselines.data.fileio import guid_of, looks_like_jsonl, read_json, require, require_list
from baselines.models.estimators import FloorClassifier, TaskModel, TrainingDataError, plain_pair, records_from
from baselines.models.explain import LinearExplanation
from baselines.models.params import (FOLDS_OR_OFF, ITERATIONS, JOBS, MIN_COUNT, NEIGHBOURS, NGRAM_RANGE, NON_NEGATIVE,
                              POSITIVE, SEED)
from baselines.runtime.parallel import local_jobs
from baselines.data import grown
from baselines.taskspec import (Reading, Modelling, Scoring, Presentation, Benchmarks, Probe, HIDDEN_TEXT,
                                PEER_SEPARATOR, HIST_GRADIENT_BOOSTING_PARTS, TFIDF_PARTS, ModelEntry, TaskSpec,
                                align_predictions, check_gold_labels, check_labels, compare_labels, jsonl_records,
                                label_predictions)
from features.analysis import analyze
from features.morphemes import Analysis
from features.normalize import nfc_fields
from features.pairs import (EMBEDDING_FEATURES, NEGATION_FORMS, QUANTITY_FORMS, TIME_FORMS, content_forms,
                            embedding_alignment, hypothesis_marks, neighbour_alignment, overlap_features)
from features.vectorize import CharacterNgrams, MorphemeNgrams, prefetch_neighbours

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


def in_nfc(records: Sequence[NliExample]) -> list[NliExample]:
    """The records with premise and hypothesis in NFC (see features.normalize)."""
    return [nfc_fields(record, "premise", "hypothesis") for record in records]


def plain_inputs(records: Sequence[NliExample]) -> list[tuple[str, str]]:
    """(premise, hypothesis) pairs."""
    return [(record.premise, record.hypothesis) for record in records]


def headline(records: Sequence[NliExample], y: Sequence[str], predicted: Sequence[str]) -> float:
    return scoring.score_nli([str(label) for label in y], [str(label) for label in predicted])["accuracy"]


def targets(records: Sequence[NliExample]) -> list[str]:
    return [record.label for record in records]


def scored_labels(records: Sequence[NliExample], predictions: Sequence[dict]) -> tuple[list[str], list[str]]:
    """Gold and predicted labels in record order, the predictions checked."""
    return targets(records), check_labels(align_predictions(records, predictions), "label", LABELS)


def score(records: Sequence[NliExample], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    return scoring.score_nli(*scored_labels(records, predictions))


def tally(records: Sequence[NliExample], predictions: Sequence[dict], resources: dict) -> tallies.Tally:
    return tallies.tally_nli(*scored_labels(records, predictions))



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


class MostFrequentInference(FloorClassifier):
    """The trivial floor: the most frequent label of the training pairs (scikit-learn's DummyClassifier, with
    plain pairs and accuracy as its score)."""

    _to_records = staticmethod(as_records)
    _headline = staticmethod(headline)
    _analyses_text = False



class InferenceClassifier(TaskModel, LinearExplanation, ClassifierMixin, BaseEstimator):
    """TF-IDF of premise and of hypothesis (morpheme n-grams, and the hypothesis's character n-grams) plus
    pair features (what the hypothesis adds or drops and where, substitution pairs, its new words aligned to
    the premise through Kiwi's language model, how near its words are to the premise's in Kiwi's embeddings,
    overlap ratios, negation/quantity/time/number cues)
    -> multinomial logistic regression; then, with stack_folds, gradient boosting over the regression's
    out-of-fold probabilities and the dense pair features.

    Parameters
    ----------
    C : float
        Inverse L2 strength of the logistic regression. C, marks, neighbours, char_ngrams and stack_folds by
        3-fold CV on the training pairs (results/tuning/nli-tfidf-lr-*.json).
    ngram_range : (int, int)
        Morpheme n-gram range of the premise and hypothesis TF-IDF views.
    char_ngrams : (int, int) or None
        Character n-gram range of a hypothesis TF-IDF view; None leaves it out (it did not help in CV).
    min_df : int
        A feature must occur in this many training sentences.
    cross_weight : float
        Scale of the pair features against the TF-IDF columns.
    marks : bool
        Add hypothesis_marks (each hypothesis morpheme marked as kept from the premise or new).
    neighbours : int
        Neighbours in Kiwi's language model through which a new hypothesis word is aligned to the premise
        (neighbour_alignment); 0 leaves the alignment out.
    stack_folds : int
        Folds (whole premises in each) of the out-of-fold probabilities that the gradient boosting stage
        learns from; 0 or 1: the logistic regression decides alone.
    embedding_alignment : bool
        Add features.pairs.embedding_alignment (how near the hypothesis's content morphemes are to the
        premise's in Kiwi's CoNg embeddings, and back) to the pair features of both stages. On by default: by
        3-fold CV on the training pairs it raised accuracy in two folds of three
        (results/tuning/nli-tfidf-lr-embedding-alignment.json).
    n_jobs : int or None
        Processes that fit the logistic regression and its out-of-fold copies (the same models in any
        number; None is one).
    max_iter : int
    random_state : int

    Attributes
    ----------
    premise_vectorizer_, hypothesis_vectorizer_ : TfidfVectorizer
    character_vectorizer_ : TfidfVectorizer or None
    cross_vectorizer_ : DictVectorizer
        The pair features.
    classifier_ : OrderedLogisticRegression
    stacker_ : HistGradientBoostingClassifier or None
        The second stage (None without stack_folds).
    classes_ : ndarray of str

    X is a sequence of NliExample records or of plain (premise, hypothesis) pairs. top_features and
    feature_contributions explain the logistic regression; the boosting stage re-weighs its probabilities
    with the dense pair features.
    """

    _to_records = staticmethod(as_records)
    _in_nfc = staticmethod(in_nfc)
    _headline = staticmethod(headline)

    _parameter_constraints = {
        "C": [POSITIVE], "ngram_range": [NGRAM_RANGE], "char_ngrams": [NGRAM_RANGE, None], "min_df": [MIN_COUNT],
        "cross_weight": [NON_NEGATIVE], "marks": ["boolean"], "neighbours": [NEIGHBOURS],
        "stack_folds": [*FOLDS_OR_OFF], "embedding_alignment": ["boolean"],
        "n_jobs": [JOBS, None], "max_iter": [ITERATIONS], "random_state": [SEED],
    }

    def __init__(self, *, C: float = 0.25, ngram_range: tuple[int, int] = (1, 2),
                 char_ngrams: tuple[int, int] | None = None, min_df: int = 2, cross_weight: float = 1.0,
                 marks: bool = True, neighbours: int = 20, stack_folds: int = 3, embedding_alignment: bool = True,
                 n_jobs: int | None = 2, max_iter: int = 500, random_state: int = 0):
        self.C = C
        self.ngram_range = ngram_range
        self.char_ngrams = char_ngrams
        self.min_df = min_df
        self.cross_weight = cross_weight
        self.marks = marks
        self.neighbours = neighbours
        self.stack_folds = stack_folds
        self.embedding_alignment = embedding_alignment
        self.n_jobs = n_jobs
        self.max_iter = max_iter
        self.random_state = random_state

    def _analyses(self, records: Sequence[NliExample]):
        analyses = analyze([t for r in records for t in (r.premise, r.hypothesis)])
        if self.neighbours:
            prefetch_neighbours(analyses[1::2], self.neighbours)
        return analyses[0::2], analyses[1::2]

    def _pair_features(self, premise: Analysis, hypothesis: Analysis) -> tuple[dict[str, float], list[float]]:
        """The pair features of the logistic regression, and those that the boosting stage reads as numbers
        (overlap ratios, cues, lengths, the alignment's counts)."""
        overlaps = overlap_features(premise, hypothesis)
        features = {**cross_tokens(premise, hypothesis), **overlaps}
        if self.marks:
            features.update(hypothesis_marks(premise, hypothesis))
        dense = [overlaps[name] for name in sorted(overlaps)] + [len(premise.forms), len(hypothesis.forms)]
        if self.neighbours:
            alignment = neighbour_alignment(premise, hypothesis, self.neighbours)
            features.update(alignment)
            dense += [alignment["least_aligned_similarity"]]
            dense += [alignment.get(f"unaligned_count={count}", 0.0) for count in range(6)]
        if self.embedding_alignment:
            near = embedding_alignment(premise, hypothesis)
            features.update(near)
            dense += [near[name] for name in EMBEDDING_FEATURES]
        return features, dense

    def _tfidf(self, analyser) -> TfidfVectorizer:
        return TfidfVectorizer(analyzer=analyser, min_df=self.min_df, sublinear_tf=True)

    def _matrices(self, records: Sequence[NliExample], fit: bool) -> tuple[sparse.csr_matrix, np.ndarray]:
        """The logistic regression's sparse rows, and the dense pair features of the boosting stage."""
        premises, hypotheses = self._analyses(records)
        both = [self._pair_features(p, h) for p, h in zip(premises, hypotheses)]
        pairs, dense = [features for features, _ in both], [numbers for _, numbers in both]
        if fit:
            self.premise_vectorizer_ = self._tfidf(MorphemeNgrams(self.ngram_range)).fit(premises)
            self.hypothesis_vectorizer_ = self._tfidf(MorphemeNgrams(self.ngram_range)).fit(hypotheses)
            self.character_vectorizer_ = (self._tfidf(CharacterNgrams(self.char_ngrams)).fit(hypotheses)
                                          if self.char_ngrams else None)
            self.cross_vectorizer_ = DictVectorizer().fit(pairs)
        parts = [self.premise_vectorizer_.transform(premises), self.hypothesis_vectorizer_.transform(hypotheses),
                 self.cross_vectorizer_.transform(pairs) * self.cross_weight]
        if self.character_vectorizer_ is not None:
            parts.append(self.character_vectorizer_.transform(hypotheses))
        return sparse.hstack(parts, format="csr"), np.array(dense, dtype=float).reshape(len(records), -1)

    def _regression(self) -> OrderedLogisticRegression:
        return OrderedLogisticRegression(C=self.C, max_iter=self.max_iter)

    def fit(self, X: Sequence, y: Sequence[str]) -> "InferenceClassifier":
        """Learn the relation of hypothesis to premise from their TF-IDF and cross-sentence features.

        Parameters
        ----------
        X : sequence of NliExample or (str, str)
            Training pairs, as records or plain (premise, hypothesis) tuples.
        y : sequence of str
            'entailment', 'neutral' or 'contradiction' for each pair.

        Returns
        -------
        self : InferenceClassifier
            The fitted model.
        """
        records = self._fit_records(X)
        self._check_min_df(records, "pairs")
        premises = len({r.premise for r in records})
        if self.stack_folds >= 2 and premises < self.stack_folds:
            raise TrainingDataError(f"stack_folds={self.stack_folds} needs at least {self.stack_folds} premises "
                                    f"in the training data, got {premises}")
        features, dense = self._matrices(records, fit=True)
        gold = np.asarray(y)
        # The booster must learn from probabilities like those of unseen pairs: out of fold, with each
        # premise's hypotheses in one fold (a premise's three hypotheses share most of their words).
        splits = list(GroupKFold(self.stack_folds).split(features, gold, [r.premise for r in records])
                      if self.stack_folds >= 2 else [])
        # The full fit and the fold fits are independent: processes, since L-BFGS's loop holds the GIL (measured
        # on the 24,998 training pairs: 93 s for the four one after another or in threads, 50 s in 2 processes).
        processes = local_jobs(self.n_jobs) if self.n_jobs else None  # never more than the cores
        fitted = Parallel(n_jobs=processes)(delayed(self._regression().fit)(matrix, labels)
                                            for matrix, labels in [(features, gold)]
                                            + [(features[train], gold[train]) for train, _ in splits])
        self.classifier_ = fitted[0]
        self.classes_ = self.classifier_.classes_
        self.stacker_ = None
        if splits:
            out_of_fold = np.zeros((len(records), len(self.classes_)))
            for fold_model, (_train, held_out) in zip(fitted[1:], splits):
                columns = np.searchsorted(self.classes_, fold_model.classes_)
                out_of_fold[np.ix_(held_out, columns)] = fold_model.predict_proba(features[held_out])
            # Early stopping holds out a random tenth of the rows: without a seed, each fit stopped elsewhere,
            # and one command gave another dev accuracy at each run.
            self.stacker_ = HistGradientBoostingClassifier(max_iter=300, learning_rate=0.05,
                                                           random_state=self.random_state)
            self.stacker_.fit(stacker_inputs(out_of_fold, dense), gold)
        return self

    def layout_mismatch(self) -> str | None:
        """What keeps this fitted model from predicting with this version (one saved before the embedding
        features, whose boosting stage reads fewer columns); None when it can."""
        if hasattr(self, "classifier_") and not hasattr(self, "embedding_alignment"):
            return "this NLI model was saved by a version without the embedding features"
        return None

    def _explained_names(self) -> list[str]:
        names = ([f"premise__{name}" for name in self.premise_vectorizer_.get_feature_names_out()]
                 + [f"hypothesis__{name}" for name in self.hypothesis_vectorizer_.get_feature_names_out()]
                 + [f"pair__{name}" for name in self.cross_vectorizer_.get_feature_names_out()])
        if self.character_vectorizer_ is not None:
            names += [f"hypothesis_characters__{name}" for name in self.character_vectorizer_.get_feature_names_out()]
        return names

    def _explained_matrix(self, records: Sequence[NliExample]) -> sparse.csr_matrix:
        return self._matrices(records, fit=False)[0]

    def predict_proba(self, X: Sequence) -> np.ndarray:
        """Probability of each relation for each pair.

        Parameters
        ----------
        X : sequence of NliExample or (str, str)

        Returns
        -------
        ndarray of shape (n_pairs, 3)
            Columns in the order of ``classes_``.
        """
        records = self._fitted_records(X)
        features, dense = self._matrices(records, fit=False)
        probabilities = self.classifier_.predict_proba(features)
        if self.stacker_ is None:
            return probabilities
        return self.stacker_.predict_proba(stacker_inputs(probabilities, dense))

    def predict(self, X: Sequence) -> np.ndarray:
        """The most probable relation of each pair.

        Parameters
        ----------
        X : sequence of NliExample or (str, str)

        Returns
        -------
        ndarray of shape (n_pairs,)
            One label of ``classes_`` per pair.
        """
        probabilities = self.predict_proba(X)
        return self.classes_[probabilities.argmax(axis=1)]


def character_bigrams(text: str) -> set[str]:
    """The character bigrams of each word of the text, with a space at the word's both ends."""
    grams = set()
    for word in text.split():
        padded = f" {word} "
        grams.update(padded[i:i + 2] for i in range(len(padded) - 1))
    return grams


def character_cross(premise: str, hypothesis: str) -> dict[str, float]:
    """What the hypothesis adds and drops, seen without Kiwi: its character bigrams absent from the premise
    ('added=않'), the premise's absent from it ('dropped=…'), and the share of each side's bigrams that the
    other has."""
    premise_grams, hypothesis_grams = character_bigrams(premise), character_bigrams(hypothesis)
    shared = premise_grams & hypothesis_grams
    features = {f"added={gram}": 1.0 for gram in hypothesis_grams - premise_grams}
    features.update({f"dropped={gram}": 1.0 for gram in premise_grams - hypothesis_grams})
    features["kept_of_hypothesis"] = len(shared) / max(1, len(hypothesis_grams))
    features["kept_of_premise"] = len(shared) / max(1, len(premise_grams))
    return features


class CharacterInferenceClassifier(TaskModel, LinearExplanation, ClassifierMixin, BaseEstimator):
    """The fast setting, with no Kiwi: TF-IDF of the hypothesis's character n-grams and what it adds to and drops
    from the premise in character bigrams (character_cross) -> multinomial logistic regression.

    Parameters
    ----------
    C : float
        Inverse L2 strength of the logistic regression.
    char_ngrams : (int, int)
        Character n-gram range of the hypothesis's TF-IDF (inside words).
    min_df : int
        A hypothesis n-gram must occur in this many training hypotheses.
    max_iter : int
        L-BFGS iterations of the logistic regression.
    random_state : int
        Not read (the fit draws nothing at random); kept so that every model takes the run's seed.

    Attributes
    ----------
    hypothesis_vectorizer_ : TfidfVectorizer
    cross_vectorizer_ : DictVectorizer
    classifier_ : OrderedLogisticRegression
    classes_ : ndarray of str

    X is a sequence of NliExample records or of plain (premise, hypothesis) pairs.
    """

    _to_records = staticmethod(as_records)
    _in_nfc = staticmethod(in_nfc)
    _headline = staticmethod(headline)
    _analyses_text = False  # characters only: no Kiwi

    _parameter_constraints = {"C": [POSITIVE], "char_ngrams": [NGRAM_RANGE], "min_df": [MIN_COUNT],
                              "max_iter": [ITERATIONS], "random_state": [SEED]}

    def __init__(self, *, C: float = 0.25, char_ngrams: tuple[int, int] = (1, 3), min_df: int = 2, max_iter: int = 100,
                 random_state: int = 0):
        self.C = C
        self.char_ngrams = char_ngrams
        self.min_df = min_df
        self.max_iter = max_iter
        self.random_state = random_state

    def _explained_matrix(self, records: Sequence[NliExample]) -> sparse.csr_matrix:
        return sparse.hstack([self.hypothesis_vectorizer_.transform([r.hypothesis for r in records]),
                              self.cross_vectorizer_.transform([character_cross(r.premise, r.hypothesis)
                                                                for r in records])], format="csr")

    def _explained_names(self) -> list[str]:
        return ([f"hypothesis_characters__{name}" for name in self.hypothesis_vectorizer_.get_feature_names_out()]
                + [f"pair__{name}" for name in self.cross_vectorizer_.get_feature_names_out()])

    def fit(self, X: Sequence, y: Sequence[str]) -> "CharacterInferenceClassifier":
        """Learn the relation of hypothesis to premise from their characters.

        Parameters
        ----------
        X : sequence of NliExample or (str, str)
            Training pairs, as records or plain (premise, hypothesis) tuples.
        y : sequence of str
            'entailment', 'neutral' or 'contradiction' for each pair.

        Returns
        -------
        self : CharacterInferenceClassifier
            The fitted model.
        """
        records = self._fit_records(X)
        self._check_min_df(records, "pairs")
        self.hypothesis_vectorizer_ = TfidfVectorizer(analyzer=CharacterNgrams(self.char_ngrams), min_df=self.min_df,
                                                      sublinear_tf=True)
        self.cross_vectorizer_ = DictVectorizer()
        # Each fitted on the training pairs and transforming them in one pass (not fitted, then read again).
        features = sparse.hstack([self.hypothesis_vectorizer_.fit_transform([r.hypothesis for r in records]),
                                  self.cross_vectorizer_.fit_transform([character_cross(r.premise, r.hypothesis)
                                                                        for r in records])], format="csr")
        self.classifier_ = OrderedLogisticRegression(C=self.C, max_iter=self.max_iter)
        self.classifier_.fit(features, np.asarray(y))
        self.classes_ = self.classifier_.classes_
        return self

    def predict_proba(self, X: Sequence) -> np.ndarray:
        """Probability of each relation for each pair.

        Parameters
        ----------
        X : sequence of NliExample or (str, str)

        Returns
        -------
        ndarray of shape (n_pairs, 3)
            Columns in the order of ``classes_``.
        """
        records = self._fitted_records(X)
        return self.classifier_.predict_proba(self._explained_matrix(records))

    def predict(self, X: Sequence) -> np.ndarray:
        """The most probable relation of each pair.

        Parameters
        ----------
        X : sequence of NliExample or (str, str)

        Returns
        -------
        ndarray of shape (n_pairs,)
            One label of ``classes_`` per pair.
        """
        probabilities = self.predict_proba(X)  # first: NotFittedError before any fitted attribute is touched
        return self.classes_[probabilities.argmax(axis=1)]


# Decimals of the first stage's probabilities that the boosting stage sees.
STACKED_DECIMALS = 6


def stacker_inputs(probabilities: np.ndarray, dense: np.ndarray) -> np.ndarray:
    """The boosting stage's rows: the first stage's probabilities rounded to STACKED_DECIMALS, so that a
    difference in their last bits cannot move a value across a bin edge and grow into another tree, then
    the dense pair features."""
    return np.hstack([np.round(probabilities, STACKED_DECIMALS), dense])



def compare(records: Sequence[NliExample], aligned: Sequence[dict]):
    """Labels against labels, and the accuracy of each source (the domain the premises come from)."""
    comparison = compare_labels(aligned, targets(records), "sentence pair", LABELS)
    comparison.group_by = "source"
    by_source: dict[str, list[bool]] = {}
    for record, gold, predicted in zip(records, comparison.gold, comparison.predicted):
        by_source.setdefault(record.source or "(none)", []).append(gold == predicted)
    comparison.groups = [{"group": source, "pairs": len(right), "accuracy": 100 * sum(right) / len(right)}
                         for source, right in sorted(by_source.items())]
    return comparison


def hypothesis_only(records: Sequence[NliExample]) -> list[NliExample]:
    return [replace(record, premise=HIDDEN_TEXT) for record in records]


def premise_only(records: Sequence[NliExample]) -> list[NliExample]:
    return [replace(record, hypothesis=HIDDEN_TEXT) for record in records]


# Gururangan et al. (2018) and Poliak et al. (2018): a hypothesis alone tells the label far above chance in SNLI
# and MNLI, from the words annotators wrote to make a contradiction or an entailment.
PROBES = (
    Probe("hypothesis only", "the hypothesis; the premise hidden (stack_folds=0: the second stage folds by premise)",
          hypothesis_only, params={"stack_folds": 0}),
    Probe("premise only", "the premise; the hypothesis is hidden", premise_only),
)


TASK = TaskSpec(
    code="nli",
    title="NLI natural language inference",
    folder="klue-nli-v1.1",
    train_file="klue-nli-v1.1_train.json",
    dev_file="klue-nli-v1.1_dev.json",
    reading=Reading(
        texts=lambda records: [t for r in records for t in (r.premise, r.hypothesis)],
        load=load,
        from_hf=from_hf,
        load_input=load_input,
        as_records=as_records,
        plain_inputs=plain_inputs,
        group=lambda record: record.premise,
    ),
    modelling=Modelling(
        targets=targets,
        models={"tfidf-lr": ModelEntry(InferenceClassifier), "fast": ModelEntry(CharacterInferenceClassifier),
                "trivial": ModelEntry(MostFrequentInference, {"strategy": "prior"})},
        default_model="tfidf-lr",
        predict=label_predictions,
        saved_types=(InferenceClassifier, CharacterInferenceClassifier, MostFrequentInference,
                     OrderedLogisticRegression, DictVectorizer, *TFIDF_PARTS,
                     CharacterNgrams, MorphemeNgrams, HistGradientBoostingClassifier, *HIST_GRADIENT_BOOSTING_PARTS,
                     "sklearn._loss.link.MultinomialLogit", "sklearn._loss.loss.HalfMultinomialLoss",
                     "sklearn._loss._loss.CyHalfMultinomialLoss", "sklearn.preprocessing._label.LabelEncoder"),
    ),
    scoring=Scoring(
        score=score,
        tally=tally,
        breakdown="class_f1",
        headline=("accuracy",),
        prediction_example='{"guid": "klue-nli-v1_dev_00000", "label": "contradiction"}',
        compare=compare,
        trainer_score=scoring.score_nli,
    ),
    presentation=Presentation(drawer=html.draw_labelled, page_form="pair"),
    benchmarks=Benchmarks(grow=grown.first_of_pair, peer="fasttext",
                          peer_text=lambda record: f"{record.premise} {PEER_SEPARATOR} {record.hypothesis}",
                          probes=PROBES),
)
