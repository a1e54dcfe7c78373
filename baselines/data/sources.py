"""Where the KLUE files are: data-directory resolution, the official manifest, the shipped sample, download."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Callable, Iterable

from baselines.data import cards
from baselines.data.cards import DerivedFile, OfficialFile, TaskFiles, official_names
from baselines.data.fileio import atomic_output, file_sha256
from baselines.errors import DownloadError, setting

DATA_DIR_VARIABLE = "KLUE_DATA_DIR"


def official_manifest() -> dict[str, OfficialFile]:
    """The official KLUE v1.1 files (size, sha256, URL at the v1.1 commit), from every task's card."""
    return {entry.name: entry for card in cards.all_cards() for entry in card.official_files}


@functools.cache
def derived_manifest() -> dict[str, DerivedFile]:
    """sha256 -> the listed derivation of an official file (see cards.DerivedFile), from every task's card."""
    return {entry.sha256: entry for card in cards.all_cards() for entry in card.derived_files}


def sample_dir(code: str) -> Path:
    """The small sample that a task ships in its package, a data directory of the task's official layout
    (baselines/tasks/<code>/sample/<folder>/...; CC BY-SA 4.0 for KLUE's, see the NOTICE beside it)."""
    return cards.package_folder(code) / cards.SAMPLE_FOLDER


@functools.cache
def _sample_digests() -> dict[int, set[str]]:
    """size -> the sha256s of the files of every task's shipped sample of that size."""
    digests: dict[int, set[str]] = {}
    for path in (path for card in cards.all_cards() for path in sample_dir(card.code).rglob("*")):
        if path.is_file() and path.name != "NOTICE.md":
            digests.setdefault(path.stat().st_size, set()).add(file_sha256(path))
    return digests


def is_sample_file(path: Path) -> bool:
    """True when `path` is byte-identical to a file of the shipped sample (by size, then sha256)."""
    digests = _sample_digests().get(path.stat().st_size)
    return bool(digests) and file_sha256(path) in digests


def user_cache_root() -> Path:
    """The per-user cache of this toolkit ($XDG_CACHE_HOME, else ~/.cache), which downloads and ready models share."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "klue-baselines"


def user_cache_dir() -> Path:
    return user_cache_root() / "data"


def configured_data_dir(data_dir: str | os.PathLike | None) -> Path | None:
    """--data-dir, else $KLUE_DATA_DIR, else None (the caller falls back to the cache dir or the sample)."""
    if data_dir:
        return Path(data_dir)
    if os.environ.get(DATA_DIR_VARIABLE):
        return Path(os.environ[DATA_DIR_VARIABLE])
    return None


def download_dir(data_dir: str | os.PathLike | None) -> Path:
    """Where downloaded files go and are looked for: the configured data dir, else the per-user cache."""
    return configured_data_dir(data_dir) or user_cache_dir()


def _name_variants(folder: str, name: str) -> list[tuple[str, str]]:
    """Where a file may sit under a data dir: the v1.1 layout (folder/name), flat, and the v1 names."""
    old_folder, old_name = folder.replace("-v1.1", "-v1"), name.replace("-v1.1", "-v1")
    return [(folder, name), ("", name), (old_folder, old_name), ("", old_name)]


def find_file(data_dir: Path, task: TaskFiles, name: str) -> Path | None:
    for folder, candidate in _name_variants(task.folder, name):
        path = data_dir / folder / candidate if folder else data_dir / candidate
        if path.is_file():
            return path
    return None


def verify(path: Path, official: OfficialFile) -> bool:
    return path.is_file() and path.stat().st_size == official.size and file_sha256(path) == official.sha256


def files_for(tasks: Iterable[TaskFiles]) -> list[tuple[TaskFiles, OfficialFile]]:
    manifest = official_manifest()
    return [(task, manifest[name]) for task in tasks for name in official_names(task)]


ProgressFactory = Callable[[str, int], contextlib.AbstractContextManager]


def _fetch(url: str, target: Path, official: OfficialFile,
           progress: ProgressFactory | None, timeout: float) -> None:
    digest = hashlib.sha256()
    received = 0
    bar_context = progress(official.name, official.size) if progress else contextlib.nullcontext()
    with urllib.request.urlopen(url, timeout=timeout) as response, atomic_output(target, "wb") as out, \
            bar_context as bar:
        while chunk := response.read(min(1 << 16, official.size + 1 - received)):
            if received + len(chunk) > official.size:
                # A server that sends more than the file's size is stopped here, not read to its end.
                raise DownloadError(f"{official.name}: the server sent more than the expected {official.size} "
                                    f"bytes; stopped reading")
            out.write(chunk)
            digest.update(chunk)
            received += len(chunk)
            if bar is not None:
                bar.update(len(chunk))
        # Checked inside the atomic block so that a bad file never replaces the target.
        if received != official.size:
            raise DownloadError(f"{official.name}: received {received} bytes, expected {official.size}")
        if digest.hexdigest() != official.sha256:
            raise DownloadError(f"{official.name}: sha256 mismatch (got {digest.hexdigest()[:16]}..., "
                                f"expected {official.sha256[:16]}...)")


def download(tasks: Iterable[TaskFiles], data_dir: Path, mirror: str | None = None,
             progress: ProgressFactory | None = None, log: Callable[[str], None] = print,
             timeout: float = 60.0) -> list[Path]:
    """Fetch the official files of `tasks` into data_dir/<folder>/<name>, verifying size and sha256.

    Files already present and verified are skipped. `mirror` replaces the official URL with
    `<mirror>/<folder>/<name>` (a copy with the same layout). A failure raises DownloadError naming the
    file and why, after the other files were tried; no partial file is left behind.
    """
    if mirror is not None and urllib.parse.urlparse(mirror).scheme not in ("http", "https", "file"):
        raise DownloadError(f"{setting('--mirror', 'mirror=')} {mirror!r} is not an http://, https:// or file:// URL")
    written, failures = [], []
    for task, official in files_for(tasks):
        target = data_dir / task.folder / official.name
        if target.exists() and verify(target, official):
            log(f"{official.name}: present and verified, skipped")
            written.append(target)
            continue
        if target.exists():
            log(f"{official.name}: present but does not match the official sha256, fetching again")
        url = f"{mirror.rstrip('/')}/{task.folder}/{official.name}" if mirror else official.url
        try:
            _fetch(url, target, official, progress, timeout)
        except DownloadError as error:
            failures.append(str(error))
            continue
        except urllib.error.HTTPError as error:
            failures.append(f"{official.name}: cannot fetch {url} (HTTP {error.code} {error.reason})")
            continue
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", None) or error
            failures.append(f"{official.name}: cannot fetch {url} ({reason})")
            continue
        log(f"{official.name}: downloaded and verified")
        written.append(target)
    if failures:
        raise DownloadError("; ".join(failures))
    return written
