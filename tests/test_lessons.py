"""Every lesson runs from top to bottom on the shipped sample, offline, without an error."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

LESSONS = sorted((Path(__file__).resolve().parent.parent / "lessons").glob("*.ipynb"))
# A cell that runs this long has hung: a guard, not a speed check (a lesson's time is measured apart, on a quiet
# machine; the suite runs beside other work).
CELL_TIMEOUT_SECONDS = 600


def test_there_is_a_lesson_for_kiwi_and_for_every_task():
    from baselines.runner.registry import TASK_CODES
    names = [path.stem for path in LESSONS]
    assert names[0] == "00-kiwi-morphemes"
    assert [name.split("-")[1] for name in names[1:]] == list(TASK_CODES)


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.stem)
def test_a_lesson_is_committed_without_outputs_and_written_in_korean(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        assert cell["cell_type"] != "code" or (not cell["outputs"] and cell["execution_count"] is None), path.name
    prose = "".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    assert sum("\uac00" <= char <= "\ud7a3" for char in prose) > 200, path.name
    assert any("연습 문제" in "".join(cell["source"]) for cell in notebook["cells"]), path.name  # an exercise


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.stem)
def test_a_lesson_runs_from_top_to_bottom(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="executing lessons needs the test extra (nbformat)")
    nbclient = pytest.importorskip("nbclient", reason="executing lessons needs the test extra (nbclient)")
    pytest.importorskip("ipykernel", reason="executing lessons needs the test extra (ipykernel)")
    monkeypatch.delenv("KLUE_DATA_DIR", raising=False)  # the lesson uses the shipped sample, as a class does
    monkeypatch.setenv("KLUE_MODELS_DIR", str(tmp_path / "no-ready-models"))  # and fits its models on it
    notebook = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(notebook, timeout=CELL_TIMEOUT_SECONDS, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs
              if output.output_type == "error"]
    assert not errors
    checks = [output for cell in notebook.cells[-1:] for output in cell.outputs if output.output_type == "stream"]
    assert checks and "아직 답을 쓰지 않았습니다" in checks[0]["text"]  # the exercise's check ran
