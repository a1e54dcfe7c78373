"""The analysis of one text: its morphemes with forms, tags, character offsets and eojeol indices."""
from __future__ import annotations

import bisect
import re
import sys
from array import array
from typing import NamedTuple, Sequence

from features.tags import to_sejong

_EOJEOL = re.compile(r"\S+")


class Morpheme(NamedTuple):
    form: str  # Kiwi's form: may be a restored form that differs from text[start:end] ('었' in '됐')
    tag: str  # Kiwi's tag; see features.tags.to_sejong for KLUE's
    start: int  # character offsets into the analysed text, end exclusive; morphemes may share them
    end: int
    eojeol: int  # index of the whitespace-separated word the morpheme belongs to


class Analysis:
    """The morphemes of one text, stored column-wise (cheap to cache and to rebuild). The eojeol of each
    morpheme is derived from the offsets on first use, so that neither analysis nor the cache pays for it
    when a model does not need it."""

    __slots__ = ("text", "forms", "tags", "starts", "ends", "_eojeols")

    def __init__(self, text: str, forms: Sequence[str], tags: Sequence[str], starts: array, ends: array):
        # Interned: Kiwi and the cache give each morpheme new strings, and an MRC passage's analysis took 71 KB,
        # mostly copies of the same forms and tags (1.25 GB of analyses at the official training size).
        self.text, self.forms, self.tags = text, tuple(map(sys.intern, forms)), tuple(map(sys.intern, tags))
        self.starts, self.ends = starts, ends
        self._eojeols: array | None = None

    @property
    def eojeols(self) -> array:
        """For each morpheme, the index of the eojeol holding its first character (or, when that is a
        space, the eojeol before it)."""
        if self._eojeols is None:
            word_starts = [start for start, _end in eojeol_spans(self.text)]
            self._eojeols = array("i", [max(bisect.bisect_right(word_starts, s) - 1, 0) for s in self.starts])
        return self._eojeols

    def __len__(self) -> int:
        return len(self.forms)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Analysis) and self._state() == other._state()

    def __repr__(self) -> str:
        return f"Analysis({self.text!r}, {' '.join(f'{f}/{t}' for f, t in zip(self.forms, self.tags))})"

    def _state(self) -> tuple:
        return (self.text, self.forms, self.tags, list(self.starts), list(self.ends))

    def __getstate__(self) -> tuple:
        return self._state()

    def __setstate__(self, state: tuple) -> None:
        text, forms, tags, starts, ends = state
        self.__init__(text, forms, tags, array("i", starts), array("i", ends))

    @property
    def morphemes(self) -> list[Morpheme]:
        return [Morpheme(*fields) for fields in zip(self.forms, self.tags, self.starts, self.ends, self.eojeols)]

    @property
    def sejong_tags(self) -> list[str]:
        return [to_sejong(tag) for tag in self.tags]

    @property
    def surfaces(self) -> list[str]:
        """The text each morpheme covers (may differ from its form, or be shared by two morphemes)."""
        return [self.text[start:end] for start, end in zip(self.starts, self.ends)]


def eojeol_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each whitespace-separated word."""
    return [match.span() for match in _EOJEOL.finditer(text)]
