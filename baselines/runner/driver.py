"""Train, cross-fit and evaluate a task's model, and record what was measured (the run/evaluate driver)."""
from __future__ import annotations

import hashlib
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from sklearn.frozen import FrozenEstimator

from baselines.data import hf, sources
from baselines.data.locate import TaskData
from baselines.data.locate import locate as locate_data

from baselines.runner import tuning

from baselines.runtime import memory, parallel, progress
from baselines.data.fileio import DataError, file_sha256
from baselines.models.params import check_hyper_parameters
from baselines.runtime.provenance import code_version, machine, versions
from baselines.runner.registry import did_you_mean, get_task
from baselines.runner.results import jsonable_scores
from baselines.taskspec import Requirement, TaskSpec, repeated
from features import analysis
from features.gazetteer import EntityGazetteer
from baselines.errors import UsageError, setting


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
    """Name, sha256, record count, and whether the file is byte-identical to the official file of its
    name (None when its name is not an official one). A save_to_disk folder's sha256 is over its files'
    names and sha256s, in name order."""
    if path.is_dir():
        sha256 = hashlib.sha256("".join(f"{p.name}\0{file_sha256(p)}\n" for p in sorted(path.iterdir())
                                        if p.is_file()).encode()).hexdigest()
    else:
        sha256 = file_sha256(path)
    official = sources.official_manifest().get(path.name.replace("-v1_", "-v1.1_"))
    described = {"path": str(path), "name": path.name, "sha256": sha256,
                 "identical_to_official": None if official is None else official.sha256 == sha256}
    if records is not None:
        described["records"] = records
    return described


def build_model(task: TaskSpec, model_name: str | None, seed: int, resources: dict,
                params: dict[str, Any] | None = None, log: Callable[[str], None] = progress.quiet):
    """(name, unfitted model): the task's default model unless named, with `params` set over its defaults.
    A parameter that names another task's training file (a TaskSpec.requires file_param, as MRC's ner_train)
    is satisfied here: that task's default model is fitted on the file, after every other parameter has been
    checked, and set frozen (see fitted_requirement)."""
    name = model_name or task.default_model
    if name not in task.models:
        raise UsageError(f"{task.code} has no model {name!r}; available: {', '.join(task.models)}")
    model = task.models[name].build(seed, resources)
    params = dict(params or {})
    files = {requirement: params.pop(requirement.file_param) for requirement in task.requires
             if requirement.file_param in params}
    check_params(name, model, params)
    for requirement in files:
        check_requirement_taken(name, model, requirement)
    if params:
        model.set_params(**params)
    check_values(name, model)
    for requirement, path in files.items():
        model.set_params(**{requirement.model_param: requirement_value(requirement, path, seed, log)})
    return name, model


def grid_with_requirements(task: TaskSpec, name: str, model: Any, grid: dict[str, Sequence], seed: int,
                           log: Callable[[str], None] = progress.quiet) -> tuple[dict[str, list], dict[str, dict]]:
    """A tuning grid whose keys that name another task's training file (NER's re_train) are replaced by what
    each file gives the model (a gazetteer, a fitted model; None for none), as build_model does for one
    value; and, for the report, {model parameter: {id(value): (file parameter, file)}}."""
    grid = {key: list(values) for key, values in grid.items()}
    shown_files: dict[str, dict[int, Any]] = {}
    for requirement in task.requires:
        if requirement.file_param in grid:
            check_requirement_taken(name, model, requirement)
            files = grid.pop(requirement.file_param)
            values = [None if file is None else requirement_value(requirement, file, seed, log) for file in files]
            grid[requirement.model_param] = values
            shown_files[requirement.model_param] = {id(value): (requirement.file_param, file)
                                                    for value, file in zip(values, files)}
    return grid, shown_files


def check_requirement_taken(name: str, model: Any, requirement: Requirement) -> None:
    """A UsageError unless the model has the parameter that another task's file (`requirement`) sets."""
    if requirement.model_param not in model.get_params():
        raise UsageError(f"{name} takes no {requirement.task} {requirement.provides}, so no "
                         f"{requirement.file_param}")


def requirement_value(requirement: Requirement, path: Any, seed: int, log: Callable[[str], None] = progress.quiet):
    """What `requirement` gives from the other task's training file `path`: its gazetteer or its fitted model."""
    if requirement.provides == "gazetteer":
        return gazetteer_requirement(requirement, path)
    return fitted_requirement(requirement, path, seed, log)


def _required_records(requirement: Requirement, path: Any) -> tuple[TaskSpec, list]:
    """The other task's labelled records in `path`, checked as a training file."""
    if not isinstance(path, (str, Path)) or not Path(path).is_file():
        raise DataError(str(path), None, f"no such file ({requirement.file_param}: {requirement.what})")
    spec = get_task(requirement.task)
    records = spec.load(Path(path))
    check_labelled(spec, records, Path(path))
    return spec, records


def gazetteer_requirement(requirement: Requirement, path: Any) -> EntityGazetteer:
    """The typed entity names of the other task's training file `path`, as a gazetteer."""
    spec, records = _required_records(requirement, path)
    gazetteer = EntityGazetteer(spec.mentions(records))
    if not len(gazetteer):
        raise DataError(Path(path), None, f"no entity names of two characters or more ({requirement.what})")
    return gazetteer


def fitted_requirement(requirement: Requirement, path: Any, seed: int, log: Callable[[str], None] = progress.quiet
                       ) -> FrozenEstimator:
    """The default model of `requirement.task` fitted on the training file `path` with `seed`, frozen: a clone
    of the model that holds it (one per cross-fitting fold) shares it instead of refitting it."""
    spec, records = _required_records(requirement, path)
    name, model = build_model(spec, None, seed, spec.load_resources({}), dict(requirement.settings))
    log(f"{spec.code}: fitting {name} on {len(records)} records from {Path(path).name}, for the "
        f"{requirement.model_param}")
    with progress.heartbeat(f"{spec.code}: fitting {name}", log):
        return FrozenEstimator(model.fit(records, spec.targets(records)))


def check_params(name: str, model, names) -> None:
    unknown = set(names) - set(model.get_params())
    if unknown:
        hints = "".join(did_you_mean(parameter, sorted(model.get_params())) for parameter in sorted(unknown))
        raise UsageError(f"{name} has no hyper-parameters {sorted(unknown)}{hints}; "
                         f"it has {sorted(model.get_params())}")


def check_values(name: str, model) -> None:
    """A UsageError, before any work, when a hyper-parameter value is outside what the model accepts."""
    try:
        check_hyper_parameters(model)
    except ValueError as error:
        raise UsageError(f"{name}: {error}") from None


def _has_missing(target: Any) -> bool:
    """True when a gold target, or any part of it (DP heads, a WoS turn's state), is missing."""
    if target is None:
        return True
    if isinstance(target, (list, tuple)):
        return any(_has_missing(part) for part in target)
    return False


def check_labelled(task: TaskSpec, records: Sequence, path: Path) -> None:
    """The file holds records, each with its gold labels (training and scoring need them), else a DataError
    naming the file and the record."""
    if not records:
        raise DataError(path, None, f"holds no {task.code} records; training and scoring need labelled data")
    for gold, record in zip(task.targets(records), records):
        if _has_missing(gold):
            raise DataError(path, f"guid {record.guid}", "has no gold label (or lacks part of "
                            "it); training and scoring need labelled data")


def with_inputs(task: TaskSpec, records: Sequence, rows: list[dict]) -> list[dict]:
    """Prediction rows that also carry each record's input ('input', as plain_inputs gives it) and, where the
    record is labelled, its gold ('gold', as targets gives it), so that a prediction file reads on its own:
    a wrong answer can be seen beside its question. Scoring ignores both."""
    for row, plain, gold in zip(rows, task.plain_inputs(records), task.targets(records)):
        row["input"] = _as_json(plain)
        if not _has_missing(gold):
            row["gold"] = _as_json(gold)
    return rows


def _as_json(value: Any) -> Any:
    """Tuples as lists, all the way down: a row then equals what its JSON line reads back as."""
    if isinstance(value, (list, tuple)):
        return [_as_json(part) for part in value]
    return value


def check_gold(task: TaskSpec, records: Sequence, path: Path) -> None:
    """A file to score against: not empty, every record labelled, and each guid once (a repeated gold record
    would be scored twice against one prediction)."""
    check_labelled(task, records, path)
    twice = repeated([record.guid for record in records])
    if twice:
        raise DataError(path, f"guid {twice[0]}", f"occurs more than once ({len(twice)} guids are repeated); "
                        "each gold record must have its own guid")


def is_partial(path: Path, task: TaskSpec, official_name: str, records: int) -> bool:
    """Whether a file holds fewer records than the official split it stands for, judged from what was read,
    not from its name ('klue-ner-v1.1_train.tsv' holding 100 sentences, or the first 100 dev records passed
    as --dev). A copy with every record but other bytes (the YNAT and STS training files of ../shared/klue
    lack some fields) is whole, as the data README's protocols have it; whether its bytes are the official
    ones is recorded beside it (describe_file's identical_to_official)."""
    split = "train" if official_name == task.train_file else "dev"
    return records != hf.SCHEMAS[task.code].split_sizes.get(split)


def protocol_name(task: TaskSpec, cv: int, train: Path | None, train_records: int | None = None,
                  dev: Path | None = None, dev_records: int | None = None) -> str:
    """The protocol names of the data README (official, official-partial-train, dev-crossfit, ...), from the
    record counts of the files that were read. Without cross-fitting, a dev file that is not the whole dev
    split adds '-partial-dev'."""
    partial = (train is not None and task.train_file is not None and train_records is not None
               and is_partial(train, task, task.train_file, train_records))
    if not cv:
        partial_dev = dev is not None and dev_records is not None and is_partial(dev, task, task.dev_file,
                                                                                 dev_records)
        return ("official-partial-train" if partial else "official") + ("-partial-dev" if partial_dev else "")
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
    keys = [task.group(record) for record in records] if task.group is not None else list(range(len(records)))
    distinct = list(dict.fromkeys(keys))
    order = np.random.default_rng(seed).permutation(len(distinct))
    kept = {distinct[i] for i in order[:max(1, round(fraction * len(distinct)))]}
    return [record for record, key in zip(records, keys) if key in kept]


def evaluate_task(task: TaskSpec, data: TaskData, model_name: str | None = None, seed: int = 0, cv: int = 0,
                  log: Callable[[str], None] = progress.quiet, train_fraction: float = 1.0,
                  params: dict[str, Any] | None = None, fitted: tuple[str, Any] | None = None,
                  workers: parallel.Workers = parallel.Workers()) -> tuple[dict, list[dict]]:
    """Train on the train file (and, with cv, on the other dev folds), predict the dev file, score it.
    With train_fraction < 1, each fit sees only that share of its training records (a learning curve).
    `params` are hyper-parameters set over the model's defaults. `fitted`, a (name, fitted model) pair such as
    a saved model, is scored as it is: nothing is trained and the training file is not read. With cv, `workers`
    says how many folds are fitted at once, and where; the predictions are the same for any setting.

    Returns the record that `run` writes to results/<task>.json, and the predictions that were scored (one
    per dev record, in its order; out-of-fold with cv).
    """
    watch = Stopwatch(log=log)
    memory.reset_peak()  # this task's own peak, not that of a task run before it in this process
    if data.dev is None:
        raise UsageError(f"no evaluation file for {task.code}: give {setting('--dev FILE', 'dev=FILE')} or a "
                         f"{setting('--data-dir', 'data_dir')} holding {task.dev_file}")
    if fitted is not None:
        if cv or params or train_fraction != 1:
            raise UsageError(f"{setting('--cv, --param', 'cv, params')} and training fractions set up a model to "
                             f"train: a saved or fitted model has its own, and is scored as it is")
        data = TaskData(None, data.dev, data.extras, data.source, data.is_sample)
    elif data.train is None and not cv:
        raise UsageError(f"no training file for {task.code} ({task.train_file}): give "
                         f"{setting('--train FILE', 'train=FILE')}, or {setting('--cv K', 'cv=K')} to cross-fit over "
                         f"the evaluation file")
    resources = watch.measure("load", lambda: task.load_resources(data.extras))
    log(f"{task.code}: loading {data.dev.name}" + (f" and {data.train.name}" if data.train else ""))
    dev_records = watch.measure("load", lambda: task.load(data.dev))
    train_records = watch.measure("load", lambda: task.load(data.train)) if data.train else []
    check_gold(task, dev_records, data.dev)
    task.check_resource_labels(dev_records, resources, data.dev)
    if data.train:
        check_labelled(task, train_records, data.train)
        task.check_resource_labels(train_records, resources, data.train)
    name, model = fitted if fitted is not None else watch.measure(
        "fit", lambda: build_model(task, model_name, seed, resources, params, log))

    trained_on: list[int] = []

    def fit(estimator, records: list, where: str):
        subset = training_subset(task, records, train_fraction, seed)
        trained_on.append(len(subset))
        share = f" ({train_fraction:g} of {len(records)})" if train_fraction != 1 else ""
        log(f"{task.code}: {where}fitting {name} on {len(subset)} records{share}")
        return watch.measure("fit", lambda: estimator.fit(subset, task.targets(subset)),
                             f"{task.code}: {where}fitting {name}")

    spread = None  # with workers: what the record keeps of them
    if cv:
        predictions: list[dict | None] = [None] * len(dev_records)
        folds = cross_fit_folds(task, dev_records, cv, seed)
        fold_trains = []
        for fold in folds:
            held_out = set(fold.tolist())
            fold_trains.append(train_records + [r for i, r in enumerate(dev_records) if i not in held_out])
        if workers.jobs == 1:
            for number, (fold, fold_train) in enumerate(zip(folds, fold_trains), start=1):
                fold_model = fit(model.fold_copy(), fold_train, f"fold {number}/{cv}: ")
                fold_records = [dev_records[i] for i in fold]
                for i, prediction in zip(fold, watch.measure("predict", lambda: task.predict(fold_model, fold_records),
                                                             f"{task.code}: fold {number}/{cv}: predicting")):
                    predictions[i] = prediction
        else:
            subsets = [training_subset(task, fold_train, train_fraction, seed) for fold_train in fold_trains]
            trained_on.extend(map(len, subsets))
            log(f"{task.code}: fitting {name} on {cv} folds, {workers.jobs} at a time ({workers.backend})")
            calls = [(fit_and_predict, (task.code, model.fold_copy(), subset, [dev_records[i] for i in fold]))
                     for subset, fold in zip(subsets, folds)]
            texts = task.texts(train_records + dev_records) if model.uses_morpheme_analysis() else ()
            outcome = watch.measure("cross_fit", lambda: parallel.run(
                calls, workers, lambda index, _result: log(f"{task.code}: fold {index + 1}/{cv} done"), texts),
                f"{task.code}: cross-fitting")
            for fold, (fold_predictions, _seconds) in zip(folds, outcome.results):
                for i, prediction in zip(fold, fold_predictions):
                    predictions[i] = prediction
            spread = {"jobs": workers.jobs, "backend": workers.backend,
                      "fold_seconds": [seconds for _predictions, seconds in outcome.results],
                      "peak_rss_mb": outcome.worker_peak_rss_mb}  # the largest worker's (None: not measured)
    else:
        if fitted is None:
            fit(model, train_records, "")
        log(f"{task.code}: predicting {len(dev_records)} records")
        predictions = watch.measure("predict", lambda: task.predict(model, dev_records), f"{task.code}: predicting")
    metrics = watch.measure("score", lambda: task.score(dev_records, predictions, resources))
    fold_headline = watch.measure("score", lambda: [
        _headline(task, task.score([dev_records[i] for i in fold], [predictions[i] for i in fold], resources))
        for fold in folds]) if cv else None
    with_inputs(task, dev_records, predictions)
    files = [describe_file(data.dev, len(dev_records))]
    if data.train:
        files.insert(0, describe_file(data.train, len(train_records)))
    files.extend(describe_file(path) for path in data.extras.values())
    record = {
        "task": task.code,
        "model": name,
        "estimator": type(model).__name__,
        "protocol": _protocol(task, data, cv, fitted is not None, len(train_records), len(dev_records)),
        "cv_folds": cv,
        "data_source": data.source,
        "sample": data.is_sample,
        "metrics": jsonable_scores(metrics, 6),
        "headline": _headline(task, metrics),
        "files": files,
        "hyper_parameters": _jsonable_params(model),
        "seed": seed,
        "seconds": {stage: round(value, 3) for stage, value in watch.stages.items()},
        "peak_rss_mb": memory.rounded_peak_mb(),  # this process, from the start of this task
        "versions": versions(),
        "machine": machine(),
        "code": code_version(),
    }
    if params:
        record["params"] = params
    if train_fraction != 1:
        record["train_fraction"] = train_fraction
    record["trained_on"] = trained_on  # records per fit: one, or one per fold
    if fold_headline is not None:
        record["fold_headline"] = fold_headline  # each held-out fold scored alone: the spread between splits
    if spread is not None:
        record["workers"] = spread
    return record, predictions


def fit_and_predict(task_code: str, model, train: list, test: list) -> tuple[list[dict], dict[str, float]]:
    """Fit the model on one fold's training records and predict its held-out records: one job of parallel
    cross-fitting, run in a worker. Returns the predictions and the fit and predict seconds."""
    task = get_task(task_code)
    start = time.perf_counter()
    model.fit(train, task.targets(train))
    fitted = time.perf_counter()
    predictions = task.predict(model, test)
    return predictions, {"fit": round(fitted - start, 3), "predict": round(time.perf_counter() - fitted, 3)}


def _headline(task: TaskSpec, metrics: dict[str, float]) -> dict[str, float | None]:
    """The task's headline metrics, rounded as records keep them."""
    return jsonable_scores({key: metrics[key] for key in task.headline if key in metrics}, 4)


def _protocol(task: TaskSpec, data: TaskData, cv: int, saved_model: bool, train_records: int,
              dev_records: int) -> str:
    if data.is_sample:
        return "sample" + ("-crossfit" if cv else "")
    return "saved-model" if saved_model else protocol_name(task, cv, data.train, train_records, data.dev, dev_records)


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


def __getattr__(name: str) -> Any:
    """resolve_data, which baselines.data.locate.locate is now, for one release."""
    if name != "resolve_data":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn("baselines.runner.driver.resolve_data is now baselines.data.locate.locate; the old name goes in "
                  "the next release", DeprecationWarning, stacklevel=2)
    return locate_data
