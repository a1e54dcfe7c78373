"""MRC candidate answers: the spans a passage offers for a question, and each span's features."""
from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections import OrderedDict
from dataclasses import dataclass
from functools import cache, cached_property
from itertools import chain
from typing import Any, Callable

import numpy as np
from scipy import sparse

from baselines.tasks.mrc.passages import (Retrieval, SentenceTerms, bm25_scores, content_set, matched_share,
                                         sentence_contents, sentence_ranking, sentence_terms, sentence_weights)
from features.analysis import neighbours, similarity
from features.characters import char_class
from features.morphemes import Analysis, eojeol_spans
from features.pairs import char_ngrams
from features.vectorize import neighbour_queries


# What a question asks for, from its wh-word or the noun it asks about ('어느 나라' -> place).
QUESTION_TYPES = ("person", "place", "time", "quantity", "reason", "manner", "thing", "other")
_TYPE_WORDS = {
    "person": {"누구", "사람", "인물", "선수", "감독", "작가", "배우", "가수", "대통령", "왕", "회장", "대표", "저자",
               "작곡가", "주인공", "장관", "의원", "학자", "화가"},
    "place": {"어디", "곳", "장소", "지역", "나라", "국가", "도시", "위치", "소재지", "지방", "섬", "역", "지점"},
    "time": {"언제", "날짜", "날", "연도", "년도", "시기", "시간", "해", "요일", "시점", "기간", "시각", "세기"},
    "quantity": {"얼마", "몇", "금액", "가격", "액수", "비율", "개수", "규모", "인원", "나이", "수치", "비용", "점수",
                 "순위", "높이", "길이", "무게", "거리", "속도", "인구", "매출", "숫자"},
    "reason": {"왜", "이유", "원인", "까닭", "계기"},
    "manner": {"어떻", "방법", "방식"},
    "thing": {"무엇", "뭐", "이름", "명칭", "제목"},
}
_WORD_TYPE = {word: kind for kind, words in _TYPE_WORDS.items() for word in words}
WH_WORDS = frozenset({"누구", "어디", "언제", "얼마", "몇", "왜", "어떻", "무엇", "뭐", "어떤", "어느"})
_NOUN_TAGS = frozenset({"NNG", "NNP", "NNB", "NP", "NR"})
_SYMBOL_TAGS = frozenset({"SF", "SP", "SS", "SE", "SO", "SW"})
_FUNCTIONAL = frozenset({"VCP", "VCN", "XSV", "XSA"})
_NOMINAL = frozenset({"NNG", "NNP", "NNB", "NR", "SN", "SL", "SH", "XSN"})

# What follows a candidate inside its eojeol: the particle tells its role (subject, object, place ...).
NEXT_KINDS = ("JKS", "JKO", "JKB", "JX", "JKG", "JC", "J", "VCP", "E", "SYM", "END", "OTHER")
SPAN_KINDS = ("number", "date", "counted", "proper", "latin", "quoted", "last_NNP", "last_NNG", "last_NNB",
              "last_SN", "last_SL", "last_XSN", "last_SS", "last_other", "after_adnominal", "after_genitive")
_BASE_FEATURES = (
    "sentence_share", "sentence_relative", "sentence_rank0", "sentence_rank1", "sentence_rank2",
    "left3", "right3", "left10", "right10", "sentence_rest", "nearest_left", "nearest_right", "span_in_question",
    "span_is_question_text", "focus_after", "focus_in_span", "focus_before", "wh_particle_match",
    "eojeols1", "eojeols2", "eojeols3", "eojeols4", "log_chars", "log_occurrences", "sentence_start",
    "left_extendable", "right_extendable", "weighted_proximity", "bigrams_left", "bigrams_right",
    "span_bigrams_in_question", "head_predicate_in_question", "head_predicate_near", "modifier_in_question",
    "focus_similarity", "wh_similarity", "similarity_unknown",
    "sentence_soft", "left3_soft", "right3_soft", "left10_soft", "right10_soft", "sentence_bm25_relative",
    "asked_unit_in_span",
)
FEATURE_NAMES = (_BASE_FEATURES + tuple(f"span_{kind}" for kind in SPAN_KINDS)
                 + tuple(f"next_{kind}" for kind in NEXT_KINDS)
                 + tuple(f"{qtype}|{kind}" for qtype in QUESTION_TYPES for kind in SPAN_KINDS + NEXT_KINDS))
FEATURE_INDEX = {name: index for index, name in enumerate(FEATURE_NAMES)}


@dataclass
class QuestionView:
    """What the reader knows of a question before scoring: its type, the candidate spans (character
    offsets) and their feature rows, and how much of the question the passage holds."""
    question_type: str
    spans: list[tuple[int, int]]
    features: sparse.csr_matrix  # (len(spans), len(FEATURE_NAMES)): most question-type crosses are 0
    best_sentence_share: float
    passage_share: float
    question_words: int
    missing_words: int  # question content morphemes that the passage does not have
    passage_soft_share: float = 0.0  # passage_share, counting near words (설립 for 창립) at their similarity
    unrelated_words: int = 0  # question content morphemes that the passage has neither as such nor near


def related_words(question: Analysis, top_n: int) -> dict[str, dict[str, float]]:
    """For each content morpheme of the question (lower-cased, as content_set gives it), its `top_n`
    nearest morphemes in Kiwi's language model with their cosine: KLUE questions paraphrase the passage
    ('창립한' for '설립했다'), so exact matching misses many of the words that point at the answer."""
    query = content_set(question)
    found = neighbours(neighbour_queries(question), top_n) if top_n else {}
    related: dict[str, dict[str, float]] = {}
    for form, tag in zip(question.forms, question.tags):
        word = form.lower()
        if word not in query:
            continue
        near_words = related.setdefault(word, {})
        for near, _tag, cosine in found.get((form, tag), ()):
            near = near.lower()
            if near != word and cosine > near_words.get(near, 0.0):
                near_words[near] = cosine
    return related


def soft_share(matches: dict[str, float], weights: dict[str, float]) -> float:
    """The weighted share of the query that `matches` (query word -> how closely it is matched) covers."""
    total = math.fsum(weights.values())
    return math.fsum(weights.get(word, 0.0) * score for word, score in matches.items()) / total if total else 0.0


def _merge(target: dict[str, float], matches: dict[str, float]) -> dict[str, float]:
    for word, score in matches.items():
        if score > target.get(word, 0.0):
            target[word] = score
    return target


def question_type(question: Analysis) -> tuple[str, str | None, str]:
    """(type, focus noun, the particle after the wh-word): '사고 비행기의 목적지는?' -> ('other', '목적지', '-');
    '누가 ...?' -> ('person', None, 'JKS')."""
    tags = question.sejong_tags
    nouns = [i for i, tag in enumerate(tags) if tag in _NOUN_TAGS and question.forms[i] not in WH_WORDS]
    focus = question.forms[nouns[-1]] if nouns else None
    wh = next((i for i, form in enumerate(question.forms) if form in WH_WORDS), None)
    particle = "-"
    if wh is not None and wh + 1 < len(tags) and tags[wh + 1].startswith("J"):
        particle = tags[wh + 1]
    wh_form = question.forms[wh] if wh is not None else None
    if wh_form in (None, "무엇", "뭐", "어떤", "어느") and focus in _WORD_TYPE:
        return _WORD_TYPE[focus], focus, particle
    return _WORD_TYPE.get(wh_form or "", "other"), focus, particle


def _next_kind(tags: list[str], eojeols, last: int) -> str:
    if last + 1 >= len(tags) or eojeols[last + 1] != eojeols[last]:
        return "END"
    tag = tags[last + 1]
    if tag in ("JKS", "JKO", "JKB", "JX", "JKG", "JC", "VCP"):
        return tag
    if tag.startswith("J"):
        return "J"
    if tag.startswith("E"):
        return "E"
    return "SYM" if tag in _SYMBOL_TAGS else "OTHER"


def _span_kinds(context: Analysis, tags: list[str], first: int, last: int) -> list[str]:
    kinds = []
    span_tags = tags[first:last + 1]
    if "SN" in span_tags or "NR" in span_tags:
        kinds.append("number")
        forms = context.forms[first:last + 1]
        if any(form in ("년", "월", "일", "시", "분") for form in forms):
            kinds.append("date")
        elif "NNB" in span_tags:
            kinds.append("counted")
    if "NNP" in span_tags:
        kinds.append("proper")
    if all(tag in ("SL", "SN") or tag in _SYMBOL_TAGS for tag in span_tags) and "SL" in span_tags:
        kinds.append("latin")
    if any(tag == "SS" for tag in span_tags):
        kinds.append("quoted")
    last_tag = span_tags[-1]
    kinds.append(f"last_{last_tag}" if f"last_{last_tag}" in FEATURE_INDEX else "last_other")
    if first > 0:
        if tags[first - 1] == "ETM":
            kinds.append("after_adnominal")
        elif tags[first - 1] == "JKG":
            kinds.append("after_genitive")
    return kinds


def predicate_forms(analysis: Analysis) -> list[str | None]:
    """For each morpheme that heads a predicate, its lexical form: the stem of a verb or adjective, or the
    noun of a '-하다' verb ('번역하다' -> '번역'); None elsewhere."""
    tags = analysis.sejong_tags
    forms: list[str | None] = [None] * len(tags)
    for index, tag in enumerate(tags):
        if tag in ("VV", "VA"):
            forms[index] = analysis.forms[index]
        elif tag in ("XSV", "XSA") and index > 0 and tags[index - 1] in ("NNG", "XR"):
            forms[index] = analysis.forms[index - 1]
    return forms


def _nearest(matched_eojeols: list[int], position: int, before: bool) -> float:
    distances = [position - e for e in matched_eojeols if e < position] if before else \
        [e - position for e in matched_eojeols if e > position]
    return 1.0 / min(distances) if distances else 0.0


def candidate_spans(context: Analysis, tags: list[str], sentences, keep: set[int], max_eojeols: int,
                    max_chars: int) -> list[tuple[int, int]]:
    """(first, last) morpheme indices of every candidate answer in the kept sentences: it starts at an
    eojeol or after a symbol, stops before the particles, endings or symbols that close its last eojeol
    ('서울에서' -> '서울'), spans at most max_eojeols eojeols and stays inside one sentence."""
    eojeols = context.eojeols
    size = len(tags)

    def opens(i: int) -> bool:
        return (i == 0 or eojeols[i] != eojeols[i - 1] or tags[i - 1] in _SYMBOL_TAGS) and \
            not (tags[i][0] in "JE" or tags[i] in _FUNCTIONAL or tags[i] in ("SF", "SP", "SE"))

    def closes(j: int) -> bool:
        if tags[j][0] in "JE" or tags[j] in _FUNCTIONAL or tags[j] in ("SF", "SP", "SE", "SO"):
            return False
        if j + 1 == size or eojeols[j + 1] != eojeols[j]:
            return True
        following = tags[j + 1]
        return following[0] in "JE" or following in _FUNCTIONAL or following in _SYMBOL_TAGS

    def lone_bound_noun(first: int, last: int) -> bool:
        # A bound noun ('것', '수', '때문') needs the words before it; alone it is no answer. A year or a
        # date that Kiwi reads as one bound noun ('1989년') has digits.
        return first == last and tags[first] == "NNB" and _hangul(context.forms[first])

    ends = [j for j in range(size) if sentences[j] in keep and closes(j)]
    spans = []
    for first in range(size):
        if sentences[first] not in keep or not opens(first):
            continue
        start = context.starts[first]
        for last in ends:
            if last < first or sentences[last] != sentences[first]:
                continue
            if eojeols[last] - eojeols[first] >= max_eojeols:
                break
            if 0 < context.ends[last] - start <= max_chars and not lone_bound_noun(first, last):
                spans.append((first, last))
    return spans


@dataclass
class PassageMatch:
    """Where a passage holds the words of a question: in each sentence and each eojeol, as such or as a
    near word (one of a question word's `related_words`, counted at its similarity)."""
    sentences: Any  # the sentence of each morpheme (sentence_ids)
    weights: dict[str, float]  # each question word's IDF over the sentences
    shares: list[float]  # the weighted share of the question each sentence holds as such
    soft_shares: list[float]  # the same with near words
    scores: np.ndarray  # each sentence's retrieval score (bm25_scores)
    ranking: list[int]  # sentences, the best match first (by the question's Retrieval)
    eojeol_words: list[set[str]]  # the question words in each eojeol
    eojeol_near: list[dict[str, float]]  # the question words each eojeol holds a near word of, and how near
    eojeol_sentence: list[int]
    matched_in_sentence: list[list[int]]  # the eojeols of each sentence that hold a question word
    passage_share: float
    passage_soft_share: float
    missing_words: int  # question words that the passage does not have
    unrelated_words: int  # question words that the passage has neither as such nor near


def question_terms(query: set[str], context: Analysis, related: dict[str, dict[str, float]] | None
                   ) -> tuple[SentenceTerms, array]:
    """The question words' soft term frequencies in the passage's sentences, and each morpheme's sentence."""
    sentences, counts = sentence_contents(context)
    return sentence_terms(query, related or {}, counts), sentences


def match_passage(query: set[str], context: Analysis, related: dict[str, dict[str, float]] | None,
                  retrieval: Retrieval = Retrieval()) -> PassageMatch:
    """How much of the question (its content morphemes `query`) each part of the passage holds; sentences
    are ranked by `retrieval`."""
    eojeols = context.eojeols
    sentences, counts = sentence_contents(context)
    terms = sentence_terms(query, related or {}, counts)
    sentence_count = len(counts)
    sentence_words = [set(count) for count in counts]
    weights = sentence_weights(query, sentence_words)
    shares = [matched_share(words & query, weights) for words in sentence_words]

    # The passage words near a question word, with the question words they stand for.
    standing_for: dict[str, dict[str, float]] = {}
    for word, near_words in (related or {}).items():
        for near, cosine in near_words.items():
            standing_for.setdefault(near, {})[word] = cosine
    eojeol_count = (eojeols[-1] + 1) if len(eojeols) else 0
    eojeol_words: list[set[str]] = [set() for _ in range(eojeol_count)]
    eojeol_near: list[dict[str, float]] = [{} for _ in range(eojeol_count)]
    eojeol_sentence = [0] * eojeol_count
    for index in range(len(context)):
        form = context.forms[index].lower()
        eojeol = eojeols[index]
        if form in query:
            eojeol_words[eojeol].add(form)
        _merge(eojeol_near[eojeol], standing_for.get(form, {}))
        eojeol_sentence[eojeol] = sentences[index]
    sentence_matches = [dict.fromkeys(words & query, 1.0) for words in sentence_words]
    for eojeol, near in enumerate(eojeol_near):
        _merge(sentence_matches[eojeol_sentence[eojeol]], near)
    soft_shares = [soft_share(matches, weights) for matches in sentence_matches]
    passage_words = set().union(*sentence_words)
    passage_matches: dict[str, float] = {}
    for matches in sentence_matches:
        _merge(passage_matches, matches)
    matched_in_sentence: list[list[int]] = [[] for _ in range(sentence_count)]
    for eojeol, words in enumerate(eojeol_words):
        if words:
            matched_in_sentence[eojeol_sentence[eojeol]].append(eojeol)
    scores = bm25_scores(terms, retrieval)
    return PassageMatch(
        sentences, weights, shares, soft_shares, scores, sentence_ranking(scores),
        eojeol_words, eojeol_near, eojeol_sentence, matched_in_sentence,
        matched_share(passage_words & query, weights), soft_share(passage_matches, weights),
        len(query - passage_words), len(query) - len(passage_matches))


class QuestionContext:
    """What every candidate of one question is measured against: the question's words, type and focus,
    where the passage matches them, and the passage's sentences, eojeols and predicates.

    A question's candidates share their start and end eojeols and their head nouns, so what lies in a
    stretch of a sentence and how near a head noun is to what the question asks are worked out once per
    question (the cached methods): worked out per candidate, they were most of the reader's time.
    """

    def __init__(self, question: Analysis, context: Analysis, related: dict[str, dict[str, float]] | None,
                 top_sentences: int, retrieval: Retrieval = Retrieval()):
        self.question, self.context = question, context
        self.qtype, focus, self.wh_particle = question_type(question)
        self.focus_form = focus.lower() if focus else None
        self.query = content_set(question)
        self.tags = context.sejong_tags
        self.eojeols = context.eojeols
        self.match = match_passage(self.query, context, related, retrieval)
        self.weights = self.match.weights
        self.total_weight = math.fsum(self.weights.values())
        self.eojeol_count = len(self.match.eojeol_words)
        self.rank_of = {sentence: rank for rank, sentence in enumerate(self.match.ranking)}
        self.best_score = float(self.match.scores.max()) if len(self.match.scores) else 0.0
        self.asked_unit = asked_unit(question)
        self.best_share = self.match.shares[self.match.ranking[0]] if self.match.ranking else 0.0
        self.kept_sentences = set(self.match.ranking[:top_sentences])
        self.squeezed_question = "".join(question.text.split())
        self.question_bigrams = char_ngrams(question.text, 2)
        self.predicates = predicate_forms(context)
        self.query_predicates = {form for form in predicate_forms(question) if form is not None} | self.query
        self.eojeol_bounds = eojeol_spans(context.text)
        # What the question asks for, as morphemes to compare a span's head noun with in Kiwi's embeddings:
        # '곳' is near '동사무소', '누구' near '대신' and not '유언비어'.
        pairs = list(zip(question.forms, question.tags))
        self.asked_for = {"focus_similarity": next((pair for pair in pairs if pair[0] == focus), None),
                          "wh_similarity": next((pair for pair in pairs if pair[0] in WH_WORDS), None)}
        self.sentence_eojeols: dict[int, list[int]] = {}
        for eojeol, sentence in enumerate(self.match.eojeol_sentence):
            self.sentence_eojeols.setdefault(sentence, []).append(eojeol)
        self.window = cache(self._window)
        self.window_share = cache(self._window_share)
        self.soft_window = cache(self._soft_window)
        self.bigram_share = cache(self._bigram_share)
        self.head_similarity = cache(self._head_similarity)

    @cached_property
    def full_names(self) -> dict[str, list[tuple[int, int]]]:
        """The passage's full_names, worked out only for a question with a lone surname among its candidates."""
        return full_names(self.context, self.tags)

    def within(self, sentence: int, low: int, high: int) -> list[int]:
        """The eojeols of `sentence` from `low` up to `high` (excluded). An eojeol belongs to the sentence of
        its last morpheme ('있다.국제' to the one that 국제 opens), so a sentence that lies inside one eojeol
        has none: with more sentences kept, BM25 ranked such a sentence among them and this failed."""
        members = self.sentence_eojeols.get(sentence, [])
        return members[bisect_left(members, low):bisect_left(members, high)]

    def _window(self, sentence: int, low: int, high: int) -> frozenset[str]:
        """The question words that the eojeols low..high-1 of `sentence` hold."""
        return frozenset().union(*(self.match.eojeol_words[e] for e in self.within(sentence, low, high)))

    def _window_share(self, sentence: int, low: int, high: int) -> float:
        return matched_share(self.window(sentence, low, high), self.weights)

    def _soft_window(self, sentence: int, low: int, high: int) -> float:
        matches: dict[str, float] = {}
        for e in self.within(sentence, low, high):
            _merge(_merge(matches, dict.fromkeys(self.match.eojeol_words[e], 1.0)), self.match.eojeol_near[e])
        return soft_share(matches, self.weights)

    def _bigram_share(self, text: str) -> float:
        return len(char_ngrams(text, 2) & self.question_bigrams) / max(len(self.question_bigrams), 1)

    def _head_similarity(self, name: str, head: int) -> float | None:
        asked = self.asked_for[name]
        return similarity(asked, (self.context.forms[head], self.context.tags[head])) if asked else 0.0

    def matched_outside(self, span: Candidate) -> list[int]:
        """The eojeols of the span's sentence, outside it, that hold a question word."""
        return [e for e in self.match.matched_in_sentence[span.sentence] if not span.e1 <= e <= span.e2]


@dataclass
class Candidate:
    """One candidate answer: morphemes first..last, characters start..end, eojeols e1..e2, in one sentence."""
    first: int
    last: int
    start: int
    end: int
    text: str
    e1: int
    e2: int
    sentence: int

    @classmethod
    def of(cls, q: QuestionContext, first: int, last: int) -> Candidate:
        start, end = q.context.starts[first], q.context.ends[last]
        return cls(first, last, start, end, q.context.text[start:end], q.eojeols[first], q.eojeols[last],
                   q.match.sentences[first])


# The feature groups. Each gives the features of one candidate that it sets (a sparse row: what it leaves
# out is 0), and question_view joins them in the order of FEATURE_GROUPS, which fixes the order of each
# row's entries in the view's matrix.

def sentence_coverage(q: QuestionContext, c: Candidate) -> dict[str, float]:
    """How much of the question the span's sentence, the words around the span and the rest of the
    sentence hold: as such, and counting near words at their similarity (_soft)."""
    s, e1, e2, share = c.sentence, c.e1, c.e2, q.match.shares[c.sentence]
    rest = q.window(s, 0, e1) | q.window(s, e2 + 1, q.eojeol_count)
    return {
        "sentence_share": share, "sentence_relative": share / q.best_share if q.best_share else 0.0,
        f"sentence_rank{min(q.rank_of[s], 2)}": 1.0,
        "left3": q.window_share(s, e1 - 3, e1), "right3": q.window_share(s, e2 + 1, e2 + 4),
        "left10": q.window_share(s, e1 - 10, e1), "right10": q.window_share(s, e2 + 1, e2 + 11),
        "sentence_soft": q.match.soft_shares[s],
        "left3_soft": q.soft_window(s, e1 - 3, e1), "right3_soft": q.soft_window(s, e2 + 1, e2 + 4),
        "left10_soft": q.soft_window(s, e1 - 10, e1), "right10_soft": q.soft_window(s, e2 + 1, e2 + 11),
        "sentence_rest": matched_share(rest, q.weights),
        "sentence_bm25_relative": float(q.match.scores[s]) / q.best_score if q.best_score > 0 else 0.0,
    }


def nearest_match(q: QuestionContext, c: Candidate) -> dict[str, float]:
    """1 / the distance in eojeols to the nearest question word before and after the span."""
    matched = q.matched_outside(c)
    return {"nearest_left": _nearest(matched, c.e1, True), "nearest_right": _nearest(matched, c.e2, False)}


def question_echo(q: QuestionContext, c: Candidate) -> dict[str, float]:
    """Whether the span repeats the question (an answer rarely does)."""
    span_words = content_set(q.context, c.first, c.last + 1)
    return {"span_in_question": len(span_words & q.query) / len(span_words) if span_words else 0.0,
            "span_is_question_text": float("".join(c.text.split()) in q.squeezed_question)}


def span_shape(q: QuestionContext, c: Candidate) -> dict[str, float]:
    """Length, how often the passage repeats the span, and whether it opens its sentence."""
    sentences = q.match.sentences
    return {f"eojeols{min(c.e2 - c.e1 + 1, 4)}": 1.0, "log_chars": math.log(c.end - c.start),
            "log_occurrences": math.log(q.context.text.count(c.text)),
            "sentence_start": float(c.first == 0 or sentences[c.first - 1] != c.sentence)}


def nearby_question_words(q: QuestionContext, c: Candidate) -> dict[str, float]:
    """Question words near the span: weighted by their IDF and closeness, and as character bigrams of the
    three eojeols on each side."""
    proximity = math.fsum(q.weights[word] / (c.e1 - e if e < c.e1 else e - c.e2)
                          for e in q.matched_outside(c) for word in q.match.eojeol_words[e])
    bounds = q.eojeol_bounds
    left_text = q.context.text[bounds[max(c.e1 - 3, 0)][0]:c.start]
    right_text = q.context.text[c.end:bounds[min(c.e2 + 3, q.eojeol_count - 1)][1]]
    return {"weighted_proximity": proximity / q.total_weight if q.total_weight else 0.0,
            "bigrams_left": q.bigram_share(left_text), "bigrams_right": q.bigram_share(right_text)}


def phrase_boundary(q: QuestionContext, c: Candidate) -> dict[str, float]:
    """Answers are whole noun phrases: a bare noun just before or after the span means it is cut."""
    tags, eojeols, sentences = q.tags, q.eojeols, q.match.sentences
    first, last = c.first, c.last
    return {
        "left_extendable": float(first > 0 and eojeols[first - 1] != c.e1 and tags[first - 1] in _NOMINAL
                                 and c.e1 - 1 >= 0 and q.match.eojeol_sentence[c.e1 - 1] == c.sentence),
        "right_extendable": float((last + 1 == len(tags) or eojeols[last + 1] != c.e2) and last + 1 < len(tags)
                                  and tags[last + 1] in _NOMINAL and sentences[last + 1] == c.sentence),
    }


def focus_position(q: QuestionContext, c: Candidate) -> dict[str, float]:
    """Where the noun the question asks about ('목적지' of '...의 목적지는?') stands: after, at the end of,
    or before the span."""
    if not q.focus_form:
        return {}
    forms = q.context.forms
    after = [forms[i].lower() for i in range(c.last + 1, min(c.last + 4, len(q.context)))]
    return {"focus_after": float(q.focus_form in after), "focus_in_span": float(forms[c.last].lower() == q.focus_form),
            "focus_before": float(q.focus_form in q.window(c.sentence, c.e1 - 3, c.e1 + 1))}


def asked_for_similarity(q: QuestionContext, c: Candidate) -> dict[str, float]:
    """How near the span's head noun is to the question's focus noun and wh-word in Kiwi's embeddings."""
    head = next((i for i in range(c.last, c.first - 1, -1) if q.tags[i] in _NOMINAL), None)
    features: dict[str, float] = {}
    if head is not None:
        for name in q.asked_for:
            value = q.head_similarity(name, head)
            if value is None:
                features["similarity_unknown"] = 1.0
            elif value:
                features[name] = value
    return features


def following_particle(q: QuestionContext, c: Candidate) -> dict[str, float]:
    """What follows the span in its eojeol (its role: subject, object, place...), alone, crossed with the
    question type, and whether it is the particle after the question's wh-word."""
    next_kind = _next_kind(q.tags, q.eojeols, c.last)
    features = {f"next_{next_kind}": 1.0, f"{q.qtype}|{next_kind}": 1.0}
    if q.wh_particle != "-" and next_kind == q.wh_particle:
        features["wh_particle_match"] = 1.0
    return features


def span_kind(q: QuestionContext, c: Candidate) -> dict[str, float]:
    """What the span is (a number, a date, a proper noun, ...), alone and crossed with the question type."""
    features = {}
    for kind in _span_kinds(q.context, q.tags, c.first, c.last):
        features[f"span_{kind}"] = 1.0
        features[f"{q.qtype}|{kind}"] = 1.0
    return features


def unit_match(q: QuestionContext, c: Candidate) -> dict[str, float]:
    """Whether the span holds the unit the question counts in ('몇 편' -> '440편')."""
    if q.asked_unit is None:
        return {}
    forms = q.context.forms[c.first:c.last + 1]
    # '몇 년도' is answered in '년', '몇 명' in '명': the unit's first syllable is what the answer has.
    return {"asked_unit_in_span": float(any(form.lower() == q.asked_unit[0] or form.lower() == q.asked_unit
                                            for form in forms))}


def span_bigrams(q: QuestionContext, c: Candidate) -> dict[str, float]:
    """The share of the span's character bigrams that the question has."""
    bigrams = char_ngrams(c.text, 2)
    return {"span_bigrams_in_question": len(bigrams & q.question_bigrams) / max(len(bigrams), 1)}


def predicate_links(q: QuestionContext, c: Candidate) -> dict[str, float]:
    """Whether the predicate the span belongs to, or the one that modifies it ('...를 번역한 [사람]'), is a
    predicate of the question."""
    features = {}
    predicates, sentences = q.predicates, q.match.sentences
    head = next((i for i in range(c.last + 1, len(q.tags)) if predicates[i] is not None), None)
    if head is not None and sentences[head] == c.sentence:
        features["head_predicate_in_question"] = float(predicates[head] in q.query_predicates)
        features["head_predicate_near"] = 1.0 / (1 + q.eojeols[head] - c.e2)
    if c.first > 0 and q.tags[c.first - 1] == "ETM":
        modifier = next((i for i in range(c.first - 1, -1, -1) if predicates[i] is not None), None)
        features["modifier_in_question"] = float(modifier is not None and predicates[modifier] in q.query_predicates)
    return features


FEATURE_GROUPS = (sentence_coverage, nearest_match, question_echo, span_shape, nearby_question_words,
                  phrase_boundary, focus_position, asked_for_similarity, following_particle, span_kind,
                  span_bigrams, predicate_links, unit_match)


def asked_unit(question: Analysis) -> str | None:
    """The unit a question counts in: the noun after its '몇' ('몇 편' -> '편'), lower-cased; None if it has
    none."""
    forms, tags = question.forms, question.sejong_tags
    for index in range(len(forms) - 1):
        if forms[index] == "몇" and tags[index + 1] in _NOUN_TAGS:
            return forms[index + 1].lower()
    return None


def _hangul(text: str) -> bool:
    return bool(text) and all(char_class(char) == "HG" for char in text)


def full_names(context: Analysis, tags: list[str]) -> dict[str, list[tuple[int, int]]]:
    """The (start, end) of every proper noun run of 2 to 4 Hangul syllables that opens an eojeol ('강승훈'),
    by its first syllable: news text names a person in full once and then by surname and title ('강
    대표'), and the question asks for the full name."""
    names: dict[str, list[tuple[int, int]]] = {}
    eojeols, size = context.eojeols, len(tags)
    for first in range(size):
        if tags[first] != "NNP" or (first > 0 and eojeols[first - 1] == eojeols[first]):
            continue
        last = first
        while last + 1 < size and eojeols[last + 1] == eojeols[first] and tags[last + 1] == "NNP":
            last += 1
        start, end = context.starts[first], context.ends[last]
        text = context.text[start:end]
        if 2 <= len(text) <= 4 and _hangul(text):
            names.setdefault(text[0], []).append((start, end))
    return names


def answer_span(q: QuestionContext, c: Candidate) -> tuple[int, int]:
    """The characters a candidate answers with: a surname on its own (one Hangul syllable tagged NNP, as in
    '강 대표는') stands for the full name the passage gives elsewhere, the nearest one before it, else the
    first after; any other candidate, its own text."""
    if c.first != c.last or q.tags[c.first] != "NNP" or len(c.text) != 1 or not _hangul(c.text):
        return c.start, c.end
    names = q.full_names.get(c.text, [])
    before = [name for name in names if name[1] <= c.start]
    if before:
        return before[-1]
    after = [name for name in names if name[0] >= c.end]
    return after[0] if after else (c.start, c.end)


def question_view(question: Analysis, context: Analysis, top_sentences: int, max_eojeols: int,
                  max_chars: int, related: dict[str, dict[str, float]] | None = None,
                  retrieval: Retrieval = Retrieval()) -> QuestionView:
    """Candidates of one question and their features (a pure function of the two texts, the question
    words' `related_words` and the retrieval setting, so a reader memoises it across the folds of a
    cross-fit). Candidates come from the `top_sentences` sentences that `retrieval` ranks first (BM25, a word
    near a question word counting at its similarity)."""
    q = QuestionContext(question, context, related, top_sentences, retrieval)
    spans, rows = [], []
    for first, last in candidate_spans(context, q.tags, q.match.sentences, q.kept_sentences, max_eojeols, max_chars):
        candidate = Candidate.of(q, first, last)
        row: dict[str, float] = {}
        for group in FEATURE_GROUPS:
            row.update(group(q, candidate))
        spans.append(answer_span(q, candidate))
        rows.append(row)
    # Each row's entries in its dict's order, read through C-level iterators: a question's rows hold about
    # 9,000 entries, and generator expressions over them took twice as long.
    features = sparse.csr_matrix(
        (np.fromiter(chain.from_iterable(row.values() for row in rows), dtype=np.float32),
         np.fromiter(map(FEATURE_INDEX.__getitem__, chain.from_iterable(rows)), dtype=np.int32),
         np.cumsum([0] + [len(row) for row in rows])), shape=(len(rows), len(FEATURE_NAMES)))
    return QuestionView(q.qtype, spans, features, q.best_share, q.match.passage_share, len(q.query),
                        q.match.missing_words, q.match.passage_soft_share, q.match.unrelated_words)


class ViewMemo:
    """Question views by (question, context, candidate settings): cross-fitting fits a reader fold after fold
    on the same questions, and building a view costs more than scoring it. Bounded, oldest dropped first."""

    def __init__(self, capacity: int = 4000):
        self.capacity = capacity
        self.entries: OrderedDict[tuple, QuestionView] = OrderedDict()

    def get(self, key: tuple, build: Callable[[], QuestionView]) -> QuestionView:
        if key in self.entries:
            self.entries.move_to_end(key)
            return self.entries[key]
        view = self.entries[key] = build()
        if len(self.entries) > self.capacity:
            self.entries.popitem(last=False)
        return view


# The views of this process: a cache outside the readers (one that is saved, copied or cloned takes none with it),
# shared by every reader here as the analyses are. Views are pure functions of their key, so sharing them changes
# no prediction.
VIEW_MEMO = ViewMemo()
