"""How the command line speaks: one-line errors and warnings, progress on stderr, tables."""
from __future__ import annotations

import csv
import functools
import io
import json
import shlex
import sys
import unicodedata
from typing import Callable

import click

from baselines.data import cards
from baselines.errors import EXPLAINED_ERRORS, command_line_words, in_words
from baselines.runner import tables
from baselines.runner.registry import get_task


def friendly_errors(command: Callable) -> Callable:
    """Known failures become one 'Error: ...' line and a non-zero exit, never a traceback."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            with command_line_words():
                cards.check_registry()  # a task that another distribution registers wrongly stops every command
                return command(*args, **kwargs)
        except EXPLAINED_ERRORS as error:
            with command_line_words():
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
    with command_line_words():
        click.echo(f"Warning: {in_words(str(message))}", err=True)


def console(ctx: click.Context) -> Console:
    return ctx.find_object(Console)


def command_line() -> str:
    return "klue-baselines " + shlex.join(sys.argv[1:])


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


TABLE_FORMATS = ("text", "markdown", "latex", "csv")


_LATEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                  "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}"}


def _print_table(header: list[str], rows: list[list[str]], table_format: str = "text") -> None:
    """The table in `table_format`: 'text', left-aligned columns two spaces apart (wide Hangul characters count
    double); 'markdown', a pipe table; 'latex', a tabular of booktabs rules; 'csv', RFC 4180 rows. A paper
    pastes the last three."""
    cells = [[str(cell) for cell in row] for row in [header] + rows]
    if table_format == "csv":
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(cells)
        click.echo(buffer.getvalue(), nl=False)
    elif table_format == "markdown":
        lines = ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in cells]
        click.echo("\n".join([lines[0], "|" + "---|" * len(header), *lines[1:]]))
    elif table_format == "latex":
        escaped = [["".join(_LATEX_SPECIAL.get(char, char) for char in cell) for cell in row] for row in cells]
        body = [" & ".join(row) + r" \\" for row in escaped]
        click.echo("\n".join([r"\begin{tabular}{" + "l" * len(header) + "}", r"\toprule", body[0], r"\midrule",
                              *body[1:], r"\bottomrule", r"\end{tabular}"]))
    else:
        widths = [max(_display_width(row[i]) for row in cells) for i in range(len(header))]
        for row in cells:
            click.echo("  ".join(cell + " " * (width - _display_width(cell)) for cell, width in zip(row, widths)
                                 ).rstrip())


def _print_metrics(task: str, metrics: dict, as_json: bool, **more) -> None:
    """The metrics as JSON (with `more` before them), or one line each, the task's headline first."""
    if as_json:
        click.echo(json.dumps({"task": task, **more, "metrics": metrics}, ensure_ascii=False, indent=2))
        return
    headline = get_task(task).scoring.headline
    width = max(map(_display_width, metrics))
    for key in [k for k in headline if k in metrics] + sorted(k for k in metrics if k not in headline):
        click.echo(f"{key}{' ' * (width - _display_width(key))}  {tables.format_score(metrics[key], 8)}")
