"""Bad, careless and hostile data and prediction files: each gets one `Error:` line that names the file, the
record and what was expected (or a warning that says what was repaired), never a traceback."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from baselines import api
from baselines.data.fileio import DataError, write_json_atomic
from baselines.data.sources import sample_dir
from baselines.models.estimators import TrainingDataError
from features.analysis import MorphemeAnalyzer

from helpers import cli, json_records, refused, sample_file, write_lines


def test_gold_without_labels_is_an_error_for_wos(tmp_path):
    dialogues = json_records("wos")
    for dialogue in dialogues:
        for turn in dialogue["dialogue"]:
            turn.pop("state", None)
    gold = tmp_path / "wos-dev.json"
    write_json_atomic(gold, dialogues)
    predictions = write_lines(tmp_path / "p.jsonl", [{"guid": d["guid"], "states": []} for d in dialogues])
    error = refused("score", "wos", "--gold", gold, "--predictions", predictions)
    assert str(gold) in error and dialogues[0]["guid"] in error and "no gold label" in error
    # The same file as a dev file for `run` is refused before anything is trained or recorded.
    (tmp_path / "ontology.json").write_bytes((sample_dir("wos") / "wos-v1.1" / "ontology.json").read_bytes())
    error = refused("run", "wos", "--dev", gold, "--cv", "2", "--results-dir", tmp_path / "r")
    assert "no gold label" in error and not (tmp_path / "r" / "wos.json").exists()


def test_duplicate_guids_in_gold_and_in_predictions(tmp_path):
    records = json_records("ynat")
    gold = tmp_path / "gold.json"
    write_json_atomic(gold, records + records[:1])
    rows = [{"guid": r["guid"], "label": r["label"]} for r in records]
    predictions = write_lines(tmp_path / "p.jsonl", rows)
    error = refused("score", "ynat", "--gold", gold, "--predictions", predictions)
    assert str(gold) in error and records[0]["guid"] in error and "more than once" in error

    twice = write_lines(tmp_path / "twice.jsonl", rows + [{"guid": records[3]["guid"], "label": "경제"}])
    error = refused("score", "ynat", "--gold", sample_file("ynat"), "--predictions", twice)
    assert str(twice) in error and records[3]["guid"] in error and "more than one prediction" in error


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", '"4.5"', "true", "null"])
def test_sts_scores_must_be_finite_numbers(tmp_path, value):
    records = json_records("sts")
    lines = [json.dumps({"guid": r["guid"], "score": 3.0}) for r in records]
    lines[2] = '{"guid": "%s", "score": %s}' % (records[2]["guid"], value)
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    error = refused("score", "sts", "--gold", sample_file("sts"), "--predictions", predictions)
    assert records[2]["guid"] in error and "finite number" in error


def test_sts_scores_outside_the_scale_warn_and_are_scored_as_given(tmp_path):
    records = json_records("sts")
    rows = [{"guid": r["guid"], "score": r["labels"]["real-label"] * 2 - 1} for r in records]
    predictions = write_lines(tmp_path / "p.jsonl", rows)
    code, output = cli("score", "sts", "--gold", sample_file("sts"), "--predictions", predictions)
    assert code == 0, output
    assert "Warning:" in output and "outside 0-5" in output
    # A linear map of gold keeps Pearson r at 100: the values were used as given, not clipped.
    assert re.search(r"^pearsonr +100\.00$", output, re.MULTILINE)


def test_sts_pearson_of_a_constant_prediction_prints_as_undefined(tmp_path):
    records = json_records("sts")
    predictions = write_lines(tmp_path / "p.jsonl", [{"guid": r["guid"], "score": 2.5} for r in records])
    code, output = cli("score", "sts", "--gold", sample_file("sts"), "--predictions", predictions)
    assert code == 0 and "n/a" in output
    code, output = cli("score", "sts", "--gold", sample_file("sts"), "--predictions", predictions, "--json")
    assert json.loads(output)["metrics"]["pearsonr"] is None


@pytest.mark.parametrize("probs, message", [
    ({"no_relation": float("nan")}, "finite numbers >= 0"),
    ({"no_relation": -0.1}, "finite numbers >= 0"),
    ({"no_relation": "high"}, "finite numbers >= 0"),
    ({"per:nonsense": 0.5}, "not in relation_list.json"),
])
def test_re_probabilities_are_checked(tmp_path, probs, message):
    records = json_records("re")
    rows = [{"guid": r["guid"], "label": "no_relation", "probs": {"no_relation": 1.0}} for r in records]
    rows[1]["probs"] = probs
    predictions = tmp_path / "p.jsonl"
    # json.dumps writes NaN as the bare token NaN, which Python's json reads back: the hostile case.
    predictions.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    error = refused("score", "re", "--gold", sample_file("re"), "--predictions", predictions)
    assert records[1]["guid"] in error and message in error


def test_mrc_belief_must_be_a_finite_number_or_null(tmp_path):
    gold = sample_file("mrc")
    guids = [q["guid"] for d in json.loads(gold.read_text(encoding="utf-8"))["data"]
             for p in d["paragraphs"] for q in p["qas"]]
    rows = [{"guid": g, "answer": "", "best_span": "", "belief": None} for g in guids]
    rows[0]["belief"] = float("inf")
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    error = refused("score", "mrc", "--gold", gold, "--predictions", predictions)
    assert guids[0] in error and "'belief'" in error


def test_an_mrc_n_best_list_must_be_a_list_of_strings(tmp_path):
    gold = sample_file("mrc")
    guids = [q["guid"] for d in json.loads(gold.read_text(encoding="utf-8"))["data"]
             for p in d["paragraphs"] for q in p["qas"]]
    rows = [{"guid": g, "answer": "", "best_span": "", "belief": None, "n_best": []} for g in guids]
    rows[1]["n_best"] = "서울"  # a string is not a list of spans
    rows[2]["n_best"] = ["서울", 3]
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    error = refused("score", "mrc", "--gold", gold, "--predictions", predictions)
    assert "2 predictions" in error and guids[1] in error and guids[2] in error and "'n_best'" in error


def test_ner_drops_only_u0020_spaces():
    from baselines.tasks import ner

    record = ner.NerSentence("s1", "가\u3000나 다", ["B-PS", "O", "I-PS", "O", "B-LC"])
    # One tag per character but the U+0020 space: the ideographic space is a character and is scored.
    assert ner._scored_tags(record, ["B-PS", "O", "O", "B-LC"]) == ["B-PS", "O", "O", "B-LC"]
    with pytest.raises(Exception, match="has 3 tags"):
        ner._scored_tags(record, ["B-PS", "O", "B-LC"])
    assert ner._scored_tags(record, record.tags) == ["B-PS", "O", "I-PS", "B-LC"]


def test_an_re_training_label_outside_the_relation_list_is_an_error(tmp_path):
    rows = json_records("re", "train")
    rows[3]["label"] = "per:favourite_food"
    train = tmp_path / "re-train.json"
    write_json_atomic(train, rows)
    for command in (["train", "re", "--train", train, "--out", tmp_path / "re.model"],
                    ["run", "re", "--train", train, "--dev", sample_file("re"), "--results-dir", tmp_path]):
        error = refused(*command)
        assert f"{train}: guid {rows[3]['guid']}: label 'per:favourite_food' is not in relation_list.json" in error
    assert not (tmp_path / "re.model").exists()


def test_a_wos_gold_slot_outside_the_ontology_is_an_error_but_a_new_value_is_not(tmp_path):
    shutil.copy(sample_file("wos").parent / "ontology.json", tmp_path / "ontology.json")
    dialogues = json_records("wos")
    user_turns = [turn for turn in dialogues[1]["dialogue"] if turn["role"] == "user"]
    user_turns[1]["state"] = user_turns[1]["state"] + ["관광-경치 좋은-우리 동네 뒷산"]  # a value of no ontology
    dev = tmp_path / "wos-dev.json"
    write_json_atomic(dev, dialogues)
    code, output = cli("run", "wos", "--model", "trivial", "--train", sample_file("wos", "train"), "--dev", dev,
                       "--results-dir", tmp_path)
    assert code == 0, output
    user_turns[1]["state"].append("관광-최애 음식-김치")
    write_json_atomic(dev, dialogues)
    error = refused("run", "wos", "--model", "trivial", "--train", sample_file("wos", "train"), "--dev", dev,
                    "--results-dir", tmp_path)
    assert f"{dev}: guid {dialogues[1]['guid']}: user turn 2 has slot '관광-최애 음식', which is not in ontology.json" in (
        error)


def test_dp_heads_that_are_not_integers_are_an_error(tmp_path):
    records = api.load("dp", sample_file("dp"))
    gold_rows = [{"guid": r.guid, "heads": [w.head for w in r.words], "deprels": [w.deprel for w in r.words]}
                 for r in records]
    predictions = tmp_path / "dp.jsonl"
    for broken in ({"heads": [str(head) for head in gold_rows[2]["heads"]]}, {"heads": [True] * len(records[2].words)},
                   {"heads": [len(records[2].words) + 1] * len(records[2].words)},
                   {"deprels": [["NP"]] * len(records[2].words)}):
        write_lines(predictions, gold_rows[:2] + [{**gold_rows[2], **broken}] + gold_rows[3:])
        error = refused("score", "dp", "--gold", sample_file("dp"), "--predictions", predictions)
        assert records[2].guid in error and ("eojeol numbers" in error or "outside the KLUE-DP set" in error), error


def test_an_mrc_boolean_written_as_a_string_is_an_error(tmp_path):
    document = json.loads(sample_file("mrc").read_text(encoding="utf-8"))
    question = document["data"][0]["paragraphs"][0]["qas"][0]
    question["is_impossible"] = "false"
    gold = tmp_path / "mrc.json"
    write_json_atomic(gold, document)
    error = refused("run", "mrc", "--model", "trivial", "--dev", gold, "--cv", "2")
    assert f"guid {question['guid']}: 'is_impossible' should be true or false, not 'false'" in error
    row = {"title": "", "context": "가나다", "news_category": "", "source": "s", "guid": "q1", "is_impossible": "false",
           "question_type": 1, "question": "가?", "answers": {"answer_start": [0], "text": ["가"]}}
    with pytest.raises(DataError, match="'is_impossible' should be true or false"):
        api.records_from_hf("mrc", [row])


def test_a_lone_surrogate_is_replaced_with_a_warning_and_the_batch_survives(tmp_path):
    inputs = tmp_path / "titles.jsonl"
    inputs.write_text('{"title": "손흥민 시즌 10호 골"}\n{"title": "깨진 \\ud800 문자"}\n{"title": "\\u0000제어\\u001b문자"}\n',
                      encoding="utf-8")
    output = tmp_path / "out.jsonl"
    code, text = cli("predict", "ynat", "--input", inputs, "--output", output, "--train", sample_file("ynat", "train"))
    assert code == 0, text
    assert "Warning:" in text and "lone surrogate" in text and "line 2" in text
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [row["guid"] for row in rows] == ["line-1", "line-2", "line-3"]


def test_the_analyser_survives_a_lone_surrogate_from_python():
    analyses = MorphemeAnalyzer(use_cache=False).analyze(["정상 문장", "안녕\ud800하세요"])
    assert analyses[0].forms and analyses[1].text == "안녕\ud800하세요" and "하" in analyses[1].forms


@pytest.mark.parametrize("heads, problem", [
    ([2, 3, 2], "form a cycle"), ([1, 0, 2], "its own head"), ([2, 3, 1], "form a cycle"), ([2, 3, 2, 3], "cycle"),
])
def test_dp_trees_that_are_not_trees_are_refused(tmp_path, heads, problem):
    rows = "\n".join(f"{i}\t어절{i}\t어절{i}\tNNG\t{h}\tNP" for i, h in enumerate(heads, start=1))
    gold = tmp_path / "dp.tsv"
    gold.write_text(f"## klue-dp-bad\t{' '.join(f'어절{i}' for i in range(1, len(heads) + 1))}\n{rows}\n\n",
                    encoding="utf-8")
    predictions = write_lines(tmp_path / "p.jsonl", [{"guid": "klue-dp-bad", "heads": heads, "deprels": ["NP"] * 4}])
    error = refused("score", "dp", "--gold", gold, "--predictions", predictions)
    assert "klue-dp-bad" in error and str(gold) in error and (problem in error or "root" in error)


def test_no_root_is_refused():
    from baselines.tasks.dp import tree_problem

    assert "root" in tree_problem([2, 1])
    assert tree_problem([2, 0, 2]) is None


def test_deeply_nested_json_and_empty_files(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    assert "nested too deeply" in refused("score", "ynat", "--gold", deep, "--predictions", deep)
    deep_line = tmp_path / "deep.jsonl"
    deep_line.write_text('{"a": ' + "[" * 200_000 + "]" * 200_000 + "}\n")
    assert "nested too deeply" in refused("score", "ynat", "--gold", sample_file("ynat"), "--predictions", deep_line)
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    assert "holds no ynat records" in refused("run", "ynat", "--dev", empty, "--train", sample_file("ynat", "train"))
    blank = tmp_path / "blank.tsv"
    blank.write_text("")
    assert "holds no ner records" in refused("score", "ner", "--gold", blank, "--predictions", blank)


def test_an_hf_row_without_its_label_is_unlabelled_not_a_crash():
    records = api.records_from_hf("ynat", [{"guid": "a", "title": "제목", "url": "", "date": ""}])
    assert records[0].label is None
    with pytest.raises(DataError, match="guid a: has no gold label"):
        api.fit("ynat", records, "trivial")


@pytest.mark.parametrize("task", ["ner", "dp"])
def test_a_byte_order_mark_is_read_past_in_tsv_conllu_and_jsonl(tmp_path, task):
    gold = tmp_path / sample_file(task).name
    gold.write_bytes(b"\xef\xbb\xbf" + sample_file(task).read_bytes())
    assert api.load(task, gold) == api.load(task, sample_file(task))
    rows = api.predict(task, api.fit(task, sample_file(task, "train"), "trivial"), sample_file(task))
    predictions = tmp_path / "p.jsonl"
    predictions.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(row, ensure_ascii=False) + "\n"
                                                      for row in rows).encode("utf-8"))
    assert api.score(task, gold, predictions) == api.score(task, sample_file(task), rows)
    if task == "dp":
        conllu = tmp_path / "dp.conllu"
        records = api.load("dp", sample_file("dp"))
        api.task_spec("dp").scoring.prediction_files.writers["conllu"](conllu, records, rows)
        conllu.write_bytes(b"\xef\xbb\xbf" + conllu.read_bytes())
        assert api.score("dp", sample_file("dp"), conllu) == api.score("dp", sample_file("dp"), rows)


def test_conllu_heads_take_ascii_digits_only_and_a_tree_has_one_root(tmp_path):
    records = api.load("dp", sample_file("dp"))
    gold = [{"heads": [w.head for w in r.words], "deprels": [w.deprel for w in r.words]} for r in records]
    conllu = tmp_path / "gold.conllu"
    api.task_spec("dp").scoring.prediction_files.writers["conllu"](conllu, records, gold)
    lines = conllu.read_text(encoding="utf-8").split("\n")
    first_token = next(number for number, line in enumerate(lines) if line and not line.startswith("#"))
    columns = lines[first_token].split("\t")
    superscript = lines[:first_token] + ["\t".join(columns[:6] + ["²"] + columns[7:])] + lines[first_token + 1:]
    conllu.write_text("\n".join(superscript), encoding="utf-8")
    error = refused("run", "dp", "--model", "trivial", "--train", sample_file("dp", "train"), "--dev", conllu)
    assert "HEAD '²' is not 0 (root)" in error
    two_roots = [list(map(int, [w.head for w in records[0].words]))]
    root = two_roots[0].index(0)
    other = 0 if root != 0 else 1
    heads = [0 if index == other else head for index, head in enumerate(two_roots[0])]
    write_conllu = api.task_spec("dp").scoring.prediction_files.writers["conllu"]
    write_conllu(conllu, records, [{**gold[0], "heads": heads}] + gold[1:])
    error = refused("run", "dp", "--model", "trivial", "--train", conllu, "--dev", sample_file("dp"))
    assert f"sent_id {records[0].guid}" in error and "are all attached to the root (HEAD 0): a tree has one" in error


@pytest.mark.parametrize("task, other, named", [("ynat", "nli", "an NLI file"), ("nli", "ynat", "a YNAT file"),
                                                ("ner", "dp", "a DP file"), ("mrc", "wos", "a WoS file"),
                                                ("sts", "re", "an RE file"), ("wos", "mrc", "an MRC file")])
def test_a_file_of_another_tasks_format_says_whose_it_is(task, other, named):
    with pytest.raises(DataError, match=f"this looks like {named}, and the task is"):
        api.load(task, sample_file(other))
    line = refused("score", task, "--gold", sample_file(other), "--predictions", sample_file(other))
    assert f"this looks like {named}" in line


def test_too_few_titles_for_min_df_or_a_single_topic_name_the_cause(tmp_path):
    titles = json.loads(sample_file("ynat", "train").read_text(encoding="utf-8"))
    with pytest.raises(TrainingDataError, match=r"min_df=2 .* there are 1: .*\(min_df=1\)"):
        api.fit("ynat", api.records_from_hf("ynat", titles[:1]))
    one_topic = [row for row in titles if row["label"] == titles[0]["label"]][:4]
    train = tmp_path / "ynat-v1.1_train.json"
    train.write_text(json.dumps(one_topic, ensure_ascii=False), encoding="utf-8")
    line = refused("run", "ynat", "--train", train, "--dev", sample_file("ynat"), "--results-dir", tmp_path)
    assert f"all 4 are '{titles[0]['label']}'" in line
