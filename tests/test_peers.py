"""`bench peers`: the peers' inputs, their runs on the shipped sample scored with our scorer, and the refusals."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from baselines import api

from baselines.bench import peers

from baselines.runner import results
from baselines.data.sources import sample_dir
from baselines.errors import UsageError
from baselines.runner.registry import get_task


def sample(code: str, split: str) -> list:
    task = get_task(code)
    return task.load(sample_dir() / task.folder / (task.train_file if split == "train" else task.dev_file))


def test_the_hold_out_is_a_seeded_tenth_apart_from_the_rest():
    inner, held = peers.hold_out(300, seed=3)
    assert len(held) == 30 and not set(inner) & set(held) and len(inner) + len(held) == 300
    assert list(held) == list(peers.hold_out(300, seed=3)[1]) != list(peers.hold_out(300, seed=4)[1])


def test_the_plain_crf_sees_characters_their_neighbours_and_three_flags():
    rows = peers.character_features("서울 7a")
    assert [row["c"] for row in rows] == list("서울 7a")
    assert rows[0]["c-2"] == "^" and rows[-1]["c+2"] == "$" and rows[1]["b-1"] == "서울"
    assert [(row["digit"], row["latin"], row["hangul"]) for row in rows] == [
        (False, False, True), (False, False, True), (False, False, False), (True, False, False), (False, True, False)]


def test_udpipe_reads_the_data_s_tags_as_upos():
    records = sample("dp", "dev")[:2]
    text = peers.udpipe_conllu(records, get_task("dp").targets(records))
    first = next(line.split("\t") for line in text.splitlines() if line and not line.startswith("#"))
    word = records[0].words[0]
    assert len(first) == 10 and first[3] == first[4] == word.pos and first[6] == str(word.head)
    assert text.count("# sent_id = ") == 2


@pytest.mark.parametrize("code", ["ynat", "ner", "dp"])
def test_each_peer_runs_on_the_sample_and_is_scored_by_our_scorer(code):
    pytest.importorskip({"ynat": "fasttext", "ner": "sklearn_crfsuite", "dp": "ufal.udpipe"}[code])
    task = get_task(code)
    train, dev = sample(code, "train"), sample(code, "dev")
    _name, select, run = peers.PEERS[code]
    details = select(task, train, 0, peers.Clock(), lambda message: None)
    clock = peers.Clock()
    rows = run(task, train, dev, details["chosen"], 0, clock)
    assert [row["guid"] for row in rows] == [record.guid for record in dev]
    metrics = task.score(dev, rows, {})
    assert all(0 <= metrics[metric] <= 100 for metric in task.headline)
    assert "fit" in clock.seconds and "predict" in clock.seconds and "selection" not in clock.seconds
    if code == "ynat":
        assert details["chosen"] in peers.FASTTEXT_GRID and len(details["selection"]) == len(peers.FASTTEXT_GRID)
    if code == "ner":  # characters alone find entities in the sample's dev sentences
        assert metrics["entity_macro_f1"] > 0 and details["chosen"]["c1"] in peers.CRF_C


def test_peers_refuse_the_sample_and_tasks_without_a_peer(tmp_path):
    with pytest.raises(UsageError, match="needs KLUE training and dev files"):
        api.peers("ner", results_dir=tmp_path, log=lambda message: None)
    with pytest.raises(UsageError, match="knows peers for ynat, ner, dp"):
        api.peers("sts", results_dir=tmp_path, log=lambda message: None)
    assert not (tmp_path / "peers.json").exists()


def test_the_peers_table_shows_scores_seconds_memory_and_ratios(tmp_path):
    report = {"task": "ner", "ratios": {"seconds": 4.5, "peak_rss": 2.7, "lead": {}},
              "peer": {"name": "plain CRF", "metrics": {"entity_macro_f1": 74.6, "char_macro_f1": 81.5},
                       "total_seconds": 23.0, "peak_rss_mb": 450.0},
              "ours": {"name": "klue-baselines crf", "metrics": {"entity_macro_f1": 80.5, "char_macro_f1": 86.3},
                       "total_seconds": 103.5, "peak_rss_mb": 1215.0}}
    (tmp_path / "peers.json").write_text(json.dumps({"tasks": {"ner": report}}), encoding="utf-8")
    table = results.peers_table(Path(tmp_path))
    assert "| ner | plain CRF | 74.60 / 81.50 | 23.0 | 450 | 80.50 / 86.30 | 103.5 | 1215 | 4.50x | 2.70x |" in table
    assert results.peers_table(Path(tmp_path / "none")) is None
