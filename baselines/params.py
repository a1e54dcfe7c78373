"""Hyper-parameter constraints of the task models, checked before any work starts.

Each estimator declares ``_parameter_constraints`` in scikit-learn's own vocabulary (Interval, StrOptions,
"boolean", None), and ``check_hyper_parameters`` validates its current parameters against them with
scikit-learn's validator, so that ``--param C=-1``, ``max_iter=0``, ``C=NaN`` or ``C=abc`` is refused in
one line instead of failing (or, worse, training) minutes later.
"""
from __future__ import annotations

from numbers import Integral, Real
from typing import Any

from sklearn.utils._param_validation import HasMethods, Interval, InvalidParameterError, Options, StrOptions, \
    validate_parameter_constraints

__all__ = ["AT_LEAST_ONE", "FOLDS", "FOLDS_OR_OFF", "HasMethods", "ITERATIONS", "Interval", "JOBS", "MIN_COUNT",
           "NEIGHBOURS", "NGRAM_RANGE", "NON_NEGATIVE", "POSITIVE", "SEED", "StrOptions", "check_hyper_parameters"]

# Interval rejects NaN and, with an open bound, infinity.
POSITIVE = Interval(Real, 0, None, closed="neither")
NON_NEGATIVE = Interval(Real, 0, None, closed="left")
AT_LEAST_ONE = Interval(Integral, 1, None, closed="left")
SEED = Interval(Integral, 0, 2**32 - 1, closed="both")  # numpy's seed range
# CoNg neighbours per morpheme: 5 to 10 times the defaults (10, 20). Each list is kept in memory and in the
# analysis cache for every morpheme of the data, so a count without a bound grew to gigabytes.
NEIGHBOURS = Interval(Integral, 0, 100, closed="both")
# Optimiser iterations and passes: far above what any default needs to converge (80 to 500), below what
# would run for days.
ITERATIONS = Interval(Integral, 1, 100_000, closed="both")
NGRAM_RANGE = tuple  # (low, high); checked for 1 <= low <= high <= MAX_NGRAM by check_hyper_parameters
# Every length up to `high` adds an n-gram at each position of each text, so the vocabulary grows with it.
MAX_NGRAM = 10
# A feature is kept when seen in at least this many training records. A count above the number of records
# empties the vocabulary; 1,000 is already 2 % of YNAT's 45,678 titles and 4 % of NLI's 24,998 pairs.
MIN_COUNT = Interval(Integral, 1, 1000, closed="both")
# Cross-validation folds inside a fit: 2 at least (one fold leaves nothing to train on), 20 at most. Each
# fold is one more whole fit, and past 20 each fit's training share is already 95 %.
FOLDS = Interval(Integral, 2, 20, closed="both")
FOLDS_OR_OFF = (Options(Integral, {0}), FOLDS)  # 0 turns the stage off
# Worker processes or threads inside a fit: a process holds its own copy of the features, so a thousand of
# them exhaust memory long before they help (`--jobs`, across fits, is capped at the cores instead).
JOBS = Interval(Integral, 1, 64, closed="both")


def check_hyper_parameters(estimator: Any) -> None:
    """ValueError naming the estimator, the parameter and what it accepts, when a parameter breaks the
    estimator's declared constraints (estimators without a declaration pass)."""
    constraints = getattr(estimator, "_parameter_constraints", None)
    if not constraints:
        return
    params = estimator.get_params(deep=False)
    name = type(estimator).__name__
    declared = {key: rule for key, rule in constraints.items() if key in params}
    try:
        validate_parameter_constraints(declared, {key: params[key] for key in declared}, caller_name=name)
    except InvalidParameterError as error:
        raise ValueError(str(error)) from None
    for key, rule in declared.items():
        value = params[key]
        # scikit-learn's Interval takes True for 1 (bool is an int): a JSON true is not a number.
        if isinstance(value, bool) and "boolean" not in rule and bool not in rule:
            raise ValueError(f"the '{key}' parameter of {name} must be a number, not {str(value).lower()}")
        if NGRAM_RANGE in rule and isinstance(value, tuple):
            if len(value) != 2 or not all(isinstance(v, Integral) and not isinstance(v, bool) for v in value) \
                    or not 1 <= value[0] <= value[1] <= MAX_NGRAM:
                raise ValueError(f"the '{key}' parameter of {name} must be a (low, high) pair of ints with "
                                 f"1 <= low <= high <= {MAX_NGRAM}; got {value!r}")
