"""compare: paired bootstrap intervals and p-values of B - A, seeded, resampling whole units."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from joblib.externals import loky

from baselines import api

from baselines.metrics import significance

from baselines.errors import UsageError
from baselines.cli import main
from baselines.runner.registry import get_task
from baselines.runtime.parallel import Workers
from baselines.metrics.significance import interval, resampling_units


@pytest.fixture(scope="module")
def ynat_gold():
    dev = api.data_file("ynat", "dev")
    return dev, api.load("ynat", dev)


def perfect(records) -> list[dict]:
    return [{"guid": record.guid, "label": record.label} for record in records]


def with_errors(records, share: float) -> list[dict]:
    """The gold labels, with every k-th one swapped for another topic."""
    labels = sorted({record.label for record in records})
    step = round(1 / share)
    return [{"guid": record.guid, "label": labels[(labels.index(record.label) + 1) % len(labels)]
             if index % step == 0 else record.label} for index, record in enumerate(records)]


def test_identical_predictions_differ_by_exactly_zero(ynat_gold):
    dev, records = ynat_gold
    compared = api.compare("ynat", dev, perfect(records), perfect(records), resamples=200)
    row = compared["metrics"][0]
    assert row["difference"] == row["low"] == row["high"] == 0.0 and row["p_value"] == 1.0


def test_a_planted_gap_is_detected_and_its_size_recovered(ynat_gold):
    dev, records = ynat_gold
    compared = api.compare("ynat", dev, perfect(records), with_errors(records, 0.3), resamples=1000, seed=3)
    row = compared["metrics"][0]
    assert row["a"] == 100.0 and row["difference"] < -20
    assert row["low"] <= row["difference"] <= row["high"] < 0
    assert row["p_value"] < 0.01
    # A gap of one title in a hundred is not significant on a hundred titles.
    small = api.compare("ynat", dev, perfect(records), with_errors(records, 0.01), resamples=1000, seed=3)
    assert small["metrics"][0]["p_value"] > 0.05 and small["metrics"][0]["high"] >= 0


def test_the_seed_fixes_the_interval_for_any_number_of_jobs(ynat_gold):
    dev, records = ynat_gold
    a, b = perfect(records), with_errors(records, 0.2)
    first = api.compare("ynat", dev, a, b, resamples=120, seed=7)
    assert api.compare("ynat", dev, a, b, resamples=120, seed=7, jobs=2) == first
    assert api.compare("ynat", dev, a, b, resamples=120, seed=8) != first


def test_mrc_resamples_whole_passages():
    records = api.load("mrc", api.data_file("mrc", "dev"))
    units = resampling_units(get_task("mrc"), records)
    assert len(units) == len({record.context for record in records}) < len(records)
    assert all(len({records[i].context for i in unit}) == 1 for unit in units)
    assert len(resampling_units(get_task("ner"), api.load("ner", api.data_file("ner", "dev")))) == len(
        api.load("ner", api.data_file("ner", "dev")))


@pytest.mark.parametrize("task", ["ner", "dp", "mrc", "wos", "sts", "re"])
def test_every_kind_of_unit_scores_on_resamples(task):
    dev = api.data_file(task, "dev")
    floor = api.predict(task, api.fit(task, api.data_file(task, "train"), "trivial"), dev)
    compared = api.compare(task, dev, floor, floor, resamples=20)
    assert [row["metric"] for row in compared["metrics"]] == list(get_task(task).headline)
    for row in compared["metrics"]:
        assert row["difference"] in (0.0, None)
        assert row["p_value"] in (1.0, None)


def test_the_interval_leaves_out_undefined_resamples():
    result = interval(np.array([1.0, np.nan, 2.0, 3.0]), 2.0)
    assert result["undefined_resamples"] == 1 and result["low"] >= 1.0 and result["high"] <= 3.0


def test_the_command(tmp_path, ynat_gold):
    dev, records = ynat_gold
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in perfect(records)), encoding="utf-8")
    b.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in with_errors(records, 0.3)),
                 encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(main, ["-q", "compare", "ynat", "--gold", str(dev), "--predictions", str(a),
                                  "--predictions", str(b), "--json"])
    assert result.exit_code == 0, result.output
    compared = json.loads(result.output)
    assert compared["a"] == str(a) and compared["resamples"] == 1000 and compared["metrics"][0]["p_value"] < 0.01
    one = runner.invoke(main, ["-q", "compare", "ynat", "--gold", str(dev), "--predictions", str(a)])
    assert one.exit_code != 0 and "exactly two" in one.output
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"guid": "nobody", "label": "정치"}\n', encoding="utf-8")
    refused = runner.invoke(main, ["-q", "compare", "ynat", "--gold", str(dev), "--predictions", str(a),
                                   "--predictions", str(broken)])
    assert refused.exit_code != 0 and refused.output.startswith("Error:") and "broken.jsonl" in refused.output
    assert len(refused.output.strip().splitlines()) == 1


def test_resamples_are_capped_and_drawn_batch_by_batch_with_the_same_draws(tmp_path):
    rng = np.random.default_rng(5)
    one_at_a_time = [rng.integers(0, 13, size=13) for _ in range(23)]
    for batch in (1, 7, 50):
        batches = list(significance.draw_batches(13, 23, batch, seed=5))
        assert max(len(part) for part in batches) == min(batch, 23)
        assert np.array_equal(np.concatenate(batches), np.array(one_at_a_time))
    dev = api.data_file("ynat", "dev")
    rows = [{"guid": r.guid, "label": r.label} for r in api.load("ynat", dev)]
    with pytest.raises(UsageError, match="resamples must be 1 to 100,000, not 1,000,000,000"):
        api.compare("ynat", dev, rows, rows, resamples=10**9)
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    result = CliRunner().invoke(main, ["-q", "compare", "ynat", "--gold", str(dev), "--predictions", str(predictions),
                                       "--predictions", str(predictions), "--resamples", "1000000000"])
    assert result.exit_code == 2 and "1000<=x<=100000" in result.output.replace(" ", "")


def test_jobs_above_the_cores_are_capped_with_a_warning(tmp_path):
    dev = api.data_file("ynat", "dev")
    rows = [{"guid": r.guid, "label": r.label} for r in api.load("ynat", dev)]
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    result = CliRunner().invoke(main, ["-q", "compare", "ynat", "--gold", str(dev), "--predictions", str(predictions),
                                       "--predictions", str(predictions), "--jobs", "1000"])
    assert result.exit_code == 0, result.output
    cores = loky.cpu_count()
    assert f"Warning: 1000 jobs at once is more than the {cores} cores this process may use: running {cores}" in (
        result.output)
    with pytest.warns(UserWarning, match="1000 jobs at once is more than"):
        assert Workers(1000, "loky").jobs == cores
    assert Workers(cores, "threading").jobs == cores


def test_the_interval_leaves_out_zero_exactly_when_p_is_below_five_percent():
    rng = np.random.default_rng(0)
    agreed = 0
    for resamples in (20, 40, 99, 1000):
        for shift in np.linspace(-0.5, 0.5, 41):
            result = interval(rng.normal(shift, 0.2, size=resamples).round(2), shift)
            excludes_zero = result["low"] > 0 or result["high"] < 0
            assert excludes_zero == (result["p_value"] < 0.05), (resamples, shift, result)
            agreed += excludes_zero
    assert 0 < agreed < 4 * 41  # both outcomes occurred
    assert interval(np.zeros(50), 0.0)["p_value"] == 1.0
    assert interval(np.full(50, 0.3), 0.3)["p_value"] == 0.0


def test_compare_says_where_the_difference_lies(ynat_gold, tmp_path):
    dev, records = ynat_gold
    compared = api.compare("ynat", dev, perfect(records), with_errors(records, 0.2), resamples=1000)
    assert [row["metric"] for row in compared["metrics"]] == ["macro_f1"]
    where = compared["breakdown"]
    assert {row["metric"] for row in where} == {f"class_f1/{r.label}" for r in records}
    sizes = [abs(row["difference"]) for row in where]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > 0
    for row in where:
        assert row["low"] <= row["difference"] <= row["high"]
    one = api.compare("ynat", dev, perfect(records), with_errors(records, 0.2), resamples=1000,
                      metrics=["class_f1/경제"])
    assert one["metrics"] == [] and [row["metric"] for row in one["breakdown"]] == ["class_f1/경제"]
    assert one["breakdown"][0] == next(row for row in where if row["metric"] == "class_f1/경제")


def test_an_unknown_metric_is_one_error_line_that_lists_the_metrics(ynat_gold, tmp_path):
    dev, records = ynat_gold
    a = tmp_path / "a.jsonl"
    a.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in perfect(records)), encoding="utf-8")
    result = CliRunner().invoke(main, ["-q", "compare", "ynat", "--gold", str(dev), "--predictions", str(a),
                                       "--predictions", str(a), "--metric", "accuracy"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "ynat has no metric 'accuracy'" in result.output and "macro_f1" in result.output
    assert "class_f1" in result.output
    seed_help = CliRunner().invoke(main, ["compare", "--help"]).output
    assert "Seed of the bootstrap draws" in seed_help and "models and folds" not in seed_help
