"""What a model learnt and why it predicted what it did: its strongest features, in readable form.

Every explainable model has ``top_features(top_k)``: named sections (a class, a label, the transitions)
of (feature, weight) pairs, strongest first. The linear classifiers (YNAT, NLI, RE) also have
``feature_contributions(X, top_k)``: for each input, the class it was given and the features that pushed
it most towards that class, each as weight x value (its share of that class's score before the softmax).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from scipy import sparse
from sklearn.utils.validation import check_is_fitted

Weights = list[tuple[str, float]]


def readable(name: str) -> str:
    """A vectoriser's feature name as a person reads it: 'morphemes__축구/NNG 경기/NNG' -> 'morphemes 축구/NNG
    경기/NNG', 'neighbours__야구/NNG' -> 'neighbour 야구/NNG', 'characters__골 ' -> 'characters "골 "'; a
    DictVectorizer name stays as it is."""
    view, separator, rest = name.partition("__")
    if not separator:
        return name
    if view == "characters":  # quoted: a character n-gram may start or end with a space
        return f'characters "{rest}"'
    return f"{'neighbour' if view == 'neighbours' else view} {rest}"


def strongest(names: Sequence[str], weights: np.ndarray, top_k: int, both_signs: bool = False) -> Weights:
    """The top_k largest weights with their names (ties by name); with both_signs, the largest in size."""
    weights = np.asarray(weights, dtype=float).ravel()
    keys = np.abs(weights) if both_signs else weights
    order = sorted(range(len(weights)), key=lambda i: (-keys[i], names[i]))
    return [(readable(str(names[i])), float(weights[i])) for i in order[:top_k] if both_signs or weights[i] > 0]


def class_rows(classifier: Any) -> dict[str, np.ndarray]:
    """Each class's weight vector of a fitted linear classifier; a binary one has one row, which speaks for
    its second class, and its negation for the first."""
    coef = classifier.coef_
    classes = [str(label) for label in classifier.classes_]
    if coef.shape[0] == 1 and len(classes) == 2:
        return {classes[0]: -coef[0], classes[1]: coef[0]}
    return dict(zip(classes, coef))


def linear_top_features(names: Sequence[str], classifier: Any, top_k: int, prefix: str = "") -> dict[str, Weights]:
    """Per class, the features with the largest positive weights: what speaks most for that class."""
    return {f"{prefix}{label}": strongest(names, row, top_k) for label, row in class_rows(classifier).items()}


def contributions(matrix: sparse.spmatrix, names: Sequence[str], classifier: Any, labels: Sequence[str],
                  top_k: int) -> list[Weights]:
    """For each row of `matrix`, the features that pushed it most towards its label (weight x value, the
    largest first), as the class's logit sums them."""
    rows = class_rows(classifier)
    matrix = sparse.csr_matrix(matrix)
    explained = []
    for index, label in enumerate(labels):
        row = matrix.getrow(index)
        weight = rows[str(label)]
        pushed = row.data * weight[row.indices]
        order = sorted(range(len(pushed)), key=lambda i: (-pushed[i], names[row.indices[i]]))
        explained.append([(readable(str(names[row.indices[i]])), float(pushed[i])) for i in order[:top_k]])
    return explained


class LinearExplanation:
    """top_features and feature_contributions for a model whose decision is a fitted linear classifier
    (`classifier_`) over named features. The model gives `_explained_names()` and
    `_explained_matrix(records)`, the rows its classifier scores."""

    def top_features(self, top_k: int = 10) -> dict[str, Weights]:
        check_is_fitted(self)
        return linear_top_features(self._explained_names(), self.classifier_, top_k)

    def feature_contributions(self, X: Sequence, top_k: int = 5) -> list[tuple[str, Weights]]:
        """(predicted label, its strongest contributions) per input."""
        records = self._fitted_records(X)
        labels = [str(label) for label in self.predict(records)]
        return list(zip(labels, contributions(self._explained_matrix(records), self._explained_names(),
                                              self.classifier_, labels, top_k)))


def explainable(model: Any) -> bool:
    return hasattr(model, "top_features")
