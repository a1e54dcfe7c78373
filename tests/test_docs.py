"""The README documents what the code does: prediction formats, commands, the test command CI runs."""
from __future__ import annotations

from pathlib import Path

import pytest

from baselines.runner.registry import TASK_CODES, get_task

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("task", TASK_CODES)
def test_prediction_format_of_every_task_is_documented(task):
    assert get_task(task).prediction_example in README


def test_ci_runs_the_readme_commands():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install -e ".[test]"' in README and 'pip install -e ".[test]"' in ci
    assert "python -m pytest" in README and "python -m pytest" in ci


def test_every_cli_command_is_documented():
    from baselines.cli import main

    for name in main.commands:
        assert f"`{name}" in README, name


def test_the_python_api_example_runs_on_the_sample(capsys):
    block = README.split("## Python API", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(block, "README.md (Python API)", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 4
    assert 0 <= float(printed[1]) <= 1 and 0 <= float(printed[2]) <= 100
    # score(X, y) and the official scorer agree: the same macro F1 on two scales.
    assert abs(float(printed[1]) * 100 - float(printed[2])) < 1e-9
