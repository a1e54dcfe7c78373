"""Maximum spanning arborescence (Chu-Liu-Edmonds) for dependency parsing, with exactly one root child."""
from __future__ import annotations

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


def tree_score(scores: np.ndarray, heads: np.ndarray) -> float:
    return float(scores[heads[1:], np.arange(1, len(heads))].sum())
