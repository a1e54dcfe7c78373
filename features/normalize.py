"""Text in Unicode NFC without invisible characters, as the models read it, with the way back to the user's string.

Decomposed Hangul (NFD: a syllable as two or three conjoining jamo, as macOS file names and some editors
write it) is other characters to Kiwi and to character features: an NFD headline changed topic and an NFD
sentence lost every entity. Every model reads NFC. Where a model answers with character offsets (NER tags,
MRC spans) or reads them (RE entities), they are carried between the two strings by `NfcText`.

Zero-width characters (U+200B space, U+200C non-joiner, U+200D joiner, U+2060 word joiner, U+FEFF anywhere)
show nothing, but Kiwi and the character features read them: one inside a title moved its topic's probability
by up to 0.039. The models read the text without them, so a text answers as its clean form does.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from typing import Sequence


INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"
_INVISIBLE = re.compile(f"[{INVISIBLE}]")


def is_clean(text: str) -> bool:
    """True when `text` is in NFC and has no invisible characters: what the models read, as it is."""
    return unicodedata.is_normalized("NFC", text) and not _INVISIBLE.search(text)


def nfc(text: str) -> str:
    """`text` as the models read it: without invisible characters, in NFC."""
    return text if is_clean(text) else unicodedata.normalize("NFC", _INVISIBLE.sub("", text))


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
    """`original` as the models read it (nfc) and the segment map between the two (identity when it is clean). An
    invisible character joins the segment before it, and gives no character of its own."""
    if is_clean(original):
        return NfcText(original, original)
    segments: list[tuple[int, int]] = []
    for position, char in enumerate(original):
        if segments and char in INVISIBLE:
            segments[-1] = (segments[-1][0], position + 1)
            continue
        if segments:
            start, _end = segments[-1]
            pending = _INVISIBLE.sub("", original[start:position])
            # A mark (combining class > 0) stays with its base; a starter joins the segment when it composes
            # with it (a medial or final jamo after its initial), which leaves the NFC length unchanged.
            if unicodedata.combining(char) or len(unicodedata.normalize("NFC", pending + char)) <= len(
                    unicodedata.normalize("NFC", pending)):
                segments[-1] = (start, position + 1)
                continue
        segments.append((position, position + 1))
    pieces = [unicodedata.normalize("NFC", _INVISIBLE.sub("", original[start:end])) for start, end in segments]
    spans, first = [], []
    for (start, end), piece in zip(segments, pieces):
        first.extend([len(spans)] * (end - start))
        spans.extend([(start, end)] * len(piece))
    return NfcText(original, "".join(pieces), tuple(spans), tuple(first))


def nfc_fields(record, *names: str):
    """`record` (a dataclass) with its text fields `names` in NFC; the record itself when they already are."""
    changed = {name: nfc(getattr(record, name)) for name in names
               if isinstance(getattr(record, name), str) and not is_clean(getattr(record, name))}
    return replace(record, **changed) if changed else record
