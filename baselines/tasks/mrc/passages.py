"""Passages as sentences of morphemes, and how much of a question each part of a passage matches."""
from __future__ import annotations

import math
from array import array
from typing import Iterable

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
