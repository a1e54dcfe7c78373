"""`bench long-inputs`: seconds and peak memory of each task's model predicting one input of growing size."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Sequence

from baselines.data import sources

from baselines.runner import build, results, tables
from baselines.runtime.provenance import code_version, machine, versions


from baselines.runtime import memory
from baselines.data.fileio import check_output_folder
from baselines.runner.registry import get_task
from features import analysis

# Sizes of the one input, by the unit its task grows (Benchmarks.size_unit): characters of its longest text, or
# eojeols for a parser, as it decodes them.
CHARACTERS = (1_000, 10_000, 100_000)  # 100,000: the most one text may have (features.analysis)
EOJEOLS = (100, 500, 2_000, 5_000)
SIZES = {"characters": CHARACTERS, "eojeols": EOJEOLS}


def measure(task: str, model: Any, plain: Any, sizes: Sequence[int], log: Callable[[str], None]) -> list[dict]:
    """For each size, the seconds and peak memory of predicting the one input `plain` grown to that size."""
    spec = get_task(task)
    points = []
    for size in sizes:
        grown = spec.benchmarks.grow(plain, size)
        memory.reset_peak()
        start = time.perf_counter()
        spec.modelling.predict(model, spec.reading.as_records([grown]))
        seconds = time.perf_counter() - start
        points.append({"size": size, "seconds": round(seconds, 2), "peak_rss_mb": memory.rounded_peak_mb()})
        log(f"{task}: {size:,} {spec.benchmarks.size_unit}: {seconds:.1f} s, "
            f"{tables.memory_cell(points[-1]['peak_rss_mb'])} MiB")
    return points


def long_inputs_report(tasks: Sequence[str], results_dir: Path, command: str | None = None,
                       log: Callable[[str], None] = lambda message: None) -> tuple[dict, Path]:
    """Each task's default model, fitted on the shipped sample, predicting one input of each size (CHARACTERS,
    or EOJEOLS for DP), one size after another in this process; written to results_dir/long-inputs.json."""
    check_output_folder(results_dir)
    report: dict[str, Any] = {"what": "one input of each size, predicted by the task's default model fitted on "
                                      "the shipped sample, with no analysis cache; seconds and peak resident memory "
                                      "of the prediction", "tasks": {}}
    # Analyses of earlier runs would answer from the cache: the inputs are analysed afresh, as a user's are.
    settings, progress = analysis.worker_settings(), analysis.analyzer().progress
    analysis.configure(num_workers=settings["num_workers"], use_cache=False, progress=progress)
    try:
        _measure_tasks(report, tasks, log)
    finally:
        analysis.configure(**settings, progress=progress)
    if command is not None:
        report["command"] = command
    report.update(versions=versions(), machine=machine(), code=code_version())
    path = results.write_result(results_dir, results_dir / "long-inputs.json", report)
    return report, path


def _measure_tasks(report: dict, tasks: Sequence[str], log: Callable[[str], None]) -> None:
    for task in tasks:
        spec = get_task(task)
        folder = sources.sample_dir(spec.code) / spec.folder
        train = spec.reading.load(folder / spec.train_file)
        extras = {extra: folder / extra for extra in spec.extra_files}
        _name, model = build.build_model(spec, None, 0, spec.resources.load_resources(extras))
        model.fit(train, spec.modelling.targets(train))
        plain = spec.reading.plain_inputs(spec.reading.load(folder / spec.dev_file)[:1])[0]
        unit = spec.benchmarks.size_unit
        report["tasks"][task] = {"unit": unit,
                                 "points": measure(task, model, plain, SIZES[unit], log)}
