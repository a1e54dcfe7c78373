"""Rerunning the commands recorded in results/ and comparing their headline scores with the committed ones."""
from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Collection, Sequence

import click

from baselines.data.fileio import DataError, absolute_path
from baselines.runner.tables import describe_machine
from baselines.runner.result_files import load_task_results, task_file
from baselines.errors import RefusedCommandWarning
from baselines.runtime.provenance import code_version
from baselines.runtime.provenance import machine as provenance_machine

PROGRAM = "klue-baselines"
# The global options a recorded command may carry before `run`; a rerun sets its own cache folder (empty, as a
# fresh clone's) and drops --no-cache and -q.
_GLOBAL_FLAGS = ("-q", "--quiet", "--no-cache")
_GLOBAL_OPTIONS_WITH_VALUE = ("--cache-dir", "--workers")
# The installed package, started so that no folder on the way (the working folder, PYTHONPATH) can stand in for
# it: `python -m` and `-c` put the working folder first on sys.path, where a planted baselines/ would be found.
_SAFE_ENTRY = ("import sys; sys.path = [p for p in sys.path if p not in ('', '.')]; "
               "from baselines.cli import main; main(prog_name='klue-baselines')")


@dataclass
class RecordedRow:
    """One committed run of one task: the key in results/<task>.json and its headline scores."""
    task: str
    run: str
    headline: dict[str, float | None]
    machine: dict[str, str] | None  # where it was recorded (None for a row from before rows recorded it)
    commit: str | None = None  # the git commit of the code that recorded it, where the row names one
    versions: dict[str, str] | None = None  # of Python and the libraries, as the row recorded them


@dataclass
class Comparison:
    task: str
    run: str
    metric: str
    committed: float | None
    rerun: float | None
    machine: dict[str, str] | None = None  # where the committed score was recorded
    commit: str | None = None  # the code that recorded it
    rerun_commit: str | None = None  # the code that reran it (a commit may land while a long reproduce runs)

    @property
    def same(self) -> bool:
        return self.committed == self.rerun


# The most distinct commands one reproduce reruns. This project's results/ records 18 for its eight tasks, each
# a run of up to a few minutes; a results folder with hundreds would run for hours, and is refused at once.
MAX_RECORDED_COMMANDS = 200


def recorded_commands(results_dir: Path, task_codes: Sequence[str]) -> dict[str, list[RecordedRow]]:
    """Each recorded command, with the committed rows it produced (one command may have run several tasks).
    A command that is not a string, or a headline that is not an object of numbers, is a DataError naming
    the file and the run; so are more than MAX_RECORDED_COMMANDS commands, naming the folder."""
    commands: dict[str, list[RecordedRow]] = {}
    for code in task_codes:
        for run, record in sorted(load_task_results(results_dir, code)["runs"].items()):
            where = (task_file(results_dir, code), f"run {run}")
            if not isinstance(record, dict):
                raise DataError(*where, "expected a run record (a JSON object)")
            command, headline = record.get("command"), record.get("headline")
            if not isinstance(command, str):
                raise DataError(*where, f"'command' should be the recorded command line, not "
                                        f"{type(command).__name__}")
            if not isinstance(headline, dict) or not all(
                    isinstance(name, str) and (value is None or (isinstance(value, (int, float))
                                                                 and not isinstance(value, bool)
                                                                 and math.isfinite(value)))
                    for name, value in headline.items()):
                raise DataError(*where, "'headline' should be an object of metric names and scores (numbers, "
                                        "or null for an undefined one)")
            machine = record.get("machine")
            commit = (record.get("code") or {}).get("git_commit") if isinstance(record.get("code"), dict) else None
            recorded = record.get("versions")
            commands.setdefault(command, []).append(
                RecordedRow(code, run, dict(headline), machine if isinstance(machine, dict) else None,
                            commit if isinstance(commit, str) else None,
                            {str(name): str(value) for name, value in recorded.items()}
                            if isinstance(recorded, dict) else None))
    if len(commands) > MAX_RECORDED_COMMANDS:
        raise DataError(results_dir, None, f"records {len(commands):,} distinct commands for "
                                           f"{', '.join(task_codes)}; reproduce reruns at most "
                                           f"{MAX_RECORDED_COMMANDS} at once: name fewer tasks")
    return commands


def rerun_arguments(command: str, run_command: click.Command, project: Path, results_dir: Path, cache_dir: Path,
                    tasks: Collection[str] | None = None) -> list[str]:
    """The arguments that rerun a recorded `klue-baselines run` command: parsed by `run_command` (the CLI's `run`, which
    the CLI hands over: it sits above this module), its input paths made absolute from the project folder, written only
    to results_dir and an empty cache_dir (no predictions, no figures); of its tasks, only those in `tasks` where it
    is given (a command that ran four tasks' floors reruns one task's for `reproduce` of that task). ValueError for
    anything else: another command, unknown options, a value that `run` would refuse."""
    try:
        words = shlex.split(command)
    except ValueError as error:
        raise ValueError(f"cannot split the recorded command {command!r}: {error}") from None
    if not words or words[0] != PROGRAM:
        raise ValueError(f"not a recorded `{PROGRAM} run` command: {command!r}")
    kept_global, position = [], 1
    while position < len(words) and words[position].startswith("-"):
        name, has_value = words[position].split("=", 1)[0], "=" in words[position]
        if name in _GLOBAL_OPTIONS_WITH_VALUE:
            value = words[position].split("=", 1)[1] if has_value else (words[position + 1]
                                                                        if position + 1 < len(words) else "")
            if name == "--workers":
                kept_global += ["--workers", value]
            position += 1 if has_value else 2
        elif name in _GLOBAL_FLAGS and not has_value:
            position += 1
        else:
            raise ValueError(f"the recorded command has an option this rerun does not take: {words[position]!r}")
    if position >= len(words) or words[position] != "run":
        raise ValueError(f"only `{PROGRAM} run` commands are rerun, not {command!r}")
    previous = Path.cwd()
    try:
        os.chdir(project)  # the recorded paths are relative to the project folder, where `run` checks them
        with run_command.make_context("run", words[position + 1:]) as context:
            options = dict(context.params)
    except click.ClickException as error:
        raise ValueError(f"the recorded command is not one `run` takes ({error.format_message()}): "
                         f"{command!r}") from None
    finally:
        os.chdir(previous)
    codes = [code for code in options["task_codes"] if tasks is None or code in tasks]
    arguments = [*kept_global, "--cache-dir", str(cache_dir), "run", *codes]
    for option, key in (("--model", "model_name"), ("--pos", "pos")):
        if options[key] is not None:
            arguments += [option, options[key]]
    for option, key in (("--data-dir", "data_dir"), ("--train", "train_file"), ("--dev", "dev_file")):
        if options[key] is not None:
            arguments += [option, str(absolute_path(project / options[key]))]
    for option, key in (("--cv", "cv"), ("--seed", "seed"), ("--jobs", "jobs"), ("--backend", "backend")):
        arguments += [option, str(options[key])]
    for name, value in options["params"].items():
        arguments += ["--param", f"{name}={json.dumps(value)}"]
    return arguments + ["--results-dir", str(results_dir)]


def rerun(results_dir: Path, task_codes: Sequence[str], run_command: click.Command,
          log: Callable[[str], None] = print, keep: Callable[[RecordedRow], bool] = lambda row: True
          ) -> list[tuple[RecordedRow, dict | None]]:
    """Rerun every recorded `run` command of `task_codes` that produced a row `keep` accepts (see rerun_arguments;
    `run_command` is the CLI's `run`) with the installed package, from the project folder that holds
    `results_dir`, each with an empty cache and its results in a temporary folder. Returns each kept row with
    the record its rerun wrote (None where the command was refused or failed)."""
    results_dir = Path(results_dir).resolve()
    reruns: list[tuple[RecordedRow, dict | None]] = []
    for command, rows in recorded_commands(results_dir, task_codes).items():
        rows = [row for row in rows if keep(row)]
        if not rows:
            continue
        with tempfile.TemporaryDirectory(prefix="klue-reproduce-") as scratch:
            scratch_path = Path(scratch)
            rerun_runs: dict[str, dict] = {}
            try:
                arguments = rerun_arguments(command, run_command, results_dir.parent, scratch_path / "results",
                                            scratch_path / "cache", {row.task for row in rows})
            except ValueError as error:  # a warning, not a log line: --quiet must not hide it
                warnings.warn(f"not rerun: {error}", RefusedCommandWarning, stacklevel=1)
            else:
                log(f"rerunning: {command}")
                finished = subprocess.run([sys.executable, "-c", _SAFE_ENTRY, *arguments], cwd=results_dir.parent,
                                          stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
                if finished.returncode != 0:
                    log(f"  exited with {finished.returncode}")
                for task in {row.task for row in rows}:
                    rerun_runs[task] = load_task_results(scratch_path / "results", task)["runs"]
            reruns.extend((row, rerun_runs.get(row.task, {}).get(row.run)) for row in rows)
    return reruns


def reproduce(results_dir: Path, task_codes: Sequence[str], run_command: click.Command,
              log: Callable[[str], None] = print) -> list[Comparison]:
    """Rerun every recorded `run` command of `task_codes` (see rerun) and compare the headline scores row by row.
    A command that is refused or fails is reported through its rows, with no rerun value."""
    comparisons = []
    for row, record in rerun(results_dir, task_codes, run_command, log):
        rerun_headline = (record or {}).get("headline", {})
        rerun_code = (record or {}).get("code")
        rerun_commit = rerun_code.get("git_commit") if isinstance(rerun_code, dict) else None
        for metric, committed in row.headline.items():
            comparisons.append(Comparison(row.task, row.run, metric, committed, rerun_headline.get(metric),
                                          row.machine, row.commit, rerun_commit))
    return comparisons


def code_notes(comparisons: Sequence[Comparison], here: str | None) -> list[str]:
    """One line per row recorded by other code than the code that reran it (the commit its rerun recorded, else
    `here`, the git commit of the code running, None outside a git checkout): for a row whose scores differ, a
    change between the two may be the cause; for the others, the change did not move them."""
    if not here:
        return ["this code is not a git checkout: the rows' commits cannot be compared with it"]
    rows: dict[tuple[str, str], list[Comparison]] = {}
    for comparison in comparisons:
        rows.setdefault((comparison.task, comparison.run), []).append(comparison)
    notes = []
    for (task, run), metrics in rows.items():
        commit, rerun_at = metrics[0].commit, metrics[0].rerun_commit or here
        if commit == rerun_at:
            continue
        recorded = commit[:7] if commit else "a commit the row does not name"
        verdict = ("reproduced all the same" if all(c.same for c in metrics)
                   else "differs: a code change between the two may be why")
        notes.append(f"{task} {run}: recorded by the code at {recorded}, rerun at {rerun_at[:7]}: {verdict}")
    return notes


def machine_notes(comparisons: Sequence[Comparison], here: dict[str, str]) -> list[str]:
    """For the rows whose scores differ, where they were recorded when that is not this machine (`here`, as
    provenance.machine() tells): Kiwi's analyses can differ between SIMD kernels, and with them the scores."""
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


def version_notes(commands: dict[str, list[RecordedRow]], installed: dict[str, str]) -> list[str]:
    """One line per library (and Python) whose installed version is not the one the rows recorded: told before
    anything reruns, since a score may move with them. The package's own version is left out (the commit
    says which code recorded a row)."""
    recorded: dict[str, set[str]] = {}
    for rows in commands.values():
        for row in rows:
            for name, version in (row.versions or {}).items():
                recorded.setdefault(name, set()).add(version)
    return [f"{name}: the rows recorded {', '.join(sorted(recorded[name]))}; installed {version}"
            for name, version in installed.items()
            if name != "klue_baselines" and name in recorded and recorded[name] != {version}]


def provenance_notes(comparisons: Sequence[Comparison]) -> list[str]:
    """What `reproduce` says after its table: which rows other code recorded (code_notes, against this
    checkout's commit) and where the rows that differ were recorded (machine_notes)."""
    return (code_notes(comparisons, code_version().get("git_commit"))
            + machine_notes(comparisons, provenance_machine()))
