"""The scale benchmark: fit and predict seconds and peak memory at shares of the official training size, each
size in a process of its own with an empty analysis cache, and how the fit time grows (time ~ n^k).

Where the training data here is smaller than the share asked for (NER and DP have prefixes of their train
files, MRC and WoS only a part of dev), the set is filled with copies of its records, each made distinct so
that no analysis cache, memo or de-duplication can skip it: each task's TaskSpec.reading.distinct_copy puts the word
사례k in front of copy k's text (NER: tagged O; DP: one more eojeol, attached to the root; MRC: of the passage,
with the answers moved, and 문항k in front of the question; WoS: of every turn). A copy costs what a new record
of the same length costs, and its word is never a feature value seen elsewhere; what copies cannot reproduce
is the vocabulary growth of new text, so models whose cost grows with their vocabulary (hashed or not) may be
cheaper here than on the official file at the same size.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from baselines.data.locate import locate
from baselines.errors import setting
from baselines.data import hf

from baselines.runner import build, evaluate as evaluation, tables
from baselines.errors import UsageError
from baselines.runtime.provenance import code_version, machine, versions


from baselines.runtime import memory
from baselines.runtime.parallel import answer_in_new_process, in_new_process
from baselines.runner.registry import get_task
from baselines.taskspec import TaskSpec
from features import analysis

SIZES = (0.125, 0.25, 0.5, 1.0)


def official_train_size(code: str) -> int:
    return hf.SCHEMAS[code].split_sizes["train"]


def training_set(task: TaskSpec, pool: Sequence, size: float, seed: int) -> tuple[list, int]:
    """`size` x the official training size of records: the pool in one seeded order, then distinct copies of
    it in the same order as far as needed (so a smaller size's records are the start of a larger one's).
    Returns the records and how many copies were made of the pool (0: none)."""
    wanted = round(size * official_train_size(task.code))
    if not pool:
        raise UsageError(f"{task.code}: no training records to build the scale sets from")
    if wanted > len(pool) and task.reading.distinct_copy is None:
        raise UsageError(f"{task.code}: {size:g} x the official training size is {wanted} records and the "
                         f"training file has {len(pool)}; give the full official file")
    order = np.random.default_rng(seed).permutation(len(pool))
    shuffled = [pool[i] for i in order]
    records, copy = list(shuffled[:wanted]), 0
    while len(records) < wanted:
        copy += 1
        records.extend(task.reading.distinct_copy(record, copy) for record in shuffled[:wanted - len(records)])
    return records, copy


def measure_point(code: str, size: float, model_name: str | None, seed: int, data: dict) -> dict:
    """One size, in this process (a fresh one: bench_scale starts one per size): load, build the training
    set, fit, predict the dev file; seconds of each, Kiwi's share of them, and this process's peak memory."""
    task = get_task(code)
    start = time.perf_counter()
    located = locate(task, data.get("data_dir"), data.get("train"), data.get("dev"))
    resources = task.resources.load_resources(located.extras)
    dev = task.reading.load(located.dev)
    pool = task.reading.load(located.train) if located.train else dev
    train, copies = training_set(task, pool, size, seed)
    name, model = build.build_model(task, model_name, seed, resources)
    loaded = time.perf_counter()
    model.fit(train, task.modelling.targets(train))
    fitted = time.perf_counter()
    analysis_in_fit = analysis.stats().seconds
    task.modelling.predict(model, dev)
    predicted = time.perf_counter()
    return {"size": size, "train_records": len(train), "copies": copies, "dev_records": len(dev), "model": name,
            "seconds": {"load": round(loaded - start, 3), "fit": round(fitted - loaded, 3),
                        "predict": round(predicted - fitted, 3)},
            "analysis_seconds": {"fit": round(analysis_in_fit, 3),
                                 "predict": round(analysis.stats().seconds - analysis_in_fit, 3)},
            "peak_rss_mb": memory.rounded_peak_mb(),
            "source": "train file" if located.train else "dev file (no train file here)"}


def growth_exponent(sizes: Sequence[float], seconds: Sequence[float]) -> float | None:
    """k of seconds ~ n^k: the slope of a least-squares line through (log n, log seconds); None for fewer
    than two sizes."""
    if len(sizes) < 2:
        return None
    return round(float(np.polyfit(np.log(sizes), np.log(np.maximum(seconds, 1e-3)), 1)[0]), 3)


def bench_scale(code: str, sizes: Sequence[float] = SIZES, model_name: str | None = None, seed: int = 0,
                data_dir: str | Path | None = None, train: str | Path | None = None, dev: str | Path | None = None,
                command: str | None = None, log: Callable[[str], None] = lambda message: None) -> dict:
    """measure_point for each size, each in a new Python process with its own empty analysis cache, and the
    report that results/scale/<task>.json keeps."""
    task = get_task(code)
    located = locate(task, data_dir, train, dev)  # checked here, before any process starts
    if located.is_sample:
        raise UsageError(f"the scale benchmark needs KLUE data: give {setting('--data-dir', 'data_dir')} (the "
                         f"shipped sample is "
                         "a few dozen records)")
    data = {"data_dir": str(data_dir) if data_dir else None, "train": str(train) if train else None,
            "dev": str(dev) if dev else None}
    points = []
    for size in sorted(sizes):
        log(f"{code}: {size:g} x {official_train_size(code)} training records, in a new process")
        point = in_new_process("baselines.bench.scale", {"code": code, "size": size, "model_name": model_name,
                                                   "seed": seed, "data": data},
                               f"{code} at {size:g} x the official size failed")
        points.append(point)
        log(f"{code}: {point['train_records']} records: fit {point['seconds']['fit']:.1f}s, predict "
            f"{point['seconds']['predict']:.1f}s, peak {point['peak_rss_mb']:.0f} MiB")
    trained = [point["train_records"] for point in points]
    report = {
        "task": code, "model": points[-1]["model"], "official_train_records": official_train_size(code),
        "seed": seed, "method": __doc__.split("\n\n")[1].replace("\n", " "),
        "files": [evaluation.describe_file(path) for path in (located.train, located.dev) if path is not None],
        "points": points,
        "fit_exponent": growth_exponent(trained, [point["seconds"]["fit"] for point in points]),
        "fit_predict_exponent": growth_exponent(
            trained, [point["seconds"]["fit"] + point["seconds"]["predict"] for point in points]),
        "versions": versions(), "machine": machine(), "code": code_version(),
    }
    full = next((point for point in points if point["size"] == 1), None)
    if full is not None:
        seconds = full["seconds"]["fit"] + full["seconds"]["predict"]
        report["official_size"] = {
            "fit_predict_seconds": round(seconds, 1), "peak_rss_mb": full["peak_rss_mb"],
            "within_budget": (seconds <= tables.SECONDS_BUDGET
                              and (full["peak_rss_mb"] or 0) <= tables.PEAK_RSS_BUDGET_MB)}
    if command is not None:
        report["command"] = command
    return report


if __name__ == "__main__":
    answer_in_new_process(lambda request: measure_point(**request), sys.argv)
