"""The klue-baselines command line: a thin click layer over the driver, the scorers and the data tools."""
from __future__ import annotations

import functools
import json
import shlex
import sys
import unicodedata
import warnings
from pathlib import Path
from typing import Callable

import click

from baselines import bench as bench_module
from baselines import (api, budget, datafiles, driver, long_inputs, parallel, reproduce, results, significance,
                       tuning)
from baselines.dataio import check_output_file, check_output_folder, write_json_atomic
from baselines.errors import EXPLAINED_ERRORS
from baselines.registry import TASK_CODES, UnknownTask, all_tasks, get_task, task_code
from features import analysis



def friendly_errors(command: Callable) -> Callable:
    """Known failures become one 'Error: ...' line and a non-zero exit, never a traceback."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except EXPLAINED_ERRORS as error:
            raise click.ClickException(str(error)) from None
        except SystemError as error:
            # A C extension (Kiwi's analysis) that sees Ctrl-C returns with the KeyboardInterrupt pending,
            # and Python reports a SystemError caused by it: that is the user's Ctrl-C, not a failure.
            if isinstance(error.__cause__ or error.__context__, KeyboardInterrupt):
                raise click.Abort() from None
            raise
    return wrapper


class Console:
    """Status lines and progress bars on stderr, silenced by --quiet."""

    def __init__(self, quiet: bool):
        self.quiet = quiet

    def log(self, message: str) -> None:
        if not self.quiet:
            click.echo(message, err=True)

    def progress(self, label: str, length: int):
        return click.progressbar(length=length, label=label, file=sys.stderr,
                                 show_pos=False, show_percent=True, hidden=self.quiet)


def one_line_warnings(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings reach a command-line user as one 'Warning: ...' line on stderr, without source lines."""
    click.echo(f"Warning: {message}", err=True)


def console(ctx: click.Context) -> Console:
    return ctx.find_object(Console)


class TaskName(click.ParamType):
    """A task code in any case; an unknown one fails with the closest code."""
    name = "task"

    def get_metavar(self, *args, **kwargs) -> str:
        return "{" + "|".join(TASK_CODES) + "}"

    def convert(self, value, param, ctx):
        try:
            return task_code(value)
        except UnknownTask as error:
            self.fail(str(error), param, ctx)


# Eager: the task is checked before any file option, so a misspelt task is what the user hears about.
task_argument = click.argument("task", type=TaskName(), is_eager=True)
data_dir_option = click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path),
                               help="Folder with the KLUE files (default: $KLUE_DATA_DIR, then the download "
                                    "cache, then the shipped sample).")
# Data files may be official files or Hugging Face exports (JSON Lines, parquet, or a save_to_disk folder).
DATA_PATH = click.Path(exists=True, path_type=Path)
train_option = click.option("--train", "train_file", type=DATA_PATH,
                            help="Training file instead of the official one (a partial copy, or a Hugging Face "
                                 "export).")
dev_option = click.option("--dev", "dev_file", type=DATA_PATH,
                          help="Evaluation file instead of the official dev file (or a Hugging Face export).")
seed_option = click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
                           help="Random seed of models and folds (0 to 2^32-1).")
# The choices that the tasks declare (TaskSpec.model_for_pos, PredictionFiles.writers), not spelled here.
POS_MODELS = {pos: f"{task.code} {name}" for task in all_tasks() for pos, name in task.model_for_pos.items()}
OWN_FORMATS = {name: task.code for task in all_tasks() for name in task.prediction_files.writers}
pos_option = click.option("--pos", type=click.Choice(sorted(POS_MODELS)), default=None,
                          help="A parsing task's model by the POS tags it reads, the data's (gold, the default) or "
                               "Kiwi's (kiwi): " + ", ".join(f"{pos} -> {model}" for pos, model in POS_MODELS.items()))


def _assignments(_ctx, _param, values) -> dict:
    try:
        return tuning.parse_assignments(values)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


param_option = click.option("--param", "params", multiple=True, callback=_assignments,
                            help="NAME=VALUE: a hyper-parameter of the model, set over its default (value as "
                                 "JSON). Repeat for several.")
def _folds(_ctx, _param, value: int) -> int:
    if value == 1:
        raise click.BadParameter("1 fold leaves nothing to train on: give 0 (no cross-fitting) or at least 2")
    return value


cv_option = click.option("--cv", default=0, type=click.IntRange(min=0), callback=_folds,
                         help="Cross-fit K >= 2 folds over the evaluation file (keeping a task's passages or "
                              "dialogues whole); the training file, if any, joins every fold.")
model_name_option = click.option("--model", "model_name", default=None,
                                 help="Model to train: the task's default, or 'trivial' for the floor.")


plots_option = click.option(
    "--plots", "plots_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Also draw the figures as PNG files in this folder (needs the plots extra: "
         'pip install "klue-baselines[plots]").')


def _backend(_ctx, _param, value: str) -> str:
    try:
        parallel.Workers(backend=value)
    except parallel.BackendError as error:
        raise click.BadParameter(str(error)) from None
    return value


jobs_option = click.option("--jobs", default=1, show_default=True, type=click.IntRange(min=1),
                           help="Fits (cross-fitting folds, tuning trials) to run at once; the scores do not "
                                "change.")
backend_option = click.option("--backend", default="loky", show_default=True, callback=_backend,
                              help="joblib backend of --jobs: loky (processes on this machine), threading, or "
                                   "dask or ray for a cluster (extra [cluster]; $DASK_SCHEDULER_ADDRESS, "
                                   "$RAY_ADDRESS).")


def evaluation_options(command: Callable) -> Callable:
    """The options that say what `run` and `bench learning-curve` train and evaluate, in this order."""
    for option in reversed((model_name_option, param_option, data_dir_option, train_option, dev_option, cv_option,
                            seed_option, jobs_option, backend_option)):
        command = option(command)
    return command


def command_line() -> str:
    return "klue-baselines " + shlex.join(sys.argv[1:])


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="klue-baselines")
@click.option("--quiet", "-q", is_flag=True, help="No progress or status output on stderr.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the morpheme-analysis cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where the analysis cache lives (default: $KLUE_BASELINES_CACHE or ~/.cache/klue-baselines).")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Kiwi threads (default: all cores).")
@click.pass_context
def main(ctx: click.Context, quiet: bool, no_cache: bool, cache_dir: Path | None, workers: int | None) -> None:
    """Classical, CPU-only baselines for the eight KLUE tasks, scored with the official metrics."""
    ctx.obj = Console(quiet)
    warnings.showwarning = one_line_warnings
    analysis.configure(num_workers=workers, cache_dir=cache_dir, use_cache=False if no_cache else None,
                       progress=None if quiet else ctx.obj.progress)


@main.command()
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
def tasks(data_dir: Path | None) -> None:
    """List the tasks, their models and the files each needs (and which are found)."""
    for task in all_tasks():
        try:
            data = driver.resolve_data(task, data_dir)
        except driver.UsageError:
            data = None
        click.echo(f"{task.code:5} {task.title}")
        click.echo(f"      models: {', '.join(task.models)} (default {task.default_model}); "
                   f"metrics: {', '.join(task.headline)}")
        for name in task.official_files():
            found = None
            if data is not None:
                found = {task.train_file: data.train, task.dev_file: data.dev}.get(name) or data.extras.get(name)
            click.echo(f"      {task.folder}/{name}: {found if found else 'not found'}")


@main.command()
@click.argument("task_codes", nargs=-1, type=TaskName(), is_eager=True)
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Target folder (default: $KLUE_DATA_DIR, else the per-user cache).")
@click.option("--mirror", default=None, help="Base URL of a copy with the official layout <folder>/<file>.")
@click.pass_context
@friendly_errors
def download(ctx: click.Context, task_codes: tuple[str, ...], data_dir: Path | None, mirror: str | None) -> None:
    """Fetch and verify the official KLUE v1.1 files (all tasks by default)."""
    out = console(ctx)
    target = datafiles.download_dir(data_dir)
    check_output_folder(target)
    chosen = [get_task(code) for code in (task_codes or TASK_CODES)]
    written = datafiles.download(chosen, target, mirror=mirror, progress=out.progress, log=out.log)
    click.echo(f"{len(written)} files ready in {target}")


def _shown_input(plain) -> str:
    """An input in one line of at most 100 characters: a title or sentence as it is, a pair joined by ' / ',
    a raw row by its question or sentence (an MRC passage or a whole dialogue would not fit)."""
    if isinstance(plain, (list, tuple)):
        plain = " / ".join(map(str, plain))
    elif isinstance(plain, dict):
        plain = next((plain[key] for key in ("question", "sentence") if isinstance(plain.get(key), str)),
                     None) or json.dumps(plain, ensure_ascii=False)
    return str(plain)[:100]


def _display_width(text: str) -> int:
    """Columns a terminal gives `text`: Hangul and other wide characters take two."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _print_table(header: list[str], rows: list[list[str]]) -> None:
    """Left-aligned columns, two spaces apart, the header first; wide (Hangul) characters count double."""
    widths = [max(_display_width(str(row[i])) for row in rows + [header]) for i in range(len(header))]
    for row in [header] + rows:
        click.echo("  ".join(str(cell) + " " * (width - _display_width(str(cell)))
                             for cell, width in zip(row, widths)).rstrip())


def _print_metrics(task: str, metrics: dict, as_json: bool, **more) -> None:
    """The metrics as JSON (with `more` before them), or one line each, the task's headline first."""
    if as_json:
        click.echo(json.dumps({"task": task, **more, "metrics": metrics}, ensure_ascii=False, indent=2))
        return
    headline = get_task(task).headline
    width = max(map(_display_width, metrics))
    for key in [k for k in headline if k in metrics] + sorted(k for k in metrics if k not in headline):
        click.echo(f"{key}{' ' * (width - _display_width(key))}  {results.format_score(metrics[key], 8)}")


@main.command()
@task_argument
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Model file to write (default: <task>.joblib).")
@data_dir_option
@train_option
@model_name_option
@param_option
@seed_option
@pos_option
@click.pass_context
@friendly_errors
def train(ctx, task: str, out_path: Path | None, data_dir, train_file, model_name, params, seed: int, pos) -> None:
    """Train a model on the training file and save it: a metadata header, checked before the model is read,
    then the model, stored with skops where the secure extra is installed (pip install 'klue-baselines[secure]'),
    else as a joblib pickle. Pickled model files can run code when loaded: they load only with --trust-pickle."""
    name = api.model_name(task, model_name, pos)
    path = api.train(task, out_path or f"{task}.joblib", name, data_dir=data_dir, train=train_file, seed=seed,
                     log=console(ctx).log, **params)
    click.echo(f"saved {name} model for {task} to {path}")


def saved_model_option(command):
    """--model FILE, and --trust-pickle, the consent that a pickled model file needs."""
    command = click.option("--trust-pickle", is_flag=True,
                           help="Load a model file whose model is a pickle (saved without the secure extra). A "
                                "pickle can run any code when loaded: give this only for files from a trusted "
                                "source.")(command)
    return click.option("--model", "model_path", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                        default=None, help="Model file from `train` (default: train one on the training data "
                                           "first).")(command)


@main.command()
@task_argument
@saved_model_option
@data_dir_option
@train_option
@dev_option
@param_option
@seed_option
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON.")
@click.pass_context
@friendly_errors
def evaluate(ctx, task: str, model_path, trust_pickle: bool, data_dir, train_file, dev_file, params, seed: int,
             as_json: bool) -> None:
    """Score a model on the dev file with the official metrics."""
    record = api.evaluate(task, model_file=model_path, data_dir=data_dir, train=train_file, dev=dev_file, seed=seed,
                          trust_pickle=trust_pickle, log=console(ctx).log, **params)
    _print_metrics(task, record["metrics"], as_json, model=record["model"])


@main.command()
@task_argument
@click.option("--input", "input_path", required=True, type=DATA_PATH,
              help="Official-format file, Hugging Face export, or JSONL of raw inputs (see README).")
@click.option("--output", "output_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="JSONL to write (default: stdout).")
@saved_model_option
@data_dir_option
@train_option
@param_option
@seed_option
@pos_option
@click.option("--format", "output_format", type=click.Choice(["jsonl", "hf", *OWN_FORMATS]), default="jsonl",
              show_default=True, help="hf: as Hugging Face users keep predictions (no guids, in the input's order, "
                                      "ClassLabel indices); a task's own: "
                                      + ", ".join(f"{name} ({code})" for name, code in OWN_FORMATS.items()) + ".")
@click.pass_context
@friendly_errors
def predict(ctx, task: str, input_path: Path, output_path, model_path, trust_pickle: bool, data_dir, train_file,
            params, seed: int, pos: str | None, output_format: str) -> None:
    """Predict raw or official-format input; one JSON object per record (format in the README)."""
    rows = api.predict_file(task, input_path, output_path, model_file=model_path, data_dir=data_dir,
                            train=train_file, seed=seed, pos=pos, output_format=output_format,
                            trust_pickle=trust_pickle, log=console(ctx).log, **params)
    if output_path is None:
        for row in rows:
            click.echo(json.dumps(row, ensure_ascii=False))


@main.command()
@task_argument
@saved_model_option
@click.option("--top", "top_k", default=10, show_default=True, type=click.IntRange(min=1),
              help="Features shown per class or label.")
@click.option("--input", "input_path", type=DATA_PATH, default=None,
              help="Also explain each prediction on this file (official format or raw JSONL): the features that "
                   "pushed it most.")
@data_dir_option
@train_option
@param_option
@seed_option
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as JSON.")
@click.pass_context
@friendly_errors
def explain(ctx, task: str, model_path, trust_pickle: bool, top_k: int, input_path, data_dir, train_file, params,
            seed: int, as_json: bool) -> None:
    """Show what a model learnt (its strongest features per class or label) and, with --input, why it
    predicted what it did."""
    if model_path is None:  # refused before any training, not after it
        api.check_explainable(task, api.make_model(task, data_dir=data_dir, **params), input_path is not None)
    model = api.saved_or_fitted(task, model_path, data_dir=data_dir, train=train_file, seed=seed,
                                trust_pickle=trust_pickle, log=console(ctx).log, **params)
    explanation = api.explain(task, model, top_k, input_path, per_input=top_k)
    if as_json:
        click.echo(json.dumps(explanation, ensure_ascii=False, indent=2))
        return
    for section, weights in explanation["sections"].items():
        click.echo(section)
        for weight in weights:
            click.echo(f"  {weight['weight']:+9.4f}  {weight['feature']}")
    for example in explanation.get("examples", []):
        click.echo(f"\n{example['guid']}: {_shown_input(example['input'])}")
        if "characters" in example:  # NER: why each character got its tag
            for character in example["characters"]:
                shown = character["character"] if character["character"].strip() else "(space)"
                pushed = "; ".join(f"{item['feature']} {item['weight']:+.2f}" for item in character["features"])
                click.echo(f"  {shown}{' ' * (7 - _display_width(shown))}  {character['tag']:<5}  {pushed}")
            continue
        click.echo(f"  -> {example['prediction']}")
        for weight in example["features"]:
            click.echo(f"  {weight['weight']:+9.4f}  {weight['feature']}")


@main.command()
@click.argument("task_codes", nargs=-1, type=TaskName(), is_eager=True)
@evaluation_options
@pos_option
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to write <task>.json and README.md (default: ./results; with the shipped sample, "
                   "nothing is written unless this is given).")
@click.option("--predictions-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also write the predictions that were scored (out-of-fold with --cv) to "
                   "<task>-<model>.jsonl here, as `score --predictions` reads them.")
@plots_option
@click.pass_context
@friendly_errors
def run(ctx, task_codes, model_name, params, data_dir, train_file, dev_file, cv: int, seed: int, jobs: int,
        backend: str, pos, results_dir, predictions_dir, plots_dir) -> None:
    """Train and evaluate (all tasks by default), print the table and record results/. With --plots: each
    task's confusion matrix and F1 per class, and the results chart."""
    records = api.run(task_codes, model_name, data_dir=data_dir, train=train_file, dev=dev_file, cv=cv, seed=seed,
                      pos=pos, results_dir=results_dir, predictions_dir=predictions_dir, plots_dir=plots_dir,
                      command=command_line(), jobs=jobs, backend=backend, log=console(ctx).log, **params)
    _print_table(["task", "model", "metric", "score", "protocol"],
                 [[record["task"], record["model"], metric, results.format_score(record["metrics"][metric]),
                   record["protocol"]] for record in records for metric in record["headline"]])
    if any(record["sample"] for record in records):
        click.echo("(scores on the shipped sample, not KLUE results: use --data-dir for the real data)")


@main.command()
@task_argument
@click.option("--param", "params", multiple=True, required=True,
              help="NAME=V1,V2,... (values as JSON; lists become tuples). Repeat for a grid.")
@click.option("--folds", default=3, show_default=True, type=click.IntRange(min=2))
@model_name_option
@data_dir_option
@train_option
@seed_option
@jobs_option
@backend_option
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True)
@click.pass_context
@friendly_errors
def tune(ctx, task: str, params, folds: int, model_name, data_dir, train_file, seed: int, jobs: int, backend: str,
         results_dir: Path) -> None:
    """Choose hyper-parameters by cross-validation on the training file (the dev file is never read)."""
    try:
        grid = tuning.parse_grid(params)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--param") from None
    report, path = api.tune(task, grid, model_name, folds=folds, data_dir=data_dir, train=train_file, seed=seed,
                            results_dir=results_dir, command=command_line(), jobs=jobs, backend=backend,
                            log=console(ctx).log)
    for trial in report["trials"]:
        click.echo(f"{trial['mean']:8.2f} ± {trial['std']:.2f}  {trial['params']}")
    click.echo(f"best by {report['metric']}: {report['best']} (written to {path})")


@main.group()
def bench() -> None:
    """Benchmarks whose figures go to results/ (not timed tests)."""


@bench.command("analysis")
@click.argument("task_codes", nargs=-1, type=TaskName(), is_eager=True)
@click.option("--data-dir", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Folder of KLUE files: every file of the tasks' folders is read, partial copies included.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Use only the first N distinct texts.")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True)
@click.pass_context
@friendly_errors
def bench_analysis_command(ctx, task_codes, data_dir, limit, results_dir: Path) -> None:
    """Characters per second: raw Kiwi, this layer with a cold cache, with a warm cache."""
    report, path = bench_module.analysis_report([get_task(c) for c in (task_codes or TASK_CODES)], data_dir, limit,
                                                results_dir, command_line(), console(ctx).log)
    cps = report["characters_per_second"]
    click.echo(f"{report['texts']} texts, {report['characters']} characters, {report['num_workers']} Kiwi threads")
    click.echo(f"raw Kiwi  {cps['raw_kiwi']:>10} chars/s")
    click.echo(f"cold      {cps['cold']:>10} chars/s  ({report['cold_vs_raw']:.1%} of raw; target >= 90%)")
    click.echo(f"warm      {cps['warm']:>10} chars/s  ({report['warm_speedup_over_cold']:.1f}x cold; target >= 20x)")
    click.echo(f"peak RSS  {results.memory_cell(report['peak_rss_mb'])} MiB; written to {path}")


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
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where learning-curve/<task>-<model>.json goes (default: ./results; with the shipped sample, "
                   "nothing is written unless this is given).")
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
                             + [results.format_score(point['headline'][k], len(k)) for k in headline]))


@bench.command("scale")
@task_argument
@click.option("--sizes", default="0.125,0.25,0.5,1", show_default=True, callback=_fractions,
              help="Shares of the official training size (distinct copies fill what the data here lacks).")
@model_name_option
@data_dir_option
@train_option
@dev_option
@seed_option
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True, help="Where scale/<task>.json goes; README.md there gets the table.")
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
                   results.memory_cell(point["peak_rss_mb"])] for point in report["points"]])
    click.echo(f"time ~ n^{report['fit_exponent']} (fit); written to {path}")


@bench.command("peers")
@task_argument
@data_dir_option
@train_option
@dev_option
@seed_option
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True, help="Where peers.json goes; README.md there gets the table.")
@click.pass_context
@friendly_errors
def bench_peers_command(ctx, task: str, data_dir, train_file, dev_file, seed: int, results_dir: Path) -> None:
    """Our default model against the tool a user would pick instead (YNAT: fastText, NER: a plain character CRF,
    DP: UDPipe), on the same files, each in its own process: scores, seconds, peak memory and our ratios. Needs
    the peers extra: pip install 'klue-baselines[peers]'."""
    report, path = api.peers(task, data_dir=data_dir, train=train_file, dev=dev_file, seed=seed,
                             results_dir=results_dir, command=command_line(), log=console(ctx).log)
    rows = []
    for side in (report["peer"], report["ours"]):
        rows.append([side["name"], " / ".join(results.format_score(v) for v in side["metrics"].values()),
                     f"{side['total_seconds']:.1f}", results.memory_cell(side["peak_rss_mb"])])
    _print_table(["system", " / ".join(report["ours"]["metrics"]), "seconds", "peak RSS MiB"], rows)
    click.echo(f"our time is {report['ratios']['seconds']:.2f}x the peer's; written to {path}")


@bench.command("long-inputs")
@click.argument("task_codes", nargs=-1, type=TaskName(), is_eager=True)
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True)
@click.pass_context
@friendly_errors
def bench_long_inputs_command(ctx, task_codes, results_dir: Path) -> None:
    """Seconds and peak memory of one input of growing size (characters; eojeols for DP), predicted by each task's
    default model fitted on the sample (all tasks by default)."""
    report, path = long_inputs.long_inputs_report(task_codes or TASK_CODES, results_dir, command_line(),
                                                  console(ctx).log)
    _print_table(["task", "size", "seconds", "peak MiB"],
                 [[code, f"{point['size']:,} {task['unit']}", f"{point['seconds']:.1f}",
                   results.memory_cell(point["peak_rss_mb"])]
                  for code, task in report["tasks"].items() for point in task["points"]])
    click.echo(f"written to {path}")


@bench.command("budget")
@click.argument("task_codes", nargs=-1, type=TaskName(), is_eager=True)
@click.option("--results-dir", type=click.Path(file_okay=False, exists=True, path_type=Path),
              default=Path("results"), show_default=True,
              help="The committed results, whose default rows are rerun; budget.json goes there.")
@click.pass_context
@friendly_errors
def bench_budget_command(ctx, task_codes, results_dir: Path) -> None:
    """Rerun each task's default row (all tasks by default) as `reproduce` does, time raw Kiwi analysis of the
    same texts in the same run, and report each task's seconds as a multiple of it, with the suite's."""
    report = budget.bench_budget(results_dir, task_codes or TASK_CODES, run, command_line(), console(ctx).log)
    if not report["tasks"]:
        raise driver.UsageError(f"no default rows to rerun in {results_dir}")
    path = results.write_result(results_dir, results_dir / "budget.json", report)
    _print_table(["task", "seconds", "raw Kiwi s", "multiple"],
                 [[code, f"{task['seconds']:.1f}", f"{task['raw_kiwi']['seconds']:.1f}", f"{task['ratio']:.2f}x"]
                  for code, task in report["tasks"].items()])
    suite = report["suite"]
    click.echo(f"suite: {suite['ratio']:.2f}x raw Kiwi (budget {suite['budget_ratio']:g}x); written to {path}")


@bench.command("determinism")
@click.argument("task_codes", nargs=-1, type=TaskName(), is_eager=True)
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
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where determinism.json goes (default: ./results; with the shipped sample, nothing is written "
                   "unless this is given).")
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


@main.command()
@task_argument
@click.option("--gold", "gold_path", required=True, type=DATA_PATH,
              help="Official KLUE file of the task, or its Hugging Face export.")
@click.option("--predictions", "predictions_path", required=True,
              type=click.Path(dir_okay=False, exists=True, path_type=Path), help="JSONL keyed by guid.")
@data_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON.")
@click.pass_context
@friendly_errors
def score(ctx, task: str, gold_path: Path, predictions_path: Path, data_dir, as_json: bool) -> None:
    """Score anyone's predictions against an official file with the official metrics."""
    metrics = api.score(task, gold_path, predictions_path, data_dir=data_dir)
    _print_metrics(task, results.jsonable_scores(metrics, 6) if as_json else metrics, as_json)


@main.command("report")
@task_argument
@click.option("--gold", "gold_path", required=True, type=DATA_PATH,
              help="Official KLUE file of the task, or its Hugging Face export.")
@click.option("--predictions", "predictions_path", required=True,
              type=click.Path(dir_okay=False, exists=True, path_type=Path), help="Predictions, as `score` reads them.")
@click.option("--errors", "error_count", default=10, show_default=True, type=click.IntRange(min=0),
              help="How many of the worst errors to show.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the whole report as JSON here.")
@plots_option
@data_dir_option
@click.pass_context
@friendly_errors
def report_command(ctx, task: str, gold_path: Path, predictions_path: Path, error_count: int, out_path, plots_dir,
                   data_dir):
    """Per-class precision, recall, F1 and support, the confusion matrix and the worst errors of anyone's
    predictions: what a class looks at after the score. With --plots: the confusion heat map and F1 per
    class beside chance."""
    if out_path is not None:
        check_output_file(out_path, [gold_path, predictions_path])
    report = api.report(task, gold_path, predictions_path, errors=error_count, data_dir=data_dir, plots_dir=plots_dir)
    if out_path is not None:
        write_json_atomic(out_path, report)
    headline = api.task_spec(task).headline
    click.echo("  ".join(f"{key} {results.format_score(report['metrics'].get(key))}" for key in headline))
    if report.get("classes"):
        click.echo(f"\nper class ({report['unit']})")
        _print_table(["class", "precision", "recall", "f1", "support"],
                     [[row["label"], f"{row['precision']:.2f}", f"{row['recall']:.2f}", f"{row['f1']:.2f}",
                       str(row["support"])] for row in report["classes"]])
        labels, matrix = report["confusion"]["labels"], report["confusion"]["matrix"]
        click.echo("\nconfusion (rows: gold, columns: predicted)")
        _print_table([""] + labels, [[label] + [str(count) for count in row] for label, row in zip(labels, matrix)])
    if report.get("groups"):
        rows, columns = report["groups"]["rows"], [key for key in report["groups"]["rows"][0] if key != "group"]
        click.echo(f"\nper {report['groups']['by']}")
        _print_table([report["groups"]["by"]] + columns, [[row["group"]] + [
            f"{row[key]:.2f}" if isinstance(row[key], float) else "n/a" if row[key] is None else str(row[key])
            for key in columns] for row in rows])
    if report["errors"]:
        click.echo(f"\nworst errors ({report['unit']}), ranked by {report['errors_ranked_by']}")
        for error in report["errors"]:
            click.echo(f"{error['guid']}: {_shown_input(error['input'])}\n  gold:      {error['gold']}\n"
                       f"  predicted: {error['predicted']}")
    for path in report.get("figures", []):
        console(ctx).log(f"figure written to {path}")


@main.command("compare")
@task_argument
@click.option("--gold", "gold_path", required=True, type=DATA_PATH,
              help="Official KLUE file of the task, or its Hugging Face export.")
@click.option("--predictions", "predictions_paths", required=True, multiple=True,
              type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Give it twice: system A, then system B (as `score` reads them).")
@click.option("--resamples", default=1000, show_default=True,
              type=click.IntRange(min=1000, max=significance.MAX_RESAMPLES),
              help=f"Bootstrap resamples (1000 to {significance.MAX_RESAMPLES:,}).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
              help="Seed of the bootstrap draws (0 to 2^32-1).")
@click.option("--metric", "metric_names", multiple=True,
              help="A metric of `score`'s output, or a breakdown standing for all its parts (class_f1, entity_f1, "
                   "slot_accuracy; MRC exact_match/). Repeatable. Default: the headline and the task's breakdown.")
@click.option("--jobs", default=1, show_default=True, type=click.IntRange(min=1),
              help="Processes that score resamples in parallel where a metric is not a sum over records (MRC's "
                   "reader diagnostics); the result does not depend on it.")
@data_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.pass_context
@friendly_errors
def compare_command(ctx, task: str, gold_path: Path, predictions_paths: tuple[Path, ...], resamples: int, seed: int,
                    metric_names: tuple[str, ...], jobs: int, data_dir, as_json: bool) -> None:
    """Is B's lead over A real, and where? Each headline metric for both, B - A, its 95 % paired bootstrap
    interval and p-value; then the same per class, entity type, relation, slot or question type, the
    largest difference first. Resamples draw whole units (sentences, passages, dialogues)."""
    if len(predictions_paths) != 2:
        raise click.BadParameter(f"give exactly two prediction files (A, then B), not {len(predictions_paths)}",
                                 param_hint="--predictions")
    with console(ctx).progress("resampling", resamples) as bar:
        compared = api.compare(task, gold_path, *predictions_paths, resamples=resamples, seed=seed, jobs=jobs,
                               metrics=metric_names or None, data_dir=data_dir, progress=bar.update)
    if as_json:
        click.echo(json.dumps(compared, ensure_ascii=False, indent=2))
        return
    click.echo(f"A: {predictions_paths[0]}\nB: {predictions_paths[1]}\n{compared['resamples']} paired resamples of "
               f"{compared['units']} units (seed {compared['seed']})")
    for title, rows in (("", compared["metrics"]), ("where, the largest |B - A| first:", compared["breakdown"])):
        if not rows:
            continue
        if title:
            click.echo(f"\n{title}")
        _print_table(["metric", "A", "B", "B - A", "95% interval", "p"], [[
            row["metric"], results.format_score(row["a"]), results.format_score(row["b"]),
            "n/a" if row["difference"] is None else f"{row['difference']:+.2f}",
            f"[{results.format_score(row['low'])}, {results.format_score(row['high'])}]",
            _p_value(row["p_value"], compared["resamples"])] for row in rows])


def _p_value(p_value: float | None, resamples: int) -> str:
    """p to four places; 0 (no resample on the far side of zero) as '< 1/B'."""
    if p_value == 0:
        return f"< {1 / resamples:g}"
    return results.format_score(p_value, digits=4)



@main.command("reproduce")
@click.argument("task_codes", nargs=-1, type=TaskName(), is_eager=True)
@click.option("--results-dir", type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("results"),
              show_default=True, help="The committed results; their commands run from the folder that holds it.")
@click.pass_context
@friendly_errors
def reproduce_command(ctx, task_codes, results_dir: Path) -> None:
    """Rerun the commands recorded in results/ (each with an empty cache, into a temporary folder) and show
    each row's committed and rerun headline scores; exits non-zero on any difference."""
    out = console(ctx)
    comparisons = reproduce.reproduce(results_dir, task_codes or TASK_CODES, run, log=out.log)
    if not comparisons:
        raise driver.UsageError(f"no recorded runs in {results_dir}")
    # Four decimals: the digits a record keeps, so that any difference shows.
    _print_table(["task", "run", "metric", "committed", "rerun", ""],
                 [[c.task, c.run, c.metric, results.format_score(c.committed, digits=4),
                   results.format_score(c.rerun, digits=4), "same" if c.same else "DIFFERENT"] for c in comparisons])
    different = sum(not c.same for c in comparisons)
    click.echo(f"{len(comparisons) - different} of {len(comparisons)} recorded scores reproduced")
    for note in reproduce.code_notes(comparisons, driver.code_version().get("git_commit")):
        click.echo(note)
    for note in reproduce.machine_notes(comparisons, driver.machine()):
        click.echo(note)
    if different:
        ctx.exit(1)


if __name__ == "__main__":
    main()
