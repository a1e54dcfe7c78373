"""Inputs grown to a size for `bench long-inputs`: the pieces that each task's Benchmarks.grow is made of."""
from __future__ import annotations

import copy


def repeated(text: str, size: int) -> str:
    """`text` written again and again, joined by spaces, and cut to `size` characters at a space."""
    times = -(-size // (len(text) + 1))
    long = " ".join([text] * times)[:size]
    return long.rsplit(" ", 1)[0] if " " in long[size // 2:] else long


def eojeols(text: str, count: int) -> str:
    """`count` eojeols (space-separated words), the text's own taken in turn."""
    words = text.split()
    return " ".join(words[index % len(words)] for index in range(count))


def first_of_pair(pair: tuple[str, str], size: int) -> tuple[str, str]:
    """A pair of sentences whose first is grown to `size` characters."""
    return repeated(pair[0], size), pair[1]


def field_grown(name: str):
    """(a plain-input dict, size) -> the dict with its text field `name` grown to `size` characters."""
    def grow(row: dict, size: int) -> dict:
        return {**row, name: repeated(row[name], size)}
    return grow


def sentence_extended(row: dict, size: int) -> dict:
    """A dict whose 'sentence' is extended to `size` characters after its own end, so that offsets into it (an
    entity's) still hold."""
    return {**row, "sentence": row["sentence"] + " " + repeated(row["sentence"], size - len(row["sentence"]) - 1)}


def first_user_turn_grown(dialogue: dict, size: int) -> dict:
    """A dialogue whose first user turn is grown to `size` characters."""
    grown = copy.deepcopy(dialogue)
    user = next(turn for turn in grown["dialogue"] if turn["role"] == "user")
    user["text"] = repeated(user["text"], size)
    return grown
