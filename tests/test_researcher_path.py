"""A researcher checking a neural result: prediction files as neural pipelines write them scored as our JSONL, a
Trainer metric, invalid IOB2 counted, rows that ship their predictions, and results tables with nothing empty."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from click.testing import CliRunner

from baselines import api
from baselines.runner import result_files
from baselines.cli import main
from baselines.data import hf, prediction_formats
from baselines.data.fileio import file_sha256
from baselines.errors import InputWarning, PredictionError, UsageError
from helpers import REPO, cli as cli_quiet, refused, sample_file, shared_folder, sample_records, write_json

TASKS = ("ynat", "nli", "sts", "ner", "re")
# RE's AUPRC needs class probabilities, which these files do not carry: the warning that says so is expected.
pytestmark = pytest.mark.filterwarnings("ignore:re. AUPRC needs")


def predicted_values(task: str) -> list:
    """Predictions that are right on some records and wrong on others (every third one changed), so that a
    reading that shifts, drops or reorders a record changes the score."""
    records = sample_records(task)
    golds = api.task_spec(task).modelling.targets(records)
    values = []
    for index, gold in enumerate(golds):
        if task == "sts":
            values.append(round(min(5.0, max(0.0, gold + (index % 5 - 2) * 0.4)), 3))
        elif task == "ner":
            values.append(["O"] * len(gold) if index % 3 == 0 else list(gold))
        else:
            names = hf.SCHEMAS[task].labels["label"]
            values.append(names[(names.index(gold) + 1) % len(names)] if index % 3 == 0 else gold)
    return values


def write_jsonl(path, task: str, values: list):
    field = {"sts": "score", "ner": "tags"}.get(task, "label")
    guids = [record.guid for record in sample_records(task)]
    path.write_text("".join(json.dumps({"guid": guid, field: value}, ensure_ascii=False) + "\n"
                            for guid, value in zip(guids, values)), encoding="utf-8")
    return path


def jsonl_score(tmp_path, task: str) -> dict:
    return api.score(task, sample_file(task), write_jsonl(tmp_path / "ours.jsonl", task, predicted_values(task)),
                     log=api.quiet)


def hf_predict_results(path, task: str, values: list, as_ids: bool = False):
    """predict_results_<task>.txt as run_glue.py writes it: a header, then index and label (the label list's
    name, or the id when the label list is the ids of a JSON training file); regression as 3.3f."""
    with open(path, "w") as writer:
        writer.write("index\tprediction\n")
        for index, item in enumerate(values):
            if task == "sts":
                writer.write(f"{index}\t{item:3.3f}\n")
            else:
                item = hf.SCHEMAS[task].labels["label"].index(item) if as_ids else item
                writer.write(f"{index}\t{item}\n")
    return path


def hf_ner_predictions(path, task: str, values: list, spaces: bool = False):
    """predictions.txt as run_ner.py writes it: one sentence a line, tags joined by spaces; a whitespace
    character of the HF tokens yields no word piece and so no tag, unless `spaces`."""
    texts = [record.text for record in sample_records(task)]
    with open(path, "w") as writer:
        for text, tags in zip(texts, values):
            kept = [tag for char, tag in zip(text, tags) if spaces or char != " "]
            writer.write(" ".join(kept) + "\n")
    return path


# STS predictions are numbers, not classes: they have no ids.
@pytest.mark.parametrize("task, as_ids", [(task, as_ids) for task in TASKS if task != "ner"
                                          for as_ids in (False, True) if not (task == "sts" and as_ids)])
def test_hf_predict_results_score_as_jsonl(tmp_path, task, as_ids):
    expected = jsonl_score(tmp_path, task)
    path = hf_predict_results(tmp_path / f"predict_results_{task}.txt", task, predicted_values(task), as_ids)
    assert api.score(task, sample_file(task), path, log=api.quiet) == expected
    assert expected[api.task_spec(task).scoring.headline[0]] not in (None, 0.0, 100.0)


@pytest.mark.parametrize("spaces", [False, True], ids=["no-space-tags", "every-character"])
def test_hf_ner_predictions_txt_scores_as_jsonl(tmp_path, spaces):
    expected = jsonl_score(tmp_path, "ner")
    path = hf_ner_predictions(tmp_path / "predictions.txt", "ner", predicted_values("ner"), spaces)
    said = []
    assert api.score("ner", sample_file("ner"), path, log=said.append) == expected
    assert said == [f"{path}: read as {prediction_formats.DESCRIBED['ner-lines']}, 100 predictions"]
    assert 0 < expected["entity_macro_f1"] < 100


@pytest.mark.parametrize("task", TASKS)
def test_json_array_and_tables_score_as_jsonl(tmp_path, task):
    expected = jsonl_score(tmp_path, task)
    values = predicted_values(task)
    guids = [record.guid for record in sample_records(task)]
    shown = [" ".join(value) if task == "ner" else value for value in values]
    write_json(tmp_path / "array.json", values)
    write_json(tmp_path / "objects.json", [{"id": guid, "prediction": value} for guid, value in zip(guids, values)])
    for name, delimiter in (("table.csv", ","), ("table.tsv", "\t")):
        with open(tmp_path / name, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, delimiter=delimiter)
            writer.writerow(["guid", "prediction"])
            # written in reverse: the guid column, not the order, ties a row to its record
            writer.writerows(reversed(list(zip(guids, shown))))
    for name in ("array.json", "objects.json", "table.csv", "table.tsv"):
        assert api.score(task, sample_file(task), tmp_path / name, log=api.quiet) == expected, name


def test_nli_in_korean_words_and_csv_by_index(tmp_path):
    expected = jsonl_score(tmp_path, "nli")
    korean = {english: word for word, english in prediction_formats.COLUMNS["nli"].words.items()}
    values = predicted_values("nli")
    rows = [f"{index},{korean[value]}" for index, value in enumerate(values)]
    (tmp_path / "answers.csv").write_text("index,label\n" + "\n".join(reversed(rows)) + "\n", encoding="utf-8")
    assert api.score("nli", sample_file("nli"), tmp_path / "answers.csv", log=api.quiet) == expected


def test_the_cli_says_which_format_it_read_and_a_flag_forces_one(tmp_path):
    path = hf_predict_results(tmp_path / "predict_results_ynat.txt", "ynat", predicted_values("ynat"))
    result = CliRunner().invoke(main, ["score", "ynat", "--gold", str(sample_file("ynat")), "--predictions",
                                       str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert f"{path}: read as a Hugging Face predict_results file" in result.stderr
    assert json.loads(result.stdout)["metrics"]["macro_f1"] == pytest.approx(jsonl_score(tmp_path, "ynat")["macro_f1"])
    message = refused("score", "ynat", "--gold", str(sample_file("ynat")), "--predictions", str(path),
                      "--predictions-format", "json-array")
    assert str(path) in message and "JSON" in message


@pytest.mark.parametrize("task, content, where, expected", [
    ("ynat", "index\tprediction\n0\t경제\n1\t경졔\n", "line 3", "'경졔' is not a class of YNAT"),
    ("ynat", "index\tprediction\n0\t7\n", "line 2", "class id 7 is outside the 7 classes"),
    ("ynat", "index\tprediction\n0\t경제\n0\t경제\n", None, "index 1 is missing"),
    ("ynat", "index\tprediction\n0\t경제\n", None, "1 predictions without guids for 100 gold records"),
    ("ynat", "guid,topic\nynat-v1_dev_00000,경제\n", "line 1", "expected a column named prediction"),
    ("ynat", "guid,prediction\nynat-v1_dev_00000\n", "line 2", "1 fields for the header's 2"),
    ("sts", "index\tprediction\n0\tsimilar\n", "line 2", "'similar' is not a number"),
    ("nli", "the model did well\n", None,
     "a Hugging Face predict_results file (index<TAB>prediction), a JSON array, CSV or TSV"),
])
def test_a_wrong_file_is_one_error_naming_file_line_and_expectation(tmp_path, task, content, where, expected):
    path = tmp_path / "predictions.txt"
    path.write_text(content, encoding="utf-8")
    message = refused("score", task, "--gold", str(sample_file(task)), "--predictions", str(path))
    assert message.startswith("Error:") and str(path) in message and expected in message
    assert where is None or where in message


def test_ner_lines_of_the_wrong_length_name_the_sentence(tmp_path):
    values = predicted_values("ner")
    values[4] = values[4][:-3]  # as a truncating max_seq_length would cut it
    path = hf_ner_predictions(tmp_path / "predictions.txt", "ner", values, spaces=True)
    message = refused("score", "ner", "--gold", str(sample_file("ner")), "--predictions", str(path))
    assert str(path) in message and sample_records("ner")[4].guid in message


def test_runs_that_begin_with_inside_tags_are_counted_in_a_warning_and_not_scored(tmp_path):
    values = predicted_values("ner")
    records = sample_records("ner")
    changed = [index for index, tags in enumerate(values) if "B-PS" in tags][:2]
    for index in changed:  # B-PS -> I-PS: an entity that begins with I-, as a lenient tagger may write it
        values[index] = ["I-PS" if tag == "B-PS" else tag for tag in values[index]]
    path = write_jsonl(tmp_path / "lenient.jsonl", "ner", values)
    orphans = sum(values[index].count("I-PS") - records[index].tags.count("I-PS") for index in changed)
    with pytest.warns(InputWarning, match=rf"ner: {orphans} predicted runs in 2 sentences begin with I- without "
                                          rf"a B- \(invalid IOB2; first in {records[changed[0]].guid}\)"):
        lenient = api.score("ner", sample_file("ner"), path, log=api.quiet)
    assert lenient["entity_f1/PS"] < jsonl_score(tmp_path, "ner")["entity_f1/PS"]  # not repaired into entities


@pytest.mark.parametrize("task", ["ynat", "ner"])
def test_a_recorded_row_ships_its_dev_predictions_which_score_to_its_numbers(tmp_path, task):
    code, output = cli_quiet("run", task, "--model", "trivial", "--results-dir", tmp_path / "results")
    assert code == 0, output
    record = json.loads((tmp_path / "results" / f"{task}.json").read_text(encoding="utf-8"))["runs"]["trivial"]
    shipped = tmp_path / "results" / record["predictions"]["file"]
    assert shipped.name == f"{task}-trivial.jsonl.gz" and shipped.read_bytes()[:2] == b"\x1f\x8b"
    assert record["predictions"]["sha256"] == file_sha256(shipped) and record["predictions"]["rows"] == 100
    rescored = api.score(task, sample_file(task), shipped, log=api.quiet)
    assert {key: round(value, 6) for key, value in rescored.items()} == record["metrics"]
    assert record["dev_records"] == 100 and set(record["intervals"]) >= set(record["headline"])
    first = shipped.read_bytes()
    cli_quiet("run", task, "--model", "trivial", "--results-dir", tmp_path / "results")
    assert shipped.read_bytes() == first  # no time in the gzip header: the same predictions, the same bytes


def trainer_arrays(task: str) -> tuple[np.ndarray, np.ndarray]:
    """What a Trainer hands compute_metrics for the sample dev records: logits (NER: per position, padded and
    ignored with -100 as a data collator does) and label ids in the HF ClassLabel order."""
    records, values = sample_records(task), predicted_values(task)
    golds = api.task_spec(task).modelling.targets(records)
    if task == "sts":
        return np.array(values).reshape(-1, 1), np.array(golds)
    if task == "ner":
        scored = [[index for index, char in enumerate(record.text) if char != " "] for record in records]
        width = max(map(len, scored)) + 2  # [CLS] and [SEP], and padding: all ignored
        logits = np.zeros((len(records), width, len(hf.SCHEMAS["ner"].labels["ner_tags"])))
        labels = np.full((len(records), width), -100)
        for row, (kept, gold, predicted) in enumerate(zip(scored, golds, values)):
            for position, char_index in enumerate(kept, start=1):
                labels[row, position] = hf.SCHEMAS["ner"].labels["ner_tags"].index(gold[char_index])
                logits[row, position, hf.SCHEMAS["ner"].labels["ner_tags"].index(predicted[char_index])] = 4.0
        return logits, labels
    names = hf.SCHEMAS[task].labels["label"]
    logits = np.zeros((len(records), len(names)))
    logits[np.arange(len(records)), [names.index(value) for value in values]] = 3.0
    return logits, np.array([names.index(gold) for gold in golds])


@pytest.mark.parametrize("task", TASKS)
def test_a_trainer_metric_gives_the_official_scores_of_the_same_predictions(tmp_path, task):
    logits, labels = trainer_arrays(task)
    computed = api.metric(task)((logits, labels))
    expected = jsonl_score(tmp_path, task)
    assert {key: computed[key] for key in expected} == pytest.approx(expected)
    if task == "re":  # the logits' softmax gives AUPRC, which label-only files cannot
        assert 0 <= computed["auprc"] <= 100


def test_a_trainer_metric_refuses_what_it_cannot_score():
    with pytest.raises(UsageError, match="score dp's predictions as files"):
        api.metric("dp")
    with pytest.raises(PredictionError, match=r"expected logits of shape \(n, 7\)"):
        api.metric("ynat")((np.zeros((3, 5)), np.zeros(3, dtype=int)))


def test_a_learning_curve_alone_writes_no_empty_run_table(tmp_path):
    code, output = cli_quiet("bench", "learning-curve", "ynat", "--model", "trivial", "--fractions", "0.5,1",
                             "--results-dir", tmp_path / "results")
    assert code == 0, output
    readme = (tmp_path / "results" / "README.md").read_text(encoding="utf-8")
    assert "No `run` rows here yet" in readme and "| task | metric |" not in readme and "Summed seconds" not in readme
    cli_quiet("run", "ynat", "--model", "trivial", "--results-dir", tmp_path / "results")
    filled = (tmp_path / "results" / "README.md").read_text(encoding="utf-8")
    assert "| ynat | macro_f1 | 100 |" in filled and "No `run` rows" not in filled


# The fast CRF may tag a space B- before an entity: the scorer drops spaces and warns of the I- left first.
@pytest.mark.filterwarnings("ignore:ner. .* predicted runs")
def test_run_with_seeds_reports_the_spread_of_each_metric_and_records_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spread = api.seed_spread(["ner"], [0, 1], "fast", log=api.quiet)
    assert [row["metric"] for row in spread] == ["entity_macro_f1", "char_macro_f1"]
    for row in spread:
        assert row["seeded"] and row["seeds"] == [0, 1] and len(row["scores"]) == 2
        assert row["min"] <= row["mean"] <= row["max"] and row["std"] == pytest.approx(np.std(row["scores"], ddof=1))
    assert spread[0]["scores"] == [api.run(["ner"], "fast", seed=seed, log=api.quiet)[0]["metrics"]["entity_macro_f1"]
                                   for seed in (0, 1)]
    code, output = cli_quiet("run", "ner", "--model", "fast", "--seeds", "0,1", "--format", "csv")
    assert code == 0 and "task,model,metric,seeds,mean,std,min,max\nner,fast,entity_macro_f1,\"0,1\"," in output
    assert not (tmp_path / "results").exists()
    assert "drop --results-dir" in refused("run", "ynat", "--seeds", "0,1", "--results-dir", tmp_path / "r")
    assert "two or more distinct seeds" in refused("run", "ynat", "--seeds", "3")


def recorded_rows_with_predictions() -> list[tuple[str, str]]:
    rows = []
    for task in ("ynat", "sts", "nli", "ner", "re", "dp", "mrc", "wos"):
        runs = json.loads((REPO / "results" / f"{task}.json").read_text(encoding="utf-8"))["runs"]
        shown = (api.task_spec(task).modelling.default_model, "fast")
        rows.extend((task, name) for name in sorted(runs) if name in shown)
    return rows


@pytest.mark.parametrize("task, row", recorded_rows_with_predictions())
def test_the_shipped_dev_predictions_of_each_row_score_to_its_recorded_numbers(task, row):
    """What `compare` reads when a researcher sets a neural model against our default or fast setting."""
    shared = shared_folder("klue", "the KLUE files the rows were scored on")
    record = json.loads((REPO / "results" / f"{task}.json").read_text(encoding="utf-8"))["runs"][row]
    shipped = REPO / "results" / record["predictions"]["file"]
    assert file_sha256(shipped) == record["predictions"]["sha256"]
    dev = next(entry for entry in record["files"] if entry.get("official_name") == api.task_spec(task).dev_file)
    gold = shared / Path(dev["path"]).relative_to("../shared/klue")
    assert file_sha256(gold) == dev["sha256"]
    rescored = result_files.jsonable_scores(api.score(task, gold, shipped, log=api.quiet), 6)
    assert rescored == record["metrics"]
