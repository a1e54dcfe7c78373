"""A check of crfsuite model bytes against the format's own structure, before crfsuite's C reader sees them.

crfsuite (the C library under sklearn-crfsuite) reads a model by the offsets and counts stored in it, and checks
none of them: an offset past the end, a feature that names a label the model does not have, a string with no
terminating NUL or a hash table with no empty bucket (its look-up probes until it finds one) reads outside the
bytes or loops forever, and a process that reads outside its memory dies by a signal, which no Python code can
catch. This module reads the same structure (the layout of crfsuite's crf1d_model.c and cqdb.c: a 48-byte header,
the chunks FEAT, LFRF and AFRF, and two CQDB string databases for the labels and the attributes) with bounds
checked on every read, and refuses bytes in which anything that crfsuite will follow leads out of them. Bytes that
pass are what crfsuite's own writer makes: every offset within the bytes, every count covered by them, every
index below the count it indexes.
"""
from __future__ import annotations

import numpy as np

MAGIC, MODEL_TYPE, VERSION = b"lCRF", b"FOMC", 100
HEADER_BYTES = 48
CHUNK_HEADER_BYTES = 12  # chunk id, chunk size, number of items
FEATURE_BYTES = 20  # type, source, destination (uint32 each) and the weight (float64)
STATE_FEATURE, TRANSITION_FEATURE = 0, 1
# CQDB: a 24-byte header, then 256 references (offset, number of buckets) to hash tables of (hash, offset) buckets.
CQDB_ID, CQDB_BYTE_ORDER = b"CQDB", 0x62445371
CQDB_HEADER_BYTES, CQDB_TABLES = 24, 256
CQDB_DATA_OFFSET = CQDB_HEADER_BYTES + 8 * CQDB_TABLES
# crfsuite's tagger allocates a labels x labels matrix and more per position: a model with more labels than any
# tagging task has (NER's are 13) would allocate without bound before it tags a character.
MAX_LABELS = 1024


def _uint32(data: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The little-endian uint32 at each of `positions` (each checked by the caller to lie within `data`)."""
    positions = positions.astype(np.int64)
    return (data[positions].astype(np.uint64) | data[positions + 1].astype(np.uint64) << 8
            | data[positions + 2].astype(np.uint64) << 16 | data[positions + 3].astype(np.uint64) << 24)


def _one_uint32(data: np.ndarray, position: int) -> int:
    return int(_uint32(data, np.array([position]))[0])


def _within(start: int, length: int, end: int, what: str) -> None:
    if start < 0 or length < 0 or start + length > end:
        raise ValueError(f"{what} ({length:,} bytes at offset {start:,}) runs past the end of the model's {end:,} "
                         f"bytes")


def _chunk(data: np.ndarray, offset: int, chunk_id: bytes, item_bytes: int, what: str) -> int:
    """The number of items of the chunk at `offset`, checked to hold all of them; its items start 12 bytes on."""
    _within(offset, CHUNK_HEADER_BYTES, len(data), f"the {what} chunk's header")
    if data[offset:offset + 4].tobytes() != chunk_id:
        raise ValueError(f"the {what} chunk at offset {offset:,} does not start with {chunk_id.decode()}")
    items = _one_uint32(data, offset + 8)
    _within(offset + CHUNK_HEADER_BYTES, items * item_bytes, len(data), f"the {what} chunk's {items:,} items")
    return items


def _check_strings(data: np.ndarray, starts: np.ndarray, end: int, what: str) -> None:
    """Each string that starts at one of `starts` ends with a NUL before `end` (C reads it up to its NUL), and is
    UTF-8 from its first byte (pycrfsuite decodes every label and attribute it hands over)."""
    if len(starts) == 0:
        return
    nuls = np.flatnonzero(data[:end] == 0)
    following = np.searchsorted(nuls, starts)
    if np.any(following >= len(nuls)):
        raise ValueError(f"a string of the {what} has no terminating NUL within the model")
    # Every byte that some string covers, in one run: valid UTF-8 there, and each string starting on a character
    # (not on a continuation byte), make every string valid on its own. Strings end with NUL, which no
    # character spans.
    covered = np.cumsum(np.bincount(starts, minlength=end + 1) - np.bincount(nuls[following] + 1, minlength=end + 1))
    text = data[:end][covered[:end] > 0]
    try:
        text.tobytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"a string of the {what} is not UTF-8") from None
    if np.any(data[starts] & 0xC0 == 0x80):
        raise ValueError(f"a string of the {what} starts inside a character")
    # sklearn-crfsuite reads the weights back from crfsuite's text dump, a line a feature: an empty name or one
    # with a line break would not parse (crfsuite's writer takes names from features, never empty or broken).
    if np.any(data[starts] == 0) or np.any((text == ord("\n")) | (text == ord("\r"))):
        raise ValueError(f"a string of the {what} is empty or holds a line break")


def _check_cqdb(data: np.ndarray, offset: int, expected_ids: int, what: str) -> None:
    """The CQDB at `offset` holds exactly the ids 0..expected_ids-1, both ways: every bucket and back link leads to
    a record within the database, whose id is below expected_ids and whose string ends within it; every hash
    table has an empty bucket, where a look-up of a string that is not there stops."""
    _within(offset, CQDB_DATA_OFFSET, len(data), f"the {what} database's header")
    if data[offset:offset + 4].tobytes() != CQDB_ID:
        raise ValueError(f"the {what} database at offset {offset:,} does not start with CQDB")
    size, byte_order, backward_size, backward_offset = (_one_uint32(data, offset + at) for at in (4, 12, 16, 20))
    if byte_order != CQDB_BYTE_ORDER:
        raise ValueError(f"the {what} database's byte-order mark is {byte_order:#x}")
    _within(offset, size, len(data), f"the {what} database")
    end = offset + size
    references = _uint32(data, offset + CQDB_HEADER_BYTES + 4 * np.arange(2 * CQDB_TABLES)).reshape(-1, 2)
    if int(references[references[:, 0] != 0, 1].sum()) * 8 > size:  # tables that overlap could count without bound
        raise ValueError(f"the {what} database's hash tables hold more buckets than its bytes")
    records, record_starts = 0, []
    for table_offset, buckets in references.tolist():
        records += buckets // 2  # as crfsuite counts them: a table has twice the buckets of its records
        if not table_offset:
            continue
        _within(offset + table_offset, 8 * buckets, end, f"a hash table of the {what} database")
        bucket_offsets = _uint32(data, offset + table_offset + 8 * np.arange(buckets) + 4)
        if buckets and np.all(bucket_offsets != 0):
            raise ValueError(f"a hash table of the {what} database has no empty bucket (a look-up of a "
                             f"string that is not in it would never stop)")
        record_starts.append(bucket_offsets[bucket_offsets != 0])
    if records != expected_ids:
        raise ValueError(f"the {what} database holds {records:,} strings, the model {expected_ids:,}")
    if not backward_offset or backward_size != expected_ids:
        raise ValueError(f"the {what} database's id-to-string array holds {backward_size:,} ids, the "
                         f"model {expected_ids:,}")
    _within(offset + backward_offset, 4 * records, end, f"the {what} database's id-to-string array")
    backward = _uint32(data, offset + backward_offset + 4 * np.arange(records))
    if np.any(backward == 0):
        raise ValueError(f"an id of the {what} database has no string")
    starts = np.concatenate(record_starts + [backward]).astype(np.int64) + offset
    if np.any(starts + 8 > end):
        raise ValueError(f"a string record of the {what} database lies past its end")
    if np.any(_uint32(data, starts) >= expected_ids):
        raise ValueError(f"a string record of the {what} database has an id of no {what[:-1]}")
    _check_strings(data, starts + 8, end, f"{what} database")


def _check_references(data: np.ndarray, offset: int, chunk_id: bytes, owners: int, features: np.ndarray,
                      kind: int, what: str) -> None:
    """Chunk `chunk_id` at `offset` holds, for each of `owners` labels or attributes, the offset of a list of
    feature ids; each list lies within the bytes, and each id names a feature of `kind` whose source is its
    owner (as crfsuite's writer makes them)."""
    # crfsuite's writer leaves two more label entries than labels (never read); fewer than owners would be read past
    if _chunk(data, offset, chunk_id, 4, what) < owners:
        raise ValueError(f"the {what} chunk does not hold an entry for every {what.split()[0]}")
    lists = _uint32(data, offset + CHUNK_HEADER_BYTES + 4 * np.arange(owners)).astype(np.int64)
    if np.any(lists + 4 > len(data)):
        raise ValueError(f"an entry of the {what} chunk points past the end of the model")
    counts = _uint32(data, lists).astype(np.int64)
    if np.any(lists + 4 + 4 * counts > len(data)):
        raise ValueError(f"a list of the {what} chunk runs past the end of the model")
    if counts.sum() > len(features):  # each feature has one owner: more ids than features overlap, and could
        raise ValueError(f"the {what} chunk names more features than the model has")  # count without bound
    owner = np.repeat(np.arange(owners), counts)
    within_list = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    ids = _uint32(data, np.repeat(lists + 4, counts) + 4 * within_list).astype(np.int64)
    if np.any(ids >= len(features)):
        raise ValueError(f"the {what} chunk names a feature that the model does not have")
    named = features[ids]
    if np.any(named["type"] != kind) or np.any(named["source"] != owner):
        raise ValueError(f"the {what} chunk names a feature that is not its {what.split()[0]}'s")


def check_crfsuite_model(model: bytes) -> None:
    """ValueError, saying what is wrong, unless every offset, count and index that crfsuite's reader and
    tagger follow in `model` stays within it (see the module's docstring)."""
    data = np.frombuffer(model, dtype=np.uint8)
    if len(data) < HEADER_BYTES or data[:4].tobytes() != MAGIC or data[8:12].tobytes() != MODEL_TYPE:
        raise ValueError("not a crfsuite model (its header does not start with lCRF and FOMC)")
    size, version, _features, labels, attributes, off_features, off_labels, off_attributes, off_label_refs, \
        off_attribute_refs = (_one_uint32(data, at) for at in (4, 12, 16, 20, 24, 28, 32, 36, 40, 44))
    if version != VERSION:
        raise ValueError(f"crfsuite model version {version}, not {VERSION}")
    if size != len(data):
        raise ValueError(f"the header gives the model {size:,} bytes, it has {len(data):,}")
    if not 1 <= labels <= MAX_LABELS:
        raise ValueError(f"the model has {labels:,} labels (1 to {MAX_LABELS:,} are read)")
    count = _chunk(data, off_features, b"FEAT", FEATURE_BYTES, "features")
    # The header's own feature count stays 0 (crfsuite's writer never sets it): the chunk's count is the one read.
    start = off_features + CHUNK_HEADER_BYTES
    features = np.frombuffer(model, dtype=np.dtype([("type", "<u4"), ("source", "<u4"), ("destination", "<u4"),
                                                    ("weight", "<f8")]), count=count, offset=start)
    state, transition = features["type"] == STATE_FEATURE, features["type"] == TRANSITION_FEATURE
    if not np.all(state | transition):
        raise ValueError("a feature is neither a state nor a transition feature")
    if np.any(features["destination"] >= labels) or np.any(features["source"][transition] >= labels):
        raise ValueError("a feature names a label that the model does not have")
    if np.any(features["source"][state] >= attributes):
        raise ValueError("a feature names an attribute that the model does not have")
    if not np.all(np.isfinite(features["weight"])):
        raise ValueError("a feature's weight is not a finite number")
    _check_references(data, off_label_refs, b"LFRF", labels, features, TRANSITION_FEATURE, "label references")
    _check_references(data, off_attribute_refs, b"AFRF", attributes, features, STATE_FEATURE,
                      "attribute references")
    _check_cqdb(data, off_labels, labels, "labels")
    _check_cqdb(data, off_attributes, attributes, "attributes")
