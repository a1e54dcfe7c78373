"""The `klue-baselines` command group and its global options; the commands join it from their modules."""
from __future__ import annotations

import warnings
from pathlib import Path

import click

from baselines.cli._console import Console, one_line_warnings
from features import analysis


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
