"""The command line end to end on the shipped sample: run, train/evaluate/predict, score and its errors."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from baselines.cli import main
from baselines.runner.registry import TASK_CODES, get_task
from helpers import invoke, sample_file


def test_run_on_the_sample_prints_all_tasks_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("run", "--model", "trivial")
    for code in TASK_CODES:
        assert f"\n{code} " in result.output
    assert "sample" in result.output
    assert not (tmp_path / "results").exists()


def test_run_writes_results_and_table(tmp_path):
    invoke("run", "dp", "nli", "--model", "trivial", "--results-dir", str(tmp_path))
    record = json.loads((tmp_path / "dp.json").read_text(encoding="utf-8"))["runs"]["trivial"]
    assert record["protocol"] == "sample"
    assert record["command"].startswith("klue-baselines ")
    assert {"fit", "predict", "analysis"} <= set(record["seconds"])
    assert record["files"][0]["sha256"] and record["versions"]["kiwipiepy"]
    # Attach-to-next on any Korean treebank gets most heads right: far above chance, below perfect.
    assert 40 < record["metrics"]["uas_micro_f1"] < 90
    table = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "| dp | uas_micro_f1 |" in table and "90.30" in table


def test_cross_fitting_groups_mrc_by_passage(tmp_path):
    from baselines.runner.evaluate import cross_fit_folds

    spec = get_task("mrc")
    records = spec.reading.load(sample_file("mrc", "train"))
    folds = cross_fit_folds(spec, records, 5, seed=0)
    assert sorted(i for fold in folds for i in fold) == list(range(len(records)))
    passages = [{records[i].context for i in fold} for fold in folds]
    for a in range(5):
        for b in range(a + 1, 5):
            assert not passages[a] & passages[b]


def test_run_writes_the_out_of_fold_predictions_that_it_scored(tmp_path):
    """`score` on the file that `run --predictions-dir` wrote gives the metrics that `run` recorded."""
    dev = sample_file("mrc")
    invoke("run", "mrc", "--dev", str(dev), "--cv", "3", "--results-dir", str(tmp_path / "results"),
           "--predictions-dir", str(tmp_path / "predictions"))
    recorded = json.loads((tmp_path / "results" / "mrc.json").read_text(encoding="utf-8"))["runs"]["span-ranker"]
    predictions = tmp_path / "predictions" / "mrc-span-ranker.jsonl"
    rows = [json.loads(line) for line in predictions.read_text(encoding="utf-8").splitlines()]
    assert [row["guid"] for row in rows] == [record.guid for record in get_task("mrc").reading.load(dev)]
    assert all("best_span" in row for row in rows)
    scored = json.loads(invoke("score", "mrc", "--gold", str(dev), "--predictions", str(predictions),
                               "--json").output)["metrics"]
    assert scored == pytest.approx(recorded["metrics"], abs=1e-6)
    assert "answerable_auc" in scored


def test_missing_training_file_without_cv_is_a_clear_error(tmp_path):
    result = invoke("run", "wos", "--dev", str(sample_file("wos")), expect=1)
    assert "no training file" in result.output and "--cv" in result.output
    assert "Traceback" not in result.output


def test_train_evaluate_predict_round_trip(tmp_path):
    model = tmp_path / "ynat.joblib"
    invoke("train", "ynat", "--model", "trivial", "--out", str(model))
    direct = json.loads(invoke("evaluate", "ynat", "--model", str(model), "--json").output)
    titles = tmp_path / "titles.jsonl"
    titles.write_text('{"title": "삼성전자 새 스마트폰 공개"}\n{"guid": "t2", "title": "류현진 7이닝 무실점"}\n',
                      encoding="utf-8")
    output = tmp_path / "out.jsonl"
    invoke("predict", "ynat", "--model", str(model), "--input", str(titles), "--output", str(output))
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [r["guid"] for r in rows] == ["line-1", "t2"]
    assert abs(sum(rows[0]["probs"].values()) - 1) < 1e-4
    assert direct["metrics"]["macro_f1"] > 0


def test_model_for_another_task_is_refused(tmp_path):
    model = tmp_path / "ynat.joblib"
    invoke("train", "ynat", "--model", "trivial", "--out", str(model))
    result = invoke("evaluate", "nli", "--model", str(model), expect=1)
    assert "trained for ynat, not nli" in result.output


def test_damaged_model_file_is_refused(tmp_path):
    model = tmp_path / "broken.joblib"
    model.write_bytes(b"not a model")
    result = invoke("evaluate", "nli", "--model", str(model), expect=1)
    assert "not a klue-baselines model file" in result.output


def test_bad_data_file_gives_one_line_error(tmp_path):
    bad = tmp_path / "ynat-v1.1_dev.json"
    bad.write_text('[{"guid": "x1", "title": "제목"}, {"guid": "x2"}]', encoding="utf-8")
    result = invoke("run", "ynat", "--dev", str(bad), "--train", str(sample_file("ynat", "train")), expect=1)
    assert str(bad) in result.output and "guid x2" in result.output and "'title'" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("task", TASK_CODES)
def test_score_accepts_its_own_predictions(task, tmp_path):
    gold = sample_file(task)
    predictions = tmp_path / "pred.jsonl"
    invoke("predict", task, "--input", str(gold), "--output", str(predictions))
    scored = json.loads(invoke("score", task, "--gold", str(gold), "--predictions", str(predictions),
                               "--json").output)
    for metric in get_task(task).scoring.headline:
        assert metric in scored["metrics"] or (task == "re" and metric == "auprc")


def _score(task: str, rows: list[dict], tmp_path: Path, expect: int = 0):
    predictions = tmp_path / "pred.jsonl"
    predictions.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return invoke("score", task, "--gold", str(sample_file(task)), "--predictions", str(predictions), expect=expect)


def test_score_perfect_nli_predictions(tmp_path):
    records = get_task("nli").reading.load(sample_file("nli"))
    result = _score("nli", [{"guid": r.guid, "label": r.label} for r in records], tmp_path)
    assert "accuracy" in result.output and "100.00" in result.output


def test_score_reports_missing_and_unknown_ids(tmp_path):
    records = get_task("nli").reading.load(sample_file("nli"))
    rows = [{"guid": r.guid, "label": "neutral"} for r in records[2:]] + [{"guid": "nope", "label": "neutral"}]
    result = _score("nli", rows, tmp_path, expect=1)
    assert "2 gold items have no prediction" in result.output and records[0].guid in result.output
    assert "1 predictions have unknown ids (first: nope)" in result.output


def test_score_reports_labels_outside_the_label_set(tmp_path):
    records = get_task("ynat").reading.load(sample_file("ynat"))
    rows = [{"guid": r.guid, "label": "날씨" if i < 3 else r.label} for i, r in enumerate(records)]
    result = _score("ynat", rows, tmp_path, expect=1)
    assert "3 predictions have a 'label' outside the label set" in result.output


def test_score_re_without_probabilities_gives_micro_f1(tmp_path):
    records = get_task("re").reading.load(sample_file("re"))
    result = _score("re", [{"guid": r.guid, "label": r.label} for r in records], tmp_path)
    assert "micro_f1" in result.output and "auprc" not in result.output
    assert "Warning: re: AUPRC needs 'probs' (label -> probability) in every prediction" in result.output


def test_score_mrc_accepts_a_plain_answer_object(tmp_path):
    records = get_task("mrc").reading.load(sample_file("mrc"))
    answers = {r.guid: (r.answers[0].text if r.answers and not r.is_impossible else "") for r in records}
    predictions = tmp_path / "pred.json"
    predictions.write_text(json.dumps(answers, ensure_ascii=False), encoding="utf-8")
    result = invoke("score", "mrc", "--gold", str(sample_file("mrc")), "--predictions", str(predictions), "--json")
    assert json.loads(result.output)["metrics"]["exact_match"] == 100.0


def test_score_mrc_names_a_belief_that_is_not_a_number(tmp_path):
    records = get_task("mrc").reading.load(sample_file("mrc"))
    rows = [{"guid": r.guid, "answer": "", "best_span": "", "belief": 0.5} for r in records]
    rows[1]["belief"] = "high"
    result = _score("mrc", rows, tmp_path, expect=1)
    assert "'belief'" in result.output and records[1].guid in result.output and "Traceback" not in result.output


def test_score_wos_rejects_slots_outside_the_ontology(tmp_path):
    records = get_task("wos").reading.load(sample_file("wos"))
    rows = [{"guid": r.guid, "states": [["우주-행성-화성"] for _ in r.user_turns]} for r in records]
    result = _score("wos", rows, tmp_path, expect=1)
    assert "outside the ontology" in result.output


def test_score_dp_needs_one_head_per_eojeol(tmp_path):
    records = get_task("dp").reading.load(sample_file("dp"))
    rows = [{"guid": r.guid, "heads": [0], "deprels": ["VP"]} for r in records]
    result = _score("dp", rows, tmp_path, expect=1)
    assert "needs 'heads' and 'deprels'" in result.output


def test_tasks_lists_every_task():
    result = invoke("tasks")
    for code in TASK_CODES:
        assert result.output.count(f"{code} ") >= 1


def test_tune_writes_every_trial_with_all_metrics(tmp_path):
    result = invoke("tune", "sts", "--param", "max_iter=5,50", "--folds", "2", "--results-dir", str(tmp_path))
    assert "best by pearsonr" in result.output
    report = json.loads(next((tmp_path / "tuning").glob("sts-*.json")).read_text(encoding="utf-8"))
    assert sorted(trial["params"]["max_iter"] for trial in report["trials"]) == [5, 50]
    for trial in report["trials"]:
        assert len(trial["scores"]) == 2
        assert trial["all_means"]["pearsonr"] == trial["mean"]
        assert "f1" in trial["all_means"]  # the task's other metric rides along
    assert report["trials"][0]["mean"] >= report["trials"][1]["mean"]
    assert report["command"].startswith("klue-baselines ")


def test_tune_takes_another_tasks_training_file_and_none_as_values_of_one_parameter(tmp_path):
    re_train = sample_file("re", "train")
    invoke("tune", "ner", "--param", f"re_train={re_train},null", "--param", "max_iterations=5",
           "--param", "neighbours=0", "--folds", "2", "--results-dir", str(tmp_path))
    report = json.loads((tmp_path / "tuning" / "ner-crf.json").read_text(encoding="utf-8"))
    assert sorted(str(trial["params"]["re_train"]) for trial in report["trials"]) == sorted([str(re_train), "None"])


def test_training_subsets_keep_whole_passages_and_grow_by_inclusion():
    from baselines.errors import UsageError
    from baselines.runner.evaluate import training_subset

    spec = get_task("mrc")
    records = spec.reading.load(sample_file("mrc", "train"))
    subsets = [training_subset(spec, records, fraction, seed=3) for fraction in (0.25, 0.5, 1.0)]
    assert subsets[2] == records
    assert 0 < len(subsets[0]) < len(subsets[1]) < len(records)
    assert {r.guid for r in subsets[0]} <= {r.guid for r in subsets[1]}
    for subset in subsets[:2]:
        kept = {r.context for r in subset}
        assert [r for r in records if r.context in kept] == subset  # every question of a kept passage
    assert training_subset(spec, records, 0.5, seed=3) == subsets[1]
    with pytest.raises(UsageError, match="fraction"):
        training_subset(spec, records, 0.0, seed=3)


def test_learning_curve_records_each_share_of_the_training_data(tmp_path):
    result = invoke("bench", "learning-curve", "sts", "--fractions", "1,0.5", "--results-dir", str(tmp_path))
    assert "pearsonr" in result.output
    report = json.loads((tmp_path / "learning-curve" / "sts-features-gbr.json").read_text(encoding="utf-8"))
    assert [point["fraction"] for point in report["points"]] == [0.5, 1.0]
    train_records = report["files"][0]["records"]
    assert [point["trained_on"] for point in report["points"]] == [[train_records // 2], [train_records]]
    assert report["points"][0]["metrics"] != report["points"][1]["metrics"]
    assert report["command"].startswith("klue-baselines ")
    assert set(report["code"]) == {"git_commit", "git_dirty", "source_sha256"}  # the code that made the curve
    assert "must be in (0, 1]" in invoke("bench", "learning-curve", "sts", "--fractions", "0.5,2", expect=2).output


def test_param_sets_a_hyper_parameter_and_keeps_the_default_run(tmp_path):
    invoke("run", "sts", "--results-dir", str(tmp_path))
    invoke("run", "sts", "--param", "max_iter=50", "--results-dir", str(tmp_path))
    runs = json.loads((tmp_path / "sts.json").read_text(encoding="utf-8"))["runs"]
    assert set(runs) == {"features-gbr", "features-gbr max_iter=50"}
    assert runs["features-gbr max_iter=50"]["hyper_parameters"]["max_iter"] == 50
    assert runs["features-gbr"]["hyper_parameters"]["max_iter"] != 50
    assert runs["features-gbr max_iter=50"]["metrics"] != runs["features-gbr"]["metrics"]
    assert "features-gbr max_iter=50" in (tmp_path / "README.md").read_text(encoding="utf-8")
    invoke("train", "sts", "--param", "max_iter=50", "--out", str(tmp_path / "sts.joblib"))
    assert "has no hyper-parameters ['depth']" in invoke("run", "sts", "--param", "depth=3", expect=1).output
    assert "one value" in invoke("run", "sts", "--param", "max_iter=5,50", expect=2).output
    assert "its own" in invoke("evaluate", "sts", "--model", str(tmp_path / "sts.joblib"), "--param", "max_iter=5",
                               expect=1).output


def test_the_listed_summaries_are_the_commands_own_and_every_command_is_listed():
    """`--help` lists the commands from _app.COMMANDS without importing them: each entry's module holds the command,
    and its summary gives the short help that click makes of the command's docstring, at every width."""
    import importlib

    import click

    from baselines.cli import _app
    for module in {module for module, _summary in _app.COMMANDS.values()}:
        importlib.import_module(module)
    assert set(main.commands) == set(_app.COMMANDS)
    for name, (module, summary) in _app.COMMANDS.items():
        command = main.commands[name]
        assert command.callback.__module__ == module, name
        for limit in (20, 45, 80, 200, 10_000):
            assert click.Command(name, help=summary).get_short_help_str(limit) == command.get_short_help_str(limit)


def test_help_and_tasks_start_without_any_task_or_scikit_learn():
    """The command line's start reads the cards: `--help`, `tasks` and a command's own `--help` import no task
    module, and the first two neither scikit-learn nor Kiwi."""
    probe = ("import sys\nfrom baselines.cli import main\n"
             "try:\n    main(sys.argv[1:], prog_name='klue-baselines', standalone_mode=False)\n"
             "finally:\n    print(sorted(m for m in sys.modules if m.startswith('baselines.tasks.') or "
             "m.split('.')[0] in ('sklearn', 'kiwipiepy')), file=sys.stderr)\n")
    for arguments, allowed in ((["--help"], set()), (["tasks"], set()), (["run", "--help"], {"sklearn", "kiwipiepy"})):
        finished = subprocess.run([sys.executable, "-c", probe, *arguments], capture_output=True, text=True,
                                  timeout=120)
        assert finished.returncode == 0, finished.stderr
        imported = set(ast.literal_eval(finished.stderr.strip().splitlines()[-1]))
        assert {name.split(".")[0] for name in imported} <= allowed, (arguments, imported)
    assert "ynat" in subprocess.run([sys.executable, "-m", "baselines.cli", "tasks"], capture_output=True,
                                    text=True, timeout=120).stdout
