"""Decomposed Hangul (NFD) gets the answers that composed Hangul (NFC) gets, for all 8 tasks, with NER and
MRC offsets into the user's own string."""
from __future__ import annotations

import unicodedata

import pytest

from baselines.runner.registry import get_task
from baselines.tasks.ner import entities
from features.normalize import nfc_text
from helpers import MODELS, sample_file


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def nfd_offset(text: str, position: int) -> int:
    """Where NFC character `position` of `text` starts once the text is decomposed."""
    return len(nfd(text[:position]))


def decomposed(code: str, item):
    """A plain input with every text in NFD (RE's entity offsets moved with it)."""
    if isinstance(item, str):
        return nfd(item)
    if isinstance(item, tuple):
        return tuple(nfd(part) for part in item)
    if code == "re":
        sentence = item["sentence"]
        moved = {key: {**entity, "word": nfd(entity["word"]), "start_idx": nfd_offset(sentence, entity["start_idx"]),
                       "end_idx": nfd_offset(sentence, entity["end_idx"] + 1) - 1}
                 for key, entity in item.items() if key.endswith("_entity")}
        return {**item, "sentence": nfd(sentence), **moved}
    if code == "wos":
        return {**item, "dialogue": [{**turn, "text": nfd(turn["text"])} for turn in item["dialogue"]]}
    return {key: nfd(value) if isinstance(value, str) else value for key, value in item.items()}


@pytest.fixture(scope="module")
def fitted_defaults(quick_fit):
    return {(code, name): quick_fit(code, name) for code, name in MODELS if name != "trivial"}


@pytest.mark.parametrize("code, name", [(code, name) for code, name in MODELS if name != "trivial"])
def test_decomposed_hangul_gets_the_same_predictions(fitted_defaults, code, name):
    spec, path = get_task(code), sample_file(code, "dev")
    records = spec.reading.load(path)[:40]
    composed = spec.reading.plain_inputs(records)
    changed = [decomposed(code, item) for item in composed]
    assert changed != composed
    model = fitted_defaults[code, name]
    expected, got = list(model.predict(composed)), list(model.predict(changed))
    if code == "ner":
        for text, nfc_tags, nfd_text, nfd_tags in zip(composed, expected, changed, got):
            assert len(nfd_tags) == len(nfd_text)
            found = entities(nfd_text, nfd_tags)
            assert all(entity["text"] == nfd_text[entity["start"]:entity["end"]] for entity in found)
            assert [(e["type"], unicodedata.normalize("NFC", e["text"])) for e in found] == [
                (e["type"], e["text"]) for e in entities(text, nfc_tags)]
        assert any(entities(text, tags) for text, tags in zip(changed, got))
    elif code == "mrc":
        for item, (answer, start), nfc_answer in zip(changed, got, expected):
            assert item["context"][start:start + len(answer)] == answer
            assert unicodedata.normalize("NFC", answer) == nfc_answer[0]
    elif code == "sts":
        assert got == pytest.approx(expected, abs=0)
    else:
        assert repr(got) == repr(expected)
    if hasattr(model, "predict_proba") and code != "ner":
        assert (model.predict_proba(changed) == model.predict_proba(composed)).all()


def test_the_segment_map_keeps_whole_syllables():
    original = nfd("이순신은 café에서")
    text = nfc_text(original)
    assert text.changed and text.text == "이순신은 café에서"
    assert original[slice(*text.original_span(0, 3))] == nfd("이순신")
    assert text.nfc_index(len(nfd("이순"))) == 2 and text.nfc_index(len(nfd("이순")) + 1) == 2
    tags = ["B-PS", "I-PS", "I-PS"] + ["O"] * (len(text.text) - 3)
    back = text.tags_to_original(tags)
    assert back[:8] == ["B-PS"] + ["I-PS"] * 7 and set(back[8:]) == {"O"}
    assert text.tags_to_nfc(back) == tags
    assert not nfc_text("이순신").changed
