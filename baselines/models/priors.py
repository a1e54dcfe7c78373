"""Label-prior shift: re-estimate class priors on unlabelled evaluation inputs and adjust posteriors."""
from __future__ import annotations

import numpy as np

# Below this many inputs the estimated priors are too noisy to trust; posteriors are left as they are.
MIN_BATCH = 500


def adapt_to_priors(probabilities: np.ndarray, train_priors: np.ndarray, iterations: int = 100,
                    tolerance: float = 1e-6) -> np.ndarray:
    """EM re-estimation of the class priors of a batch (Saerens, Latinne and Decaestecker, 2002).

    A classifier's posteriors carry its training priors. When the inputs to predict come with other label
    proportions (KLUE's dev sets do: YNAT dev is 41% 사회 against 11% in train, RE dev 60% no_relation
    against 29%), re-weighting each class by new_prior / train_prior, with the new priors estimated from
    the adjusted posteriors themselves until they settle, corrects them. Only the inputs are used,
    never their labels.
    """
    probabilities = np.asarray(probabilities, dtype=float)
    if len(probabilities) < MIN_BATCH:
        return probabilities
    train_priors = np.clip(np.asarray(train_priors, dtype=float), 1e-12, None)
    priors = train_priors.copy()
    adjusted = probabilities
    for _ in range(iterations):
        weighted = probabilities * (priors / train_priors)
        adjusted = weighted / weighted.sum(axis=1, keepdims=True)
        new_priors = adjusted.mean(axis=0)
        if np.abs(new_priors - priors).max() < tolerance:
            break
        priors = new_priors
    return adjusted
