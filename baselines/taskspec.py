"""What every task module declares: its files, loader, models, prediction format and scorer."""
from __future__ import annotations

import functools
import inspect
import warnings
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfTransformer, TfidfVectorizer

from baselines import _moved
from baselines.data import formats, hf
from baselines.data.cards import official_names
from baselines.display import html as html_display
from baselines.data.fileio import DataError, read_jsonl
from baselines.models.estimators import TaskModel
from baselines.errors import caller_stacklevel, InputWarning, PredictionError
from features.analysis import too_long
from features.normalize import nfc

# A fitted TfidfVectorizer holds a TfidfTransformer.
TFIDF_PARTS = (TfidfVectorizer, TfidfTransformer)
# The private parts of scikit-learn's histogram gradient boosting that a fitted model holds (STS's regressor and
# NLI's classifier), by the full names their model files give them; the loss and its link come with each task.
HIST_GRADIENT_BOOSTING_PARTS = (
    "sklearn.ensemble._hist_gradient_boosting.binning._BinMapper",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
    "sklearn._loss.link.Interval",
    np.random.Generator,
)


@dataclass(frozen=True)
class ModelEntry:
    """One model of a task, as data: its estimator class, the hyper-parameters this entry sets over the class's
    defaults, and `from_resources`, which constructor parameter takes which of the task's resources (WoS's
    tracker takes the ontology). The run's seed goes to `random_state` where the class has one."""
    estimator: type
    params: Mapping[str, Any] = field(default_factory=dict)
    from_resources: Mapping[str, str] = field(default_factory=dict)

    def build(self, random_state: int = 0, resources: Mapping[str, Any] | None = None) -> Any:
        """An unfitted estimator of this entry, seeded with `random_state`."""
        kwargs = dict(self.params)
        kwargs.update({parameter: (resources or {}).get(key) for parameter, key in self.from_resources.items()})
        if "random_state" in inspect.signature(self.estimator).parameters:
            kwargs["random_state"] = random_state
        return self.estimator(**kwargs)


@dataclass
class Comparison:
    """Gold against predicted, as a task's `compare` gives them.

    `gold` and `predicted` pair one label per unit (a title, a sentence pair, an entity, a word); units that
    are `outside` (NER's 'O': an entity missed or made up) are kept in the confusion matrix but are not a
    class of the per-class table. For each record, `wrong` says how wrong it is (0: right; the larger, the
    sooner it is shown: a confident error first) and `shown` gives its gold and prediction as text.
    A task without classes may break its scores down by `group_by` (MRC's question type, WoS's slot): one
    dict of scores per group in `groups`. `ranked_by` says in words what orders the errors, and says so
    where nothing does (labels without probabilities: file order). `right_or_wrong`: see its comment.
    """
    unit: str
    gold: list[str] = field(default_factory=list)
    predicted: list[str] = field(default_factory=list)
    wrong: list[float] = field(default_factory=list)
    shown: list[tuple[str, str]] = field(default_factory=list)
    outside: str | None = None
    group_by: str = ""
    groups: list[dict[str, Any]] = field(default_factory=list)
    ranked_by: str = ""
    # Each record is wholly right (wrong == 0) or wrong, and the accuracy-type metric counts the right ones (a
    # label, an exact answer): McNemar's test applies.
    right_or_wrong: bool = False


@dataclass(frozen=True)
class PredictionFiles:
    """The prediction files of a task besides JSON Lines keyed by guid, which every task reads and writes."""
    described: str = "JSONL with one prediction per line"  # every format it reads, for error messages
    # A whole-file JSON object of the task's own -> prediction rows (MRC's {question_id: answer}); None when the
    # object is not one.
    from_object: Callable[[Any], list[dict] | None] = lambda data: None
    # A file that is not JSON Lines -> prediction rows (DP's official TSV and CoNLL-U); None: no such format.
    from_file: Callable[[Path], list[dict]] | None = None
    # Formats it writes, by --format name: writer(path, records, rows).
    writers: Mapping[str, Callable[[Path, Sequence, Sequence[dict]], None]] = field(default_factory=dict)


@dataclass(frozen=True)
class Requirement:
    """A model of this task that takes what another task's training file gives as a hyper-parameter: given
    ``--param <file_param>=FILE``, baselines.runner.build reads FILE as `task`'s training data and sets `model_param` to
    - ``provides="model"``: `task`'s default model fitted on FILE with the run's seed, wrapped in
      scikit-learn's FrozenEstimator (so that cloning the model for each fold keeps it fitted); MRC's reader
      takes an NER tagger this way;
    - ``provides="gazetteer"``: a features.gazetteer.EntityGazetteer of the typed entity names that `task`'s
      records carry (TaskSpec.links.mentions); the NER CRF takes the RE training file's subjects and objects.
    `settings` are hyper-parameters set over the default model's before it is fitted (RE's parser learns from
    Kiwi's tags, which are all that RE's raw sentences will have). Tasks meet this way, never by importing
    one another."""
    task: str
    file_param: str
    model_param: str
    what: str  # what the file must be, for error messages
    provides: str = "model"
    settings: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Presentation:
    """How a task is shown to a person: `show` and `predict --format html` draw one prediction row with `drawer`
    (row, explanation features -> HTML; baselines.display.html), under `legend` if the task has one; the demo page
    asks for one input with the form `page_form` (baselines.web.app.PAGE_FORMS: a text, a pair of sentences, a
    sentence with two entities, a passage and a question, or a dialogue)."""

    drawer: Callable[[dict, dict], str] = html_display.draw_fields
    legend: Callable[[], str] | None = None
    page_form: str = "text"


# The tokens that a text classifier peer's text may hold besides the record's words (Benchmarks.peer_text): the
# separator of a pair, the marks around a relation's subject and object; the peer never analyses them.
PEER_SEPARATOR = "[SEP]"
PEER_MARKS = (PEER_SEPARATOR, "<S>", "</S>", "<O>", "</O>")


@dataclass(frozen=True)
class Probe:
    """A partial-input baseline (`klue-baselines probe`): the task's model (its default, unless `model` names
    another) trained and scored on what `shown` leaves of each record, training and dev records alike. The gold
    labels stay whole, so its score says how much of the task that part of the input gives away."""

    name: str  # short, as the table shows it: 'hypothesis only'
    sees: str  # what the model is shown, in words: 'the premise; the hypothesis is hidden'
    shown: Callable[[Sequence], list] | None = None  # records -> the records as the probe shows them; None: whole
    model: str | None = None
    # Hyper-parameters over the model's, where the partial input leaves one without meaning (NLI's second stage
    # folds by premise, and a hypothesis-only probe has none); said in `sees`.
    params: Mapping[str, Any] = field(default_factory=dict)


# What stands in for a hidden part of an input: one noun ("sentence"), the same in every record, so that the
# features of that part carry nothing (an empty text leaves some vectorisers without a vocabulary, which fails).
HIDDEN_TEXT = "문장"


def length_in_words(text: str) -> str:
    """A text's length as the text that stands for it: '17자' (17 characters), which the models' features read as a
    number and a counter word (a number alone, or a letter repeated, leaves some models no feature at all)."""
    return f"{len(text)}자"


@dataclass(frozen=True)
class Benchmarks:
    """What the benchmarks (baselines.bench) ask of a task beyond its models and files: how to grow one input for
    `bench long-inputs`, the peer that `bench peers` runs against it, and whether `doctor` fits its default."""

    # (a plain input, size) -> the input grown to `size` units where the task reads the most text
    # (baselines.data.grown has the pieces), and what a unit is.
    grow: Callable[[Any, int], Any]
    size_unit: str = "characters"
    # The tool a user would pick instead, by its kind in baselines.bench.peers.PEER_KINDS (None: no peer), and,
    # for a text classifier (fastText), the text it reads of a record.
    peer: str | None = None
    peer_text: Callable[[Any], str] | None = None
    # Whether the task's score reads each class's probability, so that a peer's predictions carry them.
    peer_probabilities: bool = False
    # Whether `doctor` fits the default model on the sample: one task of each library the defaults rest on
    # (scikit-learn's linear models, crfsuite), each fitted in a few seconds.
    doctor_fits_default: bool = False
    # The partial-input baselines of `probe`, besides the two every task has: the whole input (the default model)
    # and nothing (the trivial floor).
    probes: tuple[Probe, ...] = ()


@dataclass(frozen=True)
class Reading:
    """How a task's files and inputs become records.

    - ``load(path)`` reads an official file into typed records; ``load_input(path)`` also reads the raw JSONL
      that ``predict`` accepts; with ``from_hf`` (rows of the Hugging Face klue schema -> records) both also read
      HF exports.
    - ``texts(records)`` lists every Korean text of the records (what morpheme analysis will see).
    - ``as_records(X)`` turns plain inputs (str, pairs, raw-row dicts) into records, and ``plain_inputs(records)``
      does the reverse; the models accept either.
    """

    load: Callable[[Path], list]
    texts: Callable[[Sequence], list[str]]
    as_records: Callable[[Sequence], list] = list  # records or plain inputs -> records
    plain_inputs: Callable[[Sequence], list] = list  # records -> what a notebook user hands over
    load_input: Callable[[Path], list] | None = None
    from_hf: Callable[[list[dict], Path], list] | None = None
    # The passage or dialogue a record belongs to, which folds keep whole; None where records stand alone.
    group: Callable[[Any], str] | None = None
    # (record, k) -> copy k of the record, distinct from the record and from its other copies in every text
    # (copy_marker(k) put in), for the scale benchmark where the data here is smaller than the official train
    # file (NER and DP have prefixes of it, MRC and WoS only part of dev).
    distinct_copy: Callable[[Any, int], Any] | None = None

    def group_keys(self, records: Sequence) -> list:
        """Each record's group, which folds and hold-outs keep whole, or its position where records stand alone."""
        if self.group is None:
            return list(range(len(records)))
        return [self.group(record) for record in records]


def _no_resources(files: dict[str, Path]) -> dict:
    return {}


def _no_label_check(records: Sequence, resources: dict, path: Path) -> None:
    return None


@dataclass(frozen=True)
class Resources:
    """The auxiliary files a task reads beside its data (RE's relation list, WoS's ontology)."""

    extra_files: tuple[str, ...] = ()
    optional_extras: tuple[str, ...] = ()  # extra files with a default, when neither beside the data nor found
    # files -> a dict that model entries (ModelEntry.from_resources) and scorers receive
    load_resources: Callable[[dict[str, Path]], dict] = _no_resources
    # Gold labels against the resources' label sets (RE's relation list, WoS's ontology slots): a DataError
    # naming the file and the first record outside them.
    check_resource_labels: Callable[[Sequence, dict, Path], None] = _no_label_check


@dataclass(frozen=True)
class Modelling:
    """A task's models: ``models[name]`` is a ModelEntry, whose ``build(random_state, resources)`` makes an
    unfitted estimator; ``targets(records)`` is the y that its ``fit(records, y)`` receives; ``predict(model,
    records)`` returns one JSON-able dict per record, keyed by ``guid``: the format of ``predict`` output and of
    ``score --predictions``."""

    models: dict[str, ModelEntry]
    default_model: str
    targets: Callable[[Sequence], list]
    predict: Callable[[Any, Sequence], list[dict]]
    # A --pos choice -> a model name (DP: 'gold' -> mst, 'kiwi' -> mst-kiwi).
    model_for_pos: dict[str, str] = field(default_factory=dict)
    # What a fitted model of this task holds besides plain data (containers, strings, numbers, numpy arrays):
    # classes and functions, or by full name ('module.Name') a library's private part that has no public home.
    # A model file of the task may name these, those of the tasks it requires, and nothing else
    # (baselines.runner.persistence refuses it before building anything).
    saved_types: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Scoring:
    """How a task's predictions are scored and read: ``score(records, predictions, resources)`` returns the official
    metrics (x100) and breakdowns; ``tally`` takes the same and returns them as sums over records (a
    baselines.metrics.tallies.Tally), which `compare` scores a batch of bootstrap resamples with at once;
    ``compare(records, aligned_predictions)`` sets gold against predicted for ``report`` (a Comparison)."""

    score: Callable[[Sequence, Sequence[dict], dict], dict[str, float]]
    headline: tuple[str, ...]
    tally: Callable[[Sequence, Sequence[dict], dict], Any]
    compare: Callable[[Sequence, Sequence[dict]], Any]
    prediction_example: str  # one line of the task's prediction file, for messages and docs
    # The task's own prediction file formats, read by ``score`` and written by ``predict --format``.
    prediction_files: PredictionFiles = field(default_factory=PredictionFiles)
    # The family of score keys that `compare` breaks a lead down by ('class_f1' for 'class_f1/경제', ...).
    breakdown: str | None = None
    # (records, aligned predictions, examples) -> entity-level micro precision, recall and F1 and the error types
    # a reviewer asks for (wrong boundary, wrong type, both, missed, spurious), with examples; tasks of spans.
    entity_errors: Callable[[Sequence, Sequence[dict], int], dict] | None = None
    # The official scorer over plain labels, numbers or tag sequences (baselines.metrics.scoring), which a Hugging
    # Face Trainer's compute_metrics (api.metric) calls; None: the task has no Trainer metric.
    trainer_score: Callable[..., dict[str, float]] | None = None


@dataclass(frozen=True)
class Links:
    """What a task gives other tasks and takes from them."""

    requires: tuple[Requirement, ...] = ()  # what other tasks' training files give that its models can take
    # records -> (name, entity type) of every typed entity mention they carry (RE's subjects and objects), for
    # another task's gazetteer (Requirement provides="gazetteer"); None where records carry none.
    mentions: Callable[[Sequence], list[tuple[str, str]]] | None = None


# The flat names of TaskSpec up to 0.2, each now in a group: read through the group, with a DeprecationWarning,
# until release 0.4.
GROUP_OF = {
    **dict.fromkeys(("load", "load_input", "from_hf", "as_records", "plain_inputs", "texts", "group",
                     "distinct_copy"), "reading"),
    **dict.fromkeys(("load_resources", "check_resource_labels"), "resources"),
    **dict.fromkeys(("models", "default_model", "targets", "predict", "model_for_pos", "saved_types"), "modelling"),
    **dict.fromkeys(("score", "headline", "tally", "compare", "prediction_example", "prediction_files",
                     "breakdown", "entity_errors", "trainer_score"), "scoring"),
    **dict.fromkeys(("requires", "mentions"), "links"),
}


@dataclass(frozen=True)
class TaskSpec:
    """One KLUE task as the triple (data format, model, metric), seen by the runner and the CLI: its code, title
    and files, then what it knows in groups: how its files are read (``reading``), its auxiliary files
    (``resources``), its models (``modelling``), how it is scored (``scoring``), what it gives and takes from other
    tasks (``links``), how it is shown (``presentation``) and what the benchmarks ask of it (``benchmarks``). The
    flat names of 0.2 (``spec.load``, ``spec.headline``, ...) still read the groups, with a DeprecationWarning,
    until 0.4."""

    code: str
    title: str
    folder: str
    train_file: str | None
    dev_file: str
    reading: Reading
    modelling: Modelling
    scoring: Scoring
    resources: Resources = field(default_factory=Resources)
    links: Links = field(default_factory=Links)
    # How the task is shown to a person: its drawing of a prediction and its demo-page form (a Presentation).
    presentation: Presentation = field(default_factory=Presentation)
    # What the benchmarks and `doctor` ask of the task (a Benchmarks); None: none of them runs it.
    benchmarks: Benchmarks | None = None

    def __getattr__(self, name: str) -> Any:
        group = GROUP_OF.get(name)
        if group is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        _moved.warn_moved(f"TaskSpec.{name}", f"TaskSpec.{group}.{name}", _moved.NAMES_GO_IN)
        return getattr(object.__getattribute__(self, group), name)

    # Files as the data layer knows them (cards.TaskFiles).
    @property
    def extra_files(self) -> tuple[str, ...]:
        return self.resources.extra_files

    @property
    def optional_extras(self) -> tuple[str, ...]:
        return self.resources.optional_extras

    def __post_init__(self) -> None:
        # The frozen dataclass is set up here, before anyone holds it: its groups' readers and predict wrapped.
        reading, load_input = self.reading, self.reading.load_input
        load = reading.load
        # One place makes every task read Hugging Face exports: load and load_input try them first.
        if reading.from_hf is not None:
            load = hf.readable(self.code, load, reading.from_hf)
            if load_input is not None:
                load_input = hf.readable(self.code, load_input, reading.from_hf, raw_jsonl=True)
        # A file of another task's format is named as such, not only as malformed; a text too long to analyse is
        # named with its file and record when the file is read, not later.
        load = self._with_bounded_texts(formats.naming_other_task(self.code, load))
        if load_input is not None:
            load_input = self._with_bounded_texts(formats.naming_other_task(self.code, load_input))
        object.__setattr__(self, "reading", replace(reading, load=load, load_input=load_input))
        # An input with nothing to read gets a prediction all the same (the model's answer for no words), and a
        # warning that names it.
        object.__setattr__(self, "modelling", replace(self.modelling,
                                                      predict=self._warning_of_empty_texts(self.modelling.predict)))

    def _warning_of_empty_texts(self, predict: Callable[[Any, Sequence], list[dict]]
                                ) -> Callable[[Any, Sequence], list[dict]]:
        """`predict`, with an InputWarning that names the records with an empty or whitespace-only text (after
        invisible characters are removed): their predictions say nothing about them."""
        @functools.wraps(predict)
        def predicting(model: Any, records: Sequence) -> list[dict]:
            empty = [getattr(record, "guid", None) or f"input {position}" for position, record in enumerate(records, 1)
                     if any(not nfc(text).strip() for text in self.reading.texts([record]))]
            if empty:
                named = ", ".join(map(str, empty[:5])) + (", ..." if len(empty) > 5 else "")
                several = len(empty) > 1
                verb, answers = ("s have", "their predictions are") if several else (" has", "its prediction is")
                warnings.warn(f"{len(empty)} {self.code} input{verb} an empty or whitespace-only text ({named}): "
                              f"{answers} the model's answer for no words", InputWarning,
                              stacklevel=caller_stacklevel())
            return predict(model, records)
        return predicting

    def _with_bounded_texts(self, reader: Callable[[Path], list]) -> Callable[[Path], list]:
        """`reader`, whose records are checked: a DataError naming the file and the record whose text is longer
        than features.analysis.MAX_TEXT_CHARACTERS."""
        @functools.wraps(reader)
        def read(path: Path) -> list:
            records = reader(path)
            for position, record in enumerate(records, start=1):
                for text in self.reading.texts([record]):
                    problem = too_long(text)
                    if problem:
                        raise DataError(path, getattr(record, "guid", None) or f"record {position}", problem)
            return records
        return read

    def official_files(self) -> tuple[str, ...]:
        return official_names(self)


_SOURCE_SUFFIX = re.compile(r"^(klue-(?:ner|dp)-v1(?:\.1)?_[a-z]+_\d+)[-_][A-Za-z]+$")


def copy_marker(copy: int) -> str:
    """The word that makes copy `copy` of a record distinct (TaskSpec.reading.distinct_copy): never a feature value seen
    elsewhere, so no analysis cache, memo or de-duplication can skip the copy."""
    return f"사례{copy}"


def official_stem(guid: str) -> str:
    """An NER or DP guid without the source that ends it ('klue-ner-v1_dev_00042-wikitree' ->
    'klue-ner-v1_dev_00042'): Hugging Face rows have no guid, and get the stem by position (baselines.data.hf), so
    gold and predictions are matched by stem when one side has the whole guid and the other the stem."""
    match = _SOURCE_SUFFIX.match(guid)
    return match.group(1) if match else guid


def align_predictions(records: Sequence, predictions: Sequence[dict]) -> list[dict]:
    """Order predictions like the records by guid; complain with counts and the first few ids."""
    gold_ids = [record.guid for record in records]
    repeated_gold = repeated(gold_ids)
    if repeated_gold:
        raise PredictionError(f"the gold data has {len(repeated_gold)} guids more than once "
                              f"(first: {', '.join(repeated_gold[:3])}); each gold item must be scored once")
    by_id: dict[str, dict] = {}
    for prediction in predictions:
        by_id.setdefault(str(prediction.get("guid")), prediction)
    if len(by_id) != len(predictions):
        twice = repeated([str(prediction.get("guid")) for prediction in predictions])
        raise PredictionError(f"{len(twice)} guids have more than one prediction (first: {', '.join(twice[:3])})")
    missing = [guid for guid in gold_ids if guid not in by_id]
    unknown = sorted(set(by_id) - set(gold_ids))
    if missing and unknown:
        by_stem = {official_stem(guid): prediction for guid, prediction in by_id.items()}
        gold_stems = [official_stem(guid) for guid in gold_ids]
        if len(by_stem) == len(by_id) == len(set(gold_stems)) and set(gold_stems) == set(by_stem):
            return [by_stem[stem] for stem in gold_stems]
    problems = []
    if missing:
        problems.append(f"{len(missing)} gold items have no prediction (first: {', '.join(missing[:3])})")
        if all(guid.startswith("row-") for guid in missing[:3]):
            problems.append("the gold rows have no guids (a Hugging Face export): give predictions without guids, "
                            "one per gold row in its order")
    if unknown:
        problems.append(f"{len(unknown)} predictions have unknown ids (first: {', '.join(unknown[:3])})")
    if problems:
        raise PredictionError("; ".join(problems))
    return [by_id[guid] for guid in gold_ids]


def repeated(ids: Sequence[str]) -> list[str]:
    """The ids that occur more than once, in order of their first repeat."""
    seen: set[str] = set()
    twice: dict[str, None] = {}
    for guid in ids:
        if guid in seen:
            twice[guid] = None
        seen.add(guid)
    return list(twice)


def is_finite_number(value: Any) -> bool:
    """A JSON number that is not a boolean, NaN or infinite (Python's json reads NaN and Infinity)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_numbers(predictions: Sequence[dict], key: str, optional: bool = False) -> None:
    """Every prediction's `key` is a finite number (or, when optional, null or absent), else an error
    naming the first offending guids."""
    bad = [p.get("guid") for p in predictions
           if not (is_finite_number(p.get(key)) or (optional and p.get(key) is None))]
    if bad:
        kind = "a finite number or null" if optional else "a finite number"
        raise PredictionError(f"{len(bad)} predictions have a '{key}' that is not {kind} "
                              f"(first: {', '.join(map(str, bad[:3]))})")


def check_labels(predictions: Sequence[dict], key: str, allowed: Sequence[str]) -> list[str]:
    """The predicted labels, after checking that each is in the task's label set."""
    allowed_set = set(allowed)
    bad = [p for p in predictions if p.get(key) not in allowed_set]
    if bad:
        first = ", ".join(f"{p.get('guid')}={p.get(key)!r}" for p in bad[:3])
        raise PredictionError(f"{len(bad)} predictions have a '{key}' outside the label set (first: {first})")
    return [p[key] for p in predictions]


def check_gold_labels(path: Path, records: list, allowed: Sequence[str], field_name: str = "label") -> None:
    """Reject a record whose gold label is outside the task's label set, naming it."""
    for record in records:
        value = getattr(record, field_name)
        if value is not None and value not in allowed:
            raise DataError(path, f"guid {record.guid}", f"label {value!r} is not one of {', '.join(allowed)}")


def label_predictions(model: Any, records: Sequence, digits: int = 6) -> list[dict]:
    """Predictions of a classifier as {'guid', 'label'} plus 'probs' (label -> probability) when the
    model has predict_proba. Every classifier of the toolkit predicts its most probable class, so its
    probabilities are computed once and its labels read from them (predict would build the features again:
    a tenth of YNAT's run); another estimator's predict is asked, as its labels may be decided otherwise."""
    probabilities = model.predict_proba(records) if hasattr(model, "predict_proba") else None
    if probabilities is not None and isinstance(model, TaskModel):
        labels = np.asarray(model.classes_)[np.argmax(probabilities, axis=1)]
    else:
        labels = model.predict(records)
    rows = [{"guid": record.guid, "label": str(label)} for record, label in zip(records, labels)]
    if probabilities is not None:
        classes = [str(label) for label in model.classes_]
        for row, distribution in zip(rows, probabilities):
            row["probs"] = {label: round(float(p), digits) for label, p in zip(classes, distribution)}
    return rows


def compare_labels(aligned: Sequence[dict], gold: Sequence[str], unit: str,
                   labels: Sequence[str] | None = None) -> Comparison:
    """A Comparison of a classifier's labels: one unit per record; an error's weight is the probability
    the model gave its wrong label (1 without probabilities), so confident errors come first. With `labels`
    (the task's classes), a prediction's 'probs' must give a finite number from 0 to 1 to each of them and to
    nothing else: a PredictionError naming the guid otherwise, as probabilities of other classes would rank the
    errors by numbers that mean nothing."""
    if labels is not None:
        for row in aligned:
            if isinstance(row.get("probs"), dict):
                _check_distribution(row, labels)
    predicted = [str(row["label"]) for row in aligned]
    wrong = []
    for row, label, expected in zip(aligned, predicted, gold):
        probabilities = row.get("probs") if isinstance(row.get("probs"), dict) else {}
        wrong.append(0.0 if label == expected else float(probabilities.get(label, 1.0)))
    with_probabilities = all(isinstance(row.get("probs"), dict) for row in aligned)
    ranked_by = ("the probability the model gave its wrong label" if with_probabilities else
                 "nothing: the predictions carry no probabilities, so the errors are in file order")
    return Comparison(unit, [str(g) for g in gold], predicted, wrong, list(zip(map(str, gold), predicted)),
                      ranked_by=ranked_by, right_or_wrong=True)


def _check_distribution(row: dict, labels: Sequence[str]) -> None:
    probs, guid = row["probs"], row.get("guid")
    unknown, missing = sorted(set(probs) - set(labels)), [label for label in labels if label not in probs]
    if unknown or missing:
        raise PredictionError(f"prediction {guid}: 'probs' must give a probability to each of {', '.join(labels)} "
                              f"and to nothing else; " + "; ".join(
                                  part for part in (f"unknown: {', '.join(unknown)}" if unknown else "",
                                                    f"missing: {', '.join(missing)}" if missing else "") if part))
    for label, value in probs.items():
        if not is_finite_number(value) or not 0 <= value <= 1:
            raise PredictionError(f"prediction {guid}: 'probs' must hold numbers from 0 to 1, not {label}={value!r}")


def jsonl_records(path: Path, build: Callable[[dict, str, str], Any]) -> list:
    """Records from a JSONL input file: build(row, guid, where) for each line, where guid defaults to
    'line-N' when the row has none."""
    records = []
    for number, row in read_jsonl(path):
        guid = str(row.get("guid", f"line-{number}"))
        records.append(build(row, guid, f"line {number}"))
    return records
