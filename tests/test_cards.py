"""Every task's card is complete and agrees with the task it describes (the conformance test of the registry)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from baselines import api
from baselines.data import cards
from baselines.data.hf import SCHEMAS
from baselines.metrics.scoring import NER_TAGS
from baselines.data.sources import sample_dir
from baselines.runner.registry import TASK_CODES, get_task
from baselines.web.app import PAGE_FORMS
from helpers import REPO, sample_file

CARDS = {card.code: card for card in cards.built_in_cards()}


def test_the_registry_lists_the_tasks_whose_folders_hold_a_card_in_their_order():
    folders = sorted(path.parent.name for path in (REPO / "baselines" / "tasks").glob("*/card.json"))
    assert sorted(TASK_CODES) == folders and list(TASK_CODES) == [card.code for card in cards.built_in_cards()]
    assert [card.order for card in cards.built_in_cards()] == sorted({card.order for card in CARDS.values()})


@pytest.mark.parametrize("code", TASK_CODES)
def test_a_card_is_complete_and_agrees_with_its_task(code):
    card, spec = CARDS[code], get_task(code)
    assert card.title == spec.title and card.title_ko and card.folder == spec.folder and "CC BY-SA" in card.citation
    names = {entry.name for entry in card.official_files}
    assert spec.dev_file in names and (spec.train_file is None or spec.train_file in names)
    assert set(spec.extra_files) <= names
    # what the command line shows from the card before it imports the task is the task's (the registry checks it
    # as it loads a task; here each field is also held directly)
    assert (card.train_file, card.dev_file, card.extra_files, card.optional_extras) == (
        spec.train_file, spec.dev_file, tuple(spec.extra_files), tuple(spec.optional_extras))
    assert (card.listing.models, card.listing.default_model, card.listing.headline, card.listing.pos_models,
            card.listing.prediction_writers) == (
        tuple(spec.modelling.models), spec.modelling.default_model, tuple(spec.scoring.headline),
        dict(spec.modelling.model_for_pos), tuple(spec.scoring.prediction_files.writers))
    for entry in card.official_files:
        assert len(entry.sha256) == 64 and entry.size > 0 and entry.url.endswith(f"/{card.folder}/{entry.name}")
    for derived in card.derived_files:
        assert derived.official_name in names and derived.sha256 not in {e.sha256 for e in card.official_files}
    for published in card.published:  # published scores name headline metrics, on a stated split, with a source
        assert set(published.scores) <= set(spec.scoring.headline)
        assert published.split in ("dev", "test") and published.source
    schema = card.huggingface
    assert schema["config"] and schema["fields"] and all(schema["predictions"].values())
    assert set(schema["class_scores"].values()) <= set(schema["labels"])
    assert set(schema["split_sizes"]) <= {"train", "dev"} and all(size > 0 for size in schema["split_sizes"].values())
    # the page has its form, and a drawing
    assert spec.presentation.page_form in PAGE_FORMS and callable(spec.presentation.drawer)
    notice = (sample_dir(code) / "NOTICE.md").read_text(encoding="utf-8")  # the sample carries its attribution
    assert "CC BY-SA 4.0" in notice and "arXiv:2105.09680" in notice and spec.title in notice
    assert sample_file(code).parent == sample_dir(code) / card.folder
    records = api.load(code, sample_file(code))  # its sample loads, and its floor scores on it
    assert records and api.score(code, sample_file(code), api.predict(
        code, api.fit(code, sample_file(code, "train"), "trivial", log=api.quiet), records, log=api.quiet),
        log=api.quiet)


def test_the_hf_ner_tags_are_the_scorers_tag_set():
    hf_tags = SCHEMAS["ner"].labels["ner_tags"]
    assert sorted(hf_tags) == sorted(NER_TAGS) and len(hf_tags) == len(set(hf_tags))


def test_a_card_missing_a_field_is_an_error_that_names_it():
    data = json.loads((REPO / "baselines" / "tasks" / "nli" / "card.json").read_text(encoding="utf-8"))
    del data["published"]
    with pytest.raises(cards.CardError, match="missing published"):
        cards._card(data, "nli/card.json")
    data = {**json.loads((REPO / "baselines" / "tasks" / "nli" / "card.json").read_text(encoding="utf-8")),
            "official_files": [{"file": "x"}]}
    with pytest.raises(cards.CardError, match="nli/card.json: KeyError"):
        cards._card(data, "nli/card.json")


def test_a_card_that_tells_other_than_its_task_stops_the_task_from_loading(monkeypatch):
    from baselines.runner import registry
    card = cards.card_of("nli")
    told = dataclasses.replace(card, listing=dataclasses.replace(card.listing, default_model="fast"))
    monkeypatch.setattr(cards, "card_of", lambda code: told if code == "nli" else card)
    refusal = r"^baselines\.tasks\.nli: its card's listing\.default_model is 'fast', its TASK's 'tfidf-lr'$"
    with pytest.raises(cards.CardError, match=refusal):
        registry.get_task("nli")


def test_a_flat_name_of_0_2_reads_its_group_with_a_warning_until_0_4():
    from baselines.taskspec import GROUP_OF
    spec = get_task("nli")
    with pytest.warns(DeprecationWarning, match=r"^TaskSpec\.headline is now TaskSpec\.scoring\.headline; the old "
                                                r"name goes in release 0\.4$"):
        assert spec.headline == ("accuracy",)
    for name, group in GROUP_OF.items():
        with pytest.warns(DeprecationWarning, match=rf"^TaskSpec\.{name} is now TaskSpec\.{group}\.{name};"):
            assert getattr(spec, name) is getattr(getattr(spec, group), name)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_field'"):
        spec.no_such_field  # noqa: B018
