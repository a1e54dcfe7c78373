"""Hostile requests to the demo page: bodies bounded however they arrive, requests only for its own host and
from its own origin, and every refusal one line of JSON with a 4xx status, never a traceback or a 500."""
from __future__ import annotations

import asyncio
import json
import socket
import threading
import warnings

import pytest

pytest.importorskip("starlette", reason="the page needs the serve extra (starlette, uvicorn)")

from starlette.testclient import TestClient  # noqa: E402  (after the skip: only with the serve extra)

from baselines.web import app as web_app  # noqa: E402

HOST = "127.0.0.1:8000"
SAME_ORIGIN = {"Origin": f"http://{HOST}", "Sec-Fetch-Site": "same-origin"}


@pytest.fixture
def client(tmp_path):
    return TestClient(web_app.create_app(tmp_path / "no-ready-models"), base_url=f"http://{HOST}",
                      raise_server_exceptions=False)


def assert_one_line_refusal(answer, status: int, message: str) -> None:
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error.startswith("Error: ") and message in error and "\n" not in error and "html" not in answer.json()


class FakeRequest:
    """A request whose body arrives in `chunks` chunks of `size` bytes, with no declared length; counts what
    was read."""

    def __init__(self, chunks: int, size: int):
        self.headers, self.chunks, self.size, self.read = {}, chunks, size, 0

    async def stream(self):
        for _ in range(self.chunks):
            self.read += 1
            yield b"x" * self.size


def test_a_chunked_body_is_read_no_further_than_the_limit():
    request = FakeRequest(chunks=100_000, size=1 << 16)  # 6.5 GB, had it been read whole
    assert asyncio.run(web_app.bounded_body(request, web_app.MAX_BODY_BYTES)) is None
    assert request.read == web_app.MAX_BODY_BYTES // (1 << 16) + 1
    small = FakeRequest(chunks=3, size=10)
    assert asyncio.run(web_app.bounded_body(small, 100)) == b"x" * 30


def test_a_declared_length_over_the_limit_or_not_a_number_is_refused_unread():
    for declared in (str(web_app.MAX_BODY_BYTES + 1), "-1", "1e9", "12 34"):
        request = FakeRequest(chunks=5, size=10)
        request.headers = {"content-length": declared}
        assert asyncio.run(web_app.bounded_body(request, web_app.MAX_BODY_BYTES)) is None and request.read == 0


def test_a_chunked_request_to_the_running_server_gets_413_while_it_is_still_sending(tmp_path):
    """On a real uvicorn server: a body sent in chunks with no length is refused once past the limit, and the
    server goes on answering."""
    uvicorn = pytest.importorskip("uvicorn")
    app = web_app.create_app(tmp_path / "no-ready-models")
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            threading.Event().wait(0.01)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
            # Nine chunks of 4,096 bytes, 36,864 in all, and the body left open: the server must answer before the
            # body ends, once it has read past its limit (all that was sent: nothing is left unread to reset on).
            chunk = b"x" * 4096
            head = (f"POST /predict HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                    f"Transfer-Encoding: chunked\r\n\r\n").encode()
            connection.sendall(head + b"%x\r\n%s\r\n" % (len(chunk), chunk) * 9)
            answer = b""
            while b"}" not in answer:
                received = connection.recv(65536)
                if not received:
                    break
                answer += received
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert b'"error": "Error: the request is larger than the page takes' in answer
        with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
            connection.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
            assert connection.recv(100).startswith(b"HTTP/1.1 200")
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8000", "127.0.0.1.attacker.example",
                                  "192.168.0.10:8000", ""])
def test_a_request_for_another_host_is_refused(client, host):
    """DNS rebinding: a page on another name that resolves to 127.0.0.1 sends its own name as Host."""
    for answer in (client.get("/", headers={"Host": host}),
                   client.post("/predict", json={"task": "ner", "text": "가"}, headers={"Host": host})):
        assert_one_line_refusal(answer, 400, "this page answers requests for 127.0.0.1, localhost")


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost:8000", "127.0.0.1"])
def test_the_page_answers_for_the_names_of_its_own_address(client, host):
    assert client.get("/", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("headers, content, status, message", [
    ({"Content-Type": "text/plain"}, '{"task": "ner", "text": "가"}', 415, "not text/plain"),
    ({}, '{"task": "ner", "text": "가"}', 415, "not a body of no type"),
    ({"Content-Type": "application/x-www-form-urlencoded"}, "task=ner&text=x", 415, "application/json"),
    ({"Content-Type": "application/json", "Origin": "http://attacker.example"}, '{"task": "ner", "text": "가"}',
     403, "not by 'http://attacker.example'"),
    ({"Content-Type": "application/json", "Origin": "null"}, '{"task": "ner", "text": "가"}', 403, "not by 'null'"),
    ({"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, '{"task": "ner", "text": "가"}', 403,
     "not by another site"),
])
def test_a_prediction_from_another_page_is_refused_before_any_model_is_made(client, headers, content, status,
                                                                             message):
    """Any page a student opens can POST text/plain (no preflight) or name itself in Origin: refused, and no
    model is fitted for it."""
    assert_one_line_refusal(client.post("/predict", content=content, headers=headers), status, message)
    assert client.app.state.models._models == {}


def test_the_page_itself_may_predict(client):
    answer = client.post("/predict", json={"task": "ynat", "text": "손흥민 시즌 10호 골"}, headers=SAME_ORIGIN)
    assert answer.status_code == 200 and 'class="item"' in answer.json()["html"]


@pytest.mark.parametrize("content, message", [
    ('{"task": "ner", "text": "\\ud800"}', "'text' holds a lone surrogate"),
    ('{"task": "nli", "first": "가", "second": "\\udfff\\ud800"}', "'second' holds a lone surrogate"),
    ('{"task": "re", "text": "가나", "subject": "가", "object": "나", "subject_type": ["PER"]}',
     "'subject_type' must be one of PER"),
    pytest.param("[" * 10_000 + "]" * 10_000, "the request is not JSON", id="nested-array"),
    pytest.param('{"task": ' + "[" * 5_000 + "]" * 5_000 + "}", "the request is not JSON", id="nested-task"),
    ('{"task": {"nested": 1}}', "choose one of the tasks"),
    (b'{"task": "ner", "text": "\xff"}', "the request is not UTF-8"),
])
def test_malformed_json_gets_one_line_with_a_4xx(client, content, message):
    answer = client.post("/predict", content=content, headers={"Content-Type": "application/json"})
    assert 400 <= answer.status_code < 500
    assert_one_line_refusal(answer, answer.status_code, message)


def test_unknown_paths_and_methods_are_one_line_json_too(client):
    assert_one_line_refusal(client.get("/etc/passwd"), 404, "Not Found")
    assert_one_line_refusal(client.get("/predict"), 405, "Method Not Allowed")


def test_a_fault_of_the_page_is_still_one_line_of_json(client, monkeypatch):
    def broken(*_args):
        raise KeyError("a fault of the page's own")

    monkeypatch.setattr(web_app, "predicted_html", broken)
    answer = client.post("/predict", json={"task": "ner", "text": "가"})
    assert answer.status_code == 500 and answer.json()["error"] == (
        "Error: the page failed on this input (KeyError); the console has the details")


def test_predictions_share_the_analysis_cache_across_worker_threads(tmp_path):
    """The page predicts in worker threads: the cache's one SQLite connection serves them all (it had been
    switched off for the server's life, made in one thread and used from another)."""
    from features.cache import AnalysisCache
    from features.morphemes import Analysis

    cache = AnalysisCache(tmp_path, "options")
    key = cache.key("가")
    analysis = Analysis("가", ["가"], ["NNG"], [0], [1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache.put_many([(key, analysis)])
        found = []
        workers = [threading.Thread(target=lambda: found.append(cache.get_many({"가": key}))) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert not cache.disabled and [list(result) for result in found] == [["가"]] * 4


def test_the_limits_are_stated_on_serve_help():
    from click.testing import CliRunner

    from baselines.cli import main

    shown = " ".join(CliRunner().invoke(main, ["serve", "--help"]).output.split())
    for limit in (f"{web_app.MAX_BODY_BYTES:,} bytes", f"{web_app.MAX_INPUT_CHARACTERS:,} characters",
                  f"{web_app.PREDICTION_THREADS} predictions at once"):
        assert limit in shown, shown
    assert json.loads(web_app.refusal(400, "\ud800").body)["error"] == "Error: \ud800"
