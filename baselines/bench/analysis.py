"""The analysis benchmark: raw Kiwi against the feature layer with a cold and a warm cache, on KLUE text."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Callable

from baselines.data import sources

from baselines.runner import evaluate as evaluation, results
from baselines.errors import UsageError
from baselines.runtime.provenance import machine, versions


from baselines.runtime import memory
from baselines.data.fileio import check_output_folder
from baselines.taskspec import TaskSpec
from features import analysis
from features.analysis import MorphemeAnalyzer


def collect_texts(tasks: list[TaskSpec], data_dir: Path | None,
                  log: Callable[[str], None]) -> tuple[list[str], list[dict]]:
    """Every distinct text of every file the tasks have in data_dir (official or partial names)."""
    texts: dict[str, None] = {}
    files = []
    for task in tasks:
        folder = (data_dir / task.folder) if data_dir else None
        candidates = sorted(folder.glob("*")) if folder and folder.is_dir() else []
        for path in candidates:
            if path.name in task.extra_files or not path.is_file():
                continue
            records = task.reading.load(path)
            before = len(texts)
            texts.update(dict.fromkeys(text for text in task.reading.texts(records) if text.strip()))
            files.append(evaluation.describe_file(path, len(records)))
            log(f"{task.code}: {path.name}: {len(records)} records, {len(texts) - before} new texts")
    return list(texts), files


def _timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def bench_analysis(texts: list[str], num_workers: int | None = None, rounds: int = 8,
                   log: Callable[[str], None] = lambda message: None) -> dict:
    """Characters per second of raw Kiwi.tokenize, of this layer with an empty cache, and with that cache
    filled (a fresh analyser each time: no memory memo carries over).

    The texts are cut into `rounds` slices, and each slice is timed raw and cold back to back, in
    alternating order, then warm: a shared machine's slow and fast spells then fall on all three alike
    instead of on whichever ran during them. Totals are summed over the slices.
    """
    characters = sum(map(len, texts))
    size = -(-len(texts) // rounds)
    slices = [texts[i:i + size] for i in range(0, len(texts), size)]
    seconds = {"raw_kiwi": 0.0, "cold": 0.0, "warm": 0.0}
    with tempfile.TemporaryDirectory(prefix="klue-bench-cache-") as cache_dir:
        kiwi = MorphemeAnalyzer(num_workers=num_workers).kiwi  # loaded once, outside every timing
        list(kiwi.tokenize(texts[:200]))  # start the thread pool
        log(f"{len(texts)} texts ({characters} characters) in {len(slices)} slices")
        for number, piece in enumerate(slices, start=1):
            cold = MorphemeAnalyzer(num_workers=num_workers, cache_dir=cache_dir)
            cold._kiwi = kiwi
            raw_first = number % 2 == 1
            if raw_first:
                seconds["raw_kiwi"] += _timed(lambda: list(kiwi.tokenize(piece)))
            seconds["cold"] += _timed(lambda: cold.analyze(piece))
            if not raw_first:
                seconds["raw_kiwi"] += _timed(lambda: list(kiwi.tokenize(piece)))
            cold.cache.close()
            warm = MorphemeAnalyzer(num_workers=num_workers, cache_dir=cache_dir)
            seconds["warm"] += _timed(lambda: warm.analyze(piece))
            if warm.stats.analysed:
                raise RuntimeError(f"warm run analysed {warm.stats.analysed} texts: the cache missed")
            warm.cache.close()
            log(f"slice {number}/{len(slices)}: raw {seconds['raw_kiwi']:.1f}s, cold {seconds['cold']:.1f}s, "
                f"warm {seconds['warm']:.1f}s so far")
    return {
        "texts": len(texts),
        "characters": characters,
        "rounds": len(slices),
        "seconds": {name: round(value, 3) for name, value in seconds.items()},
        "characters_per_second": {name: round(characters / value) for name, value in seconds.items()},
        "cold_vs_raw": round(seconds["raw_kiwi"] / seconds["cold"], 4),
        "warm_speedup_over_cold": round(seconds["cold"] / seconds["warm"], 2),
        "targets": {"cold_vs_raw": ">= 0.90", "warm_speedup_over_cold": ">= 20"},
        "num_workers": num_workers,
        "peak_rss_mb": memory.rounded_peak_mb(),
        "versions": versions(),
        "machine": machine(),
    }


def analysis_report(tasks: list[TaskSpec], data_dir: Path | None, limit: int | None, results_dir: Path,
                    command: str | None = None, log: Callable[[str], None] = lambda message: None
                    ) -> tuple[dict, Path]:
    """`bench analysis`: the texts of the tasks' files in data_dir (the first `limit`), benchmarked with as
    many Kiwi threads as the analyser is configured for, and written to results_dir/analysis.json."""
    folder = sources.download_dir(data_dir)
    texts, files = collect_texts(tasks, folder, log)
    if not texts:
        raise UsageError(f"no KLUE text found under {folder}")
    check_output_folder(results_dir)
    report = bench_analysis(texts[:limit] if limit else texts, num_workers=analysis.analyzer().num_workers, log=log)
    if command is not None:
        report["command"] = command
    report["files"] = files
    path = results.write_result(results_dir, results_dir / "analysis.json", report)
    return report, path
