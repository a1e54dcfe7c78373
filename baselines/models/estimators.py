"""What every task model shares as a scikit-learn estimator: plain inputs, the fitted check, the headline score."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from sklearn.base import clone
from sklearn.dummy import DummyClassifier
from sklearn.utils.validation import check_is_fitted

from baselines.data.fileio import DataError
from baselines.models.params import check_hyper_parameters
from baselines.errors import TrainingDataError, setting

# Plain inputs have no file: errors in them name this instead, with the item's position.
PLAIN_INPUT = Path("<plain input>")


def records_from(X: Sequence, record_type: type, build: Callable[[Any, str, str], Any]) -> list:
    """X as a task's records. An item that is a record stays as it is; any other is a plain input (a str,
    a tuple, a dict shaped like a raw JSONL row) that build(item, guid, where) makes into one, with the
    guid the dict gives or 'input-N'. A wrong plain input is a ValueError that names its position; so is one
    input given alone, where a list of them is expected (a str would be read as one input per character)."""
    if isinstance(X, (str, bytes, dict, record_type)):
        how = f"a list of sentences, as [{X[:40]!r}]" if isinstance(X, (str, bytes)) else "a list of them, [x] for one"
        raise ValueError(f"expected a list of inputs, not one {type(X).__name__}: pass {how}")
    records = []
    for index, item in enumerate(X):
        if isinstance(item, record_type):
            records.append(item)
            continue
        guid = str(item["guid"]) if isinstance(item, dict) and "guid" in item else f"input-{index}"
        try:
            records.append(build(item, guid, f"item {index}"))
        except DataError as error:
            raise ValueError(f"{error.where}: {error.problem} (or a {record_type.__name__})") from None
    return records


class TaskModel:
    """Mixin for the task models, left of ClassifierMixin/RegressorMixin and BaseEstimator.

    A model sets `_to_records` (X -> the task's records, accepting plain inputs), `_headline` ((records,
    y, predictions) -> the task's first headline metric, x100) and, where it reads text, `_in_nfc`. Then
    `score(X, y)` returns that metric on the 0-1 scale, higher is better, which GridSearchCV and
    cross_val_score use with scoring=None. Its fit takes X through `_fit_records`, which validates the
    model's `_parameter_constraints`.
    """

    _to_records: Callable[[Sequence], list]
    _headline: Callable[[Sequence, Sequence, Sequence], float]
    # The records with their texts in NFC, for a model whose output has no character offsets into them (see
    # features.normalize); models that answer with offsets map them themselves, and floors read no text.
    _in_nfc: Callable[[Sequence], list] = staticmethod(list)

    def _records(self, X: Sequence) -> list:
        return type(self)._in_nfc(type(self)._to_records(X))

    def _fit_records(self, X: Sequence) -> list:
        """X as records, after checking the hyper-parameters against the model's declared constraints (a
        ValueError naming the parameter), as scikit-learn's own estimators do when they fit."""
        check_hyper_parameters(self)
        return self._records(X)

    def _check_min_df(self, records: Sequence, unit: str) -> None:
        """A TrainingDataError naming min_df when fewer records than min_df are given: no term could be kept,
        and scikit-learn's vectoriser would only say 'max_df corresponds to < documents than min_df'."""
        if len(records) < self.min_df:
            raise TrainingDataError(f"min_df={self.min_df} keeps only the terms of at least {self.min_df} training "
                                    f"{unit}, and there are {len(records)}: give more, or a lower min_df "
                                    f"({setting('--param min_df=1', 'min_df=1')})")

    def _fitted_records(self, X: Sequence) -> list:
        """X as records, after checking that the model was fitted (NotFittedError otherwise)."""
        check_is_fitted(self)
        return self._records(X)

    _analyses_text = True  # a floor that looks only at the labels sets False

    def uses_morpheme_analysis(self) -> bool:
        """Whether fit and predict analyse the records' texts with Kiwi (so that parallel cross-fitting
        analyses them once, before the workers start)."""
        return self._analyses_text

    def fold_copy(self):
        """An unfitted copy for a fit that is scored and then dropped (a cross-fitting or a CV fold): a clone,
        in which a model may leave out work that only a kept model's explanations use."""
        return clone(self)

    def score(self, X: Sequence, y: Sequence, sample_weight: Any = None) -> float:
        """The task's first headline metric of predict(X) against y, on the 0-1 scale (NaN where the official
        metric is undefined, as Pearson r of a constant prediction)."""
        if sample_weight is not None:
            raise ValueError("the official KLUE metrics take no sample weights")
        records = self._records(X)
        return type(self)._headline(records, list(y), list(self.predict(records))) / 100


class NothingLearnt(TaskModel):
    """Mixin for a floor that learns nothing from its training data; fit only counts the records (and so
    marks the model fitted).

    Attributes
    ----------
    n_training_records_ : int
    """

    _analyses_text = False

    def fit(self, X: Sequence, y: Sequence) -> "NothingLearnt":
        """Count the training records; the labels are not read.

        Parameters
        ----------
        X : sequence of the task's records or plain inputs
        y : sequence
            The task's targets, accepted and ignored.

        Returns
        -------
        self
            The model, marked fitted.
        """
        self.n_training_records_ = len(self._fit_records(X))
        return self


def plain_text(item: Any, where: str) -> str:
    """A plain input that must be one text."""
    if not isinstance(item, str):
        raise DataError(PLAIN_INPUT, where, f"expected a str, not {type(item).__name__}")
    return item


def plain_pair(item: Any, where: str) -> tuple[str, str]:
    """A plain input that must be a pair of texts, such as (premise, hypothesis)."""
    if not (isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(part, str) for part in item)):
        raise DataError(PLAIN_INPUT, where, f"expected a (str, str) pair, not {item!r:.80}")
    return item[0], item[1]


def plain_row(item: Any, where: str) -> dict:
    """A plain input that must be a dict shaped like a raw JSONL row of the task."""
    if not isinstance(item, dict):
        raise DataError(PLAIN_INPUT, where, f"expected a dict shaped like a JSONL input row, not {type(item).__name__}")
    return item


class FloorInputs:
    """For a floor on scikit-learn's DummyClassifier or DummyRegressor, which never reads X: X is still read as
    the task's inputs, so that a wrong one (one str where a list is expected) is refused as every model does."""

    def fit(self, X: Sequence, y: Sequence, sample_weight: Any = None):
        """Learn what the floor predicts from y (scikit-learn's Dummy estimator's fit).

        Parameters
        ----------
        X : sequence of the task's records or plain inputs (checked, not read)
        y : sequence of the task's targets
        sample_weight : array-like or None

        Returns
        -------
        self
        """
        return super().fit(self._records(X), y, sample_weight)

    def predict(self, X: Sequence, *args: Any, **kwargs: Any):
        """The floor's prediction for every input.

        Parameters
        ----------
        X : sequence of the task's records or plain inputs (checked, not read)

        Returns
        -------
        numpy array, one prediction per input
        """
        return super().predict(self._records(X), *args, **kwargs)


class FloorClassifier(TaskModel, FloorInputs, DummyClassifier):
    """A task's trivial floor on scikit-learn's DummyClassifier: with strategy='constant', a constant that is not
    one of the training labels is a TrainingDataError naming it and the labels (scikit-learn's own ValueError
    is raised only inside fit, with its own wording)."""

    def fit(self, X: Sequence, y: Sequence, sample_weight: Any = None) -> "FloorClassifier":
        """Learn the labels' distribution (DummyClassifier.fit), after checking `constant`.

        Parameters
        ----------
        X : sequence of the task's records or plain inputs (not read)
        y : sequence of str
            The training labels.
        sample_weight : array-like or None

        Returns
        -------
        self : FloorClassifier
        """
        if self.strategy == "constant":
            labels = sorted({str(label) for label in y})
            if self.constant is None or str(self.constant) not in labels:
                raise TrainingDataError(f"constant={self.constant!r} is not one of the training labels "
                                        f"({', '.join(labels)}): the constant floor predicts one of them")
        return super().fit(X, y, sample_weight)

    def predict_proba(self, X: Sequence):
        return super().predict_proba(self._records(X))
