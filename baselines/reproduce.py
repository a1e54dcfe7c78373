"""Rerunning the commands recorded in results/ and comparing their headline scores with the committed ones."""
from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from baselines.results import describe_machine, load_task_results

PROGRAM = "klue-baselines"
# Options that say where a run keeps its cache and its outputs: a rerun sets its own, so that it starts from
# an empty analysis cache, as a fresh clone does, and never writes over the committed results.
_GLOBAL_OPTIONS_WITH_VALUE = ("--cache-dir",)
_GLOBAL_FLAGS = ("--no-cache",)
_OUTPUT_OPTIONS = ("--results-dir", "--predictions-dir")


@dataclass
class RecordedRow:
    """One committed run of one task: the key in results/<task>.json and its headline scores."""
    task: str
    run: str
    headline: dict[str, float | None]
    machine: dict[str, str] | None  # where it was recorded (None for a row from before rows recorded it)


@dataclass
class Comparison:
    task: str
    run: str
    metric: str
    committed: float | None
    rerun: float | None
    machine: dict[str, str] | None = None  # where the committed score was recorded

    @property
    def same(self) -> bool:
        return self.committed == self.rerun


def recorded_commands(results_dir: Path, task_codes: Sequence[str]) -> dict[str, list[RecordedRow]]:
    """Each recorded command, with the committed rows it produced (one command may have run several tasks)."""
    commands: dict[str, list[RecordedRow]] = {}
    for code in task_codes:
        for run, record in sorted(load_task_results(results_dir, code)["runs"].items()):
            commands.setdefault(record.get("command", ""), []).append(
                RecordedRow(code, run, dict(record.get("headline", {})), record.get("machine")))
    return commands


def rerun_arguments(command: str, results_dir: Path, cache_dir: Path) -> list[str]:
    """The recorded command's arguments with a fresh cache and a scratch results folder; ValueError for a
    command that is not a `klue-baselines ... run ...`."""
    words = shlex.split(command)
    if not words or words[0] != PROGRAM or "run" not in words:
        raise ValueError(f"not a recorded `{PROGRAM} run` command: {command!r}")
    kept, skip = [], False
    for word in words[1:]:
        if skip:
            skip = False
            continue
        name = word.split("=", 1)[0]
        if name in _GLOBAL_OPTIONS_WITH_VALUE + _OUTPUT_OPTIONS:
            skip = "=" not in word
            continue
        if word in _GLOBAL_FLAGS:
            continue
        kept.append(word)
    return ["--cache-dir", str(cache_dir)] + kept + ["--results-dir", str(results_dir)]


def reproduce(results_dir: Path, task_codes: Sequence[str], log: Callable[[str], None] = print,
              ) -> list[Comparison]:
    """Rerun every recorded command of `task_codes` from the project folder that holds `results_dir`, each
    with an empty cache and its results in a temporary folder, and compare the headline scores row by row.
    A command that fails is reported through its rows, with no rerun value."""
    results_dir = Path(results_dir).resolve()
    comparisons = []
    for command, rows in recorded_commands(results_dir, task_codes).items():
        with tempfile.TemporaryDirectory(prefix="klue-reproduce-") as scratch:
            scratch_path = Path(scratch)
            rerun_runs: dict[str, dict] = {}
            try:
                arguments = rerun_arguments(command, scratch_path / "results", scratch_path / "cache")
            except ValueError as error:
                log(str(error))
            else:
                log(f"rerunning: {command}")
                finished = subprocess.run([sys.executable, "-m", "baselines.cli", *arguments],
                                          cwd=results_dir.parent, stdout=subprocess.DEVNULL)
                if finished.returncode != 0:
                    log(f"  exited with {finished.returncode}")
                for task in {row.task for row in rows}:
                    rerun_runs[task] = load_task_results(scratch_path / "results", task)["runs"]
            for row in rows:
                rerun_headline = rerun_runs.get(row.task, {}).get(row.run, {}).get("headline", {})
                for metric, committed in row.headline.items():
                    comparisons.append(Comparison(row.task, row.run, metric, committed, rerun_headline.get(metric),
                                                  row.machine))
    return comparisons


def machine_notes(comparisons: Sequence[Comparison], here: dict[str, str]) -> list[str]:
    """For the rows whose scores differ, where they were recorded when that is not this machine (`here`, as
    driver.machine() tells): Kiwi's analyses can differ between SIMD kernels, and with them the scores."""
    notes = {}
    for comparison in comparisons:
        if comparison.same or comparison.machine == here:
            continue
        where = ("a machine the row does not name" if comparison.machine is None
                 else describe_machine(comparison.machine))
        notes.setdefault(f"{comparison.task} {comparison.run}: recorded on {where}", None)
    if notes:
        notes[f"this machine: {describe_machine(here)}"] = None
    return list(notes)

