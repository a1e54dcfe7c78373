"""The determinism benchmark: models rerun under other BLAS kernels, thread counts and numpy SIMD paths, their
predictions compared row by row with the first run's."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from baselines.data.fileio import absolute_path, read_jsonl
from baselines.errors import UsageError
from baselines.runner.registry import TASK_CODES, get_task
from baselines.runner import results
from baselines.runner.result_files import load_task_results, run_file_stem
from baselines.runtime.provenance import code_version, machine, versions
from features.analysis import cpu_info

# OpenBLAS kernels that its DYNAMIC_ARCH builds (numpy's and scipy's wheels) accept on x86-64, each with the CPU
# flag it needs: SSE3 ('pni' in /proc/cpuinfo), AVX, AVX2. Their sums run in other orders, so the last bits of
# a product differ between them (Prescott and Sandybridge against Haswell, measured on an AMD EPYC).
X86_BLAS_KERNELS = (("Prescott", "pni"), ("Sandybridge", "avx"), ("Haswell", "avx2"))
# numpy picks some loops (exp, log, tanh, float32 arithmetic...) at run time by the CPU's features; X86_V3 (AVX2
# with FMA) off makes it run those of a CPU without them. Its float64 exp and log gave the same bits both ways on
# 9 million values; other loops may not.
NUMPY_WITHOUT_AVX2 = "X86_V3"


@dataclass(frozen=True)
class Variant:
    """One way of running the same command: the environment variables it sets."""
    name: str
    environment: dict[str, str] = field(default_factory=dict)


def variants(flags: Sequence[str] | None = None, machine: str | None = None,
             pinned_kernel: str | None = None) -> list[Variant]:
    """The runs to compare, the first being the reference: every BLAS kernel this CPU runs (widest first), with
    1 and 2 BLAS and OpenMP threads, and numpy's loops without AVX2; each under its own PYTHONHASHSEED, so that
    set order changes too. Where the environment pins OPENBLAS_CORETYPE (some machines need it), kernels are
    not varied."""
    flags = set(cpu_info().get("flags", "").split() if flags is None else flags)
    machine = platform.machine() if machine is None else machine
    pinned_kernel = os.environ.get("OPENBLAS_CORETYPE") if pinned_kernel is None else pinned_kernel
    if pinned_kernel:
        kernels = [pinned_kernel]
    elif machine in ("x86_64", "AMD64"):
        kernels = [name for name, flag in X86_BLAS_KERNELS if flag in flags][::-1]
    else:
        kernels = [""]  # OpenBLAS's own choice: other architectures' kernel names are not listed here
    widest, others = kernels[0], kernels[1:]
    plan = [(widest, 2, False)] + [(kernel, threads, False) for kernel, threads in zip(others, (1, 2))]
    if not others:
        plan.append((widest, 1, False))
    if machine in ("x86_64", "AMD64") and "avx2" in flags:
        plan.append((widest, 1, True))
    found = []
    for number, (kernel, threads, plain_numpy) in enumerate(plan, start=1):
        environment = {"OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
                       "PYTHONHASHSEED": str(number)}
        if kernel:
            environment["OPENBLAS_CORETYPE"] = kernel
        if plain_numpy:
            environment["NPY_DISABLE_CPU_FEATURES"] = NUMPY_WITHOUT_AVX2
        name = (f"{kernel or 'default'} kernel, {threads} thread{'s' if threads > 1 else ''}"
                + (", numpy without AVX2" if plain_numpy else ""))
        found.append(Variant(name, environment))
    return found


# Prediction files keep probabilities to 6 decimals; a score kept whole (MRC's belief) may differ in its last bits
# and round alike. Two numbers closer than this are the same prediction; labels, spans and tags must be equal.
FLOAT_TOLERANCE = 1.5e-6


def same_value(first: object, second: object) -> bool:
    """Equal, with numbers compared to FLOAT_TOLERANCE, inside lists and dicts too."""
    if isinstance(first, bool) or isinstance(second, bool):
        return first == second
    if isinstance(first, (int, float)) and isinstance(second, (int, float)):
        return abs(first - second) <= FLOAT_TOLERANCE
    if isinstance(first, dict) and isinstance(second, dict):
        return first.keys() == second.keys() and all(same_value(first[k], second[k]) for k in first)
    if isinstance(first, list) and isinstance(second, list):
        return len(first) == len(second) and all(map(same_value, first, second))
    return first == second


def differing_rows(reference: list[dict], other: list[dict]) -> list[dict]:
    """The rows of `other` that are not the same prediction (same_value) as the reference's row at the same
    place, each as its guid and the fields that differ; rows missing on either side count as differing."""
    found = []
    for index in range(max(len(reference), len(other))):
        first = reference[index] if index < len(reference) else {}
        second = other[index] if index < len(other) else {}
        if not same_value(first, second):
            fields = sorted(key for key in set(first) | set(second) if not same_value(first.get(key), second.get(key)))
            found.append({"guid": first.get("guid", second.get("guid", f"row-{index + 1}")), "fields": fields})
    return found


@dataclass
class VariantRun:
    variant: Variant
    seconds: float
    returncode: int
    predictions: dict[str, list[dict]]  # by prediction file stem (<task>-<model>)
    headlines: dict[str, dict]  # by the same stem
    error: str = ""


def run_variant(variant: Variant, run_arguments: Sequence[str], cache_dir: Path, scratch: Path) -> VariantRun:
    """`klue-baselines run ...` in a new process under the variant's environment, from a scratch folder (so that
    no `baselines/` folder of the working directory is imported), with the given analysis cache."""
    results_dir, predictions_dir = scratch / "results", scratch / "predictions"
    command = [sys.executable, "-m", "baselines.cli", "-q", "--cache-dir", str(cache_dir), "run", *run_arguments,
               "--results-dir", str(results_dir), "--predictions-dir", str(predictions_dir)]
    start = time.perf_counter()
    finished = subprocess.run(command, cwd=scratch, env={**os.environ, **variant.environment},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    predictions = {path.stem: [row for _number, row in read_jsonl(path)]
                   for path in sorted(predictions_dir.glob("*.jsonl"))} if predictions_dir.is_dir() else {}
    # Keyed as `run` names the prediction files, hyper-parameters given with --param included.
    headlines = {run_file_stem(record): record.get("headline", {})
                 for code in TASK_CODES for record in load_task_results(results_dir, code)["runs"].values()}
    error = finished.stderr.strip().splitlines()[-1] if finished.returncode and finished.stderr.strip() else ""
    return VariantRun(variant, seconds, finished.returncode, predictions, headlines, error)


def compare_runs(runs: Sequence[VariantRun]) -> dict[str, dict]:
    """Per prediction file: its rows, and for each variant after the first, how many rows differ from the
    first run's, the first ten of them, and the variant's headline scores."""
    reference = runs[0]
    report = {}
    for stem, rows in reference.predictions.items():
        entry = {"rows": len(rows), "headline": reference.headlines.get(stem, {}), "variants": []}
        for run in runs[1:]:
            other = run.predictions.get(stem)
            different = differing_rows(rows, other) if other is not None else [{"guid": "*", "fields": ["missing"]}]
            entry["variants"].append({"name": run.variant.name, "differing_rows": len(different),
                                      "first_differing": different[:10], "headline": run.headlines.get(stem, {})})
        entry["identical"] = all(variant["differing_rows"] == 0 for variant in entry["variants"])
        report[stem] = entry
    return report


def run_command_arguments(codes: Sequence[str], model: str | None, pos: str | None, seed: int, cv: int,
                          data_dir: str | os.PathLike | None, train: str | os.PathLike | None,
                          dev: str | os.PathLike | None, params: dict) -> list[str]:
    """The arguments of `klue-baselines run` that each variant runs: every file absolute, since the runs start
    in a scratch folder, and each hyper-parameter as JSON."""
    arguments = [*codes, "--seed", str(seed), "--cv", str(cv)]
    for option, value in (("--model", model), ("--pos", pos)):
        if value is not None:
            arguments += [option, value]
    for option, path in (("--data-dir", data_dir), ("--train", train), ("--dev", dev)):
        if path is not None:
            arguments += [option, str(absolute_path(path))]
    files = {requirement.file_param for code in codes for requirement in get_task(code).links.requires}
    for name, value in params.items():
        if name in files and isinstance(value, (str, os.PathLike)):  # another task's file (re_train): absolute too
            value = str(absolute_path(value))
        arguments += ["--param", f"{name}={json.dumps(value)}"]
    return arguments


def determinism(run_arguments: Sequence[str], chosen: Sequence[Variant] | None = None, at_once: int = 1,
                log: Callable[[str], None] = lambda message: None) -> dict:
    """Run `klue-baselines run <run_arguments>` once per variant and compare the predictions. The first run
    fills an empty analysis cache, which the others read (Kiwi's analyses are not what is varied), `at_once`
    of them at a time: what is compared is their output, not their time. Returns the report that `bench
    determinism` writes; report["identical"] is whether every variant predicted every row alike."""
    chosen = list(chosen or variants())
    with tempfile.TemporaryDirectory(prefix="klue-determinism-") as scratch:
        cache_dir = Path(scratch) / "cache"

        def one(number: int) -> VariantRun:
            folder = Path(scratch) / f"variant-{number}"
            folder.mkdir()
            variant = chosen[number - 1]
            log(f"variant {number} of {len(chosen)}: {variant.name}: started")
            run = run_variant(variant, run_arguments, cache_dir, folder)
            log(f"variant {number}: {run.seconds:.1f} s"
                + (f", exited with {run.returncode}: {run.error}" if run.returncode else ""))
            return run

        runs = [one(1)]
        with ThreadPoolExecutor(max_workers=max(1, at_once)) as pool:  # each thread waits on its own process
            runs += list(pool.map(one, range(2, len(chosen) + 1)))
    failed = [run for run in runs if run.returncode]
    if failed:
        # One line, as every refusal: the variant's own 'Error:' line says what the run could not do.
        raise UsageError(f"`run` failed under {failed[0].variant.name}: "
                         f"{(failed[0].error or 'no message').removeprefix('Error: ')}")
    tasks = compare_runs(runs)
    return {"variants": [{"name": run.variant.name, "environment": run.variant.environment,
                          "seconds": round(run.seconds, 1)} for run in runs],
            "tasks": tasks, "identical": all(entry["identical"] for entry in tasks.values())}


def merged_file(path: Path, report: dict) -> dict:
    """The content of determinism.json once `report` is added: each task's model is benched with its own
    recorded protocol (its own command), so a report replaces the earlier ones that share a task and the model
    name with it (no "model": the default) and keeps the others. An unreadable or older file is started
    afresh: it is this command's own output."""
    try:
        earlier = json.loads(path.read_text(encoding="utf-8")).get("benches", [])
    except (OSError, ValueError, AttributeError):
        earlier = []
    kept = [bench for bench in earlier if isinstance(bench, dict) and isinstance(bench.get("task_codes"), list)
            and (bench.get("model") != report.get("model") or not set(bench["task_codes"]) & set(report["task_codes"]))]

    def place(bench: dict) -> tuple[int, str]:  # task order, and the default model before the named ones
        return (min(TASK_CODES.index(code) for code in bench["task_codes"] if code in TASK_CODES),
                str(bench.get("model") or ""))

    benches = sorted(kept + [report], key=place)
    return {"identical": all(bench.get("identical") is True for bench in benches), "benches": benches}


def bench_and_record(codes: Sequence[str], arguments: Sequence[str], model: str | None, is_sample: bool,
                     command: str | None, folder: Path | None, at_once: int = 1,
                     log: Callable[[str], None] = lambda message: None) -> tuple[dict, Path | None]:
    """`bench determinism`: the variants run and compared, the report written to folder/determinism.json (when a
    folder is given) in place of the earlier reports on the same tasks and model (see merged_file)."""
    compared = determinism(arguments, at_once=at_once, log=log)
    # the default's own name is left out
    named = model if any(model != get_task(code).modelling.default_model for code in codes) else None
    report = {"command": command, "task_codes": list(codes), "model": named, "sample": is_sample, **compared,
              "versions": versions(), "code": code_version(), "machine": machine()}
    if folder is None:
        return report, None
    path = folder / "determinism.json"
    results.write_result(folder, path, merged_file(path, report))
    return report, path
