"""The demo page: refused inputs in one line, and, in a real headless Chromium, a sentence typed and drawn."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

starlette = pytest.importorskip("starlette", reason="the page needs the serve extra (starlette, uvicorn)")

from starlette.testclient import TestClient  # noqa: E402  (after the skip: only with the serve extra)

from baselines.web import app as web_app  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def client(tmp_path):
    return TestClient(web_app.create_app(tmp_path / "no-ready-models"), base_url="http://127.0.0.1:8000")


def test_the_page_loads_and_says_where_its_models_come_from(client):
    page = client.get("/")
    assert page.status_code == 200 and "<select id=\"task\">" in page.text
    assert "준비된 모델이 없어" in page.text and not re.search(r"<(link|script) [^>]*src=", page.text)


@pytest.mark.parametrize("form, message", [
    ({"task": "ner", "text": ""}, "'text' is empty"),
    ({"task": "ner", "text": "가" * 2001}, "at most 2,000"),
    ({"task": "ner", "text": ["not", "text"]}, "'text' must be text"),
    ({"task": "re", "text": "홍길동은 조선 사람", "subject": "임꺽정", "object": "조선"}, "the subject '임꺽정' is not"),
    ({"task": "wos", "dialogue": "안녕하세요\n네"}, "ends with the user"),
    ({"task": "../../etc/passwd"}, "choose one of the tasks"),
])
def test_a_wrong_input_gets_one_line_and_no_prediction(client, form, message):
    answer = client.post("/predict", json=form)
    assert answer.status_code in (400, 422) and message in answer.json()["error"]
    assert answer.json()["error"].startswith("Error: ") and "html" not in answer.json()


def test_a_request_too_large_or_not_json_is_refused(client):
    as_json = {"Content-Type": "application/json"}
    assert client.post("/predict", content=b"{" * 40_000, headers=as_json).status_code == 413
    assert client.post("/predict", content=b"not json", headers=as_json).json()["error"] == (
        "Error: the request is not JSON")


def test_every_task_draws_what_is_typed(client):
    forms = {"ynat": {"text": "손흥민 시즌 10호 골"}, "sts": {"first": "비가 온다.", "second": "비가 내린다."},
             "nli": {"first": "철수는 서울에 갔다.", "second": "철수는 서울에 가지 않았다."},
             "ner": {"text": "이순신 장군"}, "dp": {"text": "나는 밥을 먹었다."},
             "re": {"text": "이순신은 조선의 장군이다.", "subject": "이순신", "subject_type": "PER", "object": "조선",
                    "object_type": "ORG"},
             "mrc": {"passage": "이순신은 1545년 서울에서 태어났다.", "question": "이순신은 어디에서 태어났나?"},
             "wos": {"dialogue": "서울 북쪽 숙소를 알려주세요.\n네.\n저렴한 곳이요."}}
    for task, form in forms.items():
        answer = client.post("/predict", json={"task": task, **form})
        assert answer.status_code == 200, (task, answer.text)
        assert 'class="item"' in answer.json()["html"], task


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (Debian: apt-get install chromium)")
def test_in_a_real_browser_a_typed_sentence_comes_back_with_its_entities_and_its_tree(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="the browser test needs playwright (test extra)")
    environment = {**os.environ, "KLUE_MODELS_DIR": str(tmp_path / "no-ready-models")}
    environment.pop("KLUE_DATA_DIR", None)
    server = subprocess.Popen([sys.executable, "-m", "baselines.cli", "-q", "serve"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=environment)
    try:
        announced = server.stdout.readline()
        address = re.search(r"http://127\.0\.0\.1:\d+/", announced)
        assert address, announced + server.stderr.read() if server.poll() is not None else announced
        with playwright.sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            page = browser.new_page(viewport={"width": 1000, "height": 800})
            page.goto(address.group(0))
            page.select_option("#task", "ner")
            page.fill("#text", "이순신 장군은 1545년 서울에서 태어났다.")
            page.click("#go")
            page.wait_for_selector("#result mark", timeout=120_000)
            marks = page.locator("#result mark").all_inner_texts()
            assert any(text.startswith("이순신") and text.endswith("PS") for text in marks), marks
            page.select_option("#task", "dp")
            page.fill("#text", "나는 어제 친구와 영화를 보았다.")
            page.click("#go")
            page.wait_for_selector("#result svg", timeout=120_000)
            labels = page.eval_on_selector_all("#result svg text", "texts => texts.map(text => text.textContent)")
            assert "보았다." in labels and any(label.startswith("ROOT") for label in labels), labels
            assert page.locator("#result svg path[fill='none']").count() == 4  # 5 eojeols: an arc for each but the root
            page.screenshot(path=str(tmp_path / "page.png"), full_page=True)
            browser.close()
        assert (tmp_path / "page.png").stat().st_size > 10_000
    finally:
        server.terminate()
        server.wait(timeout=30)
