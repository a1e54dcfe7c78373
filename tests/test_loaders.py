"""Loaders of the official formats: record counts on the real files, clear errors on malformed input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from baselines.data.fileio import DataError
from baselines.errors import InputWarning
from baselines.runner.registry import get_task
from helpers import write_json

# Record counts that ../shared/klue/README.md gives for each file.
SHARED_FILES = [
    ("ynat", "ynat-v1.1/ynat-v1.1_train.json", 45678),
    ("ynat", "ynat-v1.1/ynat-v1.1_dev.json", 9107),
    ("sts", "klue-sts-v1.1/klue-sts-v1.1_train.json", 11668),
    ("sts", "klue-sts-v1.1/klue-sts-v1.1_dev.json", 519),
    ("nli", "klue-nli-v1.1/klue-nli-v1.1_train.json", 24998),
    ("nli", "klue-nli-v1.1/klue-nli-v1.1_dev.json", 3000),
    ("ner", "klue-ner-v1.1/klue-ner-v1.1_train.first5000.tsv", 5000),
    ("ner", "klue-ner-v1.1/klue-ner-v1.1_dev.tsv", 5000),
    ("re", "klue-re-v1.1/klue-re-v1.1_train.json", 32470),
    ("re", "klue-re-v1.1/klue-re-v1.1_dev.json", 7765),
    ("dp", "klue-dp-v1.1/klue-dp-v1.1_train.first1000.tsv", 1000),
    ("dp", "klue-dp-v1.1/klue-dp-v1.1_dev.tsv", 2000),
    ("mrc", "klue-mrc-v1.1/klue-mrc-v1.1_dev.partial1350.json", 1350),
    ("wos", "wos-v1.1/wos-v1.1_dev.first700.json", 700),
]


@pytest.mark.parametrize("task,relative,count", SHARED_FILES)
def test_every_shared_file_loads_with_its_record_count(task, relative, count, shared_klue):
    assert len(get_task(task).reading.load(shared_klue / relative)) == count


def test_resources_load(shared_klue):
    relations = get_task("re").resources.load_resources(
        {"relation_list.json": shared_klue / "klue-re-v1.1/relation_list.json"})
    assert len(relations["relations"]) == 30 and relations["relations"][0] == "no_relation"
    ontology = get_task("wos").resources.load_resources({"ontology.json": shared_klue / "wos-v1.1/ontology.json"})
    assert len(ontology["ontology"]) == 45


def test_mrc_counts_unanswerable_questions(shared_klue):
    records = get_task("mrc").reading.load(shared_klue / "klue-mrc-v1.1/klue-mrc-v1.1_dev.partial1350.json")
    assert sum(r.is_impossible for r in records) == 420


def test_ner_sentence_text_keeps_spaces_and_tags_align():
    from baselines.data.sources import sample_dir

    records = get_task("ner").reading.load(sample_dir("ner") / "klue-ner-v1.1" / "klue-ner-v1.1_dev.tsv")
    assert all(len(r.text) == len(r.tags) for r in records)
    assert any(" " in r.text for r in records)


def expect_error(task: str, path: Path, *fragments: str) -> str:
    with pytest.raises(DataError) as caught:
        get_task(task).reading.load(path)
    message = str(caught.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_bad_json_names_line(tmp_path):
    path = tmp_path / "ynat.json"
    path.write_text('[{"guid": "a", "title": "x", "label": "사회"},\n  {"guid": ', encoding="utf-8")
    expect_error("ynat", path, "line 2", "invalid JSON")


def test_missing_field_names_guid(tmp_path):
    path = write_json(tmp_path / "nli.json", [{"guid": "klue-nli-x", "premise": "a", "gold_label": "neutral"}])
    expect_error("nli", path, "guid klue-nli-x", "'hypothesis'")


def test_unknown_label_names_guid(tmp_path):
    path = write_json(tmp_path / "ynat.json", [{"guid": "g7", "title": "제목", "label": "날씨"}])
    expect_error("ynat", path, "guid g7", "'날씨'")


def test_sts_label_type_and_range(tmp_path):
    row = {"guid": "s1", "sentence1": "a", "sentence2": "b", "labels": {"real-label": "high"}}
    expect_error("sts", write_json(tmp_path / "a.json", [row]), "guid s1", "real-label")
    row["labels"]["real-label"] = 7.5
    expect_error("sts", write_json(tmp_path / "b.json", [row]), "guid s1", "outside 0-5")


def test_ner_wrong_column_count_and_unknown_tag(tmp_path):
    path = tmp_path / "ner.tsv"
    path.write_text("## s-1\t<김:PS>씨\n김\tB-PS\n씨\tO\textra\n\n", encoding="utf-8")
    expect_error("ner", path, "line 3", "guid s-1", "2 columns")
    path.write_text("## s-2\t김씨\n김\tB-XX\n씨\tO\n\n", encoding="utf-8")
    expect_error("ner", path, "line 2", "guid s-2", "'B-XX'")


def test_dp_head_out_of_range_and_columns(tmp_path):
    path = tmp_path / "dp.tsv"
    path.write_text("## d-1\t나는 간다\n1\t나는\t나 는\tNP+JX\t5\tNP_SBJ\n2\t간다\t가 ㄴ다\tVV+EF\t0\tVP\n\n",
                    encoding="utf-8")
    expect_error("dp", path, "line 2", "guid d-1", "HEAD '5'")
    path.write_text("## d-2\t나는\n1\t나는\t나 는\tNP+JX\t0\n\n", encoding="utf-8")
    expect_error("dp", path, "line 2", "guid d-2", "6 columns")
    path.write_text("## d-3\t나는\n1\t나는\t나 는\tNP+JX\t0\tSUBJ\n\n", encoding="utf-8")
    expect_error("dp", path, "guid d-3", "'SUBJ'")


def test_re_offsets_that_miss_the_word(tmp_path):
    row = {"guid": "r-9", "sentence": "홍길동은 서울에 산다.", "label": "per:place_of_residence",
           "subject_entity": {"word": "홍길동", "start_idx": 0, "end_idx": 2, "type": "PER"},
           "object_entity": {"word": "서울", "start_idx": 6, "end_idx": 7, "type": "LOC"}}
    expect_error("re", write_json(tmp_path / "re.json", [row]), "guid r-9", "object_entity", "'서울'")


def test_mrc_answer_outside_context(tmp_path):
    data = {"data": [{"title": "t", "paragraphs": [{"context": "짧은 글", "qas": [
        {"guid": "q-1", "question": "무엇?", "is_impossible": False,
         "answers": [{"text": "글", "answer_start": 40}]}]}]}]}
    expect_error("mrc", write_json(tmp_path / "mrc.json", data), "guid q-1", "outside the context")


def test_mrc_wrong_layout(tmp_path):
    expect_error("mrc", write_json(tmp_path / "mrc.json", [1, 2]), "'data' list")


def test_wos_bad_role_and_state(tmp_path):
    dialogue = {"guid": "w-1", "dialogue": [{"role": "bot", "text": "안녕"}]}
    expect_error("wos", write_json(tmp_path / "a.json", [dialogue]), "guid w-1, turn 0", "'bot'")
    dialogue = {"guid": "w-2", "dialogue": [{"role": "user", "text": "안녕", "state": ["관광이름"]}]}
    expect_error("wos", write_json(tmp_path / "b.json", [dialogue]), "guid w-2, turn 0", "domain-slot-value")


def test_not_a_list(tmp_path):
    expect_error("re", write_json(tmp_path / "re.json", {"guid": "x"}), "expected a JSON list")


def test_v1_file_names_are_found(tmp_path):
    from baselines.data.sources import find_file

    folder = tmp_path / "ynat-v1"
    folder.mkdir()
    (folder / "ynat-v1_dev.json").write_text(json.dumps([]), encoding="utf-8")
    assert find_file(tmp_path, get_task("ynat"), "ynat-v1.1_dev.json") == folder / "ynat-v1_dev.json"


# Tests for what mutation testing (mutmut over baselines/data/fileio.py) found unchecked: each error's full line,
# the replacement of lone surrogates and where it is said, and a TSV header's guid and text.

def test_each_file_error_names_the_file_the_place_and_what_was_expected(tmp_path):
    from baselines.data import fileio

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(DataError) as raised:
        fileio.parse_json_text(deep.read_text(encoding="utf-8"), deep, "record 3")
    assert str(raised.value) == f"{deep}: record 3: JSON nested too deeply to read"
    orphan = tmp_path / "orphan.tsv"
    orphan.write_text("가\tO\n", encoding="utf-8")
    with pytest.raises(DataError) as raised:
        list(fileio.read_tsv_blocks(orphan))
    assert str(raised.value) == (f"{orphan}: line 1: token row outside a sentence (expected a '## guid<TAB>text' "
                                 f"line first)")
    latin = tmp_path / "latin.tsv"
    sentences = "## g\t가\n가\tO\n\n".encode() * 2000  # past the decoder's first chunk, which it counted from
    latin.write_bytes(sentences + b"\xff\tO\n")
    for read in (fileio.read_text, lambda path: list(fileio.read_tsv_blocks(path))):
        with pytest.raises(DataError) as raised:
            read(latin)
        assert str(raised.value) == f"{latin}: line 6001, byte {len(sentences)}: not UTF-8 text"
    with pytest.raises(DataError) as raised:
        list(fileio.read_tsv_blocks(tmp_path / "absent.tsv"))
    assert str(raised.value) == f"{tmp_path / 'absent.tsv'}: cannot read (No such file or directory)"


def test_lone_surrogates_are_replaced_and_their_records_named(tmp_path):
    from baselines.data import fileio

    text = json.dumps([{"guid": "a", "title": "가\ud800"}, {"guid": "b", "title": "나"}, "\udfff"])
    with pytest.warns(InputWarning) as caught:
        value = fileio.parse_json_text(text, tmp_path / "x.json")
    assert value == [{"guid": "a", "title": "가\ufffd"}, {"guid": "b", "title": "나"}, "\ufffd"]
    assert str(caught[0].message) == (f"{tmp_path / 'x.json'}: 2 texts hold lone surrogate code points, which Kiwi "
                                      f"cannot analyse; they are read with U+FFFD in their place (first: [0] (guid "
                                      f"'a').title, [2])")


def test_a_tsv_header_gives_the_guid_before_its_first_tab_and_the_text_after_it(tmp_path):
    from baselines.data import fileio

    path = tmp_path / "x.tsv"
    path.write_text("## 주석 : ##\n##  g-1 \t가 나\t다\n가\tO\n\n", encoding="utf-8")
    (block,) = list(fileio.read_tsv_blocks(path))
    assert (block.guid, block.text, block.line, block.rows) == ("g-1", "가 나\t다", 2, [(3, ["가", "O"])])
