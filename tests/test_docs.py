"""The README and docs/ say what the code does: formats, commands, runnable examples, figures that results/ holds;
and the site builds."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from baselines.runner.registry import TASK_CODES, get_task

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = {path.relative_to(REPO / "docs").as_posix(): path.read_text(encoding="utf-8")
        for path in sorted((REPO / "docs").rglob("*.md"))}
README_LINES_AT_MOST = 200  # a front page; the rest is in docs/


def code_blocks(text: str, language: str = "") -> list[str]:
    """The code blocks of a page in `language`, those indented in a list item too, without their indent."""
    blocks = re.findall(rf"^([ \t]*)```{language}\n(.*?)^\1```", text, flags=re.S | re.M)
    return ["\n".join(line[len(indent):] for line in block.splitlines()) + "\n" for indent, block in blocks]


def test_the_readme_is_a_front_page_that_leads_to_the_docs():
    assert len(README.splitlines()) <= README_LINES_AT_MOST
    for target in re.findall(r"\]\(((?:docs|lessons)/[^)#]*)", README):
        assert (REPO / target).exists(), target
    for page in ("docs/teachers.md", "docs/tasks/ner.md", "docs/results/index.md", "lessons/"):
        assert f"]({page})" in README, page


@pytest.mark.parametrize("task", TASK_CODES)
def test_prediction_format_of_every_task_is_documented(task):
    assert get_task(task).prediction_example in DOCS["guide/predictions.md"]


def test_ci_runs_the_readme_commands():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install -e ".[test]"' in README and 'pip install -e ".[test]"' in ci
    assert "python -m pytest" in README and "python -m pytest" in ci


def test_every_cli_command_is_documented():
    from baselines.cli import main

    for name in main.commands:
        assert f"`{name}" in DOCS["reference/cli.md"], name


def test_every_link_between_pages_leads_to_a_page():
    for name, text in DOCS.items():
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", text):
            assert (REPO / "docs" / name).parent.joinpath(target).resolve().is_file(), (name, target)


def _figures_in_results() -> set[str]:
    """Every number that results/ holds, as the pages print it: as written, and JSON numbers at 1 to 4 decimals,
    as they are and x100."""
    known: set[str] = set()

    def walk(value):
        if isinstance(value, bool):
            return
        if isinstance(value, (int, float)):
            for decimals in (1, 2, 3, 4):
                known.update({f"{value:.{decimals}f}", f"{value * 100:.{decimals}f}"})
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in (REPO / "results").rglob("*"):
        if path.suffix in (".json", ".md"):
            text = path.read_text(encoding="utf-8")
            known.update(re.findall(r"\d+\.\d+", text))
            if path.suffix == ".json":
                walk(json.loads(text))
    return known


def quoted_figures(text: str) -> list[str]:
    """The measured figures a page quotes: numbers with two decimals in its prose (not in code or examples, not a
    Python version, not a signed difference between two figures that are quoted themselves)."""
    prose = re.sub(r"^[ \t]*```.*?^[ \t]*```", "", text, flags=re.S | re.M)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    prose = re.sub(r"Python \d+\.\d+", "", prose)
    return re.findall(r"(?<![\w.+\-−])\d+\.\d\d(?![\d.])", prose)


def test_no_page_quotes_a_figure_that_no_results_file_holds():
    known = _figures_in_results()
    unknown = {name: sorted(set(figure for figure in quoted_figures(text) if figure not in known))
               for name, text in {"README.md": README, **DOCS}.items()}
    assert not {name: figures for name, figures in unknown.items() if figures}


def test_the_figure_check_catches_a_figure_made_up():
    assert quoted_figures("YNAT macro F1 is 987.65 here (+1.25), `x = 12.34` in code, on Python 3.11.") == ["987.65"]
    assert "987.65" not in _figures_in_results()


def test_the_getting_started_python_runs_on_the_sample(capsys, monkeypatch):
    monkeypatch.delenv("KLUE_DATA_DIR", raising=False)
    for block in code_blocks(DOCS["getting-started.md"], "python") + code_blocks(README, "python"):
        exec(compile(block, "docs/getting-started.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert 0 <= float(printed[1]) <= 1 and abs(float(printed[1]) * 100 - float(printed[2])) < 1e-9


# Shell lines of Getting started and For teachers that need what a test does not have: the network, the official
# data, a shell of its own, or a server that runs until stopped.
NOT_RUN_HERE = ("pip ", "git ", "cd ", "jupyter ", "python -m pytest", "klue-baselines download",
                "klue-baselines serve", "--data-dir ~/klue")


@pytest.mark.parametrize("page", ["getting-started.md", "teachers.md"])
def test_the_commands_of_the_first_pages_run_on_the_sample(page, tmp_path, monkeypatch):
    from baselines.cli import main
    monkeypatch.delenv("KLUE_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    lines = [line.split("#")[0].strip() for block in code_blocks(DOCS[page]) for line in block.splitlines()]
    commands = [line for line in lines if line.startswith("klue-baselines") and not any(
        skipped in line for skipped in NOT_RUN_HERE)]
    assert commands, page
    for command in commands:
        result = CliRunner().invoke(main, shlex.split(command)[1:])
        assert result.exit_code == 0, (command, result.output)


def test_the_api_module_docstring_lists_every_public_function():
    from baselines import api
    public = {name for name, value in vars(api).items() if callable(value) and not name.startswith("_")
              and getattr(value, "__module__", "") == "baselines.api"}
    listed = set(re.findall(r"`(\w+)`", api.__doc__))
    assert public <= listed, sorted(public - listed)


def test_the_docs_site_builds_offline(tmp_path):
    pytest.importorskip("mkdocs", reason="building the docs needs the docs extra (mkdocs)")
    environment = {**os.environ, "KLUE_DOCS_EXECUTE": "false",  # the lessons run in test_lessons.py
                   "NO_PROXY": "*", "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                           cwd=REPO, capture_output=True, text=True, env=environment)
    assert built.returncode == 0, built.stderr[-3000:]
    site = tmp_path / "site"
    # The offline plugin makes file URLs (page.html), so that the site opens from a folder.
    assert (site / "teachers.html").is_file() and (site / "tasks" / "ner.html").is_file()
    assert "api.class_model" in (site / "lessons" / "04-ner-entities.html").read_text(encoding="utf-8")
    assert "klue-baselines train" in (site / "reference" / "cli.html").read_text(encoding="utf-8")
    assert "class_model" in (site / "reference" / "api.html").read_text(encoding="utf-8")
