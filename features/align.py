"""Alignment between characters, morphemes and eojeols (whitespace words) of an analysed text."""
from __future__ import annotations

from features.morphemes import Analysis, eojeol_spans


def char_to_eojeol(text: str) -> list[int]:
    """For each character, the index of its eojeol; -1 for white space."""
    mapping = [-1] * len(text)
    for index, (start, end) in enumerate(eojeol_spans(text)):
        mapping[start:end] = [index] * (end - start)
    return mapping


def char_to_morpheme(analysis: Analysis) -> list[int]:
    """For each character, the first morpheme that covers it; -1 where none does (spaces). Morphemes
    that share characters ('되' and '었' in '됐') leave the character to the first."""
    mapping = [-1] * len(analysis.text)
    for index in range(len(analysis) - 1, -1, -1):
        start, end = analysis.starts[index], analysis.ends[index]
        mapping[start:end] = [index] * (end - start)
    return mapping


def _overlaps(start: int, end: int, span_start: int, span_end: int) -> bool:
    if start == end:  # a zero-length morpheme belongs where it sits
        return span_start <= start < span_end
    return start < span_end and end > span_start


def morphemes_in_span(analysis: Analysis, start: int, end: int) -> list[int]:
    """Indices of the morphemes that overlap the character span [start, end)."""
    return [i for i in range(len(analysis)) if _overlaps(analysis.starts[i], analysis.ends[i], start, end)]

