"""`download` against an HTTP server on 127.0.0.1 that serves copies of the official files."""
from __future__ import annotations

import functools
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from baselines.cli import main


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # keep the test output clean
        pass


@pytest.fixture
def mirror(tmp_path, shared_klue):
    """A mirror holding the byte-identical NLI files, the RE relation list, and a corrupted NLI dev copy
    under a second name; the server stops with the test."""
    root = tmp_path / "mirror"
    (root / "klue-nli-v1.1").mkdir(parents=True)
    for name in ("klue-nli-v1.1_train.json",):
        shutil.copyfile(shared_klue / "klue-nli-v1.1" / name, root / "klue-nli-v1.1" / name)
    data = bytearray((shared_klue / "klue-nli-v1.1/klue-nli-v1.1_dev.json").read_bytes())
    data[1000] ^= 0x01  # same size, different content
    (root / "klue-nli-v1.1/klue-nli-v1.1_dev.json").write_bytes(bytes(data))
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def download(target: Path, url: str, *tasks: str):
    return CliRunner().invoke(main, ["--quiet", "download", *tasks, "--data-dir", str(target), "--mirror", url])


def leftovers(target: Path) -> list[str]:
    return sorted(p.name for p in target.rglob("*") if p.is_file())


def test_hash_mismatch_leaves_nothing_and_names_the_file(mirror, tmp_path, shared_klue):
    root, url = mirror
    target = tmp_path / "data"
    result = download(target, url, "nli")
    assert result.exit_code == 1
    assert "klue-nli-v1.1_dev.json: sha256 mismatch" in result.output
    # The good file arrived; the corrupted one left nothing behind, not even a temporary file.
    assert leftovers(target) == ["klue-nli-v1.1_train.json"]

    shutil.copyfile(shared_klue / "klue-nli-v1.1/klue-nli-v1.1_dev.json", root / "klue-nli-v1.1/klue-nli-v1.1_dev.json")
    result = download(target, url, "nli")
    assert result.exit_code == 0, result.output
    assert leftovers(target) == ["klue-nli-v1.1_dev.json", "klue-nli-v1.1_train.json"]

    # A second run finds both verified and fetches nothing: the server no longer has the files.
    shutil.rmtree(root / "klue-nli-v1.1")
    result = CliRunner().invoke(main, ["download", "nli", "--data-dir", str(target), "--mirror", url])
    assert result.exit_code == 0, result.output
    assert result.output.count("present and verified, skipped") == 2


def test_network_error_names_the_file(mirror, tmp_path):
    _root, url = mirror
    target = tmp_path / "data"
    result = download(target, url, "re")
    assert result.exit_code == 1
    assert "relation_list.json: cannot fetch" in result.output and "404" in result.output
    assert leftovers(target) == []


def test_unreachable_server(tmp_path):
    # Port 9 on the loopback interface: nothing listens there, so the connection is refused at once.
    result = download(tmp_path / "data", "http://127.0.0.1:9", "wos")
    assert result.exit_code == 1 and "ontology.json: cannot fetch" in result.output
    assert not (tmp_path / "data").exists() or leftovers(tmp_path / "data") == []
