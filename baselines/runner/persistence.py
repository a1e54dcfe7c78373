"""Saving and loading fitted models: a metadata header checked before anything in the file is read as a model.

A model file is a magic line, one line of JSON metadata, then the model. With the `secure` extra installed
(skops), the model is stored with skops.io, which rebuilds objects from data without running code from the
file; before it builds anything, every class and function that the file names is checked against the exact
list of what the task's models hold (TaskSpec.modelling.saved_types), and anything else is refused. Without it, the
model is a joblib pickle. Either way the header is read and checked as plain text first (format, task,
versions, and the sha256 of the model bytes that follow), so a file that is not a klue-baselines model, or
was saved for another task or library version, or was damaged, is refused without reading a byte of it
as a model. A pickle can run code when it is loaded, and anyone can write a valid header for one: like
numpy.load(allow_pickle=False), a pickled payload is loaded only with explicit consent (trust_pickle).
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import tokenize
import zipfile
import zlib
from pathlib import Path
from typing import Any, Iterator, Sequence

import joblib
import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.utils.validation import check_is_fitted

from baselines.data.fileio import atomic_output, file_sha256
from baselines.runner.registry import get_task
from baselines.errors import ModelFileError
from features.gazetteer import EntityGazetteer

FORMAT = "klue-baselines-model/2"
MAGIC = b"KLUE-BASELINES-MODEL\n"
_HEADER_LIMIT = 1 << 20  # a header is a few hundred bytes; a longer first line is not one
_CHECKED_VERSIONS = ("klue_baselines", "kiwipiepy", "scikit_learn")
# What skops rebuilds from plain data, by the kind of node that its model file stores it as: containers, JSON
# values, bytes and numpy arrays of numbers. No other name may stand in these nodes.
_NUMERIC_SCALARS = frozenset(f"numpy.{kind.__name__}" for kind in set(np.sctypeDict.values())
                             if issubclass(kind, (np.number, np.bool_)))
PLAIN_DATA = {"DictNode": frozenset({"builtins.dict"}), "ListNode": frozenset({"builtins.list"}),
              "TupleNode": frozenset({"builtins.tuple"}), "BytesNode": frozenset({"builtins.bytes"}),
              "JsonNode": frozenset({"builtins.str"}), "NdArrayNode": _NUMERIC_SCALARS | {"numpy.ndarray"}}
# Kinds of node that name a class or function which skops imports (TypeNode, FunctionNode), builds without its
# constructor (ObjectNode, RandomGeneratorNode) or calls with arguments from the file (LossNode, scikit-learn's
# losses): each name must be one that the task's models hold (TaskSpec.modelling.saved_types). Every other kind (bound
# methods, partials, operator functions, sets, slices, sparse matrices, scikit-learn's trees) is refused: no
# model of this toolkit holds one.
NAMED_KINDS = frozenset({"ObjectNode", "TypeNode", "FunctionNode", "LossNode", "RandomGeneratorNode"})
# The bit generator of numpy's default_rng, which scikit-learn's gradient boosting keeps; skops calls the
# generator class that the file names.
BIT_GENERATORS = frozenset({"PCG64"})
# A model's schema holds what is not an array, as JSON: the vocabularies of its vectorisers above all (270 MiB for
# STS's default model trained on the official data); one past a GiB is not a model file.
_SCHEMA_LIMIT = 1 << 30
# The most bytes a model file may hold on disk, and the most its model may take inflated: the sum of every
# entry of its skops archive that the schema makes skops read, counted once per read (a crafted schema can name
# one entry many times). The largest model that `train --all` writes on the full official data holds far less
# (docs/guide/model-files.md gives the figures); a file past either is refused before anything is inflated.
MODEL_FILE_LIMIT = 1 << 30
INFLATED_LIMIT = 2 << 30


def skops_io():
    """skops.io when the `secure` extra is installed, else None."""
    try:
        import skops.io
    except ImportError:
        return None
    return skops.io


def training_digest(paths: Sequence[Path]) -> str:
    """One sha256 over the training files' own sha256s, in order."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(file_sha256(path).encode())
    return digest.hexdigest()


def save_model(path: Path, model: Any, task: str, model_name: str, train_files: Sequence[Path],
               versions: dict[str, str]) -> dict:
    """Write `model` with its metadata header: through skops where the `secure` extra is installed, else as
    a joblib pickle. Returns the metadata."""
    secure = skops_io()
    if secure is not None:
        payload, payload_format = secure.dumps(model, compression=zipfile.ZIP_DEFLATED), "skops"
    else:
        buffer = io.BytesIO()
        joblib.dump(model, buffer, compress=3)
        payload, payload_format = buffer.getvalue(), "joblib"
    metadata = {"format": FORMAT, "task": task, "model": model_name, "versions": versions,
                "training_data_sha256": training_digest(train_files),
                "training_files": [str(p) for p in train_files], "payload_format": payload_format,
                "payload_sha256": hashlib.sha256(payload).hexdigest(), "payload_bytes": len(payload)}
    with atomic_output(Path(path), "wb") as handle:
        handle.write(MAGIC)
        handle.write(json.dumps(metadata, ensure_ascii=False).encode("utf-8") + b"\n")
        handle.write(payload)
    return metadata


def read_metadata(path: Path) -> tuple[dict, int]:
    """The checked header of a model file and the offset where its pickle starts; nothing is unpickled."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(len(MAGIC))
            line = handle.readline(_HEADER_LIMIT)
            offset = handle.tell()
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such model file") from None
    except OSError as error:
        raise ModelFileError(f"{path}: cannot read ({error.strerror})") from None
    if magic != MAGIC:
        raise ModelFileError(f"{path}: not a klue-baselines model file (it does not start with the model "
                             f"header; files saved before version 2 of the format must be trained again)")
    try:
        metadata = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ModelFileError(f"{path}: damaged model header (not one line of JSON)") from None
    expected = {"format": str, "task": str, "model": str, "versions": dict, "payload_format": str,
                "payload_sha256": str, "payload_bytes": int}
    if not isinstance(metadata, dict):
        raise ModelFileError(f"{path}: damaged model header (expected a JSON object)")
    for key, kind in expected.items():
        if not isinstance(metadata.get(key), kind) or isinstance(metadata.get(key), bool):
            raise ModelFileError(f"{path}: damaged model header ('{key}' should be {kind.__name__}, "
                                 f"found {type(metadata.get(key)).__name__})")
    if metadata["format"] != FORMAT:
        raise ModelFileError(f"{path}: model file format {metadata['format']!r}, this version reads {FORMAT!r}")
    if metadata["payload_format"] not in ("skops", "joblib"):
        raise ModelFileError(f"{path}: damaged model header (unknown payload_format "
                             f"{metadata['payload_format']!r})")
    return metadata, offset


PICKLE_CONSENT = "--trust-pickle (CLI) or trust_pickle=True (API)"


def model_types(task: str) -> dict[str, type]:
    """The estimator class of each of `task`'s models, by model name."""
    return {name: entry.estimator for name, entry in get_task(task).modelling.models.items()}


def retrain(task: str) -> str:
    """What a refused model file's message ends with: how to make one that this version loads."""
    return f"train the model again with this version (klue-baselines train {task}; train --all for the ready models)"


def load_model(path: Path, task: str, versions: dict[str, str], trust_pickle: bool = False) -> tuple[Any, dict]:
    """The model and its metadata; ModelFileError, before anything is unpickled, when the file is not a
    model file, is damaged, is for another task, names a model that the task does not have or was written
    with other versions of the toolkit, kiwipiepy or scikit-learn (their models may not load or behave
    alike), and when its model is a pickle and trust_pickle is not given; after loading, when the object is
    not a fitted estimator of the class that its header's model name makes."""
    metadata, offset = read_metadata(path)
    if metadata["task"] != task:
        raise ModelFileError(f"{path}: this model was trained for {metadata['task']}, not {task}")
    known = model_types(task)
    expected = known.get(metadata["model"])
    if expected is None:
        raise ModelFileError(f"{path}: its header names model {metadata['model']!r}, which {task} does not have "
                             f"({', '.join(sorted(known))})")
    for library in _CHECKED_VERSIONS:
        saved, current = metadata["versions"].get(library), versions.get(library)
        if saved != current:
            raise ModelFileError(f"{path}: saved with {library} {saved}, but this is {current}; {retrain(task)}")
    if metadata["payload_format"] == "joblib" and not trust_pickle:
        raise ModelFileError(f"{path}: the model is a pickle, which can run any code when loaded; if you trust "
                             f"the file's source, load it with {PICKLE_CONSENT}")
    claimed = max(metadata["payload_bytes"], path.stat().st_size)
    if claimed > MODEL_FILE_LIMIT:
        raise ModelFileError(f"{path}: {claimed:,} bytes, more than a model file may hold ({MODEL_FILE_LIMIT:,})")
    with open(path, "rb") as handle:
        handle.seek(offset)
        payload = handle.read(metadata["payload_bytes"] + 1)  # one more than the header says: a longer file is damaged
    if len(payload) != metadata["payload_bytes"] or hashlib.sha256(payload).hexdigest() != metadata["payload_sha256"]:
        raise ModelFileError(f"{path}: damaged model file (the model's bytes do not match the sha256 in its "
                             f"header)")
    if metadata["payload_format"] == "skops":
        model = _load_skops(path, payload, task)
    else:
        try:
            model = joblib.load(io.BytesIO(payload))
        except Exception as error:  # joblib raises many kinds for a damaged payload
            raise ModelFileError(f"{path}: not a readable model ({type(error).__name__}: {error})") from None
    if not isinstance(model, expected):
        raise ModelFileError(f"{path}: holds a {type(model).__name__}, not the {expected.__name__} that a {task} "
                             f"{metadata['model']} model is")
    try:
        check_is_fitted(model)
    except NotFittedError:
        raise ModelFileError(f"{path}: holds a {expected.__name__} that was never fitted") from None
    # The package version stays while a model's features change between commits: a model that can tell
    # what it was fitted on says so here, not with a shape error at predict time.
    mismatch = getattr(model, "layout_mismatch", None)
    problem = mismatch() if callable(mismatch) else None
    if problem:
        raise ModelFileError(f"{path}: {problem}; {retrain(task)}")
    # Any model saved before a hyper-parameter was added lacks it, and would fail when it is read (NER's
    # gazetteer): refused here, for every model, whatever its own layout_mismatch knows.
    missing = [name for name in expected().get_params(deep=False) if not hasattr(model, name)]
    if missing:
        raise ModelFileError(f"{path}: this {task} {metadata['model']} model was saved by a version without the "
                             f"hyper-parameters {', '.join(missing)}; {retrain(task)}")
    return model, metadata


def full_name(part: Any) -> str:
    """'module.Name' of a class or function as a skops file names it; a string is such a name already."""
    return part if isinstance(part, str) else f"{part.__module__}.{part.__name__}"


def saved_type_names(task: str) -> frozenset[str]:
    """The full names that a model file of `task` may hold besides plain data: its own TaskSpec.modelling.saved_types,
    what it takes from other tasks' files (TaskSpec.links.requires: their fitted models, frozen, with all that those
    hold in turn, or a gazetteer), and the types of plain data."""
    parts, seen, pending = [], set(), [task]
    while pending:
        spec = get_task(pending.pop())
        if spec.code in seen:
            continue
        seen.add(spec.code)
        parts += spec.modelling.saved_types
        for requirement in spec.links.requires:  # as the model is built with them (build.requirement_value)
            if requirement.provides == "gazetteer":
                parts.append(EntityGazetteer)
            else:
                parts.append(FrozenEstimator)
                pending.append(requirement.task)
    return frozenset(map(full_name, parts)).union(*PLAIN_DATA.values())


def _schema_nodes(schema: Any) -> Iterator[dict]:
    """Every node of a skops schema (a dict with a '__loader__'), wherever it nests: in any value of any
    dict or list, so that no node that skops would build is left unchecked."""
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "__loader__" in item:
                yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _bit_generator(node: dict) -> Any:
    """The name of the bit generator that a RandomGeneratorNode makes skops call (None if it has none)."""
    try:
        return json.loads(node["content"]["bit_generator"]["content"]["bit_generator"]["content"])
    except (KeyError, TypeError, ValueError):
        return None


def _node_name(node: dict) -> str:
    """'module.Name' of the class or function a skops node names."""
    return f"{node.get('__module__')}.{node.get('__class__')}"


def refused_part(nodes: list[dict], allowed: frozenset[str]) -> str | None:
    """What among a skops schema's nodes is outside `allowed`, in words: the first node whose kind is not one
    that this toolkit's models are stored as, or whose class or function is not in `allowed`; None when all
    are."""
    for node in nodes:
        kind, name = node["__loader__"], _node_name(node)
        if not isinstance(kind, str):
            return f"a node of no kind skops knows ({kind!r})"
        if kind in PLAIN_DATA:
            if name not in PLAIN_DATA[kind]:
                return f"{name} stored as {kind}"
        elif kind not in NAMED_KINDS:
            return f"a {kind} ({name})"
        elif name not in allowed:
            return f"the type or function {name}"
        elif kind == "RandomGeneratorNode" and (generator := _bit_generator(node)) not in BIT_GENERATORS:
            return f"the bit generator {generator!r}"
    return None


def _skops_schema(path: Path, payload: bytes) -> list[dict]:
    """The nodes of a skops payload's schema, read as JSON without building anything it names, once every entry of
    the archive that they make skops read is checked to fit within INFLATED_LIMIT, and every array entry to hold
    exactly the bytes of the shape and type its header gives (numpy allocates an array by its header's shape
    before it reads a byte of it)."""
    try:
        with zipfile.ZipFile(io.BytesIO(payload)) as archive:
            info = archive.getinfo("schema.json")
            if info.file_size > _SCHEMA_LIMIT:
                raise ModelFileError(f"{path}: the model's schema is {info.file_size:,} bytes, more than a model "
                                     f"file holds")
            nodes = list(_schema_nodes(json.loads(archive.read(info).decode("utf-8"))))
            read = [node["file"] for node in nodes if "file" in node]
            if not all(isinstance(name, str) for name in read):
                raise ModelFileError(f"{path}: damaged model (its schema names a stored entry by something that is "
                                     f"not a name)")
            inflated = info.file_size + sum(archive.getinfo(name).file_size for name in read)
            if inflated > INFLATED_LIMIT:
                raise ModelFileError(f"{path}: the model would take {inflated:,} bytes inflated, more than a model "
                                     f"file may ({INFLATED_LIMIT:,})")
            for node in nodes:
                if node.get("__loader__") == "NdArrayNode" and node.get("type") == "numpy":
                    _check_stored_array(path, archive, node["file"])
            return nodes
    except ModelFileError:
        raise
    except (zipfile.BadZipFile, KeyError, UnicodeDecodeError, json.JSONDecodeError, RecursionError, OSError,
            EOFError, ValueError, zlib.error, SyntaxError, tokenize.TokenError, NotImplementedError) as error:
        # SyntaxError, TokenError: numpy reads an array's header as a Python literal; NotImplementedError: zipfile
        # on an entry whose compression method byte names one it does not know
        raise ModelFileError(f"{path}: not a readable model ({type(error).__name__}: {error})") from None


def _check_stored_array(path: Path, archive: zipfile.ZipFile, name: str) -> None:
    """The .npy entry `name` holds a header and exactly the bytes of the array it describes, of numbers."""
    info = archive.getinfo(name)
    with archive.open(info) as stored:
        version = np.lib.format.read_magic(stored)
        readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
        if version not in readers:  # numpy writes 3.0 only for field names outside Latin-1: no model has one
            raise ValueError(f"array {name} in .npy format {version[0]}.{version[1]}")
        shape, _fortran_order, dtype = readers[version](stored)
        header_bytes = stored.tell()
    if dtype.hasobject:
        raise ModelFileError(f"{path}: its array {name} holds Python objects, which no model of this toolkit "
                             f"stores")
    expected = header_bytes + math.prod(shape) * dtype.itemsize
    if expected != info.file_size:
        raise ModelFileError(f"{path}: damaged model (its array {name} is {info.file_size:,} bytes, not the "
                             f"{expected:,} of its shape {shape} and type {dtype})")


def _load_skops(path: Path, payload: bytes, task: str) -> Any:
    """A skops payload, loaded only when every node of it is plain data or a class or function that the
    task's models hold (saved_type_names): checked on the file's schema before skops imports, builds or
    calls anything."""
    secure = skops_io()
    if secure is None:
        raise ModelFileError(f"{path}: this model was saved with skops; install the secure extra to load it "
                             f"(pip install 'klue-baselines[secure]')")
    nodes = _skops_schema(path, payload)  # walked once, for the check and for skops
    refused = refused_part(nodes, saved_type_names(task))
    if refused:
        raise ModelFileError(f"{path}: the model holds {refused}, which no {task} model of this toolkit holds; "
                             f"it is not loaded")
    try:
        # Every name in the file was checked above; skops is told to trust exactly those.
        named = sorted({_node_name(node) for node in nodes})
        model = secure.loads(payload, trusted=named)
    except Exception as error:  # skops raises many kinds for a damaged payload
        raise ModelFileError(f"{path}: not a readable model ({type(error).__name__}: {error})") from None
    problem = unsafe_trees(model)
    if problem:
        raise ModelFileError(f"{path}: {problem}; it is not used")
    return model


def unsafe_trees(model: Any) -> str | None:
    """What is wrong, in words, with the trees of any histogram gradient boosting that `model` holds, or None.
    scikit-learn walks a tree's nodes by the indices they store, unchecked, in compiled code: an index out of
    range reads outside the tree, and a child that points back loops forever. Every split node's children
    must come after it and within the tree, and its feature within the model's; none may be categorical
    (this toolkit's models have no categorical features)."""
    for estimator in _held_objects(model):
        predictors = getattr(estimator, "_predictors", None)
        if not isinstance(estimator, (HistGradientBoostingClassifier, HistGradientBoostingRegressor)) \
                or predictors is None:
            continue
        for tree in (tree for trees in predictors for tree in trees):
            nodes = tree.nodes
            if nodes.dtype.names is None or not {"left", "right", "feature_idx", "is_leaf", "is_categorical"} <= \
                    set(nodes.dtype.names) or nodes.ndim != 1 or len(nodes) == 0:
                return "a boosted tree's nodes are not a tree's records"
            index = np.arange(len(nodes))
            split = nodes["is_leaf"] == 0
            for child in ("left", "right"):
                children = nodes[child][split].astype(np.int64)
                if np.any(children <= index[split]) or np.any(children >= len(nodes)):
                    return "a boosted tree's split points outside the tree or back to an earlier node"
            features = nodes["feature_idx"][split]
            if np.any(features < 0) or np.any(features >= estimator.n_features_in_):
                return "a boosted tree splits on a feature that the model does not have"
            if np.any(nodes["is_categorical"] != 0):
                return "a boosted tree has a categorical split, which no model of this toolkit makes"
    return None


def _held_objects(model: Any) -> Iterator[Any]:
    """`model` and every object that it holds in its attributes, containers and object arrays, once each."""
    seen: set[int] = set()
    stack = [model]
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, (str, bytes, int, float, type(None))):
            continue
        seen.add(id(item))
        yield item
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, np.ndarray):
            if item.dtype == object:
                stack.extend(item.ravel().tolist())
        elif hasattr(item, "__dict__"):
            stack.extend(vars(item).values())
