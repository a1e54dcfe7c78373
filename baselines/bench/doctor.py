"""Does this install work? A check of a minute at most: Kiwi analyses, every task fits and scores its floor on the
shipped sample, and which extras, data and ready models are there; each ready model is loaded as the page and the
lessons load it, which adds its load time (up to about 20 s for STS and NLI trained on the official data)."""
from __future__ import annotations

import importlib.util
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from baselines.bench import reproduce
from baselines.data import sources
from baselines.data.locate import locate
from baselines.errors import BaselinesError
from baselines.runner import evaluate, ready
from baselines.runner.registry import TASK_CODES, all_tasks
from baselines.runtime import progress
from baselines.runtime.provenance import versions
from features import analysis

# What each extra adds, and a module whose presence shows it is installed.
EXTRAS = {"secure": ("skops", "model files that load without running code"),
          "plots": ("matplotlib", "figures, with a Korean font"),
          "teach": ("jupyterlab", "the lessons in JupyterLab"),
          "serve": ("uvicorn", "the demo page of `serve`"),
          "hf": ("pyarrow", "Hugging Face parquet and save_to_disk files")}


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool | None  # None: not a failure, something to know (an extra not installed)
    detail: str


def run_checks(data_dir: Path | None = None, models_dir: Path | None = None,
               log: Callable[[str], None] = progress.quiet, results_dir: Path | None = None) -> list[Check]:
    """Every check, in the order a fault would matter: Python, Kiwi, each task on the sample, data, extras, and
    the versions that results_dir's rows recorded against the installed ones."""
    checks = [Check("python", sys.version_info >= (3, 10), f"{platform.python_version()} (3.10 or newer needed)")]
    checks.append(_kiwi())
    for task in all_tasks():
        log(f"doctor: {task.code} on the shipped sample")
        checks.append(_task_on_sample(task, "trivial"))
    # scikit-learn's and crfsuite's own models, trained for real in a few seconds: the tasks that ask for it
    for task in all_tasks():
        if task.benchmarks is not None and task.benchmarks.doctor_fits_default:
            log(f"doctor: {task.code}'s default model on the shipped sample")
            checks.append(_task_on_sample(task, None))
    checks.append(_data(data_dir))
    folder = ready.models_dir(models_dir)
    found = [task.code for task in all_tasks() if ready.model_path(folder, task.code).is_file()]
    checks.append(Check("ready models", None, f"{', '.join(found) or 'none'} in {folder} (train --all makes them)"))
    for code in found:  # loaded as the page and the lessons load them: a file that is there must work
        log(f"doctor: loading the ready {code} model")
        checks.append(_ready_model(code, folder))
    for extra, (module, what) in EXTRAS.items():
        installed = importlib.util.find_spec(module) is not None
        checks.append(Check(f"extra {extra}", True if installed else None,
                            f"{what}: " + ("installed" if installed else f'pip install "klue-baselines[{extra}]"')))
    if results_dir is not None:
        checks.append(_recorded_versions(results_dir))
    return checks


def _recorded_versions(results_dir: Path) -> Check:
    """Whether the installed versions are those the rows of results_dir recorded (a score may move with them):
    something to know, not a failure."""
    try:
        differing = reproduce.version_notes(reproduce.recorded_commands(results_dir, TASK_CODES), versions())
    except BaselinesError as error:
        return Check("recorded versions", False, str(error))
    if not differing:
        return Check("recorded versions", True, f"those the rows of {results_dir} recorded")
    return Check("recorded versions", None, "; ".join(differing) + f" (pip install -c {results_dir}/constraints.txt)")


def _kiwi() -> Check:
    text = "이순신 장군은 서울에서 태어났다."
    try:
        analysed = analysis.analyze([text])[0]
    except Exception as error:  # any failure of the analyser is what this check is for
        return Check("kiwi", False, f"cannot analyse a sentence: {type(error).__name__}: {error}")
    shown = " ".join(f"{form}/{tag}" for form, tag in list(zip(analysed.forms, analysed.tags))[:4])
    return Check("kiwi", len(analysed) > 0, f"model {analysis.kiwi_model_version()}, kernels "
                                           f"{analysis.kiwi_arch()}: {shown} ...")


def _task_on_sample(task, model_name: str | None) -> Check:
    """The task's `model_name` (its default for None) fitted on the sample and scored on the sample's dev file."""
    start = time.perf_counter()
    name = model_name or task.modelling.default_model
    try:
        data = locate(task, sources.sample_dir(task.code))
        record, _predictions = evaluate.evaluate_task(task, data, model_name=name)
    except (BaselinesError, OSError, ValueError) as error:
        return Check(f"{task.code} {name}", False, f"fitting and scoring on the sample failed: {error}")
    headline = ", ".join(f"{key} {value:.2f}" for key, value in record["headline"].items() if value is not None)
    return Check(f"{task.code} {name}", True, f"fits and scores on the sample ({headline}) in "
                                              f"{time.perf_counter() - start:.1f} s")


def _ready_model(code: str, folder: Path) -> Check:
    """The ready model of `code` in `folder`, loaded and checked as ready.ready_model does for the page."""
    start = time.perf_counter()
    try:
        _model, entry = ready.ready_model(code, folder)
    except (BaselinesError, OSError) as error:
        return Check(f"ready {code}", False, f"{error} (klue-baselines train --all makes it again)")
    trained_on = entry.get("train", {}).get("name", "a training file its catalogue entry does not name")
    return Check(f"ready {code}", True, f"loads in {time.perf_counter() - start:.1f} s (trained on {trained_on})")


def _data(data_dir: Path | None) -> Check:
    official = [task.code for task in all_tasks() if not _is_sample(task, data_dir)]
    if not official:
        return Check("data", None, "only the shipped sample: give --data-dir or $KLUE_DATA_DIR, or run "
                                   "`klue-baselines download`, for KLUE results")
    return Check("data", True, f"official files for {', '.join(official)}")


def _is_sample(task, data_dir: Path | None) -> bool:
    try:
        return locate(task, data_dir).is_sample
    except BaselinesError:
        return True
