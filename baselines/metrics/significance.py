"""Paired bootstrap comparison of two systems' predictions on the same gold: is one's lead real?

Each resample draws the evaluation units with replacement (a record; for MRC, a whole passage with all its
questions, through the task's `group`) and scores both systems on that same draw with the task's official
scorer, so the interval accounts for the metric as KLUE defines it (macro averages, Pearson r, AUPRC...).
Where the task has a tally (baselines.metrics.tallies), a batch of resamples is scored at once from per-record
sums, with the same values; other metrics (MRC's reader diagnostics) go through the scorer per resample.
The difference is B - A. Its 95 % interval runs from the k-th smallest to the k-th largest resampled
difference, k = ceil(0.025 B) of B resamples (the percentile interval). The p-value is two-sided and
inverts that interval: twice the share of resampled differences on the far side of zero (<= 0 where B
leads, >= 0 where A does), at most 1. The two agree by construction: the interval leaves out 0 exactly
when p < 0.05. Where no resampled difference fell on the far side of zero, p is only known to be below 1 / B:
the comparison then gives p = 1 / B with `p_value_is_bound`, printed '< 1/B'.

Beside the bootstrap: McNemar's exact test where each record is wholly right or wrong (a label, an exact
answer), on the records that one system gets right and the other wrong; and Holm's step-down correction of
the per-class p-values, for testing as many differences as there are classes.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Iterator, Sequence

import numpy as np
from joblib import Parallel, delayed
from scipy.stats import binomtest

from baselines.metrics.tallies import Tally
from baselines.taskspec import TaskSpec, align_predictions

# More resamples than this do not move a 95 % interval or a p-value at the digits reported, and a billion
# would run for days; the draws are made batch by batch, never all at once.
MAX_RESAMPLES = 100_000
TAIL = 0.025  # each side of the 95 % interval
# Resamples scored by one product of tallies: a batch of weights is TALLY_BATCH x records floats (7 MB for
# YNAT's 9,107 dev titles).
TALLY_BATCH = 100


def resampling_units(spec: TaskSpec, records: Sequence) -> list[list[int]]:
    """Record indices per unit that a resample draws whole: the task's groups (MRC's passages), else one
    record each (a title, a sentence, a dialogue)."""
    if spec.reading.group is None:
        return [[index] for index in range(len(records))]
    units: dict[Any, list[int]] = {}
    for index, record in enumerate(records):
        units.setdefault(spec.reading.group(record), []).append(index)
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
            guid = f"{records[index].guid}#{number}"
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
            values = spec.scoring.score(sample, [row[position] for row in picked], resources)
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
    metrics = list(metrics or spec.scoring.headline)
    systems = (align_predictions(records, list(predictions_a)),
               align_predictions(records, list(predictions_b)))
    if observed is None:
        observed = tuple(spec.scoring.score(records, rows, resources) for rows in systems)
    if not 1 <= resamples <= MAX_RESAMPLES:
        raise ValueError(f"resamples must be 1 to {MAX_RESAMPLES}, not {resamples}")
    a_scores, b_scores, units = resampled_scores(spec, records, systems, resources, metrics, resamples, seed, n_jobs,
                                                 progress)
    rows = []
    for column, metric in enumerate(metrics):
        a_value = float(observed[0].get(metric, np.nan))
        b_value = float(observed[1].get(metric, np.nan))
        row = {"metric": metric, "a": a_value, "b": b_value, "difference": b_value - a_value,
               **interval(b_scores[:, column] - a_scores[:, column], b_value - a_value)}
        if row["p_value"] == 0:  # no resample beyond zero: p is below 1 / (defined resamples), not 0
            row.update(p_value=1 / (resamples - row["undefined_resamples"]), p_value_is_bound=True)
        # None, not NaN, where a number is undefined: the result is written as JSON, which has no NaN.
        rows.append({key: None if isinstance(value, float) and np.isnan(value) else value
                     for key, value in row.items()})
    return {"resamples": resamples, "seed": seed, "units": units, "metrics": rows}


def resampled_scores(spec: TaskSpec, records: Sequence, systems: tuple[list[dict], list[dict]], resources: dict,
                     metrics: Sequence[str], resamples: int, seed: int, n_jobs: int = 1,
                     progress: Callable[[int], None] = lambda done: None) -> tuple[np.ndarray, np.ndarray, int]:
    """(A's, B's metrics on each resample: resamples x metrics, the number of units drawn from) for systems
    aligned with the records."""
    units = resampling_units(spec, records)
    scores: list[tuple[list[float], list[float]]] = []
    tallied = tallies_for(spec, records, systems, resources, metrics)
    if tallied is not None:
        # One product per batch scores every resample of it: no worker processes are worth starting.
        record_unit = np.empty(len(records), dtype=int)
        for number, members in enumerate(units):
            record_unit[members] = number
        for part in draw_batches(len(units), resamples, TALLY_BATCH, seed):
            weights = np.stack([np.bincount(draw, minlength=len(units)) for draw in part])[:, record_unit]
            values = [tally.resampled(weights) for tally in tallied]
            scores.extend(zip(*(np.column_stack([value[metric] for metric in metrics]).tolist() for value in values)))
            progress(len(part))
    else:
        batch = max(1, min(50, -(-resamples // max(1, n_jobs))))
        jobs = (delayed(_resampled_scores)(spec, records, systems, units, part, resources, metrics)
                for part in draw_batches(len(units), resamples, batch, seed))
        for part in Parallel(n_jobs=n_jobs, return_as="generator")(jobs):
            scores.extend(part)
            progress(len(part))
    return np.array([a for a, _b in scores]), np.array([b for _a, b in scores]), len(units)


def score_intervals(spec: TaskSpec, records: Sequence, predictions: Sequence[dict], resources: dict,
                    metrics: Sequence[str] | None = None, resamples: int = 1000, seed: int = 0) -> dict:
    """One system's 95 % percentile bootstrap interval per metric (the task's headline by default), units drawn
    as paired_bootstrap draws them: {'units', 'resamples', 'seed', 'intervals': {metric: [low, high] or None
    where undefined}}."""
    metrics = list(metrics or spec.scoring.headline)
    rows = align_predictions(records, list(predictions))
    scores, _same, units = resampled_scores(spec, records, (rows, rows), resources, metrics, resamples, seed)
    intervals = {}
    for column, metric in enumerate(metrics):
        defined = np.sort(scores[:, column][~np.isnan(scores[:, column])])
        tail = math.ceil(TAIL * len(defined))
        intervals[metric] = [float(defined[tail - 1]), float(defined[len(defined) - tail])] if len(defined) else None
    return {"units": units, "resamples": resamples, "seed": seed, "intervals": intervals}


def chosen_metrics(spec: TaskSpec, asked: Sequence[str] | None, observed: tuple[dict, dict]
                   ) -> tuple[list[str], list[str]]:
    """(headline metrics, breakdown metrics) to compare. `asked`: metric names, or breakdown names that
    stand for every metric under them ('class_f1' -> 'class_f1/경제', ...; with a closing slash where the
    name is a metric too: MRC's 'exact_match/'); None for the task's headline and its default breakdown. A
    ValueError names what is not among the scorer's metrics on this gold."""
    known = sorted(set(observed[0]) | set(observed[1]))
    default = spec.scoring.breakdown
    chosen = list(asked) if asked else [*spec.scoring.headline, *([f"{default}/"] if default else [])]
    headline, breakdown = [], []
    for name in chosen:
        if name in known:
            (breakdown if "/" in name else headline).append(name)
            continue
        under = [metric for metric in known if metric.startswith(f"{name.rstrip('/')}/")]
        if not under:
            whole = [metric for metric in known if "/" not in metric]
            families = sorted({metric.split("/")[0] for metric in known if "/" in metric})
            raise ValueError(f"{spec.code} has no metric {name!r} on this gold: its metrics are {', '.join(whole)}; "
                             f"its breakdowns {', '.join(families) or 'none'}")
        breakdown.extend(under)
    return list(dict.fromkeys(headline)), list(dict.fromkeys(breakdown))


def tallies_for(spec: TaskSpec, records: Sequence, systems: tuple[list[dict], list[dict]], resources: dict,
                metrics: Sequence[str]) -> tuple[Tally, Tally] | None:
    """Both systems' tallies (baselines.metrics.tallies) when the task has them and they give every metric asked
    for; else None, and each resample is scored by the task's scorer."""
    if spec.scoring.tally is None:
        return None
    tallied = tuple(spec.scoring.tally(records, rows, resources) for rows in systems)
    whole = np.ones((1, len(records)))
    if not all(set(metrics) <= set(tally.resampled(whole)) for tally in tallied):
        return None
    return tallied


def draw_batches(units: int, resamples: int, batch: int, seed: int) -> Iterator[list[np.ndarray]]:
    """The resamples' draws of unit numbers, `batch` at a time as they are needed, all from one generator
    seeded with `seed`, one draw after another: the same draws for any batch size."""
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, batch):
        yield [rng.integers(0, units, size=units) for _ in range(min(batch, resamples - start))]


def interval(differences: np.ndarray, observed: float) -> dict[str, float | int]:
    """The 95 % percentile interval of the resampled differences and the two-sided p-value that inverts it
    (see the module's docstring). Resamples on which a metric is undefined (Pearson r of a constant) are
    left out and counted."""
    defined = np.sort(differences[~np.isnan(differences)])
    if not len(defined) or np.isnan(observed):
        return {"low": float("nan"), "high": float("nan"), "p_value": float("nan"),
                "undefined_resamples": int(len(differences) - len(defined))}
    resamples = len(defined)
    # The k-th smallest and k-th largest of B differences, k = ceil(2.5 % of B): 0 lies outside them exactly
    # when fewer than 2.5 % of the differences are on its far side, that is when p < 0.05.
    tail = math.ceil(TAIL * resamples)
    low, high = defined[tail - 1], defined[resamples - tail]
    beyond_zero = min(int(np.sum(defined <= 0)), int(np.sum(defined >= 0)))
    return {"low": float(low), "high": float(high), "p_value": min(1.0, 2 * beyond_zero / resamples),
            "undefined_resamples": int(len(differences) - len(defined))}


def mcnemar(wrong_a: Sequence[float], wrong_b: Sequence[float]) -> dict[str, float | int]:
    """McNemar's exact test of two systems' right/wrong records (wrong == 0 is right): the records only A gets
    right and only B gets right, and the two-sided exact binomial p of the smaller count among both at 1/2
    (scipy.stats.binomtest)."""
    only_a = sum(1 for a, b in zip(wrong_a, wrong_b) if a == 0 and b > 0)
    only_b = sum(1 for a, b in zip(wrong_a, wrong_b) if b == 0 and a > 0)
    discordant = only_a + only_b
    p_value = 1.0 if not discordant else float(binomtest(min(only_a, only_b), discordant, 0.5).pvalue)
    return {"only_a_right": only_a, "only_b_right": only_b, "p_value": min(1.0, p_value)}


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values, in the order given (None stays None and is not counted): the k-th
    smallest of m times (m - k + 1), kept non-decreasing, at most 1."""
    order = sorted((index for index, p in enumerate(p_values) if p is not None), key=lambda index: p_values[index])
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def disagreements(wrong_a: Sequence[float], wrong_b: Sequence[float], shown_a: Sequence[tuple[str, str]],
                  shown_b: Sequence[tuple[str, str]], ids: Sequence[str], inputs: Sequence[Any],
                  count: int) -> dict[str, list[dict]]:
    """Up to `count` records a group where the two systems' predictions differ, grouped by who is nearer
    the gold ('a better', 'b better', 'both as wrong'), the widest gap first, then in file order."""
    groups: dict[str, list[tuple[float, int]]] = {"a better": [], "b better": [], "both as wrong": []}
    for index, (a, b) in enumerate(zip(wrong_a, wrong_b)):
        if shown_a[index][1] == shown_b[index][1]:
            continue
        group = "a better" if a < b else "b better" if b < a else "both as wrong"
        groups[group].append((-abs(a - b), index))
    return {group: [{"guid": ids[index], "input": inputs[index], "gold": shown_a[index][0],
                     "a": shown_a[index][1], "b": shown_b[index][1]} for _gap, index in sorted(found)[:count]]
            for group, found in groups.items()}
