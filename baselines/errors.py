"""Every error and warning the toolkit raises on purpose, under one base class each.

A caller catches ``BaselinesError`` for any failure the toolkit explains (the CLI turns it into one ``Error:``
line), or one subclass for one kind. Each subclass that replaces a built-in exception (ValueError) keeps it
as a second base, so code that caught the built-in still does.

The features layer sits below this module and cannot import it: its own three (``EmbeddingFileError``,
``TextTooLong``, ``CacheWarning``) are defined there and listed here, so that this module is still the whole catalogue.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from pathlib import Path
from typing import Iterator

from features.cache import CacheWarning
from features.analysis import TextTooLong
from features.embeddings import EmbeddingFileError

__all__ = ["BaselinesError", "BaselinesWarning", "BackendError", "CacheWarning", "CardError", "DataError",
           "DownloadError", "EmbeddingFileError", "InputWarning", "ModelFileError", "PlotsUnavailable",
           "PredictionError", "RefusedCommandWarning", "SampleDataWarning", "SampleOverResults", "TextTooLong", "TrainingDataError",
           "UnknownTask", "UsageError", "EXPLAINED_ERRORS"]


# A message below the command line names a setting for two readers: a Python caller (the argument, `train=`)
# and a command-line user (the flag, `--train`). It holds both, written with `setting`, and shows the one for
# whoever reads it: the command line's while one of its commands runs (command_line_words), else Python's.
_SETTING = re.compile("\x1f([^\x1e\x1f]*)\x1e([^\x1e\x1f]*)\x1f")
_command_line = threading.local()


def setting(flag: str, argument: str) -> str:
    """A setting as a message names it: `flag` on the command line ('--train FILE'), `argument` in Python
    ('train=FILE')."""
    return f"\x1f{flag}\x1e{argument}\x1f"


def in_words(text: str) -> str:
    """`text` with each setting named for its reader (see setting)."""
    return _SETTING.sub(lambda m: m.group(1) if getattr(_command_line, "active", False) else m.group(2), text)


@contextlib.contextmanager
def command_line_words() -> Iterator[None]:
    """While a command runs, messages name the command line's flags."""
    before = getattr(_command_line, "active", False)
    _command_line.active = True
    try:
        yield
    finally:
        _command_line.active = before


class BaselinesError(Exception):
    """A failure the toolkit explains in its message: the CLI shows it as one 'Error:' line."""

    def __str__(self) -> str:
        return in_words(super().__str__())


class BaselinesWarning(UserWarning):
    """Something a user should know that does not stop the work."""

    def __str__(self) -> str:
        return in_words(super().__str__())


class DataError(BaselinesError):
    """Malformed input. The message names the file, the record (line or guid) and what was expected."""

    def __init__(self, path: os.PathLike | str, where: str | None, problem: str):
        self.path, self.where, self.problem = str(path), where, problem
        location = f"{self.path}: {where}" if where else self.path
        super().__init__(f"{location}: {problem}")

    def __reduce__(self):  # raised in a worker process, it is pickled back with its three parts
        return type(self), (self.path, self.where, self.problem)


class PredictionError(BaselinesError, ValueError):
    """Predictions that do not fit the gold data: missing or unknown ids, labels outside the label set."""


class TrainingDataError(BaselinesError, ValueError):
    """The training data is too small for a hyper-parameter's setting (more folds than groups, say)."""


class UnknownTask(BaselinesError, ValueError):
    """A task name that is none of the task codes, with the closest one where there is one."""


class UsageError(BaselinesError):
    """A request the toolkit cannot carry out as asked (missing data, unknown model, ...)."""


class ModelFileError(BaselinesError):
    """A model file that is not ours, is damaged, or belongs to another task or library version."""


class DownloadError(BaselinesError):
    """A file that could not be fetched or verified; nothing is left at its target."""


class BackendError(BaselinesError):
    """A --backend that does not exist, or whose package is not installed."""


class SampleOverResults(BaselinesError):
    """A run on the shipped sample asked to replace runs on KLUE data."""


class CardError(BaselinesError, ValueError):
    """A task's card (baselines/tasks/<code>/card.json) that lacks a field or holds a wrong one."""


class PlotsUnavailable(BaselinesError):
    """matplotlib or the Korean font is not installed: the message says which extra to install."""


class InputWarning(BaselinesWarning):
    """Input that is used, but not as given or not as the official code would expect (the CLI prints it as
    one 'Warning:' line)."""


class SampleDataWarning(BaselinesWarning):
    """The data is the small sample shipped with the package: its scores are not KLUE results."""


class RefusedCommandWarning(BaselinesWarning):
    """A recorded command that `reproduce` does not rerun (not a `run`, or options `run` does not take)."""


# What the CLI reports as one line: the toolkit's own failures, and the features layer's one.
EXPLAINED_ERRORS = (BaselinesError, EmbeddingFileError, TextTooLong)


_PROJECT_FOLDERS = tuple(str(Path(__file__).resolve().parent.parent / name) + os.sep
                         for name in ("baselines", "features"))


def caller_stacklevel() -> int:
    """The `stacklevel` for warnings.warn that points a warning at the first line outside this toolkit: the
    notebook cell or script that called it, not the toolkit's own line that warns."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PROJECT_FOLDERS):
        frame, level = frame.f_back, level + 1
    return level
