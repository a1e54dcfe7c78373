"""What a notebook meets: one text where a list is expected, warnings that point at the cell, progress bars."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest

from baselines import api
from baselines.runner.registry import TASK_CODES


@pytest.fixture(scope="module")
def floors():
    """Each task's trivial floor, fitted on the sample: every task model reads its inputs the same way."""
    return {code: api.fit(code, api.data_file(code, "train"), "trivial", log=api.quiet) for code in TASK_CODES}


@pytest.mark.parametrize("code", TASK_CODES)
def test_one_text_where_a_list_is_expected_is_refused_in_one_line(floors, code):
    model = floors[code]
    with pytest.raises(ValueError, match=r"expected a list of inputs, not one str: pass a list of sentences, as "
                                         r"\['이순신 장군'\]"):
        model.predict("이순신 장군")
    with pytest.raises(ValueError, match=r"not one dict: pass a list of them, \[x\] for one"):
        model.predict({"text": "이순신 장군"})
    with pytest.raises(api.UsageError, match=rf"{code}: no file '이순신 장군'; to give text rather than a file, pass "
                                             rf"a list, as \['이순신 장군'\]"):
        api.predict(code, model, "이순신 장군")


def test_a_text_in_a_list_is_predicted():
    model = api.fit("ner", api.data_file("ner", "train"), "trivial", log=api.quiet)
    rows = api.predict("ner", model, ["이순신 장군"])
    assert len(rows) == 1 and len(rows[0]["tags"]) == len("이순신 장군")


def test_an_api_warning_points_at_the_callers_line(tmp_path):
    # A fresh process: the sample warning is given once per task and process.
    script = tmp_path / "cell.py"
    script.write_text("import warnings\nwarnings.simplefilter('always')\nfrom baselines import api\n"
                      "api.data_file('ynat', 'train')\n", encoding="utf-8")
    environment = {key: value for key, value in os.environ.items() if key != "KLUE_DATA_DIR"}
    environment.update(HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path))  # no download cache: the sample
    finished = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=environment)
    assert finished.returncode == 0, finished.stderr
    assert f"{script}:4: SampleDataWarning" in finished.stderr, finished.stderr


def test_progress_without_ipywidgets_is_a_text_bar_and_no_warning(monkeypatch):
    pytest.importorskip("tqdm")
    from baselines.runtime import progress
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # as in a notebook that lacks it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bar = progress.tqdm_bar()
        from tqdm.std import tqdm
        assert bar is tqdm
        with progress.text_progress(progress.quiet)("analysing", 3) as shown:
            shown.update(3)


def test_a_texts_morphemes_show_as_a_table_with_their_words_and_offsets():
    text = "이순신 장군은 1545년 서울에서 태어났다."
    table = api.analyze(text)
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    assert [(row["form"], row["tag"], row["eojeol"]) for row in rows[:3]] == [
        ("이순신", "NNP", "이순신"), ("장군", "NNG", "장군은"), ("은", "JX", "장군은")]
    assert all(text[row["start"]:row["end"]] for row in rows)
    with pytest.raises(api.UsageError, match="analyze takes one text"):
        api.analyze(["이순신"])


def test_the_features_a_model_sees_in_one_input_come_with_their_weights():
    model = api.fit("ynat", api.data_file("ynat", "train"), log=api.quiet)
    table = api.features("ynat", model, "손흥민 시즌 10호 골", top=5)
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    assert len(rows) == 5 and {row["prediction"] for row in rows} == {api.predict("ynat", model, ["손흥민 시즌 10호 골"],
                                                                                  log=api.quiet)[0]["label"]}
    assert [row["weight"] for row in rows] == sorted((row["weight"] for row in rows), reverse=True)
    with pytest.raises(api.UsageError, match="no learnt features"):
        api.features("sts", api.fit("sts", api.data_file("sts", "train"), "trivial", log=api.quiet), ("가", "나"))


def test_ones_own_figures_show_hangul_after_one_call():
    matplotlib = pytest.importorskip("matplotlib")
    before = dict(matplotlib.rcParams)
    try:
        assert api.use_korean_font() == "NanumGothic"
        assert matplotlib.rcParams["font.family"] == ["NanumGothic"] and not matplotlib.rcParams["axes.unicode_minus"]
        from matplotlib import font_manager
        assert font_manager.findfont("NanumGothic", fallback_to_default=False).endswith("NanumGothic.ttf")
    finally:
        matplotlib.rcParams.update({key: before[key] for key in ("font.family", "axes.unicode_minus")})
