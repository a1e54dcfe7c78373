"""A gazetteer of typed entity names (from another task's annotations) and where its names occur in a text."""
from __future__ import annotations

from collections import Counter
from typing import Iterable

# A name is looked for where a word starts: after a space, an opening bracket or quote, or at the text's
# start. Korean attaches particles after a name ('삼성전자가'), rarely anything before it.
WORD_OPENERS = frozenset(" \t\"'(<[{《「『【‘“")


class EntityGazetteer:
    """Names and their entity type: each name (at least `min_length` characters) with the type it was given
    most often (ties to the first in sorted order). Holds only str-keyed dicts, so that a model holding it
    saves with skops.

    >>> gazetteer = EntityGazetteer([("삼성전자", "ORG"), ("삼성", "ORG"), ("이순신", "PER")])
    >>> gazetteer.matches("삼성전자가 이순신 동상을")
    [(0, 4, 'ORG'), (6, 9, 'PER')]
    >>> gazetteer.matches("故이순신 장군", inside_from=3)
    [(1, 4, 'PER')]
    """

    def __init__(self, mentions: Iterable[tuple[str, str]], min_length: int = 2):
        counts: dict[str, Counter] = {}
        for name, kind in mentions:
            name = name.strip()
            if len(name) >= min_length:
                counts.setdefault(name, Counter())[kind] += 1
        self.types = {name: max(sorted(kinds), key=kinds.__getitem__) for name, kinds in sorted(counts.items())}
        self.longest = max(map(len, self.types), default=0)

    def __len__(self) -> int:
        return len(self.types)

    def __repr__(self) -> str:  # a model's repr shows its parameters: not 20,000 names
        return f"EntityGazetteer({len(self.types):,} names)"

    def matches(self, text: str, inside_from: int = 0) -> list[tuple[int, int, str]]:
        """(start, end, type) of the names found in `text`, end exclusive: at each word start, the longest
        name there, and with `inside_from`, names of at least that many characters inside a word too (a name in
        a compound: 삼성전자회장); the search goes on after each name found."""
        found = []
        position = 0
        while position < len(text):
            shortest = 1 if position == 0 or text[position - 1] in WORD_OPENERS else inside_from
            if shortest:
                for end in range(min(len(text), position + self.longest), position + shortest - 1, -1):
                    kind = self.types.get(text[position:end])
                    if kind is not None:
                        found.append((position, end, kind))
                        position = end - 1
                        break
            position += 1
        return found
