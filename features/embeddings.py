"""Kiwi's CoNg morpheme embeddings, read from its model file, and cosine neighbours computed exactly, the same
on every CPU."""
from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

# Kiwi computes its own similarities (most_similar_morphemes, morpheme_similarity) with approximate norms
# whose last digits depend on the CPU: on an Intel Xeon and on an AMD EPYC, 2,815 of the 3,000 commonest
# morphemes got a different list of 20 neighbours with cosines rounded to 4 places, with every SIMD kernel
# Kiwi offers. Here the same 8-bit vectors Kiwi holds are multiplied as integers: every product and every
# partial sum is an integer below 2**24, which float32 holds exactly in any order of summation, so the BLAS
# kernel, the thread count and the CPU cannot change a dot product, and the norms come from exact integer
# sums. Bump the method when anything here can change a list: it keys the neighbour lists on disk.
METHOD = "cong-output-int8-exact-1"
MODEL_FILE = "cong.mdl"

_HEADER = struct.Struct("<QQHBBBBBBQQQQQ")  # kiwi::lm::CoNgramModelHeader, little-endian, 64 bytes
_HALF = 2  # bytes of one float16 field
# A 4-bit value q with a group byte g stands for v = (q - zero) * scale, zero = 6 + (g >> 6), scale = 9 + (g & 63).
# Kiwi's x86 kernels turn v into int8 as (v + 4 away from zero) times 3640 / 32768 (about 1 / 9), rounded to
# nearest; this does the same in integers.
_ZERO_BASE, _SCALE_BASE, _DIVISOR = 6, 9, 9


class EmbeddingFileError(ValueError):
    """Kiwi's model file is missing or laid out otherwise than this module reads."""


@dataclass(frozen=True)
class CongHeader:
    vocab_size: int
    context_size: int
    dim: int
    window_size: int
    qbit: int
    qgroup: int
    emb_offset: int

    @property
    def packed_row(self) -> int:
        """Bytes of one packed vector: 4-bit values, a float16 scale, one byte per group."""
        return self.dim // 2 + _HALF + self.dim // self.qgroup


def read_header(path: Path) -> CongHeader:
    """The header of a CoNg model file, checked against the file's size (one-line EmbeddingFileError)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as file:
            raw = file.read(_HEADER.size)
    except OSError as error:
        raise EmbeddingFileError(f"{path}: cannot read Kiwi's language model ({error.strerror or error})") from None
    if len(raw) < _HEADER.size:
        raise EmbeddingFileError(f"{path}: {len(raw)} bytes, expected a CoNg model header of {_HEADER.size}")
    (vocab_size, context_size, dim, _context_type, _output_type, _key_size, window_size, qbit, qgroup,
     _nodes, _node_offset, _key_offset, _value_offset, emb_offset) = _HEADER.unpack(raw)
    header = CongHeader(vocab_size, context_size, dim, window_size, qbit, qgroup, emb_offset)
    if qbit != 4 or not qgroup or not dim or dim % 2 or dim % qgroup:
        raise EmbeddingFileError(f"{path}: expected 4-bit embeddings in groups dividing the dimension (the layout "
                                 f"of kiwipiepy-model 0.24), found {qbit}-bit, group {qgroup}, dimension {dim}")
    row = header.packed_row
    expected = emb_offset + context_size * (row + 3 * _HALF) + vocab_size * row
    if window_size:  # the distant-token embeddings, their position weights and mask follow
        expected += vocab_size * (row + 2 * _HALF) + window_size * _HALF + (vocab_size + 7) // 8
    if expected != size:
        raise EmbeddingFileError(f"{path}: {size:,} bytes, expected {expected:,} for its header (vocabulary "
                                 f"{vocab_size:,}, contexts {context_size:,}, dimension {dim})")
    return header


def read_output_vectors(path: Path) -> np.ndarray:
    """The model's output embeddings as the int8 vectors Kiwi holds (vocabulary × dimension)."""
    header = read_header(path)
    row = header.packed_row
    start = header.emb_offset + header.context_size * (row + 3 * _HALF)
    rows = np.fromfile(path, dtype=np.uint8, count=header.vocab_size * row, offset=start)
    rows = rows.reshape(header.vocab_size, row)
    packed = rows[:, : header.dim // 2]
    groups = rows[:, header.dim // 2 + _HALF:]  # the float16 scale between them is common to a row: cosines ignore it
    nibbles = np.empty((header.vocab_size, header.dim), dtype=np.uint8)
    nibbles[:, 0::2] = packed & 0x0F
    nibbles[:, 1::2] = packed >> 4
    # Each value is one of 256 x 16 (group byte, nibble) pairs: looked up in their table, not computed 18 million
    # times over (1.2 s of every process that reads the table).
    by_group = nibbles.reshape(header.vocab_size, header.dim // header.qgroup, header.qgroup)
    return _int8_values()[groups[:, :, None], by_group].reshape(header.vocab_size, header.dim)


def _int8_values() -> np.ndarray:
    """The int8 value of every 4-bit value q (columns) under every group byte g (rows), as Kiwi computes it."""
    group, nibble = np.arange(256, dtype=np.int32)[:, None], np.arange(16, dtype=np.int32)[None, :]
    values = (nibble - (_ZERO_BASE + (group >> 6))) * (_SCALE_BASE + (group & 0x3F))
    values += np.sign(values) * (_DIVISOR // 2)
    values = ((values * (32768 // _DIVISOR) >> 14) + 1) >> 1
    return values.astype(np.int8)


# A progress callback: called with the number of morphemes just looked up.
Advance = Callable[[int], None]


class MorphemeEmbeddings:
    """The output embeddings of Kiwi's CoNg language model, each row with the (form, Kiwi tag) it stands for.

    Rows without a form (the model's stand-ins for a whole tag, such as any foreign word or any unknown
    proper noun) are never neighbours, and a morpheme the model has no row of its own for has none.
    """

    BATCH = 128  # queries per matrix product: 70,488 × 128 dot products and scores in float32, about 70 MB
    FLOOR_BLOCKS = 1024  # blocks of columns whose maxima bound a query's top_n-th score from below

    def __init__(self, vectors: np.ndarray, morphemes: list[tuple[str, str]]):
        if vectors.ndim != 2 or len(vectors) != len(morphemes):
            raise ValueError(f"expected one vector per morpheme, got {vectors.shape} for {len(morphemes)}")
        self.morphemes = morphemes
        self.vectors = vectors.astype(np.float32)
        # The exact square norms as float64 integers; their products stay below 2**53.
        self.square_norms = np.einsum("ij,ij->i", vectors.astype(np.int64), vectors.astype(np.int64)).astype(
            np.float64)
        self.row_of = {morpheme: row for row, morpheme in enumerate(morphemes) if morpheme[0]}
        self.candidate = np.array([bool(form) for form, _tag in morphemes]) & (self.square_norms > 0)
        self.candidates = int(self.candidate.sum())
        self.never_neighbours = np.flatnonzero(~self.candidate)
        with np.errstate(divide="ignore"):  # zero vectors are never candidates: their score is masked
            self.inverse_norms = (1.0 / np.sqrt(self.square_norms)).astype(np.float32)

    @classmethod
    def from_kiwi(cls, kiwi, model_dir: str | os.PathLike | None = None) -> "MorphemeEmbeddings":
        """Read the model file of `kiwi` (kiwipiepy-model's folder unless `model_dir` is given) and name its rows
        with `kiwi.morpheme`."""
        if model_dir is None:
            import kiwipiepy_model

            model_dir = kiwipiepy_model.get_model_path()
        vectors = read_output_vectors(Path(model_dir) / MODEL_FILE)
        names = [kiwi.morpheme(row) for row in range(len(vectors))]
        return cls(vectors, [(token.form, str(token.tag)) for token in names])

    def has_vector(self, morpheme: tuple[str, str]) -> bool:
        """Whether the model has a nonzero row of its own for this (form, Kiwi tag)."""
        row = self.row_of.get(morpheme)
        return row is not None and bool(self.square_norms[row])

    def similarity(self, first: tuple[str, str], second: tuple[str, str]) -> float | None:
        """The cosine of two morphemes; None when the model has no row for one of them."""
        a, b = self.row_of.get(first), self.row_of.get(second)
        if a is None or b is None or not self.square_norms[a] or not self.square_norms[b]:
            return None
        dot = int(np.dot(self.vectors[a].astype(np.int64), self.vectors[b].astype(np.int64)))
        return dot / math.sqrt(self.square_norms[a] * self.square_norms[b])

    def cosines(self, firsts: Sequence[tuple[str, str]], seconds: Sequence[tuple[str, str]]) -> np.ndarray:
        """The cosine of every morpheme of `firsts` with every one of `seconds` (rows by columns), computed
        exactly as `similarity` does; NaN where the model has no row, or a zero vector, for either."""
        def rows(morphemes):
            known = np.array([self.has_vector(m) for m in morphemes], dtype=bool)
            return np.array([self.row_of[m] if k else 0 for m, k in zip(morphemes, known)], dtype=np.int64), known

        (rows_1, known_1), (rows_2, known_2) = rows(firsts), rows(seconds)
        dots = (self.vectors[rows_1] @ self.vectors[rows_2].T).astype(np.float64)  # integers below 2**24: exact
        with np.errstate(divide="ignore", invalid="ignore"):
            result = dots / np.sqrt(np.multiply.outer(self.square_norms[rows_1], self.square_norms[rows_2]))
        result[~known_1, :] = np.nan
        result[:, ~known_2] = np.nan
        return result.reshape(len(firsts), len(seconds))

    def summed_cosine(self, firsts: Sequence[tuple[str, str]], seconds: Sequence[tuple[str, str]]) -> float:
        """The cosine of the sums of the two lists' vectors (morphemes without a row add nothing), in integers
        until the last division; 0 when a sum is zero."""
        def summed(morphemes):
            rows = [self.row_of[m] for m in morphemes if m in self.row_of]
            return self.vectors[rows].astype(np.int64).sum(axis=0)

        sum_1, sum_2 = summed(firsts), summed(seconds)
        norms = int(np.dot(sum_1, sum_1)) * int(np.dot(sum_2, sum_2))
        return int(np.dot(sum_1, sum_2)) / math.sqrt(norms) if norms else 0.0

    def nearest(self, morphemes: Iterable[tuple[str, str]], top_n: int,
                advance: Advance | None = None) -> dict[tuple[str, str], tuple]:
        """The `top_n` nearest morphemes to each one, as (form, tag, cosine rounded to 4 places), nearest first,
        equal cosines in the model's order; empty for a morpheme without a row.

        The exact cosine dot / sqrt(|q|² |v|²) is computed only for a shortlist: the rows whose cheaper score
        dot / |v| (float32, one product per row) is within a relative 1e-4 of the top_n-th best score. The
        cheap score orders the rows as the cosine does up to rounding (under 1e-6 relative in float32), so
        the shortlist holds every row that the exact cosine puts in the top_n or ties with its last one, and
        the answer is the one that the exact cosines of all rows give."""
        morphemes = list(dict.fromkeys(morphemes))
        found: dict[tuple[str, str], tuple] = {m: () for m in morphemes if m not in self.row_of}
        known = [m for m in morphemes if m in self.row_of]
        if top_n < 1:  # none asked for: no product with the table
            found.update((m, ()) for m in known)
            if advance is not None and known:
                advance(len(known))
            return found
        for offset in range(0, len(known), self.BATCH):
            batch = known[offset:offset + self.BATCH]
            rows = np.array([self.row_of[m] for m in batch])
            dots = self.vectors[rows] @ self.vectors.T  # exact in float32: see METHOD's comment
            with np.errstate(invalid="ignore"):  # 0 x inf of a zero vector's column, masked next
                scores = dots * self.inverse_norms
            scores[:, self.never_neighbours] = -np.inf
            scores[np.arange(len(rows)), rows] = -np.inf
            for morpheme, row, row_dots, row_scores, floor in zip(batch, rows, dots, scores,
                                                                   self._floors(scores, top_n)):
                found[morpheme] = self._top(row, row_dots, row_scores, top_n, floor)
            if advance is not None:
                advance(len(batch))
        return found

    def _floors(self, scores: np.ndarray, top_n: int) -> np.ndarray:
        """For each row of `scores`, a floor that at least `top_n` of its scores reach: the top_n-th largest of
        the maxima of FLOOR_BLOCKS blocks of its columns (top_n scores of the row, so no higher than its own
        top_n-th largest), for top_n of 1 or more; -inf where the blocks are too few to tell."""
        rows, columns = scores.shape
        blocks = min(self.FLOOR_BLOCKS, columns)
        if top_n > blocks // 2:
            return np.full(rows, -np.inf, dtype=scores.dtype)
        width = columns // blocks
        maxima = scores[:, :blocks * width].reshape(rows, blocks, width).max(axis=2)
        return np.partition(maxima, blocks - top_n, axis=1)[:, blocks - top_n]

    def _top(self, row: int, dots: np.ndarray, scores: np.ndarray, top_n: int, floor: float) -> tuple:
        count = min(top_n, self.candidates - int(self.candidate[row]))
        if count <= 0 or not self.square_norms[row]:
            return ()  # no other row, or a zero vector, whose cosines are undefined
        # Every score at or above the count-th best reaches the floor (_floors), so the count-th best of those
        # that reach it is the row's own, found among a few hundred scores instead of all.
        above = np.flatnonzero(scores >= floor)
        above_scores = scores[above]
        kth = np.partition(above_scores, len(above) - count)[len(above) - count]
        lowest = kth - abs(kth) * 1e-4 - 1e-30
        shortlist = above[above_scores >= lowest] if lowest >= floor else np.flatnonzero(scores >= lowest)
        with np.errstate(divide="ignore", invalid="ignore"):
            cosines = dots[shortlist].astype(np.float64) / np.sqrt(self.square_norms[row]
                                                                   * self.square_norms[shortlist])
        # Everything tied with the count-th best is kept, then ordered by (cosine down, row up).
        threshold = np.partition(cosines, len(cosines) - count)[len(cosines) - count]
        kept = cosines >= threshold
        rows, cosines = shortlist[kept], cosines[kept]
        order = np.lexsort((rows, -cosines))[:count]
        return tuple((*self.morphemes[found], round(float(cosine), 4))
                     for found, cosine in zip(rows[order], cosines[order]))
