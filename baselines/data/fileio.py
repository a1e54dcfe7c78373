"""Reading and writing files safely: one error type for bad input, atomic writes, hashes, KLUE TSV blocks."""
from __future__ import annotations

import contextlib
import glob
import gzip
import hashlib
import json
import errno
import os
import re
import stat
import tempfile
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from features.characters import LONE_SURROGATE, without_lone_surrogates
from baselines.errors import caller_stacklevel, DataError, InputWarning


# A lone surrogate can reach a str only through a JSON escape such as \ud800 (UTF-8 cannot encode one), so
# only a document holding such an escape is searched for them.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_json_text(text: str, path: Path, where: str | None = None) -> Any:
    """One JSON document; bad syntax and nesting deeper than Python's recursion limit become DataErrors,
    and lone surrogates are replaced by U+FFFD with a warning that names the records that held them."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        location = where or f"line {error.lineno}, column {error.colno}"
        raise DataError(path, location, f"invalid JSON ({error.msg})") from None
    except RecursionError:
        raise DataError(path, where, "JSON nested too deeply to read") from None
    if _SURROGATE_ESCAPE.search(text):
        places: list[str] = []
        value = _without_surrogates(value, where or "", places)
        if places:
            warnings.warn(InputWarning(
                f"{path}: {len(places)} texts hold lone surrogate code points, which Kiwi cannot analyse; "
                f"they are read with U+FFFD in their place (first: {', '.join(places[:3])})"),
                stacklevel=caller_stacklevel())
    return value


def _without_surrogates(value: Any, where: str, places: list[str]) -> Any:
    """`value` with lone surrogates replaced in every string, keys included; `places` gets where they were."""
    if isinstance(value, str):
        if LONE_SURROGATE.search(value):
            places.append(where or "the document")
            return without_lone_surrogates(value)
        return value
    if isinstance(value, list):
        return [_without_surrogates(item, f"{where}[{index}]" if not isinstance(item, dict) or "guid" not in item
                                    else f"{where}[{index}] (guid {item['guid']!r})", places)
                for index, item in enumerate(value)]
    if isinstance(value, dict):
        return {_without_surrogates(key, where, places): _without_surrogates(item, f"{where}.{key}".lstrip("."),
                                                                              places)
                for key, item in value.items()}
    return value


def read_text(path: Path) -> str:
    """A UTF-8 text file, without the byte-order mark some editors put first; undecodable bytes or an
    unreadable file become a DataError."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            return handle.read()
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    except OSError as error:
        raise DataError(path, None, f"cannot read ({error.strerror})") from None


def _not_utf8(path: Path) -> DataError:
    """The DataError of a file that is not UTF-8, placed at its first undecodable byte: found again in the file's
    bytes, since a decoder that reads a file in chunks counts from the start of its chunk."""
    data = path.read_bytes()
    try:
        data.decode("utf-8")
        start = len(data)
    except UnicodeDecodeError as error:
        start = error.start
    line = data.count(b"\n", 0, start) + 1
    return DataError(path, f"line {line}, byte {start}", "not UTF-8 text")


def read_json(path: Path) -> Any:
    """Parse a JSON file; a syntax error becomes a DataError with its line and column."""
    return parse_json_text(read_text(path), path)


GZIP_MAGIC = b"\x1f\x8b"
GUNZIPPED_LIMIT = 1 << 30  # a compressed prediction file may hold at most 1 GiB of text: no gzip bomb fills memory


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def read_text_or_gzip(path: Path) -> str:
    """read_text, or the UTF-8 text inside a gzip file (as results/ keeps its predictions), read up to
    GUNZIPPED_LIMIT bytes."""
    if path.is_dir() or not is_gzip(path):
        return read_text(path)
    try:
        with gzip.open(path, "rb") as handle:
            data = handle.read(GUNZIPPED_LIMIT + 1)
    except (OSError, EOFError, zlib.error) as error:
        raise DataError(path, None, f"not a readable gzip file ({error})") from None
    if len(data) > GUNZIPPED_LIMIT:
        raise DataError(path, None, f"holds more than {GUNZIPPED_LIMIT >> 30} GiB of text once decompressed")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise DataError(path, f"byte {error.start} of the decompressed text", "not UTF-8 text") from None


def read_jsonl(path: Path) -> list[tuple[int, dict]]:
    """The JSON objects of a JSON Lines file with their line numbers (blank lines are skipped)."""
    return jsonl_rows(read_text(path), path)


def jsonl_rows(text: str, path: Path) -> list[tuple[int, dict]]:
    """The JSON objects of JSON Lines text read from `path`, with their line numbers (blank lines skipped)."""
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        row = parse_json_text(line, path, f"line {number}")
        if not isinstance(row, dict):
            raise DataError(path, f"line {number}", "expected a JSON object")
        rows.append((number, row))
    return rows


def looks_like_jsonl(path: Path) -> bool:
    """True when the first non-blank character starts an object that ends on its own line."""
    with open(path, encoding="utf-8-sig", errors="replace") as handle:
        return text_looks_like_jsonl(handle)


def text_looks_like_jsonl(lines: Iterable[str]) -> bool:
    """looks_like_jsonl of lines already read."""
    for line in lines:
        stripped = line.strip()
        if stripped:
            if not stripped.startswith("{"):
                return False
            try:
                json.loads(stripped)
                return True
            except (json.JSONDecodeError, RecursionError):
                return False
    return False


def require(record: dict, key: str, kind: type | tuple, path: Path, where: str) -> Any:
    """record[key], checked for presence and type, else a DataError naming the field."""
    if not isinstance(record, dict):
        raise DataError(path, where, "expected a JSON object")
    if key not in record:
        raise DataError(path, where, f"missing required field '{key}'")
    value = record[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DataError(path, where, f"field '{key}' should be {names}, not {type(value).__name__}")
    return value


def guid_of(record: Any, index: int) -> str:
    """How to name a JSON record in an error: its guid when it has one, else its position."""
    if isinstance(record, dict) and isinstance(record.get("guid"), str):
        return f"guid {record['guid']}"
    return f"record {index}"


def require_list(data: Any, path: Path) -> list:
    if not isinstance(data, list):
        raise DataError(path, None, f"expected a JSON list of records, found {type(data).__name__}")
    return data


@dataclass
class TsvBlock:
    """One sentence of a KLUE TSV file: its '## guid<TAB>text' line and its token rows."""
    guid: str
    text: str
    line: int
    rows: list[tuple[int, list[str]]]


def read_tsv_blocks(path: Path) -> Iterator[TsvBlock]:
    """Sentences of a KLUE NER/DP TSV: '##' lines, tab-separated token rows, blank lines between
    sentences. The last '##' line before a sentence's rows is its 'guid<TAB>text' header; the earlier
    ones are comments (the file starts with a few, such as '## 주석 : ##')."""
    header: tuple[int, str, str] | None = None
    block: TsvBlock | None = None
    try:
        handle = open(path, encoding="utf-8-sig")
    except OSError as error:
        raise DataError(path, None, f"cannot read ({error.strerror})") from None
    with handle:
        try:
            for number, raw in enumerate(handle, start=1):
                line = raw.rstrip("\r\n")
                if line.startswith("##"):
                    if block is not None:
                        yield block
                        block = None
                    guid, _tab, text = line[2:].strip(" ").partition("\t")
                    header = (number, guid.strip(), text)
                elif not line.strip():
                    if block is not None:
                        yield block
                    block, header = None, None
                else:
                    if block is None:
                        if header is None:
                            raise DataError(path, f"line {number}", "token row outside a sentence "
                                            "(expected a '## guid<TAB>text' line first)")
                        block = TsvBlock(header[1], header[2], header[0], [])
                    block.rows.append((number, line.split("\t")))
        except UnicodeDecodeError:
            raise _not_utf8(path) from None
    if block is not None:
        yield block


def file_sha256(path: Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


_PART_SUFFIX = ".part"


@contextlib.contextmanager
def atomic_output(path: Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[Any]:
    """Write `path` through a temporary file beside it, moved over it only when the block succeeds.

    A symlink's target is written (the link stays); a FIFO or a device (``/dev/null``, ``/dev/stdout``) is
    written through, never replaced. A new file gets the permissions that a plain open() gives under the
    umask, and a replaced one keeps its own. A temporary file left by a killed process is removed by the next
    write to the same target.
    """
    path = Path(path)
    binary = "b" in mode
    if path.exists() and not path.is_file():
        if path.is_dir():
            raise DataError(path, None, "is a folder, not a file to write")
        with open(path, mode, encoding=None if binary else encoding) as handle:
            yield handle
        return
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_parts(target)
    temp = target.parent / f".{target.name}.{os.getpid()}{_PART_SUFFIX}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)  # this process's own leftover, or a dead process's with a reused pid
    permissions = stat.S_IMODE(target.stat().st_mode) if target.exists() else None
    descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        if permissions is not None:
            os.chmod(temp, permissions)
        with os.fdopen(descriptor, mode, encoding=None if binary else encoding) as handle:
            yield handle
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def _remove_stale_parts(target: Path) -> None:
    """Delete the temporary files of earlier writes to `target` whose process is gone (killed mid-write).
    A temporary file of a live process is left alone: that process may still move it into place."""
    for part in target.parent.glob(f".{glob.escape(target.name)}.*{_PART_SUFFIX}"):
        owner = part.name[len(target.name) + 2:-len(_PART_SUFFIX)]
        if owner.isdigit() and int(owner) != os.getpid() and _process_alive(int(owner)):
            continue
        with contextlib.suppress(OSError):
            os.unlink(part)


def _process_alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill would end the process there; keep its file rather than guess
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def is_symlink_loop(path: Path) -> bool:
    """True when `path` is a symbolic link that leads back to itself, with no file or folder at its end."""
    try:
        os.stat(path)
    except OSError as error:
        return error.errno == errno.ELOOP
    return False


def check_output_folder(folder: Path) -> None:
    """Fail early, before any training, when files cannot be written in `folder` (or the folders to be
    created there): it lies below a regular file or a loop of symbolic links, or the nearest existing folder
    refuses a new file."""
    folder = Path(folder)
    existing = folder
    while not existing.exists():
        if is_symlink_loop(existing):
            raise DataError(folder, None, f"cannot be written: {existing} is a loop of symbolic links")
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise DataError(folder, None, f"cannot be a folder: {existing} is a file")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        raise DataError(folder, None, f"cannot write there ({error.strerror})") from None


def absolute_path(path: os.PathLike | str) -> Path:
    """`path` made absolute (a user's ~ expanded) without following its symlinks: a path that names a loop of
    symlinks stays a path, and is refused, as missing, where it is opened, instead of failing here."""
    return Path(os.path.abspath(Path(path).expanduser()))


def check_output_file(path: Path, inputs: Sequence[Path | None] = ()) -> None:
    """Fail early when `path` cannot be written: a folder, in a folder that check_output_folder refuses, or one
    of the command's `inputs` (the same file, symlinks resolved), which writing would destroy. A FIFO or a
    device is written through, so it passes."""
    path = Path(path)
    if path.is_dir():
        raise DataError(path, None, "is a folder, not a file to write")
    if is_symlink_loop(path):
        raise DataError(path, None, "is a loop of symbolic links, not a file to write")
    for source in inputs:
        if source is not None and os.path.realpath(source) == os.path.realpath(path):
            raise DataError(path, None, f"is also an input of this command ({source}); writing it would destroy "
                                        "that input: give another output file")
    if path.exists() and not path.is_file():
        return
    check_output_folder(Path(os.path.realpath(path)).parent)


def write_json_atomic(path: Path, data: Any) -> None:
    with atomic_output(path) as handle:
        json.dump(data, handle, ensure_ascii=False, indent=2)
        handle.write("\n")


def write_jsonl_atomic(path: Path, rows: list[dict]) -> None:
    with atomic_output(path) as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
