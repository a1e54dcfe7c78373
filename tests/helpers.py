"""Test helpers that test modules share, imported as `from helpers import ...` (pytest puts tests/ on the path for
both `pytest` and `python -m pytest`); fixtures are in conftest.py, and no test module imports another."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from baselines.cli import main
from baselines.data.sources import sample_dir
from baselines.runner.registry import all_tasks, get_task

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KLUE_SHARED_DIR", REPO.parent / "shared"))


def shared_folder(name: str, what: str) -> Path:
    """A folder of ../shared, or a skip that says what is missing and why."""
    path = SHARED / name
    if not path.is_dir():
        pytest.skip(f"{what} in {path} are absent (they are not part of the repository)")
    return path


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def sample_file(task: str, split: str = "dev") -> Path:
    """A file of the sample shipped in the package: the task's dev file, or its training file."""
    spec = get_task(task)
    return sample_dir() / spec.folder / (spec.dev_file if split == "dev" else spec.train_file)


def sample_records(task: str, split: str = "dev") -> list:
    """The records of a sample file, as the task reads them."""
    return get_task(task).load(sample_file(task, split))


def json_records(task: str, split: str = "dev") -> list:
    return json.loads(sample_file(task, split).read_text(encoding="utf-8"))


def invoke(*args: str, expect: int = 0):
    """The CLI, quiet, with its exceptions raised; its exit code must be `expect`."""
    result = CliRunner().invoke(main, ["--quiet", *args], catch_exceptions=False)
    assert result.exit_code == expect, result.output
    return result


def cli(*args: str):
    """The CLI as a user runs it; returns (exit code, stdout + stderr)."""
    result = CliRunner().invoke(main, ["--quiet", *map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return result.exit_code, result.output


def refused(*args: str) -> str:
    """Run the CLI and check it ends in one 'Error:' line, not a traceback or a number; return that line."""
    code, output = cli(*args)
    assert code != 0, output
    assert "Traceback" not in output
    errors = [line for line in output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, output
    return errors[0]


# Every model of every task, and settings that keep their fits on the sample quick where the behaviour under test
# does not depend on them (test_sklearn_interop, test_normalization).
MODELS = [(task.code, name) for task in all_tasks() for name in task.models]
QUICK = {("ner", "crf"): {"max_iterations": 20, "neighbours": 0}, ("dp", "mst"): {"epochs": 2},
         ("dp", "mst-kiwi"): {"epochs": 2}, ("mrc", "span-ranker"): {"neighbours": 0, "max_iter": 50},
         ("sts", "features-gbr"): {"max_iter": 50, "svd_components": 20}, ("wos", "rules-lr"): {"none_threshold": 0.7}}


def sample_resources(code: str) -> dict:
    """The task's resources from the sample (RE's relation list, WoS's ontology)."""
    spec = get_task(code)
    return spec.load_resources({extra: sample_dir() / spec.folder / extra for extra in spec.extra_files})


def quick_model(code: str, name: str):
    """Model `name` of task `code`, unfitted, seed 0, with the QUICK settings."""
    model = get_task(code).models[name].build(0, sample_resources(code))
    return model.set_params(**QUICK.get((code, name), {}))
