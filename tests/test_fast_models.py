"""Each task's fast setting (`--model fast`): what it reads, and that the four that need no Kiwi run none."""
from __future__ import annotations

import pytest

from baselines import api
from baselines.runner.registry import TASK_CODES, get_task
from baselines.tasks import nli, re as relation
from features.analysis import MorphemeAnalyzer
from helpers import sample_records


def test_every_task_has_a_fast_model_and_keeps_its_most_accurate_as_the_default():
    for code in TASK_CODES:
        task = get_task(code)
        assert "fast" in task.modelling.models and task.modelling.default_model != "fast", code


@pytest.mark.parametrize("code", ["ynat", "sts", "nli", "re"])
def test_the_fast_models_without_kiwi_never_call_it(code, monkeypatch):
    def refuse(self, texts):
        raise AssertionError("the fast model asked Kiwi for an analysis")

    monkeypatch.setattr(MorphemeAnalyzer, "analyze", refuse)
    task = get_task(code)
    train, dev = sample_records(code, "train"), sample_records(code, "dev")
    model = task.modelling.models["fast"].build(0, task.resources.load_resources({}))
    assert not model.uses_morpheme_analysis()
    rows = task.modelling.predict(model.fit(train, task.modelling.targets(train)), dev)
    scores = task.scoring.score(dev, rows, task.resources.load_resources({}))
    assert all(0 <= scores[metric] <= 100 for metric in task.scoring.headline if scores[metric] == scores[metric])


def test_nli_s_character_cross_features_say_what_the_hypothesis_adds_and_drops():
    features = nli.character_cross("비가 온다", "비가 안 온다")
    assert features["added= 안"] == features["added=안 "] == 1.0 and "dropped= 비" not in features
    assert features["kept_of_premise"] == 1.0 and 0 < features["kept_of_hypothesis"] < 1


def test_re_s_eojeol_features_read_the_gap_the_particles_and_the_neighbours():
    record = relation.ReExample("g", "이순신 장군은 조선의 무신이다", relation.Entity("이순신", 0, 2, "PER"),
                                relation.Entity("조선", 8, 9, "LOC"), "per:origin")
    features = relation.eojeol_pair_features(record, window=1)
    assert features["between=장군은"] == 1.0 and features["between_all=장군은|PER>LOC"] == 1.0
    assert features["subject_after=|PER>LOC"] == features["object_after=의|PER>LOC"] == 1.0  # 이순신 stands alone
    assert features["object_left1=장군은"] == features["object_right1=무신이다"] == 1.0  # not its own particle 의
    assert features["order=so|PER>LOC"] == 1.0 and "subject_left1=" not in "".join(features)


def test_the_compact_ner_features_leave_out_what_they_say():
    from features.analysis import analyze
    from baselines.tasks.ner import COMPACT_LEFT_OUT, character_features
    text = "이순신 장군은 1545년에 태어났다"
    full, compact = (character_features(text, analyze([text])[0], compact=flag) for flag in (False, True))
    assert all(set(row) & COMPACT_LEFT_OUT for row in full[1:-1])
    assert not any(set(row) & COMPACT_LEFT_OUT for row in compact)
    assert [{k: v for k, v in row.items() if k not in COMPACT_LEFT_OUT} for row in full] == compact


def test_the_fast_model_is_one_name_for_every_task_from_the_api():
    model = api.make_model("ynat", "fast")
    assert model.get_params()["morpheme_ngrams"] is None and model.get_params()["neighbours"] == 0
    assert api.make_model("ner", "fast").get_params()["algorithm"] == "pa"
