"""Prediction files as neural pipelines write them: the Hugging Face example scripts' text files, a JSON array and
CSV/TSV with a header, told apart by content and turned into rows that baselines.data.hf.prediction_rows reads.

The shapes, from the scripts' source (huggingface/transformers, examples/pytorch):
- `run_glue.py` and `run_classification.py` write `predict_results_<task>.txt` (or `predict_results.txt`): the
  header line `index<TAB>prediction`, then one line a record in the input's order, the label by its name
  (`label_list[item]`: the ClassLabel names, or the sorted label values of a JSON or CSV training file, which
  for a file exported from HF `klue` are the ClassLabel ids), or for regression (STS) `f"{item:3.3f}"`;
- `run_ner.py` writes `predictions.txt`: one line a sentence, the tag names joined by single spaces, one tag a
  token of the input. HF `klue` `ner` tokens are characters; a whitespace token yields no word piece, so no tag:
  a line may hold one tag per character or one per non-space character, and both are scored.
The KLUE-baseline repository (KLUE-benchmark/KLUE-baseline) writes no prediction file: its `run_klue.py`
keeps predictions in memory and writes only the metrics (`val_results.txt`).

Labels are read as names, as HF ClassLabel ids (a number, or digits in a text file), or as the Korean words that a
generative model answers with (NLI: 함의 / 중립 / 모순; YNAT's topic names are Korean already). Rows without a
guid are the gold file's records in order; an `index` column gives each row's position instead.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.data import cards, hf
from baselines.data.fileio import DataError, parse_json_text

AUTO = "auto"
# --predictions-format choices; `auto` detects, the others force one reading.
FORMATS = (AUTO, "jsonl", "hf-predict-results", "ner-lines", "json-array", "csv", "tsv")
DESCRIBED = {
    "jsonl": "JSON Lines, one prediction a line",
    "hf-predict-results": "a Hugging Face predict_results file (index<TAB>prediction)",
    "ner-lines": "a Hugging Face NER predictions.txt (space-joined tags, one sentence a line)",
    "json-array": "a JSON array in the gold file's order",
    "csv": "CSV with a header",
    "tsv": "TSV with a header",
    # read by baselines.runner.evaluate.read_predictions_as itself:
    "hf-parquet": "Hugging Face parquet",
    "hf-save_to_disk": "a Hugging Face save_to_disk folder",
    "json-object": "one JSON object keyed by id",
    "task-file": "the task's own file format",
}


@dataclass(frozen=True)
class Columns:
    """How a task's predictions stand in a table or an array, from its card (huggingface.prediction_table): the
    HF column the values go to (see hf.HfSchema.predictions), the header names read as it (first match wins),
    the kind of value, and the words a generative model answers with, each mapped to its official label."""
    target: str
    names: tuple[str, ...]
    kind: str  # "label" (a class), "number", "tags" (space-joined or a list) or "text"
    words: dict[str, str]


# task code -> Columns, for the tasks whose cards say how their predictions stand in a table.
COLUMNS = {card.code: Columns(table["column"], tuple(table["header_names"]), table["kind"], dict(table["words"]))
           for card in cards.all_cards() if (table := card.huggingface.get("prediction_table"))}
# The tasks whose predictions are tags a line, as run_ner.py writes them.
TAG_LINE_TASKS = tuple(code for code, columns in COLUMNS.items() if columns.kind == "tags")
ID_COLUMNS = ("guid", "id")
INDEX_COLUMN = "index"


def detect(code: str, path: Path, text: str) -> str | None:
    """The format of a file's text, or None when it is none of these (JSON Lines, a task's own format or
    an error, which the caller tells apart)."""
    start = text.lstrip("\ufeff \t\r\n")
    if start.startswith("["):
        return "json-array"
    if start.startswith("{") or not start:
        return None
    first = start.split("\n", 1)[0].rstrip("\r")
    header = [name.strip().lower() for name in first.split("\t")]
    if header == [INDEX_COLUMN, "prediction"]:
        return "hf-predict-results"
    for delimiter, name in (("\t", "tsv"), (",", "csv")):
        if delimiter in first and code in COLUMNS and _known_header(code, _split_header(first, delimiter)):
            return name
    if code in TAG_LINE_TASKS and all(tag in hf.SCHEMAS[code].labels[COLUMNS[code].target]
                                      for line in start.splitlines()[:50] for tag in line.split()):
        return "ner-lines"
    return None


def _split_header(line: str, delimiter: str) -> list[str]:
    return [name.strip().lower() for name in next(csv.reader([line], delimiter=delimiter))]


def _known_header(code: str, header: list[str]) -> bool:
    """A header that names a prediction column, or a guid, id or index column (then reading says which
    prediction column it lacks)."""
    return any(name in header for name in COLUMNS[code].names + ID_COLUMNS + (INDEX_COLUMN,))


def read(code: str, path: Path, text: str, kind: str) -> list[dict]:
    """The rows of a file in format `kind` (not jsonl), as HF users keep predictions (see module docstring)."""
    if kind == "json-array":
        return _json_array_rows(code, path, text)
    if kind == "ner-lines":
        if code not in TAG_LINE_TASKS:
            raise DataError(path, None, f"lines of tags (NER's predictions.txt) are read for "
                                        f"{', '.join(c.upper() for c in TAG_LINE_TASKS)} only")
        return [{COLUMNS[code].target: line.split()} for line in _lines(text)]
    if code not in COLUMNS:
        raise DataError(path, None, f"{DESCRIBED[kind]} is read for {', '.join(c.upper() for c in COLUMNS)}; "
                                    f"{code.upper()} predictions are JSON Lines or its own format")
    delimiter = "," if kind == "csv" else "\t"
    table = list(csv.reader(io.StringIO(text.lstrip("\ufeff")), delimiter=delimiter))
    table = [row for row in table if any(cell.strip() for cell in row)]
    if not table:
        raise DataError(path, None, f"expected {DESCRIBED[kind]}, found no lines")
    header = [name.strip().lower() for name in table[0]]
    columns = COLUMNS[code]
    value_column = next((name for name in columns.names if name in header), None)
    if value_column is None:
        raise DataError(path, "line 1", f"header {', '.join(header)}: expected a column named "
                                        f"{' or '.join(columns.names)}")
    rows = []
    for number, cells in enumerate(table[1:], start=2):
        if len(cells) != len(header):
            raise DataError(path, f"line {number}", f"{len(cells)} fields for the header's {len(header)}")
        by_name = dict(zip(header, cells))
        row = {columns.target: _value(code, columns, by_name[value_column], path, f"line {number}")}
        for name in ID_COLUMNS:
            if by_name.get(name, "").strip():
                row["guid"] = by_name[name].strip()
                break
        if INDEX_COLUMN in by_name and "guid" not in row:
            row[INDEX_COLUMN] = _index(by_name[INDEX_COLUMN], path, f"line {number}")
        rows.append(row)
    return in_index_order(rows, path)


def _json_array_rows(code: str, path: Path, text: str) -> list[dict]:
    data = parse_json_text(text, path)
    if not isinstance(data, list):
        raise DataError(path, None, f"expected a JSON array, found a {type(data).__name__}")
    columns = COLUMNS.get(code)
    rows = []
    for number, item in enumerate(data, start=1):
        where = f"item {number}"
        if isinstance(item, dict):
            row = dict(item)
            if columns is not None:
                value_column = next((name for name in columns.names if name in row and name != columns.target), None)
                if value_column is not None and columns.target not in row:
                    row[columns.target] = row.pop(value_column)
                if columns.target in row:
                    row[columns.target] = _value(code, columns, row[columns.target], path, where)
            rows.append(row)
        elif columns is None:
            raise DataError(path, where, f"expected an object (a prediction row of {code.upper()}), "
                                         f"found {type(item).__name__}")
        else:
            rows.append({columns.target: _value(code, columns, item, path, where)})
    return in_index_order(rows, path)


def _value(code: str, columns: Columns, value: Any, path: Path, where: str) -> Any:
    """One prediction as the HF column holds it: a class as its name or id, a number, a tag list, a text."""
    if columns.kind == "number":
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise DataError(path, where, f"{value!r} is not a number (STS predictions are similarity scores "
                                         "0-5)") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise DataError(path, where, f"{value!r} is not a finite number")
        return number
    if columns.kind == "tags":
        tags = value.split() if isinstance(value, str) else value
        if not isinstance(tags, list):
            raise DataError(path, where, f"expected tags (a list, or names joined by spaces), found "
                                         f"{type(value).__name__}")
        return [_class_value(code, columns.target, tag, path, where) for tag in tags]
    if columns.kind == "text":
        if not isinstance(value, str):
            raise DataError(path, where, f"expected the answer's text, found {type(value).__name__}")
        return value
    return _class_value(code, columns.target, value, path, where)


def _class_value(code: str, column: str, value: Any, path: Path, where: str) -> Any:
    """A class given by name, by HF ClassLabel id (an int, or digits in a text file) or by a Korean word, as
    the name; anything else is an error that lists what was expected."""
    names = hf.SCHEMAS[code].labels[column]
    if isinstance(value, str):
        word = value.strip()
        if word.lstrip("-").isdigit():
            value = int(word)
        else:
            words = COLUMNS[code].words
            word = words.get(word, word)
            if word in names:
                return word
            shown = ", ".join(names) if len(names) <= 13 else f"{', '.join(names[:5])}, ... ({len(names)} names)"
            also = f", the words {', '.join(words)}" if words else ""
            raise DataError(path, where, f"{value!r} is not a class of {code.upper()}: expected a name "
                                         f"({shown}){also} or a class id 0-{len(names) - 1}")
    if isinstance(value, bool) or not isinstance(value, int):
        raise DataError(path, where, f"expected a class name or id, found {type(value).__name__}")
    if not 0 <= value < len(names):
        raise DataError(path, where, f"class id {value} is outside the {len(names)} classes of HF klue {code} "
                                     f"(0-{len(names) - 1})")
    return names[value]


def _index(value: str, path: Path, where: str) -> int:
    if not value.strip().isdigit():
        raise DataError(path, where, f"index {value!r} is not a row number (0, 1, 2, ...)")
    return int(value)


def in_index_order(rows: list[dict], path: Path) -> list[dict]:
    """Rows with an `index` (a position in the gold file) put in that order, each position once; rows
    without one are left as they are."""
    if not rows or not any(INDEX_COLUMN in row for row in rows):
        return rows
    indices = [row.get(INDEX_COLUMN) for row in rows]
    if sorted(index for index in indices if isinstance(index, int)) != list(range(len(rows))):
        missing = sorted(set(range(len(rows))) - set(index for index in indices if isinstance(index, int)))
        problem = f"index {missing[0]} is missing" if missing else "a row has no index"
        raise DataError(path, None, f"the index column should hold 0 to {len(rows) - 1}, each once: {problem}")
    ordered = sorted(rows, key=lambda row: row[INDEX_COLUMN])
    return [{key: value for key, value in row.items() if key != INDEX_COLUMN} for row in ordered]


def _lines(text: str) -> list[str]:
    """A text file's lines, a final newline not making an empty last line (a blank line inside is a sentence
    with no tags, which the scorer refuses by its count)."""
    lines = text.lstrip("\ufeff").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]
