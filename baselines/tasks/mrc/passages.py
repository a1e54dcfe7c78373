"""Passages as sentences of morphemes, and how much of a question each part of a passage matches."""
from __future__ import annotations

import math
from array import array
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from features.morphemes import Analysis
from features.tags import to_sejong
from features.vectorize import CONTENT_TAGS

# Content morphemes so common in questions and passages alike that matching them says nothing.
LIGHT_FORMS = frozenset({"것", "수", "등", "때", "중", "이", "그", "하", "되", "있", "없", "않", "위", "년", "월", "일",
                         "무엇", "뭐", "누구", "어디", "언제", "얼마", "몇", "어떤", "어느", "어떻", "왜"})


def sentence_ids(analysis: Analysis) -> array:
    """For each morpheme, the index of its sentence. A sentence ends after final punctuation ('.', '?',
    '!') that is not inside a number ('3.5'), even without a following space ('있다.국제' is two
    sentences), and at every line break."""
    ids = array("i", [0] * len(analysis))
    current = 0
    text = analysis.text
    for index in range(len(analysis)):
        ids[index] = current
        if index + 1 == len(analysis):
            break
        end, next_start = analysis.ends[index], analysis.starts[index + 1]
        final = to_sejong(analysis.tags[index]) == "SF" and not (end < len(text) and text[end].isdigit())
        if final or "\n" in text[end:next_start]:
            current += 1
    return ids


def content_set(analysis: Analysis, start: int = 0, stop: int | None = None) -> set[str]:
    """The lower-cased content morphemes of analysis[start:stop], light forms left out."""
    stop = len(analysis) if stop is None else stop
    return {analysis.forms[i].lower() for i in range(start, stop)
            if to_sejong(analysis.tags[i]) in CONTENT_TAGS and analysis.forms[i] not in LIGHT_FORMS}


def sentence_weights(query: Iterable[str], sentences: list[set[str]]) -> dict[str, float]:
    """IDF of each query morpheme over the passage's sentences: a word that few sentences share points
    at them. A word in no sentence gets the weight of one that is in half a sentence (it cannot match,
    but counts in the whole that a match is a share of)."""
    count = max(len(sentences), 1)
    weights = {}
    for word in query:
        frequency = sum(word in sentence for sentence in sentences)
        weights[word] = math.log(1.0 + count / max(frequency, 0.5))
    return weights


def matched_share(words: Iterable[str], weights: dict[str, float]) -> float:
    """The weighted share of the query that `words` cover."""
    # fsum: the sum must not depend on the order of a set, which changes with each process's hash seed.
    total = math.fsum(weights.values())
    return math.fsum(weights.get(word, 0.0) for word in set(words)) / total if total else 0.0


# Candidate settings of the sentence retrieval; a reader picks one on its training questions (SpanRanker.fit).
BM25_K1 = (0.5, 1.2, 2.0)
BM25_B = (0.0, 0.25, 0.75)
NEIGHBOUR_SHARES = (0.0, 0.2, 0.35, 0.5)


@dataclass(frozen=True)
class Retrieval:
    """How sentences are ranked for a question: BM25 (term frequency saturating at k1, lengths normalised
    by b) with soft matches, where each sentence also gets `neighbour_share` of its neighbours' scores
    (a question often spreads over two adjacent sentences)."""
    k1: float = 1.2
    b: float = 0.0
    neighbour_share: float = 0.35


@dataclass
class SentenceTerms:
    """A question's words against a passage's sentences: for each question word (rows, in `words` order)
    its soft term frequency in each sentence (columns), a near word counting at its similarity, and each
    sentence's length in content morphemes."""
    words: list[str]
    frequencies: np.ndarray
    lengths: np.ndarray


def sentence_terms(query: Iterable[str], related: dict[str, dict[str, float]], counts: list[Counter]
                   ) -> SentenceTerms:
    """`counts` are the content morphemes of each sentence (sentence_contents)."""
    words = sorted(query)
    frequencies = np.zeros((len(words), len(counts)))
    for row, word in enumerate(words):
        near_words = related.get(word, {})
        for column, sentence in enumerate(counts):
            frequencies[row, column] = sentence.get(word, 0) + math.fsum(
                sentence.get(near, 0) * cosine for near, cosine in sorted(near_words.items()))
    return SentenceTerms(words, frequencies, np.array([sum(c.values()) for c in counts], dtype=float))


def sentence_contents(analysis: Analysis) -> tuple[array, list[Counter]]:
    """Each morpheme's sentence (sentence_ids), and the lower-cased content morphemes of each sentence with
    their counts, light forms left out (a sentence's content_set is the set of its counts' keys)."""
    sentences = sentence_ids(analysis)
    counts = [Counter() for _ in range((max(sentences) + 1) if len(sentences) else 0)]
    for index, (form, tag) in enumerate(zip(analysis.forms, analysis.tags)):
        if to_sejong(tag) in CONTENT_TAGS and form not in LIGHT_FORMS:
            counts[sentences[index]][form.lower()] += 1
    return sentences, counts


def bm25_scores(terms: SentenceTerms, retrieval: Retrieval) -> np.ndarray:
    """Each sentence's score: BM25 with IDF over the passage's sentences, plus its neighbours' share."""
    frequencies, lengths = terms.frequencies, terms.lengths
    count = frequencies.shape[1]
    if not count:
        return np.zeros(0)
    present = (frequencies > 0).sum(axis=1, keepdims=True)
    idf = np.log1p((count - present + 0.5) / (present + 0.5))
    norm = retrieval.k1 * (1 - retrieval.b + retrieval.b * lengths / max(lengths.mean(), 1.0))
    scores = (idf * frequencies * (retrieval.k1 + 1) / (frequencies + norm)).sum(axis=0)
    smoothed = scores.copy()
    smoothed[1:] += retrieval.neighbour_share * scores[:-1]
    smoothed[:-1] += retrieval.neighbour_share * scores[1:]
    return smoothed


def sentence_ranking(scores: np.ndarray) -> list[int]:
    """Sentences by score, the highest first; a tie goes to the earlier sentence."""
    return sorted(range(len(scores)), key=lambda s: (-scores[s], s))


def _rank(scores: np.ndarray, sentence: int) -> int:
    """The place of `sentence` in sentence_ranking(scores), without sorting."""
    return int((scores > scores[sentence]).sum() + (scores[:sentence] == scores[sentence]).sum())


def best_retrieval(questions: Sequence[tuple[SentenceTerms, int]], depth: int) -> Retrieval:
    """The setting of the grid under which most of the (terms, answer sentence) pairs rank their answer
    sentence within the first `depth`; ties go to the larger mean reciprocal rank, then to the first setting
    of the grid."""
    best, best_key = Retrieval(), None
    for setting in (Retrieval(k1, b, share) for k1 in BM25_K1 for b in BM25_B for share in NEIGHBOUR_SHARES):
        ranks = np.array([_rank(bm25_scores(terms, setting), gold) for terms, gold in questions])
        key = (float(np.mean(ranks < depth)), float(np.mean(1.0 / (1 + ranks)))) if len(ranks) else (0.0, 0.0)
        if best_key is None or key > best_key:
            best, best_key = setting, key
    return best
