"""`bench peers`: the peers' inputs, their runs on the shipped sample scored with our scorer, and the refusals."""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from baselines import api

from baselines.bench import peers

from baselines.runner import tables
from baselines.errors import UsageError
from baselines.runner.registry import get_task
from baselines.taskspec import PEER_SEPARATOR
from baselines.tasks.nli import NliExample
from helpers import FLOOR_MARGINS, assert_beats_the_floor, sample_records, sample_resources, scored


def test_the_hold_out_is_a_seeded_tenth_apart_from_the_rest():
    records = [object()] * 300
    inner, held = peers.hold_out(get_task("ynat"), records, seed=3)
    assert len(held) == 30 and not set(inner) & set(held) and len(inner) + len(held) == 300
    assert list(held) == list(peers.hold_out(get_task("ynat"), records, seed=3)[1]) != list(
        peers.hold_out(get_task("ynat"), records, seed=4)[1])


def test_the_hold_out_keeps_a_premise_with_all_its_hypotheses():
    # A premise's three hypotheses on both sides would teach a peer the labels its held-out one does not have.
    train = sample_records("nli", "train")
    inner, held = peers.hold_out(get_task("nli"), train, seed=0)
    assert len(held) and not {train[i].premise for i in inner} & {train[i].premise for i in held}


def test_the_plain_crf_sees_characters_their_neighbours_and_three_flags():
    rows = peers.character_features("서울 7a")
    assert [row["c"] for row in rows] == list("서울 7a")
    assert rows[0]["c-2"] == "^" and rows[-1]["c+2"] == "$" and rows[1]["b-1"] == "서울"
    assert [(row["digit"], row["latin"], row["hangul"]) for row in rows] == [
        (False, False, True), (False, False, True), (False, False, False), (True, False, False), (False, True, False)]


def test_udpipe_reads_the_data_s_tags_as_upos():
    records = sample_records("dp", "dev")[:2]
    text = peers.udpipe_conllu(records, get_task("dp").modelling.targets(records))
    first = next(line.split("\t") for line in text.splitlines() if line and not line.startswith("#"))
    word = records[0].words[0]
    assert len(first) == 10 and first[3] == first[4] == word.pos and first[6] == str(word.head)
    assert text.count("# sent_id = ") == 2


# Per peer, the points by which it must beat the trivial floor (helpers.FLOOR_MARGINS, the models' own, where it
# does). On the sample (peer; floor): fastText YNAT macro F1 45.35; 3.73. TF-IDF cosine STS F1 49.52; 0.00, Pearson
# 41.99. The plain CRF's entity / character F1 51.42 / 60.37; 0.00 / 6.74. RE's fastText learns little from 300
# sentences (micro F1 5.10; 0.00): its margin says only that it learns. NLI's fastText scores 28.0 on the sample's
# 100 pairs, below the floor's 34.0 (300 training pairs are too few for it): it is held to the floor on generated
# pairs instead (test_the_nli_peer_learns_what_generated_pairs_give_away).
PEER_MARGINS = {**FLOOR_MARGINS, "re": {"micro_f1": 3}, "nli": {}}


def run_peer(code: str, train: list, dev: list) -> tuple[list, dict, dict, dict]:
    """(rows, scores, the floor's scores, the selection's details) of the task's peer trained on `train`."""
    task, resources = get_task(code), sample_resources(code)
    floor = scored(code, "trivial", train, dev)
    _name, select, run = peers.peer_of(code)
    details = select(task, train, 0, peers.Clock(), lambda message: None, resources)
    clock = peers.Clock()
    rows = run(task, train, dev, details["chosen"], 0, clock, resources)
    assert "fit" in clock.seconds and "predict" in clock.seconds and "selection" not in clock.seconds
    return rows, task.scoring.score(dev, rows, resources), floor, details


@pytest.mark.parametrize("code", ["ynat", "sts", "nli", "ner", "re", "dp"])
def test_each_peer_runs_on_the_sample_beats_the_floor_and_is_scored_by_our_scorer(code):
    pytest.importorskip({"ynat": "fasttext", "sts": "sklearn", "nli": "fasttext", "ner": "sklearn_crfsuite",
                         "re": "fasttext", "dp": "ufal.udpipe"}[code])  # the peers extra, in the test extra
    task, resources = get_task(code), sample_resources(code)
    train, dev = sample_records(code, "train"), sample_records(code, "dev")
    rows, metrics, floor, details = run_peer(code, train, dev)
    assert [row["guid"] for row in rows] == [record.guid for record in dev]
    assert all(0 <= metrics[metric] <= 100 for metric in task.scoring.headline)
    assert_beats_the_floor(code, metrics, floor, f"the {code} peer", PEER_MARGINS[code])
    if code in ("ynat", "nli", "re"):
        assert details["chosen"] in peers.FASTTEXT_GRID and len(details["selection"]) == len(peers.FASTTEXT_GRID)
    if code == "re":  # AUPRC reads a probability of every relation
        assert all(set(row["probs"]) == set(resources["relations"]) for row in rows)
    if code == "sts":
        assert details["chosen"]["view"] in peers.TFIDF_VIEWS and all(0 <= row["score"] <= 5 for row in rows)
    if code == "ner":  # characters alone find entities in the sample's dev sentences
        assert metrics["entity_macro_f1"] > 0 and details["chosen"]["c1"] in peers.CRF_C


def planted_inference(count: int, seed: int) -> list[NliExample]:
    """Pairs whose label the hypothesis's own words give away: the premise again (entailment), its negation
    (contradiction), or the premise with a clause added (neutral)."""
    rng = random.Random(seed)
    people, places, acts = ["철수는", "영희는", "민수는", "지우는"], ["서울에서", "부산에서", "학교에서", "공원에서"], [
        "친구를 만났다", "책을 읽었다", "점심을 먹었다", "노래를 불렀다"]
    records = []
    for index in range(count):
        body = f"{rng.choice(people)} 어제 {rng.choice(places)} {rng.choice(acts)}"
        label = ("entailment", "contradiction", "neutral")[index % 3]
        hypothesis = {"entailment": f"{body}.", "contradiction": f"{body[:-1]}지 않았다.",
                      "neutral": f"{body}, 그리고 많은 사람들이 기뻐했다."}[label]
        records.append(NliExample(f"g{seed}-{index}", f"{body}.", hypothesis, label))
    return records


def test_the_nli_peer_learns_what_generated_pairs_give_away():
    pytest.importorskip("fasttext")
    _rows, metrics, floor, _details = run_peer("nli", planted_inference(300, 1), planted_inference(90, 2))
    assert_beats_the_floor("nli", metrics, floor, "the nli peer on generated pairs", {"accuracy": 30})


def test_peers_refuse_the_sample_and_tasks_without_a_peer(tmp_path):
    with pytest.raises(UsageError, match="needs KLUE training and dev files"):
        api.peers("ner", results_dir=tmp_path, log=lambda message: None)
    with pytest.raises(UsageError, match="knows peers for ynat, sts, nli, ner, re, dp, not mrc"):
        api.peers("mrc", results_dir=tmp_path, log=lambda message: None)
    with pytest.raises(UsageError, match="rounds must be a whole number of at least 1, not 0"):
        peers.bench_peers("ynat", rounds=0)
    assert not (tmp_path / "peers.json").exists()


def run_of(name: str, score: float, seconds: float, peak: float) -> dict:
    return {"name": name, "metrics": {"macro_f1": score}, "seconds": {"fit": seconds}, "total_seconds": seconds,
            "peak_rss_mb": peak}


def test_a_system_s_runs_give_its_median_and_spread_and_ratios_are_taken_round_by_round():
    peer = [run_of("fastText", 80.0, seconds, 1000.0) for seconds in (30.0, 20.0, 26.0)]
    ours = [run_of("klue-baselines fast", 82.0, seconds, 700.0) for seconds in (15.0, 12.0, 40.0)]
    row = peers.summary(ours, "ynat")
    assert row["total_seconds"] == {"median": 15.0, "min": 12.0, "max": 40.0, "runs": [15.0, 12.0, 40.0]}
    assert row["seconds"] == {"fit": 15.0} and row["peak_rss_mb"]["median"] == 700.0
    ratios = peers.ratios(get_task("ynat"), ours, peer)
    # 15/30, 12/20, 40/26: the median ratio is 0.6, not the ratio of the medians (15/26)
    assert ratios["seconds"]["median"] == 0.6 and ratios["seconds"]["max"] == 1.538
    assert ratios["peak_rss"]["median"] == 0.7 and ratios["lead"] == {"macro_f1": 2.0}


def test_a_system_that_scores_differently_between_runs_is_refused():
    runs = [run_of("fastText", 80.0, 30.0, 1000.0), run_of("fastText", 80.5, 30.0, 1000.0)]
    with pytest.raises(UsageError, match="scored differently in its runs"):
        peers.summary(runs, "ynat")


def test_fasttext_reads_the_hypothesis_after_the_separator():
    # fastText ends a line at its own '</s>': a peer that joined the pair with it would never see the hypothesis.
    pytest.importorskip("fasttext")
    texts = [f"오늘 날씨가 맑다 {PEER_SEPARATOR} {word}" for word in ("맑다", "흐리다") * 50]
    labels = ["entailment", "contradiction"] * 50
    setting = {"input": "characters", "wordNgrams": 1, "epoch": 25, "lr": 0.5}
    model = peers._fasttext_fit(texts, labels, setting, seed=0)
    assert [row["label"] for row in peers._fasttext_predict(model, texts[:2])] == ["entailment", "contradiction"]


def test_re_marks_its_entities_and_kiwi_keeps_the_marks():
    record = sample_records("re", "dev")[0]
    marked = get_task("re").benchmarks.peer_text(record)
    assert f"<S> {record.subject.word} </S>" in marked and f"<O> {record.object.word} </O>" in marked
    analysed = peers.kiwi_morphemes([marked])[0].split()
    assert analysed.count("<S>") == analysed.count("</S>") == analysed.count("<O>") == 1


def test_the_cosine_map_sends_the_threshold_to_three_within_0_to_5():
    cosines = np.linspace(0, 1, 101)
    scores = np.clip(cosines * 5 + np.random.default_rng(0).normal(0, 0.3, 101), 0, 5)
    mapping = peers.cosine_map(cosines, scores)
    assert peers.mapped_scores(np.array([mapping["threshold"]]), mapping)[0] == pytest.approx(3.0)
    mapped = peers.mapped_scores(cosines, mapping)
    assert mapped.min() >= 0 and mapped.max() <= 5 and 4 < mapping["slope"] < 6


def test_the_peers_table_shows_three_rows_a_task_with_medians_and_ratios(tmp_path):
    peer = [run_of("plain CRF", 74.6, seconds, 450.0) for seconds in (23.0, 25.0, 24.0)]
    default = [run_of("klue-baselines crf", 80.5, seconds, 1215.0) for seconds in (103.5, 100.0, 110.0)]
    fast = [run_of("klue-baselines fast", 79.8, seconds, 900.0) for seconds in (20.0, 22.0, 21.0)]
    task = get_task("ynat")
    report = {"task": "ynat", "rounds": 3,
              "systems": {"peer": peers.summary(peer, "ynat"), "default": peers.summary(default, "ynat"),
                          "fast": peers.summary(fast, "ynat")},
              "ratios": {"default": peers.ratios(task, default, peer), "fast": peers.ratios(task, fast, peer)}}
    (tmp_path / "peers.json").write_text(json.dumps({"tasks": {"ynat": report}}), encoding="utf-8")
    table = tables.peers_table(Path(tmp_path))
    assert "| ynat | peer | plain CRF | 74.60 | 24.0 (23.0-25.0) | 450 | - | - |" in table
    assert "| ynat | ours, default | crf | 80.50 | 103.5 (100.0-110.0) | 1215 | 4.50x (4.00-4.58) | 2.70x |" in table
    assert "| ynat | ours, fast | fast | 79.80 | 21.0 (20.0-22.0) | 900 | 0.88x (0.87-0.88) | 2.00x |" in table
    assert "ran 3 times in turn" in table
    assert tables.peers_table(Path(tmp_path / "none")) is None


def test_the_peers_figure_draws_a_panel_a_task(tmp_path):
    from baselines.runner import plots  # the plots extra is in the test extra: a broken one fails here
    task = get_task("ynat")
    runs = {who: [run_of(name, score, seconds, 500.0) for seconds in (10.0, 12.0, 11.0)]
            for who, name, score in (("peer", "fastText", 80.0), ("default", "klue-baselines tfidf-lr", 83.0),
                                     ("fast", "klue-baselines fast", 82.0))}
    report = {"task": "ynat", "systems": {who: peers.summary(rows, "ynat") for who, rows in runs.items()},
              "ratios": {who: peers.ratios(task, runs[who], runs["peer"]) for who in ("default", "fast")}}
    path = plots.peers_chart([report, {**report, "task": "nli"}], tmp_path / "peers.png")
    assert path.exists() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
