"""Text in Unicode NFC, the form Kiwi and the models know, with the way back to the user's own string.

Decomposed Hangul (NFD: a syllable as two or three conjoining jamo, as macOS file names and some editors
write it) is other characters to Kiwi and to character features: an NFD headline changed topic and an NFD
sentence lost every entity. Every model reads NFC. Where a model answers with character offsets (NER tags,
MRC spans) or reads them (RE entities), they are carried between the two strings by `NfcText`.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace
from typing import Sequence


def nfc(text: str) -> str:
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


@dataclass(frozen=True)
class NfcText:
    """A string and its NFC form, cut into segments that normalise on their own (a base character and the
    jamo or marks that compose with it or follow it). `spans[i]` is the [start, end) in the original of the
    segment that NFC character i comes from; `first[j]` the first NFC character of original character j's
    segment. Both are None for a string that is NFC already (the common case, kept cheap)."""
    original: str
    text: str
    spans: tuple[tuple[int, int], ...] | None = None
    first: tuple[int, ...] | None = None

    @property
    def changed(self) -> bool:
        return self.spans is not None

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original [start, end) of NFC characters [start, end): whole segments, so a syllable is never
        cut between its jamo."""
        if self.spans is None:
            return start, end
        if start >= end:
            position = self.spans[start][0] if start < len(self.spans) else len(self.original)
            return position, position
        return self.spans[start][0], self.spans[end - 1][1]

    def nfc_index(self, position: int) -> int:
        """The NFC character that original character `position` belongs to."""
        return position if self.first is None else self.first[position]

    def tags_to_nfc(self, tags: Sequence[str]) -> list[str]:
        """Per-character tags of the original as tags of the NFC characters: each takes its segment's first."""
        return list(tags) if self.spans is None else [tags[start] for start, _end in self.spans]

    def tags_to_original(self, tags: Sequence[str]) -> list[str]:
        """IOB2 tags of the NFC characters as tags of the original's: a segment's first character takes its
        NFC character's tag, the rest of the segment continue it (I-), so that entities keep their spans."""
        if self.spans is None:
            return list(tags)
        result = ["O"] * len(self.original)
        for index, (tag, (start, end)) in enumerate(zip(tags, self.spans)):
            if index and self.spans[index - 1] == (start, end):
                continue  # one segment gave several NFC characters: its first one speaks for it
            result[start] = tag
            inside = "O" if tag == "O" else f"I-{tag.split('-', 1)[-1]}"
            for position in range(start + 1, end):
                result[position] = inside
        return result


def nfc_text(original: str) -> NfcText:
    """`original` with its NFC form and the segment map between them (identity when already NFC)."""
    if unicodedata.is_normalized("NFC", original):
        return NfcText(original, original)
    segments: list[tuple[int, int]] = []
    for position, char in enumerate(original):
        if segments:
            start, _end = segments[-1]
            pending = original[start:position]
            # A mark (combining class > 0) stays with its base; a starter joins the segment when it composes
            # with it (a medial or final jamo after its initial), which leaves the NFC length unchanged.
            if unicodedata.combining(char) or len(unicodedata.normalize("NFC", pending + char)) <= len(
                    unicodedata.normalize("NFC", pending)):
                segments[-1] = (start, position + 1)
                continue
        segments.append((position, position + 1))
    pieces = [unicodedata.normalize("NFC", original[start:end]) for start, end in segments]
    spans, first = [], []
    for (start, end), piece in zip(segments, pieces):
        first.extend([len(spans)] * (end - start))
        spans.extend([(start, end)] * len(piece))
    return NfcText(original, "".join(pieces), tuple(spans), tuple(first))


def nfc_fields(record, *names: str):
    """`record` (a dataclass) with its text fields `names` in NFC; the record itself when they already are."""
    changed = {name: nfc(getattr(record, name)) for name in names
               if isinstance(getattr(record, name), str) and not unicodedata.is_normalized("NFC", getattr(record, name))}
    return replace(record, **changed) if changed else record
