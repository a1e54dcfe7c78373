"""The README and docs/ say what the code does: formats, commands, runnable examples, figures that results/ holds;
and the site builds."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from baselines.runner.registry import TASK_CODES, get_task
from baselines.runner.result_files import PROTOCOLS
from helpers import shared_folder
import quoted_figures

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
    assert get_task(task).scoring.prediction_example in DOCS["guide/predictions.md"]


def test_ci_runs_the_readme_commands():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install -e ".[test]"' in README and 'pip install -e ".[test]"' in ci
    assert "python -m pytest" in README and "python -m pytest" in ci


def test_every_cli_command_is_documented():
    from baselines.cli import main

    for name in main.list_commands(None):
        assert f"`{name}" in DOCS["reference/cli.md"], name


def test_every_link_between_pages_leads_to_a_page():
    for name, text in DOCS.items():
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", text):
            assert (REPO / "docs" / name).parent.joinpath(target).resolve().is_file(), (name, target)


def figure_problems(page: str, text: str) -> list[str]:
    """What is wrong with the figures that a page's prose quotes, against their ties in quoted_figures.json: a
    figure that is not its tie's, a tie whose record holds another value, a figure with no tie."""
    ties = json.loads(quoted_figures.LEDGER.read_text(encoding="utf-8")).get(page, [])
    figures = [figure for figure, _context in quoted_figures.quoted(text)]
    problems = [f"{page}: figure {position + 1} is {figure}, its tie says {tie[0]}"
                for position, (figure, tie) in enumerate(zip(figures, ties)) if figure != tie[0]]
    if len(figures) != len(ties):
        problems.append(f"{page}: {len(figures)} figures, {len(ties)} ties (run python tests/quoted_figures.py)")
    for tie in ties:
        if tie[1] is None:
            # a measurement must have its record; only a figure that is not one (a version, a setting) may stand
            # without, with that said
            if not str(tie[2]).startswith("not a measurement: "):
                problems.append(f"{page}: {tie[0]} has no record in results/ and is not said to be no measurement")
        elif quoted_figures.value_of(tie) != tie[0]:
            problems.append(f"{page}: {tie[0]} is tied to {tie[1]} {tie[2]}, which holds "
                            f"{quoted_figures.value_of(tie)}")
    return problems


def test_every_quoted_figure_is_the_value_of_the_record_it_is_tied_to():
    """Every measured figure in the prose of the README and docs/ stands in tests/quoted_figures.json with the file
    and key of results/ that hold it (or, for the few that are not measurements, with what they are); the tables
    between generated marks are the next test's."""
    problems = [problem for page, text in quoted_figures.pages().items() for problem in figure_problems(page, text)]
    assert not problems, "\n".join(problems)


def test_a_quoted_figure_moved_by_a_hundredth_fails():
    """Each figure of every page, moved by 0.01 (up, or down from 0.99 and over), fails the check."""
    for page, text in quoted_figures.pages().items():
        for match in quoted_figures.FIGURE.finditer(quoted_figures.prose(text)):
            figure = match.group()
            moved = f"{float(figure) + (0.01 if float(figure) < 99 else -0.01):.2f}"
            # the figure's own place in the page: the same count of figures before it, as in the prose
            place = [m.start() for m in quoted_figures.FIGURE.finditer(text) if m.group() == figure]
            shifted = [text[:start] + moved + text[start + len(figure):] for start in place]
            assert any(figure_problems(page, changed) for changed in shifted), (page, figure)
            assert all(figure_problems(page, changed) for changed in shifted
                       if quoted_figures.prose(changed) != quoted_figures.prose(text)), (page, figure)


def test_the_generated_tables_are_what_results_makes_of_them(tmp_path):
    """The tables between generated marks in the README and docs/ are the ones that the committed results/ make:
    regenerated into a copy, every page comes out as it is."""
    from baselines.runner import generated_docs

    shutil.copytree(REPO / "results", tmp_path / "results")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    generated_docs.regenerate_readme(tmp_path / "results")
    for page in quoted_figures.pages():
        assert (tmp_path / page).read_text(encoding="utf-8") == (REPO / page).read_text(encoding="utf-8"), page


def test_the_figure_check_reads_prose_only():
    text = ("YNAT macro F1 is 987.65 here (+1.25), `x = 12.34` in code, on Python 3.11, and 1.25.\n"
            "<!-- results:start -->\n| 55.55 |\n<!-- results:end -->")
    assert [figure for figure, _ in quoted_figures.quoted(text)] == ["987.65", "1.25"]
    assert figure_problems("README.md", text)


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


def test_every_protocol_in_results_is_one_that_the_protocol_tables_define():
    recorded = {match for path in (REPO / "results").rglob("*.json")
                for match in re.findall(r'"protocol": "([^"]*)"', path.read_text(encoding="utf-8"))}
    assert recorded and recorded <= set(PROTOCOLS), recorded - set(PROTOCOLS)


def test_the_data_readme_names_only_protocols_of_ours():
    data_readme = shared_folder("klue", "the data README's protocol table") / "README.md"
    table = data_readme.read_text(encoding="utf-8").split("## Evaluation protocols", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"\| `([a-z+-]+)` \|", table))
    assert named and named <= set(PROTOCOLS), named - set(PROTOCOLS)


def test_the_researchers_page_runs_on_files_shaped_as_the_tools_write_them(tmp_path, monkeypatch, capsys):
    """Its commands on the shipped samples (for ~/klue), with our rows recorded on it, a predict_results_nli.txt as
    run_glue.py writes it and a predictions.txt as run_ner.py writes it (no tag for a space)."""
    from baselines import api
    from baselines.cli import main
    from baselines.data.sources import sample_dir
    monkeypatch.delenv("KLUE_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    recorded = CliRunner().invoke(main, ["-q", "run", "nli", "ner", "--results-dir", "results"])
    assert recorded.exit_code == 0, recorded.output
    nli = api.load("nli", sample_dir("nli") / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json")
    names = ("entailment", "neutral", "contradiction")
    with open("predict_results_nli.txt", "w") as writer:
        writer.write("index\tprediction\n")
        for index, record in enumerate(nli):
            writer.write(f"{index}\t{names[(names.index(record.label) + index % 2) % 3]}\n")
    ner = api.load("ner", sample_dir("ner") / "klue-ner-v1.1" / "klue-ner-v1.1_dev.tsv")
    with open("predictions.txt", "w") as writer:
        for index, record in enumerate(ner):
            tags = [tag if index % 4 else "O" for char, tag in zip(record.text, record.tags) if char != " "]
            writer.write(" ".join(tags) + "\n")
    page = DOCS["guide/researchers.md"]
    lines = [line.strip() for block in code_blocks(page, "bash") for line in block.splitlines()]
    commands = [line.replace("~/klue/klue-nli", str(sample_dir("nli") / "klue-nli")).replace(
        "~/klue/klue-ner", str(sample_dir("ner") / "klue-ner")).replace(
        "probe nli --data-dir ~/klue", f"probe nli --data-dir {sample_dir('nli')}")
        for line in lines if line.startswith("klue-baselines")]
    assert len(commands) == 6
    for command in commands:
        result = CliRunner().invoke(main, shlex.split(command)[1:])
        assert result.exit_code == 0, (command, result.output)
        if " compare ner " in command:
            assert "| wrong boundary and type |" in result.output and "| entity_macro_f1 |" in result.output
        if " probe nli " in command:
            assert "| hypothesis only |" in result.output and "| premise only |" in result.output
        if " compare nli " in command:
            assert "McNemar's exact test" in result.output and "a better" in result.output
    for block in code_blocks(page, "python"):
        exec(compile(block, "docs/guide/researchers.md", "exec"), {})
    assert float(capsys.readouterr().out.strip().splitlines()[-1]) == pytest.approx(100 * 2 / 3)
