"""OrderedLogisticRegression: scikit-learn's optimum, a real estimator, and the same weights under any BLAS (as MRC's
listwise ranker, which fits by the same L-BFGS)."""
from __future__ import annotations

import os
import platform
import subprocess
import sys

import numpy as np
import pytest
from scipy import sparse
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression

from baselines.models.linear import OrderedLogisticRegression, RowBlocks, add_scaled, ordered_dot


@pytest.mark.parametrize("classes", [2, 4])
@pytest.mark.parametrize("class_weight", [None, "balanced", "dict"])
def test_reaches_scikit_learns_optimum(classes, class_weight):
    X, y = make_classification(500, 20, n_informative=8, n_classes=classes, weights=None, random_state=1)
    weights = {0: 2.0, 1: 0.5} if class_weight == "dict" else class_weight
    sample_weight = np.linspace(0.5, 1.5, len(y))
    ours = OrderedLogisticRegression(C=0.3, class_weight=weights, tol=1e-9, max_iter=3000)
    ours.fit(sparse.csr_matrix(X), y, sample_weight=sample_weight)
    theirs = LogisticRegression(C=0.3, class_weight=weights, tol=1e-10, max_iter=5000).fit(X, y, sample_weight)
    assert ours.coef_.shape == theirs.coef_.shape and ours.intercept_.shape == theirs.intercept_.shape
    assert np.abs(ours.predict_proba(X) - theirs.predict_proba(X)).max() < 1e-5
    assert np.array_equal(ours.predict(X), theirs.predict(X))
    assert ours.score(X, y) == theirs.score(X, y)


def test_is_a_scikit_learn_classifier():
    X, y = make_classification(100, 5, random_state=0)
    model = OrderedLogisticRegression(C=2.0)
    with pytest.raises(NotFittedError):
        model.predict(X)
    assert clone(model).get_params() == {"C": 2.0, "class_weight": None, "tol": 1e-4, "max_iter": 100}
    assert model.fit(X, y) is model and model.n_features_in_ == 5
    with pytest.raises(ValueError, match="'C' parameter"):
        OrderedLogisticRegression(C=-1).fit(X, y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        OrderedLogisticRegression().fit(X, np.zeros(len(y)))


FIT_AND_PRINT = """
import hashlib
import numpy as np
from scipy import sparse
from baselines.models.linear import OrderedLogisticRegression, RowBlocks, add_scaled, ordered_dot
rng = np.random.default_rng(0)
X = sparse.random(3000, 4000, density=0.01, format="csr", random_state=0)
y = (X @ rng.normal(size=4000) + rng.normal(size=3000) > 0).astype(int) + (rng.random(3000) > 0.7)
model = OrderedLogisticRegression(C=0.5, max_iter=200).fit(X, y)
print(hashlib.sha256(model.coef_.tobytes() + model.intercept_.tobytes()).hexdigest(), model.n_iter_[0])
"""

# 300 questions of 2 to 29 candidates, one gold each: SciPy's L-BFGS-B, which the ranker used before, gave three
# different weight vectors under these three kernels.
RANK_AND_PRINT = """
import hashlib
import numpy as np
from scipy import sparse
from baselines.tasks.mrc.ranking import ListwiseRanker
rng = np.random.default_rng(0)
blocks, gold = [], []
for _question in range(300):
    candidates = int(rng.integers(2, 30))
    blocks.append(sparse.random(candidates, 3000, density=0.02, random_state=int(rng.integers(1 << 30)),
                                format="csr"))
    gold.append(np.arange(candidates) == rng.integers(candidates))
model = ListwiseRanker(alpha=0.01).fit(sparse.vstack(blocks, format="csr"), gold)
print(hashlib.sha256(model.coef_.tobytes()).hexdigest())
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64") or "OPENBLAS_CORETYPE" in os.environ,
                    reason="OpenBLAS kernels are chosen by name only on x86-64, and a pinned kernel is kept")
@pytest.mark.parametrize("script", [FIT_AND_PRINT, RANK_AND_PRINT], ids=["logistic-regression", "mrc-ranker"])
def test_weights_are_the_same_under_other_blas_kernels_and_threads(script):
    runs = set()
    for kernel, threads in [("Prescott", "1"), ("Sandybridge", "2"), (None, "2")]:
        env = dict(os.environ, OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads)
        if kernel:
            env["OPENBLAS_CORETYPE"] = kernel
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        runs.add(done.stdout)
    assert len(runs) == 1, runs


def test_weights_are_the_same_for_any_number_of_product_threads(monkeypatch):
    rng = np.random.default_rng(3)
    X = sparse.random(20000, 900, density=0.01, format="csr", random_state=3)
    y = (X @ rng.normal(size=900) > 0).astype(int) + (rng.random(20000) > 0.6)
    assert [len(RowBlocks(X, threads).blocks) for threads in (1, 2, 3)] == [4, 8, 9]  # 2,048 rows at least
    blocks = RowBlocks(X, 2)
    assert [start for start, _end, _block in blocks.blocks[1:]] == [end for _start, end, _block in blocks.blocks[:-1]]
    for _start, _end, block in blocks.blocks:  # views: the blocks do not hold a second copy of X
        assert np.shares_memory(block.data, X.data) and np.shares_memory(block.indices, X.indices)
    dense = rng.normal(size=(900, 3))
    assert np.array_equal(blocks.product(dense), X @ dense)
    fitted = []
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("OMP_NUM_THREADS", threads)
        model = OrderedLogisticRegression(C=0.5, max_iter=60).fit(X, y)
        fitted.append(model.coef_.tobytes() + model.intercept_.tobytes())
    assert fitted[0] == fitted[1] == fitted[2]


NUMPY_FEATURES = "import os, sys; import baselines; print(os.environ.get('NPY_DISABLE_CPU_FEATURES'))"


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="numpy's feature groups are x86-64's")
@pytest.mark.parametrize("preset, first, expected", [
    (None, "", "X86_V4"),  # the command line's case: this package loads before numpy
    ("AVX512F", "", "AVX512F"),  # a value the user set is kept
    (None, "import numpy; ", "None"),  # too late once numpy is loaded: left alone
])
def test_numpy_is_asked_for_loops_no_wider_than_avx2_before_it_loads(preset, first, expected):
    import numpy

    if tuple(int(part) for part in numpy.__version__.split(".")[:2]) < (2, 4):
        pytest.skip("numpy names its feature groups from 2.4")
    env = {key: value for key, value in os.environ.items() if key != "NPY_DISABLE_CPU_FEATURES"}
    if preset:
        env["NPY_DISABLE_CPU_FEATURES"] = preset
    done = subprocess.run([sys.executable, "-c", first + NUMPY_FEATURES], env=env, capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == expected


@pytest.mark.parametrize("length", [1, 7, 128, 129, 2 ** 15, 2 ** 15 + 1, 8 * 2 ** 15 + 3, 1_000_003])
def test_the_run_by_run_sums_are_numpys_whole_vector_sums_to_the_last_bit(length):
    rng = np.random.default_rng(length)
    a, b = rng.standard_normal(length) * 1e3, rng.standard_normal(length)
    assert ordered_dot(a, b) == float(np.add.reduce(a * b))
    assert ordered_dot(a.reshape(1, -1), b.reshape(1, -1)) == float(np.add.reduce(a * b))
    target = rng.standard_normal(length)
    expected = target - 0.37 * b
    add_scaled(target, b, -0.37)
    assert np.array_equal(target, expected)
