"""Commands that ask what the data alone gives away before a score is read: `probe`."""
from __future__ import annotations

import click

from baselines import api
from baselines.runner import tables
from baselines.cli._console import TABLE_FORMATS, _print_table, command_line, console, friendly_errors
from baselines.cli._options import (backend_option, cv_option, data_dir_option, dev_option, jobs_option,
                                    results_dir_option, seed_option, task_argument, train_option)
from baselines.cli._app import main


@main.command()
@task_argument
@data_dir_option
@train_option
@dev_option
@cv_option
@seed_option
@jobs_option
@backend_option
@results_dir_option(default=None, help="Where probes/<task>.json goes (default: ./results; with the shipped sample, "
                                        "nothing is written unless this is given).")
@click.option("--format", "table_format", default="text", show_default=True, type=click.Choice(TABLE_FORMATS),
              help="How to print the table: text for the terminal; markdown, latex (booktabs) or csv for a paper.")
@click.pass_context
@friendly_errors
def probe(ctx, task: str, data_dir, train_file, dev_file, cv: int, seed: int, jobs: int, backend: str, results_dir,
          table_format: str) -> None:
    """How much of the score the data alone gives away: partial-input baselines (NLI from the hypothesis alone, RE
    from the entity pair alone, ...) trained and scored as `run` scores the default, between the whole input and
    the trivial floor, each with the share of that gap it closes."""
    report, path = api.probe(task, data_dir=data_dir, train=train_file, dev=dev_file, cv=cv, seed=seed,
                             results_dir=results_dir, command=command_line(), jobs=jobs, backend=backend,
                             log=console(ctx).log)
    headline = list(report["probes"][0]["headline"])
    _print_table(["probe", "sees", *[f"{metric} [95% interval]" for metric in headline],
                  *[f"gap closed ({metric})" for metric in headline]],
                 [[row["probe"], row["sees"],
                   *[f"{tables.format_score(row['headline'].get(metric))} "
                     f"{tables.interval_cell(row['intervals'].get(metric))}" for metric in headline],
                   *[tables.share_cell(row["gap_closed"].get(metric)) for metric in headline]]
                  for row in report["probes"]], table_format)
    click.echo(f"protocol: {report['protocol']}; gap closed: the share of (whole input - nothing) that a probe "
               "reaches above nothing")
    if report["sample"]:
        click.echo("(scores on the shipped sample, not KLUE results: use --data-dir for the real data)")
    if path is not None:
        click.echo(f"written to {path}")
