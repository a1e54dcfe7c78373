"""results/: one JSON per task with every model's last run, and the Markdown table generated from them."""
from __future__ import annotations

import contextlib
import datetime
import gzip
import json
import math
import os
import re
from pathlib import Path
from typing import Iterator, Sequence

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

from baselines.runner import plots
from baselines.data import cards, sources
from baselines.data.fileio import DataError, atomic_output, file_sha256, read_json, write_json_atomic
from baselines.runtime.provenance import code_version
from baselines.runner.registry import all_tasks
from baselines.errors import SampleOverResults, setting

# The published test-set scores of the neural models that the tables show, from each task's card: {task: {metric:
# (mBERT-base, KLUE-RoBERTa-large)}}. KLUE publishes DP as UAS and LAS without saying micro or macro: the cards put
# them under the micro metrics (attachment accuracy, what UAS and LAS usually mean), and the macro ones have none.
ANCHOR_MODELS = ("mBERT-base", "KLUE-RoBERTa-large")
ANCHORS = {card.code: {metric: tuple(next((entry.scores.get(metric) for entry in card.published
                                          if entry.model == model and entry.split == "test"), None)
                                     for model in ANCHOR_MODELS)
                       for metric in dict.fromkeys(m for entry in card.published for m in entry.scores)}
           for card in cards.all_cards()}


# What each protocol name (evaluate.protocol_name) means: every name a record can hold, and only these (a test
# holds results/ to them). Only `official` is the design of published numbers (which are test scores: ours are
# dev scores either way).
PROTOCOLS = {
    "official": "train on the whole official train file, score the whole official dev file",
    "official-partial-train": "train on part of the official train file (a listed prefix copy, or a share of the "
                              "file: its record count is in the row's JSON), score the whole dev file",
    "train+dev-crossfit": "K-fold cross-fitting over the dev file: each fold is predicted by a model trained on the "
                          "train file plus the other dev folds; all dev predictions are scored together",
    "partial-train+dev-crossfit": "as train+dev-crossfit, with part of the official train file",
    "dev-crossfit": "K-fold cross-fitting over the dev file alone (folds split by passage or dialogue where records "
                    "share one): each fold is predicted by a model trained on the other folds",
    "custom": "a train or dev file that is neither an official file's bytes nor a listed derivation of them (a "
              "filtered, perturbed or subsampled copy, an unlisted export), or a listed part of dev scored without "
              "cross-fitting: the row names each file with its sha256 and record count; not an official-data score",
    "saved-model": "a model file scored on the whole official dev file; how it was trained is the model's own",
    "sample": "the small sample shipped with the package: a check that the code runs, not a KLUE score",
    "sample-crossfit": "cross-fitting over the shipped sample: a check that the code runs, not a KLUE score",
}


def protocol_meaning(protocol: str) -> str:
    """A protocol name in words (PROTOCOLS)."""
    return PROTOCOLS.get(protocol, "not one of this project's protocols")


def comparable(run: dict) -> bool:
    """Whether a run follows the design of published KLUE numbers: the official protocol, on files with the
    official records (a listed reconstruction counts; see protocol_cell)."""
    return run.get("protocol") == "official"


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


def task_file(results_dir: Path, task: str) -> Path:
    return Path(results_dir) / f"{task}.json"


def load_task_results(results_dir: Path, task: str) -> dict:
    path = task_file(results_dir, task)
    if not path.exists():
        return {"task": task, "runs": {}}
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("runs"), dict):
        raise DataError(path, None, "not a klue-baselines results file (expected {'task', 'runs'})")
    return data


def run_name(record: dict) -> str:
    """The key of a run in results/<task>.json: the model's name, and the hyper-parameters given to it, if
    any ('span-ranker abstain=false'), so that such a run does not replace the default one."""
    given = record.get("params") or {}
    return " ".join([record["model"]] + [f"{key}={json.dumps(value)}" for key, value in sorted(given.items())])


def run_file_stem(record: dict) -> str:
    """A file name for one run's output: 'mrc-span-ranker', 'mrc-span-ranker-abstain=false'. Characters
    other than letters, digits and '._=,+-' become '_', so that a --param value such as '../x' or '/etc'
    cannot steer the file out of the folder it is written to."""
    stem = f"{record['task']}-{run_name(record).replace(' ', '-')}"
    return re.sub(r"[^0-9A-Za-z._=,+-]", "_", stem).replace("..", "__")


def check_sample_can_be_recorded(results_dir: Path, task: str) -> None:
    """SampleOverResults when results_dir/<task>.json holds runs on KLUE data, which sample scores must not
    join or replace."""
    if any(not run.get("sample") for run in load_task_results(results_dir, task)["runs"].values()):
        raise SampleOverResults(f"{task_file(results_dir, task)} holds runs on KLUE data; scores on the shipped "
                                f"sample are not recorded beside them (give another "
                                f"{setting('--results-dir', 'results_dir')})")


def destination(results_dir: str | Path | None, is_sample: bool) -> Path | None:
    """Where a run's results go: the results_dir given, else ./results; but scores on the shipped sample
    only where a results_dir is given (they are not KLUE results), so None then."""
    if results_dir is not None:
        return Path(results_dir)
    return None if is_sample else Path("results")


def learning_curve_report(record: dict, points: list[dict], command: str | None) -> dict:
    """The learning-curve file: what every point shares (task, model, files, versions...) from the last
    point's run record, then the points, then the command that produced them."""
    shared = ("task", "model", "estimator", "protocol", "cv_folds", "data_source", "files", "hyper_parameters", "seed",
              "versions", "machine", "code", "params")
    report = {key: record[key] for key in shared if key in record}
    report["points"] = points
    if command is not None:
        report["command"] = command
    return report


PREDICTIONS_FOLDER = "predictions"


def record_run(results_dir: Path, record: dict, predictions: Sequence[dict] | None = None) -> Path:
    """Store `record` as the task's run for its model (and hyper-parameters given), replacing the previous one.
    A sample run never joins runs on KLUE data: that raises SampleOverResults. The task file is read, changed
    and written under the results folder's lock, so runs recorded by processes at the same time are all kept.
    With `predictions` (the dev predictions that were scored), they are kept beside the row, compressed, in
    predictions/<run file stem>.jsonl.gz, and the row names that file with its sha256 (see
    write_predictions)."""
    with locked(results_dir):
        if record.get("sample"):
            check_sample_can_be_recorded(results_dir, record["task"])
        if predictions is not None:
            record["predictions"] = write_predictions(results_dir, record, predictions)
        data = load_task_results(results_dir, record["task"])
        data["runs"][run_name(record)] = record
        return write_result(results_dir, task_file(results_dir, record["task"]), data)


def write_predictions(results_dir: Path, record: dict, predictions: Sequence[dict]) -> dict:
    """A run's dev predictions as gzipped JSON Lines that `score` and `compare` read: each row without the
    input and gold that `run --predictions-dir` adds (the dev file holds both), the gzip header without a
    time, so the same predictions make the same bytes. Returns the row's entry: file, sha256, rows."""
    path = results_dir / PREDICTIONS_FOLDER / f"{run_file_stem(record)}.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps({key: value for key, value in row.items() if key not in ("input", "gold")},
                              ensure_ascii=False, sort_keys=True) + "\n" for row in predictions)
    with atomic_output(path, "wb", encoding=None) as handle:
        with gzip.GzipFile(fileobj=handle, mode="wb", filename="", mtime=0, compresslevel=9) as compressed:
            compressed.write(text.encode("utf-8"))
    return {"file": path.relative_to(results_dir).as_posix(), "sha256": file_sha256(path),
            "rows": len(predictions)}


def write_result(results_dir: Path, path: Path, data: dict) -> Path:
    """Write one JSON file under results_dir, whole or not at all, then README.md and the figure anew from all
    of them. Every command that writes results/ goes through here, so a command killed between its JSON file
    and the README leaves the README stale only until the next one."""
    with locked(results_dir):
        write_json_atomic(path, data)
        regenerate_readme(results_dir)
    return path


LOCK_FILE = ".lock"
_held: dict[str, int] = {}  # results folders this process has locked, and how deeply (the lock is re-entrant)


@contextlib.contextmanager
def locked(results_dir: Path) -> Iterator[None]:
    """Hold results_dir's lock (an exclusive lock on its .lock file; re-entrant within the process) while
    other processes that record results there wait. Without fcntl (Windows), results are written unlocked."""
    key = os.path.realpath(results_dir)
    if _held.get(key) or fcntl is None:
        _held[key] = _held.get(key, 0) + 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    Path(results_dir).mkdir(parents=True, exist_ok=True)
    with open(Path(results_dir) / LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        _held[key] = 1
        try:
            yield
        finally:
            _held[key] = 0
            fcntl.flock(handle, fcntl.LOCK_UN)


UNDEFINED = "n/a"  # how a table prints an undefined score, such as Pearson r of a constant prediction


def jsonable_scores(metrics: dict[str, float], digits: int) -> dict[str, float | None]:
    """Scores rounded for a record, an undefined (NaN) one as None: JSON has no NaN, and null says 'undefined'."""
    return {key: None if math.isnan(value) else round(value, digits) for key, value in metrics.items()}


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
        ours = runs.get(task.default_model) if task.default_model != "trivial" else None
        for metric in task.headline:
            mbert, roberta = ANCHORS.get(task.code, {}).get(metric, (None, None))
            entries.append({"task": task.code, "metric": metric, "floor_run": floor, "ours_run": ours,
                            "fast_run": runs.get("fast"), "mbert": mbert, "roberta": roberta})
    return entries


def _interval_cell(run: dict | None, metric: str) -> str:
    """A run's 95 % bootstrap interval in the table: '[low, high]'; '-' where the row has none (no run, or
    recorded before intervals were), 'n/a' where the metric is undefined on the resamples."""
    if not run or "intervals" not in run or metric not in run["metrics"]:
        return "-"
    bounds = run["intervals"].get(metric)
    return UNDEFINED if bounds is None else f"[{format_score(bounds[0])}, {format_score(bounds[1])}]"


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


def all_runs(results_dir: Path) -> dict[str, dict]:
    """Every task's recorded runs in results_dir, by task code (an empty dict for a task with none)."""
    return {task.code: load_task_results(results_dir, task.code)["runs"] for task in all_tasks()}


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


START_MARK, END_MARK = "<!-- results:start -->", "<!-- results:end -->"
TASK_START, TASK_END = "<!-- task-scores:start -->", "<!-- task-scores:end -->"  # on each task's docs page


SCALE_START, SCALE_END = "<!-- scale:start -->", "<!-- scale:end -->"
# Budgets of `bench scale` at the official size, each task in its own process on a 2-core machine (issues #23,
# #46).
PEAK_RSS_BUDGET_MB = 3072  # 3 GB since the speed issue (#46); 4 GB before
SECONDS_BUDGET = 600
SUITE_SECONDS_BUDGET = 1800


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


PEERS_START, PEERS_END = "<!-- peers:start -->", "<!-- peers:end -->"


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


BUDGET_START, BUDGET_END = "<!-- budget:start -->", "<!-- budget:end -->"


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
    commands = []
    suite_seconds = all_seconds = 0.0
    defaults = {task.code: task.default_model for task in all_tasks()}
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
