"""MRC's listwise span ranker: a linear scorer whose softmax over a question's candidates puts its gold spans first."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy import sparse, special
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from baselines.models.linear import minimise, ordered_dot
from baselines.models.params import ITERATIONS, NON_NEGATIVE, check_hyper_parameters

# The fit stops where no component of the gradient exceeds this (SciPy's L-BFGS-B default, which it used first).
GRADIENT_TOLERANCE = 1e-5


def grouped_softmax(scores: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log-sum-exp of each group of consecutive scores, and each score's softmax share within its group
    (a score of -inf gets 0); every group needs one finite score."""
    peaks = np.maximum.reduceat(scores, starts)
    # expm1 and log1p (totals are at least 1: the peak adds exp(0)), as OrderedLogisticRegression's, for the
    # same reason: SciPy's are the same on every CPU, where numpy picks its exp and log by the CPU's features.
    powers = special.expm1(scores - np.repeat(peaks, sizes)) + 1.0
    totals = np.add.reduceat(powers, starts)
    return peaks + special.log1p(totals - 1.0), powers / np.repeat(totals, sizes)


def listwise_loss(weights: np.ndarray, blocks: Sequence[sparse.csr_matrix], gold: Sequence[np.ndarray],
                  alpha: float) -> tuple[float, np.ndarray]:
    """The mean over questions of -log(the softmax share of a question's gold spans among its candidates),
    plus alpha/2 ||weights||², and its gradient. `blocks` hold the candidate rows of the questions one after
    another, in the order of `gold` (each question's gold marks)."""
    return _ListwiseObjective(blocks, gold, alpha)(weights)


class _ListwiseObjective:
    """listwise_loss with what does not depend on the weights computed once, for the optimiser's calls."""

    def __init__(self, blocks: Sequence[sparse.csr_matrix], gold: Sequence[np.ndarray], alpha: float):
        self.blocks, self.alpha, self.questions = list(blocks), alpha, len(gold)
        self.is_gold = np.concatenate(gold)
        self.sizes = np.array([len(positive) for positive in gold])
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])
        self.bounds = np.cumsum([0] + [block.shape[0] for block in self.blocks])

    def __call__(self, weights: np.ndarray, out: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """The loss at `weights` and its gradient, written into `out` when given."""
        scores = np.concatenate([block @ weights for block in self.blocks])
        all_log_sum, all_share = grouped_softmax(scores, self.starts, self.sizes)
        gold_log_sum, gold_share = grouped_softmax(np.where(self.is_gold, scores, -np.inf), self.starts, self.sizes)
        # A mean, not a sum: the penalty then means the same for the 60 questions of a test and the 17,554 of
        # the official training file.
        loss = float(np.mean(all_log_sum - gold_log_sum) + 0.5 * self.alpha * ordered_dot(weights, weights))
        residual = all_share - gold_share
        gradient = sum(block.T @ residual[low:high] for block, low, high in zip(self.blocks, self.bounds,
                                                                                 self.bounds[1:]))
        gradient = gradient / self.questions + self.alpha * weights
        if out is None:
            return loss, gradient
        np.copyto(out, gradient)
        return loss, out


def listwise_weights(blocks: Sequence[sparse.csr_matrix], gold: Sequence[np.ndarray], alpha: float, max_iter: int,
                     start: np.ndarray | None = None) -> np.ndarray:
    """The weights that minimise listwise_loss, by L-BFGS from `start` (else zeros). The L-BFGS is
    OrderedLogisticRegression's, whose sums run in a fixed order: SciPy's L-BFGS-B, used first, sums by BLAS,
    and under another OpenBLAS kernel the fast reader's beliefs moved by up to 6e-6 (bench determinism)."""
    if not gold:
        raise ValueError("no training question has its answer among the candidate spans")
    point = np.zeros(blocks[0].shape[1]) if start is None else np.array(start, dtype=float)  # written over
    weights, _iterations = minimise(_ListwiseObjective(blocks, gold, alpha), point, GRADIENT_TOLERANCE, max_iter)
    return weights


class ListwiseRanker(BaseEstimator):
    """A linear scorer of a question's candidate spans, trained listwise: for each training question, the share
    of probability that its gold spans get among all its candidates is maximised (mean over the questions).
    Every candidate counts, and this is the loss that picking the top span needs, where pairwise logistic
    regression on sampled negatives (tried first) learns to tell one span from a random other one.

    Parameters
    ----------
    alpha : float
        L2 penalty (alpha/2 ||w||², on the mean loss, so it means the same for any number of questions).
    max_iter : int
        L-BFGS iterations.
    warm_start : bool
        Start a fit from the weights of the previous one (a grid of alphas, from the most penalised).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    """

    _parameter_constraints = {"alpha": [NON_NEGATIVE], "max_iter": [ITERATIONS], "warm_start": ["boolean"]}

    def __init__(self, *, alpha: float = 0.1, max_iter: int = 500, warm_start: bool = False):
        self.alpha = alpha
        self.max_iter = max_iter
        self.warm_start = warm_start

    def fit(self, X: sparse.spmatrix | Sequence[sparse.spmatrix], y: Sequence[np.ndarray]) -> "ListwiseRanker":
        """Learn the weights.

        Parameters
        ----------
        X : sparse matrix, or a sequence of them
            The candidates' (scaled) feature rows, question after question in the order of y; in several
            blocks where one stacked copy would double the peak memory (the official train file).
        y : sequence of boolean ndarray
            Per question, which of its candidates are gold; a question needs one of each.

        Returns
        -------
        self : ListwiseRanker
        """
        check_hyper_parameters(self)
        blocks = [X] if sparse.issparse(X) else list(X)
        start = self.coef_ if self.warm_start and hasattr(self, "coef_") else None
        self.coef_ = listwise_weights(blocks, list(y), self.alpha, self.max_iter, start)
        return self

    def decision_function(self, X: sparse.spmatrix) -> np.ndarray:
        """The score of each candidate row.

        Parameters
        ----------
        X : sparse matrix of shape (n_candidates, n_features)

        Returns
        -------
        ndarray of shape (n_candidates,)
        """
        check_is_fitted(self)
        if not X.shape[0]:
            return np.zeros(0)
        return np.asarray(X @ self.coef_).ravel()

    def score(self, X: Sequence[sparse.spmatrix], y: Sequence[np.ndarray]) -> float:
        """The share of questions whose best scored candidate is gold.

        Parameters
        ----------
        X : sequence of sparse matrix
            One block of candidate rows per question.
        y : sequence of boolean ndarray
            Per question, which of its candidates are gold.

        Returns
        -------
        float
        """
        hits = [bool(positive[np.argmax(self.decision_function(block))]) for block, positive in zip(X, y)
                if len(positive)]
        return float(np.mean(hits)) if hits else float("nan")
