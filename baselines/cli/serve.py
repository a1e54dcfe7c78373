"""The `serve` command: the demo page on 127.0.0.1, where students type text and see each task's prediction."""
from __future__ import annotations

from pathlib import Path

import click

from baselines.cli._app import main
from baselines.cli._console import console, friendly_errors
from baselines.web import app as web_app


@main.command()
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 (0: a free one, printed at start).")
@click.option("--models-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Ready models from `train --all` (default: $KLUE_MODELS_DIR, else the per-user cache).")
@click.pass_context
@friendly_errors
def serve(ctx, port: int, models_dir: Path | None) -> None:
    """Start the demo page: type a sentence (a pair, a passage and a question, two entities, a dialogue) and see
    each task's prediction drawn with what pushed it. It listens on 127.0.0.1 only, uses the ready models where
    they exist and fits the others on the shipped sample when first asked. Needs the serve extra.

    \b
    Its limits: a request body of at most 32,000 bytes (however it is sent),
    each field at most 2,000 characters, 4 predictions at once (the others
    wait), and requests only for 127.0.0.1 or localhost, predictions only as
    JSON from the page itself."""
    web_app.serve(port, models_dir, log=console(ctx).log, announce=lambda line: click.echo(line))
