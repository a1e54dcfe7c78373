"""Test helper: the measured figures that the README and docs/ quote in their prose, each tied to the record and key
of results/ that it claims, in tests/quoted_figures.json; the tables between generated marks are checked apart.

    python tests/quoted_figures.py          # ties every figure not yet tied, by its best candidate, and says which

A page's ties are in the order its figures stand. A tie is [figure, file, path, scale]: the file under results/
(or a list of files, whose values are averaged: a mean over seeds), the JSON path to the value as a list of keys
(or a list of paths, one per file), and the scale (1, or 100 for a share quoted as a percentage). A figure with
no record is [figure, null, why, null], why starting 'not a measurement: ' (a version, a setting); a measurement
that results/ does not keep has no place in the docs ('not tied: ' marks it here until it is recorded or reworded,
and test_docs fails on it). test_docs holds every
page's figures, in order, to its ties, and every tie to the value it names: a figure moved by 0.01, or a value
rerun to another one, fails. New prose figures are tied
by running this file and reading its choices (it prints each one with its sentence): where several records hold
the same value, it prefers the task and the kind of record (a peer, a learning curve, a search) that the sentence
names, then keys that it names; a wrong choice is corrected in the JSON by hand.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LEDGER = Path(__file__).with_name("quoted_figures.json")
GENERATED = re.compile(r"<!-- ([\w-]+):start -->.*?<!-- \1:end -->", re.S)
FIGURE = re.compile(r"(?<![\w.+\-−])\d+\.\d\d(?!\d|\.\d)")  # a figure may end a sentence
TASKS = ("ynat", "sts", "nli", "ner", "re", "dp", "mrc", "wos")
# Words by which a sentence says that its figure is a peer's, a learning curve's or a search's.
KIND_WORDS = {"peers.json": ("fasttext", "udpipe", "cosine", "plain crf", "peer"),
              "learning-curve/": ("quarter", "half", "share", "learning", "doubling", "more data", "training data"),
              "tuning/": ("cv", "fold", "folds", "search", "grid", "trial", "tune", "seeds", "c=")}


def pages() -> dict[str, str]:
    """The README and every page of docs/, by name, as text."""
    return {"README.md": (REPO / "README.md").read_text(encoding="utf-8"),
            **{f"docs/{path.relative_to(REPO / 'docs').as_posix()}": path.read_text(encoding="utf-8")
               for path in sorted((REPO / "docs").rglob("*.md"))}}


def prose(text: str) -> str:
    """A page without its code and its generated tables (those are checked against their generator)."""
    text = GENERATED.sub("", text)
    text = re.sub(r"^[ \t]*```.*?^[ \t]*```", "", text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.sub(r"Python \d+\.\d+", "", text)


def quoted(text: str) -> list[tuple[str, str]]:
    """(figure, the words around it, after the heading of its section) of each measured figure that a page's
    prose quotes: numbers with two decimals, not in code, not a Python version, not a signed difference."""
    body = prose(text)
    found = []
    for match in FIGURE.finditer(body):
        headings = re.findall(r"^#+ (.*)$", body[:match.start()], flags=re.M)
        heading = headings[-1] if headings else ""
        found.append((match.group(), f"{heading}\n" + body[max(0, match.start() - 160):match.end() + 60]))
    return found


def value_of(tie: list) -> str | None:
    """The value that a tie names, shown as its figure is (two decimals); None when it names none."""
    _figure, files, path, scale = tie
    if files is None:
        return None
    files = [files] if isinstance(files, str) else files
    paths = path if path and isinstance(path[0], list) else [path] * len(files)  # a path per file, or one for all
    values = []
    for file, keys in zip(files, paths, strict=True):
        value = json.loads((REPO / "results" / file).read_text(encoding="utf-8"))
        for key in keys:
            value = value[key]
        values.append(value)
    if not all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in values):
        return None
    return f"{sum(values) / len(values) * scale:.2f}"


def candidates(figure: str) -> list[tuple[str, list, int]]:
    """Every (file, path, scale) of results/ whose value is shown as `figure`."""
    found = []

    def walk(value, path, file):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, path + [key], file)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, path + [index], file)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            found.extend((file, path, scale) for scale in (1, 100) if f"{value * scale:.2f}" == figure)
    for path in sorted((REPO / "results").rglob("*.json")):
        walk(json.loads(path.read_text(encoding="utf-8")), [], path.relative_to(REPO / "results").as_posix())
    return found


def rank(page: str, context: str, candidate: tuple[str, list, int]) -> tuple:
    """Higher is likelier what the sentence means (see the module's docstring)."""
    file, path, scale = candidate
    heading, text = context.lower().split("\n", 1)
    before = text[:160][-90:]
    file_task = next((code for code in TASKS if Path(file).name.startswith(code)), None)
    if file == "peers.json":
        file_task = next((key for key in path if key in TASKS), None)
    mentions = {match.start(): code for code in TASKS for match in re.finditer(rf"\b{code}\b", before)}
    nearest = mentions[max(mentions)] if mentions else None  # the task named last before the figure
    task_score = (2 if file_task and file_task == nearest else 0) + (1 if file_task == Path(page).stem else 0)
    kind = next((prefix for prefix in KIND_WORDS if file.startswith(prefix)), None)
    kind_score = 0 if kind is None else (1 if any(word in f"{heading} {text}" for word in KIND_WORDS[kind]) else -2)
    words = set(re.findall(r"[\w/=.-]+", text))
    named = sum(1 for key in path if isinstance(key, str) and (key.lower() in words or any(
        part in words for part in re.split(r"[ _/=]", key.lower()) if len(part) > 3)))
    return (task_score + kind_score, named, "metrics" in path or "all_means" in path, scale == 1, -len(path), file)


def tie_all() -> dict:
    """The ledger, with every figure that it lacks tied by its best-ranked candidate (the ties kept otherwise)."""
    ledger = json.loads(LEDGER.read_text(encoding="utf-8")) if LEDGER.exists() else {}
    for page, text in pages().items():
        kept, ties = {tuple(tie[:1]) + (i,): tie for i, tie in enumerate(ledger.get(page, []))}, []
        for position, (figure, context) in enumerate(quoted(text)):
            tie = kept.get((figure, position))
            if tie is not None and (tie[1] is None or value_of(tie) == figure):
                ties.append(tie)
                continue
            found = sorted(candidates(figure), key=lambda c: rank(page, context, c), reverse=True)
            words = " ".join(context.split())
            if not found:
                print(f"{page}: {figure} is in no file of results/: tie it by hand ({words[-100:]!r})")
                ties.append([figure, None, "not tied: in no file of results/", None])
                continue
            ties.append([figure, *found[0]])
            print(f"{page}: {figure} <- {found[0][0]} {found[0][1]} x{found[0][2]}   ({words[-110:]!r})")
        if ties:
            ledger[page] = ties
    return ledger


if __name__ == "__main__":
    tied = tie_all()
    LEDGER.write_text("{\n" + ",\n".join(
        f" {json.dumps(page, ensure_ascii=False)}: [\n" + ",\n".join(
            f"  {json.dumps(tie, ensure_ascii=False)}" for tie in ties) + "\n ]" for page, ties in tied.items())
        + "\n}\n", encoding="utf-8")
    sys.exit(0)
