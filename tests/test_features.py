"""The feature layer: Kiwi analysis with offsets and eojeols, its cache, tags, alignment, vectorisers."""
from __future__ import annotations

import multiprocessing
import pickle
import sqlite3
from array import array
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import make_pipeline

from features import align, embeddings
from features import analysis as analysis_layer
from features.analysis import MorphemeAnalyzer, analyze
from features.cache import CacheWarning
from features.morphemes import Analysis, eojeol_spans
from features.pairs import (EMBEDDING_FEATURES, embedding_alignment, hypothesis_marks, neighbour_alignment,
                            overlap_features, soft_alignments)
from baselines.tasks.mrc.passages import matched_share, sentence_ids
from features.tags import to_sejong
from features.vectorize import Analyse, CharacterNgrams, MorphemeNeighbours, MorphemeNgrams, morpheme_tokens

HANGUL = st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3)
MIXED = st.one_of(
    HANGUL, HANGUL, HANGUL,
    st.sampled_from(list("0123456789abcXYZ.,!?()[]'\"-~%漢字中國😀ㅋㅎ·…")),
    st.sampled_from([" ", " ", "\t", "\n", "\u3000"]),
)
TEXTS = st.lists(st.text(MIXED, min_size=0, max_size=40), min_size=1, max_size=12)


def check_analysis(analysis: Analysis) -> None:
    text = analysis.text
    eojeol_of = align.char_to_eojeol(text)
    # Every non-space character belongs to exactly one eojeol; spaces to none.
    assert [e == -1 for e in eojeol_of] == [c.isspace() for c in text]
    for index, (start, end) in enumerate(eojeol_spans(text)):
        assert set(eojeol_of[start:end]) == {index}
    previous_start = 0
    for i, morpheme in enumerate(analysis.morphemes):
        assert 0 <= morpheme.start <= morpheme.end <= len(text)
        assert morpheme.start >= previous_start  # spans come in text order
        previous_start = morpheme.start
        if morpheme.start < len(text) and not text[morpheme.start].isspace():
            assert morpheme.eojeol == eojeol_of[morpheme.start]
        if morpheme.start < morpheme.end:
            assert i in align.morphemes_in_span(analysis, morpheme.start, morpheme.end)
    for position, m in enumerate(align.char_to_morpheme(analysis)):
        if m != -1:
            assert analysis.starts[m] <= position < analysis.ends[m]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXTS)
def test_offsets_eojeols_and_alignment_hold_on_arbitrary_text(texts):
    for analysis in analyze(texts):
        check_analysis(analysis)


def test_every_non_space_character_of_real_text_is_covered():
    text = "'K팝스타3’ 유희열이 홍정희의 탈락에 눈물을 흘렸다."
    analysis = analyze([text])[0]
    check_analysis(analysis)
    covered = align.char_to_morpheme(analysis)
    assert all(m != -1 for c, m in zip(text, covered) if not c.isspace())


def test_restored_forms_and_shared_offsets():
    analysis = analyze(["됐어요"])[0]
    forms = [m.form for m in analysis.morphemes]
    assert forms[:2] == ["되", "었"]
    # '되' and '었' share the syllable '됐': both cover it, and it is given to the first.
    assert analysis.morphemes[0].start == analysis.morphemes[1].start == 0
    assert align.char_to_morpheme(analysis)[0] == 0
    assert analysis.surfaces[0] == "됐"


def test_contraction_with_out_of_order_offsets_shares_its_syllable():
    # Kiwi gives 냐고 [0,1), 하 [1,1), 어 [0,1) for '냬'; the spans must stay in text order.
    for text in ("냬", "그냬"):
        analysis = analyze([text])[0]
        check_analysis(analysis)
    analysis = analyze(["그냬"])[0]
    assert [(s, e) for s, e in zip(analysis.starts, analysis.ends)][1:] == [(1, 2), (1, 2), (1, 2)]


def test_zero_length_morpheme_is_placed_where_it_sits():
    analysis = Analysis("가나 다", ["가", "ㄴ", "나", "다"], ["NNG", "ETM", "NNG", "NNG"],
                        array("i", [0, 1, 1, 3]), array("i", [1, 1, 2, 4]))
    assert list(analysis.eojeols) == [0, 0, 0, 1]
    assert align.morphemes_in_span(analysis, 1, 2) == [1, 2]
    assert align.morphemes_in_span(analysis, 0, 1) == [0]
    assert align.char_to_morpheme(analysis) == [0, 2, -1, 3]
    check_analysis(analysis)


def test_eojeol_index_continues_across_sentences():
    # Kiwi numbers words per sentence; our eojeol index counts over the whole text.
    analysis = analyze(["나는 갔다. 너는 왔다. 그리고 끝"])[0]
    assert max(analysis.eojeols) == 5
    check_analysis(analysis)


@pytest.mark.parametrize("kiwi_tag,sejong", [
    ("VV-R", "VV"), ("VA-I", "VA"), ("XSA-R", "XSA"), ("SSO", "SS"), ("SSC", "SS"), ("W_URL", "SL"),
    ("W_SERIAL", "SN"), ("W_EMOJI", "SW"), ("Z_CODA", "NA"), ("USER0", "NNP"), ("NNG", "NNG"), ("JKS", "JKS"),
])
def test_tag_normalisation(kiwi_tag, sejong):
    assert to_sejong(kiwi_tag) == sejong


def test_cached_analysis_equals_fresh_and_skips_kiwi(tmp_path):
    texts = ["서울에서 회의가 열렸다.", "ABC코리아 2019년 실적", "됐어요"]
    fresh = MorphemeAnalyzer(cache_dir=tmp_path).analyze(texts)
    again = MorphemeAnalyzer(cache_dir=tmp_path)
    cached = again.analyze(texts)
    assert cached == fresh
    assert again.stats.analysed == 0 and again.stats.cache_hits == 3
    assert MorphemeAnalyzer(use_cache=False).analyze(texts) == fresh


def test_analyses_share_one_string_per_form_and_tag_fresh_or_cached(tmp_path):
    texts = ["서울에서 회의가 열렸다.", "서울에서 회의가 끝났다."]
    for analyzer in (MorphemeAnalyzer(cache_dir=tmp_path), MorphemeAnalyzer(cache_dir=tmp_path)):  # Kiwi, cache
        first, second = analyzer.analyze(texts)
        assert first.forms[0] == "서울" and first.forms[0] is second.forms[0]
        assert first.tags[1] == "JKB" and first.tags[1] is second.tags[1]
    assert analyzer.stats.cache_hits == 2


def test_kiwi_is_asked_for_avx2_kernels_on_a_cpu_that_has_them_and_caches_by_kernels(tmp_path, monkeypatch):
    """Kiwi's kernels are part of what an analysis depends on: AVX2 where the CPU has it (an AVX-512 CPU
    too), Kiwi's own choice elsewhere, the user's $KIWI_ARCH_TYPE above both; and the cache keeps apart
    analyses made with other kernels."""
    monkeypatch.delenv(analysis_layer.KIWI_ARCH_VARIABLE, raising=False)
    monkeypatch.setattr(analysis_layer, "cpu_info", lambda: {"model name": "x", "flags": "fpu sse4_1 avx2 avx512bw"})
    assert analysis_layer.kiwi_arch() == "avx2"
    with_avx2 = MorphemeAnalyzer(cache_dir=tmp_path).options_key()
    monkeypatch.setattr(analysis_layer, "cpu_info", lambda: {"flags": "fpu sse4_1"})
    assert analysis_layer.kiwi_arch() == "default"
    monkeypatch.setattr(analysis_layer, "cpu_info", lambda: {})
    assert analysis_layer.kiwi_arch() == "default"
    monkeypatch.setenv(analysis_layer.KIWI_ARCH_VARIABLE, "sse4_1")
    assert analysis_layer.kiwi_arch() == "sse4_1"
    chosen = MorphemeAnalyzer(cache_dir=tmp_path).options_key()
    assert "arch=avx2" in with_avx2 and "arch=sse4_1" in chosen


def test_cpu_info_reads_the_first_processor_or_nothing():
    info = analysis_layer.cpu_info()
    assert isinstance(info, dict) and all(isinstance(value, str) for value in info.values())
    if Path("/proc/cpuinfo").is_file():
        assert info.get("flags") and "processor" in info


def test_neighbours_are_computed_once_then_read_from_the_cache(tmp_path, monkeypatch):
    queries = [("축구", "NNG"), ("반도체", "NNG"), ("쀍쀍쀍", "NNP")]
    fresh = MorphemeAnalyzer(cache_dir=tmp_path).neighbours(queries, top_n=10)
    assert "농구" in [form for form, _tag, _score in fresh[("축구", "NNG")]]
    scores = [score for _form, _tag, score in fresh[("반도체", "NNG")]]
    assert len(scores) == 10 and scores == sorted(scores, reverse=True)
    assert fresh[("쀍쀍쀍", "NNP")] == ()  # unknown to the language model
    again = MorphemeAnalyzer(cache_dir=tmp_path)
    monkeypatch.setattr(again, "_look_up_neighbours", lambda *args: pytest.fail("the cache missed"))
    assert again.neighbours(queries, top_n=10) == fresh


def test_similarity_ranks_related_morphemes_higher_and_knows_what_it_does_not_know():
    analyzer = MorphemeAnalyzer(use_cache=False)
    near = analyzer.similarity(("곳", "NNB"), ("동사무소", "NNG"))
    far = analyzer.similarity(("곳", "NNB"), ("신고", "NNG"))
    assert -1 <= far < near <= 1
    assert analyzer.similarity(("누구", "NP"), ("쀍쀍쀍", "NNP")) is None  # unknown to the language model
    assert analyzer.similarity(("곳", "NNB"), ("동사무소", "NNG")) == near


def test_damaged_neighbour_entry_is_looked_up_again(tmp_path):
    query = ("야구", "NNG")
    first = MorphemeAnalyzer(cache_dir=tmp_path)
    expected = first.neighbours([query], top_n=5)
    first.cache._insert("neighbours", [(first.cache.neighbour_key(query, 5, embeddings.METHOD), b"\x00garbage")])
    first.cache.close()
    assert MorphemeAnalyzer(cache_dir=tmp_path).neighbours([query], top_n=5) == expected


def test_neighbour_analyzer_gives_tagged_neighbours_of_content_morphemes():
    analysis = MorphemeAnalyzer(use_cache=False).analyze(["축구를 했다"])[0]
    tokens = MorphemeNeighbours(top_n=10)(analysis)
    assert "농구/NNG" in tokens
    assert len(tokens) == 10 + 10  # 축구/NNG and 하/VV; the particle and the ending bring none


def test_damaged_cache_file_does_not_break_a_run(tmp_path):
    texts = ["캐시가 망가져도 분석은 계속된다."]
    expected = MorphemeAnalyzer(use_cache=False).analyze(texts)
    (tmp_path / "analyses.sqlite3").write_bytes(b"this is not a database" * 100)
    analyzer = MorphemeAnalyzer(cache_dir=tmp_path)
    with pytest.warns(CacheWarning, match="not a database.*delete"):
        assert analyzer.analyze(texts) == expected
    # Never deleted (another process may hold it): the user is told to delete it.
    assert (tmp_path / "analyses.sqlite3").read_bytes().startswith(b"this is not a database")


@pytest.mark.parametrize("bad_value", [b"\x00garbage", None])
def test_damaged_or_foreign_entry_is_ignored_and_rewritten(tmp_path, bad_value):
    text = "엔트리가 손상되었다"
    first = MorphemeAnalyzer(cache_dir=tmp_path)
    expected = first.analyze([text])
    key = first.cache.key(text)
    first.cache.close()
    if bad_value is None:  # a well-formed entry that does not fit this text (offsets beyond its end)
        from features.cache import encode
        other = MorphemeAnalyzer(use_cache=False).analyze(["훨씬 더 긴 다른 문장의 분석 결과입니다"])[0]
        bad_value = encode(first.cache.key(other.text), other)
    with sqlite3.connect(tmp_path / "analyses.sqlite3") as connection:
        connection.execute("UPDATE analyses SET value = ? WHERE key = ?", (bad_value, key))
    second = MorphemeAnalyzer(cache_dir=tmp_path)
    assert second.analyze([text]) == expected and second.stats.analysed == 1
    third = MorphemeAnalyzer(cache_dir=tmp_path)
    assert third.analyze([text]) == expected and third.stats.analysed == 0


def _analyse_in_process(args):
    cache_dir, texts = args
    return [repr(a) for a in MorphemeAnalyzer(cache_dir=cache_dir, num_workers=1).analyze(texts)]


def test_two_processes_share_one_cache(tmp_path):
    texts = [f"{i}번째 문장은 동시에 분석된다." for i in range(300)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        first, second = pool.map(_analyse_in_process, [(str(tmp_path), texts), (str(tmp_path), texts[::-1])])
    assert first == second[::-1]
    reader = MorphemeAnalyzer(cache_dir=tmp_path)
    assert [repr(a) for a in reader.analyze(texts)] == first and reader.stats.analysed == 0


def test_morpheme_tokens_and_content_filter():
    analysis = analyze(["학생들이 도서관에서 책을 읽었다."])[0]
    tokens = morpheme_tokens(analysis)
    assert "학생/NNG" in tokens and "이/JKS" in tokens
    content = morpheme_tokens(analysis, with_tags=False, content_only=True)
    assert content == ["학생", "도서관", "책", "읽"]


def test_vectoriser_pipeline_pickles_without_kiwi():
    texts = ["삼성전자가 새 스마트폰을 공개했다", "류현진이 7이닝을 무실점으로 막았다", "정부가 예산안을 발표했다"]
    pipeline = make_pipeline(Analyse(), TfidfVectorizer(analyzer=MorphemeNgrams(ngram_range=(1, 2))))
    matrix = pipeline.fit_transform(texts)
    assert "스마트폰/NNG" in pipeline[-1].vocabulary_
    blob = pickle.dumps(pipeline)
    assert b"kiwipiepy" not in blob
    assert (pickle.loads(blob).transform(texts) != matrix).nnz == 0


def test_character_ngrams_respect_word_boundaries():
    grams = CharacterNgrams(ngram_range=(2, 2))("가나 다")
    assert grams == [" 가", "가나", "나 ", " 다", "다 "]
    assert CharacterNgrams()(analyze(["가나"])[0]) == CharacterNgrams()("가나")


def test_matched_share_is_an_exactly_rounded_sum():
    """Sets and dicts iterate in an order that changes with the process's hash seed, and a plain float
    sum depends on the order (0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1): enough to reorder tied passages
    between two runs. An exactly rounded sum (math.fsum) has no order; five and six weights of 0.1 are
    a case where the plain sum gives another share (0.8333333333333334)."""
    weights = {f"w{i}": 0.1 for i in range(6)}
    assert matched_share([f"w{i}" for i in range(5)], weights) == 0.8333333333333333


def test_sentences_end_at_final_punctuation_without_a_space_but_not_inside_numbers():
    analysis = analyze(["값은 3.5이다.그 다음\n새 줄"])[0]
    ids = sentence_ids(analysis)
    by_sentence = {}
    for index, sentence in enumerate(ids):
        by_sentence.setdefault(sentence, []).append(analysis.surfaces[index])
    assert "".join(by_sentence[0]).startswith("값은3.5이다") and len(by_sentence) == 3


def test_hypothesis_marks_say_which_morphemes_are_new_and_where():
    premise, hypothesis = analyze(["그 회사는 1990년에 설립되었다.", "그 회사는 1990년에 설립되지 않았다."])
    marks = hypothesis_marks(premise, hypothesis)
    assert marks["in:회사/NNG"] == marks["in:설립/NNG"] == marks["out:않/VX"] == 1.0
    assert "out:회사/NNG" not in marks and "in:않/VX" not in marks
    assert marks["new_count=2"] == 1.0 and marks["next=out:지/EC_out:않/VX"] == 1.0
    assert not any(name.startswith("next=in_in") for name in marks)
    assert marks["last_anchor=in:설립/NNG"] == 1.0 and marks["tail=않/VX 었/EP 다/EF ./SF"] == 1.0
    same = hypothesis_marks(premise, premise)
    assert same["new_count=0"] == 1.0 and not any(name.startswith("out:") for name in same)


def test_neighbour_alignment_pairs_a_new_word_with_its_nearest_premise_word():
    premise, paraphrase, unrelated = analyze(["그 회사는 1990년에 설립되었다.", "그 회사는 1990년에 창립되었다.",
                                              "그 회사는 1990년에 파산했다."])
    aligned = neighbour_alignment(premise, paraphrase, 20)
    assert aligned["substituted=창립|설립"] == 1.0 and aligned["aligned=창립/NNG"] == 1.0
    assert aligned["unaligned_count=0"] == 1.0 and 0 < aligned["least_aligned_similarity"] < 1
    apart = neighbour_alignment(premise, unrelated, 20)
    assert apart["unaligned=파산/NNG"] == 1.0 and apart["unaligned_count=1"] == 1.0
    assert apart["least_aligned_similarity"] == 1.0  # nothing aligned
    assert neighbour_alignment(premise, premise, 20) == {"unaligned_count=0": 1.0, "least_aligned_similarity": 1.0}


def test_soft_alignments_are_each_token_s_best_bigram_dice_on_the_other_side_averaged_both_ways():
    first, second = ["호스트분", "숙소", "숙소", "a"], ["호스트", "숙소", "사진"]
    # 호스트분 {호스, 스트, 트분} against 호스트 {호스, 스트}: 2 x 2 / 5; a one-character token is its own bigram.
    assert soft_alignments(first, second) == ((0.8 + 1.0 + 1.0 + 0.0) / 4, (0.8 + 1.0 + 0.0) / 3)
    assert soft_alignments(second, first) == tuple(reversed(soft_alignments(first, second)))
    assert soft_alignments([], second) == soft_alignments(first, []) == (0.0, 0.0)


def test_embedding_alignment_sees_near_words_that_overlap_does_not():
    stay, hotel, flight = analyze(["숙소가 정말 깨끗하고 저렴했어요.", "호텔이 아주 청결하고 싸요.", "비행기가 늦게 도착했다."])
    near, far = embedding_alignment(stay, hotel), embedding_alignment(stay, flight)
    assert overlap_features(stay, hotel)["content_jaccard"] == 0.0  # no word in common
    assert set(near) == set(EMBEDDING_FEATURES)
    for name in ("embedding_align_1_to_2", "embedding_align_2_to_1", "embedding_least_aligned",
                 "embedding_sentence_cosine"):
        assert far[name] < near[name] < 1.0
    assert 1 >= far["embedding_unaligned_share_below_0.6"] > near["embedding_unaligned_share_below_0.6"] == 0
    assert near["embedding_predicate_mean_aligned"] > far["embedding_predicate_mean_aligned"] > 0
    noun_only, with_predicate = analyze(["숙소 사진", "숙소 사진이 좋다."])
    apart = embedding_alignment(noun_only, with_predicate)
    assert apart["embedding_noun_least_aligned"] == 1.0 and apart["embedding_noun_on_one_side"] == 0.0
    assert apart["embedding_predicate_on_one_side"] == 1.0 and apart["embedding_predicate_mean_aligned"] == 0.0
    same = embedding_alignment(stay, stay)
    assert same["embedding_align_1_to_2"] == same["embedding_least_aligned"] == 1.0
    assert same["embedding_known_share"] == 1.0
    (empty,) = analyze(["!!"])  # punctuation only: no content morpheme
    assert embedding_alignment(empty, stay) == {**dict.fromkeys(EMBEDDING_FEATURES, 0.0), "embedding_known_share": 1.0}


def test_a_gazetteer_finds_the_longest_name_at_each_word_start_with_its_most_frequent_type():
    from features.gazetteer import EntityGazetteer
    gazetteer = EntityGazetteer([("삼성", "ORG"), ("삼성전자", "ORG"), ("서울", "LOC"), ("서울", "ORG"), ("서울", "LOC"),
                                 ("한국", "ORG"), ("한국", "LOC"), ("김", "PER"), (" 이순신 ", "PER")])
    assert len(gazetteer) == 5 and gazetteer.types["서울"] == "LOC" and gazetteer.types["한국"] == "LOC"  # tie: sorted
    assert "김" not in gazetteer.types  # a one-character name would be found everywhere
    text = "삼성전자가 '서울'의 이순신과 대한국민 김씨"
    assert gazetteer.matches(text) == [(0, 4, "ORG"), (7, 9, "LOC"), (12, 15, "PER")]  # not 한국 inside 대한국민
    assert EntityGazetteer([]).matches(text) == [] and repr(gazetteer) == "EntityGazetteer(5 names)"
    # Inside words too, names of 3+ characters: 이순신 in 故이순신; 한국 (2) still not inside 대한국민.
    assert gazetteer.matches("故이순신과 대한국민", inside_from=3) == [(1, 4, "PER")]
    assert gazetteer.matches("故이순신과 대한국민", inside_from=2) == [(1, 4, "PER"), (7, 9, "LOC")]
