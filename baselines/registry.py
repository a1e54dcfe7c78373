"""The task registry: task code -> its TaskSpec (loader, models, scorer, headline metrics)."""
from __future__ import annotations

import importlib

from baselines.taskspec import TaskSpec

TASK_CODES = ("ynat", "sts", "nli", "ner", "re", "dp", "mrc", "wos")


def get_task(code: str) -> TaskSpec:
    if code not in TASK_CODES:
        raise KeyError(f"unknown task {code!r}; the tasks are {', '.join(TASK_CODES)}")
    return importlib.import_module(f"baselines.tasks.{code}").TASK


def all_tasks() -> list[TaskSpec]:
    return [get_task(code) for code in TASK_CODES]
