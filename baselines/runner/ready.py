"""Models ready before class: every task's default model trained on the official data into one folder, with a
README of what each was trained on, how, and what it scores; found again by the API, the lessons and the page."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from baselines.data.fileio import atomic_output, check_output_folder, write_json_atomic
from baselines.data import sources
from baselines.data.locate import locate
from baselines.errors import UsageError, setting
from baselines.runner import build, evaluate, persistence
from baselines.runner.registry import get_task
from baselines.runner.tables import format_score
from baselines.runtime import memory, progress
from baselines.runtime.provenance import code_version, versions

MODELS_DIR_VARIABLE = "KLUE_MODELS_DIR"
CATALOGUE = "models.json"
README = "README.md"
# The first line of the README that train --all writes: a README without it is the user's, never replaced.
README_MARK = "<!-- Written by `klue-baselines train --all`, and rewritten each time it trains into this folder. -->"
Log = Callable[[str], None]
# A catalogue entry's fields that the README, the API, the page and doctor read, and what each must be.
ENTRY_FIELDS = {"task": str, "model": str, "file": str, "size_mb": (int, float), "train_seconds": (int, float),
                "train": dict, "headline": dict}


def models_dir(folder: str | os.PathLike | None = None) -> Path:
    """Where ready models are: `folder`, else $KLUE_MODELS_DIR, else the per-user cache."""
    if folder:
        return Path(folder).expanduser()
    if os.environ.get(MODELS_DIR_VARIABLE):
        return Path(os.environ[MODELS_DIR_VARIABLE]).expanduser()
    return sources.user_cache_root() / "models"


def model_path(folder: Path, task: str) -> Path:
    return folder / f"{task}.model"


def train_all(tasks: Sequence[str], data_dir: Path | None, folder: Path, seed: int = 0, command: str | None = None,
              log: Log = progress.quiet) -> list[dict]:
    """Train each task's default model on its official training file, save it to folder/<task>.model, score it
    on the dev file, and write folder/models.json and folder/README.md: the data, the command, the time, the
    file's size and the scores of each. Every task's data is located before the first model trains."""
    check_output_folder(folder)
    refuse_files_not_ours(folder, tasks)
    located = {task: locate(get_task(task), data_dir) for task in tasks}
    for task, data in located.items():
        build.training_path(get_task(task), data)  # a UsageError now, not after hours of training
    entries = _catalogue(folder)
    for number, (task, data) in enumerate(located.items(), start=1):
        spec = get_task(task)
        log(f"[{number}/{len(located)}] {task}: training {spec.modelling.default_model} on {data.train}")
        memory.reset_peak()
        start = time.perf_counter()
        model = build.fitted_on_training_file(spec, data, seed=seed, log=log)
        seconds = time.perf_counter() - start
        peak_mb = memory.rounded_peak_mb()  # training's: scoring below measures its own peak from zero
        path = model_path(folder, task)
        persistence.save_model(path, model, task, spec.modelling.default_model, [data.train], versions())
        record, _predictions = evaluate.evaluate_task(spec, data, fitted=(spec.modelling.default_model, model), log=log)
        entries[task] = {"task": task, "model": spec.modelling.default_model, "file": path.name,
                         "size_mb": round(path.stat().st_size / 2**20, 1), "train_seconds": round(seconds, 1),
                         "train_peak_rss_mb": peak_mb, "sample": data.is_sample,
                         "train": evaluate.describe_file(data.train), "dev": record["files"][0],
                         "headline": record["headline"], "seed": seed, "command": command,
                         "versions": versions(), "code": code_version()}
        log(f"[{number}/{len(located)}] {task}: {path.name}, {entries[task]['size_mb']} MB, trained in "
            f"{seconds:.0f} s; " + ", ".join(f"{k} {format_score(v)}" for k, v in record["headline"].items()))
        write_json_atomic(folder / CATALOGUE, {"models": entries})
        _write_readme(folder, entries)
    return [entries[task] for task in located]


def refuse_files_not_ours(folder: Path, tasks: Sequence[str]) -> None:
    """A UsageError, before anything trains, when `folder` holds a file that train --all would replace and did not
    write: a README.md without its mark, a models.json that is not a catalogue, a <task>.model that is not a
    model file."""
    ours = [(folder / README, _readme_is_ours), (folder / CATALOGUE, lambda path: _read_catalogue(path)[1]),
            *((model_path(folder, task), _starts_as_model) for task in tasks)]
    for path, written_here in ours:
        if (path.exists() or path.is_symlink()) and not (path.is_file() and written_here(path)):
            raise UsageError(f"{path}: {setting('train --all', 'train_all')} would replace this file, which it did "
                             f"not write (move it, or choose another {setting('--out-dir', 'models_dir')})")


# How the README began before it had its mark (klue-baselines 0.2.0 and earlier): still ours to rewrite.
_UNMARKED_README = "# Ready models\n\nEach task's default model, trained by `klue-baselines train --all`"


def _readme_is_ours(path: Path) -> bool:
    with open(path, "rb") as handle:
        start = handle.read(len(_UNMARKED_README.encode()) + len(README_MARK.encode())).decode("utf-8", "replace")
    return start.startswith(README_MARK + "\n") or start.startswith(_UNMARKED_README)


def _starts_as_model(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(len(persistence.MAGIC)) == persistence.MAGIC


def _read_catalogue(path: Path) -> tuple[dict, bool]:
    """(the catalogue's entries as they are, whether the file is a catalogue: a JSON object with 'models', an
    object)."""
    try:
        models = json.loads(path.read_text(encoding="utf-8")).get("models")
    except (ValueError, AttributeError, RecursionError, OSError):  # RecursionError: nested past Python's stack
        return {}, False
    return (models, True) if isinstance(models, dict) else ({}, False)


def entry_problem(task: str, entry: Any) -> str | None:
    """What is wrong with `task`'s catalogue entry, in words, or None when every field that is read is there and
    of its type."""
    if not isinstance(entry, dict):
        return f"its entry is a {type(entry).__name__}, not an object"
    for field, kind in ENTRY_FIELDS.items():
        if not isinstance(entry.get(field), kind) or isinstance(entry.get(field), bool):
            return f"its entry's '{field}' is missing or not of its type"
    if entry["task"] != task or not isinstance(entry["train"].get("name"), str) or not all(
            isinstance(value, (int, float, type(None))) for value in entry["headline"].values()) or not isinstance(
            entry.get("command"), (str, type(None))):
        return "its entry names another task, or its training file, scores or command are not of their type"
    return None


def _catalogue(folder: Path) -> dict[str, dict]:
    """The well-formed entries of the folder's catalogue (a damaged one's are left out: each model is still
    loaded from its own checked file)."""
    models, _is_catalogue = _read_catalogue(folder / CATALOGUE)
    return {task: entry for task, entry in models.items() if entry_problem(task, entry) is None}


def _write_readme(folder: Path, entries: dict[str, dict]) -> None:
    lines = [README_MARK, "# Ready models", "",
             "Each task's default model, trained by `klue-baselines train --all` on the data named below and "
             "scored on its dev file. Load one with `api.ready_model(task)`; the lessons and `serve` use them.", "",
             "| task | model | file | MB | trained in | trained on | dev scores |", "|---|---|---|---|---|---|---|"]
    for entry in entries.values():
        scores = ", ".join(f"{key} {format_score(value)}" for key, value in entry["headline"].items())
        sample = " (the shipped sample)" if entry.get("sample") else ""
        lines.append(f"| {entry['task']} | {entry['model']} | {entry['file']} | {entry['size_mb']} | "
                     f"{entry['train_seconds']:.0f} s | {entry['train']['name']}{sample} | {scores} |")
    commands = sorted({entry["command"] for entry in entries.values() if entry.get("command")})
    if commands:
        lines += ["", "Commands:", ""] + [f"    {command}" for command in commands]
    with atomic_output(folder / README) as handle:
        handle.write("\n".join(lines) + "\n")


def ready_model(task: str, folder: Path, trust_pickle: bool = False) -> tuple[Any, dict] | None:
    """(model, its catalogue entry) of `task` in `folder`, or None when there is none; a file that is there but
    does not load is an error, as any model file's (persistence.load_model)."""
    path = model_path(folder, task)
    if not path.is_file():
        return None
    model, _metadata = persistence.load_model(path, task, versions(), trust_pickle)
    return model, _catalogue(folder).get(task, {"task": task, "file": path.name})
