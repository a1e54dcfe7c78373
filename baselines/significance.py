"""Paired bootstrap comparison of two systems' predictions on the same gold: is one's lead real?

Each resample draws the evaluation units with replacement (a record; for MRC, a whole passage with all its
questions, through the task's `group`) and scores both systems on that same draw with the task's official
scorer, so the interval accounts for the metric as KLUE defines it (macro averages, Pearson r, AUPRC...).
The difference is B - A. Its 95 % interval is the 2.5th and 97.5th percentiles of the resampled
differences; the p-value is two-sided, from the resampled differences shifted to mean zero (the null of no
difference): the share of them at least as far from zero as the observed difference (Efron and Tibshirani,
1993, section 16.4), counted with the observed one so that it is never 0.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterator, Sequence

import numpy as np
from joblib import Parallel, delayed

from baselines.taskspec import TaskSpec, align_predictions

# More resamples than this do not move a 95 % interval or a p-value at the digits reported, and a billion
# would run for days; the draws are made batch by batch, never all at once.
MAX_RESAMPLES = 100_000


def resampling_units(spec: TaskSpec, records: Sequence) -> list[list[int]]:
    """Record indices per unit that a resample draws whole: the task's groups (MRC's passages), else one
    record each (a title, a sentence, a dialogue)."""
    if spec.group is None:
        return [[index] for index in range(len(records))]
    units: dict[Any, list[int]] = {}
    for index, record in enumerate(records):
        units.setdefault(spec.group(record), []).append(index)
    return list(units.values())


def _resampled_scores(spec: TaskSpec, records: Sequence, systems: tuple[list[dict], list[dict]],
                      units: list[list[int]], draws: list[np.ndarray], resources: dict,
                      metrics: Sequence[str]) -> list[tuple[list[float], list[float]]]:
    """For each draw of unit numbers, both systems' metrics on the records it picks. A unit drawn twice is
    scored twice: its k-th copy gets the guid 'guid#k' so that the official scorer sees distinct items. The
    renamed copies are made once and reused across draws (renaming is most of a resample's cost)."""
    copies: dict[tuple[int, int], tuple[Any, dict, dict]] = {}

    def copy_of(index: int, number: int) -> tuple[Any, dict, dict]:
        if (index, number) not in copies:
            guid = f"{spec.record_id(records[index])}#{number}"
            copies[index, number] = (dataclasses.replace(records[index], guid=guid),
                                     dict(systems[0][index], guid=guid), dict(systems[1][index], guid=guid))
        return copies[index, number]

    scored = []
    for draw in draws:
        seen: dict[int, int] = {}
        picked = []
        for unit in draw.tolist():
            seen[unit] = seen.get(unit, -1) + 1
            picked.extend(copy_of(index, seen[unit]) for index in units[unit])
        sample = [record for record, _a, _b in picked]
        per_system = []
        for position in (1, 2):
            values = spec.score(sample, [row[position] for row in picked], resources)
            per_system.append([float(values.get(metric, np.nan)) for metric in metrics])
        scored.append((per_system[0], per_system[1]))
    return scored


def paired_bootstrap(spec: TaskSpec, records: Sequence, predictions_a: Sequence[dict], predictions_b: Sequence[dict],
                     resources: dict, metrics: Sequence[str] | None = None, resamples: int = 1000, seed: int = 0,
                     n_jobs: int = 1, progress: Callable[[int], None] = lambda done: None,
                     observed: tuple[dict, dict] | None = None) -> dict:
    """Each metric (the task's headline by default) for A and B on the whole gold, the difference B - A, its
    95 % paired bootstrap interval and p-value from `resamples` draws. The draws come from `seed` before any
    work is shared out, so the result is the same for any n_jobs. `observed`: A's and B's metrics on the
    whole gold where the caller has scored them already."""
    metrics = list(metrics or spec.headline)
    systems = (align_predictions(records, list(predictions_a), spec.record_id),
               align_predictions(records, list(predictions_b), spec.record_id))
    if observed is None:
        observed = tuple(spec.score(records, rows, resources) for rows in systems)
    if not 1 <= resamples <= MAX_RESAMPLES:
        raise ValueError(f"resamples must be 1 to {MAX_RESAMPLES}, not {resamples}")
    units = resampling_units(spec, records)
    batch = max(1, min(50, -(-resamples // max(1, n_jobs))))
    scores: list[tuple[list[float], list[float]]] = []
    jobs = (delayed(_resampled_scores)(spec, records, systems, units, part, resources, metrics)
            for part in draw_batches(len(units), resamples, batch, seed))
    for part in Parallel(n_jobs=n_jobs, return_as="generator")(jobs):
        scores.extend(part)
        progress(len(part))
    a_scores = np.array([a for a, _b in scores])
    b_scores = np.array([b for _a, b in scores])
    rows = []
    for column, metric in enumerate(metrics):
        a_value = float(observed[0].get(metric, np.nan))
        b_value = float(observed[1].get(metric, np.nan))
        row = {"metric": metric, "a": a_value, "b": b_value, "difference": b_value - a_value,
               **interval(b_scores[:, column] - a_scores[:, column], b_value - a_value)}
        # None, not NaN, where a number is undefined: the result is written as JSON, which has no NaN.
        rows.append({key: None if isinstance(value, float) and np.isnan(value) else value
                     for key, value in row.items()})
    return {"resamples": resamples, "seed": seed, "units": len(units), "metrics": rows}


def draw_batches(units: int, resamples: int, batch: int, seed: int) -> Iterator[list[np.ndarray]]:
    """The resamples' draws of unit numbers, `batch` at a time as they are needed, all from one generator
    seeded with `seed`, one draw after another: the same draws for any batch size."""
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, batch):
        yield [rng.integers(0, units, size=units) for _ in range(min(batch, resamples - start))]


def interval(differences: np.ndarray, observed: float) -> dict[str, float | int]:
    """The 95 % percentile interval of the resampled differences and the two-sided shifted p-value (see the
    module's docstring). Resamples on which a metric is undefined (Pearson r of a constant) are left out and
    counted."""
    defined = differences[~np.isnan(differences)]
    if not len(defined) or np.isnan(observed):
        return {"low": float("nan"), "high": float("nan"), "p_value": float("nan"),
                "undefined_resamples": int(len(differences) - len(defined))}
    low, high = np.percentile(defined, [2.5, 97.5])
    centred = defined - defined.mean()
    # A tolerance for float noise: identical systems give differences of exactly 0, and p = 1.
    extreme = int(np.sum(np.abs(centred) >= abs(observed) - 1e-9))
    return {"low": float(low), "high": float(high), "p_value": (extreme + 1) / (len(defined) + 1),
            "undefined_resamples": int(len(differences) - len(defined))}
