"""YNAT, NLI and STS models: they learn planted patterns, survive clone, and persist exactly."""
from __future__ import annotations

import random

import numpy as np
import pytest
from sklearn.base import clone

from baselines.runtime.provenance import versions
from baselines.runner.persistence import load_model, save_model
from baselines.tasks.nli import InferenceClassifier, NliExample
from baselines.tasks.sts import SimilarityRegressor, StsExample, best_f1_shift, source_parts
from baselines.tasks.ynat import TopicClassifier, YnatExample
from model_files import assert_persists_and_refused_without

# What loading an STS or NLI model saved before the embedding features says.
REFUSED_OLD = "without the embedding features; train the model again"

FILLER = ["오늘", "새로운", "발표", "이번", "관계자", "결과", "내년", "계획", "현장", "소식", "지역", "올해"]
TOPICS = {"스포츠": ["축구", "야구", "골키퍼", "홈런"], "경제": ["주식", "환율", "금리", "코스피"],
          "세계": ["미국", "유럽", "중국", "대사관"]}


def planted_titles(count: int, seed: int) -> list[YnatExample]:
    rng = random.Random(seed)
    records = []
    for index in range(count):
        label = rng.choice(sorted(TOPICS))
        words = rng.sample(FILLER, 3) + [rng.choice(TOPICS[label])]
        rng.shuffle(words)
        records.append(YnatExample(f"t{seed}-{index}", " ".join(words), label))
    return records


def test_topic_classifier_learns_planted_topic_words():
    train, test = planted_titles(90, seed=1), planted_titles(30, seed=2)
    model = TopicClassifier(C=10.0, min_df=1).fit(train, [r.label for r in train])
    accuracy = np.mean(model.predict(test) == np.array([r.label for r in test]))
    assert accuracy >= 0.9
    assert np.allclose(model.predict_proba(test).sum(axis=1), 1.0)


def test_topic_classifier_reaches_unseen_words_through_their_neighbours():
    # Training titles name 축구 and 반도체 only; the test titles use words never seen in training whose
    # nearest morphemes in Kiwi's language model include the training words.
    rng = random.Random(4)
    train = [YnatExample(f"n{i}", " ".join(rng.sample(FILLER, 3) + [word]), label)
             for i, (word, label) in enumerate([("축구", "스포츠"), ("반도체", "IT과학")] * 30)]
    test = [YnatExample("u1", "농구 소식", "스포츠"), YnatExample("u2", "메모리 소식", "IT과학")]
    labels = [r.label for r in train]
    expanded = TopicClassifier(C=10.0, min_df=1, char_ngrams=None).fit(train, labels)
    plain = TopicClassifier(C=10.0, min_df=1, char_ngrams=None, neighbours=0).fit(train, labels)
    assert list(expanded.predict(test)) == ["스포츠", "IT과학"]
    assert np.allclose(plain.predict_proba(test)[0], plain.predict_proba(test)[1])


def test_models_survive_clone():
    for model in (TopicClassifier(C=3.0), InferenceClassifier(C=0.5), SimilarityRegressor(max_iter=50)):
        copy = clone(model)
        assert copy.get_params() == model.get_params() and copy is not model


def test_topic_classifier_persists_exactly(tmp_path):
    train = planted_titles(60, seed=3)
    train_file = tmp_path / "train.json"
    train_file.write_text("[]", encoding="utf-8")
    model = TopicClassifier(min_df=1).fit(train, [r.label for r in train])
    save_model(tmp_path / "m.joblib", model, "ynat", "tfidf-lr", [train_file], versions())
    loaded, metadata = load_model(tmp_path / "m.joblib", "ynat", versions())
    assert metadata["model"] == "tfidf-lr"
    assert np.array_equal(loaded.predict_proba(train), model.predict_proba(train))


PREMISES = ["철수는 어제 서울에서 친구를 만났다.", "이 숙소는 역에서 가깝고 깨끗하다.", "회사는 올해 신제품을 출시했다.",
            "학생들이 도서관에서 책을 읽었다.", "그 식당은 주말에도 문을 연다.", "정부는 새 정책을 발표했다."]


def planted_pairs() -> list[NliExample]:
    records = []
    for index, premise in enumerate(PREMISES * 4):
        body = premise.rstrip(".")
        variants = [(premise, "entailment"), (f"{body}지 않았다.", "contradiction"),
                    (f"{body}, 그리고 많은 사람들이 기뻐했다.", "neutral")]
        for number, (hypothesis, label) in enumerate(variants):
            records.append(NliExample(f"n{index}-{number}", premise, hypothesis, label))
    return records


def test_inference_classifier_learns_planted_negation_and_addition(tmp_path):
    records = planted_pairs()
    model = InferenceClassifier(C=5.0, min_df=1).fit(records, [r.label for r in records])
    premise = "민수는 오늘 공원에서 개를 산책시켰다."
    test = [NliExample("a", premise, premise, None), NliExample("b", premise, "민수는 오늘 공원에서 개를 산책시키지 않았다.", None),
            NliExample("c", premise, "민수는 오늘 공원에서 개를 산책시켰다, 그리고 많은 사람들이 기뻐했다.", None)]
    assert list(model.predict(test)) == ["entailment", "contradiction", "neutral"]
    assert model.embedding_alignment and model.cross_vectorizer_.vocabulary_["embedding_least_aligned"] >= 0
    assert_persists_and_refused_without(tmp_path, model, "nli", "tfidf-lr", test, "embedding_alignment", REFUSED_OLD)


def test_inference_classifier_stacks_a_booster_on_out_of_fold_probabilities():
    records = planted_pairs()
    labels = [r.label for r in records]
    alone = InferenceClassifier(C=5.0, min_df=1, stack_folds=0).fit(records, labels)
    stacked = InferenceClassifier(C=5.0, min_df=1, stack_folds=3).fit(records, labels)
    assert alone.stacker_ is None and stacked.stacker_ is not None
    assert np.allclose(alone.predict_proba(records), stacked.classifier_.predict_proba(
        stacked._explained_matrix(records)))
    assert not np.allclose(stacked.predict_proba(records), alone.predict_proba(records))
    assert list(stacked.predict(records)) == labels
    serial = InferenceClassifier(C=5.0, min_df=1, stack_folds=3, n_jobs=1).fit(records, labels)
    assert np.array_equal(serial.predict_proba(records), stacked.predict_proba(records))  # 2 processes: the same
    with pytest.raises(ValueError, match="stack_folds=7 needs at least 7 premises in the training data, got 6"):
        InferenceClassifier(min_df=1, stack_folds=7).fit(records, labels)


def test_similarity_regressor_orders_planted_pairs(tmp_path):
    rng = random.Random(0)
    sentences = PREMISES + ["날씨가 맑아서 산책하기 좋았다.", "가격이 비싸지만 서비스가 훌륭했다.", "그는 매일 아침 운동을 한다."]
    records = []
    for index in range(120):
        first = rng.choice(sentences)
        if index % 2:
            records.append(StsExample(f"s{index}", first, first, 5.0))
        else:
            other = rng.choice([s for s in sentences if s != first])
            records.append(StsExample(f"s{index}", first, other, 0.5))
    model = SimilarityRegressor(svd_components=5, max_iter=60, min_samples_leaf=5)
    model.fit(records, [r.score for r in records])
    same = StsExample("x", "회의는 내일 오전에 열린다.", "회의는 내일 오전에 열린다.")
    different = StsExample("y", "회의는 내일 오전에 열린다.", "고양이가 창가에서 졸고 있다.")
    high, low = model.predict([same, different])
    assert high > 4.0 and low < 1.5
    assert_persists_and_refused_without(tmp_path, model, "sts", "features-gbr", [same, different],
                                        "embedding_alignment", REFUSED_OLD)


def test_f1_shift_undoes_a_bias_at_the_threshold():
    gold = np.linspace(0.0, 5.0, 101)
    assert best_f1_shift(gold, gold) == 0.0
    # Predictions 0.3 too low put gold 3.0-3.3 below the cut: the shift that restores them is +0.3.
    assert best_f1_shift(gold, gold - 0.3) == pytest.approx(0.3)
    assert best_f1_shift(gold, gold + 0.25) == pytest.approx(-0.25)


def test_source_splits_into_domain_and_method():
    assert source_parts("airbnb-rtt") == ("airbnb", "paraphrase")
    assert source_parts("paraKQC-para") == ("paraKQC", "paraphrase")
    assert source_parts("policy-sampled") == ("policy", "sampled")
    assert source_parts("news") == ("news", "unknown")
    assert source_parts(None) == ("unknown", "unknown")


@pytest.mark.parametrize("factory", [lambda: TopicClassifier(min_df=1)])
def test_two_fits_give_identical_predictions(factory):
    train = planted_titles(60, seed=5)
    y = [r.label for r in train]
    first, second = factory().fit(train, y), factory().fit(train, y)
    assert np.array_equal(first.predict_proba(train), second.predict_proba(train))
