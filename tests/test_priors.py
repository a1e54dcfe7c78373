"""Prior-shift adaptation recovers the label proportions of a batch from unlabelled posteriors."""
from __future__ import annotations

import numpy as np

from baselines.models.priors import MIN_BATCH, adapt_to_priors


def test_em_recovers_shifted_priors_and_improves_accuracy():
    rng = np.random.default_rng(0)
    # Two overlapping Gaussian classes; the posteriors are exact for equal training priors.
    labels = (rng.random(4000) < 0.2).astype(int)  # 80% class 0, 20% class 1 at test time
    x = rng.normal(loc=labels * 1.5, scale=1.0)
    likelihood = np.stack([np.exp(-x ** 2 / 2), np.exp(-(x - 1.5) ** 2 / 2)], axis=1)
    posteriors = likelihood / likelihood.sum(axis=1, keepdims=True)
    adjusted = adapt_to_priors(posteriors, np.array([0.5, 0.5]))
    assert abs(adjusted.mean(axis=0)[1] - 0.2) < 0.03
    assert np.allclose(adjusted.sum(axis=1), 1.0)
    before = np.mean(posteriors.argmax(axis=1) == labels)
    after = np.mean(adjusted.argmax(axis=1) == labels)
    assert after > before + 0.05


def test_small_batches_are_left_alone():
    posteriors = np.full((MIN_BATCH - 1, 2), 0.5)
    posteriors[:, 0] = 0.9
    posteriors[:, 1] = 0.1
    assert np.array_equal(adapt_to_priors(posteriors, np.array([0.5, 0.5])), posteriors)
