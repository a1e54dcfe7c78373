"""Evaluate a task's model: fit, cross-fit, predict and score it on a dev file, and make the record of what was
measured; and read and check predictions against gold, as `score` does."""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from baselines.data import hf, prediction_formats, sources
from baselines.data.fileio import DataError, file_sha256, jsonl_rows, read_text_or_gzip, text_looks_like_jsonl
from baselines.data.locate import TaskData, locate
from baselines.metrics import significance
from baselines.errors import UsageError, setting
from baselines.runner import tuning
from baselines.runner.build import has_missing, build_model, check_labelled
from baselines.runner.registry import get_task
from baselines.runner.result_files import jsonable_scores
from baselines.runtime import memory, parallel, progress
from baselines.runtime.provenance import code_version, machine, versions
from baselines.taskspec import PredictionError, TaskSpec, repeated
from features import analysis

# Resamples of the 95 % bootstrap interval that each run records beside its headline scores (seed 0; the units
# are those that `compare` draws).
INTERVAL_RESAMPLES = 1000
Predictions = Any  # a prediction file's path, a list of prediction dicts, or MRC's {question_id: answer}


@dataclass
class Stopwatch:
    """Wall time per stage; Kiwi analysis time is split out of the stage that triggered it. With `log`, a
    stage tells its elapsed time while it runs (baselines.runtime.progress.heartbeat), as `label`."""
    stages: dict[str, float] = field(default_factory=dict)
    log: Callable[[str], None] = progress.quiet

    def measure(self, stage: str, work: Callable[[], Any], label: str = "") -> Any:
        analysed_before = analysis.stats().seconds
        start = time.perf_counter()
        with progress.heartbeat(label or stage, self.log):
            result = work()
        elapsed = time.perf_counter() - start
        in_analysis = analysis.stats().seconds - analysed_before
        self.stages["analysis"] = self.stages.get("analysis", 0.0) + in_analysis
        self.stages[stage] = self.stages.get(stage, 0.0) + elapsed - in_analysis
        return result


def describe_file(path: Path, records: int | None = None) -> dict:
    """Name, sha256, record count, and where the bytes come from: `origin` is 'official' (an official file's
    sha256; `official_name` says which), 'derived' (a listed derivation of one, sources.derived_manifest:
    `official_name`, `part` and `derivation` say what it holds) or 'custom' (anything else: a filtered,
    perturbed or subsampled copy, an unlisted export). `identical_to_official` compares with the official file
    of the same name (None when the name is not an official one). A save_to_disk folder's sha256 is over its
    files' names and sha256s, in name order."""
    if path.is_dir():
        sha256 = hashlib.sha256("".join(f"{p.name}\0{file_sha256(p)}\n" for p in sorted(path.iterdir())
                                        if p.is_file()).encode()).hexdigest()
    else:
        sha256 = file_sha256(path)
    manifest = sources.official_manifest()
    official = manifest.get(path.name.replace("-v1_", "-v1.1_"))
    described = {"path": str(path), "name": path.name, "sha256": sha256,
                 "identical_to_official": None if official is None else official.sha256 == sha256}
    if records is not None:
        described["records"] = records
    same_bytes = next((entry.name for entry in manifest.values() if entry.sha256 == sha256), None)
    derived = sources.derived_manifest().get(sha256)
    if same_bytes is not None:
        described.update(origin="official", official_name=same_bytes)
    elif derived is not None:
        described.update(origin="derived", official_name=derived.official_name, part=derived.part,
                         derivation=derived.derivation)
    else:
        described["origin"] = "custom"
    return described


def check_gold(task: TaskSpec, records: Sequence, path: Path) -> None:
    """A file to score against: not empty, every record labelled, and each guid once (a repeated gold record
    would be scored twice against one prediction)."""
    check_labelled(task, records, path)
    twice = repeated([record.guid for record in records])
    if twice:
        raise DataError(path, f"guid {twice[0]}", f"occurs more than once ({len(twice)} guids are repeated); "
                        "each gold record must have its own guid")


def with_inputs(task: TaskSpec, records: Sequence, rows: list[dict]) -> list[dict]:
    """Prediction rows that also carry each record's input ('input', as plain_inputs gives it) and, where the
    record is labelled, its gold ('gold', as targets gives it), so that a prediction file reads on its own:
    a wrong answer can be seen beside its question. Scoring ignores both."""
    for row, plain, gold in zip(rows, task.reading.plain_inputs(records), task.modelling.targets(records)):
        row["input"] = _as_json(plain)
        if not has_missing(gold):
            row["gold"] = _as_json(gold)
    return rows


def _as_json(value: Any) -> Any:
    """Tuples as lists, all the way down: a row then equals what its JSON line reads back as."""
    if isinstance(value, (list, tuple)):
        return [_as_json(part) for part in value]
    return value


def stands_for(described: dict, official_name: str | None) -> bool:
    """Whether a described file (describe_file) holds the official records of `official_name`, whole or a
    listed part: its bytes are that official file's or a listed derivation of it. A record count is never
    enough, nor a name: the official dev file passed as --train stands for no training file."""
    return (official_name is not None and described.get("origin") in ("official", "derived")
            and described.get("official_name") == official_name)


def protocol_name(task: TaskSpec, cv: int, train: dict | None, dev: dict, train_records: int | None = None) -> str:
    """The protocol of a run from its described files (describe_file): one of result_files.PROTOCOLS. A file that
    is not the official bytes or a listed derivation of the file it stands for makes the run `custom`; so does
    a listed part of the dev file scored without cross-fitting (no protocol scores part of dev that way).
    Training on part of the official records (a listed prefix, or fewer records than the file holds, as a
    learning curve does) is `official-partial-train`."""
    if (train is not None and not stands_for(train, task.train_file)) or not stands_for(dev, task.dev_file):
        return "custom"
    whole = hf.SCHEMAS[task.code].split_sizes.get("train")
    partial = train is not None and (train.get("part", False) or (
        train_records is not None and whole is not None and train_records < whole))
    if not cv:
        if dev.get("part", False):
            return "custom"
        return "official-partial-train" if partial else "official"
    if train is None:
        return "dev-crossfit"
    return "partial-train+dev-crossfit" if partial else "train+dev-crossfit"


def cross_fit_folds(task: TaskSpec, records: Sequence, cv: int, seed: int) -> list[np.ndarray]:
    """Index arrays of the evaluation folds: grouped when the task has groups (MRC passages)."""
    problem = tuning.fold_count_problem(task, records, cv, "the evaluation data")
    if problem:
        raise UsageError(f"{setting(f'--cv {cv}', f'cv={cv}')}: {problem}")
    return [test for _train, test in tuning.fold_splits(task, records, cv, seed)]


def training_subset(task: TaskSpec, records: Sequence, fraction: float, seed: int) -> list:
    """A share of the training records for a learning curve: whole groups (MRC passages, WoS dialogues),
    taken in one seeded order, so that a smaller fraction's records are part of every larger one's."""
    if not 0 < fraction <= 1:
        raise UsageError(f"a training fraction must be in (0, 1], not {fraction}")
    if fraction == 1:
        return list(records)
    keys = task.reading.group_keys(records)
    distinct = list(dict.fromkeys(keys))
    order = np.random.default_rng(seed).permutation(len(distinct))
    kept = {distinct[i] for i in order[:max(1, round(fraction * len(distinct)))]}
    return [record for record, key in zip(records, keys) if key in kept]


def evaluate_task(task: TaskSpec, data: TaskData, model_name: str | None = None, seed: int = 0, cv: int = 0,
                  log: Callable[[str], None] = progress.quiet, train_fraction: float = 1.0,
                  params: dict[str, Any] | None = None, fitted: tuple[str, Any] | None = None,
                  workers: parallel.Workers = parallel.Workers(),
                  shown: Callable[[Sequence], list] | None = None) -> tuple[dict, list[dict]]:
    """Train on the train file (and, with cv, on the other dev folds), predict the dev file, score it.
    With train_fraction < 1, each fit sees only that share of its training records (a learning curve).
    `params` are hyper-parameters set over the model's defaults. `fitted`, a (name, fitted model) pair such as
    a saved model, is scored as it is: nothing is trained and the training file is not read. With cv, `workers`
    says how many folds are fitted at once, and where; the predictions are the same for any setting. `shown`
    (records -> records) is what the model sees of each record, training and dev alike (a probe's partial
    input); the gold is scored whole.

    Returns the record that `run` writes to results/<task>.json, and the predictions that were scored (one
    per dev record, in its order; out-of-fold with cv).
    """
    watch = Stopwatch(log=log)
    memory.reset_peak()  # this task's own peak, not that of a task run before it in this process
    data = _checked_setting(task, data, cv, train_fraction, params, fitted)
    resources, train_records, dev_records = _loaded(task, data, watch, log)
    # What the model reads; the gold records, whole, are what is scored, resampled and grouped into folds.
    seen_train, seen_dev = train_records, dev_records
    if shown is not None:
        seen_train, seen_dev = shown(train_records), shown(dev_records)
    name, model = fitted if fitted is not None else watch.measure(
        "fit", lambda: build_model(task, model_name, seed, resources, params, log))
    trained_on: list[int] = []  # records per fit: one, or one per fold

    def fit(estimator, records: list, where: str):
        subset = training_subset(task, records, train_fraction, seed)
        trained_on.append(len(subset))
        share = f" ({train_fraction:g} of {len(records)})" if train_fraction != 1 else ""
        log(f"{task.code}: {where}fitting {name} on {len(subset)} records{share}")
        return watch.measure("fit", lambda: estimator.fit(subset, task.modelling.targets(subset)),
                             f"{task.code}: {where}fitting {name}")

    spread = None  # with workers: what the record keeps of them
    folds: list[np.ndarray] = []
    if cv:
        folds = cross_fit_folds(task, dev_records, cv, seed)
        if workers.jobs == 1:
            predictions = _cross_fitted(task, model, seen_train, seen_dev, folds, fit, watch)
        else:
            predictions, spread = _cross_fitted_in_parallel(task, model, name, seen_train, seen_dev, folds,
                                                            train_fraction, seed, workers, trained_on, watch, log)
    else:
        if fitted is None:
            fit(model, seen_train, "")
        log(f"{task.code}: predicting {len(dev_records)} records")
        predictions = watch.measure("predict", lambda: task.modelling.predict(model, seen_dev),
                                    f"{task.code}: predicting")
    metrics = watch.measure("score", lambda: task.scoring.score(dev_records, predictions, resources))
    fold_headline = watch.measure("score", lambda: [
        _headline(task, task.scoring.score([dev_records[i] for i in fold], [predictions[i] for i in fold], resources))
        for fold in folds]) if cv else None
    spread_of_scores = watch.measure("score", lambda: significance.score_intervals(
        task, dev_records, predictions, resources, resamples=INTERVAL_RESAMPLES))
    with_inputs(task, dev_records, predictions)
    record = run_record(task, data, name, model, metrics, cv=cv, seed=seed, saved=fitted is not None,
                        records=(len(train_records), len(dev_records)), seconds=watch.stages)
    record["dev_units"] = spread_of_scores["units"]
    record["intervals"] = {"resamples": INTERVAL_RESAMPLES, "seed": spread_of_scores["seed"], **{
        metric: None if bounds is None else [round(bound, 4) for bound in bounds]
        for metric, bounds in spread_of_scores["intervals"].items()}}
    if params:
        record["params"] = params
    if train_fraction != 1:
        record["train_fraction"] = train_fraction
    record["trained_on"] = trained_on
    if fold_headline is not None:
        record["fold_headline"] = fold_headline  # each held-out fold scored alone: the spread between splits
    if spread is not None:
        record["workers"] = spread
    return record, predictions


def _checked_setting(task: TaskSpec, data: TaskData, cv: int, train_fraction: float, params: dict[str, Any] | None,
                     fitted: tuple[str, Any] | None) -> TaskData:
    """The data to read, once the setting is known to make sense: a dev file, and a training file unless
    the model is fitted already (whose training file is then not read) or cross-fitted."""
    if data.dev is None:
        raise UsageError(f"no evaluation file for {task.code}: give {setting('--dev FILE', 'dev=FILE')} or a "
                         f"{setting('--data-dir', 'data_dir')} holding {task.dev_file}")
    if fitted is not None:
        if cv or params or train_fraction != 1:
            raise UsageError(f"{setting('--cv, --param', 'cv, params')} and training fractions set up a model to "
                             f"train: a saved or fitted model has its own, and is scored as it is")
        return TaskData(None, data.dev, data.extras, data.source, data.is_sample)
    if data.train is None and not cv:
        raise UsageError(f"no training file for {task.code} ({task.train_file}): give "
                         f"{setting('--train FILE', 'train=FILE')}, or {setting('--cv K', 'cv=K')} to cross-fit over "
                         f"the evaluation file")
    return data


def _loaded(task: TaskSpec, data: TaskData, watch: Stopwatch, log: Callable[[str], None]
            ) -> tuple[dict, list, list]:
    """(resources, training records, dev records) of the located data, every record checked."""
    resources = watch.measure("load", lambda: task.resources.load_resources(data.extras))
    log(f"{task.code}: loading {data.dev.name}" + (f" and {data.train.name}" if data.train else ""))
    dev_records = watch.measure("load", lambda: task.reading.load(data.dev))
    train_records = watch.measure("load", lambda: task.reading.load(data.train)) if data.train else []
    check_gold(task, dev_records, data.dev)
    task.resources.check_resource_labels(dev_records, resources, data.dev)
    if data.train:
        check_labelled(task, train_records, data.train)
        task.resources.check_resource_labels(train_records, resources, data.train)
    return resources, train_records, dev_records


def _fold_trains(train_records: list, dev_records: list, folds: list[np.ndarray]) -> list[list]:
    """Each fold's training records: the training file's, and the dev records outside the fold."""
    trains = []
    for fold in folds:
        held_out = set(fold.tolist())
        trains.append(train_records + [r for i, r in enumerate(dev_records) if i not in held_out])
    return trains


def _cross_fitted(task: TaskSpec, model: Any, train_records: list, dev_records: list, folds: list[np.ndarray],
                  fit: Callable, watch: Stopwatch) -> list[dict]:
    """Out-of-fold predictions of the dev records, one fold fitted after another in this process."""
    predictions: list[dict | None] = [None] * len(dev_records)
    cv = len(folds)
    for number, (fold, fold_train) in enumerate(zip(folds, _fold_trains(train_records, dev_records, folds)),
                                                start=1):
        fold_model = fit(model.fold_copy(), fold_train, f"fold {number}/{cv}: ")
        fold_records = [dev_records[i] for i in fold]
        fold_predictions = watch.measure("predict", lambda: task.modelling.predict(fold_model, fold_records),
                                         f"{task.code}: fold {number}/{cv}: predicting")
        for i, prediction in zip(fold, fold_predictions):
            predictions[i] = prediction
    return predictions


def _cross_fitted_in_parallel(task: TaskSpec, model: Any, name: str, train_records: list, dev_records: list,
                              folds: list[np.ndarray], train_fraction: float, seed: int, workers: parallel.Workers,
                              trained_on: list[int], watch: Stopwatch, log: Callable[[str], None]
                              ) -> tuple[list[dict], dict]:
    """Out-of-fold predictions of the dev records, `workers.jobs` folds fitted at once (the same predictions as
    one after another), and what the record keeps of the workers."""
    cv = len(folds)
    subsets = [training_subset(task, fold_train, train_fraction, seed)
               for fold_train in _fold_trains(train_records, dev_records, folds)]
    trained_on.extend(map(len, subsets))
    log(f"{task.code}: fitting {name} on {cv} folds, {workers.jobs} at a time ({workers.backend})")
    calls = [(fit_and_predict, (task.code, model.fold_copy(), subset, [dev_records[i] for i in fold]))
             for subset, fold in zip(subsets, folds)]
    texts = task.reading.texts(train_records + dev_records) if model.uses_morpheme_analysis() else ()
    outcome = watch.measure("cross_fit", lambda: parallel.run(
        calls, workers, lambda index, _result: log(f"{task.code}: fold {index + 1}/{cv} done"), texts),
        f"{task.code}: cross-fitting")
    predictions: list[dict | None] = [None] * len(dev_records)
    for fold, (fold_predictions, _seconds) in zip(folds, outcome.results):
        for i, prediction in zip(fold, fold_predictions):
            predictions[i] = prediction
    spread = {"jobs": workers.jobs, "backend": workers.backend,
              "fold_seconds": [seconds for _predictions, seconds in outcome.results],
              "peak_rss_mb": outcome.worker_peak_rss_mb}  # the largest worker's (None: not measured)
    return predictions, spread


def run_record(task: TaskSpec, data: TaskData, name: str, model: Any, metrics: dict[str, float], *, cv: int,
               seed: int, saved: bool, records: tuple[int, int], seconds: dict[str, float]) -> dict:
    """The record that `run` writes to results/<task>.json: what was run on which files (named and hashed),
    its scores, time and memory, and the versions and machine that gave them."""
    train_records, dev_records = records
    train_file = describe_file(data.train, train_records) if data.train else None
    dev_file = describe_file(data.dev, dev_records)
    files = [entry for entry in (train_file, dev_file) if entry is not None]
    files.extend(describe_file(path) for path in data.extras.values())
    return {
        "task": task.code,
        "model": name,
        "estimator": type(model).__name__,
        "protocol": _protocol(task, data, cv, saved, train_file, dev_file, train_records),
        "cv_folds": cv,
        "dev_records": dev_records,
        "data_source": data.source,
        "sample": data.is_sample,
        "metrics": jsonable_scores(metrics, 6),
        "headline": _headline(task, metrics),
        "files": files,
        "hyper_parameters": _jsonable_params(model),
        "seed": seed,
        "seconds": {stage: round(value, 3) for stage, value in seconds.items()},
        "peak_rss_mb": memory.rounded_peak_mb(),  # this process, from the start of this task
        "versions": versions(),
        "machine": machine(),
        "code": code_version(),
    }


def fit_and_predict(task_code: str, model, train: list, test: list) -> tuple[list[dict], dict[str, float]]:
    """Fit the model on one fold's training records and predict its held-out records: one job of parallel
    cross-fitting, run in a worker. Returns the predictions and the fit and predict seconds."""
    task = get_task(task_code)
    start = time.perf_counter()
    model.fit(train, task.modelling.targets(train))
    fitted = time.perf_counter()
    predictions = task.modelling.predict(model, test)
    return predictions, {"fit": round(fitted - start, 3), "predict": round(time.perf_counter() - fitted, 3)}


def _headline(task: TaskSpec, metrics: dict[str, float]) -> dict[str, float | None]:
    """The task's headline metrics, rounded as records keep them."""
    return jsonable_scores({key: metrics[key] for key in task.scoring.headline if key in metrics}, 4)


def _protocol(task: TaskSpec, data: TaskData, cv: int, saved_model: bool, train_file: dict | None, dev_file: dict,
              train_records: int) -> str:
    if data.is_sample:
        return "sample" + ("-crossfit" if cv else "")
    if saved_model:
        return "saved-model" if stands_for(dev_file, task.dev_file) and not dev_file.get("part") else "custom"
    return protocol_name(task, cv, train_file, dev_file, train_records)


def _jsonable_params(model) -> dict:
    """The model's constructor arguments for the results record; a resource passed in as an argument
    (WoS's ontology) is summarised, not copied."""
    params = model.get_params(deep=False) if hasattr(model, "get_params") else {}

    def describe(value):
        if isinstance(value, (int, float, str, bool, type(None))):
            return value
        if isinstance(value, (dict, list, set)) and len(value) > 10:
            return f"<{type(value).__name__} of {len(value)} entries>"
        return repr(value)

    return {key: describe(value) for key, value in params.items()}


def read_predictions(task: TaskSpec, path: Path, kind: str = prediction_formats.AUTO) -> list[dict]:
    """A prediction file in any format `score` reads (see read_predictions_as)."""
    return read_predictions_as(task, path, kind)[1]


def read_predictions_as(task: TaskSpec, path: Path, kind: str = prediction_formats.AUTO) -> tuple[str, list[dict]]:
    """(the format read, prediction rows) of a file: JSONL keyed by guid; what neural pipelines write (the HF
    example scripts' predict_results and NER predictions.txt, a JSON array, CSV/TSV with a header: see
    baselines.data.prediction_formats); the task's whole-file alternative (MRC's {question_id: answer} object,
    DP's official TSV); or Hugging Face parquet or save_to_disk rows. `kind` forces one of
    prediction_formats.FORMATS; 'auto' tells them apart by content."""
    if kind not in prediction_formats.FORMATS:
        raise UsageError(f"prediction format {kind!r}: expected one of {', '.join(prediction_formats.FORMATS)}")
    exported = hf.exported_rows(path) if kind == prediction_formats.AUTO and (
        path.is_dir() or hf.is_parquet(path)) else None
    if exported is not None:  # parquet or a save_to_disk folder of predictions, as HF users keep them
        exported_kind, rows, features = exported
        return f"hf-{exported_kind}", hf.named_rows(task.code, rows, features, path)
    text = read_text_or_gzip(path)
    if kind == prediction_formats.AUTO:
        kind = prediction_formats.detect(task.code, path, text) or prediction_formats.AUTO
    if kind == "jsonl":
        return kind, [row for _number, row in jsonl_rows(text, path)]
    if kind != prediction_formats.AUTO:
        return kind, prediction_formats.read(task.code, path, text, kind)
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None  # not one JSON document: JSON Lines, or a task's own format
    except RecursionError:
        raise DataError(path, None, "JSON nested too deeply to read") from None
    if isinstance(whole, dict) and "guid" not in whole:
        converted = task.scoring.prediction_files.from_object(whole)
        if converted is not None:
            return "json-object", converted
    if not text_looks_like_jsonl(text.splitlines()):
        if task.scoring.prediction_files.from_file is not None:
            return "task-file", task.scoring.prediction_files.from_file(path)
        raise DataError(path, None, f"expected {task.scoring.prediction_files.described}, {OTHER_PREDICTION_FORMATS}")
    return "jsonl", [row for _number, row in jsonl_rows(text, path)]


# What every task reads besides its own formats, for the error that says what was expected.
OTHER_PREDICTION_FORMATS = ("a Hugging Face predict_results file (index<TAB>prediction), a JSON array, CSV or TSV "
                            "with a header naming a prediction column, NER's predictions.txt, or HF parquet")


def prediction_rows(task: TaskSpec, predictions: Predictions, kind: str = prediction_formats.AUTO,
                    log: Callable[[str], None] = progress.say) -> list[dict]:
    """Prediction dicts from a file in any format `score` reads (`log` hears which it was), a list of them, or
    MRC's {id: answer}."""
    if isinstance(predictions, Path):
        found, rows = read_predictions_as(task, predictions, kind)
        log(f"{predictions}: read as {prediction_formats.DESCRIBED.get(found, found)}, {len(rows):,} predictions")
        return rows
    if isinstance(predictions, dict):
        rows = task.scoring.prediction_files.from_object(predictions)
        if rows is None:
            raise PredictionError(f"expected {task.scoring.prediction_files.described}, not one object")
        return rows
    return list(predictions)


def gold_and_resources(task: TaskSpec, gold: Path | Sequence, data_dir: Path | None) -> tuple[list, dict]:
    """The gold records (a file's or given), checked, and the resources their scorer needs (RE's relation list,
    WoS's ontology): beside the gold file, else from data_dir, the download cache or the sample."""
    gold_path = gold if isinstance(gold, Path) else None
    records = task.reading.load(gold_path) if gold_path else list(gold)
    check_gold(task, records, gold_path or Path("<records>"))
    return records, task.resources.load_resources(locate(task, data_dir, dev=gold_path).extras)


def checked_and_scored(task: TaskSpec, records: list, resources: dict, predictions: Predictions,
                       kind: str = prediction_formats.AUTO, log: Callable[[str], None] = progress.say
                       ) -> tuple[list[dict], dict[str, float]]:
    """(prediction rows, official metrics) of predictions against checked gold; a PredictionError names the
    prediction file."""
    rows = hf.prediction_rows(task.code, prediction_rows(task, predictions, kind, log), [r.guid for r in records],
                              predictions if isinstance(predictions, Path) else Path("<predictions>"))
    try:
        return rows, task.scoring.score(records, rows, resources)
    except PredictionError as error:
        if isinstance(predictions, Path):
            raise PredictionError(f"{predictions}: {error}") from None
        raise
