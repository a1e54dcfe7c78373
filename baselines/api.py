"""The Python API: the steps the command line takes, as plain calls for notebooks and scripts.

    from baselines import api
    X, y = api.load_xy("ynat", "ynat-v1.1_train.json", plain=True)   # titles and topics
    model = api.fit("ynat", "ynat-v1.1_train.json")                  # or api.make_model("ynat").fit(X, y)
    api.predict("ynat", model, ["손흥민 시즌 10호 골"])                # prediction rows, as `predict` writes
    api.score("ynat", "ynat-v1.1_dev.json", "predictions.jsonl")     # the official metrics

What there is, by what you do with it (each function's own docstring says more):

Data         `data_file`, `locate`, `training_file`, `load`, `load_xy`, `resources`, `records_from_hf`,
             `load_hub`, `task_spec`
Models       `model_name`, `make_model`, `fit`, `train`, `load_model`, `saved_or_fitted`, `predict`,
             `predict_file`
Scores       `score`, `read_predictions`, `metric`, `evaluate`, `run`, `seed_spread`, `learning_curve`, `tune`
Sanity       `probe`
Teaching     `explain`, `check_explainable`, `explanation_table`, `report`, `report_figures`,
             `report_figure_paths`, `compare`, `show`, `analyze`, `features`, `use_korean_font`,
             `learning_curve_figure`, `results_figure`
A class      `train_all`, `ready_model`, `class_model`
Setting up   `download`, `doctor`
Benchmarks   `scale`, `peers`, `determinism`, `analysis_speed`, `long_inputs`, `budget`, `reproduce`,
             `recorded_version_notes`

Every function takes a task code ('ynat', 'sts', 'nli', 'ner', 're', 'dp', 'mrc', 'wos'). Files may be
official files, Hugging Face `klue` exports (baselines.data.hf) or the raw JSONL that `predict` reads; errors are
DataError, PredictionError or UsageError with a one-line message that names the file and the record.
"""
from __future__ import annotations

import contextvars
import functools
import inspect
import os
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

from baselines.data.locate import TaskData
from baselines.data.locate import locate as find_data
from baselines.data import hf, sources
from baselines.display import html as html_display
from baselines.display.html import Shown

from baselines.metrics import significance

from baselines.runner import (build, evaluate as evaluation, figures, jobs as running, persistence, plots, probes,
                              ready, reports, results, tables)

from baselines.runtime import progress
from baselines.bench import analysis as analysis_bench
from baselines.bench import budget as budget_bench
from baselines.bench import determinism as determinism_bench
from baselines.bench import doctor as doctor_checks
from baselines.bench import long_inputs as long_inputs_bench
from baselines.bench import reproduce as reproduce_bench
from baselines.bench import peers as peers_bench
from baselines.bench import scale as scale_bench
from baselines.metrics import trainer_metrics
from baselines.data.fileio import DataError, check_output_file, check_output_folder, write_jsonl_atomic  # noqa: F401
from baselines.runtime.parallel import Workers, local_jobs
from baselines.runner.registry import TASK_CODES, all_tasks, get_task, task_code
from baselines.taskspec import TaskSpec
from features import analysis
from features.morphemes import eojeol_spans
# DataError, PredictionError and UsageError are what every function raises: callers catch them as api.DataError, ...
from baselines.errors import caller_stacklevel, PredictionError, SampleDataWarning, setting, UsageError
from baselines.runtime.provenance import versions

PathLike = str | os.PathLike
Log = Callable[[str], None]
# `log` tells what long work is doing: by default one line on stderr each (progress.say), which a terminal
# and a notebook both show; progress.quiet (or any function) instead.
quiet = progress.quiet


_SAMPLE_WARNED: set[str] = set()  # tasks warned about in this process: once each is enough
_IN_API_CALL: contextvars.ContextVar[bool] = contextvars.ContextVar("in_api_call", default=False)


def _is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


def _path_or_none(value: PathLike | None, expand: bool = False) -> Path | None:
    """A folder or file given by name, as a Path (with ~ read where `expand`); None stays None."""
    if value is None:
        return None
    return Path(value).expanduser() if expand else Path(value)


def _named_task(function: Callable) -> Callable:
    """`function` with its first argument, a task name, checked first and read in any case ('YNAT'); an
    unknown name raises registry.UnknownTask with the closest task. Where it takes `log` and is left to say
    what it does on stderr, Kiwi's analysis draws its progress there too (_show_progress)."""
    signature = inspect.signature(function)
    takes_log = "log" in signature.parameters

    @functools.wraps(function)
    def wrapper(task: str, *args: Any, **kwargs: Any) -> Any:
        code = task_code(task)
        if takes_log and not _IN_API_CALL.get():
            # `log` may come by position (run passes it so to locate), and a missed one would draw bars under -q.
            given = signature.bind_partial(code, *args, **kwargs).arguments
            _show_progress(given.get("log", progress.say))
        # Only the caller's own call decides: one API function calling another with its default log (resources
        # calls locate so) would otherwise put bars up under the caller's quiet log, or the CLI's -q.
        entered = _IN_API_CALL.set(True)
        try:
            return function(code, *args, **kwargs)
        finally:
            _IN_API_CALL.reset(entered)
    return wrapper


def _show_progress(log: Log) -> None:
    """Progress bars for Kiwi's analysis in the Python API (tqdm's in a notebook where tqdm is installed),
    when `log` is the default that speaks on stderr; the CLI sets up click's own, or none with --quiet."""
    if log is progress.say:
        analysis.show_progress(progress.text_progress(log))


@_named_task
def data_file(task: str, split: str = "train", data_dir: PathLike | None = None) -> Path:
    """The path of a task's official 'train' or 'dev' file under data_dir (else $KLUE_DATA_DIR, the download
    cache, or the shipped sample, as `run` looks them up)."""
    split = _split(split)
    data = locate(task, data_dir)
    path = data.train if split == "train" else data.dev
    if path is None:
        raise UsageError(f"no {split} file for {task} in {data.source}")
    return path


def _split(name: str) -> str:
    """'train' or 'dev' for this project's split names and Hugging Face's ('validation' is the dev split)."""
    split = {"train": "train", "dev": "dev", "validation": "dev"}.get(str(name).lower())
    if split is None:
        raise UsageError(f"split must be 'train' or 'dev' ('validation' as Hugging Face calls it), "
                         f"not {name!r}")
    return split


@_named_task
def locate(task: str, data_dir: PathLike | None = None, train: PathLike | None = None, dev: PathLike | None = None,
           log: Log = progress.say) -> TaskData:
    """The files a task uses: `train`/`dev` where given, else those of data_dir, $KLUE_DATA_DIR, the download
    cache, or the shipped sample (which `log` is told about: its scores are not KLUE results)."""
    spec = get_task(task)
    data = find_data(spec, Path(data_dir).expanduser() if data_dir else None, train, dev)
    if data.is_sample:
        message = (f"{task}: no data directory configured: using the small sample shipped with the package. These "
                   "are SAMPLE scores, not KLUE results.")
        if log is progress.say:  # a notebook shows a warning apart; the CLI has its own line for it
            if task not in _SAMPLE_WARNED:
                _SAMPLE_WARNED.add(task)
                warnings.warn(SampleDataWarning(message), stacklevel=caller_stacklevel())
        else:
            log(message)
    return data


@_named_task
def load(task: str, path: PathLike) -> list:
    """The records of an official file, or of the raw JSONL that `predict` reads (labels where given)."""
    spec = get_task(task)
    return (spec.reading.load_input or spec.reading.load)(Path(path))


@_named_task
def records_from_hf(task: str, rows: Any) -> list:
    """Records of the Hugging Face klue config of the task: a `datasets.Dataset` (its ClassLabel names read
    from its `.features`), or its rows as it gives them (`list(ds)`, `ds.to_list()`: integer labels read in
    the shipped order). The same conversion that reads HF exports from files."""
    spec = get_task(task)
    features = getattr(rows, "features", None)
    features = features.to_dict() if hasattr(features, "to_dict") else None
    rows = rows.to_list() if hasattr(rows, "to_list") else list(rows)
    where = Path(f"<Hugging Face klue {hf.SCHEMAS[task].config} rows>")
    return spec.reading.from_hf(hf.named_rows(task, rows, features, where), where)


@_named_task
def load_hub(task: str, split: str = "validation") -> list:
    """The records of a split of the `klue` dataset on the Hugging Face hub, through `datasets.load_dataset`
    (the `hf` extra, and network access to the hub); the conversion is records_from_hf."""
    try:
        import datasets
    except ImportError:
        raise UsageError('loading from the Hugging Face hub needs the datasets package: pip install '
                         '"klue-baselines[hf]"') from None
    return records_from_hf(task, datasets.load_dataset("klue/klue", hf.SCHEMAS[task].config,
                                                       split=hf.SPLIT_NAMES[_split(split)]))


@_named_task
def load_xy(task: str, path: PathLike, plain: bool = False) -> tuple[list, list]:
    """(X, y) of a labelled official file, ready for `fit`: X as the task's records, or with plain=True as
    plain inputs (titles, sentence pairs, sentences, raw-row dicts), which every model also takes."""
    spec = get_task(task)
    records = spec.reading.load(Path(path))
    build.check_labelled(spec, records, Path(path))
    return (spec.reading.plain_inputs(records) if plain else records), spec.modelling.targets(records)


@_named_task
def resources(task: str, data_dir: PathLike | None = None, train: PathLike | None = None) -> dict:
    """What a task's models and scorer need besides the data (RE's relation list, WoS's ontology): beside
    `train` when given, else from the data directory, the download cache or the shipped sample."""
    spec = get_task(task)
    return spec.resources.load_resources(locate(task, data_dir, train=train).extras)


@_named_task
def model_name(task: str, model: str | None = None, pos: str | None = None) -> str:
    """The name of the model to build: `model`, else for `pos` ('gold' or 'kiwi') the model of a task that
    parses with the data's POS or with Kiwi's (DP), else the task's default."""
    spec = get_task(task)
    if pos is None:
        return model or spec.modelling.default_model
    if not spec.modelling.model_for_pos:
        raise UsageError(f"{setting('--pos', 'pos')} applies to: "
                         f"{', '.join(t.code for t in all_tasks() if t.modelling.model_for_pos)}")
    if model is not None:
        raise UsageError(f"give {setting('--pos', 'pos')} or {setting('--model', 'model')}, not both")
    if pos not in spec.modelling.model_for_pos:
        raise UsageError(f"pos must be one of {sorted(spec.modelling.model_for_pos)}, not {pos!r}")
    return spec.modelling.model_for_pos[pos]


@_named_task
def make_model(task: str, model: str | None = None, *, seed: int = 0, data_dir: PathLike | None = None,
               **params: Any):
    """An unfitted estimator: the task's default model, or `model` ('fast' for speed, 'trivial' for the floor), with
    `params` set over its defaults and checked against the model's constraints."""
    spec = get_task(task)
    _name, estimator = build.build_model(spec, model, seed, resources(task, data_dir), params)
    return estimator


@_named_task
def fit(task: str, train: PathLike | Sequence, model: str | None = None, *, seed: int = 0,
        data_dir: PathLike | None = None, log: Log = progress.say, **params: Any):
    """A model fitted on a labelled file (path) or on labelled records. Its resources (RE's relation list,
    WoS's ontology) come from beside the file, else from data_dir, the download cache or the sample."""
    spec = get_task(task)
    if _is_path(train):
        path = Path(train)
        return build.fitted_model(spec, spec.reading.load(path), resources(task, data_dir, path), model, seed, params,
                                  log, path)
    return build.fitted_model(spec, list(train), resources(task, data_dir), model, seed, params, log)


@_named_task
def training_file(task: str, data_dir: PathLike | None = None, train: PathLike | None = None,
                  log: Log = progress.say) -> Path:
    """The task's training file: `train`, else the data directory's (see `locate`); a UsageError if none."""
    return build.training_path(get_task(task), locate(task, data_dir, train=train, log=log))


@_named_task
def train(task: str, out: PathLike, model: str | None = None, *, data_dir: PathLike | None = None,
          train: PathLike | None = None, seed: int = 0, log: Log = progress.say, **params: Any) -> Path:
    """Fit a model on the task's training file (`train`, else the data directory's) and save it to `out`:
    a metadata header, then the model (skops with the `secure` extra, else a joblib pickle). Returns `out`."""
    data = locate(task, data_dir, train=train, log=log)
    return build.train_and_save(get_task(task), data, Path(out), model, seed, params, log)


def train_all(tasks: Sequence[str] = (), *, data_dir: PathLike | None = None, models_dir: PathLike | None = None,
              seed: int = 0, command: str | None = None, log: Log = progress.say) -> list[dict]:
    """Train every task's default model (or those of `tasks`) on the official data and save them as the ready
    models of `models_dir` (default: $KLUE_MODELS_DIR, else the per-user cache), each scored on its dev file;
    the folder's README.md and models.json record the data, the command, the time, the size and the scores.
    Returns those records."""
    codes = [task_code(task) for task in tasks] or list(TASK_CODES)
    _show_progress(log)
    folder = ready.models_dir(models_dir)
    return ready.train_all(codes, Path(data_dir).expanduser() if data_dir else None, folder, seed, command, log)


@_named_task
def ready_model(task: str, models_dir: PathLike | None = None, trust_pickle: bool = False) -> Any | None:
    """The task's ready model (see train_all) in `models_dir` (default: $KLUE_MODELS_DIR, else the per-user
    cache), or None when there is none. Files saved without the `secure` extra are pickles: see load_model."""
    found = ready.ready_model(task, ready.models_dir(models_dir), trust_pickle)
    return None if found is None else found[0]


@_named_task
def class_model(task: str, models_dir: PathLike | None = None, log: Log = progress.say) -> Any:
    """The model a lesson uses: the task's ready model where there is one (trained on the official data), else
    its default model fitted on the training file that `data_file` finds (the shipped sample in class: seconds,
    and weaker). `log` says which."""
    folder = ready.models_dir(models_dir)
    found = ready.ready_model(task, folder)
    if found is not None:
        model, entry = found
        trained_on = entry.get("train", {}).get("name", "its training file")
        log(f"{task}: using the ready model {ready.model_path(folder, task)} (trained on {trained_on})")
        return model
    spec, data = get_task(task), locate(task)  # a sample is warned about, as data_file warns
    log(f"{task}: no ready model in {folder}: fitting {spec.modelling.default_model} on "
        f"{build.training_path(spec, data).name}")
    return build.fitted_on_training_file(spec, data, log=log)


@_named_task
def saved_or_fitted(task: str, model_file: PathLike | None = None, model: str | None = None, *,
                    data_dir: PathLike | None = None, train: PathLike | None = None, seed: int = 0,
                    pos: str | None = None, trust_pickle: bool = False, log: Log = progress.say, **params: Any) -> Any:
    """The model that `predict` and `explain` use: the one saved in `model_file` (see load_model for
    trust_pickle), else `model` (see `model_name` for `pos`) fitted on the training file. Hyper-parameters,
    a model name or `pos` with a saved model are a UsageError: a saved model has its own."""
    if model_file is not None:
        if params or model is not None or pos is not None:
            raise UsageError(f"{setting('--param, --pos', 'hyper-parameters, pos')} and a model name set up "
                             f"a model to train: a saved model ({setting('--model FILE', 'model_file')}) has "
                             f"its own")
        return load_model(task, model_file, trust_pickle)[1]
    return build.fitted_on_training_file(get_task(task), locate(task, data_dir, train=train, log=log),
                                         model_name(task, model, pos), seed, params, log)


@_named_task
def load_model(task: str, path: PathLike, trust_pickle: bool = False) -> tuple[str, Any]:
    """(model name, model) of a file that `train` wrote. Its header is checked before the model is read, and
    the model after: it must be a fitted estimator of the class that the header's model name makes. A file
    saved without the `secure` extra is a pickle, which can run code: it loads only with trust_pickle=True,
    which you should give only to files from a trusted source."""
    estimator, metadata = persistence.load_model(Path(path), task, versions(), trust_pickle)
    return metadata["model"], estimator


def _input_records(spec: TaskSpec, inputs: PathLike | Sequence) -> list:
    """Records of an input file (official or raw JSONL), of records, or of plain inputs. A str names a file: one
    that names none is taken for a text given alone, and refused with how to pass it."""
    if isinstance(inputs, str) and not Path(inputs).expanduser().exists():
        raise UsageError(f"{spec.code}: no file {inputs[:60]!r}; to give text rather than a file, pass a list, as "
                         f"[{inputs[:40]!r}]")
    return load(spec.code, inputs) if _is_path(inputs) else spec.reading.as_records(list(inputs))


@_named_task
def predict(task: str, model: Any, inputs: PathLike | Sequence, log: Log = progress.say) -> list[dict]:
    """Prediction rows as `predict` writes them (one dict per input, keyed by guid, with the input and any
    gold label beside the prediction; plain inputs are named 'input-N'). `inputs` is a file, records, or
    plain inputs (a list of them, even for one). Long work says how long it has run through `log`."""
    spec = get_task(task)
    records = _input_records(spec, inputs)
    with progress.heartbeat(f"{task}: predicting {len(records)} inputs", log):
        return evaluation.with_inputs(spec, records, spec.modelling.predict(model, records))


@_named_task
def show(task: str, rows: Sequence[dict], explanation: dict | None = None, limit: int | None = 50) -> Shown:
    """Prediction rows (as `predict` returns them) drawn: NER's entities highlighted by type, DP's tree as arcs,
    RE's relation between its marked entities, MRC's answer in its passage, labels and scores with their
    likeliest classes, WoS's state after each user turn. With an `explanation` of the same inputs (`explain`
    with inputs: YNAT, NLI, RE), each label beside the features that pushed it. A notebook shows the result
    as it is; `.page()` is a page of its own and `.save(path)` writes it. At most `limit` rows (None: all)."""
    spec = get_task(task)
    return html_display.show(task, rows, spec.presentation.drawer, explanation, limit, spec.presentation.legend)


@_named_task
def predict_file(task: str, inputs: PathLike, output: PathLike | None = None, *, model_file: PathLike | None = None,
                 model: str | None = None, data_dir: PathLike | None = None, train: PathLike | None = None,
                 seed: int = 0, pos: str | None = None, output_format: str = "jsonl", trust_pickle: bool = False,
                 log: Log = progress.say, **params: Any) -> list[dict]:
    """`predict`: the prediction rows of an input file, from a saved model (`model_file`) or from `model` (see
    `model_name` for `pos`) trained on the training file first. With `output`, the rows are also written there,
    whole or not at all: as JSON Lines; with output_format='hf' as Hugging Face users keep predictions (JSON
    Lines in the input's order, without guids, ClassLabel indices: see hf.to_hf_predictions); with 'html' as a
    page that draws them (see `show`); or in a format of the task's own (DP: 'tsv', the official layout, and
    'conllu')."""
    spec = get_task(task)
    writers = spec.scoring.prediction_files.writers
    if output_format not in ("jsonl", "hf", "html", *writers) or (output_format in ("html", *writers)
                                                                 and output is None):
        own = ", ".join(f"{name} ({t.code})" for t in all_tasks() for name in t.scoring.prediction_files.writers)
        raise UsageError(f"{setting('--format', 'output_format')} {output_format}: every task writes jsonl, hf "
                         f"and html (a page that draws them); html and {own} need "
                         f"{setting('--output FILE', 'output=FILE')}, and {own} exist for those tasks only")
    if output is not None:
        check_output_file(Path(output), [Path(inputs), model_file, train])
    records = load(task, inputs)  # read before any training: a bad input fails at once
    if model_file is None and model is None and pos is None and "kiwi" in spec.modelling.model_for_pos \
            and not all(word.pos for record in records for word in record.words):
        # Raw text has no POS of its own: the parser trained on Kiwi's tags reads it as it was trained.
        pos = "kiwi"
        log(f"{task}: the input has no POS tags, so Kiwi tags it: using {spec.modelling.model_for_pos[pos]}, the model "
            f"trained on Kiwi's tags ({setting('--pos gold', 'pos=gold')} for the one trained on the data's own)")
    estimator = saved_or_fitted(task, model_file, model, data_dir=data_dir, train=train, seed=seed, pos=pos,
                                trust_pickle=trust_pickle, log=log, **params)
    rows = evaluation.with_inputs(spec, records, spec.modelling.predict(estimator, records))
    if output is not None:
        if output_format == "html":
            show(task, rows, limit=None).save(Path(output))
        elif output_format in writers:
            writers[output_format](Path(output), records, rows)
        else:
            write_jsonl_atomic(Path(output), hf.to_hf_predictions(task, rows) if output_format == "hf" else rows)
        log(f"{len(rows)} predictions written to {output} ({output_format})")
    return rows


@_named_task
def check_explainable(task: str, model: Any, per_input: bool = False) -> None:
    """A UsageError unless `model` (fitted or not) can show its features, and with per_input, explain single
    inputs: checked before any training."""
    if not hasattr(model, "top_features"):
        raise UsageError(f"a {type(model).__name__} has no learnt features to show (a trivial floor, or "
                         "STS's gradient boosting, whose trees have no weights per feature)")
    unexplained = getattr(model, "unexplained", None)
    problem = unexplained() if callable(unexplained) else None
    if problem:
        raise UsageError(problem)
    if per_input and not (hasattr(model, "feature_contributions") or hasattr(model, "character_contributions")):
        raise UsageError(f"explaining single inputs needs a linear classifier (YNAT, NLI, RE) or NER's CRF; "
                         f"a {type(model).__name__} shows only what it learnt (leave out "
                         f"{setting('--input', 'inputs')})")


@_named_task
def explain(task: str, model: Any, top_k: int = 10, inputs: PathLike | Sequence | None = None,
            per_input: int = 5) -> dict:
    """What a fitted model learnt: its strongest features per class or label, `top_k` each (see
    baselines.models.explain), under 'sections'. With `inputs` (a file, records or plain inputs), under 'examples':
    each input's prediction and the `per_input` features that pushed it most towards it (linear
    classifiers: YNAT, NLI, RE), or, for NER's CRF, each character's tag and the features that pushed it.
    'rows' holds the same as a flat list of dicts, one per feature, which explanation_table turns into a
    table for a notebook."""
    spec = get_task(task)
    check_explainable(task, model, inputs is not None)
    records = None if inputs is None else _input_records(spec, inputs)
    return reports.explanation(spec, model, top_k, records, per_input)


def analyze(text: str) -> Any:
    """One text's morphemes as Kiwi finds them, a row each: the eojeol (word) it is in, its form, its tag (Kiwi's,
    and the Sejong tag KLUE's data uses), and its character offsets; a pandas DataFrame where pandas is
    installed, else the list of dicts. What every model's features start from."""
    if not isinstance(text, str):
        raise UsageError(f"analyze takes one text (a str), not {type(text).__name__}")
    analysed = analysis.analyze([text])[0]
    words = [text[start:end] for start, end in eojeol_spans(text)]  # as Analysis.eojeols counts them
    rows = [{"eojeol": words[eojeol] if eojeol < len(words) else "", "form": form, "tag": tag,
             "sejong_tag": sejong, "start": start, "end": end}
            for eojeol, form, tag, sejong, start, end in zip(analysed.eojeols, analysed.forms, analysed.tags,
                                                             analysed.sejong_tags, analysed.starts, analysed.ends)]
    return _table(rows)


@_named_task
def features(task: str, model: Any, item: Any, top: int = 20) -> Any:
    """The features a fitted model sees in one input (a title, a sentence pair, an RE row, ...), with how much
    each pushed its prediction: the `top` strongest, as a table (see analyze); for NER, per character. Needs a
    model that explain can read per input (YNAT, NLI, RE, NER)."""
    explanation = explain(task, model, top_k=1, inputs=[item], per_input=top)
    return _table([row for row in explanation["rows"] if "guid" in row])


def _table(rows: list[dict]) -> Any:
    """Rows as a pandas DataFrame where pandas is installed, else as they are: either shows as a table."""
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows)


def use_korean_font() -> str:
    """Let your own matplotlib figures show Hangul and the minus sign (NanumGothic, from the `plots` extra) from
    here on; the toolkit's own figures need no call. Returns the font's name."""
    try:
        return plots.use_korean_font()
    except plots.PlotsUnavailable as error:
        raise UsageError(str(error)) from None


def explanation_table(explanation: dict) -> Any:
    """An explanation's rows (see explain) as a pandas DataFrame where pandas is installed, else as the list of
    dicts itself: either shows as a table in a notebook."""
    return _table(list(explanation["rows"]))


@_named_task
def evaluate(task: str, model: str | Any = None, *, model_file: PathLike | None = None,
             data_dir: PathLike | None = None, train: PathLike | None = None, dev: PathLike | None = None,
             cv: int = 0, seed: int = 0, jobs: int = 1, backend: str = "loky", trust_pickle: bool = False,
             log: Log = progress.say, **params: Any) -> dict:
    """Score a model on the dev file (`dev`, else the data directory's) and return the record that `run`
    writes to results/<task>.json. `model` is a model name (trained here on the training file, or cross-fitted
    with cv >= 2) or a fitted estimator (recorded under its class name); `model_file` a file that `train`
    wrote (see load_model for trust_pickle)."""
    spec = get_task(task)
    workers = Workers(jobs, backend)
    fitted = None
    if model_file is not None or (model is not None and not isinstance(model, str)):
        fitted = (load_model(task, model_file, trust_pickle) if model_file is not None
                  else (type(model).__name__, model))
        model = None
    data = locate(task, data_dir, train=train, dev=dev, log=log)
    record, _predictions = evaluation.evaluate_task(spec, data, model_name=model, seed=seed, cv=cv, log=log,
                                                params=params or None, fitted=fitted, workers=workers)
    return record


def run(tasks: Sequence[str] = (), model: str | None = None, *, data_dir: PathLike | None = None,
        train: PathLike | None = None, dev: PathLike | None = None, cv: int = 0, seed: int = 0,
        pos: str | None = None, results_dir: PathLike | None = None, predictions_dir: PathLike | None = None,
        plots_dir: PathLike | None = None, command: str | None = None, jobs: int = 1, backend: str = "loky",
        log: Log = progress.say, **params: Any) -> list[dict]:
    """Train and evaluate each task (all eight by default) as `run` does, and return their records. Records go
    to results_dir (default ./results) and its README.md, except that scores on the shipped sample are
    written only where results_dir is given. With predictions_dir, the scored predictions are written too;
    with plots_dir, each run's report figures (see report_figures) and the results chart (results_figure).
    `command` is recorded as the command that produced the results (`reproduce` reruns it). With cv, `jobs`
    folds are fitted at once on the joblib `backend` (the scores do not change)."""
    codes = [task_code(task) for task in tasks] or list(TASK_CODES)
    _show_progress(log)
    if (train or dev) and len(codes) != 1:
        raise UsageError(f"{setting('--train and --dev', 'train and dev')} name one task's files: give "
                         f"exactly one task")
    if params and len(codes) != 1:
        raise UsageError(f"{setting('--param', 'params')} set one model's hyper-parameters: give exactly "
                         f"one task")
    task_data = {code: locate(code, data_dir, train, dev, log) for code in codes}
    names = {code: model_name(code, model, pos) for code in codes}
    return running.run_tasks(task_data, names, seed=seed, cv=cv, params=params or None, workers=Workers(jobs, backend),
                             results_dir=_path_or_none(results_dir), predictions_dir=_path_or_none(predictions_dir),
                             plots_dir=figures.figures_folder(plots_dir), command=command,
                             data_dir=_path_or_none(data_dir, expand=True), log=log)


def seed_spread(tasks: Sequence[str], seeds: Sequence[int], model: str | None = None, *,
                data_dir: PathLike | None = None, train: PathLike | None = None, dev: PathLike | None = None,
                cv: int = 0, pos: str | None = None, jobs: int = 1, backend: str = "loky", log: Log = progress.say,
                **params: Any) -> list[dict]:
    """Each task's model trained and scored once per seed, as `run` does but recording nothing: per headline
    metric the mean, the sample standard deviation, the lowest and the highest score over the seeds, and the
    scores themselves. A model that takes no seed is run once, and says so ('seeded': False)."""
    if len(seeds) < 2 or len(set(seeds)) != len(seeds):
        raise UsageError(f"{setting('--seeds', 'seeds')} takes two or more distinct seeds, not {list(seeds)}")
    codes = [task_code(task) for task in tasks] or list(TASK_CODES)
    if (train or dev or params) and len(codes) != 1:
        raise UsageError("training or dev files and hyper-parameters name one task's: give exactly one task")
    task_data = {code: locate(code, data_dir, train, dev, log) for code in codes}
    names = {code: model_name(code, model, pos) for code in codes}
    return running.seed_spread(task_data, names, list(seeds), cv=cv, params=params or None,
                               task_resources=lambda code: resources(code, data_dir, train),
                               workers=Workers(jobs, backend), log=log)


@_named_task
def learning_curve(task: str, fractions: Sequence[float] = (0.25, 0.5, 0.75, 1), model: str | None = None, *,
                   data_dir: PathLike | None = None, train: PathLike | None = None, dev: PathLike | None = None,
                   cv: int = 0, seed: int = 0, results_dir: PathLike | None = None,
                   plots_dir: PathLike | None = None, command: str | None = None, jobs: int = 1,
                   backend: str = "loky", log: Log = progress.say, **params: Any) -> dict:
    """The dev scores of a model trained on growing shares of its training records (whole passages or
    dialogues), as `bench learning-curve` reports them; written to results_dir/learning-curve/ (default
    ./results; on the shipped sample only where results_dir is given), and drawn in plots_dir when given
    (see learning_curve_figure)."""
    data = locate(task, data_dir, train, dev, log)
    return running.learning_curve(task, data, fractions, model, seed=seed, cv=cv, params=params or None,
                                  workers=Workers(jobs, backend), results_dir=_path_or_none(results_dir),
                                  plots_dir=figures.figures_folder(plots_dir), command=command, log=log)


@_named_task
def tune(task: str, grid: dict[str, Sequence], model: str | None = None, *, folds: int = 3,
         data_dir: PathLike | None = None, train: PathLike | None = None, seed: int = 0,
         results_dir: PathLike = "results", command: str | None = None, jobs: int = 1, backend: str = "loky",
         log: Log = progress.say) -> tuple[dict, Path]:
    """Score every point of `grid` ({name: values}) by `folds`-fold cross-validation on the training file (the
    dev file is never read), and write the report, best first, to results_dir/tuning/<task>-<model>.json.
    `jobs` fits (trials x folds) run at once on the joblib `backend`, with the same report. A key that names
    another task's training file (NER's re_train, MRC's ner_train) takes such files, or None for none. Returns
    the report and that path."""
    path = training_file(task, data_dir, train, log)
    return running.tune(task, path, resources(task, data_dir, path), grid, model, folds=folds, seed=seed,
                        results_dir=Path(results_dir), command=command, workers=Workers(jobs, backend), log=log)


@_named_task
def read_predictions(task: str, path: PathLike, predictions_format: str = "auto") -> list[dict]:
    """A prediction file in any format `score` reads: JSONL keyed by guid; what neural pipelines write (the
    Hugging Face example scripts' predict_results_*.txt and NER predictions.txt, a JSON array, CSV or TSV with a
    header); or the task's whole-file alternative (MRC's {question_id: answer} object, DP's official TSV).
    `predictions_format` forces one of baselines.data.prediction_formats.FORMATS."""
    return evaluation.read_predictions(get_task(task), Path(path), predictions_format)


@_named_task
def score(task: str, gold: PathLike | Sequence, predictions: PathLike | Sequence[dict] | dict, *,
          data_dir: PathLike | None = None, predictions_format: str = "auto", log: Log = progress.say
          ) -> dict[str, float]:
    """The official metrics (x100) and their breakdowns. `gold` is a labelled file or labelled records;
    `predictions` a file in any format `score` reads (see read_predictions), a list of prediction dicts, or
    MRC's {id: answer}. `log` hears which format a file was read as."""
    return _scored(get_task(task), gold, predictions, data_dir, predictions_format, log)[2]


def metric(task: str, tokens: Sequence[Sequence[str]] | None = None) -> Callable[[Any], dict[str, float]]:
    """A `compute_metrics` for a Hugging Face Trainer: it takes what the Trainer hands over (an EvalPrediction,
    or a (predictions, label_ids) pair: logits or ids in the HF `klue` dataset's order and ClassLabel order) and
    returns the official metrics (x100), as `score` does. YNAT, NLI, STS, RE and NER; for NER, tags per
    character as the HF tokens are, ignored positions -100 (see baselines.metrics.trainer_metrics). `tokens`:
    the dataset's NER tokens, to drop spaces where every character is tagged."""
    code = task_code(task)
    try:
        compute = trainer_metrics.metric(code, get_task(code).scoring.trainer_score, tokens)
    except ValueError as error:
        raise UsageError(str(error)) from None

    def checked(evaluated: Any) -> dict[str, float]:
        try:
            return compute(evaluated)
        except ValueError as error:
            raise PredictionError(str(error)) from None

    checked.__name__ = compute.__name__
    return checked


def _scored(spec: TaskSpec, gold: PathLike | Sequence, predictions: PathLike | Sequence[dict] | dict,
            data_dir: PathLike | None, predictions_format: str = "auto", log: Log = progress.say
            ) -> tuple[list, list[dict], dict[str, float]]:
    """(gold records, prediction rows, official metrics), every check of `score` made on the way."""
    records, resources = _gold(spec, gold, data_dir)
    return (records, *_checked(spec, records, resources, predictions, predictions_format, log))


def _gold(spec: TaskSpec, gold: PathLike | Sequence, data_dir: PathLike | None) -> tuple[list, dict]:
    return evaluation.gold_and_resources(spec, _as_path(gold), Path(data_dir).expanduser() if data_dir else None)


def _checked(spec: TaskSpec, records: list, resources: dict, predictions: PathLike | Sequence[dict] | dict,
             predictions_format: str = "auto", log: Log = progress.say) -> tuple[list[dict], dict[str, float]]:
    return evaluation.checked_and_scored(spec, records, resources, _as_path(predictions), predictions_format, log)


def _as_path(value: Any) -> Any:
    """A file name as a Path; records, rows and dicts as they are."""
    return Path(value) if _is_path(value) else value


@_named_task
def compare(task: str, gold: PathLike | Sequence, predictions_a: PathLike | Sequence[dict] | dict,
            predictions_b: PathLike | Sequence[dict] | dict, *, resamples: int = 1000, seed: int = 0, jobs: int = 1,
            metrics: Sequence[str] | None = None, data_dir: PathLike | None = None,
            progress: Callable[[int], None] = lambda done: None, predictions_format: str = "auto",
            examples: int = 0, log: Log = progress.say) -> dict:
    """Two systems' predictions on the same gold, compared by paired bootstrap (baselines.metrics.significance):
    for each metric, A and B, the difference B - A, its 95 % interval and p-value. Both prediction sets are
    checked as `score` checks them first. `metrics`: names of `score`'s metrics, or of a breakdown
    ('class_f1' for every 'class_f1/...'); by default the headline and the task's breakdown (its classes,
    entity types, relations, slots or question types), under 'metrics' and 'breakdown', the breakdown
    sorted by the size of B - A. `progress` is told how many resamples each step did."""
    if not 1 <= resamples <= significance.MAX_RESAMPLES:
        raise UsageError(f"resamples must be 1 to {significance.MAX_RESAMPLES:,}, not {resamples:,}")
    spec = get_task(task)
    records, task_resources = _gold(spec, gold, data_dir)
    compared = reports.compared_systems(
        spec, records, task_resources,
        _checked(spec, records, task_resources, predictions_a, predictions_format, log),
        _checked(spec, records, task_resources, predictions_b, predictions_format, log),
        metrics=metrics, resamples=resamples, seed=seed, n_jobs=local_jobs(jobs), progress=progress,
        examples=examples)
    return {"task": task, **{name: str(value) for name, value in (
        ("gold", gold), ("a", predictions_a), ("b", predictions_b)) if _is_path(value)}, **compared}


@_named_task
def report(task: str, gold: PathLike | Sequence, predictions: PathLike | Sequence[dict] | dict, *,
           errors: int = 10, data_dir: PathLike | None = None, plots_dir: PathLike | None = None,
           overwrite: bool = False, predictions_format: str = "auto", log: Log = progress.say) -> dict:
    """A teaching report: the official metrics; per class (a topic, an entity type, a relation) precision,
    recall, F1 and support, and the confusion matrix, where the task has classes; and the `errors` records
    that are most wrong (a confident error first), with their input, gold and prediction. With plots_dir,
    its figures are drawn there too (see report_figures) and listed under 'figures': figures of an earlier report
    there are replaced only with overwrite=True (a notebook cell run again), else refused before any work."""
    spec = get_task(task)
    plots_dir = figures.figures_folder(plots_dir)
    if plots_dir is not None and not overwrite:
        figures.check_no_earlier_report(plots_dir, task)
    records, rows, metrics = _scored(spec, gold, predictions, data_dir, predictions_format, log)
    built = reports.teaching_report(spec, records, rows, metrics, errors)
    if plots_dir is not None:
        built["figures"] = [str(path) for path in figures.report_figures(built, plots_dir)]
    return built


def report_figures(built: dict, folder: PathLike, stem: str | None = None) -> list[Path]:
    """The figures of a report (as `report` returns it) where the task has classes: the confusion heat map
    <stem>-confusion.png and F1 per class beside chance <stem>-f1-per-class.png (stem: the task code).
    Needs the `plots` extra."""
    return figures.report_figures(built, folder, stem)


def report_figure_paths(folder: Path, stem: str) -> tuple[Path, Path]:
    """Where report_figures draws the confusion heat map and the F1 bars."""
    return figures.report_figure_paths(Path(folder), stem)


def learning_curve_figure(curve: dict | PathLike, folder: PathLike) -> Path:
    """A learning curve (as `learning_curve` returns it, or its file) drawn as <task>-<model>-learning-curve.png,
    with the spread of the per-fold scores where it was cross-fitted. Needs the `plots` extra."""
    return figures.learning_curve_figure(curve, folder)


def results_figure(runs: PathLike | Sequence[dict], folder: PathLike) -> Path:
    """The results chart, results.png: each task's headline scores between its trivial floor and the neural
    anchors, from a results folder (every recorded run) or from run records such as `run` returns. Needs the
    `plots` extra."""
    return figures.results_figure(runs, folder)


@_named_task
def task_spec(task: str) -> TaskSpec:
    """The task's declaration: files, models, metrics, formats (see baselines.taskspec)."""
    return get_task(task)


@_named_task
def scale(task: str, sizes: Sequence[float] = scale_bench.SIZES, model: str | None = None, *,
          data_dir: PathLike | None = None, train: PathLike | None = None, dev: PathLike | None = None,
          seed: int = 0, results_dir: PathLike = "results", plots_dir: PathLike | None = None,
          command: str | None = None, log: Log = progress.say) -> tuple[dict, Path]:
    """Fit and predict seconds and peak memory at `sizes` x the official training size, each in its own
    process (see baselines.bench.scale); written to results_dir/scale/<task>.json (<task>-<model>.json for another
    model than the default), with the table in results_dir/README.md, and with plots_dir the chart of every
    task's report there. Returns the report and its path."""
    folder = Path(results_dir) / "scale"
    check_output_folder(folder)
    plots_dir = figures.figures_folder(plots_dir)
    report = scale_bench.bench_scale(task, sizes, model, seed, data_dir, train, dev, command, log)
    stem = task if report["model"] == get_task(task).modelling.default_model else f"{task}-{report['model']}"
    path = results.write_result(Path(results_dir), folder / f"{stem}.json", report)
    if plots_dir is not None:
        figure = plots.scale_chart(tables.scale_reports(Path(results_dir)), plots_dir / "scale.png",
                                   tables.SECONDS_BUDGET)
        log(f"{task}: figure written to {figure}")
    return report, path


@_named_task
def peers(task: str, *, data_dir: PathLike | None = None, train: PathLike | None = None,
          dev: PathLike | None = None, seed: int = 0, rounds: int = peers_bench.ROUNDS,
          results_dir: PathLike = "results", plots_dir: PathLike | None = None, command: str | None = None,
          log: Log = progress.say) -> tuple[dict, Path]:
    """`bench peers`: the tool a user would pick instead, the task's default model and its fast one
    (baselines.bench.peers), `rounds` runs each in turn, each run in its own process; the report replaces the
    task's earlier one in results_dir/peers.json, and the table goes to results_dir/README.md; with plots_dir, the
    chart of score against seconds of every task there. Returns the report and the file's path."""
    results_dir = Path(results_dir)
    check_output_folder(results_dir)
    plots_dir = figures.figures_folder(plots_dir)
    report = peers_bench.bench_peers(task, seed, data_dir, train, dev, command, rounds, log)
    written = peers_bench.record_report(results_dir, task, report)
    if plots_dir is not None:
        figure = plots.peers_chart(tables.peers_reports(results_dir), plots_dir / "peers.png")
        log(f"{task}: figure written to {figure}")
    return report, written


@_named_task
def probe(task: str, *, data_dir: PathLike | None = None, train: PathLike | None = None, dev: PathLike | None = None,
          cv: int = 0, seed: int = 0, results_dir: PathLike | None = None, command: str | None = None, jobs: int = 1,
          backend: str = "loky", log: Log = progress.say) -> tuple[dict, Path | None]:
    """`probe`: how much of the task's score the data alone gives away. Each partial-input baseline of the task
    (NLI from the hypothesis alone, RE from the entity pair alone, ...) is trained and scored as `run` scores the
    default, between two anchors: the whole input (the default model) and nothing (the trivial floor). Each row
    has its headline scores, their 95 % bootstrap intervals and the share of the gap between floor and whole
    input that it closes. Written to results_dir/probes/<task>.json (default ./results; with the shipped sample,
    only where results_dir is given). Returns the report and its path (None when nothing was written)."""
    data = locate(task, data_dir, train, dev, log)
    return probes.probe_and_record(task, data, seed=seed, cv=cv, workers=Workers(jobs, backend),
                                   results_dir=_path_or_none(results_dir), command=command, log=log)


def analysis_speed(tasks: Sequence[str] = (), *, data_dir: PathLike | None = None, limit: int | None = None,
                   results_dir: PathLike = "results", command: str | None = None, log: Log = progress.say
                   ) -> tuple[dict, Path]:
    """`bench analysis`: characters per second of raw Kiwi and of this toolkit's analyser with a cold and a warm
    cache, on the texts of the tasks' files in data_dir (the first `limit`); written to
    results_dir/analysis.json. Returns the report and its path."""
    codes = [task_code(task) for task in tasks] or list(TASK_CODES)
    return analysis_bench.analysis_report([get_task(code) for code in codes], _path_or_none(data_dir, expand=True),
                                          limit, Path(results_dir), command, log)


def long_inputs(tasks: Sequence[str] = (), *, results_dir: PathLike = "results", command: str | None = None,
                log: Log = progress.say) -> tuple[dict, Path]:
    """`bench long-inputs`: seconds and peak memory of one input of growing size, predicted by each task's
    default model fitted on the shipped sample; written to results_dir/long-inputs.json. Returns the report and
    its path."""
    codes = [task_code(task) for task in tasks] or list(TASK_CODES)
    return long_inputs_bench.long_inputs_report(codes, Path(results_dir), command, log)


def budget(tasks: Sequence[str], run_command: Any, *, results_dir: PathLike = "results", fast: bool = False,
           command: str | None = None, log: Log = progress.say) -> tuple[dict, Path]:
    """`bench budget`: each task's default row of results_dir (its fast row with `fast`) rerun as `reproduce`
    reruns it, as a multiple of raw Kiwi on the same texts; written to results_dir/budget.json
    (budget-fast.json). `run_command` is the command line's `run` (baselines.cli.scores.run), which reads the
    recorded commands. Returns the report and its path."""
    codes = [task_code(task) for task in tasks] or list(TASK_CODES)
    return budget_bench.bench_and_record(Path(results_dir), codes, run_command, command, log, fast)


def recorded_version_notes(tasks: Sequence[str] = (), results_dir: PathLike = "results") -> list[str]:
    """One line per library whose installed version is not the one that results_dir's rows recorded: a score may
    move with it. `reproduce` says them before it reruns anything."""
    codes = [task_code(task) for task in tasks] or list(TASK_CODES)
    return reproduce_bench.version_notes(reproduce_bench.recorded_commands(Path(results_dir), codes), versions())


def reproduce(tasks: Sequence[str], run_command: Any, *, results_dir: PathLike = "results",
              log: Log = progress.say) -> tuple[list, list[str]]:
    """`reproduce`: rerun the commands recorded in results_dir (each with an empty cache, into a temporary folder)
    and compare each row's committed and rerun headline scores. `run_command` is the command line's `run`
    (baselines.cli.scores.run), which reads the recorded commands. Returns the comparisons (reproduce.Comparison)
    and the notes on the code and the machine that recorded the rows that differ."""
    codes = [task_code(task) for task in tasks] or list(TASK_CODES)
    comparisons = reproduce_bench.reproduce(Path(results_dir), codes, run_command, log=log)
    if not comparisons:
        raise UsageError(f"no recorded runs in {results_dir}")
    return comparisons, reproduce_bench.provenance_notes(comparisons)


def download(tasks: Sequence[str] = (), *, data_dir: PathLike | None = None, mirror: str | None = None,
             progress_bar: Any = None, log: Log = progress.say) -> tuple[Path, list[Path]]:
    """`download`: fetch the tasks' official KLUE v1.1 files (all tasks by default) into data_dir (default
    $KLUE_DATA_DIR, else the per-user cache) or from `mirror`, verifying size and sha256. `progress_bar` makes a
    bar for each file (see baselines.data.sources). Returns the folder and the files that are ready."""
    codes = [task_code(task) for task in tasks] or list(TASK_CODES)
    target = sources.download_dir(data_dir)
    check_output_folder(target)
    return target, sources.download([get_task(code) for code in codes], target, mirror=mirror,
                                    progress=progress_bar, log=log)


def doctor(*, data_dir: PathLike | None = None, models_dir: PathLike | None = None,
           results_dir: PathLike | None = None, log: Log = progress.say) -> list:
    """`doctor`: every check of the install (Python, Kiwi, each task's floor on the sample, data, extras, ready
    models, and the versions results_dir's rows recorded), as doctor.Check rows; a check whose `ok` is False
    failed."""
    return doctor_checks.run_checks(_path_or_none(data_dir), _path_or_none(models_dir), log,
                                    _path_or_none(results_dir))


def determinism(tasks: Sequence[str] = (), model: str | None = None, *, data_dir: PathLike | None = None,
                train: PathLike | None = None, dev: PathLike | None = None, cv: int = 0, seed: int = 0,
                pos: str | None = None, results_dir: PathLike | None = None, command: str | None = None,
                at_once: int = 1, log: Log = progress.say, **params: Any) -> tuple[dict, Path | None]:
    """Run the tasks' models (as `run` would) once per variant of baselines.bench.determinism.variants (other BLAS
    kernels, BLAS and OpenMP thread counts, numpy's loops without AVX2, other hash seeds), after the first
    `at_once` at a time, and compare their predictions row by row. Written to results_dir/determinism.json
    (default ./results; with the shipped sample, only where results_dir is given) in place of the earlier
    reports on the same tasks and model (see determinism.merged_file). Returns the report and its path."""
    codes = [task_code(task) for task in tasks] or list(TASK_CODES)
    _show_progress(log)
    if (train or dev or params) and len(codes) != 1:
        raise UsageError(f"{setting('--train, --dev and --param', 'train, dev and params')} are one "
                         f"task's: give exactly one task")
    task_data = {code: locate(code, data_dir, train, dev, log) for code in codes}
    is_sample = any(data.is_sample for data in task_data.values())
    folder = results.destination(results_dir, is_sample)
    if folder is not None:
        check_output_folder(folder)
    arguments = determinism_bench.run_command_arguments(codes, model, pos, seed, cv, data_dir, train, dev, params)
    return determinism_bench.bench_and_record(codes, arguments, model, is_sample, command, folder, at_once, log)
