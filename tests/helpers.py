"""Test helpers that test modules share, imported as `from helpers import ...` (pytest puts tests/ on the path for
both `pytest` and `python -m pytest`); fixtures are in conftest.py, and no test module imports another."""
from __future__ import annotations

import functools
import json
import math
import os
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from baselines.cli import main
from baselines.data.sources import sample_dir
from baselines.runner.registry import all_tasks, get_task
from baselines.tasks.mrc import MrcAnswer, MrcQuestion

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


def write_lines(path: Path, rows: list) -> Path:
    """Rows as JSON Lines at `path`, which is returned."""
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def sample_file(task: str, split: str = "dev") -> Path:
    """A file of the sample shipped in the package: the task's dev file, or its training file."""
    spec = get_task(task)
    return sample_dir(spec.code) / spec.folder / (spec.dev_file if split == "dev" else spec.train_file)


def sample_records(task: str, split: str = "dev") -> list:
    """The records of a sample file, as the task reads them."""
    return get_task(task).reading.load(sample_file(task, split))


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
MODELS = [(task.code, name) for task in all_tasks() for name in task.modelling.models]
QUICK = {("ner", "crf"): {"max_iterations": 20, "neighbours": 0}, ("dp", "mst"): {"epochs": 2},
         ("dp", "mst-kiwi"): {"epochs": 2}, ("mrc", "span-ranker"): {"neighbours": 0, "max_iter": 50},
         ("sts", "features-gbr"): {"max_iter": 50, "svd_components": 20}, ("wos", "rules-lr"): {"none_threshold": 0.7}}


def sample_resources(code: str) -> dict:
    """The task's resources from the sample (RE's relation list, WoS's ontology)."""
    spec = get_task(code)
    folder = sample_dir(spec.code) / spec.folder
    return spec.resources.load_resources({extra: folder / extra for extra in spec.extra_files})


def quick_model(code: str, name: str):
    """Model `name` of task `code`, unfitted, seed 0, with the QUICK settings."""
    model = get_task(code).modelling.models[name].build(0, sample_resources(code))
    return model.set_params(**QUICK.get((code, name), {}))


def fitted_on_sample(code: str, name: str, **params):
    """Model `name` of task `code` with `params` over its defaults, fitted on the sample's training file."""
    spec = get_task(code)
    records = spec.reading.load(sample_file(code, "train"))
    return spec.modelling.models[name].build().set_params(**params).fit(records, spec.modelling.targets(records))


# Generated MRC questions whose answers a reader can learn (the sample's 100 questions are too few to show it).
NAMES = ["김철수", "이영희", "박민수", "최지우", "정하늘", "강다은", "윤서준", "한지민"]
CITIES = ["서울", "부산", "대구", "광주", "대전", "울산", "인천", "제주"]
JOBS = ["교사", "의사", "화가", "기자", "판사", "작가"]


def planted_questions(count: int, seed: int) -> list[MrcQuestion]:
    """Who was born where: the answer is the city next to the asked person's name; a question about
    someone absent from the passage has no answer."""
    rng = random.Random(seed)
    records = []
    for index in range(count):
        first, second, absent = rng.sample(NAMES, 3)
        city, other_city = rng.sample(CITIES, 2)
        job = rng.choice(JOBS)
        context = (f"{first}는 {rng.randint(1950, 2000)}년에 {city}에서 태어났다. "
                   f"{second}는 {other_city}에서 {job}로 일했다. 두 사람은 오랜 친구이다.")
        if index % 3 == 2:
            records.append(MrcQuestion(f"p{seed}-{index}", f"{absent}가 태어난 도시는 어디인가?", context,
                                       is_impossible=True))
        else:
            start = context.index(city)
            records.append(MrcQuestion(f"p{seed}-{index}", f"{first}가 태어난 도시는 어디인가?", context,
                                       answers=[MrcAnswer(city, start)]))
    return records


# Per task, each metric compared and the points by which a model must beat the trivial floor there: about half of
# what the weaker of the default and the fast model gains on the sample. Measured on the sample's dev file (floor;
# default, fast): YNAT macro F1 3.73; 58.46, 55.77. STS F1 0.00; 76.19, 70.13. NLI accuracy 34.0; 53.0, 46.0. NER
# entity / character F1 0.00 / 6.74; 60.43 / 71.14, 53.00 / 65.70. RE micro F1 0.00; 48.70, 46.63. DP UAS / LAS
# (micro) 66.73 / 18.96; 82.53 / 77.88, 81.12 / 76.65. WoS JGA / slot F1 1.93 / 1.93; 22.38 / 85.11, 26.24 / 84.50.
# MRC on 60 generated questions (a third unanswerable): exact match 33.3 for the floor, which abstains.
FLOOR_MARGINS = {"ynat": {"macro_f1": 25}, "sts": {"f1": 35}, "nli": {"accuracy": 6},
                 "ner": {"entity_macro_f1": 25, "char_macro_f1": 25}, "re": {"micro_f1": 20},
                 "dp": {"uas_micro_f1": 7, "las_micro_f1": 30}, "mrc": {"exact_match": 30},
                 "wos": {"joint_goal_accuracy": 10, "slot_f1": 40}}
# Metrics that the floor leaves undefined (a constant has no correlation): a model must reach this much.
AT_LEAST = {"sts": {"pearsonr": 30}}
# RE's AUPRC is left out: the floor's class prior scores 51.67 on the sample, and the models 51.74 (default) and
# 50.32 (fast) on its 100 sentences, too few relations of each class to tell them apart.


def assert_beats_the_floor(code: str, scores: dict, floor: dict, who: str, margins: dict | None = None) -> None:
    """`scores` beat the trivial floor's by each metric's margin (FLOOR_MARGINS[code], or `margins`), and reach
    AT_LEAST where the floor has no score."""
    for metric, margin in (FLOOR_MARGINS[code] if margins is None else margins).items():
        assert scores[metric] >= floor[metric] + margin, (f"{who} scores {metric} {scores[metric]:.2f}, less than "
                                                          f"{margin} above the floor's {floor[metric]:.2f}")
    for metric, least in AT_LEAST.get(code, {}).items():
        assert not math.isnan(scores[metric]) and scores[metric] >= least, (who, metric, scores[metric])


def scored(code: str, name: str, train: list, dev: list) -> dict:
    """The scores on `dev` of model `name` of task `code` (seed 0, the sample's resources) fitted on `train`."""
    task, resources = get_task(code), sample_resources(code)
    model = task.modelling.models[name].build(0, resources).fit(train, task.modelling.targets(train))
    return task.scoring.score(dev, task.modelling.predict(model, dev), resources)


@functools.lru_cache(maxsize=None)
def sample_floor(code: str) -> dict:
    """The trivial floor's scores on the sample's dev file, fitted on its training file."""
    return scored(code, "trivial", sample_records(code, "train"), sample_records(code, "dev"))


def beats_the_sample_floor(code: str, metric: str, score: float) -> bool:
    """`score` is FLOOR_MARGINS' margin above the trivial floor's on the sample's dev file."""
    return score >= sample_floor(code)[metric] + FLOOR_MARGINS[code][metric]
