"""The pages generated from results/: its README, the tables on the docs pages, the figure, constraints.txt."""
from __future__ import annotations

import datetime
from pathlib import Path
from typing import Sequence

from baselines.data.fileio import atomic_output
from baselines.runtime.provenance import code_version
from baselines.runner import plots
from baselines.runner.result_files import PREDICTIONS_FOLDER, all_runs
from baselines.runner.registry import all_tasks
from baselines.runner.tables import (TABLE_NOTES, anchor_section, budget_table, chart_rows, markdown_table, memory_cell,
                                     peers_table, probes_table, protocol_cell, protocol_section, scale_section,
                                     scale_table, table_notes, table_rows)


START_MARK, END_MARK = "<!-- results:start -->", "<!-- results:end -->"
TASK_START, TASK_END = "<!-- task-scores:start -->", "<!-- task-scores:end -->"  # on each task's docs page


SCALE_START, SCALE_END = "<!-- scale:start -->", "<!-- scale:end -->"


def update_project_readme(readme: Path, table: str, marks: tuple[str, str] = (START_MARK, END_MARK),
                          note: str = "Generated from `results/` by `klue-baselines run`; commands and costs in "
                                      "results/README.md.") -> bool:
    """Put a table between a pair of a page's markers, when it has them."""
    if not readme.is_file():
        return False
    text = readme.read_text(encoding="utf-8")
    start, end = marks
    if start not in text or end not in text:
        return False
    head, rest = text.split(start, 1)
    _old, tail = rest.split(end, 1)
    with atomic_output(readme) as handle:
        handle.write(f"{head}{start}\n{note}\n\n{table}\n{end}{tail}")
    return True


PEERS_START, PEERS_END = "<!-- peers:start -->", "<!-- peers:end -->"


BUDGET_START, BUDGET_END = "<!-- budget:start -->", "<!-- budget:end -->"
PROBES_START, PROBES_END = "<!-- probes:start -->", "<!-- probes:end -->"


FIGURE_FOLDER = "figures"


def draw_results_figure(results_dir: Path, runs_by_task: dict[str, dict]) -> Path | None:
    """results_dir/figures/results.png from the same runs as the table, so that the two never disagree; None
    (and the figure left as it is) where the plots extra is not installed or nothing has our score."""
    try:
        plots.check_available()
    except plots.PlotsUnavailable:
        return None
    rows = chart_rows(runs_by_task)
    if not rows:
        return None
    return plots.results_chart(rows, results_dir / FIGURE_FOLDER / "results.png")


CONSTRAINTS_FILE = "constraints.txt"
# The distributions of provenance.versions(), by the key a row records them under.
DISTRIBUTIONS = {"kiwipiepy": "kiwipiepy", "kiwipiepy_model": "kiwipiepy-model", "scikit_learn": "scikit-learn",
                 "sklearn_crfsuite": "sklearn-crfsuite", "numpy": "numpy", "scipy": "scipy"}


def constraints_text(runs_by_task: dict[str, dict]) -> str:
    """pip constraints (`pip install -c`) of the versions the recorded rows used: a library pinned where every
    row that names it agrees, listed in a comment where they do not; Python, which pip cannot install, in a
    comment."""
    recorded: dict[str, dict[str, int]] = {}
    for runs in runs_by_task.values():
        for record in runs.values():
            for name, version in (record.get("versions") or {}).items():
                recorded.setdefault(name, {}).setdefault(str(version), 0)
                recorded[name][str(version)] += 1
    lines = ["# The versions that produced the rows of this folder, written with its README: install them with",
             "#   pip install -c results/constraints.txt -e .",
             f"# Python: {', '.join(sorted(recorded.get('python', {}))) or 'not recorded'} (pip cannot pin it)"]
    for key, distribution in DISTRIBUTIONS.items():
        found = recorded.get(key, {})
        if len(found) == 1:
            lines.append(f"{distribution}=={next(iter(found))}")
        elif found:
            versions_found = ", ".join(f"{version} in {rows}" for version, rows in sorted(found.items()))
            lines.append(f"# {distribution}: rows disagree ({versions_found}); not pinned")
    return "\n".join(lines) + "\n"


def _run_sections(runs_by_task: dict[str, dict], commands: list[str]) -> list[str]:
    """The README's lines about `run` rows: the headline table and its notes, the published test scores, the
    protocols, and how each row was produced."""
    return [markdown_table(table_rows(runs_by_task)), "",
            *[line for note in table_notes(runs_by_task) for line in (note, "")],
            "## Published neural scores (test set)", "", anchor_section(runs_by_task), "",
            *protocol_section(runs_by_task),
            "## How each row was produced", "",
            "| task | model | command | commit | protocol | seconds | peak RSS (MiB) |",
            "|---|---|---|---|---|---|---|", *commands, ""]


def regenerate_readme(results_dir: Path) -> Path:
    """results/README.md from every results/<task>.json: the table, then the command behind each run; for KLUE
    results (not the sample), also the project README's tables and results/figures/results.png."""
    results_dir = Path(results_dir)
    runs_by_task = all_runs(results_dir)
    scales = scale_table(results_dir)
    peers = peers_table(results_dir)
    budget = budget_table(results_dir)
    probes = probes_table(results_dir)
    commands = []
    suite_seconds = all_seconds = 0.0
    defaults = {task.code: task.modelling.default_model for task in all_tasks()}
    for code, runs in runs_by_task.items():
        for model, record in sorted(runs.items()):
            seconds = sum(record.get("seconds", {}).values())
            all_seconds += seconds
            suite_seconds += seconds if model == defaults[code] else 0.0
            workers = (record.get("workers") or {}).get("peak_rss_mb")
            peak = memory_cell(record.get("peak_rss_mb")) + (f" (workers {memory_cell(workers)})" if workers else "")
            commit = (record.get("code") or {}).get("git_commit") or "not recorded"
            commands.append(f"| {code} | {model} | `{record.get('command', '?')}` | {commit[:7]} | "
                            f"{protocol_cell(record)} | {seconds:.1f} | {peak} |")
    commits = sorted({(record.get("code") or {}).get("git_commit", "")[:7] for runs in runs_by_task.values()
                      for record in runs.values()} - {""})
    writer = code_version()
    head = (writer.get("git_commit") or "")[:7] + (" with local changes" if writer.get("git_dirty") else "")
    provenance = (f"Written on {datetime.date.today().isoformat()} by the code at "
                  f"{head or 'source ' + writer.get('source_sha256', '?')[:12]}; the rows come from commits "
                  f"{', '.join(commits) or 'not recorded'} (each row's own is in the second table).")
    text = "\n".join([
        "# Results",
        "",
        "Generated by `klue-baselines run` from the JSON files beside this one; do not edit by hand.",
        f"Scores are x100. {provenance}",
        "",
        *(_run_sections(runs_by_task, commands) if any(runs_by_task.values()) else
          ["No `run` rows here yet: the files below are the only results of this folder.", ""]),
        *([f"Summed seconds: {suite_seconds:.1f} for the suite (each task's default model), {all_seconds:.1f} for "
            "every row. Peak RSS is the running process's own, from the start of that task; where folds ran in",
            "worker processes (`--jobs`), the largest worker's follows in brackets.", ""] if commands else []),
        "Hyper-parameter searches (`tune`) are in `tuning/`, learning curves (`bench learning-curve`) in",
        "`learning-curve/`; each file holds the command that wrote it. Each row's dev predictions are in",
        f"`{PREDICTIONS_FOLDER}/` (gzipped JSON Lines that `score` and `compare` read), and `{CONSTRAINTS_FILE}` pins "
        "the versions the rows used (`pip install -c`).",
        "",
        *scale_section(scales),
        *(["## Against the tools a user would pick instead (`bench peers`)", "", peers, "",
           *(["![Each task's score against seconds: the peer, our default and our fast model](figures/peers.png)", ""]
             if (results_dir / "figures" / "peers.png").exists() else [])] if peers else []),
        *(["## The suite as a multiple of raw Kiwi analysis (`bench budget`)", "", budget, ""] if budget else []),
        *(["## What the data alone gives away (`probe`)", "", probes, ""] if probes else []),
        "KLUE data: Park et al. (2021), CC BY-SA 4.0.",
        "",
    ])
    path = results_dir / "README.md"
    with atomic_output(path) as handle:
        handle.write(text)
    with atomic_output(results_dir / CONSTRAINTS_FILE) as handle:
        handle.write(constraints_text(runs_by_task))
    if not any(record.get("sample") for runs in runs_by_task.values() for record in runs.values()):
        # Only tables of KLUE results go into the project's pages; sample scores stay in their own folder.
        pages, rows = project_pages(results_dir.resolve().parent), table_rows(runs_by_task)
        notes = table_notes(runs_by_task, TABLE_NOTES[:1])
        update_pages(pages, "\n\n".join([markdown_table(rows), *notes, anchor_section(runs_by_task)]))
        for code in runs_by_task:  # each task's page: its own rows
            update_pages([page for page in pages if page.name == f"{code}.md" and page.parent.name == "tasks"],
                         markdown_table([row for row in rows if row[0] == code]) + "\n\n"
                         + anchor_section(runs_by_task, [code]), (TASK_START, TASK_END))
        draw_results_figure(results_dir, runs_by_task)
        if scales is not None:
            update_pages(pages, scales, (SCALE_START, SCALE_END),
                         "Generated from `results/scale/` by `klue-baselines bench scale`.")
        if peers is not None:
            update_pages(pages, peers, (PEERS_START, PEERS_END),
                         "Generated from `results/peers.json` by `klue-baselines bench peers`.")
        if budget is not None:
            update_pages(pages, budget, (BUDGET_START, BUDGET_END),
                         "Generated from `results/budget.json` by `klue-baselines bench budget`.")
        if probes is not None:
            update_pages(pages, probes, (PROBES_START, PROBES_END),
                         "Generated from `results/probes/` by `klue-baselines probe`.")
    return path


def project_pages(project: Path) -> list[Path]:
    """The pages that hold generated tables: the project README and the docs."""
    return [project / "README.md", *sorted((project / "docs").rglob("*.md"))]


def update_pages(pages: Sequence[Path], table: str, marks: tuple[str, str] = (START_MARK, END_MARK),
                 note: str = "Generated from `results/` by `klue-baselines run`; commands and costs in "
                             "results/README.md.") -> None:
    """Put a table between `marks` in every page that has them."""
    for page in pages:
        update_project_readme(page, table, marks, note)
