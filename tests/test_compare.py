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
from baselines.metrics import scoring
from baselines.metrics.significance import interval, resampling_units
from helpers import invoke, sample_file, sample_records, write_lines as write_jsonl


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
    assert [row["metric"] for row in compared["metrics"]] == list(get_task(task).scoring.headline)
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
    alone, among = one["breakdown"][0], next(row for row in where if row["metric"] == "class_f1/경제")
    # Holm corrects for the rows compared: one row alone is not corrected, one of seven is.
    assert {**alone, "p_holm": None} == {**among, "p_holm": None} and alone["p_holm"] == alone["p_value"]
    assert among["p_holm"] >= among["p_value"]


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


def test_holm_adjusts_in_step_down_order_and_keeps_none():
    assert significance.holm([0.01, 0.04, None, 0.03]) == pytest.approx([0.03, 0.06, None, 0.06])
    assert significance.holm([0.5, 0.6]) == [1.0, 1.0]


def test_mcnemar_counts_the_records_one_system_only_gets_right():
    from scipy.stats import binomtest
    wrong_a, wrong_b = [0, 0, 1, 1, 0, 0.5, 0], [1, 0, 0, 1, 1, 0.2, 1]
    test = significance.mcnemar(wrong_a, wrong_b)
    assert (test["only_a_right"], test["only_b_right"]) == (3, 1)
    assert test["p_value"] == pytest.approx(binomtest(1, 4, 0.5).pvalue)
    assert significance.mcnemar([0, 1], [0, 1])["p_value"] == 1.0


def planted_entity_errors() -> tuple[list[dict], dict]:
    """NER predictions that are the gold except for one planted error of each type, and the counts expected."""
    records = sample_records("ner")
    rows = [{"guid": record.guid, "tags": list(record.tags)} for record in records]
    planted = {}
    for index, record in enumerate(records):
        spans = scoring.iob2_entities(record.tags)  # the sample's sentences: tags per character, spaces O
        long = [span for span in spans if span[2] - span[1] >= 3]
        if not long or len(planted) == 5:
            continue
        kind, start, end = long[0]
        other = "PS" if kind != "PS" else "OG"
        tags = rows[index]["tags"]
        error = ["wrong boundary", "wrong type", "wrong boundary and type", "missed", "spurious"][len(planted)]
        if error == "wrong boundary":
            tags[end - 1] = "O"
        elif error == "wrong type":
            tags[start:end] = [f"B-{other}"] + [f"I-{other}"] * (end - start - 1)
        elif error == "wrong boundary and type":
            tags[start:end - 1] = [f"B-{other}"] + [f"I-{other}"] * (end - start - 2)
            tags[end - 1] = "O"
        elif error == "missed":
            tags[start:end] = ["O"] * (end - start)
        else:
            outside = next(position for position, (tag, char) in enumerate(zip(tags, record.text))
                           if tag == "O" and char != " " and (position == 0 or tags[position - 1] == "O")
                           and position + 1 < len(tags) and tags[position + 1] == "O")
            tags[outside] = "B-DT"
        planted[error] = record.guid
    return rows, planted


def test_compare_on_two_ner_files_gives_entity_scores_error_types_and_tables_a_paper_pastes(tmp_path):
    rows, planted = planted_entity_errors()
    assert len(planted) == 5
    gold_rows = [{"guid": record.guid, "tags": record.tags} for record in sample_records("ner")]
    compared = api.compare("ner", sample_file("ner"), gold_rows, rows, examples=2, log=api.quiet)
    counts = compared["entities"]["b"]["counts"]
    assert {kind: counts[kind] for kind in planted} == dict.fromkeys(planted, 1)
    total = compared["entities"]["a"]["counts"]["correct"]
    assert counts["correct"] == total - 4 and compared["entities"]["a"]["micro"]["f1"] == 100.0
    micro = compared["entities"]["b"]["micro"]
    assert micro["precision"] == pytest.approx(100 * (total - 4) / (total - 1 + 1))
    assert {example["guid"] for kind in planted for example in compared["entities"]["b"]["examples"][kind]} == set(
        planted.values())
    assert len(compared["examples"]["a better"]) == 2 and not compared["examples"]["b better"]
    assert "mcnemar" not in compared  # entities are not right or wrong record by record
    a, b = write_jsonl(tmp_path / "a.jsonl", gold_rows), write_jsonl(tmp_path / "b.jsonl", rows)
    for table_format, sign in (("markdown", "| entity_macro_f1 |"), ("latex", r"\begin{tabular}"),
                               ("csv", "entity_macro_f1,")):
        output = invoke("compare", "ner", "--gold", sample_file("ner"), "--predictions", a, "--predictions", b,
                        "--format", table_format, "--examples", "1").output
        assert sign in output and "wrong boundary and type" in output and "p Holm" in output


def test_compare_of_labels_adds_mcnemar_and_never_prints_zero_for_a_bounded_p(tmp_path):
    records = sample_records("ynat")
    right = [{"guid": record.guid, "label": record.label} for record in records]
    worse = [dict(row, label="경제" if row["label"] != "경제" else "사회") if index % 4 == 0 else row
             for index, row in enumerate(right)]
    compared = api.compare("ynat", sample_file("ynat"), worse, right, log=api.quiet)
    assert compared["mcnemar"] == {"unit": "title", "only_a_right": 0, "only_b_right": 25,
                                   "p_value": pytest.approx(2 * 0.5 ** 25)}
    headline = compared["metrics"][0]
    assert headline["p_value"] == 1 / 1000 and headline["p_value_is_bound"]
    output = invoke("compare", "ynat", "--gold", sample_file("ynat"), "--predictions",
                    write_jsonl(tmp_path / "a.jsonl", worse), "--predictions",
                    write_jsonl(tmp_path / "b.jsonl", right), "--json").output
    assert all(row["p_value"] > 0 for row in json.loads(output)["metrics"] + json.loads(output)["breakdown"]
               if row["p_value"] is not None)
    text = invoke("compare", "ynat", "--gold", sample_file("ynat"), "--predictions", tmp_path / "a.jsonl",
                  "--predictions", tmp_path / "b.jsonl").output
    assert "< 0.0010" in text and "McNemar's exact test (titles right in one system only): A 0, B 25" in text
    assert "No dev-set score of a neural model is published for ynat macro_f1" in text  # test scores stay apart
    assert "81.55" not in text
