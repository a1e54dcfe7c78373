"""Pictures of predictions: what each task's drawing marks, that hostile text stays text, and the html format."""
from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from baselines import api
from baselines.cli import main
from baselines.errors import UnknownTask
from baselines.display.html import ENTITY_TYPES, arc_levels, tree_svg


def test_entities_are_marked_in_their_types_colour_with_a_legend():
    row = {"guid": "g1", "input": "이순신은 서울에 갔다.",
           "entities": [{"start": 0, "end": 3, "type": "PS", "text": "이순신"},
                        {"start": 5, "end": 7, "type": "LC", "text": "서울"}]}
    html = api.show("ner", [row])._repr_html_()
    assert f'<mark style="background:{ENTITY_TYPES["PS"][0]}">이순신<sub>PS</sub></mark>은 ' in html
    assert f'<mark style="background:{ENTITY_TYPES["LC"][0]}">서울<sub>LC</sub></mark>에 갔다.' in html
    assert all(f"{kind} {name}" in html for kind, (_colour, name) in ENTITY_TYPES.items())  # the legend


def test_text_from_the_input_is_shown_as_text_never_as_markup():
    hostile = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    rows = {"ner": {"input": hostile, "entities": [{"start": 0, "end": 8, "type": "<b>", "text": "<script>"}]},
            "ynat": {"input": hostile, "label": hostile, "probs": {hostile: 1.0}},
            "dp": {"input": hostile, "heads": [0], "deprels": [hostile]},
            "re": {"input": {"sentence": hostile, "subject_entity": {"word": hostile, "start_idx": 0, "end_idx": 3,
                                                                     "type": hostile},
                             "object_entity": {"word": "x", "start_idx": 9, "end_idx": 9, "type": "LOC"}},
                   "label": hostile, "probs": {hostile: 0.5}},
            "mrc": {"input": {"context": hostile, "question": hostile}, "answer": hostile},
            "wos": {"input": {"dialogue": [{"role": "user", "text": hostile}]}, "states": [[hostile]]}}
    for task, row in rows.items():
        html = api.show(task, [{"guid": hostile, **row}])._repr_html_()
        assert "<script" not in html and "<img" not in html, task
        assert "&lt;script&gt;" in html, task


def test_a_tree_has_an_arc_and_a_label_for_each_dependent_and_nested_arcs_rise_above_the_inner_ones():
    words, heads, deprels = ["나는", "밥을", "먹었다"], [3, 3, 0], ["NP_SBJ", "NP_OBJ", "VP"]
    svg = tree_svg(words, heads, deprels)
    assert svg.count('fill="none"') == 2 and svg.count("<line ") == 1  # two arcs, the root's arrow
    assert all(f">{label}</text>" in svg for label in ("NP_SBJ", "NP_OBJ", "ROOT VP", "나는", "먹었다"))
    assert arc_levels(heads) == {2: 1, 1: 2}  # 밥을 <- 먹었다 lies under 나는 <- 먹었다
    assert arc_levels([2, 0, 2, 3]) == {1: 1, 3: 1, 4: 1}  # arcs side by side stay low


def test_a_relation_an_answer_a_label_and_a_dialogue_state_are_drawn():
    relation = api.show("re", [{"guid": "r", "label": "per:origin", "probs": {"per:origin": 0.7, "no_relation": 0.3},
                            "input": {"sentence": "홍길동은 조선 사람이다.",
                                      "subject_entity": {"word": "홍길동", "start_idx": 0, "end_idx": 2, "type": "PER"},
                                      "object_entity": {"word": "조선", "start_idx": 5, "end_idx": 6, "type": "LOC"}}}]
                    )._repr_html_()
    assert "홍길동<sub>subject PER</sub>" in relation and "조선<sub>object LOC</sub>" in relation
    assert "per:origin (0.70)" in relation
    answer = api.show("mrc", [{"guid": "m", "answer": "조선", "input": {"context": "홍길동은 조선 사람이다.", "question": "어디?"},
                           "gold": ["조선"]}])._repr_html_()
    assert "조선<sub>answer</sub>" in answer and "(gold: 조선)" in answer
    declined = api.show("mrc", [{"guid": "m", "answer": "", "input": {"context": "본문", "question": "무엇?"}}]
                        )._repr_html_()
    assert "답 없음 (no answer)" in declined
    label = api.show("ynat", [{"guid": "y", "label": "스포츠", "probs": {"스포츠": 0.9}, "input": "손흥민 골", "gold": "스포츠"}],
                 {"examples": [{"guid": "y", "features": [{"feature": "morphemes 골/NNG", "weight": 0.5},
                                                          {"feature": "characters 손", "weight": -0.1}]}]})
    assert "morphemes 골/NNG +0.50" in label._repr_html_() and "characters 손 -0.10" in label._repr_html_()
    state = api.show("wos", [{"guid": "w", "states": [["관광-지역-서울"]],
                          "input": {"dialogue": [{"role": "user", "text": "서울 관광지"}, {"role": "sys", "text": "네"}]}}])
    assert "관광-지역-서울" in state._repr_html_()


def test_predict_writes_a_page_that_draws_the_predictions(tmp_path):
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text('{"text": "이순신 장군은 1545년 서울에서 태어났다."}\n', encoding="utf-8")
    page = tmp_path / "page.html"
    result = CliRunner().invoke(main, ["-q", "predict", "ner", "--input", str(inputs), "--format", "html", "--output",
                                       str(page)])
    assert result.exit_code == 0, result.output
    written = page.read_text(encoding="utf-8")
    assert written.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in written
    assert "태어났다." in written and "<sub>LC</sub>" in written
    assert not re.search(r"<(script|link)\b", written)  # nothing fetched: it opens offline
    refused = CliRunner().invoke(main, ["-q", "predict", "ner", "--input", str(inputs), "--format", "html"])
    assert refused.exit_code != 0 and "html" in refused.output and "--output FILE" in refused.output


def test_the_api_shows_predictions_in_a_notebook():
    model = api.fit("ner", api.data_file("ner", "train"), "trivial", log=api.quiet)
    shown = api.show("ner", api.predict("ner", model, ["이순신 장군", "서울"], log=api.quiet))
    assert shown.task == "ner" and shown._repr_html_().count('class="item"') == 2
    with pytest.raises(UnknownTask, match="unknown task 'nosuchtask'"):
        api.show("nosuchtask", [])
