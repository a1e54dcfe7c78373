"""Commands for the set-up: `download` fetches the official files, `doctor` checks that the install works."""
from __future__ import annotations

from pathlib import Path

import click

from baselines import api
from baselines.cli._console import console, friendly_errors
from baselines.cli._options import task_codes_argument
from baselines.cli._app import main


@main.command()
@task_codes_argument
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Target folder (default: $KLUE_DATA_DIR, else the per-user cache).")
@click.option("--mirror", default=None, help="Base URL of a copy with the official layout <folder>/<file>.")
@click.pass_context
@friendly_errors
def download(ctx: click.Context, task_codes: tuple[str, ...], data_dir: Path | None, mirror: str | None) -> None:
    """Fetch and verify the official KLUE v1.1 files (all tasks by default)."""
    out = console(ctx)
    target, written = api.download(task_codes, data_dir=data_dir, mirror=mirror, progress_bar=out.progress,
                                   log=out.log)
    click.echo(f"{len(written)} files ready in {target}")


@main.command()
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--models-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Ready models from `train --all` (default: $KLUE_MODELS_DIR, else the per-user cache).")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Compare the versions its rows recorded with the installed ones (default: ./results, where "
                   "it holds rows).")
@click.pass_context
@friendly_errors
def doctor(ctx, data_dir: Path | None, models_dir: Path | None, results_dir: Path | None) -> None:
    """Check that the install works, in under a minute: Python, Kiwi, every task's floor fitted and scored on the
    shipped sample; then which data and extras are there, and each ready model, loaded (up to about 20 s more for
    each of STS and NLI trained on the official data). Exits with 1 when a check fails."""
    if results_dir is None and any(Path("results").glob("*.json")):
        results_dir = Path("results")
    checks = api.doctor(data_dir=data_dir, models_dir=models_dir, results_dir=results_dir, log=console(ctx).log)
    for check in checks:
        mark = {True: "ok", False: "FAILED", None: "--"}[check.ok]
        click.echo(f"{mark:6} {check.name:16} {check.detail}")
    failed = [check.name for check in checks if check.ok is False]
    click.echo(f"{len(failed)} checks failed: {', '.join(failed)}" if failed else "The install works.")
    if failed:
        ctx.exit(1)
