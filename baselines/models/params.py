"""Hyper-parameter constraints of the task models, checked before any work starts.

Each estimator declares ``_parameter_constraints``: for each parameter, a list of what it may be (an Interval,
Options, StrOptions, HasMethods, NgramRange, a type, "boolean" or None). ``check_hyper_parameters`` checks its
current parameters against them, so that ``--param C=-1``, ``max_iter=0``, ``C=NaN`` or ``C=abc`` is refused
in one line instead of failing (or, worse, training) minutes later. The vocabulary is scikit-learn's, but the
checks are written here: scikit-learn keeps its own in a private module (sklearn.utils._param_validation),
which may change in any release.
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, Iterable

import numpy as np

__all__ = ["AT_LEAST_ONE", "FOLDS", "FOLDS_OR_OFF", "HasMethods", "ITERATIONS", "Interval", "JOBS", "MIN_COUNT",
           "NEIGHBOURS", "NGRAM_RANGE", "NON_NEGATIVE", "NgramRange", "Options", "POSITIVE", "SEED", "StrOptions",
           "check_hyper_parameters"]


def _is_number(value: Any, kind: type) -> bool:
    """An int (for Integral) or any real number (for Real), never a bool: a JSON true is not a number."""
    return isinstance(value, kind) and not isinstance(value, bool)


class Interval:
    """Numbers of `kind` (Integral or Real) between `low` and `high` (None: unbounded on that side); `closed`
    says which bounds belong ('left', 'right', 'both', 'neither'). NaN is never inside, nor is an infinite
    bound unless it is closed."""

    def __init__(self, kind: type, low: float | None, high: float | None, *, closed: str):
        if kind not in (Integral, Real) or closed not in ("left", "right", "both", "neither"):
            raise TypeError(f"Interval({kind!r}, closed={closed!r}): kind is Integral or Real, closed one of "
                            "left, right, both, neither")
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def is_satisfied_by(self, value: Any) -> bool:
        if not _is_number(value, self.kind) or (isinstance(value, float) and math.isnan(value)):
            return False
        low = -math.inf if self.low is None else self.low
        high = math.inf if self.high is None else self.high
        above = value >= low if self.closed in ("left", "both") else value > low
        below = value <= high if self.closed in ("right", "both") else value < high
        return above and below

    def __str__(self) -> str:
        kind = "an int" if self.kind is Integral else "a float"
        low = "-inf" if self.low is None else self.low
        high = "inf" if self.high is None else self.high
        left = "[" if self.closed in ("left", "both") else "("
        right = "]" if self.closed in ("right", "both") else ")"
        return f"{kind} in the range {left}{low}, {high}{right}"


class Options:
    """One of a few values of `kind` (Integral: {0} for 'off')."""

    def __init__(self, kind: type, options: Iterable):
        self.kind, self.options = kind, set(options)

    def is_satisfied_by(self, value: Any) -> bool:
        return _is_number(value, self.kind) and value in self.options

    def __str__(self) -> str:
        kind = {Integral: "an int", Real: "a float", str: "a str"}.get(self.kind, f"a {self.kind.__name__}")
        return f"{kind} among {{{', '.join(map(repr, sorted(self.options)))}}}"


class StrOptions(Options):
    """One of a few strings."""

    def __init__(self, options: Iterable[str]):
        super().__init__(str, options)


class HasMethods:
    """An object with these methods (an estimator given as a hyper-parameter)."""

    def __init__(self, methods: Iterable[str]):
        self.methods = list(methods)

    def is_satisfied_by(self, value: Any) -> bool:
        return all(callable(getattr(value, method, None)) for method in self.methods)

    def __str__(self) -> str:
        return f"an object implementing {', '.join(map(repr, self.methods))}"


class NgramRange:
    """A (low, high) pair of ints with 1 <= low <= high <= `most`: every length up to high adds an n-gram at
    each position of each text, so the vocabulary grows with it."""

    def __init__(self, most: int):
        self.most = most

    def is_satisfied_by(self, value: Any) -> bool:
        return (isinstance(value, tuple) and len(value) == 2 and all(_is_number(v, Integral) for v in value)
                and 1 <= value[0] <= value[1] <= self.most)

    def __str__(self) -> str:
        return f"a (low, high) pair of ints with 1 <= low <= high <= {self.most}"


# The string rules of scikit-learn's vocabulary that the models use, theirs or inherited (the floors built on
# DummyClassifier and DummyRegressor inherit scikit-learn's own declarations).
_STRING_RULES = {
    "boolean": lambda value: isinstance(value, (bool, np.bool_)),
    "random_state": lambda value: value is None or SEED.is_satisfied_by(value)
    or isinstance(value, np.random.RandomState),
    "array-like": lambda value: hasattr(value, "__len__") or hasattr(value, "__array__"),
    "no_validation": lambda value: True,
}


def _satisfies(rule: Any, value: Any) -> bool:
    if rule is None:
        return value is None
    if isinstance(rule, str):
        if rule not in _STRING_RULES:
            raise TypeError(f"unknown constraint {rule!r}: one of {', '.join(_STRING_RULES)}")
        return _STRING_RULES[rule](value)
    if isinstance(rule, type):
        return isinstance(value, rule) and not (rule in (int, float) and isinstance(value, bool))
    return rule.is_satisfied_by(value)


def _described(rule: Any) -> str:
    if rule is None:
        return "None"
    if isinstance(rule, str):
        return {"boolean": "a bool", "random_state": "a seed"}.get(rule, rule)
    if isinstance(rule, type):
        return f"an instance of {rule.__name__!r}"
    return str(rule)


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
MAX_NGRAM = 10
NGRAM_RANGE = NgramRange(MAX_NGRAM)
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
    """ValueError naming the estimator, the parameter, what it accepts and what it got, when a parameter breaks
    the estimator's declared constraints (estimators without a declaration pass)."""
    constraints = getattr(estimator, "_parameter_constraints", None)
    if not constraints:
        return
    params = estimator.get_params(deep=False)
    name = type(estimator).__name__
    for key, rules in constraints.items():
        if key not in params or any(_satisfies(rule, params[key]) for rule in rules):
            continue
        value = params[key]
        if isinstance(value, bool) and any(isinstance(rule, Interval) for rule in rules):
            raise ValueError(f"The '{key}' parameter of {name} must be a number, not {str(value).lower()}")
        described = [_described(rule) for rule in rules]
        accepted = described[0] if len(described) == 1 else f"{', '.join(described[:-1])} or {described[-1]}"
        raise ValueError(f"The '{key}' parameter of {name} must be {accepted}. Got {value!r} instead.")
