"""DP's records and files: the official TSV, CoNLL-U, raw text and Hugging Face rows, read and written;
the sentences with Kiwi's POS where the data has none."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from baselines.data import hf

from baselines.metrics import scoring
from baselines.data.fileio import DataError, atomic_output, looks_like_jsonl, read_text, read_tsv_blocks, require
from baselines.models.estimators import PLAIN_INPUT, plain_text, records_from
from baselines.taskspec import copy_marker, jsonl_records
from features.analysis import analyze
from features.morphemes import eojeol_spans
from features.normalize import nfc_fields


LABELS = scoring.DP_LABELS
COLUMNS = "INDEX WORD_FORM LEMMA POS HEAD DEPREL"


@dataclass
class DpWord:
    form: str
    lemma: str | None = None  # space-separated lemmas of the eojeol's morphemes, as in the data
    pos: str | None = None  # '+'-joined Sejong tags, as in the data
    head: int | None = None  # 0 = root, else the 1-based index of the head eojeol
    deprel: str | None = None


@dataclass
class DpSentence:
    guid: str
    text: str
    words: list[DpWord]


def ascii_number(text: str) -> bool:
    """Digits 0-9 only: str.isdigit() also takes '²' and other digits that int() refuses."""
    return text.isascii() and text.isdigit()


def _word(columns: list[str], position: int, size: int, path: Path, where: str) -> DpWord:
    if len(columns) != 6:
        raise DataError(path, where, f"expected 6 columns {COLUMNS}, got {len(columns)}")
    index, form, lemma, pos, head, deprel = columns
    if index != str(position):
        raise DataError(path, where, f"INDEX should be {position}, got {index!r}")
    if not ascii_number(head) or not 0 <= int(head) <= size:
        raise DataError(path, where, f"HEAD {head!r} is not 0 (root) or an eojeol index 1-{size}")
    if deprel not in LABELS:
        raise DataError(path, where, f"DEPREL {deprel!r} is not a KLUE-DP relation")
    return DpWord(form, lemma, pos, int(head), deprel)


def load(path: Path) -> list[DpSentence]:
    """The official DP TSV: '## guid<TAB>sentence', then one row per eojeol with 6 columns."""
    records = []
    for block in read_tsv_blocks(path):
        size = len(block.rows)
        words = [_word(columns, position, size, path, f"line {number} (guid {block.guid})")
                 for position, (number, columns) in enumerate(block.rows, start=1)]
        problem = tree_problem([word.head for word in words])
        if problem:
            raise DataError(path, f"line {block.line} (guid {block.guid})", f"the heads do not form a tree: {problem}")
        records.append(DpSentence(block.guid, block.text, words))
    return records


def from_hf(rows: list[dict], path: Path) -> list[DpSentence]:
    """Rows of the Hugging Face klue 'dp' schema: one list per official column (index, word_form, lemma, pos,
    head, deprel); guids by position (see baselines.data.hf)."""
    records = []
    for number, (row, guid) in enumerate(zip(rows, hf.positional_guids(hf.SCHEMAS["dp"], len(rows))), start=1):
        where = f"row {number}"
        columns = [require(row, name, list, path, where) for name in ("index", "word_form", "lemma", "pos", "head",
                                                                      "deprel")]
        if len({len(column) for column in columns}) != 1:
            raise DataError(path, where, "index, word_form, lemma, pos, head and deprel differ in length")
        size = len(columns[0])
        words = [_word([str(value) for value in word], position, size, path, f"{where}, word {position}")
                 for position, word in enumerate(zip(*columns), start=1)]
        problem = tree_problem([word.head for word in words])
        if problem:
            raise DataError(path, where, f"the heads do not form a tree: {problem}")
        records.append(DpSentence(guid, require(row, "sentence", str, path, where), words))
    return records


def tree_problem(heads: Sequence[int]) -> str | None:
    """What keeps 1-based heads (0 = root) from being a dependency tree: a self-head, no root or more than
    one, or a cycle;
    None when they form one. Training and scoring assume trees, and a decoder that always outputs one could
    never match a gold cycle."""
    for index, head in enumerate(heads, start=1):
        if head == index:
            return f"eojeol {index} is its own head"
    if 0 not in heads:
        return "no eojeol is attached to the root (HEAD 0)"
    roots = [index for index, head in enumerate(heads, start=1) if head == 0]
    if len(roots) > 1:  # KLUE-DP has one root per sentence (every sentence of the official files does)
        return f"eojeols {', '.join(map(str, roots))} are all attached to the root (HEAD 0): a tree has one"
    for start in range(1, len(heads) + 1):
        seen, node = set(), start
        while node != 0:
            if node in seen:
                cycle, member = [node], heads[node - 1]
                while member != node:
                    cycle.append(member)
                    member = heads[member - 1]
                return f"eojeols {', '.join(map(str, sorted(cycle)))} form a cycle"
            seen.add(node)
            node = heads[node - 1]
    return None


def load_input(path: Path) -> list[DpSentence]:
    """Official TSV, CoNLL-U, or JSONL with a 'text' per line (eojeols are its whitespace-separated words)."""
    if not looks_like_jsonl(path):
        return load_tsv_or_conllu(path)
    return jsonl_records(path, lambda row, guid, where: raw_sentence(require(row, "text", str, path, where), guid,
                                                                     path, where))


def raw_sentence(text: str, guid: str, path: Path, where: str) -> DpSentence:
    """A sentence of raw text, its eojeols the whitespace-separated words (nothing known of them yet)."""
    if not text.split():
        raise DataError(path, where, "empty 'text'")
    return DpSentence(guid, text, [DpWord(form) for form in text.split()])


def targets(records: Sequence[DpSentence]) -> list[tuple[list[int], list[str]]]:
    return [([w.head for w in r.words], [w.deprel for w in r.words]) for r in records]


def in_nfc(records: Sequence[DpSentence]) -> list[DpSentence]:
    """The sentences with their text, forms and lemmas in NFC (see features.normalize); the eojeols stay
    as many."""
    return [replace(nfc_fields(record, "text"), words=[nfc_fields(word, "form", "lemma") for word in record.words])
            for record in records]


def as_records(X: Sequence) -> list[DpSentence]:
    """DpSentence records, or plain sentences (str) whose eojeols are their whitespace-separated words."""
    return records_from(X, DpSentence, lambda item, guid, where: raw_sentence(plain_text(item, where), guid,
                                                                             PLAIN_INPUT, where))


def with_trees(records: Sequence[DpSentence], y: Sequence[tuple[Sequence[int], Sequence[str]]]) -> list[DpSentence]:
    """The sentences with the heads and relations of y (what a parser learns from), checked for size."""
    trees = []
    for record, (heads, deprels) in zip(records, y):
        if len(heads) != len(record.words) or len(deprels) != len(record.words):
            raise ValueError(f"{record.guid}: y has {len(heads)} heads and {len(deprels)} relations for "
                             f"{len(record.words)} eojeols")
        words = [replace(word, head=int(head), deprel=str(deprel))
                 for word, head, deprel in zip(record.words, heads, deprels)]
        trees.append(replace(record, words=words))
    return trees


def plain_inputs(records: Sequence[DpSentence]) -> list[str]:
    """The sentences (their eojeols are the whitespace-separated words; the data's POS is not carried)."""
    return [" ".join(word.form for word in record.words) for record in records]


def with_kiwi_pos(records: Sequence[DpSentence]) -> list[DpSentence]:
    """Copies of the sentences whose eojeols carry Kiwi's lemmas and POS (Sejong tags, '+'-joined, as in
    the data) instead of the annotated ones; heads and relations are kept."""
    analyses = analyze(r.text for r in records)
    converted = []
    for sentence, analysis in zip(records, analyses):
        spans = eojeol_spans(sentence.text)
        if len(spans) != len(sentence.words):  # the header text does not split like the rows: use the forms
            text = " ".join(w.form for w in sentence.words)
            analysis, spans = analyze([text])[0], eojeol_spans(text)
        lemmas: list[list[str]] = [[] for _ in spans]
        tags: list[list[str]] = [[] for _ in spans]
        for form, tag, eojeol in zip(analysis.forms, analysis.sejong_tags, analysis.eojeols):
            lemmas[eojeol].append(form)
            tags[eojeol].append(tag)
        words = [DpWord(w.form, " ".join(lemma) or w.form, "+".join(tag) or "NA", w.head, w.deprel)
                 for w, lemma, tag in zip(sentence.words, lemmas, tags)]
        converted.append(DpSentence(sentence.guid, sentence.text, words))
    return converted


CONLLU_COLUMNS = "ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC"


def write_conllu(path: Path, records: Sequence[DpSentence], predictions: Sequence[dict]) -> None:
    """Predictions as 10-column CoNLL-U: '# sent_id' and '# text' comments, then per eojeol its form, lemma
    (KLUE's space-separated morpheme lemmas), UPOS '_' (KLUE has no UD tags), the Sejong tags in XPOS, the
    integer HEAD and the KLUE relation in DEPREL."""
    shown = records if all(w.pos for r in records for w in r.words) else with_kiwi_pos(records)
    with atomic_output(path) as handle:
        for sentence, prediction in zip(shown, predictions):
            handle.write(f"# sent_id = {sentence.guid}\n# text = {sentence.text}\n")
            for index, (word, head, deprel) in enumerate(zip(sentence.words, prediction["heads"],
                                                             prediction["deprels"]), start=1):
                columns = [str(index), word.form, word.lemma or "_", "_", word.pos or "_", "_", str(head), deprel,
                           "_", "_"]
                handle.write("\t".join(columns) + "\n")
            handle.write("\n")


def looks_like_conllu(path: Path) -> bool:
    """True when the first token line has CoNLL-U's 10 tab-separated columns (the official TSV has 6)."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as handle:
            for line in handle:
                if line.strip() and not line.startswith("#"):
                    return len(line.rstrip("\r\n").split("\t")) == 10
    except OSError:
        return False
    return False


def _given(value: str) -> str | None:
    """A CoNLL-U field, None where it is '_' (not given)."""
    return None if value == "_" else value


def load_conllu(path: Path) -> list[DpSentence]:
    """Sentences of a CoNLL-U file: '# sent_id' as the guid (else conllu-N), '# text' as the text (else the
    forms joined by spaces), XPOS as the Sejong tags. Multiword-token ranges (1-2) and empty nodes (1.1) are
    skipped. HEAD and DEPREL are read when given ('_' everywhere: an unparsed sentence)."""
    records = []
    for first_line, comment_lines, token_rows in _conllu_blocks(path):
        comments = {key.strip(): value for key, _sep, value in (line.lstrip("# ").partition(" = ")
                                                                  for line in comment_lines)}
        rows = [(number, columns) for number, columns in token_rows if ascii_number(columns[0])]
        guid = comments.get("sent_id", f"conllu-{len(records)}").strip()
        where = f"line {first_line} (sent_id {guid})"
        for number, columns in rows:
            if len(columns) != 10:
                raise DataError(path, f"line {number} (sent_id {guid})", f"expected the 10 columns {CONLLU_COLUMNS}, "
                                                                         f"got {len(columns)}")
        unparsed = all(columns[6] == "_" for _number, columns in rows)
        words = [DpWord(columns[1], _given(columns[2]), _given(columns[4]))
                 if unparsed else _word([columns[0], columns[1], columns[2], columns[4], columns[6], columns[7]],
                                        position, len(rows), path, f"line {number} (sent_id {guid})")
                 for position, (number, columns) in enumerate(rows, start=1)]
        if not unparsed:
            problem = tree_problem([word.head for word in words])
            if problem:
                raise DataError(path, where, f"the heads do not form a tree: {problem}")
        records.append(DpSentence(guid, comments.get("text", " ".join(w.form for w in words)).strip(), words))
    return records


def _conllu_blocks(path: Path) -> list[tuple[int, list[str], list[tuple[int, list[str]]]]]:
    """(first line number, comment lines, numbered token rows) per sentence; blank lines end sentences."""
    blocks, comments, rows, first = [], [], [], 1
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            if comments or rows:
                blocks.append((first, comments, rows))
            comments, rows, first = [], [], number + 1
        elif line.startswith("#") and not rows:
            comments.append(line)
        else:
            rows.append((number, line.split("\t")))
    if comments or rows:
        blocks.append((first, comments, rows))
    return blocks


def load_tsv_or_conllu(path: Path) -> list[DpSentence]:
    """The official DP TSV, or CoNLL-U (told apart by the number of columns)."""
    return load_conllu(path) if looks_like_conllu(path) else load(path)


def write_tsv(path: Path, records: Sequence[DpSentence], predictions: Sequence[dict]) -> None:
    """Predictions in the official DP TSV layout: '## guid<TAB>text', then INDEX WORD_FORM LEMMA POS
    HEAD DEPREL per eojeol (lemma and POS as given in the input, or Kiwi's for raw text)."""
    shown = records if all(w.pos for r in records for w in r.words) else with_kiwi_pos(records)
    with atomic_output(path) as handle:
        handle.write(f"## 칼럼명 : {COLUMNS.replace(' ', chr(9))}\n")
        for sentence, prediction in zip(shown, predictions):
            handle.write(f"## {sentence.guid}\t{sentence.text}\n")
            for index, (word, head, deprel) in enumerate(zip(sentence.words, prediction["heads"],
                                                             prediction["deprels"]), start=1):
                handle.write(f"{index}\t{word.form}\t{word.lemma}\t{word.pos}\t{head}\t{deprel}\n")
            handle.write("\n")


def predictions_from_file(path: Path) -> list[dict]:
    """Predictions given as an official DP TSV file or as CoNLL-U (as `predict dp --format tsv` or
    `--format conllu` write them)."""
    return [{"guid": r.guid, "heads": [w.head for w in r.words], "deprels": [w.deprel for w in r.words]}
            for r in load_tsv_or_conllu(path)]


def distinct_copy(record: DpSentence, copy: int) -> DpSentence:
    """Copy `copy` of a sentence for the scale benchmark: one more eojeol in front, copy_marker(copy),
    attached to the root as an adjunct."""
    root = next(index for index, word in enumerate(record.words, start=1) if word.head == 0)
    marker = copy_marker(copy)
    words = [DpWord(marker, f"사례 {copy}", "NNG+SN", root + 1, "NP_AJT")]
    words += [replace(word, head=word.head + 1 if word.head else 0) for word in record.words]
    return replace(record, guid=f"{record.guid}-copy{copy}", text=f"{marker} {record.text}", words=words)
