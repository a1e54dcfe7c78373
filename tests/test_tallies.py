"""Tallies: every resample scored by one product equals the official scorer on that resample's records."""
from __future__ import annotations

import math

import numpy as np
import pytest

from baselines import api

from baselines.metrics import scoring, significance, tallies
from baselines.runner.registry import TASK_CODES, get_task
from baselines.metrics.significance import draw_batches, resampling_units


def noisy_predictions(task: str, records: list, seed: int) -> list[dict]:
    """The gold answers, a third of them changed, in the task's prediction format."""
    spec, rng = get_task(task), np.random.default_rng(seed)
    resources = api.resources(task)
    rows = []
    for record, gold in zip(records, spec.modelling.targets(records)):
        change = rng.random() < 1 / 3
        row = {"guid": record.guid}
        if task in ("ynat", "nli", "re"):
            labels = sorted({r.label for r in records}) if task != "re" else resources["relations"]
            row["label"] = str(rng.choice(labels)) if change else gold
            if task == "re":
                probs = rng.dirichlet(np.ones(len(labels)))
                # Rounded, so that some scores tie, as the official curve's thresholds must handle.
                row["probs"] = {label: round(float(p) + (label == row["label"]), 2) for label, p in zip(labels, probs)}
        elif task == "sts":
            row["score"] = float(np.clip(gold + rng.normal(0, 1.2), 0, 5)) if change else gold
        elif task == "ner":
            tags = list(gold)
            for position in rng.choice(len(tags), size=max(1, len(tags) // 8)) if change else []:
                tags[position] = str(rng.choice(scoring.NER_TAGS))
            row["tags"] = tags
        elif task == "dp":
            heads, deprels = list(gold[0]), list(gold[1])
            for position in rng.choice(len(heads), size=max(1, len(heads) // 3)) if change else []:
                heads[position] = int(rng.integers(0, len(heads) + 1))
                deprels[position] = str(rng.choice(scoring.DP_LABELS))
            row["heads"], row["deprels"] = heads, deprels
        elif task == "mrc":
            row["answer"] = ("" if gold else record.context[:5]) if change else (gold[0] if gold else "")
        elif task == "wos":
            row["states"] = [state[:-1] if change and state else list(state) for state in gold]
        rows.append(row)
    return rows


@pytest.mark.parametrize("task", TASK_CODES)
def test_a_tally_scores_each_resample_as_the_official_scorer_does(task):
    spec = get_task(task)
    records = api.load(task, api.data_file(task, "dev"))
    resources = api.resources(task)
    predictions = noisy_predictions(task, records, seed=1)
    units = resampling_units(spec, records)
    draws = next(draw_batches(len(units), 6, 6, seed=5))
    tally = spec.scoring.tally(records, predictions, resources)
    record_unit = np.empty(len(records), dtype=int)
    for number, members in enumerate(units):
        record_unit[members] = number
    weights = np.stack([np.bincount(draw, minlength=len(units)) for draw in draws])[:, record_unit]
    assert weights.max() > 1  # some records are drawn more than once
    tallied = tally.resampled(weights)
    assert set(spec.scoring.headline) <= set(tallied)
    metrics = sorted(tallied)
    # The scorer on each resample, its repeated records renamed as compare's unvectorised path does.
    official = significance._resampled_scores(spec, records, (predictions, predictions), units, draws, resources,
                                              metrics)
    for resample, (expected, _same) in enumerate(official):
        for metric, wanted in zip(metrics, expected):
            value = float(tallied[metric][resample])
            assert (math.isnan(value) and math.isnan(wanted)) or value == pytest.approx(wanted, abs=1e-9), \
                (metric, resample, value, wanted)
    whole = tally.resampled(np.ones((1, len(records))))
    observed = spec.scoring.score(records, predictions, resources)
    for metric in spec.scoring.headline:
        assert float(whole[metric][0]) == pytest.approx(observed[metric], abs=1e-9)


@pytest.mark.parametrize("task", ["ynat", "re", "sts"])
def test_compare_gives_the_same_interval_through_tallies_as_through_the_scorer(task, monkeypatch):
    spec = get_task(task)
    dev = api.data_file(task, "dev")
    records = api.load(task, dev)
    a, b = noisy_predictions(task, records, seed=2), noisy_predictions(task, records, seed=3)
    fast = api.compare(task, dev, a, b, resamples=60, seed=4)
    monkeypatch.setattr(significance, "tallies_for", lambda *args: None)
    slow = api.compare(task, dev, a, b, resamples=60, seed=4)
    for fast_row, slow_row in zip(fast["metrics"], slow["metrics"]):
        assert fast_row.keys() == slow_row.keys() and fast_row["metric"] in spec.scoring.headline
        for key, value in fast_row.items():
            assert value == (pytest.approx(slow_row[key], abs=1e-9) if isinstance(value, float) else slow_row[key])


@pytest.mark.parametrize("name, arguments", [
    ("ner", ([["O", "O", "B-PS"]], [["O", "O", "O"]])),  # 12 tags in neither: char F1 counts them 1
    ("ner", ([["O", "O"]], [["O", "O"]])),  # no entity at all: entity F1 undefined
    ("sts", ([1.0, 2.0, 4.0], [3.0, 3.0, 3.0])),  # a constant prediction: Pearson r undefined
    ("sts", ([1.0, 2.0, 2.5], [0.5, 1.0, 2.0])),  # nothing at or above 3: F1 0
    ("ynat", (["정치", "정치"], ["정치", "정치"])),
    ("re", (["no_relation", "per:title", "no_relation"], ["per:title", "per:title", "no_relation"],
            [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.9, 0.1, 0.0]], ["no_relation", "per:title", "org:members"])),
    ("dp", ([[2, 0]], [["NP_SBJ", "VP"]], [[0, 1]], [["NP_SBJ", "X_CMP"]])),
    ("wos", ([[["관광-지역-서울"], []]], [[["관광-지역-부산", "숙소-지역-서울"], []]])),
])
def test_edge_cases_match_the_scorer(name, arguments):
    scorer, tallier = getattr(scoring, f"score_{name}"), getattr(tallies, f"tally_{name}")
    if name == "wos":  # the scorer takes the turns, the tally the dialogues
        expected = scorer([t for d in arguments[0] for t in d], [t for d in arguments[1] for t in d])
    else:
        expected = scorer(*arguments)
    tallied = tallier(*arguments).resampled(np.ones((1, len(arguments[0]))))
    for metric, value in expected.items():
        got = float(tallied[metric][0])
        assert (math.isnan(got) and math.isnan(value)) or got == pytest.approx(value, abs=1e-9), metric
