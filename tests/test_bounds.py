"""Hostile input, third round: bounds on every structure (threads, DP sentences, texts, recorded commands),
invisible characters and empty inputs, and the weak corners the red team left. Each case is one test or more."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import joblib
import numpy as np
import pytest

from baselines import api

from baselines.bench import reproduce
from baselines.data.fileio import absolute_path
from baselines.errors import InputWarning, PredictionError, TrainingDataError
from baselines.runner.registry import get_task
from baselines.tasks.dp import parser as dp_parser
from baselines.tasks.dp.parser import MAX_TREE_EOJEOLS, joined_trees, sentence_pieces
from features import analysis
from features.analysis import MAX_TEXT_CHARACTERS, MorphemeAnalyzer, TextTooLong
from features.normalize import nfc, nfc_text
from helpers import cli, fitted_on_sample, refused, sample_file

QUIET = {"log": lambda message: None}


# 1. Thread counts that reach a library.

def test_kiwi_threads_beyond_the_cores_are_the_cores_with_a_warning():
    cores = joblib.cpu_count()
    with pytest.warns(UserWarning, match=f"100000 Kiwi threads asked for, more than the {cores} cores"):
        assert MorphemeAnalyzer(num_workers=100_000).num_workers == cores
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert MorphemeAnalyzer(num_workers=1).num_workers == 1
        assert MorphemeAnalyzer().num_workers == cores


def test_workers_beyond_the_cores_on_the_command_line_warn_and_finish(tmp_path):
    """--workers 100000 stalled Kiwi; the CLI (and so reproduce, which passes a recorded --workers to it) now
    runs with the cores and says so."""
    result = subprocess.run([sys.executable, "-m", "baselines.cli", "--workers", "100000", "run", "ynat",
                             "--model", "trivial", "--results-dir", "results"],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"more than the {joblib.cpu_count()} cores" in result.stderr and "Traceback" not in result.stderr
    assert "ynat  trivial  macro_f1" in result.stdout


# 2. DP sentences beyond what one tree decodes.

def test_sentence_pieces_cover_the_sentence_in_near_equal_pieces():
    assert sentence_pieces(MAX_TREE_EOJEOLS) == [(0, MAX_TREE_EOJEOLS)]
    assert sentence_pieces(2 * MAX_TREE_EOJEOLS + 1) == [(0, 86), (86, 171), (171, 257)]
    for size in (101, 250, 2_000, 5_001):
        pieces = sentence_pieces(size)
        assert pieces[0][0] == 0 and pieces[-1][1] == size
        assert all(end == start for (_s, end), (start, _e) in zip(pieces, pieces[1:]))
        lengths = [end - start for start, end in pieces]
        assert max(lengths) <= MAX_TREE_EOJEOLS and max(lengths) - min(lengths) <= 1
        assert len(pieces) == -(-size // MAX_TREE_EOJEOLS)


def test_joined_trees_link_each_piece_root_to_the_next():
    # Two head-final pieces: eojeols 1-3 (root 3) and 4-5 (root 5).
    assert joined_trees([(0, [2, 3, 0]), (3, [2, 0])]) == [2, 3, 5, 5, 0]


@pytest.fixture(scope="module")
def quick_parser():
    return fitted_on_sample("dp", "mst", epochs=1, perceptrons=1)


def is_tree(heads: list[int]) -> bool:
    """One root, every eojeol reaches it."""
    if heads.count(0) != 1:
        return False
    for start in range(1, len(heads) + 1):
        seen, node = set(), start
        while node:
            if node in seen:
                return False
            seen.add(node)
            node = heads[node - 1]
    return True


def test_a_long_dp_sentence_is_parsed_in_pieces_of_bounded_size(quick_parser, monkeypatch):
    decoded_sizes = []
    decode = dp_parser.MstParser._decode

    def recording(weights, sentence, *args, **kwargs):
        decoded_sizes.append(len(sentence.words))
        return decode(weights, sentence, *args, **kwargs)

    monkeypatch.setattr(dp_parser.MstParser, "_decode", staticmethod(recording))
    words = " ".join(record.text for record in get_task("dp").reading.load(sample_file("dp"))).split()
    text = " ".join(words[index % len(words)] for index in range(2 * MAX_TREE_EOJEOLS + 37))
    row = api.predict("dp", quick_parser, [text])[0]
    heads, relations = row["heads"], row["deprels"]
    assert len(heads) == len(relations) == 2 * MAX_TREE_EOJEOLS + 37
    assert is_tree(heads) and all(head == 0 or head > position for position, head in enumerate(heads, 1))
    assert decoded_sizes and max(decoded_sizes) <= MAX_TREE_EOJEOLS
    # A sentence within the bound is decoded whole, as before.
    decoded_sizes.clear()
    short = " ".join(words[:30])
    assert api.predict("dp", quick_parser, [short])[0]["heads"] == quick_parser.predict([short])[0][0]
    assert decoded_sizes == [30, 30]


def test_a_training_sentence_beyond_the_bound_trains_the_labeller_not_the_arcs():
    spec = get_task("dp")
    records = spec.reading.load(sample_file("dp", "train"))
    long_record = records[0].__class__(guid="very-long", text=" ".join(w.form for r in records[:20] for w in r.words),
                                       words=[])
    words = []
    for record in records[:20]:  # the sentences one after another, each sentence's root under the next one's
        offset = len(words)
        for word in record.words:
            words.append(word.__class__(word.form, word.lemma, word.pos, word.head + offset if word.head else 0,
                                        word.deprel))
    roots = [index for index, word in enumerate(words) if word.head == 0]
    for root, next_root in zip(roots, roots[1:]):
        words[root] = words[root].__class__(words[root].form, words[root].lemma, words[root].pos, next_root + 1,
                                            words[root].deprel)
    long_record.words = words
    assert len(words) > MAX_TREE_EOJEOLS
    model = spec.modelling.models["mst"].build().set_params(epochs=1, perceptrons=1)
    with pytest.warns(InputWarning, match=rf"1 training sentences have more than {MAX_TREE_EOJEOLS} eojeols.*very-long"):
        model.fit(records + [long_record], spec.modelling.targets(records + [long_record]))
    assert is_tree(model.predict([long_record])[0][0])
    with pytest.raises(TrainingDataError, match=f"every training sentence has more than {MAX_TREE_EOJEOLS} eojeols"):
        spec.modelling.models["mst"].build().fit([long_record], spec.modelling.targets([long_record]))


# 3. Texts too long to analyse.

def test_a_text_beyond_the_bound_is_refused_naming_its_file_and_record(tmp_path):
    titles = json.loads(sample_file("ynat").read_text(encoding="utf-8"))[:3]
    titles[1]["title"] = "가나다 " * (MAX_TEXT_CHARACTERS // 4 + 1)
    path = tmp_path / "long.json"
    path.write_text(json.dumps(titles, ensure_ascii=False), encoding="utf-8")
    line = refused("run", "ynat", "--model", "trivial", "--train", sample_file("ynat", "train"), "--dev", path)
    assert f"{path}: {titles[1]['guid']}: a text of" in line and f"more than the {MAX_TEXT_CHARACTERS:,}" in line


def test_a_text_that_nfc_lengthens_past_the_bound_is_refused_naming_its_file_and_record(tmp_path):
    """U+FB2C is three characters in NFC: 40,000 of them are 120,000 as the models read them. Refused where the
    file is read, with the file, the record and both lengths (it had reached Kiwi's bound, with neither)."""
    titles = json.loads(sample_file("ynat").read_text(encoding="utf-8"))[:3]
    titles[2]["title"] = "\ufb2c" * 40_000
    path = tmp_path / "lengthened.json"
    path.write_text(json.dumps(titles, ensure_ascii=False), encoding="utf-8")
    line = refused("run", "ynat", "--model", "trivial", "--train", sample_file("ynat", "train"), "--dev", path)
    assert f"{path}: {titles[2]['guid']}: a text of 40,000 characters that is 120,000 in NFC" in line
    assert analysis.too_long("\ufb2c" * (MAX_TEXT_CHARACTERS // 3)) is None


def test_a_long_plain_text_is_refused_before_kiwi_reads_it():
    model = api.fit("ynat", sample_file("ynat", "train"), "tfidf-lr", **QUIET)
    with pytest.raises(TextTooLong, match="more than the 100,000 one text may have"):
        model.predict(["가" * (MAX_TEXT_CHARACTERS + 1)])
    assert len(model.predict(["가" * MAX_TEXT_CHARACTERS])) == 1


# 4. Invisible characters.

INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"]


def test_the_normaliser_removes_invisible_characters_and_keeps_the_map_to_the_original():
    for mark in INVISIBLE:
        original = f"이순{mark}신 장군{mark}"
        text = nfc_text(original)
        assert text.text == nfc(original) == "이순신 장군"
        assert text.original_span(0, 3) == (0, 4)  # the name, the mark inside it included
        assert text.nfc_index(original.index("장")) == 4
        assert len(text.tags_to_original(["B-PS", "I-PS", "I-PS", "O", "O", "O"])) == len(original)
    assert nfc_text("\u200b\u200b").text == ""


def test_titles_with_invisible_characters_get_the_clean_titles_predictions():
    model = api.fit("ynat", sample_file("ynat", "train"), "tfidf-lr", **QUIET)
    titles = [record.title for record in get_task("ynat").reading.load(sample_file("ynat"))[:20]]
    marked = [title[:3] + INVISIBLE[index % 5] + title[3:] + INVISIBLE[(index + 1) % 5] for index, title in
              enumerate(titles)]
    np.testing.assert_array_equal(model.predict_proba(marked), model.predict_proba(titles))


def test_ner_entities_with_invisible_characters_point_into_the_users_string():
    spec = get_task("ner")
    records = spec.reading.load(sample_file("ner", "train"))
    model = spec.modelling.models["crf"].build().set_params(max_iterations=30, neighbours=0).fit(records,
                                                                                       spec.modelling.targets(records))
    clean = [record.text for record in spec.reading.load(sample_file("ner"))[:30]]
    marked = [text.replace(" ", "\u200b ", 2) for text in clean]
    for original, text, row_clean, row_marked in zip(clean, marked, api.predict("ner", model, clean),
                                                      api.predict("ner", model, marked)):
        assert len(row_marked["tags"]) == len(text)
        assert [nfc(text[e["start"]:e["end"]]) for e in row_marked["entities"]] == \
            [original[e["start"]:e["end"]] for e in row_clean["entities"]]


# 5. Empty inputs.

def empty_inputs(task: str) -> list:
    spec = get_task(task)
    plain = spec.reading.plain_inputs(spec.reading.load(sample_file(task))[:1])[0]
    if task in ("ynat", "ner"):
        return ["", " \u200b\t"]
    if task in ("sts", "nli"):
        return [("", plain[1]), (" ", " ")]
    if task == "mrc":
        return [{**plain, "question": "  "}]
    return [{**plain, "dialogue": [{**turn, "text": " "} for turn in plain["dialogue"]]}]  # wos


@pytest.mark.parametrize("task", ["ynat", "sts", "nli", "ner", "mrc", "wos"])
def test_an_empty_input_gets_a_prediction_and_a_warning_naming_it(task):
    model = api.fit(task, sample_file(task, "train"), "trivial", **QUIET)
    inputs = empty_inputs(task)
    with pytest.warns(InputWarning, match=rf"{len(inputs)} {task} inputs? ha(s|ve) an empty or whitespace-only text "
                                          rf"\(input-0"):
        rows = api.predict(task, model, inputs)
    assert len(rows) == len(inputs)


def test_an_empty_dp_sentence_or_re_sentence_is_an_error_naming_it(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text('{"guid": "g1", "text": "  "}\n', encoding="utf-8")
    assert f"{path}: line 1: empty 'text'" in refused("predict", "dp", "--input", path)


def test_a_file_without_empty_texts_warns_of_nothing():
    model = api.fit("ynat", sample_file("ynat", "train"), "trivial", **QUIET)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        api.predict("ynat", model, sample_file("ynat"))


# 6. The weak corners.

def prediction_file(tmp_path, rows) -> str:
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("change, expected", [
    (lambda probs: {**probs, "날씨": 0.0}, "unknown: 날씨"),
    (lambda probs: {label: value for label, value in probs.items() if label != "경제"}, "missing: 경제"),
    (lambda probs: {**probs, "경제": 1.5}, "numbers from 0 to 1, not 경제=1.5"),
])
def test_report_refuses_probabilities_over_other_classes(tmp_path, change, expected):
    model = api.fit("ynat", sample_file("ynat", "train"), "tfidf-lr", **QUIET)
    rows = api.predict("ynat", model, sample_file("ynat"))
    rows[2] = {**rows[2], "probs": change(rows[2]["probs"])}
    line = refused("report", "ynat", "--gold", sample_file("ynat"), "--predictions", prediction_file(tmp_path, rows))
    assert f"prediction {rows[2]['guid']}: 'probs'" in line and expected in line
    with pytest.raises(PredictionError):
        api.report("ynat", sample_file("ynat"), rows)
    rows[2] = api.predict("ynat", model, sample_file("ynat"))[2]
    assert api.report("ynat", sample_file("ynat"), rows)["errors"]


def test_a_loop_of_symbolic_links_as_an_output_is_one_error_line_and_stays_a_path(tmp_path):
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    assert absolute_path(loop) == loop  # bench determinism and reproduce make paths absolute without resolving
    line = refused("run", "ynat", "--model", "trivial", "--results-dir", loop)
    assert f"{loop}: cannot be written: {loop} is a loop of symbolic links" in line
    line = refused("train", "ynat", "--model", "trivial", "--out", loop)
    assert f"{loop}: is a loop of symbolic links, not a file to write" in line
    assert loop.is_symlink() and os.readlink(loop) == str(loop)  # left as it was
    line = refused("run", "ynat", "--model", "trivial", "--data-dir", loop)
    assert "does not exist" in line


def test_the_constant_floor_with_a_constant_outside_the_labels_is_one_error_line(tmp_path):
    line = refused("train", "ynat", "--model", "trivial", "--param", "strategy=constant", "--param",
                   "constant=날씨", "--out", tmp_path / "floor.model")
    assert "constant='날씨' is not one of the training labels (IT과학, 경제" in line
    assert api.fit("nli", sample_file("nli", "train"), "trivial", strategy="constant", constant="neutral",
                   **QUIET).predict([("a", "b")])[0] == "neutral"


def test_a_non_finite_recorded_headline_and_too_many_commands_are_one_error_line(tmp_path, monkeypatch):
    code, output = cli("run", "ynat", "--model", "trivial", "--results-dir", tmp_path / "results")
    assert code == 0, output
    results_file = tmp_path / "results" / "ynat.json"
    text = results_file.read_text(encoding="utf-8")
    data = json.loads(text)
    score = data["runs"]["trivial"]["headline"]["macro_f1"]
    results_file.write_text(text.replace(f'"macro_f1": {score}\n', '"macro_f1": 1e999\n'), encoding="utf-8")
    assert "1e999" in results_file.read_text(encoding="utf-8")
    line = refused("reproduce", "ynat", "--results-dir", tmp_path / "results")
    assert "run trivial: 'headline' should be an object of metric names and scores" in line
    results_file.write_text(text, encoding="utf-8")
    monkeypatch.setattr(reproduce, "MAX_RECORDED_COMMANDS", 0)
    line = refused("reproduce", "ynat", "--results-dir", tmp_path / "results")
    assert "records 1 distinct commands for ynat; reproduce reruns at most 0 at once" in line


def test_the_analyser_bound_is_the_one_the_loaders_check():
    assert analysis.too_long("가" * MAX_TEXT_CHARACTERS) is None
    assert "100,001 characters" in analysis.too_long("가" * (MAX_TEXT_CHARACTERS + 1))


@pytest.mark.parametrize("task", ["ynat", "sts", "nli", "ner", "re", "dp", "mrc", "wos"])
def test_the_long_input_bench_grows_each_tasks_input_to_the_size_asked(task):
    from baselines.bench import long_inputs
    spec = get_task(task)
    plain = spec.reading.plain_inputs(spec.reading.load(sample_file(task))[:1])[0]
    for size in (500, 5_000):
        record, = spec.reading.as_records([spec.benchmarks.grow(plain, size)])
        if spec.benchmarks.size_unit == "eojeols":
            assert len(record.words) == size
        else:
            assert size * 0.9 <= max(map(len, spec.reading.texts([record]))) <= size
    model = api.fit(task, sample_file(task, "train"), "trivial", **QUIET)
    points = long_inputs.measure(task, model, plain, (200, 400), lambda message: None)
    assert [point["size"] for point in points] == [200, 400] and all(point["seconds"] >= 0 for point in points)


def test_a_models_own_process_count_is_bounded_by_the_cores():
    """NLI's n_jobs (its four regressions) and WoS's (its gates) reach joblib: more than the cores is the
    cores, with a warning, and the predictions are those of the default."""
    cores = joblib.cpu_count()
    spec = get_task("nli")
    records = spec.reading.load(sample_file("nli", "train"))
    many = spec.modelling.models["tfidf-lr"].build().set_params(n_jobs=64)
    with pytest.warns(UserWarning, match=f"64 jobs at once is more than the {cores} cores"):
        many.fit(records, spec.modelling.targets(records))
    default = spec.modelling.models["tfidf-lr"].build().fit(records, spec.modelling.targets(records))
    dev = spec.reading.load(sample_file("nli"))
    np.testing.assert_array_equal(many.predict_proba(dev), default.predict_proba(dev))
