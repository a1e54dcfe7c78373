"""MRC answer typing and sentence retrieval: BM25 with soft matches, typed spans, expected answer types."""
from __future__ import annotations

import shutil
from collections import Counter

import numpy as np
import pytest
from scipy import sparse
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator

from baselines.data.sources import sample_dir
from baselines.runtime.provenance import versions
from baselines.runner.persistence import load_model, save_model
from baselines.runner.registry import get_task
from baselines.tasks.mrc import MrcAnswer, MrcQuestion, SpanRanker, targets
from baselines.tasks.mrc.answer_types import (ANSWER_TYPES, ENTITY_TYPES, SHAPE_NAMES, TYPED_FEATURE_NAMES,
                                              PassageEntities, answer_type, question_type_features, span_types,
                                              typed_features)
from baselines.tasks.mrc.passages import (Retrieval, SentenceTerms, best_retrieval, bm25_scores, sentence_ranking,
                                          sentence_terms)
from features.analysis import analyze


def test_a_near_word_counts_in_a_sentence_at_its_similarity():
    terms = sentence_terms({"창립"}, {"창립": {"설립": 0.8}}, [Counter({"설립": 2, "회사": 1}), Counter({"창립": 1})])
    assert terms.words == ["창립"]
    assert terms.frequencies.tolist() == [[pytest.approx(1.6), 1.0]]
    assert terms.lengths.tolist() == [3.0, 1.0]


def test_bm25_ranks_the_sentence_of_the_rare_word_first_and_lends_its_neighbours_a_share():
    # '설립' is in one sentence of three, '회사' in all: the rare word decides.
    terms = SentenceTerms(["설립", "회사"], np.array([[0.0, 1.0, 0.0], [1.0, 1.0, 1.0]]), np.array([4.0, 4.0, 4.0]))
    alone = bm25_scores(terms, Retrieval(k1=1.2, b=0.0, neighbour_share=0.0))
    assert sentence_ranking(alone)[0] == 1 and alone[0] == pytest.approx(alone[2])
    shared = bm25_scores(terms, Retrieval(k1=1.2, b=0.0, neighbour_share=0.5))
    assert shared[0] == pytest.approx(alone[0] + 0.5 * alone[1])
    assert shared[1] == pytest.approx(alone[1] + 0.5 * (alone[0] + alone[2]))


def test_the_retrieval_setting_is_the_one_that_ranks_the_answer_sentences_first():
    # The answer sentence is short and says the word once; a long one says it twice. Only length
    # normalisation (b > 0) puts the answer sentence first.
    terms = SentenceTerms(["설립"], np.array([[1.0, 2.0, 0.0]]), np.array([2.0, 40.0, 20.0]))
    assert sentence_ranking(bm25_scores(terms, Retrieval(k1=2.0, b=0.0, neighbour_share=0.0)))[0] == 1
    chosen = best_retrieval([(terms, 0)] * 3, depth=1)
    assert chosen.b > 0
    assert sentence_ranking(bm25_scores(terms, chosen))[0] == 0


def test_spans_are_typed_by_the_entity_they_are_or_overlap():
    entities = ((0, 3, "PS"), (10, 15, "DT"))
    exact, inside = span_types([(0, 3), (0, 5), (11, 13), (5, 8)], entities)
    assert exact.tolist() == [ENTITY_TYPES.index("PS"), -1, -1, -1]
    assert inside.tolist() == [-1, ENTITY_TYPES.index("PS"), ENTITY_TYPES.index("DT"), -1]


def test_a_gold_answer_takes_the_type_of_the_entity_that_covers_most_of_it():
    context = "김철수는 1990년에 서울에서 태어났다."
    entities = ((0, 3, "PS"), (5, 10, "DT"), (12, 14, "LC"))
    assert answer_type(context, "1990년", entities) == "DT"
    assert answer_type(context, "김철수는", entities) == "PS"  # 3 of its 4 characters
    assert answer_type(context, "서울에서 태어났다", entities) == "O"  # the entity is a small part of it
    assert answer_type(context, "부산", entities) == "O"  # not in the passage


def test_typed_features_weigh_each_span_by_the_expected_type_of_its_entity():
    expected = np.zeros(len(ANSWER_TYPES))
    expected[[ANSWER_TYPES.index("PS"), ANSWER_TYPES.index("DT"), ANSWER_TYPES.index("O")]] = [0.7, 0.2, 0.1]
    shapes = np.zeros((3, len(SHAPE_NAMES)))
    shapes[2, 0] = 1.0  # the third span is a number
    person, date = ENTITY_TYPES.index("PS"), ENTITY_TYPES.index("DT")
    block = typed_features(np.array([person, -1, date]), np.array([-1, date, -1]), expected,
                           sparse.csr_matrix(shapes)).toarray()
    column = {name: index for index, name in enumerate(TYPED_FEATURE_NAMES)}
    assert block.shape == (3, len(TYPED_FEATURE_NAMES))
    assert block[0, column["entity_PS"]] == 1.0
    assert block[0, column["expected_PS*entity_PS"]] == pytest.approx(0.7)
    assert block[1, column["expected_DT*inside_DT"]] == pytest.approx(0.2)
    assert block[1, column["expected_O*not_entity"]] == pytest.approx(0.1)
    assert block[:, column["type_agreement"]].tolist() == pytest.approx([0.7, 0.1, 0.2])
    assert block[2, column["expected_DT*span_number"]] == pytest.approx(0.2)
    assert block[2, column["expected_PS*span_number"]] == pytest.approx(0.7)


def test_the_expected_type_reads_the_wh_word_and_the_focus_noun_with_its_near_words():
    question = analyze(["회사를 세운 사람은 누구인가?"])[0]
    features = question_type_features(question, {"사람": {"인물": 0.8}})
    assert features["wh=누구"] == 1.0 and features["rule=person"] == 1.0
    assert features["focus=사람"] == 1.0 and features["near_focus=인물"] == 0.8


def typed_questions(count: int) -> list[MrcQuestion]:
    """Who founded what, and when: half the questions ask for a person, half for a year; every third has
    no answer (it asks about a company the passage does not name)."""
    people = ["김철수", "이영희", "박민수", "최지우", "정하늘", "강다은"]
    companies = ["삼성전자", "현대자동차", "엘지화학", "네이버", "카카오", "포스코"]
    records = []
    for index in range(count):
        person, company, absent = people[index % 6], companies[index % 6], companies[(index + 3) % 6]
        year = f"{1950 + index}년"
        context = f"{company}는 {year}에 서울에서 {person} 씨가 설립했다. 이 회사는 지금도 성장하고 있다."
        asked = absent if index % 3 == 2 else company
        question = f"{asked}를 설립한 사람은 누구인가?" if index % 2 else f"{asked}가 설립된 해는 언제인가?"
        answer = person if index % 2 else year
        answers = [] if index % 3 == 2 else [MrcAnswer(answer, context.index(answer))]
        records.append(MrcQuestion(f"t{index}", question, context, answers=answers, is_impossible=not answers))
    return records


@pytest.fixture(scope="module")
def sample_tagger():
    """The NER task's default model fitted on the sample's NER training file, frozen, as the driver gives it."""
    from baselines.runner import build

    requirement = get_task("mrc").links.requires[0]
    return build.fitted_requirement(requirement, sample_dir("ner") / "klue-ner-v1.1" / "klue-ner-v1.1_train.tsv", 0)


def test_ner_train_fits_the_ner_tagger_once_and_the_reader_keeps_it_without_the_file(tmp_path):
    from baselines import api

    ner_train = tmp_path / "ner_train.tsv"
    shutil.copy(sample_dir("ner") / "klue-ner-v1.1" / "klue-ner-v1.1_train.tsv", ner_train)
    reader = api.make_model("mrc", neighbours=0, calibration_folds=2, ner_train=str(ner_train))
    assert isinstance(reader.tagger, FrozenEstimator) and reader.get_params()["tagger"] is reader.tagger
    assert clone(reader).tagger is reader.tagger  # a fold's clone shares the fitted tagger: nothing is refitted
    records = typed_questions(48)
    reader.fit(records, targets(records))
    assert reader.tagger_ is reader.tagger and reader.type_model_ is not None
    readings = reader.read(records)
    # The tagger learnt from 305 sentences types the years as dates and the founders as persons, and the
    # classifier learns which one each kind of question asks for.
    assert [r.expected_type for r in readings] == ["DT", "PS"] * 24
    assert sum(r.best_span == record.answers[0].text for r, record in zip(readings, records) if record.answers) \
        >= 0.9 * 32
    ner_train.unlink()  # the tagger is inside the reader: predicting needs no NER file
    path = tmp_path / "reader.joblib"
    save_model(path, reader, "mrc", "span-ranker", [], versions())
    loaded, _metadata = load_model(path, "mrc", versions())
    assert loaded.predict(records) == reader.predict(records)
    assert [r.expected_type for r in loaded.read(records)] == [r.expected_type for r in reader.read(records)]


def test_the_tagger_the_driver_fits_is_the_ner_tasks_default_model_with_the_runs_seed(sample_tagger):
    from baselines import api

    own = api.fit("ner", sample_dir("ner") / "klue-ner-v1.1" / "klue-ner-v1.1_train.tsv", seed=0)
    sentences = ["삼성전자는 1950년에 서울에서 설립됐다.", "김철수 씨는 2001년 3월 부산으로 갔다."]
    assert sample_tagger.predict(sentences) == own.predict(sentences)
    assert sample_tagger.estimator.crf_.state_features_ == own.crf_.state_features_


def test_an_unfitted_tagger_is_refused_with_what_to_do():
    from baselines.tasks.ner import CharacterCRF

    records = typed_questions(12)
    with pytest.raises(ValueError, match="not fitted.*FrozenEstimator"):
        SpanRanker(neighbours=0, calibration_folds=2, tagger=CharacterCRF()).fit(records, targets(records))


def test_passages_are_tagged_only_in_the_sentences_asked_for_and_each_sentence_once(sample_tagger):
    first, second = "삼성전자는 1950년에 서울에서 설립됐다.", "김철수 씨는 2001년 부산으로 갔다."
    context = f"{first} {second}"
    tagged: list[str] = []

    class CountingTagger:
        def predict(self, pieces):
            tagged.extend(pieces)
            return sample_tagger.predict(pieces)

    memo = PassageEntities(CountingTagger())
    later = context.index("김철수")
    only_second = memo.entities({context: [(later, later + 3)]})[context]
    assert tagged == [second]
    assert only_second and all(start >= len(first) for start, _end, _kind in only_second)
    both = memo.entities({context: [(0, 4), (later, later + 3)]})[context]
    assert tagged == [second, first]  # the second sentence is not tagged again
    # The same entities as the NER task finds in each sentence alone, in passage offsets.
    alone = [(offset + entity["start"], offset + entity["end"], entity["type"])
             for offset, row in zip((0, len(first) + 1), get_task("ner").modelling.predict(
                 sample_tagger, get_task("ner").reading.as_records([first, second])))
             for entity in row["entities"]]
    assert list(both) == sorted(alone)


def test_the_reader_diagnostics_are_broken_down_by_what_each_question_asks_for():
    records = [MrcQuestion("a", "누가?", "김철수가 왔다.", answers=[MrcAnswer("김철수", 0)]),
               MrcQuestion("b", "누가?", "이영희가 왔다.", answers=[MrcAnswer("이영희", 0)]),
               MrcQuestion("c", "언제?", "어제 왔다.", is_impossible=True)]
    rows = [{"guid": "a", "answer": "김철수", "best_span": "김철수", "belief": 0.9, "asks_for": "person",
             "expected_type": "PS"},
            {"guid": "b", "answer": "", "best_span": "왔다", "belief": -0.5, "asks_for": "person", "expected_type": "PS"},
            {"guid": "c", "answer": "", "best_span": "어제", "belief": 0.1, "asks_for": "time", "expected_type": "DT"}]
    metrics = get_task("mrc").scoring.score(records, rows, {})
    assert metrics["asks_for=person/questions"] == 2 and metrics["expected_type=DT/questions"] == 1
    assert metrics["asks_for=person/exact_match"] == 50.0 and metrics["asks_for=time/exact_match"] == 100.0
    assert metrics["expected_type=PS/best_span_exact_match/answerable"] == 50.0
    assert "expected_type=PS/answerable_auc" not in metrics  # no unanswerable question of that kind
