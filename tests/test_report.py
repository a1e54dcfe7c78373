"""report: per-class precision/recall/F1/support, confusion matrices and the worst errors, on the sample."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sklearn.metrics import f1_score

from baselines import api
from baselines.cli import main
from baselines.runner.registry import TASK_CODES
from baselines.metrics.teaching import Comparison, per_class


def test_per_class_matches_scikit_learn_and_leaves_out_the_outside_label():
    comparison = Comparison("entity", gold=["PS", "PS", "O", "LC"], predicted=["PS", "O", "LC", "LC"], outside="O")
    rows = {row["label"]: row for row in per_class(comparison)}
    assert set(rows) == {"PS", "LC"}
    assert rows["PS"]["precision"] == 100.0 and rows["PS"]["recall"] == 50.0 and rows["PS"]["support"] == 2
    assert rows["LC"]["precision"] == 50.0 and rows["LC"]["recall"] == 100.0


def test_a_ynat_report_agrees_with_the_official_macro_f1(tmp_path):
    dev = api.data_file("ynat", "dev")
    rows = api.predict("ynat", api.fit("ynat", api.data_file("ynat", "train")), dev)
    built = api.report("ynat", dev, rows, errors=3)
    mean_f1 = sum(row["f1"] for row in built["classes"]) / len(built["classes"])
    assert mean_f1 == pytest.approx(built["metrics"]["macro_f1"], abs=1e-3)
    gold = [row["gold"] for row in rows]
    assert sum(row["support"] for row in built["classes"]) == len(gold)
    assert sum(map(sum, built["confusion"]["matrix"])) == len(gold)
    assert f1_score(gold, [row["label"] for row in rows], average="macro") * 100 == pytest.approx(mean_f1, abs=1e-3)
    confidences = [error["how_wrong"] for error in built["errors"]]
    assert len(confidences) == 3 and confidences == sorted(confidences, reverse=True)
    assert all(error["gold"] != error["predicted"] and error["input"] for error in built["errors"])


def test_ner_entity_rows_are_seqevals_strict_per_type_scores():
    dev = api.data_file("ner", "dev")
    rows = api.predict("ner", api.fit("ner", api.data_file("ner", "train")), dev)
    built = api.report("ner", dev, rows)
    assert built["classes"]
    for row in built["classes"]:
        assert row["f1"] == pytest.approx(built["metrics"][f"entity_f1/{row['label']}"], abs=1e-3)
    assert built["confusion"]["labels"][-1] == "O"


def test_ner_errors_show_each_entity_with_the_spaces_of_its_sentence():
    """Entities are scored on the characters without spaces; the errors shown had lost the spaces inside them."""
    from baselines.tasks.ner import NerSentence, compare

    text = "부산에서 8시간 20분 걸린다"
    tags = ["B-LC", "I-LC", "O", "O", "O"] + ["B-TI"] + ["I-TI"] * 6 + ["O"] * 4  # 8시간 20분 is one time
    predicted = tags[:8] + ["O", "B-TI", "I-TI", "I-TI"] + tags[12:]  # two times, 8시간 and 20분
    shown = compare([NerSentence("s", text, tags)], [{"tags": predicted}]).shown
    assert shown == [("부산/LC, 8시간 20분/TI", "부산/LC, 8시간/TI, 20분/TI")]


@pytest.mark.parametrize("task", ["sts", "mrc", "wos", "dp", "re", "nli"])
def test_every_task_reports(task):
    dev = api.data_file(task, "dev")
    rows = api.predict(task, api.fit(task, api.data_file(task, "train"), "trivial"), dev)
    built = api.report(task, dev, rows, errors=2)
    assert built["metrics"] and len(built["errors"]) <= 2
    assert ("classes" in built) == (task in ("dp", "re", "nli"))


def test_predictions_carry_their_input_and_gold():
    dev = api.data_file("nli", "dev")
    rows = api.predict("nli", api.fit("nli", api.data_file("nli", "train"), "trivial"), dev)
    records = api.load("nli", dev)
    assert rows[0]["input"] == [records[0].premise, records[0].hypothesis]
    assert rows[0]["gold"] == records[0].label
    unlabelled = api.predict("nli", api.fit("nli", api.data_file("nli", "train"), "trivial"), [("가", "나")])
    assert "gold" not in unlabelled[0]


def predicted_and_reported(task: str, folder, *report_options: str):
    """`predict` the task's sample dev file, then `report` it with report_options: (dev file, report result)."""
    dev = api.data_file(task, "dev")
    predictions = folder / f"{task}.jsonl"
    runner = CliRunner()
    assert runner.invoke(main, ["-q", "predict", task, "--input", str(dev), "--output", str(predictions)]
                         ).exit_code == 0
    result = runner.invoke(main, ["-q", "report", task, "--gold", str(dev), "--predictions", str(predictions),
                                  *report_options])
    assert result.exit_code == 0, result.output
    return dev, result


def test_the_command_prints_tables_and_writes_json(tmp_path):
    dev, result = predicted_and_reported("ynat", tmp_path, "--errors", "2", "--out", str(tmp_path / "report.json"))
    runner = CliRunner()
    assert "per class (title)" in result.output and "confusion" in result.output and "gold:" in result.output
    written = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert len(written["errors"]) == 2 and written["classes"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"guid": "nobody", "label": "정치"}\n', encoding="utf-8")
    refused = runner.invoke(main, ["-q", "report", "ynat", "--gold", str(dev), "--predictions", str(bad)])
    assert refused.exit_code != 0 and refused.output.startswith("Error:")


def test_wos_slot_values_count_as_precision_and_recall():
    from collections import Counter, defaultdict

    from baselines.metrics.teaching import precision_recall_rows
    from baselines.tasks.wos import count_slot_values
    counts = defaultdict(Counter)
    count_slot_values(counts, ["관광-이름-명동 쇼핑-거리", "관광-지역-서울 중앙"], ["관광-이름-명동 쇼핑-거리",
                                                                      "관광-지역-서울 북쪽", "관광-종류-공원"])
    assert counts["관광-이름"] == Counter(tp=1) and counts["관광-지역"] == Counter(fp=1, fn=1)
    assert counts["관광-종류"] == Counter(fp=1)
    rows = {row["group"]: row for row in precision_recall_rows(counts, "turns")}
    assert rows["관광-이름"]["f1"] == 100.0 and rows["관광-지역"]["f1"] == 0.0 and rows["관광-종류"]["turns"] == 0


def test_tasks_without_classes_break_down_by_group(tmp_path):
    mrc_dev = api.data_file("mrc", "dev")
    rows = api.predict("mrc", api.fit("mrc", api.data_file("mrc", "train"), "trivial"), mrc_dev)
    built = api.report("mrc", mrc_dev, rows)
    groups = {row["group"]: row for row in built["groups"]["rows"]}
    assert built["groups"]["by"] == "question type"
    assert groups["answerable"]["questions"] + groups["unanswerable"]["questions"] == len(rows)
    for group in ("answerable", "unanswerable"):
        assert groups[group]["exact_match"] == pytest.approx(built["metrics"][f"exact_match/{group}"], abs=1e-3)
        assert groups[group]["rouge_w"] == pytest.approx(built["metrics"][f"rouge_w/{group}"], abs=1e-3)
    _dev, result = predicted_and_reported("wos", tmp_path, "--errors", "0", "--out", str(tmp_path / "wos-report.json"))
    assert "per slot" in result.output and "precision" in result.output
    slots = json.loads((tmp_path / "wos-report.json").read_text(encoding="utf-8"))["groups"]["rows"]
    assert slots and all(0 <= row["f1"] <= 100 for row in slots)


def plain_python(value) -> bool:
    """Whether a report holds only JSON's own types (no numpy scalars)."""
    if isinstance(value, dict):
        return all(isinstance(key, str) and plain_python(item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return all(plain_python(item) for item in value)
    return value is None or type(value) in (str, int, float, bool)


@pytest.mark.parametrize("task", TASK_CODES)
def test_a_report_holds_plain_python_numbers_and_says_how_its_errors_are_ranked(task):
    dev = api.data_file(task, "dev")
    rows = api.predict(task, api.fit(task, api.data_file(task, "train"), "trivial"), dev)
    report = api.report(task, dev, rows)
    assert plain_python(report), report
    assert report["errors_ranked_by"]
    if task == "ynat":
        bare = api.report(task, dev, [{"guid": row["guid"], "label": row["label"]} for row in rows])
        assert "no probabilities" in bare["errors_ranked_by"] and "file order" in bare["errors_ranked_by"]


def test_a_second_report_does_not_overwrite_the_first_ones_figures(tmp_path):
    pytest.importorskip("matplotlib")
    dev = api.data_file("ynat", "dev")
    rows = api.predict("ynat", api.fit("ynat", api.data_file("ynat", "train"), "trivial"), dev)
    first = api.report("ynat", dev, rows, plots_dir=tmp_path)
    drawn = {path: Path(path).read_bytes() for path in first["figures"]}
    with pytest.raises(api.UsageError, match="already holds ynat-confusion.png.*or overwrite=True"):
        api.report("ynat", dev, rows, plots_dir=tmp_path)
    assert {path: Path(path).read_bytes() for path in first["figures"]} == drawn
    for path in first["figures"]:
        Path(path).write_bytes(b"an earlier figure")
    again = api.report("ynat", dev, rows, plots_dir=tmp_path, overwrite=True)  # a notebook cell run again
    assert again["figures"] == first["figures"]
    assert {path: Path(path).read_bytes() for path in again["figures"]} == drawn


def test_terminal_tables_align_beside_hangul(tmp_path):
    from baselines.cli._console import _display_width
    dev = api.data_file("ynat", "dev")
    rows = api.predict("ynat", api.fit("ynat", api.data_file("ynat", "train"), "trivial"), dev)
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    scored = CliRunner().invoke(main, ["-q", "score", "ynat", "--gold", str(dev), "--predictions", str(predictions)])
    lines = [line for line in scored.output.splitlines() if line.startswith("class_f1/")]
    assert len(lines) == 7 and len({_display_width(line) for line in lines}) == 1, lines  # numbers end together
    reported = CliRunner().invoke(main, ["-q", "report", "ynat", "--gold", str(dev), "--predictions", str(predictions)])
    table = reported.output.split("per class")[1].split("\n\n")[0].splitlines()[1:]
    # The second column starts at the same display column on every row, Hangul labels or not.
    def second_column(line: str) -> int:
        label, rest = line[:line.index("  ")], line[line.index("  "):]
        return _display_width(label) + len(rest) - len(rest.lstrip())

    starts = {second_column(line) for line in table}
    assert len(table) == 8 and len(starts) == 1, table


def test_sts_and_nli_reports_break_down_by_source(tmp_path):
    dev = api.data_file("sts", "dev")
    records = api.load("sts", dev)
    first = records[0].source
    # Right on the first source's pairs; a constant 2.5 on every other pair (Pearson r undefined there).
    rows = [{"guid": r.guid, "score": r.score if r.source == first else 2.5} for r in records]
    built = api.report("sts", dev, rows)
    groups = {row["group"]: row for row in built["groups"]["rows"]}
    assert built["groups"]["by"] == "source" and set(groups) == {r.source for r in records} and len(groups) > 1
    assert sum(row["pairs"] for row in groups.values()) == len(records)
    assert groups[first]["pearsonr"] == pytest.approx(100.0) and groups[first]["f1"] in (0.0, 100.0)
    other = next(source for source in groups if source != first)
    gold = [r.score for r in records if r.source == other]
    assert groups[other]["pearsonr"] is None and groups[other]["predicted_mean"] == 2.5
    assert groups[other]["gold_mean"] == pytest.approx(sum(gold) / len(gold))
    path = tmp_path / "sts.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    printed = CliRunner().invoke(main, ["report", "sts", "--gold", str(dev), "--predictions", str(path)])
    assert printed.exit_code == 0 and "per source" in printed.output and "n/a" in printed.output

    dev = api.data_file("nli", "dev")
    records = api.load("nli", dev)
    rows = [{"guid": r.guid, "label": r.label if r.source == records[0].source else "neutral"} for r in records]
    groups = {row["group"]: row for row in api.report("nli", dev, rows)["groups"]["rows"]}
    assert groups[records[0].source]["accuracy"] == 100.0
    for source, row in groups.items():
        inside = [r for r in records if r.source == source]
        right = sum(r.label == "neutral" or r.source == records[0].source for r in inside)
        assert row["pairs"] == len(inside) and row["accuracy"] == pytest.approx(100 * right / len(inside))
