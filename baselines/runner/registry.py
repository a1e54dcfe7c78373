"""The task registry: task code -> its TaskSpec (loader, models, scorer, headline metrics)."""
from __future__ import annotations

import difflib
import importlib

from baselines.data import cards
from baselines.taskspec import TaskSpec
from baselines.errors import CardError, UnknownTask

# The built-in tasks, in their cards' order.
TASK_CODES = tuple(card.code for card in cards.all_cards())


def did_you_mean(name: str, known: list[str] | tuple[str, ...]) -> str:
    """' (did you mean X?)' for the closest of `known` to `name`, compared without case; '' when none is
    close."""
    by_folded = {option.lower(): option for option in known}
    close = difflib.get_close_matches(name.lower(), list(by_folded), n=1, cutoff=0.5)
    return f" (did you mean {by_folded[close[0]]}?)" if close else ""


def task_code(name: str) -> str:
    """The task code that `name` spells, in any case ('YNAT' -> 'ynat'); UnknownTask otherwise."""
    code = str(name).strip().lower()
    if code not in TASK_CODES:
        raise UnknownTask(f"unknown task {name!r}{did_you_mean(str(name), TASK_CODES)}; "
                          f"the tasks are {', '.join(TASK_CODES)}")
    return code


def get_task(code: str) -> TaskSpec:
    code = task_code(code)
    task = importlib.import_module(cards.task_module(code)).TASK
    if task.code != code:
        raise CardError(f"{cards.task_module(code)}: its TASK is {task.code!r}, not {code!r}")
    return task


def all_tasks() -> list[TaskSpec]:
    cards.check_registry()
    return [get_task(code) for code in TASK_CODES]
