"""`bench budget`: each task's default model (or its fast one), rerun as its results/ row records it, as a multiple
of raw Kiwi analysis.

Seconds change with the machine; their ratio to what Kiwi alone takes on the same texts, measured in the same run
on the same machine, carries over. Each task's default row is rerun as `reproduce` reruns it (a new process, an
empty analysis cache); then, in a new process of its own, Kiwi (kiwipiepy, with as many threads as the rerun's
analyser) tokenizes every distinct text of the files that the rerun read, once. The suite's ratio is the sum of
the tasks' seconds over the sum of their Kiwi seconds.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Sequence

import click

from baselines.bench import reproduce
from baselines.errors import UsageError
from baselines.runner import results
from baselines.runtime.parallel import answer_in_new_process, in_new_process
from baselines.runner.registry import get_task
from baselines.runtime.provenance import code_version, machine, versions
from features.analysis import MorphemeAnalyzer

SUITE_RATIO_BUDGET = 5.0  # the whole suite at most this many times raw Kiwi analysis of all its texts (#46)


def raw_kiwi(code: str, paths: Sequence[str]) -> dict:
    """Seconds that Kiwi takes to tokenize every distinct, non-blank text of the task's files `paths` (its model
    loaded first, and timed apart), in this process, with the Kiwi that this toolkit's analyser makes (the same
    threads and kernels), but none of its caches."""
    task = get_task(code)
    texts = list(dict.fromkeys(text for path in paths for text in task.reading.texts(task.reading.load(Path(path)))
                               if text.strip()))
    start = time.perf_counter()
    kiwi = MorphemeAnalyzer(use_cache=False).kiwi
    loaded = time.perf_counter()
    for _tokens in kiwi.tokenize(texts):
        pass
    done = time.perf_counter()
    return {"texts": len(texts), "characters": sum(map(len, texts)), "model_load_seconds": round(loaded - start, 3),
            "seconds": round(done - loaded, 3)}


def data_files(code: str, record: dict) -> list[str]:
    """The training and evaluation files that a run record names, without the task's extra files (RE's relation
    list, WoS's ontology), which hold no text to analyse."""
    extras = set(get_task(code).extra_files)
    return [described["path"] for described in record["files"] if Path(described["path"]).name not in extras]


def bench_budget(results_dir, task_codes: Sequence[str], run_command: click.Command, command: str | None = None,
                 log: Callable[[str], None] = lambda message: None, model: str | None = None) -> dict:
    """The report of `bench budget` for the tasks' default rows in results_dir, or with `model` ('fast') the rows
    of that model."""
    wanted = {code: model or get_task(code).modelling.default_model for code in task_codes}
    tasks = {}
    for row, record in reproduce.rerun(results_dir, task_codes, run_command, log,
                                       keep=lambda row: row.run == wanted[row.task]):
        if record is None:
            raise UsageError(f"{row.task}: its row's command could not be rerun")
        paths = data_files(row.task, record)
        log(f"{row.task}: raw Kiwi on the texts of {', '.join(path.rsplit('/', 1)[-1] for path in paths)}")
        kiwi = in_new_process("baselines.bench.budget", {"code": row.task, "paths": paths},
                              f"{row.task}: raw Kiwi analysis failed")
        seconds = round(sum(record["seconds"].values()), 3)
        tasks[row.task] = {"run": row.run, "command": record.get("command"), "seconds": seconds,
                           "stages": record["seconds"], "peak_rss_mb": record.get("peak_rss_mb"),
                           "headline": record["headline"], "raw_kiwi": kiwi,
                           "ratio": round(seconds / kiwi["seconds"], 2)}
        log(f"{row.task}: {seconds:.1f} s, {tasks[row.task]['ratio']}x raw Kiwi ({kiwi['seconds']:.1f} s)")
    total = sum(task["seconds"] for task in tasks.values())
    kiwi_total = sum(task["raw_kiwi"]["seconds"] for task in tasks.values())
    report = {"method": __doc__.split("\n\n")[1].replace("\n", " "), "model": model or "default", "tasks": tasks,
              "suite": {"seconds": round(total, 1), "raw_kiwi_seconds": round(kiwi_total, 1),
                        "ratio": round(total / kiwi_total, 2) if kiwi_total else None,
                        "budget_ratio": SUITE_RATIO_BUDGET,
                        "within_budget": bool(kiwi_total) and total / kiwi_total <= SUITE_RATIO_BUDGET},
              "versions": versions(), "machine": machine(), "code": code_version()}
    if command is not None:
        report["command"] = command
    return report


def bench_and_record(results_dir: Path, task_codes: Sequence[str], run_command: click.Command, command: str | None,
                     log: Callable[[str], None], fast: bool = False) -> tuple[dict, Path]:
    """`bench budget`: the report of the tasks' default rows (their fast rows with `fast`), written to
    results_dir/budget.json (budget-fast.json)."""
    report = bench_budget(results_dir, task_codes, run_command, command, log, model="fast" if fast else None)
    if not report["tasks"]:
        raise UsageError(f"no {'fast' if fast else 'default'} rows to rerun in {results_dir}")
    path = results_dir / ("budget-fast.json" if fast else "budget.json")
    return report, results.write_result(results_dir, path, report)


if __name__ == "__main__":
    answer_in_new_process(lambda request: raw_kiwi(**request), sys.argv)
