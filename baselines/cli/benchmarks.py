"""The `bench` commands, whose figures go to results/, and `reproduce`, which reruns the recorded rows."""
from __future__ import annotations

from pathlib import Path

import click

from baselines import api
from baselines.bench import peers as peers_bench
from baselines.runner import tables
from baselines.runner.generated_docs import CONSTRAINTS_FILE
from baselines.cli._console import _print_table, command_line, console, friendly_errors
from baselines.cli._options import (cv_option, data_dir_option, dev_option, evaluation_options, model_name_option,
                                    param_option, plots_option, pos_option, results_dir_option, seed_option,
                                    task_argument, task_codes_argument, train_option)
from baselines.cli._app import main
from baselines.cli.scores import run


@main.group()
def bench() -> None:
    """Benchmarks whose figures go to results/ (not timed tests)."""


@bench.command("analysis")
@task_codes_argument
@click.option("--data-dir", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Folder of KLUE files: every file of the tasks' folders is read, partial copies included.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Use only the first N distinct texts.")
@results_dir_option()
@click.pass_context
@friendly_errors
def bench_analysis_command(ctx, task_codes, data_dir, limit, results_dir: Path) -> None:
    """Characters per second: raw Kiwi, this layer with a cold cache, with a warm cache."""
    report, path = api.analysis_speed(task_codes, data_dir=data_dir, limit=limit, results_dir=results_dir,
                                      command=command_line(), log=console(ctx).log)
    cps = report["characters_per_second"]
    click.echo(f"{report['texts']} texts, {report['characters']} characters, {report['num_workers']} Kiwi threads")
    click.echo(f"raw Kiwi  {cps['raw_kiwi']:>10} chars/s")
    click.echo(f"cold      {cps['cold']:>10} chars/s  ({report['cold_vs_raw']:.1%} of raw; target >= 90%)")
    click.echo(f"warm      {cps['warm']:>10} chars/s  ({report['warm_speedup_over_cold']:.1f}x cold; target >= 20x)")
    click.echo(f"peak RSS  {tables.memory_cell(report['peak_rss_mb'])} MiB; written to {path}")


def _fractions(_ctx, _param, value: str) -> list[float]:
    try:
        fractions = sorted({float(part) for part in value.split(",")})
    except ValueError:
        raise click.BadParameter(f"expected numbers separated by commas, not {value!r}") from None
    if not fractions or not all(0 < fraction <= 1 for fraction in fractions):
        raise click.BadParameter(f"every fraction must be in (0, 1]: {value!r}")
    return fractions


@bench.command("learning-curve")
@task_argument
@click.option("--fractions", default="0.25,0.5,0.75,1", show_default=True, callback=_fractions,
              help="Shares of the training records each fit sees (whole passages or dialogues).")
@evaluation_options
@results_dir_option(default=None, help="Where learning-curve/<task>-<model>.json goes (default: ./results; with "
                                        "the shipped sample, nothing is written unless this is given).")
@plots_option
@click.pass_context
@friendly_errors
def bench_learning_curve_command(ctx, task: str, fractions: list[float], model_name, params, data_dir, train_file,
                                 dev_file, cv: int, seed: int, jobs: int, backend: str, results_dir,
                                 plots_dir) -> None:
    """The dev scores of a model trained on growing shares of its training data: how far more data would
    take it. With --plots: the curve, with the spread between folds under --cv."""
    report = api.learning_curve(task, fractions, model_name, data_dir=data_dir, train=train_file, dev=dev_file, cv=cv,
                                seed=seed, results_dir=results_dir, plots_dir=plots_dir, command=command_line(),
                                jobs=jobs, backend=backend, log=console(ctx).log, **params)
    points = report["points"]
    headline = list(points[0]["headline"])
    click.echo("  ".join(["fraction", "trained on"] + headline))
    for point in points:
        low, high = min(point["trained_on"]), max(point["trained_on"])
        trained = f"{low}-{high}" if low != high else str(low)
        click.echo("  ".join([f"{point['fraction']:<8g}", f"{trained:<10}"]
                             + [tables.format_score(point['headline'][k], len(k)) for k in headline]))


@bench.command("scale")
@task_argument
@click.option("--sizes", default="0.125,0.25,0.5,1", show_default=True, callback=_fractions,
              help="Shares of the official training size (distinct copies fill what the data here lacks).")
@model_name_option
@data_dir_option
@train_option
@dev_option
@seed_option
@results_dir_option(help="Where scale/<task>.json goes; README.md there gets the table.")
@plots_option
@click.pass_context
@friendly_errors
def bench_scale_command(ctx, task: str, sizes: list[float], model_name, data_dir, train_file, dev_file, seed: int,
                        results_dir: Path, plots_dir) -> None:
    """Fit and predict seconds and peak memory at shares of the official training size, each size in its own
    process with an empty analysis cache, and the growth exponent k of time ~ n^k. With --plots: the chart of
    every task measured so far."""
    report, path = api.scale(task, sizes, model_name, data_dir=data_dir, train=train_file, dev=dev_file, seed=seed,
                             results_dir=results_dir, plots_dir=plots_dir, command=command_line(),
                             log=console(ctx).log)
    _print_table(["train records", "fit s", "predict s", "peak RSS MiB"],
                 [[str(point["train_records"]), f"{point['seconds']['fit']:.1f}", f"{point['seconds']['predict']:.1f}",
                   tables.memory_cell(point["peak_rss_mb"])] for point in report["points"]])
    click.echo(f"time ~ n^{report['fit_exponent']} (fit); written to {path}")


@bench.command("peers")
@task_argument
@data_dir_option
@train_option
@dev_option
@seed_option
@click.option("--rounds", type=click.IntRange(min=1), default=peers_bench.ROUNDS, show_default=True,
              help="Runs of each system, in turn; seconds and memory are their medians.")
@results_dir_option(help="Where peers.json goes; README.md there gets the table.")
@plots_option
@click.pass_context
@friendly_errors
def bench_peers_command(ctx, task: str, data_dir, train_file, dev_file, seed: int, rounds: int, results_dir: Path,
                        plots_dir) -> None:
    """The tool a user would pick instead (YNAT, NLI, RE: fastText; STS: TF-IDF cosine; NER: a plain character
    CRF; DP: UDPipe), our default model and our fast one (--model fast), on the same files, each run in its own
    process, --rounds times in turn: scores, median seconds and peak memory, and our ratios to the peer. With
    --plots: score against seconds for every task measured. Needs the peers extra: pip install
    'klue-baselines[peers]'."""
    report, path = api.peers(task, data_dir=data_dir, train=train_file, dev=dev_file, seed=seed, rounds=rounds,
                             results_dir=results_dir, plots_dir=plots_dir, command=command_line(),
                             log=console(ctx).log)
    rows = []
    for who, system in report["systems"].items():
        ratio = report["ratios"].get(who)
        rows.append([tables.SYSTEM_NAMES[who], system["name"].removeprefix("klue-baselines "),
                     " / ".join(tables.format_score(v) for v in system["metrics"].values()),
                     f"{system['total_seconds']['median']:.1f}",
                     tables.memory_cell(system["peak_rss_mb"]["median"] if system["peak_rss_mb"] else None),
                     tables.ratio_cell(ratio["seconds"]) if ratio else "-"])
    _print_table(["system", "model", " / ".join(report["systems"]["peer"]["metrics"]), "median s", "peak RSS MiB",
                  "time / peer's"], rows)
    click.echo(f"written to {path}")


@bench.command("long-inputs")
@task_codes_argument
@results_dir_option()
@click.pass_context
@friendly_errors
def bench_long_inputs_command(ctx, task_codes, results_dir: Path) -> None:
    """Seconds and peak memory of one input of growing size (characters; eojeols for DP), predicted by each task's
    default model fitted on the sample (all tasks by default)."""
    report, path = api.long_inputs(task_codes, results_dir=results_dir, command=command_line(), log=console(ctx).log)
    _print_table(["task", "size", "seconds", "peak MiB"],
                 [[code, f"{point['size']:,} {task['unit']}", f"{point['seconds']:.1f}",
                   tables.memory_cell(point["peak_rss_mb"])]
                  for code, task in report["tasks"].items() for point in task["points"]])
    click.echo(f"written to {path}")


@bench.command("budget")
@task_codes_argument
@click.option("--model", "model_name", type=click.Choice(["default", "fast"]), default="default", show_default=True,
              help="Whose rows to rerun: each task's default model (budget.json) or its fast one (budget-fast.json).")
@results_dir_option(exists=True,
                    help="The committed results, whose default rows are rerun; budget.json goes there.")
@click.pass_context
@friendly_errors
def bench_budget_command(ctx, task_codes, model_name: str, results_dir: Path) -> None:
    """Rerun each task's default row (all tasks by default; or its fast model's, --model fast) as `reproduce`
    does, time raw Kiwi analysis of the same texts in the same run, and report each task's seconds as a multiple
    of it, with the suite's."""
    report, path = api.budget(task_codes, run, results_dir=results_dir, fast=model_name == "fast",
                              command=command_line(), log=console(ctx).log)
    _print_table(["task", "seconds", "raw Kiwi s", "multiple"],
                 [[code, f"{task['seconds']:.1f}", f"{task['raw_kiwi']['seconds']:.1f}", f"{task['ratio']:.2f}x"]
                  for code, task in report["tasks"].items()])
    suite = report["suite"]
    click.echo(f"suite: {suite['ratio']:.2f}x raw Kiwi (budget {suite['budget_ratio']:g}x); written to {path}")


@bench.command("determinism")
@task_codes_argument
@model_name_option
@param_option
@data_dir_option
@train_option
@dev_option
@cv_option
@seed_option
@pos_option
@click.option("--at-once", default=1, show_default=True, type=click.IntRange(min=1),
              help="Variants run at once after the first (their output is compared, not their time).")
@results_dir_option(default=None, help="Where determinism.json goes (default: ./results; with the shipped sample, "
                                        "nothing is written unless this is given).")
@click.pass_context
@friendly_errors
def bench_determinism_command(ctx, task_codes, model_name, params, data_dir, train_file, dev_file, cv: int, seed: int,
                              pos, at_once: int, results_dir) -> None:
    """Rerun the models (all tasks by default, as `run` would) under other BLAS kernels, BLAS and OpenMP thread
    counts, numpy's loops without AVX2 and other hash seeds, and compare their predictions row by row; exits
    non-zero where any row differs."""
    report, path = api.determinism(task_codes, model_name, data_dir=data_dir, train=train_file, dev=dev_file, cv=cv,
                                   seed=seed, pos=pos, results_dir=results_dir, command=command_line(),
                                   at_once=at_once, log=console(ctx).log, **params)
    click.echo("variants: " + "; ".join(f"{number}. {variant['name']}"
                                        for number, variant in enumerate(report["variants"], start=1)))
    _print_table(["predictions", "rows", "differing rows per variant (2, 3, ...)", ""],
                 [[stem, str(entry["rows"]), ", ".join(str(v["differing_rows"]) for v in entry["variants"]),
                   "identical" if entry["identical"] else "DIFFERENT"] for stem, entry in report["tasks"].items()])
    if path is not None:
        click.echo(f"written to {path}")
    if not report["identical"]:
        ctx.exit(1)


@main.command("reproduce")
@task_codes_argument
@results_dir_option(exists=True, help="The committed results; their commands run from the folder that holds it.")
@click.pass_context
@friendly_errors
def reproduce_command(ctx, task_codes, results_dir: Path) -> None:
    """Rerun the commands recorded in results/ (each with an empty cache, into a temporary folder) and show
    each row's committed and rerun headline scores; exits non-zero on any difference."""
    out = console(ctx)
    differing = api.recorded_version_notes(task_codes, results_dir)
    for note in differing:
        click.echo(f"Warning: {note}", err=True)
    if differing:
        click.echo(f"Warning: the scores may differ for that; `pip install -c {results_dir / CONSTRAINTS_FILE}` "
                   "installs the versions the rows recorded", err=True)
    comparisons, notes = api.reproduce(task_codes, run, results_dir=results_dir, log=out.log)
    # Four decimals: the digits a record keeps, so that any difference shows.
    _print_table(["task", "run", "metric", "committed", "rerun", ""],
                 [[c.task, c.run, c.metric, tables.format_score(c.committed, digits=4),
                   tables.format_score(c.rerun, digits=4), "same" if c.same else "DIFFERENT"] for c in comparisons])
    different = sum(not c.same for c in comparisons)
    click.echo(f"{len(comparisons) - different} of {len(comparisons)} recorded scores reproduced")
    for note in notes:
        click.echo(note)
    if different:
        ctx.exit(1)


if __name__ == "__main__":
    main()
