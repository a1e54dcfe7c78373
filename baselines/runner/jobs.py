"""Whole jobs over tasks whose data is found: the run loop that records and draws, the spread over seeds, the
learning curve, the search over a grid."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from sklearn.base import clone

from baselines.data.fileio import check_output_folder, write_jsonl_atomic
from baselines.data.locate import TaskData
from baselines.errors import UsageError, setting
from baselines.runner import build, evaluate as evaluation, figures, reports, result_files, results, tables, tuning
from baselines.runner.registry import get_task
from baselines.runtime.parallel import Workers
from baselines.runtime.provenance import machine, versions

Log = Callable[[str], None]


def _headline_line(record: dict) -> str:
    # Printed from the six-digit metrics, as the results table is: the four-digit headline would round twice.
    return ", ".join(f"{k} {tables.format_score(record['metrics'][k])}" for k in record["headline"])


def run_tasks(task_data: dict[str, TaskData], names: dict[str, str], *, seed: int, cv: int, params: dict | None,
              workers: Workers, results_dir: Path | None, predictions_dir: Path | None, plots_dir: Path | None,
              command: str | None, data_dir: Path | None, log: Log) -> list[dict]:
    """Train and evaluate each task's model on its data, and record it (results.destination says where): its
    predictions in predictions_dir, its report figures and the results chart in plots_dir. Every output folder
    is checked before the first model trains. Returns the records."""
    for folder in (predictions_dir, results_dir or Path("results")):
        if folder is not None:
            check_output_folder(folder)
    for code, data in task_data.items():
        if data.is_sample and results_dir is not None:
            results.check_sample_can_be_recorded(results_dir, code)
    records = []
    for code, data in task_data.items():
        spec = get_task(code)
        record, predictions = evaluation.evaluate_task(spec, data, model_name=names[code], seed=seed, cv=cv,
                                                       log=log, params=params, workers=workers)
        if command is not None:
            record["command"] = command
        records.append(record)
        log(f"{code}: {_headline_line(record)} ({sum(record['seconds'].values()):.1f}s, peak "
            f"{tables.memory_cell(record['peak_rss_mb'])} MiB)")
        if predictions_dir is not None:
            path = predictions_dir / f"{result_files.run_file_stem(record)}.jsonl"
            write_jsonl_atomic(path, predictions)
            log(f"{code}: predictions written to {path}")
        if plots_dir is not None:
            gold, resources = evaluation.gold_and_resources(spec, data.dev, data_dir)
            rows, metrics = evaluation.checked_and_scored(spec, gold, resources, predictions, log=log)
            built = reports.teaching_report(spec, gold, rows, metrics, errors=0)
            for path in figures.report_figures(built, plots_dir, result_files.run_file_stem(record)):
                log(f"{code}: figure written to {path}")
        folder = results.destination(results_dir, data.is_sample)
        if folder is not None:
            log(f"{code}: recorded in {results.record_run(folder, record, predictions)}")
    folder = results.destination(results_dir, any(data.is_sample for data in task_data.values()))
    if plots_dir is not None and tables.chart_rows(figures.runs_by_task(folder or records)):
        log(f"results chart written to {figures.results_figure(folder or records, plots_dir)}")
    return records


def seed_spread(task_data: dict[str, TaskData], names: dict[str, str], seeds: Sequence[int], *, cv: int,
                params: dict | None, task_resources: Callable[[str], dict], workers: Workers, log: Log
                ) -> list[dict]:
    """Each task's model trained and scored once per seed, recording nothing: per headline metric the mean,
    the sample standard deviation, the extremes and the scores. A model that takes no seed runs once, and says
    so ('seeded': False)."""
    spread = []
    for code, data in task_data.items():
        spec = get_task(code)
        # Whether the model takes a seed is a property of its class: its defaults tell, no file of params needed.
        _name, estimator = build.build_model(spec, names[code], 0, task_resources(code))
        seeded = any(key in ("seed", "random_state") for key in estimator.get_params(deep=False))
        records = []
        for seed in seeds if seeded else seeds[:1]:
            log(f"{code}: seed {seed}")
            record, _predictions = evaluation.evaluate_task(spec, data, model_name=names[code], seed=seed, cv=cv,
                                                            log=log, params=params, workers=workers)
            records.append(record)
        for metric in records[0]["headline"]:
            scores = [record["metrics"][metric] for record in records]
            defined = [score for score in scores if score is not None]
            spread.append({"task": code, "model": records[0]["model"], "metric": metric, "seeded": seeded,
                           "seeds": list(seeds if seeded else seeds[:1]), "scores": scores,
                           "mean": float(np.mean(defined)) if defined else None,
                           "std": float(np.std(defined, ddof=1)) if len(defined) > 1 else None,
                           "min": min(defined, default=None), "max": max(defined, default=None)})
    return spread


def learning_curve(code: str, data: TaskData, fractions: Sequence[float], model: str | None, *, seed: int, cv: int,
                   params: dict | None, workers: Workers, results_dir: Path | None, plots_dir: Path | None,
                   command: str | None, log: Log) -> dict:
    """The dev scores of a model trained on growing shares of its training records, written to
    results/learning-curve/ (results.destination says where) and drawn in plots_dir when given."""
    spec = get_task(code)
    folder = results.destination(results_dir, data.is_sample)
    if folder is not None:
        check_output_folder(folder / "learning-curve")
    points = []
    for fraction in fractions:
        record, _predictions = evaluation.evaluate_task(spec, data, model_name=model, seed=seed, cv=cv, log=log,
                                                        train_fraction=fraction, params=params, workers=workers)
        points.append({"fraction": fraction, **{
            key: record[key] for key in ("trained_on", "headline", "fold_headline", "metrics", "seconds", "peak_rss_mb")
            if key in record}})
        log(f"{code}: {fraction:g} of the training data: {_headline_line(record)}")
    report = results.learning_curve_report(record, points, command)
    if folder is not None:
        path = results.write_result(folder, folder / "learning-curve" / f"{result_files.run_file_stem(record)}.json",
                                    report)
        log(f"{code}: written to {path}")
    if plots_dir is not None:
        log(f"{code}: figure written to {figures.learning_curve_figure(report, plots_dir)}")
    return report


def tune(code: str, train_path: Path, task_resources: dict, grid: dict[str, Sequence], model: str | None, *,
         folds: int, seed: int, results_dir: Path, command: str | None, workers: Workers, log: Log
         ) -> tuple[dict, Path]:
    """Score every point of `grid` by `folds`-fold cross-validation on the training file (the dev file is never
    read) and write the report, best first, to results_dir/tuning/<task>-<model>.json."""
    spec = get_task(code)
    folder = results_dir / "tuning"
    check_output_folder(folder)
    records = spec.reading.load(train_path)
    build.check_labelled(spec, records, train_path)
    spec.resources.check_resource_labels(records, task_resources, train_path)
    name, estimator = build.build_model(spec, model, seed, task_resources)
    grid, shown_files = build.grid_with_requirements(spec, name, estimator, grid, seed, log)
    build.check_params(name, estimator, grid)
    for point in tuning.grid_points(grid):
        build.check_values(name, clone(estimator).set_params(**point))
    problem = tuning.fold_count_problem(spec, records, folds)
    if problem:
        raise UsageError(f"{setting(f'--folds {folds}', f'folds={folds}')}: {problem}")
    report: dict[str, Any] = tuning.grid_search(spec, estimator, records, task_resources, grid,
                                                spec.scoring.headline[0], folds, seed, log, workers)
    for trial in report["trials"]:
        trial["params"] = dict(shown_files[key][id(value)] if key in shown_files else (key, value)
                               for key, value in trial["params"].items())
    report["best"] = report["trials"][0]["params"]
    report.update({"task": code, "model": name, "train": evaluation.describe_file(train_path, len(records))})
    if command is not None:
        report["command"] = command
    report["versions"] = versions()
    report["machine"] = machine()
    return report, results.write_result(results_dir, folder / f"{code}-{name}.json", report)
