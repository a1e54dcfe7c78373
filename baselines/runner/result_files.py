"""What results/ holds: its protocols in words, and the records of each task read back (no writing here)."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from baselines.data.fileio import DataError, read_json
from baselines.runner.registry import all_tasks


# What each protocol name (evaluate.protocol_name) means: every name a record can hold, and only these (a test
# holds results/ to them). Only `official` is the design of published numbers (which are test scores: ours are
# dev scores either way).
PROTOCOLS = {
    "official": "train on the whole official train file, score the whole official dev file",
    "official-partial-train": "train on part of the official train file (a listed prefix copy, or a share of the "
                              "file: its record count is in the row's JSON), score the whole dev file",
    "train+dev-crossfit": "K-fold cross-fitting over the dev file: each fold is predicted by a model trained on the "
                          "train file plus the other dev folds; all dev predictions are scored together",
    "partial-train+dev-crossfit": "as train+dev-crossfit, with part of the official train file",
    "dev-crossfit": "K-fold cross-fitting over the dev file alone (folds split by passage or dialogue where records "
                    "share one): each fold is predicted by a model trained on the other folds",
    "custom": "a train or dev file that is neither an official file's bytes nor a listed derivation of them (a "
              "filtered, perturbed or subsampled copy, an unlisted export), or a listed part of dev scored without "
              "cross-fitting: the row names each file with its sha256 and record count; not an official-data score",
    "saved-model": "a model file scored on the whole official dev file; how it was trained is the model's own",
    "sample": "the small sample shipped with the package: a check that the code runs, not a KLUE score",
    "sample-crossfit": "cross-fitting over the shipped sample: a check that the code runs, not a KLUE score",
}


def protocol_meaning(protocol: str) -> str:
    """A protocol name in words (PROTOCOLS)."""
    return PROTOCOLS.get(protocol, "not one of this project's protocols")


def comparable(run: dict) -> bool:
    """Whether a run follows the design of published KLUE numbers: the official protocol, on files with the
    official records (a listed reconstruction counts; see protocol_cell)."""
    return run.get("protocol") == "official"


def task_file(results_dir: Path, task: str) -> Path:
    return Path(results_dir) / f"{task}.json"


def load_task_results(results_dir: Path, task: str) -> dict:
    path = task_file(results_dir, task)
    if not path.exists():
        return {"task": task, "runs": {}}
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("runs"), dict):
        raise DataError(path, None, "not a klue-baselines results file (expected {'task', 'runs'})")
    return data


def run_name(record: dict) -> str:
    """The key of a run in results/<task>.json: the model's name, and the hyper-parameters given to it, if
    any ('span-ranker abstain=false'), so that such a run does not replace the default one."""
    given = record.get("params") or {}
    return " ".join([record["model"]] + [f"{key}={json.dumps(value)}" for key, value in sorted(given.items())])


def run_file_stem(record: dict) -> str:
    """A file name for one run's output: 'mrc-span-ranker', 'mrc-span-ranker-abstain=false'. Characters
    other than letters, digits and '._=,+-' become '_', so that a --param value such as '../x' or '/etc'
    cannot steer the file out of the folder it is written to."""
    stem = f"{record['task']}-{run_name(record).replace(' ', '-')}"
    return re.sub(r"[^0-9A-Za-z._=,+-]", "_", stem).replace("..", "__")


PREDICTIONS_FOLDER = "predictions"


def jsonable_scores(metrics: dict[str, float], digits: int) -> dict[str, float | None]:
    """Scores rounded for a record, an undefined (NaN) one as None: JSON has no NaN, and null says 'undefined'."""
    return {key: None if math.isnan(value) else round(value, digits) for key, value in metrics.items()}


def all_runs(results_dir: Path) -> dict[str, dict]:
    """Every task's recorded runs in results_dir, by task code (an empty dict for a task with none)."""
    return {task.code: load_task_results(results_dir, task.code)["runs"] for task in all_tasks()}
