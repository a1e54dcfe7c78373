"""MRC reader: candidate spans, particle stripping, a planted question pattern, persistence."""
from __future__ import annotations

import numpy as np
import pytest

from baselines.runtime.provenance import versions
from baselines.runner.persistence import ModelFileError, load_model, save_model
from baselines.runner.registry import get_task
from baselines.metrics.scoring import mrc_reader_diagnostics, normalize_mrc_answer
from baselines.tasks.mrc import (FEATURE_INDEX, SpanRanker, candidate_spans, question_type, question_view,
                                 related_words, targets)
from features.analysis import analyze
from baselines.tasks.mrc.passages import sentence_ids
from baselines.tasks.mrc import reader as reader_module
from baselines.tasks.mrc import ranking
from baselines.tasks.mrc.decision import DECISION_C
from baselines.tasks.mrc.reader import N_BEST, RANKER_ALPHAS, n_best
from helpers import planted_questions

def candidate_texts(context: str) -> list[str]:
    analysis = analyze([context])[0]
    sentences = sentence_ids(analysis)
    spans = candidate_spans(analysis, analysis.sejong_tags, sentences, set(sentences), max_eojeols=4,
                            max_chars=40)
    return [context[analysis.starts[first]:analysis.ends[last]] for first, last in spans]


def test_candidates_strip_particles_and_hold_the_gold_span():
    context = "김철수는 1990년에 서울에서 태어났다.이영희는 ‘운영허가 인증서’를 받았다."
    texts = candidate_texts(context)
    assert "서울" in texts and "서울에서" not in texts  # the particle is not part of an answer
    assert "김철수" in texts and "1990년" in texts
    assert "‘운영허가 인증서’" in texts and "운영허가 인증서" in texts
    assert "이영희" in texts  # a sentence that starts without a space after '.'
    assert not any("태어났" in text and "이영희" in text for text in texts)  # never across sentences


def test_question_types_from_wh_words_and_focus_nouns():
    questions = analyze(["누가 상을 받았나?", "회사가 위치한 나라는?", "행사가 열린 날짜는 언제인가?",
                         "학교의 수는 몇 개인가?", "사고 비행기의 목적지는?"])
    assert [question_type(q)[0] for q in questions] == ["person", "place", "time", "quantity", "other"]
    assert question_type(questions[4])[1] == "목적지"


def test_ranker_learns_a_planted_pattern_and_survives_persistence(tmp_path):
    train, test = planted_questions(90, seed=1), planted_questions(30, seed=2)
    model = SpanRanker(random_state=0).fit(train, targets(train))
    predicted = model.predict(test)
    answerable = [(r, p) for r, p in zip(test, predicted) if not r.is_impossible]
    assert sum(text == r.answers[0].text and start == r.answers[0].start for r, (text, start) in answerable) \
        >= 0.9 * len(answerable)
    unanswerable = [text for r, (text, _start) in zip(test, predicted) if r.is_impossible]
    assert sum(text == "" for text in unanswerable) >= 0.8 * len(unanswerable)
    assert model.decision_.C_ in DECISION_C  # the decision's penalty, chosen on the training questions
    rows = get_task("mrc").modelling.predict(model, test)
    assert all(r.context[row["start"]:row["end"]] == row["answer"] for r, row in zip(test, rows))
    # A declined question still shows the span the reader would have given, and its belief in it.
    assert all(row["best_span"] and row["belief"] is not None for row in rows)
    assert all(row["best_span"] == row["answer"] for row in rows if row["answer"])
    # The n-best list leads with the best span and lists each answer once.
    assert all(row["n_best"][0] == row["best_span"] and 1 < len(row["n_best"]) <= N_BEST for row in rows)
    assert all(len({normalize_mrc_answer(t) for t in row["n_best"]}) == len(row["n_best"]) for row in rows)
    metrics = get_task("mrc").scoring.score(test, rows, {})
    assert metrics["best_span_exact_match/answerable"] >= 90
    assert metrics["answerable_auc"] >= 0.8
    assert metrics["told_exact_match"] >= metrics["exact_match"]
    assert metrics["top_20_exact_match/answerable"] >= metrics["top_5_exact_match/answerable"] \
        >= metrics["best_span_exact_match/answerable"]
    train_file = tmp_path / "train.json"
    train_file.write_text("{}", encoding="utf-8")
    save_model(tmp_path / "mrc.joblib", model, "mrc", "span-ranker", [train_file], versions())
    loaded, _ = load_model(tmp_path / "mrc.joblib", "mrc", versions())
    assert loaded.predict(test) == predicted
    # A reader fitted by a version with other candidate features is refused when loaded, by its file's name.
    model.feature_names_ = model.feature_names_[:-2]
    save_model(tmp_path / "older.joblib", model, "mrc", "span-ranker", [train_file], versions())
    with pytest.raises(ModelFileError, match=r"older\.joblib: this MRC reader was fitted on \d+ candidate features"):
        load_model(tmp_path / "older.joblib", "mrc", versions())
    del model.feature_names_  # saved before readers recorded them
    save_model(tmp_path / "oldest.joblib", model, "mrc", "span-ranker", [train_file], versions())
    with pytest.raises(ModelFileError, match="did not record its candidate features"):
        load_model(tmp_path / "oldest.joblib", "mrc", versions())


def test_a_question_s_rows_are_scaled_as_the_fitted_scaler_scales_them(monkeypatch):
    scaled = []
    original = SpanRanker._scaled

    def compared(self, rows):
        ours, library = original(self, rows), self.scaler_.transform(rows)
        scaled.append(ours.dtype == library.dtype and (ours != library).nnz == 0
                      and np.array_equal(ours.indices, library.indices) and (ours is not rows))
        return ours

    monkeypatch.setattr(SpanRanker, "_scaled", compared)
    train, test = planted_questions(45, seed=3), planted_questions(15, seed=4)
    SpanRanker(random_state=0).fit(train, targets(train)).predict(test)
    assert len(scaled) >= len(test) and all(scaled)


def test_the_ranker_chooses_its_penalty_by_the_held_out_best_span_of_its_training_questions(monkeypatch):
    train = planted_questions(90, seed=1)
    assert SpanRanker(random_state=0).fit(train, targets(train)).alpha_ in RANKER_ALPHAS
    fixed = SpanRanker(alpha=0.07, random_state=0).fit(train, targets(train))
    assert fixed.alpha_ == 0.07
    # The choice is the one whose held-out best spans are right most often, wherever it stands in the grid,
    # and the first on a tie: here one value's fits are turned into a ranker that puts the worst span first.
    fit_weights = ranking.listwise_weights

    def rigged(blocks, gold, alpha, max_iter, start=None):
        weights = fit_weights(blocks, gold, 0.1, max_iter)
        return -weights if alpha == 0.5 else weights

    monkeypatch.setattr(ranking, "listwise_weights", rigged)
    for grid, chosen in [((0.5, 0.2), 0.2), ((0.2, 0.5), 0.2), ((0.3, 0.2), 0.3), ((0.2, 0.3), 0.2)]:
        monkeypatch.setattr(reader_module, "RANKER_ALPHAS", grid)
        assert SpanRanker(abstain=False, random_state=0).fit(train, targets(train)).alpha_ == chosen
    # One passage: nothing to hold out, so the first (most penalised) value, and no no-answer decision.
    one_passage = [r for r in train if r.context == train[0].context]
    assert SpanRanker(abstain=False, random_state=0).fit(one_passage, targets(one_passage)).alpha_ == 0.2
    with pytest.raises(ValueError, match="at least 2 passages"):
        SpanRanker(random_state=0).fit(one_passage, targets(one_passage))


def test_without_abstaining_the_reader_answers_every_question_with_its_best_span():
    train, test = planted_questions(90, seed=1), planted_questions(30, seed=2)
    abstaining = SpanRanker(random_state=0).fit(train, targets(train))
    answering = SpanRanker(abstain=False, random_state=0).fit(train, targets(train))
    assert answering.decision_ is None
    predicted = answering.predict(test)
    assert all(text for text, _start in predicted)
    # The same span scorer: where the abstaining reader answers, both give the same span.
    assert all(mine == theirs for mine, theirs in zip(predicted, abstaining.predict(test)) if theirs[0])


def test_reader_diagnostics_measure_the_span_scorer_and_the_decision_apart():
    gold = {"a": ["서울"], "b": [], "c": ["부산"]}
    predictions = [{"guid": "a", "best_span": "서울", "belief": 0.9},
                   {"guid": "b", "best_span": "대구", "belief": 0.5},
                   {"guid": "c", "best_span": "", "belief": None}]  # no candidate span
    metrics = mrc_reader_diagnostics(gold, predictions)
    assert metrics["best_span_exact_match/answerable"] == 50.0
    assert abs(metrics["told_exact_match"] - 200 / 3) < 1e-9  # a right, b declined, c wrong
    # a outranks b, and c (without a belief) ranks below b: one of two pairs in order.
    assert metrics["answerable_auc"] == 0.5
    without_beliefs = [{**p, "belief": None} for p in predictions]
    assert "answerable_auc" not in mrc_reader_diagnostics(gold, without_beliefs)
    assert "top_5_exact_match/answerable" not in metrics  # no n-best lists


def test_the_n_best_diagnostics_find_the_answer_as_deep_as_the_list_is_read():
    gold = {"a": ["서울"], "b": [], "c": ["부산", "부산시"], "d": ["대구"]}
    listed = {"a": ["서울"], "b": ["광주"], "c": ["울산", "인천", "포항", "창원", "수원", "부산시!"],
              "d": ["대전"] + [f"후보{i}" for i in range(30)] + ["대구"]}
    predictions = [{"guid": guid, "best_span": spans[0], "belief": None, "n_best": spans}
                   for guid, spans in listed.items()]
    metrics = mrc_reader_diagnostics(gold, predictions)
    # Of the answerable a, c and d: a's answer is first; c's sixth (as the metric normalises it); d's past 20.
    assert metrics["best_span_exact_match/answerable"] == pytest.approx(100 / 3)
    assert metrics["top_5_exact_match/answerable"] == pytest.approx(100 / 3)
    assert metrics["top_20_exact_match/answerable"] == pytest.approx(200 / 3)
    # Without an n-best list for every question there is nothing to measure.
    del predictions[1]["n_best"]
    assert "top_20_exact_match/answerable" not in mrc_reader_diagnostics(gold, predictions)


def test_an_n_best_list_holds_distinct_answers_best_first_and_the_earlier_of_a_tie_first():
    texts = ["서울", "부산", "서울.", "대구", "광주"]
    scores = np.array([1.0, 3.0, 2.0, 3.0, 0.5])
    assert n_best(texts, scores) == ("부산", "대구", "서울.", "광주")  # "서울" is "서울." as an answer
    assert n_best(texts, scores, size=2) == ("부산", "대구")
    assert n_best([], np.zeros(0)) == ()


def test_a_near_word_in_the_passage_stands_in_for_a_question_word():
    question, context = analyze(["이 회사를 창립한 사람은 누구인가?",
                                 "김철수는 1990년에 이 회사를 설립했다. 그는 서울에서 태어났다. 회사는 부산에 있다."])
    related = related_words(question, 10)
    assert "설립" in related["창립"]  # Kiwi's language model knows the paraphrase
    exact, soft = question_view(question, context, 3, 4, 40), question_view(question, context, 3, 4, 40, related)
    assert soft.missing_words == exact.missing_words > soft.unrelated_words
    assert soft.passage_soft_share > exact.passage_soft_share == exact.passage_share
    founder = next(i for i, (start, _end) in enumerate(soft.spans) if context.text[start:].startswith("김철수"))
    share, near = (soft.features[founder, FEATURE_INDEX[name]] for name in ("sentence_share", "sentence_soft"))
    assert near > share  # its sentence says 설립, not 창립


def test_views_are_memoised_outside_the_reader_and_memory_shares_them(tmp_path):
    import pickle

    from sklearn.base import clone

    records = planted_questions(30, seed=5)
    reader = SpanRanker(neighbours=0, calibration_folds=2).fit(records, targets(records))
    saved = len(pickle.dumps(reader))
    views = reader._views(records + planted_questions(30, seed=6))
    assert reader._views(records)[0] is views[0]  # a refit or a prediction reuses the views of the process
    refitted = clone(reader).fit(records, targets(records))
    assert refitted._views(records)[0] is views[0]  # so does another reader with the same settings
    assert len(pickle.dumps(reader)) == saved  # and none of them is saved with a reader
    shared = SpanRanker(neighbours=0, calibration_folds=2, memory=str(tmp_path / "views"))
    built = shared._views(records)
    assert any((tmp_path / "views").rglob("*.pkl"))  # cached on disk for other readers and processes
    again = clone(shared)._views(records)
    for mine, cached, fresh in zip(views, built, again):
        assert mine.spans == cached.spans == fresh.spans  # the fitted reader's retrieval setting keeps 3 of 3
        assert (cached.features != fresh.features).nnz == 0


def test_a_fit_on_more_questions_than_the_view_memo_holds_keeps_none_of_theirs_there(monkeypatch):
    from baselines.tasks.mrc.candidates import VIEW_MEMO, ViewMemo

    records = planted_questions(30, seed=7)
    memoised = SpanRanker(neighbours=0, calibration_folds=2).fit(records, targets(records))
    monkeypatch.setattr(VIEW_MEMO, "entries", ViewMemo().entries)
    monkeypatch.setattr(VIEW_MEMO, "capacity", len(records) - 1)
    unmemoised = SpanRanker(neighbours=0, calibration_folds=2).fit(records, targets(records))
    assert not VIEW_MEMO.entries  # one pass over them would have dropped each view before the next asks for it
    assert unmemoised.predict(records) == memoised.predict(records)
    assert not VIEW_MEMO.entries
    assert unmemoised.predict(records[:5]) == memoised.predict(records[:5]) and len(VIEW_MEMO.entries) == 5


def test_a_lone_bound_noun_is_no_candidate_but_a_year_read_as_one_is():
    texts = candidate_texts("그가 상을 받은 것은 1989년이다. 그럴 수 있다.")
    assert "것" not in texts and "수" not in texts  # bound nouns need the words before them
    assert "1989년" in texts and "받은 것" in texts


def test_a_surname_with_a_title_answers_with_the_full_name_the_passage_gave():
    question, context = analyze(["스마트카드 개발을 이끈 사람의 이름은?",
                                 "강승훈 코나아이 대표가 회사를 세웠다. 강 대표는 스마트카드 개발을 이끌었다."])
    view = question_view(question, context, 3, 4, 40)
    texts = [context.text[start:end] for start, end in view.spans]
    assert "강" not in texts  # the surname alone stands for the name
    named = [i for i, text in enumerate(texts) if text == "강승훈"]
    assert len(named) == 2  # the full name itself, and the surname in the second sentence answering with it
    # The second one keeps the features of where it stands: its sentence holds the question's words.
    shares = sorted(view.features[i, FEATURE_INDEX["sentence_share"]] for i in named)
    assert shares[0] < shares[1]


def test_a_span_that_holds_the_unit_the_question_counts_in_is_marked():
    question, context = analyze(["이 영화관은 외국 영화를 몇 편 상영했나?",
                                 "이 영화관은 작년에 외국 영화 440편과 한국 영화 577개를 상영했다."])
    view = question_view(question, context, 3, 4, 40)
    marked = {context.text[start:end] for (start, end), value in
              zip(view.spans, view.features[:, FEATURE_INDEX["asked_unit_in_span"]].toarray().ravel()) if value}
    assert "440편" in marked and "577개" not in marked and "이 영화관" not in marked
