"""Figures (--plots): Hangul renders with no missing glyph, PNGs are whole and repeatable, and the commands
that draw them say which extra is missing."""
from __future__ import annotations

import json
import warnings

import pytest
from click.testing import CliRunner

from baselines import api

from baselines.runner import generated_docs, plots, result_files, tables
from baselines.cli import main
from helpers import REPO

# The plots extra is in the test extra: these tests run, and fail where it (or plots.check_available) is broken.

TOPICS = ["IT과학", "경제", "사회", "생활문화", "세계", "스포츠", "정치"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def glyph_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


def draw_topics(path, font_family=None):
    """A confusion heat map of the seven YNAT topics, in NanumGothic or, for the control, in another font."""
    matrix = [[10 if row == column else 1 for column in range(len(TOPICS))] for row in range(len(TOPICS))]
    if font_family is None:
        return plots.confusion_heatmap(TOPICS, matrix, "YNAT: 혼동 행렬", path)
    import matplotlib
    with matplotlib.rc_context({"font.family": font_family}):
        figure = matplotlib.figure.Figure()
        figure.add_subplot().set_yticks(range(len(TOPICS)), labels=TOPICS)
        figure.savefig(path, format="png")
    return path


def test_hangul_renders_without_a_missing_glyph(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = draw_topics(tmp_path / "topics.png")
    assert glyph_warnings(caught) == []
    assert path.read_bytes().startswith(PNG_SIGNATURE)
    # The check itself can fail: the same labels in matplotlib's default font lack the glyphs.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        draw_topics(tmp_path / "control.png", font_family="DejaVu Sans")
    assert glyph_warnings(caught)


def test_a_figure_is_drawn_the_same_twice_and_leaves_no_temporary_file(tmp_path):
    first = draw_topics(tmp_path / "a.png").read_bytes()
    second = draw_topics(tmp_path / "b.png").read_bytes()
    assert first == second
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.png"]


def test_drawing_leaves_matplotlibs_settings_as_they_were(tmp_path):
    import matplotlib
    before = dict(matplotlib.rcParams)
    draw_topics(tmp_path / "topics.png")
    assert dict(matplotlib.rcParams) == before


def test_chance_f1_is_each_class_share_of_the_gold():
    assert plots.chance_f1([{"support": 1}, {"support": 3}]) == [25.0, 75.0]


def test_report_figures_on_the_sample(tmp_path):
    dev = api.data_file("ynat", "dev")
    rows = api.predict("ynat", api.fit("ynat", api.data_file("ynat", "train")), dev)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built = api.report("ynat", dev, rows, plots_dir=tmp_path)
    assert glyph_warnings(caught) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ynat-confusion.png", "ynat-f1-per-class.png"]
    assert built["figures"] == [str(tmp_path / "ynat-confusion.png"), str(tmp_path / "ynat-f1-per-class.png")]
    # A task without classes has no figure to draw.
    mrc_dev = api.data_file("mrc", "dev")
    mrc_rows = api.predict("mrc", api.fit("mrc", api.data_file("mrc", "train"), "trivial"), mrc_dev)
    assert api.report("mrc", mrc_dev, mrc_rows, plots_dir=tmp_path / "mrc")["figures"] == []


def test_run_and_learning_curve_draw_their_figures(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["-q", "run", "nli", "--model", "trivial", "--plots", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "nli-trivial-confusion.png", "nli-trivial-f1-per-class.png"]  # no chart: the floor alone is not a result
    result = runner.invoke(main, ["-q", "run", "ynat", "--plots", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "results.png").read_bytes().startswith(PNG_SIGNATURE)
    result = runner.invoke(main, ["-q", "bench", "learning-curve", "ynat", "--fractions", "0.5,1", "--cv", "2",
                                  "--plots", str(tmp_path / "curve")])
    assert result.exit_code == 0, result.output
    assert [p.name for p in (tmp_path / "curve").iterdir()] == ["ynat-tfidf-lr-learning-curve.png"]


def test_a_learning_curve_file_is_drawn_again_and_a_wrong_file_is_refused(tmp_path):
    from baselines.data.fileio import DataError
    path = api.learning_curve_figure(REPO / "results" / "learning-curve" / "mrc-span-ranker.json", tmp_path)
    assert path.name == "mrc-span-ranker-learning-curve.png" and path.read_bytes().startswith(PNG_SIGNATURE)
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"task": "mrc", "points": []}', encoding="utf-8")
    with pytest.raises(DataError, match="wrong.json.*points"):
        api.learning_curve_figure(wrong, tmp_path)


def test_cross_fitted_runs_keep_each_folds_headline():
    record = api.evaluate("ynat", "trivial", cv=3)
    assert len(record["fold_headline"]) == 3
    assert all(set(fold) == set(record["headline"]) for fold in record["fold_headline"])
    assert "fold_headline" not in api.evaluate("ynat", "trivial")


def test_the_results_chart_of_the_committed_results(tmp_path):
    path = api.results_figure(REPO / "results", tmp_path)
    assert path.name == "results.png" and path.read_bytes().startswith(PNG_SIGNATURE)
    with pytest.raises(api.UsageError, match="no recorded scores"):
        api.results_figure(tmp_path / "empty", tmp_path)


def test_the_committed_results_figure_shows_the_committed_results():
    """results/figures/results.png is drawn by the call that writes results/README.md, from the same runs: the
    rows kept in it are those of results/*.json, score for score."""
    shown = plots.figure_data(REPO / "results" / "figures" / "results.png")
    runs = result_files.all_runs(REPO / "results")
    assert shown == tables.chart_rows(runs)
    for row in shown:  # and each score is the default run's in its task's file
        default = api.task_spec(row["task"]).modelling.default_model
        assert row["ours"] == runs[row["task"]][default]["metrics"][row["metric"]]


def test_the_results_figure_is_redrawn_with_the_readme(tmp_path):
    import shutil
    for path in (REPO / "results").glob("*.json"):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "README.md").write_text("", encoding="utf-8")  # the project README a regeneration updates
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    for path in tmp_path.glob("*.json"):
        path.rename(results_dir / path.name)
    record = json.loads((results_dir / "nli.json").read_text(encoding="utf-8"))
    record["runs"]["tfidf-lr"]["metrics"]["accuracy"] = 12.5
    (results_dir / "nli.json").write_text(json.dumps(record), encoding="utf-8")
    generated_docs.regenerate_readme(results_dir)
    shown = plots.figure_data(results_dir / "figures" / "results.png")
    assert [row["ours"] for row in shown if row["task"] == "nli"] == [12.5]


def test_the_check_finds_the_installed_extra_and_names_each_missing_part(monkeypatch):
    assert plots.check_available() is None and plots._font_path().is_file()
    monkeypatch.setattr(plots.importlib.util, "find_spec",
                        lambda name, real=plots.importlib.util.find_spec: None if name == "matplotlib" else real(name))
    with pytest.raises(plots.PlotsUnavailable, match="matplotlib is not installed"):
        plots.check_available()


def test_a_missing_extra_is_one_line_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setattr(plots, "FONT_PACKAGE", "no_such_font_package")
    result = CliRunner().invoke(main, ["-q", "run", "ynat", "--plots", str(tmp_path / "figures")])
    assert result.exit_code != 0
    assert result.output.startswith("Error: ") and 'pip install "klue-baselines[plots]"' in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "figures").exists()


def test_the_results_tables_can_be_cited(tmp_path):
    """Ours marked dev and the anchors test; protocols that published numbers do not follow, and copies that
    are not the official bytes, marked; the protocols defined here; DP's anchors once; the commit named."""
    from baselines import __version__
    runs = result_files.all_runs(REPO / "results")
    table = tables.markdown_table(tables.table_rows(runs))
    assert "default (dev)" in table and "fast (dev)" in table and "(test)" not in table
    anchors = tables.anchor_section(runs)
    assert "mBERT-base (test)" in anchors and "KLUE-RoBERTa-large (test)" in anchors and "(dev)" not in anchors
    rows = {(row[0], row[1]): row for row in tables.table_rows(runs)}
    assert rows["nli", "accuracy"][-1] == "official"
    assert rows["mrc", "exact_match"][-1].endswith("†") and rows["ner", "char_macro_f1"][-1].endswith("†")
    copied = runs["ynat"]["tfidf-lr"]["files"][0]["identical_to_official"] is False
    assert rows["ynat", "macro_f1"][-1].endswith("‡") == copied
    tested = {(row[0], row[1]): row for row in tables.anchor_rows(runs)}
    assert tested["dp", "uas_micro_f1"][2] == "90.30" and tested["dp", "uas_macro_f1"][2:] == ["-", "-"]
    for (task, metric), row in rows.items():  # every recorded row shows n, its scores and their intervals
        default, fast = runs[task][api.task_spec(task).modelling.default_model], runs[task].get("fast")
        assert row[2] == f"{default['dev_records']:,}" and row[4] != "-" and row[6] != "-", row
        assert row[5] == "-" if default["intervals"][metric] is None else row[5].startswith("["), row
        assert fast is None or row[7].startswith("[") or fast["intervals"][metric] is None, row
    written = (REPO / "results" / "README.md").read_text(encoding="utf-8")
    assert "protocols: ../shared" not in written and "## Protocols" in written and "Written on " in written
    for protocol in {row[-1].split()[0] for row in rows.values()}:
        assert f"| {protocol} | {result_files.protocol_meaning(protocol)} |" in written
    assert "F1 59.54" in written  # the STS floor's two readings, explained
    citation = (REPO / "CITATION.cff").read_text(encoding="utf-8")
    assert f"version: {__version__}" in citation and "KLUE: Korean Language Understanding Evaluation" in citation
