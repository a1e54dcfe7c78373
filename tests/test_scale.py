"""The scale benchmark: distinct copies that keep every record valid, the growth exponent, and a run in child
processes on the official STS files."""
from __future__ import annotations

import json

import pytest

from baselines.data.locate import locate
from baselines.bench import scale

from baselines.errors import UsageError
from baselines.runner import generated_docs, tables
from baselines.runner.registry import all_tasks, get_task
from helpers import invoke, shared_folder


def sample_records(code: str) -> list:
    spec = get_task(code)
    return spec.reading.load(locate(spec).dev)


@pytest.mark.parametrize("code", [spec.code for spec in all_tasks() if spec.reading.distinct_copy is not None])
def test_copies_are_distinct_and_stay_valid(code, monkeypatch):
    spec = get_task(code)
    pool = sample_records(code)
    monkeypatch.setitem(scale.hf.SCHEMAS[code].split_sizes, "train", 3 * len(pool) + 1)
    records, copies = scale.training_set(spec, pool, 1.0, seed=0)
    assert len(records) == 3 * len(pool) + 1 and copies == 3
    assert len({record.guid for record in records}) == len(records)
    # No text of a copy is analysed anywhere else: not in the pool, not in another copy.
    copied = spec.reading.texts(records[len(pool):])
    assert not set(copied) & set(spec.reading.texts(pool))
    assert len(set(copied)) == 2 * len(set(spec.reading.texts(pool))) + len(set(spec.reading.texts(records[-1:])))
    originals = {record.guid: record for record in pool}
    for record in records[len(pool):]:
        if code == "ner":
            assert len(record.tags) == len(record.text) and record.text.startswith("사례")
        elif code == "dp":
            heads = [word.head for word in record.words]
            assert heads.count(0) == 1 and all(0 <= head <= len(heads) for head in heads)
            assert record.text.split()[0] == record.words[0].form
        elif code == "mrc":  # each answer still points at the characters it pointed at in the original
            original = originals[record.guid.rsplit("-copy", 1)[0]]
            for moved, answer in zip(record.answers + record.plausible_answers,
                                     original.answers + original.plausible_answers):
                assert (record.context[moved.start:moved.start + len(moved.text)]
                        == original.context[answer.start:answer.start + len(answer.text)])
        else:
            assert all(turn.text.startswith("사례") for turn in record.turns)
    # A smaller share is the start of a larger one, and the same seed gives the same set.
    half, _copies = scale.training_set(spec, pool, 0.5, seed=0)
    assert [r.guid for r in half] == [r.guid for r in records[:len(half)]]
    assert spec.modelling.targets(records) == spec.modelling.targets(scale.training_set(spec, pool, 1.0, seed=0)[0])


def test_a_task_without_copies_needs_its_full_file(monkeypatch):
    pool = sample_records("ynat")
    with pytest.raises(UsageError, match="give the full official file"):
        scale.training_set(get_task("ynat"), pool, 1.0, seed=0)


def test_the_growth_exponent_is_the_log_log_slope():
    sizes = [1000, 2000, 4000, 8000]
    assert scale.growth_exponent(sizes, [2e-6 * n ** 1.5 for n in sizes]) == pytest.approx(1.5, abs=1e-3)
    assert scale.growth_exponent(sizes[:1], [1.0]) is None


def test_the_sample_is_refused():
    result = invoke("bench", "scale", "ynat", "--sizes", "0.01", expect=1)
    assert "needs KLUE data" in result.output


def test_bench_scale_measures_each_size_in_its_own_process(tmp_path):
    klue = shared_folder("klue", "the KLUE files")
    result = invoke("bench", "scale", "sts", "--sizes", "0.01,0.02", "--data-dir", str(klue), "--results-dir",
                    str(tmp_path))
    assert "time ~ n^" in result.output
    report = json.loads((tmp_path / "scale" / "sts.json").read_text(encoding="utf-8"))
    assert [point["train_records"] for point in report["points"]] == [117, 233]
    assert all(point["seconds"]["fit"] > 0 and point["peak_rss_mb"] > 0 for point in report["points"])
    assert report["command"].startswith("klue-baselines ")
    assert "official_size" not in report  # no point at 1x


def test_the_results_readme_tables_the_official_size_and_its_budget(tmp_path):
    point = {"size": 1.0, "train_records": 21008, "seconds": {"fit": 500.0, "predict": 12.5}, "peak_rss_mb": 4200.0}
    small = dict(point, size=0.5, train_records=10504)
    machine = {"architecture": "x86_64", "cpu": "AMD EPYC", "kiwi_arch": "avx2"}
    for task, model, within in (("ner", "crf", False), ("dp", "mst", True)):
        report = {"task": task, "model": model, "points": [small, point], "fit_exponent": 1.02,
                  "official_size": {"within_budget": within}, **({"machine": machine} if within else {})}
        (tmp_path / "scale").mkdir(exist_ok=True)
        (tmp_path / "scale" / f"{task}.json").write_text(json.dumps(report), encoding="utf-8")
    table = tables.scale_table(tmp_path).splitlines()
    # In task order, NER first; a report from before reports named their machine says so.
    assert table[2] == "| ner | crf | 21008 | 500.0 | 12.5 | 512.5 | 4200 | 1.02 | no | not recorded |"
    assert table[3].startswith("| dp | mst |") and table[3].endswith("| yes | AMD EPYC (x86_64), Kiwi kernels avx2 |")
    assert table[-1] == "Summed fit + predict at the official size: 1025 s (budget 1800 s)."
    generated_docs.regenerate_readme(tmp_path)
    assert "## At the official training size" in (tmp_path / "README.md").read_text(encoding="utf-8")
