"""Character classes of mixed Korean text: Hangul, jamo, digits, Latin, Hanja, punctuation, space."""
from __future__ import annotations

import re
from functools import lru_cache

# A surrogate code point is valid in JSON (an escape such as \ud800) but not a character: Kiwi refuses it, and
# UTF-8 cannot encode it.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, one for one, so that offsets stay in place."""
    return LONE_SURROGATE.sub("\ufffd", text)


@lru_cache(maxsize=65536)
def char_class(char: str) -> str:
    """A short class name: HG Hangul syllable, JM jamo, DG digit, UP/LO Latin, HJ Hanja, SP space,
    PU punctuation or symbol, OT anything else."""
    code = ord(char)
    if char.isspace():
        return "SP"
    if 0xAC00 <= code <= 0xD7A3:
        return "HG"
    if 0x3131 <= code <= 0x318E or 0x1100 <= code <= 0x11FF:
        return "JM"
    if char.isdigit():
        return "DG"
    if char.isascii() and char.isalpha():
        return "UP" if char.isupper() else "LO"
    if 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0xF900 <= code <= 0xFAFF:
        return "HJ"
    if char.isalpha():
        return "OT"
    return "PU"


def shape(text: str) -> str:
    """The text with every run of one class squeezed to one letter: '2021년' -> 'D한', 'iPhone12' -> 'aD'.
    Hangul keeps its syllables (they carry the unit: 년, 월, 시, 명)."""
    out = []
    for char in text:
        kind = char_class(char)
        symbol = char if kind in ("HG", "PU") else {"DG": "D", "UP": "a", "LO": "a", "HJ": "H"}.get(kind, "x")
        if not out or out[-1] != symbol or kind == "HG":
            out.append(symbol)
    return "".join(out)
