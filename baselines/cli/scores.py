"""Commands that score: `run` (train and evaluate, recorded in results/), `tune`, `score`, `report`, `compare`."""
from __future__ import annotations

import json
from pathlib import Path

import click

from baselines import api
from baselines.data import prediction_formats
from baselines.data.fileio import check_output_file, write_json_atomic
from baselines.metrics import significance
from baselines.runner import result_files, tables, tuning
from baselines.cli._console import (TABLE_FORMATS, _print_metrics, _print_table, _shown_input, command_line,
                                    console, friendly_errors)
from baselines.cli._options import (DATA_PATH, backend_option, data_dir_option, evaluation_options, jobs_option,
                                    model_name_option, plots_option, pos_option, results_dir_option, seed_option,
                                    task_argument, task_codes_argument, train_option)
from baselines.cli._app import main


table_format_option = click.option(
    "--format", "table_format", default="text", show_default=True, type=click.Choice(TABLE_FORMATS),
    help="How to print the tables: text for the terminal; markdown, latex (booktabs) or csv for a paper.")
predictions_format_option = click.option(
    "--predictions-format", default=prediction_formats.AUTO, show_default=True,
    type=click.Choice(prediction_formats.FORMATS),
    help="How to read the prediction files; auto tells JSONL, a Hugging Face predict_results file, NER's "
         "predictions.txt, a JSON array and CSV/TSV with a header apart by content, and says which it read.")


@main.command()
@task_codes_argument
@evaluation_options
@pos_option
@results_dir_option(default=None, help="Where to write <task>.json and README.md (default: ./results; with the "
                                        "shipped sample, nothing is written unless this is given).")
@click.option("--predictions-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also write the predictions that were scored (out-of-fold with --cv) to "
                   "<task>-<model>.jsonl here, as `score --predictions` reads them.")
@plots_option
@click.option("--seeds", default=None, metavar="S1,S2,...",
              help="Run each model once per seed and print the mean, spread and range of each metric (a model "
                   "that takes no seed runs once); nothing is recorded.")
@table_format_option
@click.pass_context
@friendly_errors
def run(ctx, task_codes, model_name, params, data_dir, train_file, dev_file, cv: int, seed: int, jobs: int,
        backend: str, pos, results_dir, predictions_dir, plots_dir, seeds, table_format: str) -> None:
    """Train and evaluate (all tasks by default), print the table and record results/. With --plots: each
    task's confusion matrix and F1 per class, and the results chart. With --seeds: the spread over seeds."""
    if seeds is not None:
        given = [name for name, value in (("--seed", seed), ("--results-dir", results_dir),
                                          ("--predictions-dir", predictions_dir), ("--plots", plots_dir)) if value]
        if given:
            raise click.BadParameter(f"--seeds records nothing and sets every seed: drop {', '.join(given)}",
                                     param_hint="--seeds")
        try:
            chosen = [int(value) for value in seeds.split(",")]
        except ValueError:
            raise click.BadParameter(f"{seeds!r}: expected seeds as whole numbers joined by commas, such as 0,1,2",
                                     param_hint="--seeds") from None
        spread = api.seed_spread(task_codes, chosen, model_name, data_dir=data_dir, train=train_file, dev=dev_file,
                                 cv=cv, pos=pos, jobs=jobs, backend=backend, log=console(ctx).log, **params)
        _print_table(["task", "model", "metric", "seeds", "mean", "std", "min", "max"], [[
            row["task"], row["model"], row["metric"], ",".join(map(str, row["seeds"])) + ("" if row["seeded"] else
                                                                                          " (takes no seed)"),
            tables.format_score(row["mean"]), tables.format_score(row["std"]), tables.format_score(row["min"]),
            tables.format_score(row["max"])] for row in spread], table_format)
        return
    records = api.run(task_codes, model_name, data_dir=data_dir, train=train_file, dev=dev_file, cv=cv, seed=seed,
                      pos=pos, results_dir=results_dir, predictions_dir=predictions_dir, plots_dir=plots_dir,
                      command=command_line(), jobs=jobs, backend=backend, log=console(ctx).log, **params)
    _print_table(["task", "model", "metric", "score", "95% interval", "n", "protocol"],
                 [[record["task"], record["model"], metric, tables.format_score(record["metrics"][metric]),
                   tables.interval_cell(record["intervals"].get(metric)), f"{record['dev_records']:,}",
                   record["protocol"]]
                  for record in records for metric in record["headline"]], table_format)
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
@results_dir_option()
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


@main.command()
@task_argument
@click.option("--gold", "gold_path", required=True, type=DATA_PATH,
              help="Official KLUE file of the task, or its Hugging Face export.")
@click.option("--predictions", "predictions_path", required=True,
              type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="JSONL keyed by guid, or a file as neural pipelines write it (see --predictions-format).")
@predictions_format_option
@data_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON.")
@click.pass_context
@friendly_errors
def score(ctx, task: str, gold_path: Path, predictions_path: Path, predictions_format: str, data_dir,
          as_json: bool) -> None:
    """Score anyone's predictions against an official file with the official metrics."""
    metrics = api.score(task, gold_path, predictions_path, data_dir=data_dir, predictions_format=predictions_format,
                        log=console(ctx).log)
    _print_metrics(task, result_files.jsonable_scores(metrics, 6) if as_json else metrics, as_json)


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
@click.option("--overwrite", is_flag=True, help="Replace the figures of an earlier report in the --plots folder.")
@predictions_format_option
@table_format_option
@data_dir_option
@click.pass_context
@friendly_errors
def report_command(ctx, task: str, gold_path: Path, predictions_path: Path, error_count: int, out_path, plots_dir,
                   overwrite: bool, predictions_format: str, table_format: str, data_dir):
    """Per-class precision, recall, F1 and support, the confusion matrix and the worst errors of anyone's
    predictions: what a class looks at after the score. With --plots: the confusion heat map and F1 per
    class beside chance."""
    if out_path is not None:
        check_output_file(out_path, [gold_path, predictions_path])
    report = api.report(task, gold_path, predictions_path, errors=error_count, data_dir=data_dir, plots_dir=plots_dir,
                        overwrite=overwrite, predictions_format=predictions_format, log=console(ctx).log)
    if out_path is not None:
        write_json_atomic(out_path, report)
    headline = api.task_spec(task).scoring.headline
    click.echo("  ".join(f"{key} {tables.format_score(report['metrics'].get(key))}" for key in headline))
    if report.get("classes"):
        click.echo(f"\nper class ({report['unit']})")
        _print_table(["class", "precision", "recall", "f1", "support"],
                     [[row["label"], f"{row['precision']:.2f}", f"{row['recall']:.2f}", f"{row['f1']:.2f}",
                       str(row["support"])] for row in report["classes"]], table_format)
        labels, matrix = report["confusion"]["labels"], report["confusion"]["matrix"]
        click.echo("\nconfusion (rows: gold, columns: predicted)")
        _print_table([""] + labels, [[label] + [str(count) for count in row] for label, row in zip(labels, matrix)],
                     table_format)
    if report.get("entities"):
        _print_entities({"": report["entities"]}, table_format)
    if report.get("groups"):
        rows, columns = report["groups"]["rows"], [key for key in report["groups"]["rows"][0] if key != "group"]
        click.echo(f"\nper {report['groups']['by']}")
        _print_table([report["groups"]["by"]] + columns, [[row["group"]] + [
            f"{row[key]:.2f}" if isinstance(row[key], float) else "n/a" if row[key] is None else str(row[key])
            for key in columns] for row in rows], table_format)
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
@click.option("--examples", "example_count", default=0, show_default=True, type=click.IntRange(min=0),
              help="Show this many records where the systems' predictions differ, for each of: A nearer the "
                   "gold, B nearer, both as wrong.")
@predictions_format_option
@table_format_option
@data_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.pass_context
@friendly_errors
def compare_command(ctx, task: str, gold_path: Path, predictions_paths: tuple[Path, ...], resamples: int, seed: int,
                    metric_names: tuple[str, ...], jobs: int, example_count: int, predictions_format: str,
                    table_format: str, data_dir, as_json: bool) -> None:
    """Is B's lead over A real, and where? Each headline metric for both, B - A, its 95 % paired bootstrap
    interval and p-value; then the same per class, entity type, relation, slot or question type, the
    largest difference first. Resamples draw whole units (sentences, passages, dialogues)."""
    if len(predictions_paths) != 2:
        raise click.BadParameter(f"give exactly two prediction files (A, then B), not {len(predictions_paths)}",
                                 param_hint="--predictions")
    with console(ctx).progress("resampling", resamples) as bar:
        compared = api.compare(task, gold_path, *predictions_paths, resamples=resamples, seed=seed, jobs=jobs,
                               metrics=metric_names or None, data_dir=data_dir, progress=bar.update,
                               predictions_format=predictions_format, examples=example_count,
                               log=console(ctx).log)
    if as_json:
        click.echo(json.dumps(compared, ensure_ascii=False, indent=2))
        return
    click.echo(f"A: {predictions_paths[0]}\nB: {predictions_paths[1]}\n{compared['resamples']} paired resamples of "
               f"{compared['units']} units (seed {compared['seed']})")
    where = (f"where, the largest |B - A| first (p Holm: corrected for the {len(compared['breakdown'])} rows):")
    for title, rows in (("", compared["metrics"]), (where, compared["breakdown"])):
        if not rows:
            continue
        if title:
            click.echo(f"\n{title}")
        _print_table(["metric", "A", "B", "B - A", "95% interval", "p", *(["p Holm"] if title else [])], [[
            row["metric"], tables.format_score(row["a"]), tables.format_score(row["b"]),
            "n/a" if row["difference"] is None else f"{row['difference']:+.2f}",
            f"[{tables.format_score(row['low'])}, {tables.format_score(row['high'])}]",
            _p_value(row["p_value"], row.get("p_value_is_bound", False)),
            *([_p_value(row["p_holm"], row.get("p_value_is_bound", False))] if title else [])] for row in rows],
            table_format)
    click.echo(f"\n{compared['anchors']['note']}")
    if "mcnemar" in compared:
        test = compared["mcnemar"]
        click.echo(f"\nMcNemar's exact test ({test['unit']}s right in one system only): A {test['only_a_right']:,}, "
                   f"B {test['only_b_right']:,}, p = {_p_value(test['p_value'])}")
    if "entities" in compared:
        _print_entities(compared["entities"], table_format)
    for group, found in compared.get("examples", {}).items():
        click.echo(f"\n{group} ({len(found)} shown)")
        for example in found:
            click.echo(f"{example['guid']}: {_shown_input(example['input'])}\n  gold: {example['gold']}\n"
                       f"  A:    {example['a']}\n  B:    {example['b']}")


def _print_entities(by_system: dict[str, dict], table_format: str) -> None:
    """Entity micro precision, recall and F1 and the error types, a column a system."""
    systems = list(by_system)
    first = by_system[systems[0]]
    click.echo(f"\nentities ({first['convention']})")
    named = [system.upper() or "count" for system in systems]
    rows = [[name, *(f"{by_system[system]['micro'][name]:.2f}" for system in systems)]
            for name in ("precision", "recall", "f1")]
    rows += [[kind, *(f"{by_system[system]['counts'][kind]:,}" for system in systems)] for kind in first["counts"]]
    _print_table(["", *named], rows, table_format)
    for system in systems:
        for kind, found in by_system[system]["examples"].items():
            for example in found:
                click.echo(f"{(system.upper() + ' ') if system else ''}{kind}: {example['guid']}: gold "
                           f"{example['gold']}, predicted {example['predicted']}")


def _p_value(p_value: float | None, is_bound: bool = False) -> str:
    """p as a number; where no resample fell beyond zero, the bound that the resamples give ('< 0.001')."""
    if p_value is None:
        return "n/a"
    shown = f"{p_value:.4f}" if p_value >= 0.0001 else f"{p_value:.1e}"
    return f"< {shown}" if is_bound else shown
