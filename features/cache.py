"""A disk cache of morpheme analyses and neighbour lists in SQLite, safe for concurrent processes and wary
of damaged entries."""
from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sqlite3
import threading
import warnings
from array import array
from pathlib import Path

from features.morphemes import Analysis

CACHE_VARIABLE = "KLUE_BASELINES_CACHE"
_BATCH = 900  # stays under SQLite's limit on host parameters per statement
_CHECKSUM = 8
_TABLES = ("analyses", "neighbours")


def default_cache_dir() -> Path:
    if os.environ.get(CACHE_VARIABLE):
        return Path(os.environ[CACHE_VARIABLE])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "klue-baselines" / "analysis"


class CacheWarning(UserWarning):
    """The analysis cache cannot be used; the run goes on without it (slower, same results)."""


class AnalysisCache:
    """Analyses keyed by a hash of (analyser versions and options, text).

    SQLite in WAL mode lets several processes read and write at once. An entry that does not decode, or
    decodes into offsets that do not fit its text, is treated as missing and rewritten. A cache that cannot
    be used (locked by another process past `timeout` seconds, read-only, below a file or a read-only
    folder, or damaged) gives one CacheWarning, and this process goes on without it. It is never deleted:
    another process may hold it.
    """

    def __init__(self, directory: str | os.PathLike, options_key: str, timeout: float = 60.0):
        self.directory = Path(directory)
        self.options_key = options_key
        self.timeout = timeout
        self.path = self.directory / "analyses.sqlite3"
        self._connection: sqlite3.Connection | None = None
        # One connection serves every thread of the process (the page predicts in worker threads), one statement
        # at a time: sqlite3 refuses a connection used from another thread unless told, and then leaves the
        # serialising to its user.
        self._lock = threading.RLock()
        self.disabled = False

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._connection = self._open()
        return self._connection

    def _give_up(self, error: Exception) -> None:
        """Stop using the cache in this process, with one warning that says why and what to do."""
        self.close()
        self.disabled = True
        reason = getattr(error, "strerror", None) or str(error)
        hint = (f"; delete {self.path} to rebuild it" if "not a database" in reason or "malformed" in reason
                else "")
        warnings.warn(CacheWarning(f"the analysis cache at {self.path} cannot be used ({reason}){hint}; going on "
                                   "without it (slower, same results)"), stacklevel=3)

    def _open(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        # The cache can always be rebuilt, so it trades durability on power loss for write speed.
        connection.execute("PRAGMA synchronous=OFF")
        for table in _TABLES:
            connection.execute(f"CREATE TABLE IF NOT EXISTS {table} (key BLOB PRIMARY KEY, value BLOB NOT NULL)"
                               " WITHOUT ROWID")
        return connection

    def key(self, text: str) -> bytes:
        return hashlib.blake2b(f"{self.options_key}\x00{text}".encode("utf-8", "surrogatepass"),
                               digest_size=20).digest()

    def keys(self, texts: list[str]) -> dict[str, bytes]:
        return {text: self.key(text) for text in texts}

    def get_many(self, keys: dict[str, bytes]) -> dict[str, Analysis]:
        """The cached analyses among `keys` (text -> key); damaged entries are left out."""
        text_of = {key: text for text, key in keys.items()}
        found: dict[str, Analysis] = {}
        for key, value in self._select("analyses", text_of):
            analysis = decode(text_of[key], key, value)
            if analysis is not None:
                found[text_of[key]] = analysis
        return found

    def put_many(self, entries: list[tuple[bytes, Analysis]]) -> None:
        """Store (key, analysis) pairs."""
        self._insert("analyses", [(key, encode(key, analysis)) for key, analysis in entries])

    def neighbour_key(self, morpheme: tuple[str, str], top_n: int, method: str) -> bytes:
        """The key of a neighbour list: `method` names how lists are computed, so a new one never reads old."""
        form, tag = morpheme
        return self.key(f"neighbours\x00{method}\x00{top_n}\x00{form}\x00{tag}")

    def get_neighbours(self, keys: dict[tuple[str, str], bytes]) -> dict[tuple[str, str], tuple]:
        """The cached neighbour lists among `keys` (morpheme -> key); damaged entries are left out."""
        morpheme_of = {key: morpheme for morpheme, key in keys.items()}
        found = {}
        for key, value in self._select("neighbours", morpheme_of):
            neighbours = _unseal(key, value)
            if isinstance(neighbours, tuple):
                found[morpheme_of[key]] = neighbours
        return found

    def put_neighbours(self, entries: list[tuple[bytes, tuple]]) -> None:
        self._insert("neighbours", [(key, _seal(key, tuple(neighbours))) for key, neighbours in entries])

    def _select(self, table: str, keys) -> list[tuple[bytes, bytes]]:
        rows: list[tuple[bytes, bytes]] = []
        with self._lock:
            if self.disabled:
                return rows
            try:
                connection = self._connect()
                key_list = sorted(keys)  # B-tree order: neighbouring probes share pages
                for offset in range(0, len(key_list), _BATCH):
                    chunk = key_list[offset:offset + _BATCH]
                    query = f"SELECT key, value FROM {table} WHERE key IN ({','.join('?' * len(chunk))})"
                    rows.extend(connection.execute(query, chunk).fetchall())
            except (sqlite3.Error, OSError) as error:
                self._give_up(error)
                return []
        return rows

    def _insert(self, table: str, rows: list[tuple[bytes, bytes]]) -> None:
        """In key order, which appends to the B-tree instead of splitting it."""
        with self._lock:
            if self.disabled:
                return
            try:
                connection = self._connect()
                connection.execute("BEGIN IMMEDIATE")
                connection.executemany(f"INSERT OR REPLACE INTO {table} VALUES (?, ?)", sorted(rows))
                connection.execute("COMMIT")
            except (sqlite3.Error, OSError) as error:
                self._give_up(error)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._connection.close()
                self._connection = None


def _checksum(key: bytes, payload: bytes) -> bytes:
    return hashlib.blake2b(payload, key=key[:16], digest_size=_CHECKSUM).digest()


def _seal(key: bytes, value: object) -> bytes:
    """A checksum tied to the key, then the marshalled value: a damaged entry, or one stored under another
    key, fails the checksum instead of being validated field by field."""
    payload = marshal.dumps(value)
    return _checksum(key, payload) + payload


def _unseal(key: bytes, stored: bytes) -> object | None:
    """The value `_seal` stored under `key`, or None when the entry is damaged or belongs to another key."""
    payload = stored[_CHECKSUM:]
    if stored[:_CHECKSUM] != _checksum(key, payload):
        return None
    try:
        return marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None


def encode(key: bytes, analysis: Analysis) -> bytes:
    """The analysis's columns, sealed under its text's key."""
    offsets = array("i", analysis.starts) + array("i", analysis.ends)
    return _seal(key, (analysis.forms, analysis.tags, offsets.tobytes()))


def decode(text: str, key: bytes, value: bytes) -> Analysis | None:
    """The cached analysis of `text`, or None when the entry is damaged or belongs to another key."""
    columns = _unseal(key, value)
    try:
        forms, tags, offset_bytes = columns
        offsets = array("i")
        offsets.frombytes(offset_bytes)
        size = len(forms)
        if len(tags) != size or len(offsets) != 2 * size:
            return None
        return Analysis(text, forms, tags, offsets[:size], offsets[size:])
    except (ValueError, TypeError):  # not three columns, or a form or tag that is not a string
        return None
