"""Choosing hyper-parameters by cross-validation on the training data only (never on dev)."""
from __future__ import annotations

import itertools
import json
from typing import Any, Callable, Sequence

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import GroupKFold, KFold

from baselines.runtime import parallel
from baselines.runtime.parallel import Workers
from baselines.runner.registry import get_task
from baselines.taskspec import TaskSpec


def parse_grid(assignments: Sequence[str]) -> dict[str, list[Any]]:
    """['C=0.5,1,2', 'ngram_range=[1,1],[1,2]'] -> {'C': [0.5, 1, 2], 'ngram_range': [(1, 1), (1, 2)]}.
    Values are read as JSON (lists become tuples), else kept as strings."""
    grid = {}
    for assignment in assignments:
        name, equals, values = assignment.partition("=")
        if not equals or not values:
            raise ValueError(f"expected NAME=V1,V2,... not {assignment!r}")
        try:
            parsed = json.loads(f"[{values}]")
        except json.JSONDecodeError:  # some values are not JSON: each one read alone, a string where it is not
            parsed = [_json_or_string(value) for value in values.split(",")]
        if name.strip() in grid:
            raise ValueError(f"{name.strip()} is given more than once; give each hyper-parameter once")
        grid[name.strip()] = [tuple(v) if isinstance(v, list) else v for v in parsed]
    return grid


def _json_or_string(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def parse_assignments(assignments: Sequence[str]) -> dict[str, Any]:
    """['C=0.5', 'abstain=false'] -> {'C': 0.5, 'abstain': False}: one value per name, read as parse_grid
    reads them."""
    values = parse_grid(assignments)
    several = [name for name, given in values.items() if len(given) != 1]
    if several:
        raise ValueError(f"give one value for {', '.join(several)} (a grid of values is for `tune`)")
    return {name: given[0] for name, given in values.items()}


def fold_splits(task: TaskSpec, records: Sequence, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, held-out) index arrays of `folds` shuffled folds over `records`, whole groups in one fold
    where the task has groups (MRC passages, WoS dialogues). Evaluation's cross-fitting and `tune` both cut
    their folds here."""
    indices = np.arange(len(records))
    if task.reading.group is not None:
        splitter = GroupKFold(n_splits=folds, shuffle=True, random_state=seed)
        return list(splitter.split(indices, groups=task.reading.group_keys(records)))
    return list(KFold(n_splits=folds, shuffle=True, random_state=seed).split(indices))


def fold_metrics(task_code: str, estimator, train: list, test: list, resources: dict) -> dict[str, float]:
    """Every official metric of the estimator fitted on `train` and scored on `test`: one job of a grid
    search, run in a worker."""
    task = get_task(task_code)
    estimator.fit(train, task.modelling.targets(train))
    return task.scoring.score(test, task.modelling.predict(estimator, test), resources)


def cross_validate(task: TaskSpec, estimators: Sequence, records: Sequence, resources: dict, metric: str,
                   folds: int, seed: int, log: Callable[[str], None] = lambda message: None,
                   workers: Workers = Workers()) -> list[list[dict[str, float]]]:
    """For each estimator, every official metric of the task on each held-out fold of the training records
    (`metric` is the one logged). The estimators and folds are fitted `workers.jobs` at a time."""
    splits = fold_splits(task, records, folds, seed)
    calls = [(fold_metrics, (task.code, estimator.fold_copy(), [records[i] for i in train_index],
                             [records[i] for i in test_index], resources))
             for estimator in estimators for train_index, test_index in splits]

    def logged(index: int, metrics: dict[str, float]) -> None:
        log(f"  trial {index // folds + 1}/{len(estimators)}, fold {index % folds + 1}/{folds}: "
            f"{metric} {metrics[metric]:.2f}")

    uses_analysis = any(estimator.uses_morpheme_analysis() for estimator in estimators)
    results = parallel.run(calls, workers, logged, task.reading.texts(records) if uses_analysis else ()).results
    return [results[start:start + folds] for start in range(0, len(results), folds)]


def grid_points(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, names in sorted order."""
    names = sorted(grid)
    return [dict(zip(names, values)) for values in itertools.product(*(grid[name] for name in names))]


def fold_count_problem(task: TaskSpec, records: Sequence, folds: int, data: str = "the training data"
                       ) -> str | None:
    """Why `folds` folds cannot be cut from `records` (fewer records, or groups, than folds), or None."""
    units = len(set(task.reading.group_keys(records)))
    kind = "groups" if task.reading.group is not None else "records"
    return f"{folds} folds need at least {folds} {kind}, and {data} has {units}" if units < folds else None


def grid_search(task: TaskSpec, estimator, records: Sequence, resources: dict, grid: dict[str, list[Any]],
                metric: str, folds: int = 3, seed: int = 0,
                log: Callable[[str], None] = lambda message: None, workers: Workers = Workers()) -> dict:
    """Every combination of the grid, scored by cross-validation on `records`; the best by `metric`
    first. Each trial also keeps the fold mean of every other metric (NER's character F1 beside the
    entity F1 that picks the best). Trials and folds run `workers.jobs` at a time, with the same result."""
    points = grid_points(grid)
    for number, params in enumerate(points, start=1):
        log(f"{task.code}: trial {number}/{len(points)}: {params}")
    trial_folds = cross_validate(task, [clone(estimator).set_params(**params) for params in points], records,
                                 resources, metric, folds, seed, log, workers)
    trials = []
    for params, fold_metrics in zip(points, trial_folds):
        scores = [fold[metric] for fold in fold_metrics]
        # A per-kind metric (MRC's per question type) can be missing from a fold without that kind.
        shared = [name for name in fold_metrics[0] if all(name in fold for fold in fold_metrics)]
        trials.append({"params": params, "scores": [round(s, 4) for s in scores],
                       "mean": round(float(np.mean(scores)), 4), "std": round(float(np.std(scores)), 4),
                       "all_means": {name: round(float(np.mean([fold[name] for fold in fold_metrics])), 4)
                                     for name in shared}})
    trials.sort(key=lambda trial: -trial["mean"])
    return {"metric": metric, "folds": folds, "seed": seed, "best": trials[0]["params"], "trials": trials}
