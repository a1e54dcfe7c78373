"""results/ written: each task's runs, reports and predictions, whole or not at all, under a lock; then the pages
generated from it anew (generated_docs)."""
from __future__ import annotations

import contextlib
import gzip
import json
import os
from pathlib import Path
from typing import Iterator, Sequence

try:
    import fcntl


except ImportError:  # Windows
    fcntl = None

from baselines import _moved
from baselines.data.fileio import atomic_output, file_sha256, write_json_atomic
from baselines.errors import SampleOverResults, setting
from baselines.runner.generated_docs import regenerate_readme
from baselines.runner.result_files import PREDICTIONS_FOLDER, load_task_results, run_file_stem, run_name, task_file


def check_sample_can_be_recorded(results_dir: Path, task: str) -> None:
    """SampleOverResults when results_dir/<task>.json holds runs on KLUE data, which sample scores must not
    join or replace."""
    if any(not run.get("sample") for run in load_task_results(results_dir, task)["runs"].values()):
        raise SampleOverResults(f"{task_file(results_dir, task)} holds runs on KLUE data; scores on the shipped "
                                f"sample are not recorded beside them (give another "
                                f"{setting('--results-dir', 'results_dir')})")


def destination(results_dir: str | Path | None, is_sample: bool) -> Path | None:
    """Where a run's results go: the results_dir given, else ./results; but scores on the shipped sample
    only where a results_dir is given (they are not KLUE results), so None then."""
    if results_dir is not None:
        return Path(results_dir)
    return None if is_sample else Path("results")


def learning_curve_report(record: dict, points: list[dict], command: str | None) -> dict:
    """The learning-curve file: what every point shares (task, model, files, versions...) from the last
    point's run record, then the points, then the command that produced them."""
    shared = ("task", "model", "estimator", "protocol", "cv_folds", "data_source", "files", "hyper_parameters", "seed",
              "versions", "machine", "code", "params")
    report = {key: record[key] for key in shared if key in record}
    report["points"] = points
    if command is not None:
        report["command"] = command
    return report


def record_run(results_dir: Path, record: dict, predictions: Sequence[dict] | None = None) -> Path:
    """Store `record` as the task's run for its model (and hyper-parameters given), replacing the previous one.
    A sample run never joins runs on KLUE data: that raises SampleOverResults. The task file is read, changed
    and written under the results folder's lock, so runs recorded by processes at the same time are all kept.
    With `predictions` (the dev predictions that were scored), they are kept beside the row, compressed, in
    predictions/<run file stem>.jsonl.gz, and the row names that file with its sha256 (see
    write_predictions)."""
    with locked(results_dir):
        if record.get("sample"):
            check_sample_can_be_recorded(results_dir, record["task"])
        if predictions is not None:
            record["predictions"] = write_predictions(results_dir, record, predictions)
        data = load_task_results(results_dir, record["task"])
        data["runs"][run_name(record)] = record
        return write_result(results_dir, task_file(results_dir, record["task"]), data)


def write_predictions(results_dir: Path, record: dict, predictions: Sequence[dict]) -> dict:
    """A run's dev predictions as gzipped JSON Lines that `score` and `compare` read: each row without the
    input and gold that `run --predictions-dir` adds (the dev file holds both), the gzip header without a
    time, so the same predictions make the same bytes. Returns the row's entry: file, sha256, rows."""
    path = results_dir / PREDICTIONS_FOLDER / f"{run_file_stem(record)}.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps({key: value for key, value in row.items() if key not in ("input", "gold")},
                              ensure_ascii=False, sort_keys=True) + "\n" for row in predictions)
    with atomic_output(path, "wb", encoding=None) as handle:
        with gzip.GzipFile(fileobj=handle, mode="wb", filename="", mtime=0, compresslevel=9) as compressed:
            compressed.write(text.encode("utf-8"))
    return {"file": path.relative_to(results_dir).as_posix(), "sha256": file_sha256(path),
            "rows": len(predictions)}


def write_result(results_dir: Path, path: Path, data: dict) -> Path:
    """Write one JSON file under results_dir, whole or not at all, then README.md and the figure anew from all
    of them. Every command that writes results/ goes through here, so a command killed between its JSON file
    and the README leaves the README stale only until the next one."""
    with locked(results_dir):
        write_json_atomic(path, data)
        regenerate_readme(results_dir)
    return path


LOCK_FILE = ".lock"
_held: dict[str, int] = {}  # results folders this process has locked, and how deeply (the lock is re-entrant)


@contextlib.contextmanager
def locked(results_dir: Path) -> Iterator[None]:
    """Hold results_dir's lock (an exclusive lock on its .lock file; re-entrant within the process) while
    other processes that record results there wait. Without fcntl (Windows), results are written unlocked."""
    key = os.path.realpath(results_dir)
    if _held.get(key) or fcntl is None:
        _held[key] = _held.get(key, 0) + 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    Path(results_dir).mkdir(parents=True, exist_ok=True)
    with open(Path(results_dir) / LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        _held[key] = 1
        try:
            yield
        finally:
            _held[key] = 0
            fcntl.flock(handle, fcntl.LOCK_UN)


# The tables and the generated pages were in this module until 0.2: their names still reach them from here, warned.
__getattr__ = _moved.moved_out(__name__)
