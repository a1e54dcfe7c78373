"""explain: the strongest features of each learnt model, and per-input contributions that add up."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.linear_model import LogisticRegression

from baselines import api
from baselines.cli import main
from baselines.errors import UsageError
from baselines.models.explain import class_rows, readable, strongest


def test_feature_names_read_as_a_person_would():
    assert readable("morphemes__축구/NNG 경기/NNG") == "morphemes 축구/NNG 경기/NNG"
    assert readable("neighbours__야구/NNG") == "neighbour 야구/NNG"
    assert readable("characters__골 ") == 'characters "골 "'
    assert readable("pair=ORG>PER") == "pair=ORG>PER"


def test_strongest_orders_by_weight_and_size():
    names, weights = ["a", "b", "c", "d"], np.array([0.5, -2.0, 1.5, 0.5])
    assert strongest(names, weights, 3) == [("c", 1.5), ("a", 0.5), ("d", 0.5)]
    assert strongest(names, weights, 2, both_signs=True) == [("b", -2.0), ("c", 1.5)]


def test_a_binary_classifier_speaks_for_both_classes():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.1], [0.1, 1.0]])
    model = LogisticRegression().fit(X, ["no", "yes", "no", "yes"])
    rows = class_rows(model)
    assert np.allclose(rows["yes"], model.coef_[0]) and np.allclose(rows["no"], -model.coef_[0])


def test_contributions_add_up_to_the_predicted_class_score():
    model = api.fit("ynat", api.data_file("ynat", "train"))
    titles = ["손흥민, 시즌 10호 골로 팀 승리 이끌어", "코스피 2% 급락…외국인 매도"]
    explanation = api.explain("ynat", model, top_k=3, inputs=titles, per_input=100000)
    assert set(explanation["sections"]) == set(model.classes_)
    for weights in explanation["sections"].values():
        values = [w["weight"] for w in weights]
        assert len(values) == 3 and values == sorted(values, reverse=True) and values[-1] > 0
    scores = model.classifier_.decision_function(model._explained_matrix(model._to_records(titles)))
    for row, example in zip(scores, explanation["examples"]):
        predicted = list(model.classes_).index(example["prediction"])
        total = sum(w["weight"] for w in example["features"]) + model.classifier_.intercept_[predicted]
        assert total == pytest.approx(row[predicted])
        assert example["prediction"] == model.predict([example["input"]])[0]


@pytest.mark.parametrize("task, section", [("nli", "entailment"), ("re", "no_relation"), ("ner", "transitions"),
                                           ("dp", "relation NP_SBJ"), ("mrc", "span ranker")])
def test_every_learnt_model_shows_its_features(task, section):
    model = api.fit(task, api.data_file(task, "train"), **({"neighbours": 0} if task == "mrc" else {}))
    sections = api.explain(task, model, top_k=4)["sections"]
    assert section in sections and 0 < len(sections[section]) <= 4


def test_the_tracker_shows_its_slot_gates():
    model = api.fit("wos", api.data_file("wos", "train"))
    sections = api.explain("wos", model, top_k=2)["sections"]
    assert sections and all(": " in name and not name.endswith(": none") for name in sections)


def test_models_without_features_are_refused_in_one_line():
    with pytest.raises(UsageError, match="no learnt features"):
        api.explain("ynat", api.fit("ynat", api.data_file("ynat", "train"), "trivial"))
    runner = CliRunner()
    refused = runner.invoke(main, ["-q", "explain", "sts"])
    assert refused.exit_code != 0 and "no learnt features" in refused.output
    refused = runner.invoke(main, ["-q", "explain", "dp", "--input", str(api.data_file("dp", "dev"))])
    assert refused.exit_code != 0 and "linear classifier" in refused.output


def test_the_command_prints_sections_and_examples(tmp_path):
    path = tmp_path / "titles.jsonl"
    path.write_text(json.dumps({"title": "손흥민, 시즌 10호 골로 팀 승리 이끌어"}, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    result = CliRunner().invoke(main, ["-q", "explain", "ynat", "--top", "2", "--input", str(path)])
    assert result.exit_code == 0, result.output
    assert "스포츠\n" in result.output and "line-1: 손흥민" in result.output and "  -> " in result.output
    as_json = json.loads(CliRunner().invoke(main, ["-q", "explain", "ynat", "--top", "2", "--json"]).output)
    assert all(len(weights) == 2 for weights in as_json["sections"].values())


# A name of NER's features: what it describes, then where ([-1] the character before, [0,+2] this one to two after).
NER_FEATURE_NAME = re.compile(r"(char|chars|class|morph|eojeol|stem|gazetteer)(\.[a-z0-9]+)*(,[a-z]+)?(\[[-+0-9,]+\])?")


@pytest.fixture(scope="module")
def ner_model():
    return api.fit("ner", api.data_file("ner", "train"), log=api.quiet)


def test_every_ner_feature_name_reads_as_it_is(ner_model):
    """Feature names say what they describe ('morph.form[+1]', 'gazetteer.type'), with no table to look up."""
    from collections import Counter

    from baselines.tasks.ner import character_features, type_features
    from features.analysis import analyze
    from features.gazetteer import EntityGazetteer
    records = api.load("ner", api.data_file("ner", "dev"))[:40]
    names = EntityGazetteer((record.text[:2], "PER") for record in records)
    keys = {key.split("=")[0] for record, analysis in zip(records, analyze(r.text for r in records))
            for row in character_features(record.text, analysis, [["x/NNG"]] * len(analysis.forms),
                                          {}, names) for key in row}
    keys |= {key.split("=")[0] for key in type_features(Counter({"PS": 2, "O": 1}))}  # a morpheme's prior types
    assert {"morph.typed", "morph.seen", "gazetteer.type", "morph.near", "char[-2]", "chars[0,+2]",
            "stem.place"} <= keys
    unreadable = sorted(key for key in keys if not NER_FEATURE_NAME.fullmatch(key))
    assert not unreadable, unreadable
    sections = api.explain("ner", ner_model, top_k=5)["sections"]
    labels = [name.split()[1] for name in sections if name.startswith("label ")]
    assert labels and all(label == "O" or label[:2] in ("B-", "I-") for label in labels)  # IOB2, as predicted
    for name, items in sections.items():
        if name != "transitions":
            assert all(NER_FEATURE_NAME.fullmatch(re.split("[:=]", item["feature"])[0]) for item in items), items


def test_ner_explains_each_characters_tag_as_predict_tags_it(ner_model, tmp_path):
    sentence = "이순신 장군은 서울에서 태어났다."
    explanation = api.explain("ner", ner_model, top_k=3, inputs=[sentence], per_input=2)
    characters = explanation["examples"][0]["characters"]
    assert "".join(c["character"] for c in characters) == sentence
    assert [c["tag"] for c in characters] == ner_model.predict([sentence])[0]
    assert all(0 < len(c["features"]) <= 2 for c in characters)
    rows = explanation["rows"]
    assert {"section", "feature", "weight"} <= set(rows[0]) and any(row.get("character") == "이" for row in rows)
    table = api.explanation_table(explanation)
    assert len(table) == len(rows)
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"text": sentence}, ensure_ascii=False) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["-q", "explain", "ner", "--top", "1", "--input", str(path)])
    assert result.exit_code == 0, result.output
    first = next(line for line in result.output.splitlines() if line.startswith("  이"))
    assert first.split()[1] == "B-PS" and "morph." in first
