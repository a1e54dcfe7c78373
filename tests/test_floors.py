"""Every model of every task, default and fast, and every peer of `bench peers`, beats the trivial floor by a margin
stated here: on the shipped sample, or where the sample is too small to show it, on generated data whose answers
are learnable. A model that predicts a constant fails these tests."""
from __future__ import annotations

import pytest

from baselines.runner.registry import TASK_CODES, get_task
from helpers import AT_LEAST, FLOOR_MARGINS, assert_beats_the_floor, planted_questions, sample_records, scored


def train_and_dev(code: str) -> tuple[list, list]:
    if code == "mrc":  # the sample's 100 questions: the reader's exact match is the floor's (26 and 27)
        return planted_questions(90, seed=1), planted_questions(60, seed=2)
    return sample_records(code, "train"), sample_records(code, "dev")


@pytest.fixture(scope="module")
def floors() -> dict:
    """Each task's trivial floor, scored on what the models are scored on."""
    return {code: scored(code, "trivial", *train_and_dev(code)) for code in TASK_CODES}


@pytest.mark.parametrize("code, name", [(code, name) for code in TASK_CODES
                                         for name in (get_task(code).modelling.default_model, "fast")])
def test_the_default_and_the_fast_model_beat_the_floor(floors, code, name):
    assert_beats_the_floor(code, scored(code, name, *train_and_dev(code)), floors[code], f"{code} {name}")


def test_no_margin_sits_at_or_below_the_floor_and_every_headline_metric_is_held():
    for code in TASK_CODES:
        held = set(FLOOR_MARGINS[code]) | set(AT_LEAST.get(code, {}))
        left_out = set(get_task(code).scoring.headline) - held
        assert left_out <= {"auprc", "uas_macro_f1", "las_macro_f1", "rouge_w"}, (code, left_out)
        assert all(margin > 0 for margin in FLOOR_MARGINS[code].values())
