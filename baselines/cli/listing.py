"""The `tasks` command: the tasks, their models and where their files are, from the cards alone (no task imported)."""
from __future__ import annotations

from pathlib import Path

import click

from baselines.data import cards
from baselines.data.locate import locate
from baselines.cli._console import friendly_errors
from baselines.cli._app import main
from baselines.errors import UsageError


@main.command()
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@friendly_errors
def tasks(data_dir: Path | None) -> None:
    """List the tasks, their models and the files each needs (and which are found)."""
    for card in cards.all_cards():
        try:
            data = locate(card, data_dir)
        except UsageError:
            data = None
        listing = card.listing
        click.echo(f"{card.code:5} {card.title}")
        click.echo(f"      models: {', '.join(listing.models)} (default {listing.default_model}); "
                   f"metrics: {', '.join(listing.headline)}")
        for name in cards.official_names(card):
            found = None
            if data is not None:
                found = {card.train_file: data.train, card.dev_file: data.dev}.get(name) or data.extras.get(name)
            click.echo(f"      {card.folder}/{name}: {found if found else 'not found'}")
