"""Hugging Face `klue` data: each config's schema in one table, and its rows read from the files that
`Dataset.to_json`, `Dataset.to_parquet` and `Dataset.save_to_disk` write.

The schema is that of the `klue` loading script that `datasets` shipped (huggingface/datasets,
datasets/klue/klue.py, the versions that stream with `dl_manager.iter_archive`, and the hub's `klue/klue`):
NER rows are `sentence`, `tokens` (characters) and `ner_tags`; NLI's ClassLabel order is entailment,
neutral, contradiction. Integer labels are read by the ClassLabel names that the file carries where it
carries them: parquet in its schema metadata (key `huggingface`), a save_to_disk folder in its
dataset_info.json, a Dataset object in `.features`. JSON Lines carry none: there the shipped order is used.
Names other than the official label set are an error. The formats are told apart by content, never by file
name: a folder is a `save_to_disk` dataset, a file starting with the bytes PAR1 is parquet, and a JSON Lines
file whose first row has the config's fields is a `to_json` export. Parquet and `save_to_disk` need pyarrow
(the `hf` extra); `datasets` itself is not needed.

HF NER and DP rows have no guid. Where the file holds as many rows as the official split (NER 21,008
train or 5,000 validation sentences, DP 10,000 or 2,000), its order is the official file's, and row N gets
the official guid's stem (`klue-ner-v1_dev_00042`; the HF rows drop the source that ends the official
guid, `-wikitree`), which matches the official guid when scored (see taskspec.align_predictions).
Otherwise row N gets `row-N`.
"""
from __future__ import annotations

import importlib.util
import json
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from baselines.data import cards
from baselines.data.fileio import DataError, looks_like_jsonl, read_jsonl
from baselines.errors import caller_stacklevel, InputWarning

HF_EXTRA_HINT = 'reading parquet and save_to_disk files needs the hf extra: pip install "klue-baselines[hf]"'

@dataclass(frozen=True)
class HfSchema:
    """One config of the HF `klue` dataset.

    `fields` are the columns of every row; `labels` maps each ClassLabel column to its names, in ClassLabel
    order (the integer is the index); `predictions` maps a prediction column as HF users keep it to this
    project's prediction field; `split_sizes` are the records of the official train and dev files (a file of
    that many records is taken as the whole split); `guid_stem` numbers the rows of configs without guids;
    `class_scores` maps a prediction column of per-class numbers (a list in ClassLabel order) to the
    ClassLabel column that orders it: the class probabilities of YNAT, NLI and RE (which AUPRC needs), kept
    as HF users keep probabilities or logits.
    """
    config: str
    fields: tuple[str, ...]
    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    predictions: dict[str, str] = field(default_factory=dict)
    split_sizes: dict[str, int] = field(default_factory=dict)
    guid_stem: str = ""
    class_scores: dict[str, str] = field(default_factory=dict)


# The mapping, config by config, from each task's card (fields and ClassLabel orders as the shipped
# datasets/klue/klue.py has them).
SCHEMAS: dict[str, HfSchema] = {card.code: HfSchema(
    card.huggingface["config"], tuple(card.huggingface["fields"]),
    {column: tuple(names) for column, names in card.huggingface["labels"].items()},
    dict(card.huggingface["predictions"]), dict(card.huggingface["split_sizes"]), card.huggingface["guid_stem"],
    dict(card.huggingface["class_scores"])) for card in cards.all_cards()}


def label_name(schema: HfSchema, column: str, value: Any, path: Path, where: str) -> str | None:
    """A ClassLabel value as its name: an integer by the HF order, a name already (string), or None for HF's
    'no label' (-1, as in test splits, or null)."""
    names = schema.labels[column]
    if value is None or value == -1:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise DataError(path, where, f"'{column}' should be a class index 0-{len(names) - 1} or a name, not "
                                     f"{type(value).__name__}")
    if isinstance(value, int):
        if not 0 <= value < len(names):
            raise DataError(path, where, f"'{column}' {value} is outside the {len(names)} classes of HF klue "
                                         f"{schema.config} (0-{len(names) - 1})")
        return names[value]
    if value not in names:
        raise DataError(path, where, f"'{column}' {value!r} is not a class of HF klue {schema.config}")
    return value


def rows_with_label_names(code: str, rows: list[dict], path: Path, official_field: str = "label") -> list[dict]:
    """Rows whose ClassLabel 'label' index is put, as its name, in the field the official file uses."""
    schema = SCHEMAS[code]
    converted = []
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise DataError(path, f"row {number}", f"expected an object with the HF klue {code} fields")
        # A row without 'label' is unlabelled, as HF's -1 is: reading goes on, and training or scoring says
        # which record lacks its label.
        converted.append(dict(row, **{official_field: label_name(schema, "label", row.get("label"), path,
                                                                 f"row {number}")}))
    return converted


def positional_guids(schema: HfSchema, count: int) -> list[str]:
    """Guids for rows without one: the official guid stems where `count` is an official split's size
    (whose order the HF split keeps), else row-N."""
    for split, size in schema.split_sizes.items():
        if count == size and schema.guid_stem:
            return [schema.guid_stem.format(split=split, index=index) for index in range(count)]
    return [f"row-{index}" for index in range(count)]


SPLIT_NAMES = {"train": "train", "dev": "validation"}  # this project's split names -> the HF ones


def is_saved_dataset(path: Path) -> bool:
    """A folder that `Dataset.save_to_disk` wrote (or a DatasetDict's, whose splits are its subfolders)."""
    return path.is_dir() and ((path / "state.json").is_file() or (path / "dataset_dict.json").is_file())


def find_split(data_dir: Path, code: str, split: str) -> Path | None:
    """A config's split in a folder of HF exports: <data_dir>/<config>/<train|validation> as .jsonl,
    .json, .parquet, or a save_to_disk folder (also <data_dir>/<config>/ saved as a DatasetDict)."""
    name = SPLIT_NAMES[split]
    for candidate in (data_dir / code / f"{name}.jsonl", data_dir / code / f"{name}.json",
                      data_dir / code / f"{name}.parquet", data_dir / code / name):
        if candidate.is_file() or is_saved_dataset(candidate):
            return candidate
    return None


def _pyarrow(path: Path):
    if importlib.util.find_spec("pyarrow") is None:
        raise DataError(path, None, HF_EXTRA_HINT)
    import pyarrow
    import pyarrow.ipc
    import pyarrow.parquet
    return pyarrow


def _arrow_folder_rows(folder: Path) -> tuple[list[dict], Any]:
    """The rows of a `Dataset.save_to_disk` folder (its Arrow stream files, in the order state.json lists) and
    the features that its dataset_info.json holds (None where it holds none)."""
    if (folder / "dataset_dict.json").is_file():
        splits = ", ".join(sorted(p.name for p in folder.iterdir() if p.is_dir()))
        raise DataError(folder, None, f"is a DatasetDict; give one split's folder ({splits})")
    state_path = folder / "state.json"
    if not state_path.is_file():
        raise DataError(folder, None, "is a folder without state.json: not a Hugging Face save_to_disk dataset")
    try:
        state = json.loads(state_path.read_text(encoding="utf-8-sig"))
        names = [entry["filename"] for entry in state["_data_files"]]
    except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError):
        raise DataError(state_path, None, "expected a save_to_disk state with '_data_files'") from None
    pyarrow = _pyarrow(folder)
    rows, carried = [], []
    for name in names:
        path = folder / Path(name).name  # a bare file name: nothing outside the folder is read
        try:
            with pyarrow.memory_map(str(path)) as source:
                table = pyarrow.ipc.open_stream(source).read_all()
        except (OSError, pyarrow.ArrowInvalid) as error:
            raise DataError(path, None, f"not a readable Arrow stream ({error})") from None
        rows.extend(table.to_pylist())
        try:
            carried.append((path, _schema_features(table.schema.metadata)))
        except ValueError:  # only compared with dataset_info.json, which is what is read
            carried.append((path, None))
    info_path = folder / "dataset_info.json"
    if not info_path.is_file():
        return rows, None
    try:
        info = json.loads(info_path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise DataError(info_path, None, "expected the JSON that save_to_disk writes") from None
    features = info.get("features") if isinstance(info, dict) else None
    for path, own in carried:
        _warn_of_other_class_names(info_path, features, path, own)
    return rows, features


def _schema_features(metadata: dict | None) -> Any:
    """The `datasets` features that an Arrow or parquet schema's metadata holds (key 'huggingface'), or None;
    a ValueError when that metadata is not JSON."""
    info = json.loads((metadata or {}).get(b"huggingface", b"null").decode("utf-8"))
    info = info.get("info") if isinstance(info, dict) else None
    return info.get("features") if isinstance(info, dict) else None


def _warn_of_other_class_names(info_path: Path, features: Any, arrow_path: Path, own: Any) -> None:
    """An InputWarning where dataset_info.json and an Arrow file's own schema give a ClassLabel column other
    names: the labels are read by dataset_info.json, as datasets.load_from_disk reads them."""
    if not isinstance(features, dict) or not isinstance(own, dict):
        return
    for column, feature in features.items():
        names, carried = class_label_names(feature), class_label_names(own.get(column))
        if names is not None and carried is not None and names != carried:
            warnings.warn(f"{info_path} gives '{column}' the classes {', '.join(names)}, but {arrow_path.name} "
                          f"carries {', '.join(carried)}: read by dataset_info.json, as datasets.load_from_disk "
                          f"reads it", InputWarning, stacklevel=caller_stacklevel())


def _parquet_rows(path: Path) -> tuple[list[dict], Any]:
    """The rows of a parquet file, and the features that `datasets` keeps in its schema metadata."""
    pyarrow = _pyarrow(path)
    try:
        table = pyarrow.parquet.read_table(str(path))
    except (OSError, pyarrow.ArrowInvalid) as error:
        raise DataError(path, None, f"not a readable parquet file ({error})") from None
    try:
        features = _schema_features(table.schema.metadata)
    except ValueError:  # json.JSONDecodeError and UnicodeDecodeError
        raise DataError(path, None, "its 'huggingface' schema metadata is not JSON") from None
    return table.to_pylist(), features


def is_parquet(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4) == b"PAR1"


def exported_rows(path: Path) -> tuple[str, list[dict], Any] | None:
    """(format, rows, features) of a Hugging Face export: a save_to_disk folder, a parquet file or JSON Lines,
    with the serialised `datasets` features that the file carries (None for JSON Lines); None for any other
    file (an official file)."""
    path = Path(path)
    if path.is_dir():
        return ("save_to_disk", *_arrow_folder_rows(path))
    if not path.is_file():
        return None
    if is_parquet(path):
        return ("parquet", *_parquet_rows(path))
    if looks_like_jsonl(path):
        return "jsonl", [row for _number, row in read_jsonl(path)], None
    return None


def class_label_names(feature: Any) -> tuple[str, ...] | None:
    """The names of a ClassLabel feature as `datasets` serialises it, or of the ClassLabel that a sequence
    holds (NER's ner_tags: Sequence, List, or a one-item list in older versions); None for other features."""
    if isinstance(feature, list) and len(feature) == 1:
        return class_label_names(feature[0])
    if not isinstance(feature, dict):
        return None
    if feature.get("_type") == "ClassLabel":
        names = feature.get("names")
        return tuple(names) if isinstance(names, list) and all(isinstance(n, str) for n in names) else ()
    return class_label_names(feature.get("feature"))


def file_schema(code: str, features: Any, path: Path) -> HfSchema:
    """`code`'s schema with the ClassLabel orders that a file's features give (the shipped orders for columns
    whose feature is not a ClassLabel, and where the file carries no features). Names other than the
    official label set are an error: the file is not of this config, or a label was renamed."""
    schema = SCHEMAS[code]
    if not isinstance(features, dict):
        return schema
    orders = {}
    for column, official in schema.labels.items():
        names = class_label_names(features.get(column))
        if names is None:
            continue
        if len(set(names)) != len(names) or set(names) != set(official):
            unknown = [name for name in names if name not in official]
            missing = [name for name in official if name not in names]
            problems = ([f"not a class of it: {', '.join(unknown)}"] if unknown else []) + (
                [f"missing: {', '.join(missing)}"] if missing else []) + (
                ["a name repeated"] if len(set(names)) != len(names) else [])
            raise DataError(path, None, f"the '{column}' ClassLabel names are not those of HF klue {code} "
                                        f"({'; '.join(problems)})")
        orders[column] = names
    return replace(schema, labels={**schema.labels, **orders})


def named_rows(code: str, rows: list, features: Any, path: Path) -> list:
    """Rows whose ClassLabel columns hold names, read by the file's own ClassLabel names (see file_schema);
    names pass as they are, for the task's own check. Rows that are not objects are left to the task's reader,
    which says what is wrong with them."""
    schema = file_schema(code, features, path)
    converted = []
    for number, row in enumerate(rows, start=1):
        if isinstance(row, dict):
            row = {**row, **{column: _named(schema, column, row[column], path, f"row {number}")
                             for column in schema.labels if column in row}}
        converted.append(row)
    return converted


def matches(schema: HfSchema, row: dict) -> bool:
    return isinstance(row, dict) and set(schema.fields) <= set(row)


def schema_error(schema: HfSchema, path: Path, row: dict, expected_also: str) -> DataError:
    return DataError(path, "row 1", f"fields {', '.join(sorted(row)) or '(none)'}: expected the Hugging Face klue "
                                    f"'{schema.config}' fields ({', '.join(schema.fields)}){expected_also}")


def prediction_rows(code: str, rows: list[dict], gold_ids: list[str], path: Path) -> list[dict]:
    """Predictions as HF users keep them, made into this project's rows: 'id' read as 'guid' (SQuAD style);
    without guids, one row per gold record in the gold's order (a count that differs is an error); HF
    columns renamed (STS 'label' -> 'score', DP 'head'/'deprel' -> 'heads'/'deprels', MRC
    'prediction_text' -> 'answer', WoS 'state' -> 'states', NER 'ner_tags' -> 'tags') and ClassLabel indices
    turned into names. Rows in this project's own form pass unchanged."""
    schema = SCHEMAS[code]
    rows = [dict(row, guid=row["id"]) if "guid" not in row and "id" in row else row for row in rows]
    if rows and not any("guid" in row for row in rows):
        if len(rows) != len(gold_ids):
            raise DataError(path, None, f"{len(rows)} predictions without guids for {len(gold_ids)} gold records: "
                                        "predictions in the gold's row order need exactly one per record")
        rows = [dict(row, guid=guid) for row, guid in zip(rows, gold_ids)]
    converted = []
    for number, row in enumerate(rows, start=1):
        row = dict(row)
        for column, ours in schema.predictions.items():
            if column not in row or (ours in row and ours != column):
                continue
            value = row.pop(column)
            if column in schema.class_scores and isinstance(value, list):
                names = schema.labels[schema.class_scores[column]]
                if len(value) != len(names):
                    raise DataError(path, f"row {number}", f"'{column}' should hold {len(names)} numbers, one per "
                                                           f"class of HF klue {code}, not {len(value)}")
                value = dict(zip(names, value))
            elif column in schema.labels:
                value = _named(schema, column, value, path, f"row {number}")
            row[ours] = value
        converted.append(row)
    return converted


def _named(schema: HfSchema, column: str, value: Any, path: Path, where: str) -> Any:
    """ClassLabel indices (one, or a list such as NER's tags) as names. Names are left as they are, for the
    task's own check, which counts the unknown ones."""
    if isinstance(value, list):
        return [_named(schema, column, item, path, where) for item in value]
    return value if isinstance(value, str) else label_name(schema, column, value, path, where)


def to_hf_predictions(code: str, rows: list[dict]) -> list[dict]:
    """Prediction rows as HF users keep them: the HF columns only (see HfSchema.predictions), ClassLabel names
    as indices, no guid (the order is the input's); the reverse of prediction_rows."""
    schema = SCHEMAS[code]
    converted = []
    for row in rows:
        hf_row = {}
        for column, ours in schema.predictions.items():
            if ours not in row:
                continue  # an optional column (RE's probs of a model without predict_proba)
            value = row[ours]
            if column in schema.class_scores:
                value = [value.get(name, 0.0) for name in schema.labels[schema.class_scores[column]]]
            elif column in schema.labels:
                names = schema.labels[column]
                value = [names.index(item) for item in value] if isinstance(value, list) else names.index(value)
            hf_row[column] = value
        converted.append(hf_row)
    return converted


def readable(code: str, official: Callable[[Path], list], from_rows: Callable[[list[dict], Path], list],
             raw_jsonl: bool = False) -> Callable[[Path], list]:
    """A loader that reads the Hugging Face exports of `code`'s config with from_rows (HF rows -> records)
    and any other file with `official`. With raw_jsonl (the inputs of `predict`), a JSON Lines file that is
    not in the HF schema goes to `official` too (the task's raw JSONL); otherwise it is an error that names
    the fields found and those expected."""
    schema = SCHEMAS[code]

    def load(path: Path) -> list:
        exported = exported_rows(Path(path))
        if exported is None:
            return official(path)
        kind, rows, features = exported
        if rows and matches(schema, rows[0]):
            return from_rows(named_rows(code, rows, features, Path(path)), Path(path))
        if kind == "jsonl" and (raw_jsonl or len(rows) == 1):
            # A single line may be a whole official document written compactly ({"data": [...]} for MRC):
            # the official reader says what is wrong with it.
            return official(path)
        raise schema_error(schema, Path(path), rows[0] if rows else {}, "" if kind != "jsonl" else
                           "; JSON Lines are read as Hugging Face exports, and official files are one JSON document")

    load.__doc__ = f"{official.__doc__ or ''} Also reads Hugging Face klue '{code}' exports (baselines.data.hf)."
    return load
