"""Prediction rows drawn as HTML: NER entities highlighted, DP trees as SVG arcs, RE relations, MRC answers in their
passage, labels with the features that pushed them, WoS states after each turn. Pages work offline."""
from __future__ import annotations

import html
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from baselines.data.fileio import atomic_output

# KLUE-NER's six types: a colour each, and what they are called in class.
ENTITY_TYPES = {"PS": ("#f6b2b2", "인물 person"), "LC": ("#a9d6f5", "장소 location"),
                "OG": ("#bfe6ad", "기관 organisation"), "DT": ("#f6dc96", "날짜 date"),
                "TI": ("#d9c1f5", "시간 time"), "QT": ("#f7c9e3", "수량 quantity")}
OTHER_TYPE_COLOUR = "#dddddd"  # a type outside KLUE's six (a user's own data)
SUBJECT_COLOUR, OBJECT_COLOUR = "#a9d6f5", "#f6dc96"

STYLE = """<style>
.kb{font-family:'Noto Sans KR','Malgun Gothic','Apple SD Gothic Neo',sans-serif;font-size:15px;line-height:1.9}
.kb .item{border-bottom:1px solid #e4e4e4;padding:8px 0}
.kb .guid{color:#888;font-size:12px}
.kb mark{border-radius:4px;padding:1px 3px;margin:0 1px}
.kb mark sub{font-size:10px;font-weight:600;margin-left:3px;vertical-align:baseline}
.kb .legend span{display:inline-block;border-radius:4px;padding:0 6px;margin:0 4px 4px 0;font-size:12px}
.kb .label{font-weight:700}
.kb .gold{color:#777;font-size:13px}
.kb .chip{display:inline-block;border-radius:4px;padding:0 5px;margin:2px 3px 0 0;font-size:12px;line-height:1.6}
.kb .bar{display:inline-block;height:10px;background:#6b9bd1;vertical-align:middle;margin-right:6px}
.kb table{border-collapse:collapse}.kb td{padding:2px 8px;vertical-align:top}
.kb svg text{font-family:inherit}
</style>"""


@dataclass(frozen=True)
class Shown:
    """Predictions drawn as HTML: a notebook shows it (_repr_html_), `page` makes it a page of its own."""
    task: str
    body: str

    def _repr_html_(self) -> str:
        return STYLE + self.body

    def page(self, title: str | None = None) -> str:
        """A whole HTML page: no script, no link, nothing fetched, so it opens offline."""
        title = html.escape(title or f"klue-baselines: {self.task} predictions")
        return (f"<!DOCTYPE html>\n<html lang=\"ko\"><head><meta charset=\"utf-8\"><title>{title}</title>{STYLE}"
                f"</head><body><h2 class=\"kb\">{title}</h2>{self.body}</body></html>\n")

    def save(self, path: Path) -> Path:
        """Write `page()` to `path`, whole or not at all."""
        with atomic_output(Path(path)) as handle:
            handle.write(self.page())
        return Path(path)


def show(task: str, rows: Sequence[dict], draw: Callable[[dict, dict], str], explanation: dict | None = None,
         limit: int | None = None, legend: Callable[[], str] | None = None) -> Shown:
    """Prediction rows as `predict` gives them (each with its 'input'), each drawn by `draw` (the task's drawer,
    TaskSpec.presentation.drawer), under the task's `legend` if it has one; with an `explanation` of the same inputs
    (api.explain with inputs), each label beside the features that pushed it. `limit`: at most this many rows."""
    rows = list(rows)[:limit] if limit is not None else list(rows)
    features = {example["guid"]: example.get("features", []) for example in (explanation or {}).get("examples", [])}
    items = [f'<div class="item"><div class="guid">{_text(row.get("guid", ""))}</div>{draw(row, features)}</div>'
             for row in rows]
    return Shown(task, f'<div class="kb">{legend() if legend else ""}{"".join(items)}</div>')


def draw_fields(row: dict, _features: dict) -> str:
    """Any task's row without a drawer of its own: its fields and values, as a table."""
    return "<table>" + "".join(f"<tr><td>{_text(key)}</td><td>{_text(value)}</td></tr>"
                               for key, value in row.items() if key != "guid") + "</table>"


def _text(value: Any) -> str:
    return html.escape(str(value), quote=True)


# NER ------------------------------------------------------------------------------------------------------------

def entity_legend() -> str:
    return '<div class="legend">' + "".join(f'<span style="background:{colour}">{kind} {_text(name)}</span>'
                                            for kind, (colour, name) in ENTITY_TYPES.items()) + "</div>"


def marked_text(text: str, spans: Sequence[tuple[int, int, str, str]]) -> str:
    """`text` with each (start, end, colour, label) span marked; spans that overlap an earlier one are left out."""
    out, at = [], 0
    for start, end, colour, label in sorted(spans):
        if start < at or not 0 <= start < end <= len(text):
            continue
        out.append(_text(text[at:start]))
        out.append(f'<mark style="background:{colour}">{_text(text[start:end])}<sub>{_text(label)}</sub></mark>')
        at = end
    out.append(_text(text[at:]))
    return "".join(out)


def draw_ner(row: dict, _features: dict) -> str:
    text = str(row.get("input", ""))
    spans = [(int(e["start"]), int(e["end"]), ENTITY_TYPES.get(e["type"], (OTHER_TYPE_COLOUR,))[0], e["type"])
             for e in row.get("entities", [])]
    return f"<div>{marked_text(text, spans)}</div>"


# DP -------------------------------------------------------------------------------------------------------------

def _width(text: str, size: float = 15) -> float:
    """About how wide `text` is drawn: Hangul and other wide characters a full em, the rest about half."""
    return sum(size if ord(char) > 0x2E7F else size * 0.6 for char in text)


def tree_svg(words: Sequence[str], heads: Sequence[int], deprels: Sequence[str]) -> str:
    """A dependency tree as SVG: the eojeols in a row, an arc from each head to its dependent (the arrow at the
    dependent) with its relation at the top, and ROOT's arrow straight down to the root's eojeol."""
    centres, x = [], 12.0
    for word, relation in zip(words, deprels):
        width = max(_width(word), _width(relation, 11), 36)
        centres.append(x + width / 2)
        x += width + 22
    total_width = x + 40  # room for the root's label beside the last eojeol
    levels = arc_levels(heads)
    rise = 24
    base = 32 + rise * max(levels.values(), default=1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_width:.0f}" height="{base + 34:.0f}" '
             f'role="img" aria-label="dependency tree">',
             '<defs><marker id="kb-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>']
    for index, (head, relation) in enumerate(zip(heads, deprels), start=1):
        to_x = centres[index - 1]
        if head == 0 or not 1 <= head <= len(words):
            parts.append(f'<line x1="{to_x:.1f}" y1="6" x2="{to_x:.1f}" y2="{base - 2:.1f}" stroke="#555" '
                         f'marker-end="url(#kb-arrow)"/>')
            parts.append(f'<text x="{to_x + 4:.1f}" y="14" font-size="11" fill="#a33">ROOT {_text(relation)}</text>')
            continue
        from_x = centres[head - 1]
        height = rise * levels[index]
        apex = base - height
        parts.append(f'<path d="M{from_x:.1f},{base - 2:.1f} C{from_x:.1f},{apex:.1f} {to_x:.1f},{apex:.1f} '
                     f'{to_x:.1f},{base - 2:.1f}" fill="none" stroke="#555" marker-end="url(#kb-arrow)"/>')
        label_y = base - 0.75 * height - 3
        label_width = _width(relation, 11) + 4
        middle = (from_x + to_x) / 2
        parts.append(f'<rect x="{middle - label_width / 2:.1f}" y="{label_y - 10:.1f}" width="{label_width:.1f}" '
                     f'height="13" fill="white"/>')
        parts.append(f'<text x="{middle:.1f}" y="{label_y:.1f}" font-size="11" text-anchor="middle" '
                     f'fill="#234">{_text(relation)}</text>')
    for word, centre in zip(words, centres):
        parts.append(f'<text x="{centre:.1f}" y="{base + 22:.1f}" font-size="15" text-anchor="middle">'
                     f'{_text(word)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def arc_levels(heads: Sequence[int]) -> dict[int, int]:
    """{dependent: how high its arc is drawn}: one above the highest arc that lies under it, so that arcs nest
    without crossing their labels and a long arc rises no higher than it must."""
    arcs = sorted(((min(head, index), max(head, index), index) for index, head in enumerate(heads, start=1)
                   if 1 <= head <= len(heads)), key=lambda arc: arc[1] - arc[0])
    levels: dict[int, int] = {}
    placed: list[tuple[int, int, int]] = []
    for left, right, dependent in arcs:
        level = 1 + max((levels[inner] for inner_left, inner_right, inner in placed
                         if left <= inner_left and inner_right <= right), default=0)
        levels[dependent] = level
        placed.append((left, right, dependent))
    return levels


def draw_dp(row: dict, _features: dict) -> str:
    heads, deprels = list(row.get("heads", [])), list(row.get("deprels", []))
    words = str(row.get("input", "")).split()
    if len(words) != len(heads):  # raw text split otherwise than the parser's eojeols: number them
        words = [f"w{index}" for index in range(1, len(heads) + 1)]
    return f'<div style="overflow-x:auto">{tree_svg(words, heads, deprels)}</div>'


# RE -------------------------------------------------------------------------------------------------------------

def draw_re(row: dict, features: dict) -> str:
    given = row.get("input") or {}
    sentence = str(given.get("sentence", ""))
    subject, obj = given.get("subject_entity") or {}, given.get("object_entity") or {}

    def span(entity: dict, colour: str, role: str) -> tuple[int, int, str, str]:
        start = int(entity.get("start_idx", -1))
        return start, int(entity.get("end_idx", -2)) + 1, colour, f"{role} {entity.get('type', '')}".strip()

    marked = marked_text(sentence, [span(subject, SUBJECT_COLOUR, "subject"), span(obj, OBJECT_COLOUR, "object")])
    probs = row.get("probs") or {}
    label = row.get("label", "")
    sure = f" ({probs[label]:.2f})" if isinstance(probs.get(label), (int, float)) else ""
    relation = (f'<div><mark style="background:{SUBJECT_COLOUR}">{_text(subject.get("word", ""))}</mark> '
                f'&rarr; <span class="label">{_text(label)}{sure}</span> &rarr; '
                f'<mark style="background:{OBJECT_COLOUR}">{_text(obj.get("word", ""))}</mark></div>')
    return (f"<div>{marked}</div>{relation}{_gold(row)}{_feature_chips(features.get(row.get('guid'), []))}"
            f"{_probability_bars(probs)}")


# MRC ------------------------------------------------------------------------------------------------------------

def draw_mrc(row: dict, _features: dict) -> str:
    given = row.get("input") or {}
    context, question = str(given.get("context", "")), str(given.get("question", ""))
    answer = str(row.get("answer", ""))
    start, end = row.get("start"), row.get("end")
    if not (isinstance(start, int) and isinstance(end, int) and answer and context[start:end] == answer):
        start = context.find(answer) if answer else -1
        end = start + len(answer)
    shown_answer = (f'<span class="label">{_text(answer)}</span>' if answer
                    else '<span class="label">답 없음 (no answer)</span>')
    passage = marked_text(context, [(start, end, ENTITY_TYPES["DT"][0], "answer")] if start >= 0 else [])
    gold = row.get("gold")
    if isinstance(gold, list):  # the answers a reader may give; none for an unanswerable question
        listed = " / ".join(map(str, gold)) if gold else "답 없음 (no answer)"
        gold_text = f' <span class="gold">(gold: {_text(listed)})</span>'
    else:
        gold_text = ""
    return (f'<div><b>Q.</b> {_text(question)}</div><div><b>A.</b> {shown_answer}{gold_text}</div>'
            f'<div style="font-size:14px">{passage}</div>')


# YNAT, NLI, STS -------------------------------------------------------------------------------------------------

def draw_labelled(row: dict, features: dict) -> str:
    given = row.get("input")
    if isinstance(given, (list, tuple)):
        shown = "".join(f"<div>{_text(part)}</div>" for part in given)
    else:
        shown = f"<div>{_text(given)}</div>"
    if "score" in row:
        prediction = f'<span class="label">{float(row["score"]):.2f}</span> / 5'
    else:
        prediction = f'<span class="label">{_text(row.get("label", ""))}</span>'
    return (f"{shown}<div>&rarr; {prediction}{_gold(row)}</div>{_feature_chips(features.get(row.get('guid'), []))}"
            f"{_probability_bars(row.get('probs') or {})}")


def _gold(row: dict) -> str:
    if "gold" not in row or isinstance(row["gold"], (list, dict)):
        return ""
    gold = row["gold"]
    return f' <span class="gold">(gold: {_text(f"{gold:.2f}" if isinstance(gold, float) else gold)})</span>'


def _feature_chips(features: Sequence[dict]) -> str:
    """The features that pushed a prediction, green towards it and red away, deeper for a larger weight."""
    if not features:
        return ""
    largest = max(abs(float(item["weight"])) for item in features) or 1.0
    chips = []
    for item in features:
        weight = float(item["weight"])
        alpha = 0.15 + 0.6 * abs(weight) / largest
        colour = f"rgba(46,139,87,{alpha:.2f})" if weight >= 0 else f"rgba(200,60,60,{alpha:.2f})"
        chips.append(f'<span class="chip" style="background:{colour}">{_text(item["feature"])} '
                     f'{weight:+.2f}</span>')
    return f"<div>{''.join(chips)}</div>"


def _probability_bars(probs: dict, top: int = 3) -> str:
    """The `top` most probable labels with a bar each."""
    ranked = sorted(((float(p), str(label)) for label, p in probs.items() if isinstance(p, (int, float))
                     and math.isfinite(p)), reverse=True)[:top]
    if not ranked:
        return ""
    rows = "".join(f'<tr><td>{_text(label)}</td><td><span class="bar" style="width:{max(1, 120 * p):.0f}px">'
                   f'</span>{p:.2f}</td></tr>' for p, label in ranked)
    return f'<table style="font-size:12px">{rows}</table>'


# WoS ------------------------------------------------------------------------------------------------------------

def draw_wos(row: dict, _features: dict) -> str:
    turns = (row.get("input") or {}).get("dialogue", []) if isinstance(row.get("input"), dict) else []
    states = list(row.get("states", []))
    lines, user_turn = [], 0
    for turn in turns:
        role = str(turn.get("role", ""))
        cells = f"<td>{'🧑' if role == 'user' else '🤖'} {_text(role)}</td><td>{_text(turn.get('text', ''))}</td>"
        if role == "user":
            state = states[user_turn] if user_turn < len(states) else []
            user_turn += 1
            chips = "".join(f'<span class="chip" style="background:#e3eefb">{_text(slot)}</span>' for slot in state)
            cells += f"<td>{chips or '<span class=gold>(empty)</span>'}</td>"
        else:
            cells += "<td></td>"
        lines.append(f"<tr>{cells}</tr>")
    return f"<table>{''.join(lines)}</table>"

