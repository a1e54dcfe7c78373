"""Kiwi's part-of-speech tags mapped to the Sejong tags that KLUE's data uses."""
from __future__ import annotations

from functools import lru_cache

# Kiwi-only tags with no Sejong twin, mapped to the Sejong tag a KLUE annotator would have used:
# brackets and quotes are SS; web tokens are foreign-script (SL), numeric (SN) or other symbols (SW);
# Kiwi's inserted codas and saisiot are not morphemes in Sejong (NA: unanalysable); user-dictionary
# entries are proper nouns; the adverbial derivation suffix XSM is a Sejong XSA-like suffix.
_KIWI_ONLY = {
    "SSO": "SS", "SSC": "SS",
    "W_URL": "SL", "W_EMAIL": "SL", "W_HASHTAG": "SW", "W_MENTION": "SW", "W_SERIAL": "SN", "W_EMOJI": "SW",
    "Z_CODA": "NA", "Z_SIOT": "NA",
    "XSM": "XSA", "UN": "NA",
}


@lru_cache(maxsize=None)
def to_sejong(tag: str) -> str:
    """'VV-R' -> 'VV', 'SSO' -> 'SS', 'W_URL' -> 'SL', 'USER0' -> 'NNP'; Sejong tags pass through."""
    base = tag.split("-", 1)[0] if tag[-2:] in ("-R", "-I") else tag
    if base.startswith("USER"):
        return "NNP"
    return _KIWI_ONLY.get(base, base)
