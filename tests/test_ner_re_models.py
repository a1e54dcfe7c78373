"""NER CRF and RE classifier: features on awkward text, IOB2 repair, planted patterns, persistence."""
from __future__ import annotations

import ctypes
import random
from array import array

import numpy as np
import pytest

from baselines.errors import ModelFileError
from baselines.runtime.provenance import versions
from baselines.runner.persistence import load_model, save_model
from baselines.runner.registry import get_task
from baselines.runner.tuning import fold_splits
from baselines.tasks.ner import (CharacterCRF, NerSentence, character_features, iobes_to_iob2,
                                 jackknifed_type_features, morpheme_types, most_probable_iob2, repair_iob2,
                                 to_iobes)
from baselines.tasks.re import (Entity, ReExample, RelationClassifier, dependency_path_features, entity_characters,
                                pair_features)
from features.analysis import analyze
from features.morphemes import Analysis
from features.vectorize import neighbour_tokens
from model_files import assert_persists_and_refused_without


def test_character_features_on_mixed_scripts_and_zero_length_morpheme():
    text = "BTS는 2021년 漢字 😀"
    rows = character_features(text, analyze([text])[0])
    assert len(rows) == len(text)
    assert rows[0]["class"] == "upper" and rows[0]["char[+1]"] == "T"
    assert rows[text.index("2")]["class"] == "digit" and rows[text.index("漢")]["class"] == "hanja"
    space = rows[text.index(" ")]
    assert space["class"] == "space" and space["char"] == "<space>" and "morph.tag" not in space
    # A hand-made analysis whose second morpheme has no characters: features still cover every character.
    zero = Analysis("가나", ["가", "ㄴ", "나"], ["NNG", "ETM", "NNG"], array("i", [0, 1, 1]), array("i", [1, 1, 2]))
    rows = character_features("가나", zero)
    assert [r["morph.form"] for r in rows] == ["가", "나"]


def test_character_features_carry_the_covering_morphemes_neighbours():
    text = "축구 경기"
    analysis = analyze([text])[0]
    rows = character_features(text, analysis, neighbour_tokens(analysis, 10))
    assert "morph.near=농구/NNG" in rows[0] and "morph.near=농구/NNG" in rows[1]
    assert not any(name.startswith("morph.near=") for name in rows[2])  # the space
    assert not any(name.startswith("morph.near=") for name in character_features(text, analysis)[0])


def test_every_character_of_a_stem_sees_its_first_and_last_characters():
    text = "해양수산부는 발표했다"
    rows = character_features(text, analyze([text])[0])
    assert (rows[0]["stem.first"], rows[0]["stem.last"], rows[0]["stem.last2"]) == ("해", "부", "산부")
    assert rows[4]["stem.last"] == "부" and "stem.last" not in rows[5]  # the particle 는 is outside the stem


def test_type_priors_of_a_sentence_come_from_the_other_folds_only():
    texts = ["서울에 갔다.", "서울은 크다.", "부산에 갔다."]
    tags = [["B-LC", "I-LC"] + ["O"] * 5, ["B-OG", "I-OG"] + ["O"] * 5, ["B-LC", "I-LC"] + ["O"] * 5]
    analyses = analyze(texts)
    typed = [morpheme_types(a, t) for a, t in zip(analyses, tags)]
    assert ("서울\tNNP", "LC") in typed[0] and ("서울\tNNP", "OG") in typed[1]
    priors = jackknifed_type_features(typed, 3)
    assert priors[0]["서울\tNNP"] == {"morph.typed=OG": 1.0, "morph.seen": 0.1}  # only the second sentence counts
    assert priors[2]["부산\tNNP"] == {}  # seen in its own fold only: no prior at all
    model = CharacterCRF(max_iterations=5, neighbours=0, type_folds=3).fit(
        [NerSentence(str(i), text) for i, text in enumerate(texts)], tags)
    assert model.morpheme_types_["서울\tNNP"] == {"morph.typed=LC": 0.5, "morph.typed=OG": 0.5, "morph.seen": 0.2}


def test_iob2_repair():
    assert repair_iob2(["I-PS", "I-PS", "O", "I-LC", "B-OG", "I-DT"]) == ["B-PS", "I-PS", "O", "B-LC", "B-OG", "B-DT"]
    assert repair_iob2(["B-PS", "I-PS"]) == ["B-PS", "I-PS"]


def test_iobes_round_trip_and_bad_settings():
    tags = ["B-PS", "I-PS", "I-PS", "O", "B-LC", "O", "B-OG", "I-OG", "B-OG", "I-DT"]
    assert to_iobes(tags) == ["B-PS", "I-PS", "E-PS", "O", "S-LC", "O", "B-OG", "E-OG", "S-OG", "E-DT"]
    assert iobes_to_iob2(to_iobes(tags)) == tags
    with pytest.raises(ValueError, match="scheme"):
        CharacterCRF(scheme="bilou").fit([NerSentence("a", "가")], [["O"]])
    with pytest.raises(ValueError, match="type_folds"):
        CharacterCRF(type_folds=1).fit([NerSentence("a", "가")], [["O"]])


def test_marginal_decoding_adds_up_the_iobes_labels_of_each_iob2_tag():
    marginals = [{"B-PS": 0.3, "S-PS": 0.3, "O": 0.4}, {"I-PS": 0.2, "E-PS": 0.25, "B-LC": 0.3, "O": 0.25},
                 {"O": 0.5, "S-LC": 0.5}]
    assert most_probable_iob2(marginals) == ["B-PS", "I-PS", "B-LC"]  # label by label: O, B-LC, then a tie
    assert most_probable_iob2(marginals, outside_weight=0.5) == ["B-PS", "I-PS", "B-LC"]
    assert most_probable_iob2([{"B-PS": 0.3, "O": 0.7}], outside_weight=0.4) == ["B-PS"]  # 0.3 > 0.28
    assert most_probable_iob2([{"B-PS": 0.3, "O": 0.7}], outside_weight=0.5) == ["O"]
    with pytest.raises(ValueError, match="outside_weight"):
        CharacterCRF(outside_weight=0).fit([NerSentence("a", "가")], [["O"]])
    with pytest.raises(ValueError, match="decoding"):
        CharacterCRF(decoding="beam").fit([NerSentence("a", "가")], [["O"]])


NAMES = ["김철수", "이영희", "박민수", "최지우", "정하늘", "강다은"]
PLACES = ["서울", "부산", "대구", "광주", "대전", "울산"]


def planted_sentences(count: int, seed: int) -> list[NerSentence]:
    rng = random.Random(seed)
    records = []
    for index in range(count):
        name, place = rng.choice(NAMES), rng.choice(PLACES)
        text = f"{name} 씨는 어제 {place}에 갔다."
        tags = ["O"] * len(text)
        tags[0] = "B-PS"
        tags[1:len(name)] = ["I-PS"] * (len(name) - 1)
        start = text.index(place, len(name))
        tags[start] = "B-LC"
        tags[start + 1:start + len(place)] = ["I-LC"] * (len(place) - 1)
        records.append(NerSentence(f"n{seed}-{index}", text, tags))
    return records


def test_crf_learns_planted_entities_and_persists(tmp_path):
    train = planted_sentences(40, seed=1)
    model = CharacterCRF(max_iterations=50).fit(train, [r.tags for r in train])
    test = [NerSentence("t", "홍길동 씨는 어제 인천에 갔다.")]
    predicted = model.predict(test)[0]
    assert get_task("ner").modelling.predict(model, test)[0]["entities"] == [
        {"start": 0, "end": 3, "type": "PS", "text": "홍길동"}, {"start": 10, "end": 12, "type": "LC", "text": "인천"}]
    assert predicted[:3] == ["B-PS", "I-PS", "I-PS"]
    assert model.set_params(decoding="marginal").predict(test)[0] == predicted
    model.set_params(decoding="viterbi")
    train_file = tmp_path / "train.tsv"
    train_file.write_text("", encoding="utf-8")
    save_model(tmp_path / "ner.joblib", model, "ner", "crf", [train_file], versions())
    loaded, _ = load_model(tmp_path / "ner.joblib", "ner", versions())
    assert loaded.predict(test) == model.predict(test)


def test_passive_aggressive_crf_is_seeded_by_random_state_not_by_earlier_draws():
    train = planted_sentences(40, seed=1)
    tags = [r.tags for r in train]

    def weights(random_state: int) -> list:
        model = CharacterCRF(algorithm="pa", epochs=3, neighbours=0, random_state=random_state).fit(train, tags)
        return sorted(model.crf_.state_features_.items())

    first = weights(0)
    ctypes.CDLL(None).rand()  # a draw from the generator crfsuite shuffles with, as other code might make
    assert weights(0) == first
    assert weights(1) != first  # glibc seeds 0 and 1 alike; the model's seeds are shifted apart
    model = CharacterCRF(algorithm="pa", neighbours=0).fit(train, tags)
    assert model.predict([NerSentence("t", "홍길동 씨는 어제 인천에 갔다.")])[0][:3] == ["B-PS", "I-PS", "I-PS"]
    with pytest.raises(ValueError, match="algorithm"):
        CharacterCRF(algorithm="sgd").fit(train, tags)


def planted_relations(count: int, seed: int) -> list[ReExample]:
    rng = random.Random(seed)
    records = []
    for index in range(count):
        person, place = rng.choice(NAMES), rng.choice(PLACES)
        if index % 2:
            sentence, label = f"{person}은 {place}에서 태어났다.", "per:place_of_birth"
        else:
            sentence, label = f"{person}은 {place}에 여행을 갔다.", "no_relation"
        start = sentence.index(place)
        records.append(ReExample(f"r{seed}-{index}", sentence, Entity(person, 0, len(person) - 1, "PER"),
                                 Entity(place, start, start + len(place) - 1, "LOC"), label))
    return records


def test_relation_classifier_learns_planted_trigger_and_probabilities(tmp_path):
    train = planted_relations(40, seed=2)
    model = RelationClassifier(C=5.0).fit(train, [r.label for r in train])
    test = planted_relations(10, seed=3)
    assert list(model.predict(test)) == [r.label for r in test]
    relations = get_task("re").resources.load_resources({"relation_list.json": _relation_list(tmp_path)})["relations"]
    rows = get_task("re").modelling.predict(model, test)
    assert all(abs(sum(row["probs"].values()) - 1) < 1e-4 for row in rows)
    scored = get_task("re").scoring.score(test, rows, {"relations": relations})
    assert scored["micro_f1"] == 100.0 and "auprc" in scored
    train_file = tmp_path / "train.json"
    train_file.write_text("[]", encoding="utf-8")
    save_model(tmp_path / "re.joblib", model, "re", "features-lr", [train_file], versions())
    loaded, _ = load_model(tmp_path / "re.joblib", "re", versions())
    assert np.array_equal(loaded.predict_proba(test), model.predict_proba(test))


def test_entity_surface_and_typed_words():
    surface = entity_characters("object", Entity("서울대학교", 0, 4, "ORG"))
    assert {"object_suffix=교|ORG", "object_suffix=학교|ORG", "object_suffix=대학교|ORG", "object_prefix=서|ORG",
            "object_prefix=서울|ORG", "object_length=5|ORG", "object_bigram=대학"} <= set(surface)
    assert len([name for name in surface if "_bigram=" in name]) == 4
    sentence = "철수는 영희와 결혼했다."
    record = ReExample("r", sentence, Entity("철수", 0, 1, "PER"), Entity("영희", 4, 5, "PER"))
    analysis = analyze([sentence])[0]
    plain = pair_features(record, analysis)
    rich = pair_features(record, analysis, entity_surface=True, typed_words=True)
    assert "word=결혼|PER>PER" in rich and "word=결혼|PER>PER" not in plain
    assert "subject_suffix=수|PER" in rich and set(plain) < set(rich)
    record = ReExample("r2", "김철수 사장은 회사를 떠났다.", Entity("회사", 8, 9, "ORG"), Entity("사장", 4, 5, "POH"))
    analysis = analyze([record.sentence])[0]
    near = pair_features(record, analysis, morpheme_neighbours=neighbour_tokens(analysis, 10))
    assert "object_neighbour=회장/NNG|POH" in near
    assert {name.split("|")[1] for name in near if name.startswith("subject_neighbour=")} == {"ORG"}


def test_dependency_path_features_follow_both_entities_up_to_the_word_that_heads_them():
    # 김철수는 / 2010년 / 삼성을 / 세웠다. : the subject and the object both depend on 세웠다 (the root's child).
    sentence = "김철수는 2010년 삼성을 세웠다."
    record = ReExample("r", sentence, Entity("김철수", 0, 2, "PER"), Entity("삼성", 12, 13, "ORG"))
    analysis = analyze([sentence])[0]
    heads, relations = [4, 4, 4, 0], ["NP_SBJ", "NP_AJT", "NP_OBJ", "VP"]
    features = dependency_path_features(record, analysis, heads, relations)
    assert {"path=NP_SBJ^NP_OBJ", "path=NP_SBJ^NP_OBJ|PER>ORG", "path_length=2", "path_head=세우/VV",
            "path_head=세우/VV|PER>ORG", "subject_relation=NP_SBJ|PER>ORG", "object_relation=NP_OBJ|PER>ORG",
            "subject_head=세우/VV", "object_head=세우/VV"} == set(features)
    # the object's eojeol heads the subject's: the path climbs from the subject alone
    chain = dependency_path_features(record, analysis, [3, 3, 4, 0], ["NP", "NP_AJT", "NP_OBJ", "VP"])
    assert chain["path=NP^|PER>ORG"] == 1.0 and chain["path=object_heads_subject|PER>ORG"] == 1.0
    assert chain["subject_head=삼성/NNP"] == 1.0 and not any(name.startswith("path_head=") for name in chain)
    # both in one eojeol, and a long path shown by its first three relations
    same = ReExample("s", sentence, Entity("김철수", 0, 2, "PER"), Entity("철수", 1, 2, "PER"))
    assert set(dependency_path_features(same, analysis, heads, relations)) == {"path=same_eojeol",
                                                                               "path=same_eojeol|PER>PER"}
    assert "path=NP_SBJ/NP_AJT^" in dependency_path_features(record, analysis, [2, 3, 4, 0], ["NP_SBJ", "NP_AJT",
                                                                                               "NP_OBJ", "VP"])
    chained = ReExample("c", "가 나 다 라 마", Entity("가", 0, 0, "PER"), Entity("마", 8, 8, "ORG"))
    deep = dependency_path_features(chained, analyze([chained.sentence])[0], [2, 3, 4, 5, 0], list("ABCD") + ["VP"])
    assert {"path=A/B/C/...^|PER>ORG", "path_length=4-7", "path=object_heads_subject|PER>ORG"} <= set(deep)


def test_dp_train_gives_the_relation_classifier_a_kiwi_tag_parser_whose_paths_it_learns(tmp_path):
    from sklearn.frozen import FrozenEstimator

    from baselines import api
    from baselines.data.sources import sample_dir

    model = api.make_model("re", dp_train=str(sample_dir("dp") / "klue-dp-v1.1" / "klue-dp-v1.1_train.tsv"))
    assert isinstance(model.parser, FrozenEstimator)
    parser = model.parser.estimator
    assert (parser.pos, parser.order, parser.perceptrons) == ("kiwi", 1, 1)
    train = planted_relations(40, seed=2)
    model.set_params(C=5.0).fit(train, [r.label for r in train])
    assert any(name.startswith("path=") for name in model.vectorizer_.get_feature_names_out())
    test = planted_relations(10, seed=3)
    assert list(model.predict(test)) == [r.label for r in test]
    plain = RelationClassifier(C=5.0).fit(train, [r.label for r in train])
    assert not any(name.startswith("path=") for name in plain.vectorizer_.get_feature_names_out())
    save_model(tmp_path / "re.joblib", model, "re", "features-lr", [], versions())
    loaded, _ = load_model(tmp_path / "re.joblib", "re", versions())  # the parser is inside the model
    assert np.array_equal(loaded.predict_proba(test), model.predict_proba(test))


def test_relation_folds_keep_the_pairs_of_a_sentence_together():
    records = [ReExample(f"r{i}", f"문장 {i // 3}", Entity("문장", 0, 1, "ORG"), Entity(str(i // 3), 3, 3, "NOH"))
               for i in range(30)]  # three pairs per sentence
    for train, held_out in fold_splits(get_task("re"), records, 5, seed=0):
        assert not {records[i].sentence for i in train} & {records[i].sentence for i in held_out}


def _relation_list(tmp_path):
    from baselines.data.sources import sample_dir

    return sample_dir("re") / "klue-re-v1.1" / "relation_list.json"


def test_the_ner_crf_reads_a_gazetteer_of_the_re_training_files_names(tmp_path):
    from baselines import api
    from baselines.data.sources import sample_dir
    from features.gazetteer import EntityGazetteer

    text = "홍길동은 한빛전자에 다닌다"
    rows = character_features(text, analyze([text])[0], gazetteer=EntityGazetteer([("홍길동", "PER"), ("한빛전자", "ORG")]))
    assert [row.get("gazetteer.type,place") for row in rows[:4]] == ["PER,first", "PER,inside", "PER,last", None]
    assert [row.get("gazetteer.type") for row in rows[5:10]] == ["ORG"] * 4 + [None]
    compound = "신한빛전자 사장"  # the name inside a word: found only with gazetteer_inside
    names = EntityGazetteer([("한빛전자", "ORG")])
    outside = character_features(compound, analyze([compound])[0], gazetteer=names)
    assert not any("gazetteer.type" in row for row in outside)
    inside = character_features(compound, analyze([compound])[0], gazetteer=names, gazetteer_inside=3)
    assert [row.get("gazetteer.type,place") for row in inside[:6]] == [
        None, "ORG,first", "ORG,inside", "ORG,inside", "ORG,last", None]
    re_train = sample_dir("re") / "klue-re-v1.1" / "klue-re-v1.1_train.json"
    model = api.make_model("ner", max_iterations=5, re_train=str(re_train))
    names = {(e.word, e.type) for r in api.load("re", re_train) for e in (r.subject, r.object) if len(e.word) >= 2}
    assert isinstance(model.gazetteer, EntityGazetteer) and set(model.gazetteer.types.items()) <= names
    records = api.load("ner", sample_dir("ner") / "klue-ner-v1.1" / "klue-ner-v1.1_train.tsv")
    model.fit(records, [r.tags for r in records])
    learnt = {attribute for attribute, _label in model.crf_.state_features_}
    assert {"gazetteer.type:PER", "gazetteer.type:ORG", "gazetteer.type,place:PER,first"} <= learnt  # weighed
    names = model.gazetteer.types
    # Saved by a version before the gazetteer, a model is refused, not read until it fails.
    loaded = assert_persists_and_refused_without(tmp_path, model, "ner", "crf", records[:20], "gazetteer",
                                                 "without the hyper-parameters gazetteer; train the model again")
    assert loaded.gazetteer.types == names


def test_a_crf_saved_with_the_old_coded_feature_names_is_refused_on_loading(tmp_path):
    import sklearn_crfsuite
    records = [NerSentence("a", "서울 시"), NerSentence("b", "부산 시")]
    tags = [["B-LC", "I-LC", "O", "O"], ["B-LC", "I-LC", "O", "O"]]
    model = CharacterCRF(max_iterations=3, neighbours=0, type_folds=0).fit(records, tags)
    assert model.layout_mismatch() is None
    path = tmp_path / "ner.model"
    coded = sklearn_crfsuite.CRF(max_iterations=3)  # as versions before 0.2 named them: 'c', 'k-1', 'mf+1'
    coded.fit([[{"c": c, "k": "HG"} for c in record.text] for record in records], tags)
    model.crf_ = coded
    save_model(path, model, "ner", "crf", [], versions())
    with pytest.raises(ModelFileError, match="feature names were codes; train the model again"):
        load_model(path, "ner", versions())
