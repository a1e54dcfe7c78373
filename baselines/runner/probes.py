"""What the data alone gives away: each task's partial-input baselines trained and scored beside its default model
and its trivial floor, with the share of the gap between the two that each one closes."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Sequence

from baselines.data.fileio import check_output_folder
from baselines.data.locate import TaskData
from baselines.runner import evaluate as evaluation
from baselines.runner import results
from baselines.runner.registry import get_task
from baselines.runtime.parallel import Workers
from baselines.runtime.provenance import code_version, machine, versions
from baselines.taskspec import Probe, TaskSpec

Log = Callable[[str], None]

# The two rows that anchor every table: the default model on the whole input, and the floor, which sees no input.
WHOLE_INPUT = Probe("whole input", "all of each input: the task's default model")
NOTHING = Probe("nothing", "no input: the trivial floor (the task's 'trivial' model; DP's attaches each word to the "
                           "next)", model="trivial")


def probes_of(spec: TaskSpec) -> tuple[Probe, ...]:
    """The rows of the task's table, in order: the whole input, the task's own probes, nothing."""
    own = spec.benchmarks.probes if spec.benchmarks is not None else ()
    return (WHOLE_INPUT, *own, NOTHING)


def checked_shown(spec: TaskSpec, probe: Probe) -> Callable[[Sequence], list] | None:
    """The probe's `shown`, held to its promise: the same records, in the same order, with the same targets; a
    probe that broke it would score another task than the one it names."""
    if probe.shown is None:
        return None

    def shown(records: Sequence) -> list:
        partial = list(probe.shown(records))
        if [getattr(r, "guid", None) for r in partial] != [getattr(r, "guid", None) for r in records] or \
                spec.modelling.targets(partial) != spec.modelling.targets(list(records)):
            raise ValueError(f"{spec.code}: the probe {probe.name!r} changed the records' guids, order or labels")
        return partial
    return shown


def gap_closed(score: float | None, floor: float | None, whole: float | None) -> float | None:
    """The share of the gap between the floor and the whole input's score that `score` closes (1: all of it, 0:
    none, below 0: worse than the floor); None where a score is undefined or the whole input does not beat the
    floor (RE's AUPRC, where a constant's ties score above the default: there is no gap to close). A floor whose
    score is undefined (Pearson's r of a constant prediction) counts from 0: a constant carries no correlation."""
    floor = 0.0 if floor is None else floor
    if score is None or whole is None or whole <= floor or math.isclose(whole, floor):
        return None
    return round((score - floor) / (whole - floor), 4)


def probe_task(code: str, data: TaskData, *, seed: int, cv: int, workers: Workers, log: Log) -> dict:
    """Each probe of the task (probes_of) trained and scored as `run` trains and scores the default model (the
    same files, protocol, seed and folds), with its headline scores, their 95 % bootstrap intervals and the share
    of the gap between floor and whole input that it closes."""
    spec = get_task(code)
    rows, records = [], []
    for probe in probes_of(spec):
        log(f"{code}: probe {probe.name!r}: {probe.sees}")
        record, _predictions = evaluation.evaluate_task(spec, data, model_name=probe.model, seed=seed, cv=cv,
                                                        log=log, params=dict(probe.params) or None, workers=workers,
                                                        shown=checked_shown(spec, probe))
        records.append(record)
        rows.append({"probe": probe.name, "sees": probe.sees, "model": record["model"], **(
                     {"params": dict(probe.params)} if probe.params else {}),
                     "headline": record["headline"],
                     "intervals": {metric: record["intervals"].get(metric) for metric in record["headline"]},
                     "seconds": round(sum(record["seconds"].values()), 3)})
    whole, floor = rows[0]["headline"], rows[-1]["headline"]
    for row in rows:
        row["gap_closed"] = {metric: gap_closed(score, floor.get(metric), whole.get(metric))
                             for metric, score in row["headline"].items()}
    first = records[0]
    return {"task": code, "protocol": first["protocol"], "cv_folds": cv, "seed": seed, "sample": first["sample"],
            "data_source": first["data_source"], "files": first["files"], "dev_units": first.get("dev_units"),
            "intervals": {"resamples": first["intervals"]["resamples"], "seed": first["intervals"]["seed"]},
            "probes": rows}


def probe_and_record(code: str, data: TaskData, *, seed: int, cv: int, workers: Workers, results_dir: Path | None,
                     command: str | None, log: Log) -> tuple[dict, Path | None]:
    """`probe`: the task's table (probe_task) with the command, the code and the machine, written to
    results/probes/<task>.json (with the shipped sample, only where results_dir is given, as `run` records; the
    folder checked before any model trains). Returns the report and its path, or None."""
    folder = results.destination(results_dir, data.is_sample)
    if folder is not None:
        check_output_folder(folder / "probes")
    report = probe_task(code, data, seed=seed, cv=cv, workers=workers, log=log)
    report.update({"command": command, "versions": versions(), "machine": machine(), "code": code_version()})
    if folder is None:
        return report, None
    return report, results.write_result(folder, folder / "probes" / f"{code}.json", report)
