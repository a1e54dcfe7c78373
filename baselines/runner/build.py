"""Build a task's model, with what other tasks' files give it, and fit it: the one place models are made."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from sklearn.frozen import FrozenEstimator

from baselines.data.fileio import DataError, check_output_file
from baselines.data.locate import TaskData
from baselines.errors import UsageError, setting
from baselines.models.params import check_hyper_parameters
from baselines.runner.persistence import save_model
from baselines.runner.registry import did_you_mean, get_task
from baselines.runtime import progress
from baselines.runtime.provenance import versions
from baselines.taskspec import Requirement, TaskSpec
from features.gazetteer import EntityGazetteer

Log = Callable[[str], None]


def build_model(task: TaskSpec, model_name: str | None, seed: int, resources: dict,
                params: dict[str, Any] | None = None, log: Callable[[str], None] = progress.quiet):
    """(name, unfitted model): the task's default model unless named, with `params` set over its defaults.
    A parameter that names another task's training file (a TaskSpec.links.requires file_param, as MRC's ner_train)
    is satisfied here: that task's default model is fitted on the file, after every other parameter has been
    checked, and set frozen (see fitted_requirement)."""
    name = model_name or task.modelling.default_model
    if name not in task.modelling.models:
        raise UsageError(f"{task.code} has no model {name!r}; available: {', '.join(task.modelling.models)}")
    model = task.modelling.models[name].build(seed, resources)
    params = dict(params or {})
    files = {requirement: params.pop(requirement.file_param) for requirement in task.links.requires
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
    for requirement in task.links.requires:
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
    if requirement.provides != "gazetteer":
        return fitted_requirement(requirement, path, seed, log)
    return gazetteer_requirement(requirement, path)


def _required_records(requirement: Requirement, path: Any) -> tuple[TaskSpec, list]:
    """The other task's labelled records in `path`, checked as a training file."""
    if not isinstance(path, (str, Path)) or not Path(path).is_file():
        raise DataError(str(path), None, f"no such file ({requirement.file_param}: {requirement.what})")
    spec = get_task(requirement.task)
    records = spec.reading.load(Path(path))
    check_labelled(spec, records, Path(path))
    return spec, records


def gazetteer_requirement(requirement: Requirement, path: Any) -> EntityGazetteer:
    """The typed entity names of the other task's training file `path`, as a gazetteer."""
    spec, records = _required_records(requirement, path)
    gazetteer = EntityGazetteer(spec.links.mentions(records))
    if not len(gazetteer):
        raise DataError(Path(path), None, f"no entity names of two characters or more ({requirement.what})")
    return gazetteer


def fitted_requirement(requirement: Requirement, path: Any, seed: int, log: Callable[[str], None] = progress.quiet
                       ) -> FrozenEstimator:
    """The default model of `requirement.task` fitted on the training file `path` with `seed`, frozen: a clone
    of the model that holds it (one per cross-fitting fold) shares it instead of refitting it."""
    spec, records = _required_records(requirement, path)
    name, model = build_model(spec, None, seed, spec.resources.load_resources({}), dict(requirement.settings))
    log(f"{spec.code}: fitting {name} on {len(records)} records from {Path(path).name}, for the "
        f"{requirement.model_param}")
    with progress.heartbeat(f"{spec.code}: fitting {name}", log):
        return FrozenEstimator(model.fit(records, spec.modelling.targets(records)))


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


def has_missing(target: Any) -> bool:
    """True when a gold target, or any part of it (DP heads, a WoS turn's state), is missing."""
    if target is None:
        return True
    if isinstance(target, (list, tuple)):
        return any(has_missing(part) for part in target)
    return False


def check_labelled(task: TaskSpec, records: Sequence, path: Path) -> None:
    """The file holds records, each with its gold labels (training and scoring need them), else a DataError
    naming the file and the record."""
    if not records:
        raise DataError(path, None, f"holds no {task.code} records; training and scoring need labelled data")
    for gold, record in zip(task.modelling.targets(records), records):
        if has_missing(gold):
            raise DataError(path, f"guid {record.guid}", "has no gold label (or lacks part of "
                            "it); training and scoring need labelled data")


def fitted_model(task: TaskSpec, records: list, resources: dict, model_name: str | None = None, seed: int = 0,
                 params: dict[str, Any] | None = None, log: Log = progress.quiet, where: Path | None = None) -> Any:
    """`model_name` (the task's default if None) built with its resources and `params`, and fitted on the
    labelled `records` (read from the file `where`, if from one)."""
    source = where or Path("<records>")
    check_labelled(task, records, source)
    task.resources.check_resource_labels(records, resources, source)
    name, model = build_model(task, model_name, seed, resources, params, log)
    log(f"{task.code}: fitting {name} on {len(records)} records" + (f" from {where}" if where else ""))
    with progress.heartbeat(f"{task.code}: fitting {name}", log):
        return model.fit(records, task.modelling.targets(records))


def training_path(task: TaskSpec, data: TaskData) -> Path:
    """The located training file, or a UsageError saying how to give one."""
    if data.train is None:
        raise UsageError(f"no training file for {task.code}: give {setting('--train FILE', 'train=FILE')} or "
                         f"{setting('--data-dir', 'data_dir')}")
    return data.train


def fitted_on_training_file(task: TaskSpec, data: TaskData, model_name: str | None = None, seed: int = 0,
                            params: dict[str, Any] | None = None, log: Log = progress.quiet) -> Any:
    """`model_name` fitted on the located data's training file, with the resources found beside it."""
    path = training_path(task, data)
    return fitted_model(task, task.reading.load(path), task.resources.load_resources(data.extras), model_name, seed,
                        params, log, path)


def train_and_save(task: TaskSpec, data: TaskData, out: Path, model_name: str | None = None, seed: int = 0,
                   params: dict[str, Any] | None = None, log: Log = progress.quiet) -> Path:
    """Fit `model_name` on the located training file and save it to `out` (see persistence.save_model),
    the output checked before any work. Returns `out`."""
    path = training_path(task, data)
    check_output_file(out, [path])
    model = fitted_on_training_file(task, data, model_name, seed, params, log)
    save_model(out, model, task.code, model_name or task.modelling.default_model, [path], versions())
    return out
