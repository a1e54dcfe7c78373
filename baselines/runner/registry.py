"""The task registry: task code -> its TaskSpec (loader, models, scorer, headline metrics)."""
from __future__ import annotations

import difflib
import importlib
from typing import TYPE_CHECKING

from baselines.data import cards
from baselines.errors import CardError, UnknownTask

if TYPE_CHECKING:  # the registry names tasks from their cards; a TaskSpec (and scikit-learn) loads with its task
    from baselines.taskspec import TaskSpec

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
    _check_card_agrees(cards.card_of(code), task)
    return task


def _check_card_agrees(card: cards.Card, task: TaskSpec) -> None:
    """What the command line shows from the card before it imports the task must be what the task does: a
    CardError naming the task's module and the first field that differs."""
    told = {"files.train": (card.train_file, task.train_file), "files.dev": (card.dev_file, task.dev_file),
            "files.extras": (card.extra_files, tuple(task.extra_files)),
            "files.optional_extras": (card.optional_extras, tuple(task.optional_extras)),
            "listing.models": (card.listing.models, tuple(task.modelling.models)),
            "listing.default_model": (card.listing.default_model, task.modelling.default_model),
            "listing.headline": (card.listing.headline, tuple(task.scoring.headline)),
            "listing.pos_models": (card.listing.pos_models, dict(task.modelling.model_for_pos)),
            "listing.prediction_writers": (card.listing.prediction_writers,
                                           tuple(task.scoring.prediction_files.writers))}
    for field_name, (in_card, in_task) in told.items():
        if in_card != in_task:
            raise CardError(f"{cards.task_module(card.code)}: its card's {field_name} is {in_card!r}, its TASK's "
                            f"{in_task!r}")


def all_tasks() -> list[TaskSpec]:
    cards.check_registry()
    return [get_task(code) for code in TASK_CODES]
