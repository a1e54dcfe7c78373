"""Which figures a report, a learning curve and the results draw, and where: each folder checked before long work."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from baselines.data.fileio import DataError, check_output_folder, read_json
from baselines.errors import UsageError, setting
from baselines.runner import plots, result_files, tables


def figures_folder(folder: str | Path | None) -> Path | None:
    """The folder figures go to, checked (the plots extra installed, the folder writable) before any long
    work; None stays None."""
    if folder is None:
        return None
    try:
        plots.check_available()
    except plots.PlotsUnavailable as error:
        raise UsageError(str(error)) from None
    check_output_folder(Path(folder))
    return Path(folder)


def report_figure_paths(folder: Path, stem: str) -> tuple[Path, Path]:
    """Where report_figures draws the confusion heat map and the F1 bars."""
    return folder / f"{stem}-confusion.png", folder / f"{stem}-f1-per-class.png"


def check_no_earlier_report(folder: Path, stem: str) -> None:
    """Refuse, before any work, a folder that holds an earlier report's figures: they may be another run's."""
    earlier = [path.name for path in report_figure_paths(folder, stem) if path.exists()]
    if earlier:
        raise UsageError(f"{folder} already holds {', '.join(earlier)} from an earlier report: give "
                         f"another {setting('--plots', 'plots')} folder, remove them, or "
                         f"{setting('--overwrite', 'overwrite=True')}")


def report_figures(built: dict, folder: str | Path, stem: str | None = None) -> list[Path]:
    """The figures of a report (as `report` returns it) where the task has classes: the confusion heat map
    <stem>-confusion.png and F1 per class beside chance <stem>-f1-per-class.png (stem: the task code)."""
    folder, stem = figures_folder(folder), stem or built["task"]
    confusion_path, f1_path = report_figure_paths(folder, stem)
    title = f"{built['task'].upper()}: {{}} (one count per {built['unit']})"
    written = []
    if built.get("confusion"):
        written.append(plots.confusion_heatmap(built["confusion"]["labels"], built["confusion"]["matrix"],
                                               title.format("confusion matrix"), confusion_path))
    if built.get("classes"):
        written.append(plots.f1_bars(built["classes"], title.format("F1 per class"), f1_path))
    return written


def learning_curve_figure(curve: dict | str | os.PathLike, folder: str | Path) -> Path:
    """A learning curve (a report of runner.jobs.learning_curve, or its file) drawn as
    <task>-<model>-learning-curve.png, with the spread of the per-fold scores where it was cross-fitted."""
    folder = figures_folder(folder)
    if isinstance(curve, (str, os.PathLike)):
        path = Path(curve)
        curve = read_json(path)
        if not isinstance(curve, dict) or not isinstance(curve.get("points"), list) or not curve["points"]:
            raise DataError(path, "the file", "a learning curve as `bench learning-curve` writes it (its 'points')")
    return plots.learning_curve(curve, folder / f"{result_files.run_file_stem(curve)}-learning-curve.png")


def runs_by_task(runs: str | Path | Sequence[dict]) -> dict[str, dict]:
    """{task: {run name: record}} of a results folder, or of run records."""
    if isinstance(runs, (str, os.PathLike)):
        return result_files.all_runs(Path(runs))
    by_task: dict[str, dict] = {}
    for record in runs:
        by_task.setdefault(record["task"], {})[result_files.run_name(record)] = record
    return by_task


def results_figure(runs: str | Path | Sequence[dict], folder: str | Path) -> Path:
    """The results chart, results.png: each task's headline scores between its trivial floor and the neural
    anchors, from a results folder (every recorded run) or from run records."""
    folder = figures_folder(folder)
    rows = tables.chart_rows(runs_by_task(runs))
    if not rows:
        raise UsageError("no recorded scores of the tasks' default models to chart")
    return plots.results_chart(rows, folder / "results.png")
