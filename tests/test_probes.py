"""`probe`: each task's partial-input baselines between its two anchors, and an artifact planted in generated data
that the probes find (and do not find where it is absent)."""
from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from baselines import api
from baselines.runner import probes
from baselines.runner.registry import all_tasks, get_task
from baselines.taskspec import Probe
from helpers import invoke, sample_records

PROBED = [spec.code for spec in all_tasks() if spec.benchmarks is not None and spec.benchmarks.probes]


def test_the_text_classification_tasks_have_probes():
    assert {"ynat", "nli", "sts", "re", "dp"} <= set(PROBED)


@pytest.mark.parametrize("code", PROBED)
def test_the_anchors_are_the_default_model_and_the_floor_and_every_probe_keeps_the_gold(code):
    """The whole-input row scores what `evaluate` gives the default model, the nothing row what it gives the trivial
    floor, to the digit (same files, seed and scoring); each probe keeps every record's guid and target, and the
    gap shares are computed from the rows' own scores."""
    report, path = api.probe(code, log=api.quiet)
    assert path is None  # the shipped sample is recorded only where a results folder is given
    rows = report["probes"]
    assert [row["probe"] for row in rows] == [p.name for p in probes.probes_of(get_task(code))]
    assert rows[0]["headline"] == api.evaluate(code, log=api.quiet)["headline"]
    assert rows[-1]["headline"] == api.evaluate(code, "trivial", log=api.quiet)["headline"]
    assert rows[0]["model"] == get_task(code).modelling.default_model and rows[-1]["model"] == "trivial"
    for row in rows:
        for metric, share in row["gap_closed"].items():
            expected = probes.gap_closed(row["headline"][metric], rows[-1]["headline"][metric],
                                         rows[0]["headline"][metric])
            assert share == expected
    spec = get_task(code)
    records = sample_records(code, "train")
    for probe in spec.benchmarks.probes:
        shown = probe.shown(records)
        assert [r.guid for r in shown] == [r.guid for r in records]
        assert spec.modelling.targets(shown) == spec.modelling.targets(records)
        assert shown != records, f"{probe.name} hides nothing"


def test_gap_closed_counts_from_the_floor_and_from_zero_where_the_floor_is_undefined():
    assert probes.gap_closed(60.0, 40.0, 80.0) == 0.5
    assert probes.gap_closed(30.0, 40.0, 80.0) == -0.25
    assert probes.gap_closed(40.0, None, 80.0) == 0.5  # Pearson's r of a constant: no correlation
    assert probes.gap_closed(50.0, 50.0, 50.0) is None
    assert probes.gap_closed(24.07, 51.67, 45.10) is None  # the whole input below the floor: no gap to close
    assert probes.gap_closed(None, 40.0, 80.0) is None


def test_a_probe_that_changes_the_gold_is_refused():
    spec = get_task("nli")
    relabelled = Probe("relabelled", "the labels changed", lambda records: [replace(r, label="neutral")
                                                                            for r in records])
    with pytest.raises(ValueError, match="changed the records' guids, order or labels"):
        probes.checked_shown(spec, relabelled)(sample_records("nli", "train"))


def test_the_command_prints_the_table_and_records_it_where_asked(tmp_path):
    result = invoke("probe", "ynat", "--results-dir", str(tmp_path))
    lines = result.output.splitlines()
    assert lines[0].split()[:2] == ["probe", "sees"] and "gap closed (macro_f1)" in lines[0]
    assert [line.split("  ")[0] for line in lines[1:6]] == ["whole input", "first characters", "last characters",
                                                            "title length", "nothing"]
    recorded = json.loads((tmp_path / "probes" / "ynat.json").read_text(encoding="utf-8"))
    assert recorded["command"].startswith("klue-baselines ")  # the command line as typed (here, pytest's)
    assert recorded["probes"][0]["probe"] == "whole input" and "git_commit" in recorded["code"]
    assert f"written to {tmp_path / 'probes' / 'ynat.json'}" in result.output


def _generated_nli(tmp_path, planted: bool) -> tuple:
    """Train and dev files of two labels that only the pair tells apart: a hypothesis is its own premise copied
    (entailment) or another record's premise (neutral), so every sentence stands as a hypothesis under both
    labels. With `planted`, a word that gives the label away ends each hypothesis."""
    pool = list(dict.fromkeys(r.premise for split in ("train", "dev") for r in sample_records("nli", split)))
    pool += list(dict.fromkeys(r.hypothesis for split in ("train", "dev") for r in sample_records("nli", split)))
    pool = list(dict.fromkeys(pool))
    rng = random.Random(7)
    rng.shuffle(pool)
    files = []
    for split, sentences in (("train", pool[:240]), ("dev", pool[240:360])):
        rows = []
        for index, premise in enumerate(sentences):
            entailed = index % 2 == 0
            hypothesis = premise if entailed else sentences[(index + 1) % len(sentences)]
            if planted:
                hypothesis = f"{hypothesis} {'정말' if entailed else '아마'}"
            rows.append({"guid": f"klue-nli-v1_{split}_{index:05d}", "genre": "generated", "premise": premise,
                         "hypothesis": hypothesis, "gold_label": "entailment" if entailed else "neutral"})
        path = tmp_path / f"{split}.json"
        path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
        files.append(path)
    return tuple(files)


@pytest.mark.parametrize("planted", [True, False])
def test_a_label_word_planted_in_the_hypotheses_is_found_by_the_hypothesis_only_probe(tmp_path, planted):
    train, dev = _generated_nli(tmp_path, planted)
    report, _path = api.probe("nli", train=train, dev=dev, results_dir=tmp_path / "results", log=api.quiet)
    rows = {row["probe"]: row for row in report["probes"]}
    assert rows["whole input"]["headline"]["accuracy"] >= 90  # the pair tells the labels apart
    assert rows["nothing"]["headline"]["accuracy"] == 50
    share = rows["hypothesis only"]["gap_closed"]["accuracy"]
    if planted:
        assert share >= 0.9, rows["hypothesis only"]
    else:
        assert share <= 0.3, rows["hypothesis only"]


def test_the_probes_see_what_they_say(tmp_path):
    ynat = get_task("ynat")
    record = sample_records("ynat")[0]
    by_name = {probe.name: probe for probe in ynat.benchmarks.probes}
    assert by_name["first characters"].shown([record])[0].title == record.title[:4]
    assert by_name["last characters"].shown([record])[0].title == record.title[-4:]
    assert by_name["title length"].shown([record])[0].title == f"{len(record.title)}자"
    re_record = sample_records("re")[0]
    pair = {probe.name: probe for probe in get_task("re").benchmarks.probes}["entity pair only"].shown([re_record])[0]
    assert pair.sentence == f"{re_record.subject.word} {re_record.object.word}"
    assert pair.sentence[pair.subject.start:pair.subject.end + 1] == re_record.subject.word
    assert pair.sentence[pair.object.start:pair.object.end + 1] == re_record.object.word
    assert (pair.subject.type, pair.object.type) == (re_record.subject.type, re_record.object.type)
    dp_record = sample_records("dp")[0]
    tags = {probe.name: probe for probe in get_task("dp").benchmarks.probes}["tags only"].shown([dp_record])[0]
    assert [word.pos for word in tags.words] == [word.pos for word in dp_record.words]
    assert {word.form for word in tags.words} == {"문장"} and tags.text == " ".join(["문장"] * len(tags.words))
    assert [len(word.lemma.split()) for word in tags.words] == [len(word.lemma.split()) for word in dp_record.words]
