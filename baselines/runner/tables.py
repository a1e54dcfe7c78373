"""The tables made of results/: headline rows, published anchors, protocols, scale, peers and budget."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

from baselines.data import cards, sources
from baselines.runner.result_files import comparable, protocol_meaning
from baselines.runner.registry import all_tasks


# The published test-set scores of the neural models that the tables show, from each task's card: {task: {metric:
# (mBERT-base, KLUE-RoBERTa-large)}}. KLUE publishes DP as UAS and LAS without saying micro or macro: the cards put
# them under the micro metrics (attachment accuracy, what UAS and LAS usually mean), and the macro ones have none.
ANCHOR_MODELS = ("mBERT-base", "KLUE-RoBERTa-large")
ANCHORS = {card.code: {metric: tuple(next((entry.scores.get(metric) for entry in card.published
                                          if entry.model == model and entry.split == "test"), None)
                                     for model in ANCHOR_MODELS)
                       for metric in dict.fromkeys(m for entry in card.published for m in entry.scores)}
           for card in cards.all_cards()}


def reconstructed_files(run: dict | None) -> list[tuple[str, str]]:
    """(name, derivation) of each file of a run that holds every record of an official file without being its
    bytes: a listed whole derivation (sources.derived_manifest), looked up by the sha256 that the row keeps."""
    listed = sources.derived_manifest()
    return [(entry.get("name", ""), listed[entry["sha256"]].derivation) for entry in (run or {}).get("files", [])
            if entry.get("sha256") in listed and not listed[entry["sha256"]].part]


def protocol_cell(run: dict | None) -> str:
    """A run's protocol for a table: '†' after one that published numbers do not follow (partial files, dev
    cross-fitting, custom files), '‡' after one whose files hold the official records but are not the official
    bytes (a listed derivation; the table's notes say which and how)."""
    if not run:
        return "-"
    marks = "" if comparable(run) else " †"
    if reconstructed_files(run):
        marks += " ‡"
    return f"{run.get('protocol', '-')}{marks}"


UNDEFINED = "n/a"  # how a table prints an undefined score, such as Pearson r of a constant prediction


def format_score(value: float | None, width: int = 0, digits: int = 2) -> str:
    """A score with two decimals (or `digits`), 'n/a' when it is undefined (None or NaN)."""
    text = UNDEFINED if value is None or math.isnan(value) else f"{value:.{digits}f}"
    return f"{text:>{width}}"


def memory_cell(peak_rss_mb: float | None) -> str:
    """Peak memory in whole MiB, or 'n/a' where the platform does not measure it."""
    return UNDEFINED if peak_rss_mb is None else f"{peak_rss_mb:.0f}"


def _run_cell(run: dict | None, metric: str) -> str:
    """A run's score in the table: '-' where there is no such run or metric, 'n/a' where it is undefined."""
    if not run or metric not in run["metrics"]:
        return "-"
    return format_score(run["metrics"][metric])


def headline_runs(runs_by_task: dict[str, dict]) -> list[dict]:
    """One entry per task and headline metric: its trivial run, our default and fast runs (None where there is
    no such run) and the published anchors."""
    entries = []
    for task in all_tasks():
        runs = runs_by_task.get(task.code, {})
        floor = runs.get("trivial")
        ours = runs.get(task.modelling.default_model) if task.modelling.default_model != "trivial" else None
        for metric in task.scoring.headline:
            mbert, roberta = ANCHORS.get(task.code, {}).get(metric, (None, None))
            entries.append({"task": task.code, "metric": metric, "floor_run": floor, "ours_run": ours,
                            "fast_run": runs.get("fast"), "mbert": mbert, "roberta": roberta})
    return entries


def interval_cell(bounds: list[float] | None) -> str:
    """A 95 % interval as a table shows it: '[low, high]', or 'n/a' where the metric is undefined."""
    return UNDEFINED if bounds is None else f"[{format_score(bounds[0])}, {format_score(bounds[1])}]"


def _interval_cell(run: dict | None, metric: str) -> str:
    """A run's 95 % bootstrap interval in the table: '[low, high]'; '-' where the row has none (no run, or
    recorded before intervals were), 'n/a' where the metric is undefined on the resamples."""
    if not run or "intervals" not in run or metric not in run["metrics"]:
        return "-"
    return interval_cell(run["intervals"].get(metric))


def _dev_size(run: dict | None) -> str:
    """The records of the dev file a run was scored on."""
    return f"{run['dev_records']:,}" if run and "dev_records" in run else "-"


def table_rows(runs_by_task: dict[str, dict]) -> list[list[str]]:
    """One row per task and headline metric, all on dev: its size, the floor, our default and fast models
    with their 95 % intervals, the protocol."""
    return [[entry["task"], entry["metric"], _dev_size(entry["ours_run"] or entry["floor_run"]),
             _run_cell(entry["floor_run"], entry["metric"]),
             _run_cell(entry["ours_run"], entry["metric"]), _interval_cell(entry["ours_run"], entry["metric"]),
             _run_cell(entry["fast_run"], entry["metric"]), _interval_cell(entry["fast_run"], entry["metric"]),
             protocol_cell(entry["ours_run"] or entry["floor_run"])]
            for entry in headline_runs(runs_by_task)]


def anchor_rows(runs_by_task: dict[str, dict]) -> list[list[str]]:
    """The published neural scores, each row a task and headline metric: test-set numbers, in their own table."""
    return [[entry["task"], entry["metric"],
             *("-" if anchor is None else format_score(anchor) for anchor in (entry["mbert"], entry["roberta"]))]
            for entry in headline_runs(runs_by_task)]


def chart_rows(runs_by_task: dict[str, dict]) -> list[dict]:
    """The results chart's rows (baselines.runner.plots.results_chart): the scores of table_rows as numbers, None
    where there is no run or the score is undefined; rows without our score are left out."""
    def score(run: dict | None, metric: str) -> float | None:
        value = (run or {}).get("metrics", {}).get(metric)
        return None if value is None or math.isnan(value) else value

    rows = [{"task": entry["task"], "metric": entry["metric"], "floor": score(entry["floor_run"], entry["metric"]),
             "ours": score(entry["ours_run"], entry["metric"]), "mbert": entry["mbert"], "roberta": entry["roberta"]}
            for entry in headline_runs(runs_by_task)]
    return [row for row in rows if row["ours"] is not None]


HEADER = ["task", "metric", "n (dev)", "trivial floor (dev)", "default (dev)", "95% interval", "fast (dev)",
          "95% interval", "protocol"]


ANCHOR_HEADER = ["task", "metric", "mBERT-base (test)", "KLUE-RoBERTa-large (test)"]
ANCHOR_NOTE = ("Published scores of neural models on the KLUE v1.1 **test** set (KLUE README): not comparable with "
               "the dev scores above, so they stand in a table of their own. No dev-set score of a neural model is "
               "cited: the KLUE paper's dev tables were not available to this project, and a test number is not "
               "put beside a dev one in their place.",
               "KLUE publishes DP as UAS and LAS without saying micro or macro: its scores stand in the micro rows "
               "(attachment accuracy), and the macro rows have none.")


def anchors_beside(task: str, metrics: Sequence[str]) -> dict:
    """What `compare` can cite beside dev scores of `metrics`: published dev-set scores of neural models (none
    is available to this project, so none), and where the test-set ones are, labelled as such."""
    tested = [metric for metric in metrics if metric in ANCHORS.get(task, {})]
    return {"dev": [], "note": (f"No dev-set score of a neural model is published for {task} {', '.join(tested)} "
                                "to cite beside these dev scores; the published test-set scores (KLUE README) stand "
                                "in their own table in results/README.md and are not comparable.") if tested else
            f"No published neural score for {task} {', '.join(metrics) or 'these metrics'}."}


def anchor_section(runs_by_task: dict[str, dict], codes: Sequence[str] | None = None) -> str:
    """The published test-set scores (anchor_rows) of the tasks `codes` (all by default), and their notes."""
    rows = [row for row in anchor_rows(runs_by_task) if codes is None or row[0] in codes]
    return "\n\n".join([markdown_table(rows, ANCHOR_HEADER), *ANCHOR_NOTE])


TABLE_NOTES = [
    "Every score of this table is on the KLUE v1.1 dev files, with its 95 % bootstrap interval (1,000 resamples "
    "of the units that `compare` draws, seed 0); n is the dev file's records. † marks a protocol that published "
    "numbers do not follow (part of a file, cross-fitting over dev, or custom files). ‡ marks files that hold every "
    "official record but not the official bytes: listed derivations, named below (each file's sha256 is in the "
    "row's JSON).",
    f"{UNDEFINED}: the metric is undefined for that run, as in the official code: Pearson r of a constant "
    "prediction divides 0 by 0. The STS floor predicts the mean training score (2.22), below the 3.0 threshold, so "
    "it calls every pair dissimilar and its F1 is 0; calling every pair similar would score F1 59.54 on dev, but a "
    "floor fitted on train does not do that.",
]


def table_notes(runs_by_task: dict[str, dict], notes: Sequence[str] = tuple(TABLE_NOTES)) -> list[str]:
    """The notes under the headline table: the first of `notes`, which files the ‡ rows were read from and how
    they were derived, then the rest of `notes`."""
    shown = {}
    for entry in headline_runs(runs_by_task):
        for name, derivation in reconstructed_files(entry["ours_run"] or entry["floor_run"]):
            shown.setdefault(derivation, {}).setdefault(entry["task"].upper(), set()).add(name)
    derived = ["‡ " + "; ".join(f"{task}: {', '.join(sorted(names))}" for task, names in by_task.items())
               + f": {derivation}." for derivation, by_task in shown.items()]
    return [*notes[:1], *derived, *notes[1:]]


def markdown_table(rows: list[list[str]], header: Sequence[str] = tuple(HEADER)) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return "\n".join(lines)


def protocol_section(runs_by_task: dict[str, dict]) -> list[str]:
    """What each protocol in the tables means, in this repository (not only in the data's README)."""
    used = sorted({record.get("protocol") for runs in runs_by_task.values() for record in runs.values()} - {None})
    if not used:
        return []
    return ["## Protocols", "", "| protocol | meaning | comparable with published numbers |", "|---|---|---|",
            *(f"| {name} | {protocol_meaning(name)} | "
              f"{'yes (as design: ours are dev scores)' if name == 'official' else 'no'} |"
              for name in used), ""]


# Budgets of `bench scale` at the official size, each task in its own process on a 2-core machine (issues #23,
# #46).
PEAK_RSS_BUDGET_MB = 3072  # 3 GB since the speed issue (#46); 4 GB before
SECONDS_BUDGET = 600
SUITE_SECONDS_BUDGET = 1800


def scale_reports(results_dir: Path) -> list[dict]:
    """The reports of `bench scale` in results_dir/scale/, in task order."""
    order = {task.code: index for index, task in enumerate(all_tasks())}
    reports = [json.loads(path.read_text(encoding="utf-8")) for path in sorted((results_dir / "scale").glob("*.json"))]
    return sorted(reports, key=lambda report: (order.get(report["task"], len(order)), report["model"]))


def scale_table(results_dir: Path) -> str | None:
    """The table of `bench scale` at the official training size, with the budget verdict of each task and
    their sum, or None when no report has a point at the official size."""
    rows, total = [], 0.0
    for report in scale_reports(results_dir):
        full = next((point for point in report["points"] if point["size"] == 1), None)
        if full is None:
            continue
        seconds = full["seconds"]["fit"] + full["seconds"]["predict"]
        total += seconds
        rows.append(f"| {report['task']} | {report['model']} | {full['train_records']} | {full['seconds']['fit']:.1f} "
                    f"| {full['seconds']['predict']:.1f} | {seconds:.1f} | {memory_cell(full['peak_rss_mb'])} | "
                    f"{report['fit_exponent']} | {'yes' if report['official_size']['within_budget'] else 'no'} | "
                    f"{machine_cell(report.get('machine'))} |")
    if not rows:
        return None
    return "\n".join(["| task | model | train records | fit s | predict s | fit + predict s | peak RSS (MiB) | k (fit) "
                      "| within budget | machine |", "|---|---|---|---|---|---|---|---|---|---|", *rows, "",
                      f"Summed fit + predict at the official size: {total:.0f} s (budget {SUITE_SECONDS_BUDGET} s)."])


def peers_reports(results_dir: Path) -> list[dict]:
    """The reports of `bench peers` in results_dir/peers.json, in task order (none before it has run); a report of
    the one-run layout before #72, without its three systems, is left out."""
    try:
        reports = json.loads((results_dir / "peers.json").read_text(encoding="utf-8")).get("tasks", {})
    except (OSError, ValueError, AttributeError):
        return []
    order = [task.code for task in all_tasks()]
    return [reports[code] for code in order if isinstance(reports.get(code), dict) and "systems" in reports[code]]


SYSTEM_NAMES = {"peer": "peer", "default": "ours, default", "fast": "ours, fast"}


def ratio_cell(spread: dict | None) -> str:
    """A ratio's median with its range over the rounds ('0.62x (0.58-0.66)'), '-' where there is none."""
    if not spread:
        return "-"
    if spread["min"] == spread["max"]:
        return f"{spread['median']:.2f}x"
    return f"{spread['median']:.2f}x ({spread['min']:.2f}-{spread['max']:.2f})"


def peers_table(results_dir: Path) -> str | None:
    """Per task three rows: the tool a user would pick instead, our default and our fast model, with their scores,
    median seconds and peak memory, and our ratios to the peer; None before `bench peers` has run."""
    rows = []
    reports = peers_reports(results_dir)
    for report in reports:
        for who, system in report["systems"].items():
            ratios = report["ratios"].get(who, {})
            seconds, peak = system["total_seconds"], system["peak_rss_mb"]
            rows.append(" | ".join([
                f"| {report['task']}", SYSTEM_NAMES.get(who, who), system["name"].removeprefix("klue-baselines "),
                " / ".join(format_score(v) for v in system["metrics"].values()),
                f"{seconds['median']:.1f} ({seconds['min']:.1f}-{seconds['max']:.1f})",
                memory_cell(peak["median"] if peak else None), ratio_cell(ratios.get("seconds")),
                ratio_cell(ratios.get("peak_rss")), f"{machine_cell(report.get('machine'))} |"]))
    if not rows:
        return None
    rounds = sorted({report.get("rounds") for report in reports})
    return "\n".join([
        "| task | system | model | score | seconds (min-max) | peak RSS (MiB) | time / peer's | memory / peer's | "
        "machine |", "|---|---|---|---|---|---|---|---|---|", *rows,
        "", f"Each system ran {' or '.join(map(str, rounds))} times in turn (peer, default, fast, then again), each "
        "run in a new process with an empty analysis cache; seconds and peak memory are the medians of its runs, and "
        "a ratio is the median of the ratios round by round, with their range. Scores are the task's headline "
        "metrics in order (the same in every run); seconds count loading, analysis, fit and predict (not scoring, "
        "nor the peer's choice of settings, which peers.json times apart). Settings and their choice: `peers.json`, "
        "and the docstring of `baselines/bench/peers.py`."])


BUDGET_FILES = (("budget.json", "default"), ("budget-fast.json", "fast"))


def budget_table(results_dir: Path) -> str | None:
    """Each task's default row, and its fast row where `bench budget --model fast` has run, as a multiple of raw
    Kiwi analysis of its texts, and the suite's, from results_dir/budget*.json; None before `bench budget` has
    run."""
    rows, verdicts = [], []
    for name, which in BUDGET_FILES:
        try:
            report = json.loads((results_dir / name).read_text(encoding="utf-8"))
            tasks, suite = report["tasks"], report["suite"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        rows += [f"| {code} | {task['run']} | {task['seconds']:.1f} | {task['raw_kiwi']['seconds']:.1f} | "
                 f"{task['raw_kiwi']['texts']} | {task['ratio']:.2f}x |" for code, task in tasks.items()]
        rows.append(f"| suite, {which} | | {suite['seconds']:.1f} | {suite['raw_kiwi_seconds']:.1f} | | "
                    f"{suite['ratio']:.2f}x |")
        verdict = "within" if suite["within_budget"] else "over"
        verdicts.append(f"With the {which} models the suite takes {suite['ratio']:.2f} times raw Kiwi analysis of "
                        f"all its texts: {verdict} the budget of {suite['budget_ratio']:g}x (measured in one run on "
                        f"{machine_cell(report.get('machine'))}).")
    if not rows:
        return None
    return "\n".join(["| task | model | seconds | raw Kiwi s | texts | multiple of raw Kiwi |",
                      "|---|---|---|---|---|---|", *rows, "", " ".join(verdicts)])


PROBES_FOLDER = "probes"


def probes_reports(results_dir: Path) -> list[dict]:
    """The reports of `probe` in results_dir/probes/<task>.json, in task order (an unreadable one left out)."""
    reports = []
    for task in all_tasks():
        try:
            report = json.loads((results_dir / PROBES_FOLDER / f"{task.code}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(report, dict) and isinstance(report.get("probes"), list) and report["probes"]:
            reports.append(report)
    return reports


def share_cell(share: float | None) -> str:
    """A share of a gap as a table shows it: '38%', or 'n/a' where there is none."""
    return UNDEFINED if share is None else f"{share:.0%}"


def probes_table(results_dir: Path) -> str | None:
    """Per task a row for each probe, between the whole input and nothing: what it sees, its headline scores with
    their 95 % intervals, and the share of the gap between floor and whole input it closes; None before `probe`
    has run on KLUE data."""
    rows = []
    for report in probes_reports(results_dir):
        if report.get("sample"):
            continue
        for row in report["probes"]:
            scores = " / ".join(
                format_score(score) + (f" {interval_cell(row['intervals'][metric])}"
                                       if row["intervals"].get(metric) else "")
                for metric, score in row["headline"].items())
            shares = " / ".join(map(share_cell, row["gap_closed"].values()))
            rows.append(f"| {report['task']} | {row['probe']} | {row['sees']} | {scores} | {shares} |")
    if not rows:
        return None
    return "\n".join([
        "| task | probe | what it sees | score [95% interval] | gap closed |", "|---|---|---|---|---|", *rows, "",
        "Each probe is the task's default model (its trivial floor for 'nothing') trained on the training file and "
        "scored on the dev file as `run` scores it, on what the probe leaves of each input; the gold stays whole. "
        "Scores are the task's headline metrics in order; 'gap closed' is (probe - nothing) / (whole input - "
        "nothing) for each, counted from 0 where the floor's score is undefined. Commands and versions: "
        "`probes/<task>.json`."])


def describe_machine(machine: dict[str, str]) -> str:
    """A result's machine (as provenance.machine() records it) in words: its CPU and Kiwi's kernels there."""
    return (f"{machine.get('cpu', 'an unknown CPU')} ({machine.get('architecture', '?')}), Kiwi kernels "
            f"{machine.get('kiwi_arch', '?')}")


def machine_cell(machine: dict | None) -> str:
    """The machine a report was measured on, for a table: times are only comparable on one machine (reports
    written before they recorded it say so)."""
    return describe_machine(machine) if machine else "not recorded"


def scale_section(table: str | None) -> list[str]:
    """results/README.md's section on `bench scale` around scale_table, or nothing before it has run at the
    official size."""
    if table is None:
        return []
    return ["## At the official training size (`bench scale`)", "",
            "Each size in its own process with an empty analysis cache, on the machine of its row; `k` fits time ~ n^k",
            f"over 1/8 to 1x the official size (method: `scale/`). Budgets: {SECONDS_BUDGET} s and "
            f"{PEAK_RSS_BUDGET_MB} MiB per task.", "", table, ""]
