"""Logistic regression fitted by an L-BFGS whose every sum runs in a fixed order, so that its weights do not
depend on the BLAS kernel, the number of threads or the processor."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np
from joblib.externals import loky
from scipy import sparse, special
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from baselines.models.estimators import TrainingDataError
from baselines.models.params import ITERATIONS, POSITIVE, StrOptions, check_hyper_parameters

# scikit-learn's lbfgs hands its vectors to SciPy's L-BFGS-B, whose dot products are BLAS calls: another
# OpenBLAS kernel sums in another order, the path moves by the last bits at every step, and where the fit
# stops (tolerance 1e-4) NLI's dev probabilities differed by up to 0.007 between the Haswell and Prescott
# kernels (a tolerance of 1e-7 still left 2e-5, at four times the iterations). Here every product with the
# data is a SciPy sparse product (one row or column after another), and every other sum is numpy's pairwise
# sum of an elementwise product, whose order is fixed by the length alone. No BLAS routine is called. Exponents
# and logarithms come from SciPy's expm1 and log1p, compiled once for every x86-64 CPU, where numpy picks its
# exp and log kernels by the CPU's features (AVX2 or AVX-512) at run time.
_ARMIJO = 1e-4  # sufficient decrease of the line search
_MEMORY = 10  # (s, y) pairs that L-BFGS keeps, as SciPy's default
_FTOL = 64 * np.finfo(float).eps  # relative decrease under which the fit stops, as scikit-learn's lbfgs
_ROWS_PER_BLOCK = 2048  # fewer rows than this in a block, and starting a thread costs more than it saves
_BLOCKS_PER_THREAD = 4
_CACHED_RUN = 1 << 15  # values whose products (256 KB) stay in a core's cache
_CACHED_VECTOR = 1 << 18  # vectors (2 MB) short enough to take whole: cutting them into runs costs more


def ordered_dot(a: np.ndarray, b: np.ndarray) -> float:
    """Sum of a * b in an order that depends only on the length (numpy's pairwise sum), never on BLAS.

    It is np.add.reduce((a * b).ravel()) to the last bit, without the vector of products: numpy's pairwise
    sum halves a run of n values at n // 2 less its remainder by 8 until a half is short, so the halves are
    split here the same way, down to runs whose products fit in a core's cache, and each run's products
    are summed by numpy; its sums are added as numpy would add them. A long vector of products cost L-BFGS
    more than the data (RE's fit: 61 iterations, 25 s in these sums), in memory traffic."""
    a, b = a.ravel(), b.ravel()
    if a.size <= _CACHED_VECTOR:
        return float(np.add.reduce(a * b))
    products = np.empty(_CACHED_RUN)

    def pairwise(start: int, length: int) -> float:
        if length <= _CACHED_RUN:
            run = products[:length]
            np.multiply(a[start:start + length], b[start:start + length], out=run)
            return float(np.add.reduce(run))
        half = length // 2
        half -= half % 8
        return pairwise(start, half) + pairwise(start + half, length - half)

    return pairwise(0, a.size)


def add_scaled(target: np.ndarray, vector: np.ndarray, factor: float) -> None:
    """target += factor * vector, run by run (the same values as the whole expression, with no vector of
    the products)."""
    if target.size <= _CACHED_VECTOR:
        target += np.multiply(vector, factor)
        return
    scaled = np.empty(_CACHED_RUN)
    for start in range(0, target.size, _CACHED_RUN):
        run = target[start:start + _CACHED_RUN]
        run += np.multiply(vector[start:start + _CACHED_RUN], factor, out=scaled[:run.size])


class OrderedLogisticRegression(ClassifierMixin, BaseEstimator):
    """Multinomial logistic regression with an L2 penalty, as scikit-learn's LogisticRegression(solver="lbfgs")
    states it, fitted so that two machines get the same weights.

    It minimises, over weights W (one row per class) and intercepts b, the mean of the sample-weighted log
    loss plus ||W||² / (2 C n), n the sum of the sample weights. With two classes the result is scikit-learn's
    binary model: one weight row (for the second class) and one intercept.

    Parameters
    ----------
    C : float
        Inverse strength of the penalty.
    class_weight : "balanced", dict or None
        Weight of each class's samples, as in scikit-learn ("balanced": n / (classes × count), both counted
        in sample weights).
    tol : float
        The fit stops when no gradient component exceeds it (or the loss stops decreasing).
    max_iter : int
        Most L-BFGS iterations.

    Attributes
    ----------
    classes_ : ndarray
    coef_ : ndarray of shape (1, features) for two classes, else (classes, features)
    intercept_ : ndarray of shape (1,) or (classes,)
    n_iter_ : ndarray of shape (1,)
        Iterations run.
    """

    _parameter_constraints = {"C": [POSITIVE], "class_weight": [StrOptions({"balanced"}), dict, None],
                              "tol": [POSITIVE],
                              "max_iter": [ITERATIONS]}

    def __init__(self, *, C: float = 1.0, class_weight=None, tol: float = 1e-4, max_iter: int = 100):
        self.C = C
        self.class_weight = class_weight
        self.tol = tol
        self.max_iter = max_iter

    def fit(self, X, y, sample_weight=None) -> "OrderedLogisticRegression":
        """Fit to X (dense or sparse, rows of features) and labels y; returns self."""
        check_hyper_parameters(self)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            # A TrainingDataError (a ValueError, as scikit-learn raises): the CLI shows it as one line.
            raise TrainingDataError(f"a classifier needs training records of at least 2 classes; all "
                                    f"{len(y)} are {str(self.classes_[0])!r}")
        weights = self._sample_weights(codes, sample_weight)
        X = sparse.csr_matrix(X)  # dense rows too: a dense product would be a BLAS call
        classes = len(self.classes_)
        # Two classes as two rows with half the C have the optimum of one row with C (the rows end up opposite).
        C = self.C / 2 if classes == 2 else self.C
        objective = _Objective(X, codes, weights, classes, C)
        point, self.n_iter_ = minimise(objective, np.zeros(classes * (X.shape[1] + 1)), self.tol, self.max_iter)
        W, b = objective.split(point)
        if classes == 2:
            self.coef_, self.intercept_ = (W[1] - W[0])[None, :], np.array([b[1] - b[0]])
        else:
            self.coef_, self.intercept_ = W, b
        return self

    def _sample_weights(self, codes: np.ndarray, sample_weight) -> np.ndarray:
        weights = np.ones(len(codes)) if sample_weight is None else np.asarray(sample_weight, dtype=float).copy()
        if weights.shape != codes.shape or not np.all(np.isfinite(weights)) or weights.min() < 0:
            raise ValueError(f"sample_weight must be {len(codes)} finite weights of at least 0")
        if self.class_weight == "balanced":  # counts weighted by the sample weights, as scikit-learn's
            counts = np.bincount(codes, weights=weights, minlength=len(self.classes_))
            weights *= (float(np.add.reduce(weights)) / (len(self.classes_) * counts))[codes]
        elif isinstance(self.class_weight, dict):
            unknown = set(self.class_weight) - set(self.classes_.tolist())
            if unknown:
                raise ValueError(f"class_weight names classes not in y: {sorted(map(str, unknown))}")
            weights *= np.array([self.class_weight.get(label, 1.0) for label in self.classes_])[codes]
        return weights

    def decision_function(self, X) -> np.ndarray:
        """The logits: X W' + b (one column for two classes, the second class's log-odds)."""
        check_is_fitted(self)
        X = sparse.csr_matrix(validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False))
        scores = np.asarray(X @ self.coef_.T) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict_proba(self, X) -> np.ndarray:
        scores = self.decision_function(X)
        if scores.ndim == 1:
            scores = np.column_stack([np.zeros_like(scores), scores])
        return _softmax(scores)

    def predict(self, X) -> np.ndarray:
        best = self.predict_proba(X).argmax(axis=1)
        return self.classes_[best]


def _exp_of_non_positive(values: np.ndarray) -> np.ndarray:
    """exp(values) for values <= 0, to within 1.2e-16, the same on every CPU."""
    return special.expm1(values) + 1.0


def _softmax(scores: np.ndarray) -> np.ndarray:
    shifted = _exp_of_non_positive(scores - scores.max(axis=1, keepdims=True))
    return shifted / np.add.reduce(shifted, axis=1, keepdims=True)


def product_threads() -> int:
    """Threads for the fit's sparse products: the cores this process may use (joblib's count), or fewer where
    OMP_NUM_THREADS says so, as joblib's workers set it to their share of the cores."""
    cores = loky.cpu_count()
    try:
        return max(1, min(cores, int(os.environ.get("OMP_NUM_THREADS", cores))))
    except ValueError:
        return cores


def _row_view(matrix: sparse.csr_matrix, start: int, end: int) -> sparse.csr_matrix:
    """Rows start:end of a CSR matrix over its own values and column indices. Slicing, and the constructor too
    (it copies a view of a larger array), would copy them: the blocks of a large design matrix would then hold
    it twice. So the block starts empty and takes views as its arrays."""
    first, last = matrix.indptr[start], matrix.indptr[end]
    block = sparse.csr_matrix((end - start, matrix.shape[1]), dtype=matrix.dtype)
    block.data, block.indices = matrix.data[first:last], matrix.indices[first:last]
    block.indptr = matrix.indptr[start:end + 1] - first
    return block


class RowBlocks:
    """A CSR matrix cut into blocks of rows with about the same number of stored values, whose products with a
    dense matrix run on a few threads (SciPy's sparse products release the GIL). Each row of a product is
    SciPy's sum over that row's values in their stored order, whatever block it is in, so the result is the
    same to the last bit for any number of threads; and there are a few blocks per thread, so that the
    blocks' results in flight are a fraction of the whole product's size."""

    def __init__(self, matrix: sparse.csr_matrix, threads: int):
        rows = matrix.shape[0]
        self.threads = threads
        blocks = max(1, min(threads * _BLOCKS_PER_THREAD, rows // _ROWS_PER_BLOCK))
        targets = np.arange(1, blocks) * (matrix.nnz / blocks)
        bounds = [0, *np.searchsorted(matrix.indptr, targets).tolist(), rows]
        self.blocks = [(start, end, _row_view(matrix, start, end))
                       for start, end in zip(bounds[:-1], bounds[1:]) if end > start]
        self.blocks = self.blocks or [(0, rows, matrix)]

    def each(self, work: Callable[[int, int, sparse.csr_matrix], None]) -> None:
        """work(first row, end row, block) for every block, on up to `threads` threads at once."""
        if self.threads == 1 or len(self.blocks) == 1:
            for start, end, block in self.blocks:
                work(start, end, block)
            return
        with ThreadPoolExecutor(min(self.threads, len(self.blocks))) as pool:
            for done in [pool.submit(work, *block) for block in self.blocks]:
                done.result()  # raises what the work raised

    def product(self, dense: np.ndarray) -> np.ndarray:
        """The matrix times `dense` (rows x k)."""
        result = np.empty((self.blocks[-1][1], dense.shape[1]))

        def fill(start: int, end: int, block: sparse.csr_matrix) -> None:
            result[start:end] = block @ dense

        self.each(fill)
        return result


class _Objective:
    """The penalised mean log loss and its gradient at a flat point (weights row by row, then intercepts)."""

    def __init__(self, X: sparse.csr_matrix, codes: np.ndarray, weights: np.ndarray, classes: int, C: float):
        threads = product_threads()
        self.X, self.XT = RowBlocks(X, threads), RowBlocks(X.T.tocsr(), threads)
        self.classes, self.features = classes, X.shape[1]
        self.total = float(np.add.reduce(weights))
        self.scale = weights / self.total
        self.truth = np.zeros((len(codes), classes))
        self.truth[np.arange(len(codes)), codes] = 1.0
        self.penalty = 1.0 / (C * self.total)
        self.transposed = np.empty((self.features, classes))  # W', written over at each call

    def split(self, point: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cut = self.classes * self.features
        return point[:cut].reshape(self.classes, self.features), point[cut:]

    def __call__(self, point: np.ndarray, out: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """The loss at `point` and its gradient, written into `out` when given."""
        W, b = self.split(point)
        np.copyto(self.transposed, W.T)
        logits = self.X.product(self.transposed)
        logits += b
        top = logits.max(axis=1, keepdims=True)
        exps = _exp_of_non_positive(logits - top)
        sums = np.add.reduce(exps, axis=1, keepdims=True)  # at least 1: the top class adds exp(0)
        log_loss = (special.log1p(sums - 1.0) + top).ravel() - np.add.reduce(logits * self.truth, axis=1)
        loss = float(np.add.reduce(self.scale * log_loss)) + 0.5 * self.penalty * ordered_dot(W, W)
        residual = (exps / sums - self.truth) * self.scale[:, None]
        # Built in place in one vector, block by block of features: with 30 classes and 240,000 features a vector
        # is 58 MB, and X'R whole, the sum, its flattening and the concatenation each made one more.
        # p W + X'R is X'R + p W to the last bit.
        gradient = np.empty_like(point) if out is None else out
        gradient_W, gradient_b = self.split(gradient)
        np.multiply(W, self.penalty, out=gradient_W)

        def add_data_term(start: int, end: int, features: sparse.csr_matrix) -> None:
            gradient_W[:, start:end] += (features @ residual).T

        self.XT.each(add_data_term)
        np.add.reduce(np.ascontiguousarray(residual.T), axis=1, out=gradient_b)
        return loss, gradient


def _largest_magnitude(vector: np.ndarray) -> float:
    """np.abs(vector).max() without a vector of magnitudes."""
    return max(float(vector.max()), -float(vector.min()))


def minimise(objective: Callable[..., tuple[float, np.ndarray]], point: np.ndarray, tol: float,
             max_iter: int) -> tuple[np.ndarray, np.ndarray]:
    """L-BFGS with a backtracking (Armijo) line search from `point` (whose array it writes over); returns the
    point and the iterations run. `objective(point, out=None)` gives the loss and its gradient, written into
    `out` when given; it stops where no gradient component exceeds `tol`, or the loss stops decreasing."""
    loss, gradient = objective(point)
    steps: list[tuple[np.ndarray, np.ndarray, float]] = []  # (s, y, 1 / s·y)
    # Vectors that the memory lets go are written over, not allocated again: a new vector of this size comes
    # from the kernel as fresh pages, whose zeroing took longer than the arithmetic on it (RE: 58 MB each, a
    # few per iteration). The memory holds 20; the spares, taken again within the iteration, and the objective's
    # W' add about one vector to a fit's peak (RE's process: 2,107 -> 2,176 MiB).
    spare: list[np.ndarray] = []

    def vector() -> np.ndarray:
        return spare.pop() if spare else np.empty_like(point)

    iteration = 0
    while iteration < max_iter and _largest_magnitude(gradient) > tol:
        iteration += 1
        direction = _two_loop(gradient, steps, vector())
        slope = ordered_dot(gradient, direction)
        if slope >= 0:  # not a descent direction: start the memory again
            spare.extend(kept for pair in steps for kept in pair[:2])
            steps.clear()
            np.negative(gradient, out=direction)
            slope = -ordered_dot(gradient, gradient)
        step = 1.0 if steps else min(1.0, 1.0 / _largest_magnitude(gradient))
        candidate, new_gradient = vector(), vector()
        for _halving in range(50):
            np.multiply(direction, step, out=candidate)
            candidate += point
            new_loss, _ = objective(candidate, out=new_gradient)
            if new_loss <= loss + _ARMIJO * step * slope:
                break
            step *= 0.5
        else:
            break  # no decrease along the direction: as good as this arithmetic allows
        spare.append(direction)
        s, y = np.subtract(candidate, point, out=point), np.subtract(new_gradient, gradient, out=gradient)
        curvature = ordered_dot(s, y)
        if curvature > 1e-10 * ordered_dot(y, y):
            steps.append((s, y, 1.0 / curvature))
            for dropped in steps[:-_MEMORY]:
                spare.extend(dropped[:2])
            del steps[:-_MEMORY]
        else:
            spare.extend((s, y))
        decrease = (loss - new_loss) / max(abs(loss), abs(new_loss), 1.0)
        point, loss, gradient = candidate, new_loss, new_gradient
        if decrease <= _FTOL:
            break
    return point, np.array([iteration])


def _two_loop(gradient: np.ndarray, steps: list[tuple[np.ndarray, np.ndarray, float]],
              out: np.ndarray) -> np.ndarray:
    """-H g for the inverse Hessian approximation that the kept steps define, written into `out`."""
    q = out
    np.copyto(q, gradient)
    alphas = []
    for s, y, rho in reversed(steps):
        alpha = rho * ordered_dot(s, q)
        add_scaled(q, y, -alpha)  # q - alpha y: the same values, as -alpha is exact
        alphas.append(alpha)
    if steps:
        s, y, rho = steps[-1]
        q *= 1.0 / (rho * ordered_dot(y, y))
    for (s, y, rho), alpha in zip(steps, reversed(alphas)):
        beta = rho * ordered_dot(y, q)
        add_scaled(q, s, alpha - beta)
    return np.negative(q, out=q)
