"""A disk cache of morpheme analyses in SQLite, safe for concurrent processes and wary of damaged entries."""
from __future__ import annotations

import hashlib
import marshal
import operator
import os
import sqlite3
from array import array
from pathlib import Path

from features.morphemes import Analysis

CACHE_VARIABLE = "KLUE_BASELINES_CACHE"
_BATCH = 900  # stays under SQLite's limit on host parameters per statement


def default_cache_dir() -> Path:
    if os.environ.get(CACHE_VARIABLE):
        return Path(os.environ[CACHE_VARIABLE])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "klue-baselines" / "analysis"


class AnalysisCache:
    """Analyses keyed by a hash of (analyser versions and options, text).

    SQLite in WAL mode lets several processes read and write at once. An entry that does not decode, or
    decodes into offsets that do not fit its text, is treated as missing and rewritten; a database file
    that SQLite cannot open is moved aside and started afresh.
    """

    def __init__(self, directory: str | os.PathLike, options_key: str):
        self.directory = Path(directory)
        self.options_key = options_key
        self.path = self.directory / "analyses.sqlite3"
        self._connection: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            try:
                self._connection = self._open()
            except sqlite3.DatabaseError:
                os.replace(self.path, self.path.with_suffix(f".damaged-{os.getpid()}"))
                self._connection = self._open()
        return self._connection

    def _open(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute("CREATE TABLE IF NOT EXISTS analyses (key BLOB PRIMARY KEY, value BLOB NOT NULL)"
                           " WITHOUT ROWID")
        return connection

    def key(self, text: str) -> bytes:
        return hashlib.blake2b(f"{self.options_key}\x00{text}".encode("utf-8", "surrogatepass"),
                               digest_size=20).digest()

    def get_many(self, texts: list[str]) -> dict[str, Analysis]:
        keys = {self.key(text): text for text in texts}
        found: dict[str, Analysis] = {}
        try:
            connection = self._connect()
            key_list = sorted(keys)  # B-tree order: neighbouring probes share pages
            for offset in range(0, len(key_list), _BATCH):
                chunk = key_list[offset:offset + _BATCH]
                query = f"SELECT key, value FROM analyses WHERE key IN ({','.join('?' * len(chunk))})"
                for key, value in connection.execute(query, chunk).fetchall():
                    text = keys[key]
                    analysis = decode(text, value)
                    if analysis is not None:
                        found[text] = analysis
        except sqlite3.DatabaseError:
            self._reset()
        return found

    def put_many(self, analyses: dict[str, Analysis]) -> None:
        rows = [(self.key(text), encode(analysis)) for text, analysis in analyses.items()]
        try:
            connection = self._connect()
            connection.execute("BEGIN IMMEDIATE")
            connection.executemany("INSERT OR REPLACE INTO analyses VALUES (?, ?)", rows)
            connection.execute("COMMIT")
        except sqlite3.DatabaseError:
            # A cache that cannot be written only costs speed: start afresh next time.
            self._reset()

    def _reset(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        for suffix in ("", "-wal", "-shm"):
            candidate = Path(f"{self.path}{suffix}")
            if candidate.exists():
                os.replace(candidate, f"{candidate}.damaged-{os.getpid()}")

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def encode(analysis: Analysis) -> bytes:
    offsets = array("i", analysis.starts) + array("i", analysis.ends) + array("i", analysis.eojeols)
    return marshal.dumps((analysis.forms, analysis.tags, offsets.tobytes()))


def decode(text: str, value: bytes) -> Analysis | None:
    """The cached analysis of `text`, or None when the entry is damaged or does not fit the text."""
    try:
        forms, tags, offset_bytes = marshal.loads(value)
        offsets = array("i")
        offsets.frombytes(offset_bytes)
    except (EOFError, ValueError, TypeError):
        return None
    size = len(forms)
    if not (type(forms) is tuple and type(tags) is tuple and len(tags) == size and len(offsets) == 3 * size):
        return None
    starts, ends, eojeols = offsets[:size], offsets[size:2 * size], offsets[2 * size:]
    if size and (min(starts) < 0 or max(ends) > len(text) or not all(map(operator.le, starts, ends))):
        return None
    return Analysis(text, forms, tags, starts, ends, eojeols)
