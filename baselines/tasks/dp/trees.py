"""Tree decoders for dependency parsing: Chu-Liu-Edmonds (any tree), Eisner (projective), and second- and
third-order head-final projective, each with exactly one root child."""
from __future__ import annotations

import functools

import numpy as np


def _find_cycle(heads: np.ndarray) -> list[int] | None:
    """A cycle of the head graph (node 0 is the root and has no head), or None."""
    state = np.zeros(len(heads), dtype=np.int8)  # 0 unseen, 1 on the current path, 2 finished
    for start in range(1, len(heads)):
        path, node = [], start
        while node > 0 and state[node] == 0:
            state[node] = 1
            path.append(node)
            node = heads[node]
        if node > 0 and state[node] == 1:
            return path[path.index(node):]
        for visited in path:
            state[visited] = 2
    return None


def _arborescence(scores: np.ndarray) -> np.ndarray:
    """Heads of the best arborescence rooted at 0 for scores[head, dependent] (recursive contraction)."""
    size = scores.shape[0]
    heads = scores.argmax(axis=0)
    heads[0] = -1
    cycle = _find_cycle(heads)
    if cycle is None:
        return heads
    in_cycle = np.zeros(size, dtype=bool)
    in_cycle[cycle] = True
    rest = np.flatnonzero(~in_cycle)  # includes the root, as rest[0]
    cycle = np.asarray(cycle)
    contracted = len(rest)
    reduced = np.full((contracted + 1, contracted + 1), -np.inf)
    reduced[:contracted, :contracted] = scores[np.ix_(rest, rest)]
    # Entering the cycle at v replaces v's cycle arc: its gain is relative to that arc.
    entering = scores[np.ix_(rest, cycle)] - scores[heads[cycle], cycle][None, :]
    best_entry = entering.argmax(axis=1)
    reduced[:contracted, contracted] = entering.max(axis=1)
    leaving = scores[np.ix_(cycle, rest)]
    best_exit = leaving.argmax(axis=0)
    reduced[contracted, :contracted] = leaving.max(axis=0)
    reduced[:, 0] = -np.inf
    np.fill_diagonal(reduced, -np.inf)
    sub_heads = _arborescence(reduced)
    result = heads.copy()
    for index in range(1, contracted):
        head = sub_heads[index]
        result[rest[index]] = cycle[best_exit[index]] if head == contracted else rest[head]
    entry_from = sub_heads[contracted]
    result[cycle[best_entry[entry_from]]] = rest[entry_from]
    return result


def max_spanning_tree(scores: np.ndarray, single_root: bool = True) -> np.ndarray:
    """Heads (0 = root, entry 0 unused and set to 0) of the highest-scoring dependency tree, where
    scores[h, d] scores head h for dependent d over nodes 0 (root) .. n. Non-projective trees allowed.
    With single_root, exactly one word depends on the root."""
    scores = np.array(scores, dtype=float)
    size = scores.shape[0]
    if size <= 1:
        return np.zeros(size, dtype=int)
    np.fill_diagonal(scores, -np.inf)
    scores[:, 0] = -np.inf
    if single_root:
        # Every extra root child then costs more than any tree can gain, so the best tree has exactly one,
        # and among those it is the best: one decoding instead of one per candidate root child.
        finite = scores[np.isfinite(scores)]
        scores[0, 1:] -= (finite.max() - finite.min()) * size + 1.0
    heads = _arborescence(scores)
    heads[0] = 0
    return heads


def projective_tree(scores: np.ndarray) -> np.ndarray:
    """Heads (0 = root, entry 0 unused and set to 0) of the highest-scoring projective dependency tree with
    exactly one root child (Eisner's O(n^3) dynamic programme), for scores[h, d] as in max_spanning_tree.
    Arcs scored -inf are never chosen while a tree without them exists.

    Charts over the words 1..n, indexed [start, end]: complete spans headed at their left end (right) or
    right end (left), and incomplete spans whose ends are joined by an arc. The root then takes one word r
    whose left-headed span covers 1..r and right-headed span covers r..n. Each span length is computed for
    all starts at once with numpy."""
    scores = np.asarray(scores, dtype=float)
    size = scores.shape[0] - 1
    heads = np.zeros(size + 1, dtype=int)
    if size < 1:
        return heads
    words = scores[1:, 1:]  # words[i, j]: word i + 1 heads word j + 1
    complete_left = np.full((size, size), -np.inf)  # [s, t] headed at t
    complete_right = np.full((size, size), -np.inf)  # [s, t] headed at s
    incomplete_left = np.full((size, size), -np.inf)  # arc t -> s
    incomplete_right = np.full((size, size), -np.inf)  # arc s -> t
    np.fill_diagonal(complete_left, 0.0)
    np.fill_diagonal(complete_right, 0.0)
    split_incomplete = np.zeros((size, size), dtype=int)
    split_left = np.zeros((size, size), dtype=int)
    split_right = np.zeros((size, size), dtype=int)
    for length in range(1, size):
        starts = np.arange(size - length)
        ends = starts + length
        offsets = np.arange(length)
        # Incomplete: a right-headed span s..r and a left-headed span r+1..t, joined by an arc.
        middle = starts[:, None] + offsets[None, :]
        joined = complete_right[starts[:, None], middle] + complete_left[middle + 1, ends[:, None]]
        best = joined.argmax(axis=1)
        best_joined = joined[starts, best]
        split_incomplete[starts, ends] = middle[starts, best]
        incomplete_left[starts, ends] = best_joined + words[ends, starts]
        incomplete_right[starts, ends] = best_joined + words[starts, ends]
        # Complete, headed at t: a left-headed s..r, then the incomplete r..t (r < t).
        joined = complete_left[starts[:, None], middle] + incomplete_left[middle, ends[:, None]]
        best = joined.argmax(axis=1)
        complete_left[starts, ends] = joined[starts, best]
        split_left[starts, ends] = middle[starts, best]
        # Complete, headed at s: the incomplete s..r, then a right-headed r..t (r > s).
        middle = middle + 1
        joined = incomplete_right[starts[:, None], middle] + complete_right[middle, ends[:, None]]
        best = joined.argmax(axis=1)
        complete_right[starts, ends] = joined[starts, best]
        split_right[starts, ends] = middle[starts, best]
    rooted = complete_left[0, :] + complete_right[:, size - 1] + scores[0, 1:]
    root_child = int(rooted.argmax())
    heads[root_child + 1] = 0
    stack = [("complete_left", 0, root_child), ("complete_right", root_child, size - 1)]
    while stack:
        kind, start, end = stack.pop()
        if start == end:
            continue
        if kind == "complete_left":
            middle = split_left[start, end]
            stack += [("complete_left", start, middle), ("incomplete_left", middle, end)]
        elif kind == "complete_right":
            middle = split_right[start, end]
            stack += [("incomplete_right", start, middle), ("complete_right", middle, end)]
        else:
            head, dependent = (end, start) if kind == "incomplete_left" else (start, end)
            heads[dependent + 1] = head + 1
            middle = split_incomplete[start, end]
            stack += [("complete_right", start, middle), ("complete_left", middle + 1, end)]
    return heads


def head_final_sibling_tree(scores: np.ndarray, siblings: np.ndarray) -> np.ndarray:
    """Heads (0 = root, entry 0 unused and set to 0) of the highest-scoring head-final projective tree under a
    second-order model: arc scores scores[h, d] as in max_spanning_tree, plus siblings[h, a, b] for each pair
    of neighbouring dependents a < b of h (a = 0: b is h's leftmost dependent). Every head is to the right of
    its dependents, so the last word is the root's only child. O(n^3), as Eisner's second-order algorithm.

    In such a tree a head's nearest dependent is always the word before it, and the dependents are added
    outwards, each with the one inside it as its sibling. Charts over words 1..n: complete[s, t], the
    subtree of t covering s..t; outer[r, t], the arc t -> r with the part of t's subtree inside r (r's own
    subtree excluded). outer[r, t] = arc + max over the next dependent inside, r' (complete[r + 1, r'] +
    outer[r', t] + siblings[t, r, r']), or r = t - 1 and nothing inside; complete[s, t] = max over t's
    leftmost dependent r (complete[s, r] + outer[r, t] + siblings[t, 0, r])."""
    scores = np.asarray(scores, dtype=float)
    siblings = np.asarray(siblings, dtype=float)
    size = scores.shape[0] - 1
    heads = np.zeros(size + 1, dtype=int)
    if size < 1:
        return heads
    complete = np.full((size + 1, size + 1), -np.inf)
    complete[np.arange(size + 1), np.arange(size + 1)] = 0.0
    outer = np.full((size + 1, size + 1), -np.inf)
    inner_of = np.full((size + 1, size + 1), -1, dtype=int)  # outer's next dependent inside; -1: none
    leftmost = np.zeros((size + 1, size + 1), dtype=int)  # complete's leftmost dependent
    # Flat views: each step reads its parts through index arrays made once per sentence length.
    flat_complete, flat_outer, flat_scores = complete.reshape(-1), outer.reshape(-1), scores.reshape(-1)
    flat_siblings, flat_inner_of, flat_leftmost = siblings.reshape(-1), inner_of.reshape(-1), leftmost.reshape(-1)
    # Span by span length, all starts at once: a span's parts are all shorter, or (complete's outer part)
    # of the same length and computed just before it.
    for rows, starts, spans, arcs, inner_parts, inside, left_parts in _chart_indices(size):
        if inner_parts is None:
            flat_outer[spans] = flat_scores[arcs]
        else:
            complete_part, outer_part, sibling_part = inner_parts
            joined = flat_complete[complete_part] + flat_outer[outer_part]
            joined += flat_siblings[sibling_part]
            best = joined.argmax(axis=1)
            flat_outer[spans] = joined[rows, best] + flat_scores[arcs]
            flat_inner_of[spans] = inside[rows, best]
        complete_part, outer_part, sibling_part = left_parts
        # Summed in this order, the decoder's first form's: the last bits, and so the ties, stay as recorded.
        joined = flat_complete[complete_part] + (flat_outer[outer_part] + flat_siblings[sibling_part])
        best = joined.argmax(axis=1)
        flat_complete[spans] = joined[rows, best]
        flat_leftmost[spans] = starts + best
    stack = [("complete", 1, size)]
    while stack:
        kind, start, end = stack.pop()
        if kind == "complete":
            if start == end:
                continue
            dependent = leftmost[start, end]
        else:
            dependent = inner_of[start, end]
            if dependent < 0:
                continue
        heads[dependent] = end
        stack += [("complete", start + 1 if kind == "outer" else start, dependent), ("outer", dependent, end)]
    return heads


def _chart_indices(size: int) -> tuple:
    """_span_indices(size), kept for the sentence lengths that KLUE-DP has (at most 35 eojeols) and a little
    beyond (6 MB for every length up to 40); a longer sentence's are made for it alone, as they grow as size^3
    (2.4 MB at 64)."""
    return _cached_span_indices(size) if size <= 40 else _span_indices(size)


def _span_indices(size: int) -> tuple:
    """For the head-final decoders over `size` words, per span length: the rows, the spans' starts, the flat
    (size + 1)-square indices of the spans [s, t] and of their arcs t -> s; for outer, the flat indices of
    complete[s + 1, r'], outer[r', t] and siblings[t, s, r'] over the inside dependents r' (None at length 1,
    which has none) and those r'; for complete, those of complete[s, r], outer[r, t] and siblings[t, 0, r]
    over the leftmost dependents r."""
    side = size + 1
    chart = []
    for length in range(1, size):
        starts = np.arange(1, size + 1 - length)
        ends = starts + length
        rows = np.arange(len(starts))
        inner_parts = inside = None
        if length > 1:
            inside = starts[:, None] + 1 + np.arange(length - 1)[None, :]
            inner_parts = ((starts[:, None] + 1) * side + inside, inside * side + ends[:, None],
                           (ends[:, None] * side + starts[:, None]) * side + inside)
        middle = starts[:, None] + np.arange(length)[None, :]
        left_parts = (starts[:, None] * side + middle, middle * side + ends[:, None],
                      ends[:, None] * side * side + middle)
        chart.append((rows, starts, starts * side + ends, ends * side + starts, inner_parts, inside, left_parts))
    return tuple(chart)


def head_final_grand_sibling_tree(scores: np.ndarray, siblings: np.ndarray, grands: np.ndarray) -> np.ndarray:
    """As head_final_sibling_tree, plus grands[g, h, d] for each arc h -> d whose head h depends on g (g = 0:
    h is the root's child, the last word). O(n^4): each chart entry also carries the head of its span's head.

    complete[s, t, g]: the subtree of t covering s..t, t depending on g; outer[r, t, g]: the arc t -> r and the
    part of t's subtree inside r, t depending on g. outer[r, t, g] = arc + grands[g, t, r] + max over the next
    dependent inside, r' (complete[r + 1, r', t] + outer[r', t, g] + siblings[t, r, r']), or r = t - 1 and
    nothing inside; complete[s, t, g] = max over t's leftmost dependent r (complete[s, r, t] + outer[r, t, g] +
    siblings[t, 0, r]). The tree is complete[1, n, 0]. Entries whose g cannot be t's head (g <= t, but for the
    root of the last word) are computed with the rest and never read."""
    scores = np.asarray(scores, dtype=float)
    siblings = np.asarray(siblings, dtype=float)
    grands = np.asarray(grands, dtype=float)
    size = scores.shape[0] - 1
    heads = np.zeros(size + 1, dtype=int)
    if size < 1:
        return heads
    side = size + 1
    complete = np.full((side, side, side), -np.inf)
    words = np.arange(1, side)
    complete[words, words, :] = 0.0
    outer = np.full((side, side, side), -np.inf)
    inner_of = np.full((side, side, side), -1, dtype=int)
    leftmost = np.zeros((side, side, side), dtype=int)
    # Flat views: complete and siblings read through index arrays made once per sentence length; outer and the
    # results as rows of side values, one per g.
    flat_siblings, flat_scores = siblings.reshape(-1), scores.reshape(-1)
    outer_rows, inner_rows, leftmost_rows = (chart.reshape(side * side, side) for chart in (outer, inner_of, leftmost))
    complete_rows, grand_columns = complete.reshape(side * side, side), grands.reshape(side, side * side)
    for _rows, starts, spans, arcs, inner_parts, _inside, left_parts in _chart_indices(size):
        ends = (spans - starts * side)[:, None]
        arc = flat_scores[arcs][:, None] + grand_columns[:, arcs].T  # (span, g)
        if inner_parts is None:
            outer_rows[spans] = arc
        else:
            complete_part, outer_part, sibling_part = inner_parts
            joined = ((complete_rows[complete_part, ends] + flat_siblings[sibling_part])[:, :, None]
                      + outer_rows[outer_part])  # (span, inside, g)
            best = joined.argmax(axis=1)
            outer_rows[spans] = joined.max(axis=1) + arc
            inner_rows[spans] = starts[:, None] + 1 + best
        complete_part, outer_part, sibling_part = left_parts
        joined = ((complete_rows[complete_part, ends] + flat_siblings[sibling_part])[:, :, None]
                  + outer_rows[outer_part])
        complete_rows[spans] = joined.max(axis=1)
        leftmost_rows[spans] = starts[:, None] + joined.argmax(axis=1)
    stack = [("complete", 1, size, 0)]
    while stack:
        kind, start, end, grand = stack.pop()
        if kind == "complete":
            if start == end:
                continue
            dependent = leftmost[start, end, grand]
        else:
            dependent = inner_of[start, end, grand]
            if dependent < 0:
                continue
        heads[dependent] = end
        stack += [("complete", start + 1 if kind == "outer" else start, dependent, end),
                  ("outer", dependent, end, grand)]
    return heads


_cached_span_indices = functools.lru_cache(maxsize=None)(_span_indices)
