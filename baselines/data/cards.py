"""Each task's card: what is known about a task as data (baselines/tasks/<code>/card.json), read without importing it.

A card holds the task's code and order, its titles in English and Korean, the folder of its official files, those
files with their size, sha256 and URL, the listed derivations of them (reconstructions and prefix copies whose
scores count under the official protocols), the Hugging Face `klue` config's schema, the published scores of
neural models with their split and source, and the citation. Listing tasks, checking downloads, reading Hugging
Face files and labelling published scores read cards only; the task's code is imported when a task is run.
"""
from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
from pathlib import Path
from dataclasses import dataclass
from importlib import resources
from typing import Any, Protocol

from baselines.errors import CardError

CARD_FILE = "card.json"
CARD_FIELDS = ("code", "order", "title", "folder", "files", "listing", "official_files", "derived_files", "huggingface",
               "published", "citation")


class TaskFiles(Protocol):
    """What the data layer needs to know of a task to find, check and fetch its files (a TaskSpec has it)."""
    code: str
    folder: str
    train_file: str | None
    dev_file: str
    extra_files: tuple[str, ...]
    optional_extras: tuple[str, ...]


def official_names(task: TaskFiles) -> tuple[str, ...]:
    """The official files a task reads: its train file (where it has one), its dev file, its extra files."""
    return ((task.train_file,) if task.train_file else ()) + (task.dev_file,) + tuple(task.extra_files)


@dataclass(frozen=True)
class OfficialFile:
    name: str
    size: int
    sha256: str
    url: str


@dataclass(frozen=True)
class DerivedFile:
    """A file that is not an official file's bytes but is known to hold its records, whole or a listed part: a
    reconstruction, an export in the official layout, the prefix copies of the data README. Its scores are
    recorded under the official protocols, each file's derivation beside them."""
    official_name: str
    size: int
    sha256: str
    records: int
    part: bool  # a part of the official file's records, not all of them
    derivation: str


@dataclass(frozen=True)
class Published:
    """A neural model's published scores on one split, with where they were published."""
    model: str
    split: str
    source: str
    scores: dict[str, float]


@dataclass(frozen=True)
class Listing:
    """What the command line shows of a task before it imports it (`tasks`, `--help`, the options' choices): its
    models in order, the default, the headline metrics, the models chosen by --pos, and the prediction formats
    that `predict --format` writes besides the common ones. The task's TaskSpec says the same (test_cards holds
    the two together)."""
    models: tuple[str, ...]
    default_model: str
    headline: tuple[str, ...]
    pos_models: dict[str, str]
    prediction_writers: tuple[str, ...]


@dataclass(frozen=True)
class Card:
    """A task as data, read without importing it. With its files' roles (train, dev, extras) it is a TaskFiles:
    the data layer finds and checks a task's files from its card alone."""
    code: str
    order: int
    title: str
    title_ko: str
    folder: str
    train_file: str | None
    dev_file: str
    extra_files: tuple[str, ...]
    optional_extras: tuple[str, ...]
    listing: Listing
    official_files: tuple[OfficialFile, ...]
    derived_files: tuple[DerivedFile, ...]
    huggingface: dict[str, Any]
    published: tuple[Published, ...]
    citation: str
    # Words only this task's files carry, and where among other tasks' signs they are tried ({"rank", "signs"}):
    # how an error names the task whose file was given by mistake (baselines.data.formats). None: no signs.
    file_signs: dict[str, Any] | None = None


def _card(data: Any, where: str) -> Card:
    if not isinstance(data, dict) or set(CARD_FIELDS) - set(data):
        missing = sorted(set(CARD_FIELDS) - set(data)) if isinstance(data, dict) else list(CARD_FIELDS)
        raise CardError(f"{where}: a task card needs {', '.join(CARD_FIELDS)}; missing {', '.join(missing)}")
    try:
        return Card(
            str(data["code"]), int(data["order"]), str(data["title"]["en"]), str(data["title"]["ko"]),
            str(data["folder"]),
            None if data["files"]["train"] is None else str(data["files"]["train"]), str(data["files"]["dev"]),
            tuple(map(str, data["files"]["extras"])), tuple(map(str, data["files"]["optional_extras"])),
            Listing(tuple(map(str, data["listing"]["models"])), str(data["listing"]["default_model"]),
                    tuple(map(str, data["listing"]["headline"])),
                    {str(pos): str(model) for pos, model in data["listing"]["pos_models"].items()},
                    tuple(map(str, data["listing"]["prediction_writers"]))),
            tuple(OfficialFile(item["file"], int(item["bytes"]), item["sha256"], item["url"])
                  for item in data["official_files"]),
            tuple(DerivedFile(item["file"], int(item["bytes"]), item["sha256"], int(item["records"]),
                              bool(item["part"]), item["derivation"]) for item in data["derived_files"]),
            dict(data["huggingface"]),
            tuple(Published(item["model"], item["split"], item["source"],
                            {metric: float(score) for metric, score in item["scores"].items()})
                  for item in data["published"]),
            str(data["citation"]), data.get("file_signs"))
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise CardError(f"{where}: {type(error).__name__}: {error}") from None


ENTRY_POINT_GROUP = "klue_baselines.tasks"
BUILT_IN = "baselines.tasks"


@functools.cache
def built_in_cards() -> tuple[Card, ...]:
    """The cards of the tasks in baselines/tasks/, in their order."""
    folder = resources.files("baselines").joinpath("tasks")
    found = []
    for entry in folder.iterdir():
        card_file = entry.joinpath(CARD_FILE)
        if entry.is_dir() and card_file.is_file():
            where = f"baselines/tasks/{entry.name}/{CARD_FILE}"
            card = _card(json.loads(card_file.read_text(encoding="utf-8")), where)
            if card.code != entry.name:
                raise CardError(f"{where}: its code {card.code!r} is not its folder's name")
            found.append(card)
    return tuple(sorted(found, key=lambda card: (card.order, card.code)))


@functools.cache
def _registered() -> tuple[dict[str, str], dict[str, Card], tuple[str, ...]]:
    """(task code -> the module that holds its TaskSpec, task code -> card, problems). Built-in tasks are
    baselines.tasks.<code>; another distribution registers a task in the `klue_baselines.tasks` entry-point
    group, its package holding card.json beside its __init__.py, read without importing the task. A code
    registered twice, or a card that cannot be read or names another code, is a problem that names its sources;
    the task it concerns is left out, and check_registry raises it where a command starts."""
    sources = {card.code: f"{BUILT_IN}.{card.code}" for card in built_in_cards()}
    found = {card.code: card for card in built_in_cards()}
    problems = []
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"the entry point {entry.name} = {entry.value} ({ENTRY_POINT_GROUP}" + (
            f" of {entry.dist.name})" if entry.dist is not None else ")")
        if entry.name in sources:
            problems.append(f"task {entry.name!r} is registered twice: by {sources[entry.name]} and by {where}")
            continue
        try:
            found[entry.name] = _entry_point_card(entry.name, entry.module, where)
        except CardError as error:
            problems.append(str(error))
            continue
        sources[entry.name] = entry.module
    return sources, found, tuple(problems)


def _entry_point_card(code: str, module: str, where: str) -> Card:
    spec = importlib.util.find_spec(module)  # found, not imported: listing tasks runs none of their code
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise CardError(f"{where}: {module} is not an importable package")
    card_file = Path(locations[0]) / CARD_FILE
    try:
        data = json.loads(card_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CardError(f"{where}: cannot read {card_file}: {error}") from None
    card = _card(data, f"{where}: {card_file}")
    if card.code != code:
        raise CardError(f"{where}: {card_file} names the task {card.code!r}, not {code!r}")
    return card


def task_sources() -> dict[str, str]:
    """task code -> the module whose `TASK` is its TaskSpec, for every task registered without a problem."""
    return _registered()[0]


def check_registry() -> None:
    """A CardError for the first problem of the registered tasks (see _registered), if any."""
    problems = _registered()[2]
    if problems:
        raise CardError(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))


def all_cards() -> tuple[Card, ...]:
    """Every registered task's card, built-in or from an entry point, in their order."""
    return tuple(sorted(_registered()[1].values(), key=lambda card: (card.order, card.code)))


SAMPLE_FOLDER = "sample"


def package_folder(code: str) -> Path:
    """The folder of a registered task's package (found, not imported)."""
    module = task_sources()[code]
    spec = importlib.util.find_spec(module)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise CardError(f"{module}: the package of task {code!r} cannot be found")
    return Path(locations[0])


def task_module(code: str) -> str:
    """The module whose `TASK` is the task's TaskSpec."""
    return task_sources()[code]


def card_of(code: str) -> Card:
    return {card.code: card for card in all_cards()}[code]
