"""The klue-baselines command line: a thin click layer over the driver, the scorers and the data tools."""
from __future__ import annotations

import functools
import json
import shlex
import sys
import warnings
from pathlib import Path
from typing import Callable

import click
from sklearn.base import clone

from baselines import bench as bench_module
from baselines import api, datafiles, driver, reproduce, results, tuning
from baselines.dataio import DataError, check_output_file, check_output_folder, write_json_atomic, write_jsonl_atomic
from baselines.persistence import ModelFileError, load_model, save_model
from baselines.registry import TASK_CODES, all_tasks, get_task
from baselines.taskspec import PredictionError, TaskSpec
from features import analysis

KNOWN_ERRORS = (DataError, PredictionError, ModelFileError, datafiles.DownloadError, driver.UsageError,
                results.SampleOverResults)


def friendly_errors(command: Callable) -> Callable:
    """Known failures become one 'Error: ...' line and a non-zero exit, never a traceback."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except KNOWN_ERRORS as error:
            raise click.ClickException(str(error)) from None
    return wrapper


class Console:
    """Status lines and progress bars on stderr, silenced by --quiet."""

    def __init__(self, quiet: bool):
        self.quiet = quiet

    def log(self, message: str) -> None:
        if not self.quiet:
            click.echo(message, err=True)

    def progress(self, label: str, length: int):
        return click.progressbar(length=length, label=label, file=sys.stderr if not self.quiet else None,
                                 show_pos=False, show_percent=True, hidden=self.quiet)


def one_line_warnings(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings reach a command-line user as one 'Warning: ...' line on stderr, without source lines."""
    click.echo(f"Warning: {message}", err=True)


def console(ctx: click.Context) -> Console:
    return ctx.find_object(Console)


task_argument = click.argument("task", type=click.Choice(TASK_CODES))
data_dir_option = click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path),
                               help="Folder with the KLUE files (default: $KLUE_DATA_DIR, then the download "
                                    "cache, then the shipped sample).")
train_option = click.option("--train", "train_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                            help="Training file instead of the official one (for example a partial copy).")
dev_option = click.option("--dev", "dev_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                          help="Evaluation file instead of the official dev file.")
seed_option = click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
                           help="Random seed of models and folds (0 to 2^32-1).")
pos_option = click.option("--pos", type=click.Choice(["gold", "kiwi"]), default=None,
                          help="DP: parse with the data's POS (gold, the default) or with Kiwi's (kiwi).")


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
                         help="Cross-fit K >= 2 folds over the evaluation file (grouped by passage for MRC, by "
                              "dialogue for WoS); the training file, if any, joins every fold.")
model_name_option = click.option("--model", "model_name", default=None,
                                 help="Model to train: the task's default, or 'trivial' for the floor.")


def evaluation_options(command: Callable) -> Callable:
    """The options that say what `run` and `bench learning-curve` train and evaluate, in this order."""
    for option in reversed((model_name_option, param_option, data_dir_option, train_option, dev_option, cv_option,
                            seed_option)):
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
@click.argument("task_codes", nargs=-1, type=click.Choice(TASK_CODES))
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


def _data(task: TaskSpec, out: Console, data_dir, train_file, dev_file) -> driver.TaskData:
    data = driver.resolve_data(task, data_dir, train_file, dev_file)
    if data.is_sample:
        out.log(f"{task.code}: no data directory configured: using the small sample shipped with the "
                f"package. These are SAMPLE scores, not KLUE results.")
    return data


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
    else as a joblib pickle. Pickled model files can run code when loaded: use those only from a trusted source."""
    spec, out = get_task(task), console(ctx)
    data = _data(spec, out, data_dir, train_file, None)
    path = out_path or Path(f"{task}.joblib")
    check_output_file(path)
    name, model = _fit_on_training_data(spec, out, data, _model_from_pos(spec, model_name, pos), seed, params)
    save_model(path, model, task, name, [_training_file(spec, data)], driver.versions())
    click.echo(f"saved {name} model for {task} to {path}")


def _training_file(spec: TaskSpec, data: driver.TaskData) -> Path:
    if data.train is None:
        raise driver.UsageError(f"no training file for {spec.code}: give --train FILE or --data-dir")
    return data.train


def _fit_on_training_data(spec: TaskSpec, out: Console, data: driver.TaskData, model_name: str | None, seed: int,
                          params: dict | None = None):
    """(model name, model fitted on the task's labelled training file)."""
    path = _training_file(spec, data)
    records = spec.load(path)
    driver.check_labelled(spec, records, path)
    name, model = driver.build_model(spec, model_name, seed, spec.load_resources(data.extras), params)
    out.log(f"{spec.code}: fitting {name} on {len(records)} records from {path}")
    return name, model.fit(records, spec.targets(records))


def _model_for(spec: TaskSpec, out: Console, model_path: Path | None, data: driver.TaskData, seed: int,
               model_name: str | None = None, params: dict | None = None):
    """A saved model when --model is given, else one fitted on the training data."""
    if model_path is not None:
        if params:
            raise driver.UsageError("--param sets up a model to train: a saved --model FILE has its own")
        model, metadata = load_model(model_path, spec.code, driver.versions())
        return metadata["model"], model
    return _fit_on_training_data(spec, out, data, model_name, seed, params)


def _model_from_pos(spec: TaskSpec, model_name: str | None, pos: str | None) -> str | None:
    """--pos: the model of a task that parses with the data's POS ('gold') or with Kiwi's ('kiwi')."""
    if pos is None:
        return model_name
    if not spec.model_for_pos:
        raise driver.UsageError(f"--pos applies to: {', '.join(t.code for t in all_tasks() if t.model_for_pos)}")
    if model_name is not None:
        raise driver.UsageError("give --pos or --model, not both")
    return spec.model_for_pos[pos]


def _print_table(header: list[str], rows: list[list[str]]) -> None:
    """Left-aligned columns, two spaces apart, the header first."""
    widths = [max(len(str(row[i])) for row in rows + [header]) for i in range(len(header))]
    for row in [header] + rows:
        click.echo("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())


def _print_metrics(metrics: dict[str, float], headline: tuple[str, ...]) -> None:
    width = max(map(len, metrics))
    ordered = [k for k in headline if k in metrics] + sorted(k for k in metrics if k not in headline)
    for key in ordered:
        click.echo(f"{key:<{width}}  {results.format_score(metrics[key], 8)}")


@main.command()
@task_argument
@click.option("--model", "model_path", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              default=None, help="Model file from `train` (default: train one on the training data first). Files "
                                 "saved without the secure extra are pickles: use those only from a trusted source.")
@data_dir_option
@train_option
@dev_option
@param_option
@seed_option
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON.")
@click.pass_context
@friendly_errors
def evaluate(ctx, task: str, model_path, data_dir, train_file, dev_file, params, seed: int, as_json: bool) -> None:
    """Score a model on the dev file with the official metrics."""
    spec, out = get_task(task), console(ctx)
    data = _data(spec, out, data_dir, train_file, dev_file)
    if data.dev is None:
        raise driver.UsageError(f"no evaluation file for {task}: give --dev FILE or --data-dir")
    name, model = _model_for(spec, out, model_path, data, seed, params=params)
    records = spec.load(data.dev)
    driver.check_gold(spec, records, data.dev)
    metrics = spec.score(records, spec.predict(model, records), spec.load_resources(data.extras))
    if as_json:
        click.echo(json.dumps({"task": task, "model": name, "metrics": results.jsonable_scores(metrics, 6)},
                              ensure_ascii=False, indent=2))
    else:
        _print_metrics(metrics, spec.headline)


@main.command()
@task_argument
@click.option("--input", "input_path", required=True, type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Official-format file or JSONL of raw inputs (see README).")
@click.option("--output", "output_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="JSONL to write (default: stdout).")
@click.option("--model", "model_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Model file from `train` (default: train one on the training data first). Files saved "
                   "without the secure extra are pickles: use those only from a trusted source.")
@data_dir_option
@train_option
@param_option
@seed_option
@pos_option
@click.option("--format", "output_format", type=click.Choice(["jsonl", "tsv"]), default="jsonl", show_default=True,
              help="tsv: the official KLUE TSV layout (DP only).")
@click.pass_context
@friendly_errors
def predict(ctx, task: str, input_path: Path, output_path, model_path, data_dir, train_file, params, seed: int,
            pos: str | None, output_format: str) -> None:
    """Predict raw or official-format input; one JSON object per record (format in the README)."""
    spec, out = get_task(task), console(ctx)
    if output_format == "tsv" and (spec.write_tsv is None or output_path is None):
        raise driver.UsageError("--format tsv needs --output FILE and is available for: "
                                + ", ".join(t.code for t in all_tasks() if t.write_tsv))
    if output_path is not None:
        check_output_file(output_path)
    loader = spec.load_input or spec.load
    records = loader(input_path)
    data = driver.TaskData(None, None, {}, "none") if model_path else _data(spec, out, data_dir, train_file, None)
    _name, model = _model_for(spec, out, model_path, data, seed, _model_from_pos(spec, None, pos), params)
    rows = spec.predict(model, records)
    if output_format == "tsv":
        spec.write_tsv(output_path, records, rows)
        out.log(f"{len(rows)} parsed sentences written to {output_path}")
    elif output_path:
        write_jsonl_atomic(output_path, rows)
        out.log(f"{len(rows)} predictions written to {output_path}")
    else:
        for row in rows:
            click.echo(json.dumps(row, ensure_ascii=False))


@main.command()
@click.argument("task_codes", nargs=-1, type=click.Choice(TASK_CODES))
@evaluation_options
@pos_option
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to write <task>.json and README.md (default: ./results; with the shipped sample, "
                   "nothing is written unless this is given).")
@click.option("--predictions-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also write the predictions that were scored (out-of-fold with --cv) to "
                   "<task>-<model>.jsonl here, as `score --predictions` reads them.")
@click.pass_context
@friendly_errors
def run(ctx, task_codes, model_name, params, data_dir, train_file, dev_file, cv: int, seed: int, pos,
        results_dir, predictions_dir) -> None:
    """Train and evaluate (all tasks by default), print the table and record results/."""
    out = console(ctx)
    codes = task_codes or TASK_CODES
    if (train_file or dev_file) and len(codes) != 1:
        raise driver.UsageError("--train and --dev name one task's files: give exactly one task")
    if params and len(codes) != 1:
        raise driver.UsageError("--param sets one model's hyper-parameters: give exactly one task")
    # Every task's data and every output folder is checked before the first model trains.
    task_data = {code: _data(get_task(code), out, data_dir, train_file, dev_file) for code in codes}
    for folder in (predictions_dir, results_dir or Path("results")):
        if folder is not None:
            check_output_folder(folder)
    for code, data in task_data.items():
        if data.is_sample and results_dir is not None:
            results.check_sample_can_be_recorded(results_dir, code)
    records, sample_used = {}, False
    for code in codes:
        spec, data = get_task(code), task_data[code]
        sample_used |= data.is_sample
        record, predictions = driver.evaluate_task(spec, data, model_name=_model_from_pos(spec, model_name, pos),
                                                   seed=seed, cv=cv, log=out.log, params=params)
        record["command"] = command_line()
        records[code] = record
        out.log(f"{code}: " + ", ".join(f"{k} {results.format_score(v)}" for k, v in record["headline"].items())
                + f" ({sum(record['seconds'].values()):.1f}s, peak {results.memory_cell(record['peak_rss_mb'])} MiB)")
        if predictions_dir is not None:
            path = predictions_dir / f"{results.run_file_stem(record)}.jsonl"
            write_jsonl_atomic(path, predictions)
            out.log(f"{code}: predictions written to {path}")
        if results_dir is not None or not data.is_sample:
            path = results.record_run(results_dir or Path("results"), record)
            out.log(f"{code}: recorded in {path}")
    if results_dir is not None or not sample_used:
        results.regenerate_readme(results_dir or Path("results"))
    rows = []
    for code, record in records.items():
        for metric, value in record["headline"].items():
            rows.append([code, record["model"], metric, results.format_score(value), record["protocol"]])
    _print_table(["task", "model", "metric", "score", "protocol"], rows)
    if sample_used:
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
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True)
@click.pass_context
@friendly_errors
def tune(ctx, task: str, params, folds: int, model_name, data_dir, train_file, seed: int, results_dir: Path) -> None:
    """Choose hyper-parameters by cross-validation on the training file (the dev file is never read)."""
    spec, out = get_task(task), console(ctx)
    try:
        grid = tuning.parse_grid(params)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--param") from None
    data = _data(spec, out, data_dir, train_file, None)
    if data.train is None:
        raise driver.UsageError(f"no training file for {task}: give --train FILE or --data-dir")
    check_output_folder(results_dir / "tuning")
    records = spec.load(data.train)
    driver.check_labelled(spec, records, data.train)
    resources = spec.load_resources(data.extras)
    name, model = driver.build_model(spec, model_name, seed, resources)
    driver.check_params(name, model, grid)
    for point in tuning.grid_points(grid):
        driver.check_values(name, clone(model).set_params(**point))
    problem = tuning.fold_count_problem(spec, records, folds)
    if problem:
        raise driver.UsageError(f"--folds {folds}: {problem}")
    report = tuning.grid_search(spec, model, records, resources, grid, spec.headline[0], folds, seed, out.log)
    report.update({"task": task, "model": name, "train": driver.describe_file(data.train, len(records)),
                   "command": command_line(), "versions": driver.versions()})
    path = results_dir / "tuning" / f"{task}-{name}.json"
    write_json_atomic(path, report)
    for trial in report["trials"]:
        click.echo(f"{trial['mean']:8.2f} ± {trial['std']:.2f}  {trial['params']}")
    click.echo(f"best by {report['metric']}: {report['best']} (written to {path})")


@main.group()
def bench() -> None:
    """Benchmarks whose figures go to results/ (not timed tests)."""


@bench.command("analysis")
@click.argument("task_codes", nargs=-1, type=click.Choice(TASK_CODES))
@click.option("--data-dir", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Folder of KLUE files: every file of the tasks' folders is read, partial copies included.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Use only the first N distinct texts.")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True)
@click.pass_context
@friendly_errors
def bench_analysis_command(ctx, task_codes, data_dir, limit, results_dir: Path) -> None:
    """Characters per second: raw Kiwi, this layer with a cold cache, with a warm cache."""
    out = console(ctx)
    folder = datafiles.download_dir(data_dir)
    texts, files = bench_module.collect_texts([get_task(c) for c in (task_codes or TASK_CODES)], folder, out.log)
    if not texts:
        raise driver.UsageError(f"no KLUE text found under {folder}")
    texts = texts[:limit] if limit else texts
    check_output_folder(results_dir)
    workers = analysis.analyzer().num_workers
    report = bench_module.bench_analysis(texts, num_workers=workers, log=out.log)
    report.update({"command": command_line(), "files": files})
    path = results_dir / "analysis.json"
    write_json_atomic(path, report)
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
@click.pass_context
@friendly_errors
def bench_learning_curve_command(ctx, task: str, fractions: list[float], model_name, params, data_dir, train_file,
                                 dev_file, cv: int, seed: int, results_dir) -> None:
    """The dev scores of a model trained on growing shares of its training data: how far more data would
    take it."""
    spec, out = get_task(task), console(ctx)
    data = _data(spec, out, data_dir, train_file, dev_file)
    if results_dir is not None or not data.is_sample:
        check_output_folder((results_dir or Path("results")) / "learning-curve")
    points = []
    for fraction in fractions:
        record, _predictions = driver.evaluate_task(spec, data, model_name=model_name, seed=seed, cv=cv,
                                                    log=out.log, train_fraction=fraction, params=params)
        points.append({"fraction": fraction, **{
            key: record[key] for key in ("trained_on", "headline", "metrics", "seconds", "peak_rss_mb")}})
        out.log(f"{task}: {fraction:g} of the training data: "
                + ", ".join(f"{k} {results.format_score(v)}" for k, v in record["headline"].items()))
    shared = ("task", "model", "estimator", "protocol", "cv_folds", "data_source", "files", "hyper_parameters", "seed",
              "versions", "params")
    report = {key: record[key] for key in shared if key in record}
    report.update(points=points, command=command_line())
    if results_dir is not None or not data.is_sample:
        path = (results_dir or Path("results")) / "learning-curve" / f"{results.run_file_stem(record)}.json"
        write_json_atomic(path, report)
        out.log(f"{task}: written to {path}")
    headline = list(points[0]["headline"])
    click.echo("  ".join(["fraction", "trained on"] + headline))
    for point in points:
        low, high = min(point["trained_on"]), max(point["trained_on"])
        trained = f"{low}-{high}" if low != high else str(low)
        click.echo("  ".join([f"{point['fraction']:<8g}", f"{trained:<10}"]
                             + [results.format_score(point['headline'][k], len(k)) for k in headline]))


@main.command()
@task_argument
@click.option("--gold", "gold_path", required=True, type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Official KLUE file of the task.")
@click.option("--predictions", "predictions_path", required=True,
              type=click.Path(dir_okay=False, exists=True, path_type=Path), help="JSONL keyed by guid.")
@data_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON.")
@click.pass_context
@friendly_errors
def score(ctx, task: str, gold_path: Path, predictions_path: Path, data_dir, as_json: bool) -> None:
    """Score anyone's predictions against an official file with the official metrics."""
    spec, out = get_task(task), console(ctx)
    metrics = api.score(task, gold_path, predictions_path, data_dir=data_dir)
    for note in spec.score_notes(metrics):
        out.log(note)
    if as_json:
        click.echo(json.dumps({"task": task, "metrics": results.jsonable_scores(metrics, 6)}, ensure_ascii=False,
                              indent=2))
    else:
        _print_metrics(metrics, spec.headline)


@main.command("reproduce")
@click.argument("task_codes", nargs=-1, type=click.Choice(TASK_CODES))
@click.option("--results-dir", type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("results"),
              show_default=True, help="The committed results; their commands run from the folder that holds it.")
@click.pass_context
@friendly_errors
def reproduce_command(ctx, task_codes, results_dir: Path) -> None:
    """Rerun the commands recorded in results/ (each with an empty cache, into a temporary folder) and show
    each row's committed and rerun headline scores; exits non-zero on any difference."""
    out = console(ctx)
    comparisons = reproduce.reproduce(results_dir, task_codes or TASK_CODES, log=out.log)
    if not comparisons:
        raise driver.UsageError(f"no recorded runs in {results_dir}")
    # Four decimals: the digits a record keeps, so that any difference shows.
    _print_table(["task", "run", "metric", "committed", "rerun", ""],
                 [[c.task, c.run, c.metric, results.format_score(c.committed, digits=4),
                   results.format_score(c.rerun, digits=4), "same" if c.same else "DIFFERENT"] for c in comparisons])
    different = sum(not c.same for c in comparisons)
    click.echo(f"{len(comparisons) - different} of {len(comparisons)} recorded scores reproduced")
    if different:
        ctx.exit(1)


if __name__ == "__main__":
    main()
