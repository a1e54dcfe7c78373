"""The demo page: a Starlette app that predicts what a student types and draws it, on 127.0.0.1 only.

Each task's model is the ready one (`train --all`) where it exists, else its default model fitted on the shipped
sample the first time the task is asked for. A request is text only (never a path), bounded in length, and runs
in a worker thread, so a slow prediction never holds the page for anyone else.

Its limits, which hold whatever a request says of itself: a body of at most MAX_BODY_BYTES however it arrives
(a declared length or chunks, read until the limit and no further), each field at most MAX_INPUT_CHARACTERS,
at most PREDICTION_THREADS predictions at once (the others wait their turn), and only requests addressed to the
host it listens on (`Host`, against DNS rebinding), with predictions only for `application/json` from the
page's own origin (against other pages that a student has open). Every refusal is one line of JSON with a 4xx
status."""
from __future__ import annotations

import html
import json
import socket
import threading
from pathlib import Path
from typing import Any, Callable, Collection

from baselines import api
from baselines.data import cards
from baselines.errors import BaselinesError, UsageError
from baselines.runner import ready
from baselines.runner.registry import TASK_CODES

EXTRA_HINT = 'pip install "klue-baselines[serve]"'
MAX_INPUT_CHARACTERS = 2000  # per field: a sentence, a pair, a passage; the toolkit's own bound is far above
MAX_BODY_BYTES = 16 * MAX_INPUT_CHARACTERS  # every field at its limit, in UTF-8 and JSON escapes, fits
PREDICTION_THREADS = 4  # predictions at once; Kiwi uses the cores of each, so more would only queue inside
LOCAL_HOSTS = ("127.0.0.1", "localhost")  # the names of the one address `serve` listens on
ENTITY_TYPES = ("PER", "ORG", "LOC", "DAT", "POH", "NOH")  # what the page's RE form offers, as KLUE's RE marks them
# The page's forms, by the kind of input a task declares (TaskSpec.presentation.page_form): the fields each shows.
PAGE_FORMS = ("text", "pair", "relation", "passage", "dialogue")


def task_names() -> dict[str, str]:
    """Each task as the page's menu names it: its short name and its Korean title, from its card."""
    return {card.code: f"{card.title.split()[0]} {card.title_ko}" for card in cards.all_cards()}


class Models:
    """Each task's model, made once: the ready one, else fitted on the sample on first use (one fit per task, while
    other tasks' requests go on)."""

    def __init__(self, models_dir: Path, log: Callable[[str], None]):
        self.models_dir, self.log = models_dir, log
        self._models: dict[str, Any] = {}
        self._locks = {task: threading.Lock() for task in TASK_CODES}

    def ready_tasks(self) -> list[str]:
        return [task for task in TASK_CODES if ready.model_path(self.models_dir, task).is_file()]

    def get(self, task: str) -> Any:
        with self._locks[task]:
            if task not in self._models:
                self._models[task] = api.class_model(task, self.models_dir, log=self.log)
            return self._models[task]


def _field(form: dict, name: str) -> str:
    value = form.get(name, "")
    if not isinstance(value, str):
        raise UsageError(f"'{name}' must be text")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # JSON's \ud800 escapes decode to lone surrogates, which are no text
        raise UsageError(f"'{name}' holds a lone surrogate, which is not a character: send UTF-8 text") from None
    value = value.strip()
    if not value:
        raise UsageError(f"'{name}' is empty: type something")
    if len(value) > MAX_INPUT_CHARACTERS:
        raise UsageError(f"'{name}' has {len(value):,} characters; the page takes at most {MAX_INPUT_CHARACTERS:,}")
    return value


def _entity_type(form: dict, name: str, default: str) -> str:
    kind = form.get(name) or default
    if kind not in ENTITY_TYPES:
        raise UsageError(f"'{name}' must be one of {', '.join(ENTITY_TYPES)}")
    return kind


def _entity(sentence: str, word: str, kind: str, role: str) -> dict:
    start = sentence.find(word)
    if start < 0:
        raise UsageError(f"the {role} '{word}' is not in the sentence")
    return {"word": word, "start_idx": start, "end_idx": start + len(word) - 1, "type": kind}


def plain_input(task: str, form: dict) -> Any:
    """The task's plain input from the page's fields (text only: nothing in a request names a file), by the kind
    of form the task declares."""
    if task not in TASK_CODES:
        raise UsageError(f"no task '{task}'; the tasks are {', '.join(TASK_CODES)}")
    kind = api.task_spec(task).presentation.page_form
    if kind == "text":
        return _field(form, "text")
    if kind == "pair":
        return (_field(form, "first"), _field(form, "second"))
    if kind == "relation":
        sentence = _field(form, "text")
        return {"sentence": sentence,
                "subject_entity": _entity(sentence, _field(form, "subject"), _entity_type(form, "subject_type", "PER"),
                                          "subject"),
                "object_entity": _entity(sentence, _field(form, "object"), _entity_type(form, "object_type", "ORG"),
                                         "object")}
    if kind == "passage":
        return {"context": _field(form, "passage"), "question": _field(form, "question"), "title": ""}
    if kind == "dialogue":
        turns = []
        for line in _field(form, "dialogue").splitlines():
            if line.strip():
                turns.append({"role": "user" if len(turns) % 2 == 0 else "sys", "text": line.strip()})
        if not turns or turns[-1]["role"] != "user":
            raise UsageError("a dialogue starts with the user and ends with the user, one turn a line")
        return {"guid": "dialogue", "dialogue": turns, "domains": []}
    raise UsageError(f"{task} declares the page form {kind!r}; the page has {', '.join(PAGE_FORMS)}")


def predicted_html(models: Models, task: str, form: dict) -> str:
    """The drawing of the model's prediction for what was typed, with what pushed it where the model tells."""
    given = plain_input(task, form)
    model = models.get(task)
    rows = api.predict(task, model, [given], log=api.quiet)
    # A linear classifier shows what pushed each prediction (baselines.models.explain.LinearExplanation).
    explanation = (api.explain(task, model, top_k=1, inputs=[given], per_input=6)
                   if hasattr(model, "feature_contributions") else None)
    return api.show(task, rows, explanation)._repr_html_()


def page(models: Models) -> str:
    """The page: a task to choose, the fields it needs, and where the drawing appears. No file it fetches."""
    ready_tasks = models.ready_tasks()
    options = "".join(f'<option value="{code}">{html.escape(name)}{" ✓" if code in ready_tasks else ""}</option>'
                      for code, name in task_names().items())
    by_form = {kind: " ".join(code for code in TASK_CODES if api.task_spec(code).presentation.page_form == kind)
               for kind in PAGE_FORMS}
    rest = "" if len(ready_tasks) == len(TASK_CODES) else "; 나머지는 처음 쓸 때 표본으로 학습합니다 (몇 초)"
    source = (f"준비된 모델(✓): {', '.join(ready_tasks)}{rest}."
              if ready_tasks else "준비된 모델이 없어, 과제마다 처음 쓸 때 표본으로 학습합니다 (몇 초). "
                                  "수업 전에 klue-baselines train --all 로 준비할 수 있습니다.")
    filled = PAGE.replace("{OPTIONS}", options).replace("{SOURCE}", html.escape(source)).replace(
        "{LIMIT}", str(MAX_INPUT_CHARACTERS))
    for kind, codes in by_form.items():
        filled = filled.replace("{TASKS:" + kind + "}", codes)
    return filled


PAGE = """<!DOCTYPE html>
<html lang="ko"><head><meta charset="utf-8"><title>klue-baselines</title>
<style>
body{font-family:'Noto Sans KR','Malgun Gothic','Apple SD Gothic Neo',sans-serif;max-width:1000px;margin:24px auto;
padding:0 16px}
textarea,input,select{font:inherit;font-size:15px;width:100%;box-sizing:border-box;margin:4px 0}
textarea{height:4.5em}.row{display:flex;gap:8px}.row>*{flex:1}button{font-size:16px;padding:6px 20px}
#error{color:#b00;margin:8px 0}#source{color:#666;font-size:13px}.fields{display:none}.fields.on{display:block}
</style></head><body>
<h1>klue-baselines</h1>
<p id="source">{SOURCE}</p>
<select id="task">{OPTIONS}</select>
<div class="fields" data-tasks="{TASKS:text} {TASKS:relation}"><textarea id="text" maxlength="{LIMIT}"
 placeholder="문장을 입력하세요">이순신 장군은 1545년 서울 건천동에서 태어났다.</textarea></div>
<div class="fields row" data-tasks="{TASKS:relation}"><input id="subject" placeholder="주어 개체 (문장 속 그대로)" value="이순신">
<select id="subject_type"><option>PER</option><option>ORG</option><option>LOC</option><option>DAT</option>
<option>POH</option><option>NOH</option></select>
<input id="object" placeholder="목적어 개체" value="서울"><select id="object_type"><option>LOC</option><option>PER</option>
<option>ORG</option><option>DAT</option><option>POH</option><option>NOH</option></select></div>
<div class="fields" data-tasks="{TASKS:pair}"><textarea id="first" maxlength="{LIMIT}"
 placeholder="첫 문장 (NLI: 전제)">철수는 어제 서울에 갔다.</textarea><textarea id="second" maxlength="{LIMIT}"
 placeholder="둘째 문장 (NLI: 가설)">철수는 서울에 가지 않았다.</textarea></div>
<div class="fields" data-tasks="{TASKS:passage}"><textarea id="passage" maxlength="{LIMIT}" placeholder="지문"
 style="height:8em">이순신은 1545년 서울 건천동에서 태어났다. 그는 임진왜란 때 수군을 이끌었다.</textarea>
<input id="question" placeholder="질문" value="이순신은 어디에서 태어났나?"></div>
<div class="fields" data-tasks="{TASKS:dialogue}"><textarea id="dialogue" maxlength="{LIMIT}" style="height:8em"
 placeholder="한 줄에 한 발화: 사용자, 시스템, 사용자 ...">서울 북쪽에 있는 저렴한 숙소를 알려주세요.
네, 원하시는 숙소 종류가 있나요?
게스트하우스면 좋겠어요.</textarea></div>
<button id="go">예측하기</button>
<div id="error"></div>
<div id="result"></div>
<script>
const task = document.getElementById("task");
function shown() {
  for (const block of document.querySelectorAll(".fields"))
    block.classList.toggle("on", block.dataset.tasks.split(" ").includes(task.value));
}
task.addEventListener("change", shown);
shown();
document.getElementById("go").addEventListener("click", async () => {
  const form = {task: task.value};
  for (const id of ["text", "subject", "subject_type", "object", "object_type", "first", "second", "passage",
                    "question", "dialogue"]) form[id] = document.getElementById(id).value;
  document.getElementById("error").textContent = "";
  document.getElementById("result").innerHTML = "…";
  const answer = await fetch("/predict", {method: "POST", headers: {"Content-Type": "application/json"},
                                          body: JSON.stringify(form)});
  const body = await answer.json();
  document.getElementById("result").innerHTML = body.html || "";
  document.getElementById("error").textContent = body.error || "";
});
</script></body></html>
"""


def refusal(status: int, message: str) -> Any:
    """One line of JSON for the page to show, with its status; in ASCII escapes, so that no text in the message
    (what a request sent) can fail to encode."""
    from starlette.responses import Response

    return Response(json.dumps({"error": f"Error: {message}"}, ensure_ascii=True), status_code=status,
                    media_type="application/json")


def host_refused(headers: Any, hosts: Collection[str]) -> str | None:
    """Why a request is not for this page, or None: its `Host` must name one of `hosts` (any port), as a
    browser sends it for the address it opened; a page on another name that resolves here (DNS rebinding)
    sends that name."""
    host = headers.get("host", "")
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return None if name in hosts else f"this page answers requests for {', '.join(hosts)}, not {host!r}"


def origin_refused(headers: Any) -> tuple[int, str] | None:
    """(status, why) when a prediction request is not the page's own, else None: JSON (415 otherwise), from the
    page's origin (403 otherwise: a browser names the page that sends a POST in `Origin` and `Sec-Fetch-Site`;
    another page can send text/plain without asking, never JSON to another origin)."""
    media_type = headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        return 415, f"a prediction is asked for in application/json, not {media_type or 'a body of no type'}"
    origin = headers.get("origin")
    if origin is not None and origin != f"http://{headers.get('host', '')}":
        return 403, f"a prediction is asked for by the page itself, not by {origin!r}"
    if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return 403, "a prediction is asked for by the page itself, not by another site"
    return None


async def bounded_body(request: Any, limit: int) -> bytes | None:
    """The request's body, or None when it is longer than `limit` bytes: read as it arrives, declared length or
    chunks, and no further than the limit."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def parsed_form(body: bytes) -> tuple[Any, str | None]:
    """(the JSON object of a request body, None), or (None, why it is not one)."""
    try:
        form = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "the request is not UTF-8"
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python's stack
        return None, "the request is not JSON"
    if not isinstance(form, dict) or not isinstance(form.get("task"), str) or form["task"] not in TASK_CODES:
        return None, f"choose one of the tasks {', '.join(TASK_CODES)}"
    return form, None


def create_app(models_dir: Path | None = None, log: Callable[[str], None] = api.quiet,
               hosts: Collection[str] = LOCAL_HOSTS) -> Any:
    """The Starlette app of the page (the `serve` extra), answering requests addressed to `hosts`."""
    try:
        import anyio
        from starlette.applications import Starlette
        from starlette.exceptions import HTTPException
        from starlette.middleware import Middleware
        from starlette.middleware.base import BaseHTTPMiddleware
        from starlette.requests import Request
        from starlette.responses import HTMLResponse, JSONResponse
        from starlette.routing import Route
    except ImportError:
        raise api.UsageError(f"the page needs Starlette and uvicorn: {EXTRA_HINT}") from None
    models = Models(ready.models_dir(models_dir), log)
    predictions = anyio.CapacityLimiter(PREDICTION_THREADS)

    async def index(_request: Request) -> HTMLResponse:
        return HTMLResponse(page(models))

    async def predict(request: Request) -> Any:
        refused = origin_refused(request.headers)
        if refused:
            return refusal(*refused)
        body = await bounded_body(request, MAX_BODY_BYTES)
        if body is None:
            return refusal(413, f"the request is larger than the page takes ({MAX_BODY_BYTES:,} bytes)")
        form, problem = parsed_form(body)
        if problem:
            return refusal(400, problem)
        try:
            drawn = await anyio.to_thread.run_sync(predicted_html, models, form["task"], form, limiter=predictions)
        except (BaselinesError, ValueError) as error:  # one line for the student, never a traceback
            return refusal(422, str(error))
        return JSONResponse({"html": drawn})

    async def addressed_here(request: Request, call_next: Callable) -> Any:
        problem = host_refused(request.headers, hosts)
        return refusal(400, problem) if problem else await call_next(request)

    async def http_error(_request: Request, error: HTTPException) -> Any:
        return refusal(error.status_code, error.detail)

    async def failure(_request: Request, error: Exception) -> Any:  # a fault of the page's own, still one line
        return refusal(500, f"the page failed on this input ({type(error).__name__}); the console has the details")

    app = Starlette(routes=[Route("/", index), Route("/predict", predict, methods=["POST"])],
                    middleware=[Middleware(BaseHTTPMiddleware, dispatch=addressed_here)],
                    exception_handlers={HTTPException: http_error, Exception: failure})
    app.state.models = models
    return app


def serve(port: int = 0, models_dir: Path | None = None, log: Callable[[str], None] = api.quiet,
          announce: Callable[[str], None] = print) -> None:
    """Serve the page on 127.0.0.1 (never another interface) at `port`, a free one for 0, announcing its address
    through `announce`, until interrupted."""
    try:
        import uvicorn
    except ImportError:
        raise api.UsageError(f"the page needs Starlette and uvicorn: {EXTRA_HINT}") from None
    app = create_app(models_dir, log)
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind(("127.0.0.1", port))
    except OSError as error:
        raise api.UsageError(f"cannot listen on 127.0.0.1:{port} ({error.strerror})") from None
    address = f"http://127.0.0.1:{listening.getsockname()[1]}/"
    ready_tasks = app.state.models.ready_tasks()
    announce(f"Serving the demo page on {address} (Ctrl+C to stop); ready models: "
             f"{', '.join(ready_tasks) or 'none, each task is fitted on the sample when first asked'}")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    server.run(sockets=[listening])
