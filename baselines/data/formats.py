"""Which KLUE task's format a file looks like, from its first bytes: errors then name the mix-up."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

from baselines.data import cards
from baselines.data.fileio import DataError

# Field names or header words that only one task's files (official, raw input or Hugging Face export) carry,
# from each task's card, tried in the cards' rank order: MRC and YNAT both have a "title", WoS turns and RE
# records both a "sentence", so the task whose signs are the more telling ranks first.
SIGNS = tuple((card.code, tuple(card.file_signs["signs"]))
              for card in sorted((card for card in cards.all_cards() if card.file_signs),
                                 key=lambda card: card.file_signs["rank"]))
PEEK_BYTES = 65536


def looks_like(path: Path) -> str | None:
    """The task whose format the file's first 64 KB show, or None (a folder, an unreadable or unknown file)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(PEEK_BYTES).decode("utf-8", errors="ignore")
    except OSError:
        return None
    return next((task for task, signs in SIGNS if any(sign in head for sign in signs)), None)


def _display(task: str) -> str:
    """The task's short name as its card writes it (YNAT, WoS)."""
    return next((card.title.split()[0] for card in cards.all_cards() if card.code == task), task.upper())


def _with_article(task: str) -> str:
    """'a YNAT', 'an NLI', 'a WoS': the article as the name is read out, letter by letter for an acronym
    (the letters listed are those whose names start with a vowel sound: en, em, es, ar...)."""
    name = _display(task)
    return f"{'an' if name[0] in 'AEFHILMNORSX' else 'a'} {name}"


def naming_other_task(code: str, read: Callable) -> Callable:
    """`read` (a task's loader), whose DataError on a file of another task's format says which task that is."""
    @functools.wraps(read)
    def reading(path, *args, **kwargs):
        try:
            return read(path, *args, **kwargs)
        except DataError as error:
            other = looks_like(Path(path))
            if other is not None and other != code:
                raise DataError(error.path, error.where, f"{error.problem} (this looks like {_with_article(other)} "
                                                         f"file, and the task is {_display(code)})") from None
            raise
    return reading
