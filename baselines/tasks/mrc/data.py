"""MRC records: the official SQuAD-style JSON, raw JSONL rows and plain dicts, and their gold answers."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from baselines.data.fileio import DataError, looks_like_jsonl, read_json, require
from baselines.models.estimators import PLAIN_INPUT, plain_row, records_from
from baselines.taskspec import copy_marker, jsonl_records
from features.normalize import nfc, nfc_text


@dataclass
class MrcAnswer:
    text: str
    start: int


@dataclass
class MrcQuestion:
    guid: str
    question: str
    context: str
    title: str = ""
    answers: list[MrcAnswer] = field(default_factory=list)
    is_impossible: bool = False
    question_type: Any = None
    plausible_answers: list[MrcAnswer] = field(default_factory=list)


def _answers(question: dict, key: str, context: str, path: Path, where: str,
             check_text: bool = True) -> list[MrcAnswer]:
    """The answers under `key`; with check_text, the context must hold each answer at its offset."""
    answers = []
    for index, answer in enumerate(question.get(key) or []):
        answer_where = f"{where}, {key}[{index}]"
        text = require(answer, "text", str, path, answer_where)
        start = require(answer, "answer_start", int, path, answer_where)
        if not 0 <= start <= start + len(text) <= len(context):
            raise DataError(path, answer_where, f"answer_start {start} + {len(text)} characters is outside "
                            f"the context ({len(context)} characters)")
        if check_text and context[start:start + len(text)] != text:
            raise DataError(path, answer_where, f"the context has {context[start:start + len(text)]!r} at "
                            f"{start}, not the answer {text!r}")
        answers.append(MrcAnswer(text, start))
    return answers


def load(path: Path) -> list[MrcQuestion]:
    """The official nested JSON: data[].paragraphs[].qas[] ('question_type', 'plausible_answers' optional)."""
    return records_from_document(read_json(path), path)


def records_from_document(data: Any, path: Path) -> list[MrcQuestion]:
    """Questions of a document in the official layout."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise DataError(path, None, "expected a JSON object with a 'data' list (the SQuAD-style layout)")
    records = []
    for doc_index, document in enumerate(data["data"]):
        doc_where = f"data[{doc_index}]"
        title = document.get("title", "") if isinstance(document, dict) else ""
        for par_index, paragraph in enumerate(require(document, "paragraphs", list, path, doc_where)):
            par_where = f"{doc_where}.paragraphs[{par_index}]"
            context = require(paragraph, "context", str, path, par_where)
            for q_index, question in enumerate(require(paragraph, "qas", list, path, par_where)):
                where = f"{par_where}.qas[{q_index}]"
                guid = require(question, "guid", str, path, where)
                where = f"guid {guid}"
                impossible = boolean(question, "is_impossible", path, where)
                answers = _answers(question, "answers", context, path, where)
                if not impossible and not answers:
                    raise DataError(path, where, "answerable question (is_impossible false) without answers")
                records.append(MrcQuestion(
                    guid=guid, question=require(question, "question", str, path, where), context=context,
                    title=str(title), answers=answers, is_impossible=impossible,
                    question_type=question.get("question_type"),
                    # Plausible answers of unanswerable questions are informative only, and some
                    # public conversions shifted their offsets: keep them without the text check.
                    plausible_answers=_answers(question, "plausible_answers", context, path, where,
                                               check_text=False),
                ))
    return records


def boolean(row: dict, key: str, path: Path, where: str) -> bool:
    """A JSON boolean (false where absent). Not bool(value): the string "false" is true in Python, and would
    make an answerable question unanswerable without a word."""
    value = row.get(key, False)
    if not isinstance(value, bool):
        raise DataError(path, where, f"'{key}' should be true or false, not {value!r}")
    return value


def from_hf(rows: list[dict], path: Path) -> list[MrcQuestion]:
    """Rows of the Hugging Face klue 'mrc' schema, one per question: 'answers' holds lists of 'text' and
    'answer_start'. For an unanswerable question (is_impossible) those are its plausible answers, which the
    official layout keeps apart, so they go to 'plausible_answers' and its answers are []."""
    paragraphs: dict[tuple[str, str], dict] = {}
    for number, row in enumerate(rows, start=1):
        where = f"row {number}"
        answers = require(row, "answers", dict, path, where)
        texts, starts = answers.get("text") or [], answers.get("answer_start") or []
        if not isinstance(texts, list) or not isinstance(starts, list) or len(texts) != len(starts):
            raise DataError(path, where, "'answers' should hold lists 'text' and 'answer_start' of one length")
        spans = [{"text": text, "answer_start": start} for text, start in zip(texts, starts)]
        impossible = boolean(row, "is_impossible", path, where)
        question = {"guid": require(row, "guid", str, path, where), "question": require(row, "question", str, path,
                                                                                          where),
                    "is_impossible": impossible, "question_type": row.get("question_type"),
                    "answers": [] if impossible else spans, "plausible_answers": spans if impossible else []}
        key = (str(row.get("title") or ""), require(row, "context", str, path, where))
        paragraphs.setdefault(key, {"title": key[0], "paragraphs": [{"context": key[1], "qas": []}]})
        paragraphs[key]["paragraphs"][0]["qas"].append(question)
    records = records_from_document({"data": list(paragraphs.values())}, path)
    # In the rows' order, which predictions without guids follow, even where a passage's rows are not together.
    position = {row["guid"]: number for number, row in enumerate(rows)}
    return sorted(records, key=lambda record: position[record.guid])


def load_input(path: Path) -> list[MrcQuestion]:
    """Official JSON, or JSONL with 'context' and 'question' per line."""
    if not looks_like_jsonl(path):
        return load(path)
    return jsonl_records(path, lambda row, guid, where: raw_question(row, guid, path, where))


def raw_question(row: dict, guid: str, path: Path, where: str) -> MrcQuestion:
    """A question to answer from a raw row with 'question' and 'context' (no answers known)."""
    return MrcQuestion(guid, require(row, "question", str, path, where), require(row, "context", str, path, where))


def in_nfc(records: Sequence[MrcQuestion]) -> list[MrcQuestion]:
    """The questions with question and context in NFC, and their answers' texts and offsets moved with them
    (see features.normalize)."""
    converted = []
    for record in records:
        context, question = nfc_text(record.context), nfc(record.question)
        if not context.changed and question == record.question:
            converted.append(record)
            continue

        def moved(answers: list[MrcAnswer]) -> list[MrcAnswer]:
            return [MrcAnswer(nfc(answer.text), context.nfc_index(answer.start) if answer.start < len(record.context)
                              else len(context.text)) for answer in answers]
        converted.append(replace(record, question=question, context=context.text, answers=moved(record.answers),
                                 plausible_answers=moved(record.plausible_answers)))
    return converted


def targets(records: Sequence[MrcQuestion]) -> list[list[str]]:
    """Gold answer texts per question, [] for an unanswerable one."""
    return [[] if record.is_impossible else [a.text for a in record.answers] for record in records]


def predictions_from_json(data: Any) -> list[dict] | None:
    """The common {question_id: answer_text} object, as written by SQuAD-style evaluators."""
    if isinstance(data, dict) and all(isinstance(v, str) for v in data.values()):
        return [{"guid": guid, "answer": answer} for guid, answer in data.items()]
    return None


def as_records(X: Sequence) -> list[MrcQuestion]:
    """MrcQuestion records, or plain dicts with 'context' and 'question' (a raw JSONL row)."""
    return records_from(X, MrcQuestion, lambda item, guid, where: raw_question(plain_row(item, where), guid,
                                                                               PLAIN_INPUT, where))


def plain_inputs(records: Sequence[MrcQuestion]) -> list[dict]:
    """Dicts with 'context' and 'question'."""
    return [{"context": record.context, "question": record.question} for record in records]


def distinct_copy(record: MrcQuestion, copy: int) -> MrcQuestion:
    """Copy `copy` of a question for the scale benchmark: a sentence naming copy_marker(copy) in front of
    the passage (the answers moved), and 문항<copy> in front of the question, so that the question does not
    match the passage's new sentence."""
    prefix = f"{copy_marker(copy)}에 관한 글이다. "

    def moved(answers: list[MrcAnswer]) -> list[MrcAnswer]:
        return [replace(answer, start=answer.start + len(prefix)) for answer in answers]

    return replace(record, guid=f"{record.guid}-copy{copy}", context=prefix + record.context,
                   question=f"문항{copy}. {record.question}", answers=moved(record.answers),
                   plausible_answers=moved(record.plausible_answers))
