"""Kiwi's CoNg embeddings read from the model file: the layout, the exact arithmetic and the agreement with Kiwi."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from features import embeddings
from features.analysis import MorphemeAnalyzer
from features.embeddings import EmbeddingFileError, MorphemeEmbeddings, read_header, read_output_vectors


def write_model(path, outputs: list[tuple[list[int], list[int]]], dim: int = 8, qgroup: int = 4,
                contexts: int = 2, window: int = 0, qbit: int = 4, extra: bytes = b"") -> None:
    """A CoNg model file with the given output rows, each (4-bit values, one group byte per group); context
    rows are filler."""
    header = struct.pack("<QQHBBBBBBQQQQQ", len(outputs), contexts, dim, 0, 0, 3, window, qbit, qgroup,
                         1, 64, 64, 64, 64)
    row = dim // 2 + 2 + dim // qgroup
    body = b"\x11" * (contexts * (row + 6))
    for values, groups in outputs:
        packed = bytes(values[i] | values[i + 1] << 4 for i in range(0, dim, 2))
        body += packed + b"\x00\x3c" + bytes(groups)
    if window:
        body += b"\x00" * (len(outputs) * (row + 4) + window * 2 + (len(outputs) + 7) // 8)
    path.write_bytes(header + body + extra)


def test_four_bit_values_become_the_int8_vectors_kiwi_holds(tmp_path):
    model = tmp_path / "cong.mdl"
    # Group byte 0: zero point 6, scale 9, so q stands for (q - 6) * 9 / 9 = q - 6. Group byte 0b01_000011:
    # zero point 7, scale 12, so q stands for (q - 7) * 12, plus 4 away from zero, over 9, rounded.
    write_model(model, [([15, 6, 0, 7, 8, 9, 10, 5], [0, 0b01000011]),
                        ([1, 2, 3, 4, 5, 6, 7, 8], [0, 0])], window=7)
    vectors = read_output_vectors(model)
    assert vectors.dtype == np.int8
    assert vectors[0].tolist() == [9, 0, -6, 1, 2, 3, 4, -3]  # 16/9 -> 2, 28/9 -> 3, 40/9 -> 4, -28/9 -> -3
    assert vectors[1].tolist() == [-5, -4, -3, -2, -1, 0, 1, 2]


@pytest.mark.parametrize("change, message", [
    (dict(qbit=8), "expected 4-bit embeddings"),
    (dict(qgroup=3), "expected 4-bit embeddings"),
    (dict(extra=b"\x00"), "expected 100 for its header"),
])
def test_a_model_laid_out_otherwise_is_a_one_line_error(tmp_path, change, message):
    model = tmp_path / "cong.mdl"
    write_model(model, [([0] * 8, [0, 0])], **change)
    with pytest.raises(EmbeddingFileError, match=message) as raised:
        read_header(model)
    assert str(model) in str(raised.value) and "\n" not in str(raised.value)


def test_a_missing_or_truncated_model_is_a_one_line_error(tmp_path):
    with pytest.raises(EmbeddingFileError, match="cannot read"):
        read_header(tmp_path / "absent.mdl")
    (tmp_path / "short.mdl").write_bytes(b"\x01" * 10)
    with pytest.raises(EmbeddingFileError, match="10 bytes, expected a CoNg model header"):
        read_header(tmp_path / "short.mdl")


def test_ties_are_ordered_by_row_and_rows_without_a_form_are_never_neighbours():
    vectors = np.array([[1, 0], [2, 0], [1, 0], [0, 1], [3, 1]], dtype=np.int8)
    table = MorphemeEmbeddings(vectors, [("a", "NNG"), ("", "NNP"), ("c", "NNG"), ("d", "NNG"), ("e", "NNG")])
    nearest = table.nearest([("a", "NNG"), ("zz", "NNG")], top_n=3)
    assert nearest[("a", "NNG")] == (("c", "NNG", 1.0), ("e", "NNG", 0.9487), ("d", "NNG", 0.0))
    assert nearest[("zz", "NNG")] == ()
    assert table.similarity(("a", "NNG"), ("", "NNP")) is None  # a stand-in row has no name to ask by


def test_cosines_and_summed_cosine_are_the_exact_cosines_and_nan_or_nothing_without_a_vector():
    vectors = np.array([[3, 4], [4, 3], [0, 0], [-3, -4]], dtype=np.int8)
    table = MorphemeEmbeddings(vectors, [("a", "NNG"), ("b", "NNG"), ("z", "NNG"), ("m", "VV")])
    matrix = table.cosines([("a", "NNG"), ("zz", "NNG"), ("z", "NNG")], [("b", "NNG"), ("m", "VV")])
    assert matrix.shape == (3, 2)
    assert matrix[0].tolist() == [24 / 25, -1.0]
    assert np.isnan(matrix[1:]).all()  # no row, and a zero vector
    assert table.cosines([], [("a", "NNG")]).shape == (0, 1)
    # (3, 4) + (4, 3) = (7, 7) against (-3, -4): -49 / (sqrt(98) * 5)
    assert table.summed_cosine([("a", "NNG"), ("b", "NNG"), ("zz", "NNG")], [("m", "VV")]) == -49 / np.sqrt(98 * 25)
    assert table.summed_cosine([("zz", "NNG")], [("a", "NNG")]) == 0.0


@pytest.fixture(scope="module")
def kiwi_table():
    analyzer = MorphemeAnalyzer(use_cache=False)
    return analyzer, analyzer.embeddings


def test_float32_products_of_the_model_are_exact_integers(kiwi_table):
    _analyzer, table = kiwi_table
    queries = table.vectors[::997][:64]
    exact = queries.astype(np.int64) @ table.vectors.astype(np.int64).T
    assert np.array_equal((queries @ table.vectors.T).astype(np.int64), exact)
    assert np.abs(table.vectors).max() * np.abs(table.vectors).max() * table.vectors.shape[1] < 2 ** 24


def test_neighbours_do_not_depend_on_blas_threads_or_batch_size(kiwi_table, monkeypatch):
    _analyzer, table = kiwi_table
    queries = [morpheme for morpheme in table.morphemes[300:700] if morpheme[0]]
    with threadpool_limits(1):
        one_thread = table.nearest(queries, top_n=20)
    monkeypatch.setattr(table, "BATCH", 7)
    with threadpool_limits(2):
        assert table.nearest(queries, top_n=20) == one_thread


def test_cosines_agree_with_kiwi_to_its_own_precision(kiwi_table):
    analyzer, table = kiwi_table
    kiwi = analyzer.kiwi
    rng = np.random.default_rng(0)
    rows = rng.integers(100, len(table.morphemes), size=(200, 2))
    differences = [abs(table.similarity(table.morphemes[a], table.morphemes[b]) - kiwi.morpheme_similarity(int(a), int(b)))
                   for a, b in rows if table.morphemes[a][0] and table.morphemes[b][0]]
    assert len(differences) > 150 and max(differences) < 1e-3
    ours = [form for form, _tag, _score in table.nearest([("학교", "NNG")], top_n=5)[("학교", "NNG")]]
    assert ours == [m.form for m in kiwi.most_similar_morphemes(("학교", "NNG"), top_n=5)]


def test_the_method_keys_the_cached_lists(tmp_path):
    analyzer = MorphemeAnalyzer(cache_dir=tmp_path)
    key = analyzer.cache.neighbour_key(("학교", "NNG"), 20, embeddings.METHOD)
    assert key != analyzer.cache.neighbour_key(("학교", "NNG"), 20, "kiwi-most-similar")


def brute_force_nearest(table: MorphemeEmbeddings, morpheme: tuple[str, str], top_n: int) -> tuple:
    """Every row's exact cosine, then the top_n by (cosine down, row up) with ties at the edge ordered alike."""
    row = table.row_of[morpheme]
    if not table.square_norms[row]:
        return ()
    dots = (table.vectors[row] @ table.vectors.T).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        cosines = dots / np.sqrt(table.square_norms[row] * table.square_norms)
    ranked = sorted((-cosine, other) for other, cosine in enumerate(cosines)
                    if table.candidate[other] and other != row)
    return tuple((*table.morphemes[other], round(float(-negative), 4)) for negative, other in ranked[:top_n])


@pytest.mark.parametrize("floor_blocks", [1024, 16, 3])
def test_the_shortlist_gives_what_every_row_s_exact_cosine_gives(floor_blocks, monkeypatch):
    """With 400 rows, 1024 blocks are the scores themselves (the floor is the top_n-th score), 16 and 3 blocks
    give floors below it, and a top_n above half the blocks gives none."""
    monkeypatch.setattr(MorphemeEmbeddings, "FLOOR_BLOCKS", floor_blocks)
    rng = np.random.default_rng(7)
    vectors = rng.integers(-8, 8, size=(400, 12)).astype(np.int8)
    vectors[50:60] = vectors[40]  # ties: ten copies of one row
    vectors[70:75] = -vectors[40]  # and its opposites, whose cosines are all -1
    vectors[90] = 0  # a zero vector: never a neighbour, and without neighbours of its own
    morphemes = [(f"w{index}", "NNG") for index in range(400)]
    table = MorphemeEmbeddings(vectors, morphemes)
    for top_n in (0, 1, 5, 12, 399, 500):
        found = table.nearest(morphemes, top_n)
        assert all(found[m] == brute_force_nearest(table, m, top_n) for m in morphemes), top_n
    assert table.nearest([morphemes[90]], 5)[morphemes[90]] == ()
