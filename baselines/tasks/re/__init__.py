"""RE: the relation between a subject and an object entity of a sentence (30 labels, no_relation included)."""
from __future__ import annotations

import bisect
import warnings
from dataclasses import dataclass, replace
from numbers import Integral
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_extraction import DictVectorizer

from baselines.display import html
from baselines.models.linear import OrderedLogisticRegression
from baselines.data import hf
from baselines.metrics import scoring, tallies
from baselines.errors import caller_stacklevel, InputWarning
from baselines.data.fileio import DataError, guid_of, looks_like_jsonl, read_json, require, require_list
from baselines.models.estimators import PLAIN_INPUT, FloorClassifier, TaskModel, plain_row, records_from
from baselines.models.explain import LinearExplanation
from baselines.models.params import ITERATIONS, MIN_COUNT, NEIGHBOURS, POSITIVE, SEED, HasMethods, Interval
from baselines.models.priors import adapt_to_priors
from baselines.data import grown
from baselines.taskspec import (Reading, Modelling, Scoring, Resources, Links, Presentation, Benchmarks, Probe,
                                ModelEntry, PredictionError, Requirement, TaskSpec, align_predictions, check_labels,
                                compare_labels, is_finite_number, jsonl_records, label_predictions)
from features.align import morphemes_in_span
from features.analysis import analyze
from features.morphemes import Analysis, eojeol_spans
from features.normalize import nfc, nfc_text
from features.tags import to_sejong
from features.vectorize import CONTENT_TAGS, neighbour_tokens, prefetch_neighbours

RELATION_LIST = "relation_list.json"
# Morphemes taken on each side of an entity. The training sentences average 97 characters (99 % within 264),
# so 50 on each side already spans most of a sentence; a window past its ends adds nothing.
WINDOW = Interval(Integral, 0, 50, closed="both")


@dataclass
class Entity:
    word: str
    start: int  # character offsets into the sentence, end inclusive as in the official files
    end: int
    type: str


@dataclass
class ReExample:
    guid: str
    sentence: str
    subject: Entity
    object: Entity
    label: str | None = None
    source: str | None = None


def _entity(row: dict, key: str, sentence: str, path: Path, where: str) -> Entity:
    value = require(row, key, dict, path, where)
    entity = Entity(
        word=require(value, "word", str, path, f"{where}, {key}"),
        start=require(value, "start_idx", int, path, f"{where}, {key}"),
        end=require(value, "end_idx", int, path, f"{where}, {key}"),
        type=require(value, "type", str, path, f"{where}, {key}"),
    )
    if not 0 <= entity.start <= entity.end < len(sentence) or sentence[entity.start:entity.end + 1] != entity.word:
        raise DataError(path, where, f"{key} offsets {entity.start}-{entity.end} do not hold its word "
                        f"{entity.word!r} (the sentence has {sentence[entity.start:entity.end + 1]!r} there)")
    return entity


def _example(row: dict, guid: str, path: Path, where: str) -> ReExample:
    sentence = require(row, "sentence", str, path, where)
    return ReExample(guid, sentence, _entity(row, "subject_entity", sentence, path, where),
                     _entity(row, "object_entity", sentence, path, where),
                     label=row.get("label"), source=row.get("source"))


def load(path: Path) -> list[ReExample]:
    """An official RE JSON file (label optional for unlabelled input)."""
    return records_from_rows(require_list(read_json(path), path), path)


def records_from_rows(rows: list, path: Path) -> list[ReExample]:
    """Records of rows in the official layout."""
    return [_example(row, require(row, "guid", str, path, guid_of(row, index)), path, guid_of(row, index))
            for index, row in enumerate(rows)]


def from_hf(rows: list[dict], path: Path) -> list[ReExample]:
    """Rows of the Hugging Face klue 're' schema (label: a ClassLabel index)."""
    return records_from_rows(hf.rows_with_label_names("re", rows, path), path)


def load_input(path: Path) -> list[ReExample]:
    """Official JSON, or JSONL with 'sentence', 'subject_entity' and 'object_entity' as in the official file."""
    if not looks_like_jsonl(path):
        return load(path)
    return jsonl_records(path, lambda row, guid, where: _example(row, guid, path, where))


def load_resources(files: dict[str, Path]) -> dict:
    """The relation list: relation_list.json where found, else the official list, which the Hugging Face
    klue 're' ClassLabel keeps in the same order (so HF data needs no file beside it)."""
    if RELATION_LIST not in files:
        return {"relations": list(hf.SCHEMAS["re"].labels["label"])}
    path = files[RELATION_LIST]
    data = read_json(path)
    relations = data.get("relations") if isinstance(data, dict) else None
    if not isinstance(relations, list) or scoring.RE_NO_RELATION not in relations:
        raise DataError(path, None, "expected {\"relations\": [...]} including 'no_relation'")
    return {"relations": [str(label) for label in relations]}


def as_records(X: Sequence) -> list[ReExample]:
    """ReExample records, or plain dicts shaped like a raw JSONL row ('sentence', 'subject_entity',
    'object_entity' as in the official file)."""
    return records_from(X, ReExample, lambda item, guid, where: _example(plain_row(item, where), guid, PLAIN_INPUT,
                                                                      where))


def in_nfc(records: Sequence[ReExample]) -> list[ReExample]:
    """The examples with their sentences in NFC, and the entities' words and offsets moved with them (see
    features.normalize)."""
    converted = []
    for record in records:
        text = nfc_text(record.sentence)
        if not text.changed:
            converted.append(record)
            continue
        entities = [replace(entity, word=nfc(entity.word), start=text.nfc_index(entity.start),
                            end=text.nfc_index(entity.end)) for entity in (record.subject, record.object)]
        converted.append(replace(record, sentence=text.text, subject=entities[0], object=entities[1]))
    return converted


def plain_inputs(records: Sequence[ReExample]) -> list[dict]:
    """Dicts shaped like a raw JSONL row: 'sentence', 'subject_entity' and 'object_entity'."""
    def entity(value: Entity) -> dict:
        return {"word": value.word, "start_idx": value.start, "end_idx": value.end, "type": value.type}

    return [{"sentence": r.sentence, "subject_entity": entity(r.subject), "object_entity": entity(r.object)}
            for r in records]


def headline(records: Sequence[ReExample], y: Sequence[str], predicted: Sequence[str]) -> float:
    """Micro F1 without no_relation, over the relations seen in y or predicted."""
    gold, pred = [str(label) for label in y], [str(label) for label in predicted]
    labels = sorted(set(gold) | set(pred) | {scoring.RE_NO_RELATION})
    return scoring.score_re(gold, pred, None, labels)["micro_f1"]


def targets(records: Sequence[ReExample]) -> list[str]:
    return [record.label for record in records]


def check_resource_labels(records: Sequence[ReExample], resources: dict, path: Path) -> None:
    """Every gold label is a relation of the relation list: a model cannot learn, nor the scorer score, one
    outside it."""
    relations = set(resources["relations"])
    for record in records:
        if record.label is not None and record.label not in relations:
            raise DataError(path, f"guid {record.guid}", f"label {record.label!r} is not in {RELATION_LIST} "
                                                         f"({len(relations)} relations)")


def scored_relations(records: Sequence[ReExample], predictions: Sequence[dict],
                     resources: dict) -> tuple[list[str], list[str], np.ndarray | None, list[str]]:
    """Gold and predicted relations in record order, the predicted probabilities (None unless every
    prediction has them) and the relation list, the predictions checked."""
    relations = resources["relations"]
    aligned = align_predictions(records, predictions)
    predicted = check_labels(aligned, "label", relations)
    gold = targets(records)
    unknown_gold = [r.guid for r in records if r.label not in relations]
    if unknown_gold:
        raise PredictionError(f"{len(unknown_gold)} gold records have labels outside {RELATION_LIST} "
                              f"(first: {', '.join(unknown_gold[:3])})")
    probs = None
    if all(isinstance(p.get("probs"), dict) for p in aligned):
        for prediction in aligned:
            _check_probs(prediction, relations)
        probs = np.array([[p["probs"].get(label, 0.0) for label in relations] for p in aligned], dtype=float)
    return gold, predicted, probs, relations


def score(records: Sequence[ReExample], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    """The official micro F1 and AUPRC; AUPRC only where every prediction has its 'probs' (an InputWarning says
    so otherwise)."""
    gold, predicted, probabilities, relations = scored_relations(records, predictions, resources)
    if probabilities is None:
        warnings.warn("re: AUPRC needs 'probs' (label -> probability) in every prediction; micro F1 only",
                      InputWarning, stacklevel=caller_stacklevel())
    return scoring.score_re(gold, predicted, probabilities, relations)


def tally(records: Sequence[ReExample], predictions: Sequence[dict], resources: dict) -> tallies.Tally:
    return tallies.tally_re(*scored_relations(records, predictions, resources))


def _check_probs(prediction: dict, relations: Sequence[str]) -> None:
    """A prediction's 'probs' maps relations of the relation list to finite, non-negative numbers (a
    relation left out counts as 0); anything else would silently move the AUPRC."""
    probs, guid = prediction["probs"], prediction.get("guid")
    unknown = sorted(set(probs) - set(relations))
    if unknown:
        raise PredictionError(f"prediction {guid}: 'probs' has keys that are not in {RELATION_LIST}: "
                              f"{', '.join(map(str, unknown[:3]))}")
    bad = {label: value for label, value in probs.items() if not is_finite_number(value) or value < 0}
    if bad:
        label, value = next(iter(bad.items()))
        raise PredictionError(f"prediction {guid}: 'probs' must hold finite numbers >= 0, not {label}={value!r}")


class RelationPrior(FloorClassifier):
    """The trivial floor: the most frequent relation, with the training label distribution as probabilities
    (scikit-learn's DummyClassifier, with plain dicts and micro F1 as its score)."""

    _to_records = staticmethod(as_records)
    _headline = staticmethod(headline)
    _analyses_text = False



def _bucket(value: int) -> str:
    return str(value) if value < 4 else "4-7" if value < 8 else "8-15" if value < 16 else "16+"


def entity_characters(role: str, entity: Entity) -> dict[str, float]:
    """The entity's surface: its first and last characters and its length with its type ('-대학교' ORG,
    '-씨' PER), and its character bigrams (names and titles that Kiwi splits differently each time)."""
    word = entity.word.lower()
    features = {f"{role}_length={min(len(word), 8)}|{entity.type}": 1.0}
    for size in (1, 2, 3):
        features[f"{role}_suffix={word[-size:]}|{entity.type}"] = 1.0
    for size in (1, 2):
        features[f"{role}_prefix={word[:size]}|{entity.type}"] = 1.0
    for i in range(len(word) - 1):
        features[f"{role}_bigram={word[i:i + 2]}"] = 1.0
    return features


def entity_morphemes(record: ReExample, analysis: Analysis) -> list[int]:
    """Indices of the morphemes inside the subject or the object."""
    return sorted(set(morphemes_in_span(analysis, record.subject.start, record.subject.end + 1))
                  | set(morphemes_in_span(analysis, record.object.start, record.object.end + 1)))


# Sentences the parser is given at once: all 28,803 distinct training sentences in one call took the fit's peak
# from 2.7 to 3.9 GB (the relation labeller's rows of every eojeol).
PARSED_AT_ONCE = 2000


def dependency_path_features(record: ReExample, analysis: Analysis, heads: Sequence[int],
                             relations: Sequence[str]) -> dict[str, float]:
    """Features of the two entities' places in a dependency tree of the sentence (`heads`: 1-based head of
    each whitespace-separated eojeol, 0 for the root; `relations`: their labels): the relations on the path
    from each entity's eojeol (the one holding its last character) up to their lowest common head, the word
    that heads both (often the verb or noun that names the relation), each entity's own relation and head
    word, the path's length, and whether one entity's eojeol heads the other's."""
    pair = f"{record.subject.type}>{record.object.type}"
    word_starts = [start for start, _end in eojeol_spans(record.sentence)]
    last_content: dict[int, str] = {}  # eojeol -> its last content morpheme (its last morpheme if none)
    for form, tag, eojeol in zip(analysis.forms, analysis.sejong_tags, analysis.eojeols):
        if tag in CONTENT_TAGS or eojeol not in last_content:
            last_content[eojeol] = f"{form}/{tag}"

    def chain(eojeol: int) -> list[int]:  # 1-based nodes from the eojeol up to the root's child
        nodes = [eojeol + 1]
        while heads[nodes[-1] - 1] != 0 and len(nodes) <= len(heads):
            nodes.append(heads[nodes[-1] - 1])
        return nodes

    subject = bisect.bisect_right(word_starts, record.subject.end) - 1
    obj = bisect.bisect_right(word_starts, record.object.end) - 1
    if subject == obj:
        return {"path=same_eojeol": 1.0, f"path=same_eojeol|{pair}": 1.0}
    up_subject, up_object = chain(subject), chain(obj)
    on_object = set(up_object)
    common = next((node for node in up_subject if node in on_object), 0)
    below_subject = up_subject[:up_subject.index(common)] if common else up_subject
    below_object = up_object[:up_object.index(common)] if common else up_object

    def labels(nodes: list[int]) -> str:
        shown = "/".join(relations[node - 1] for node in nodes[:3])
        return shown + ("/..." if len(nodes) > 3 else "")

    path = f"{labels(below_subject)}^{labels(below_object)}"
    features = {f"path={path}": 1.0, f"path={path}|{pair}": 1.0,
                f"path_length={_bucket(len(below_subject) + len(below_object))}": 1.0,
                f"subject_relation={relations[subject]}|{pair}": 1.0,
                f"object_relation={relations[obj]}|{pair}": 1.0}
    for role, eojeol in (("subject", subject), ("object", obj)):
        head = heads[eojeol]
        if head:
            features[f"{role}_head={last_content.get(head - 1, '-')}"] = 1.0
    if common == subject + 1:
        features[f"path=subject_heads_object|{pair}"] = 1.0
    elif common == obj + 1:
        features[f"path=object_heads_subject|{pair}"] = 1.0
    elif common:
        trigger = last_content.get(common - 1, "-")
        features[f"path_head={trigger}"] = 1.0
        features[f"path_head={trigger}|{pair}"] = 1.0
    return features


def pair_features(record: ReExample, analysis: Analysis, window: int = 3, between_characters: bool = False,
                  entity_surface: bool = False, typed_words: bool = False,
                  morpheme_neighbours: Sequence[Sequence[str]] | None = None) -> dict[str, float]:
    """Indicator features of one entity pair: types, order and distance, the entities' morphemes and
    the particles after them, the morphemes between and around them, and the sentence's content
    morphemes with both entities masked by their types. Optionally the entities' character surface, and
    the sentence's common nouns and verbs crossed with the type pair ('결혼' says spouse only for PER>PER),
    and, given `morpheme_neighbours` (per morpheme, as features.vectorize.neighbour_tokens gives), the
    nearest morphemes of the entities' morphemes in Kiwi's language model with the entity's type (an
    object 사장 then looks like 대표 and 회장)."""
    subject, obj = record.subject, record.object
    pair = f"{subject.type}>{obj.type}"
    tokens = [f"{form}/{to_sejong(tag)}" for form, tag in zip(analysis.forms, analysis.tags)]
    subject_index = morphemes_in_span(analysis, subject.start, subject.end + 1)
    object_index = morphemes_in_span(analysis, obj.start, obj.end + 1)
    subject_first = subject.start <= obj.start
    features = {f"pair={pair}": 1.0, f"subject_type={subject.type}": 1.0, f"object_type={obj.type}": 1.0,
                f"order={'so' if subject_first else 'os'}|{pair}": 1.0,
                f"subject={subject.word.lower()}": 1.0, f"object={obj.word.lower()}": 1.0}
    if subject.start <= obj.end and obj.start <= subject.end:
        features["nested"] = 1.0
    for name, index, entity in (("subject", subject_index, subject), ("object", object_index, obj)):
        for i in index:
            features[f"{name}_morpheme={tokens[i]}"] = 1.0
            if morpheme_neighbours is not None:
                for token in morpheme_neighbours[i]:
                    features[f"{name}_neighbour={token}|{entity.type}"] = 1.0
        if index:
            last = max(index)
            after = [tokens[i] for i in range(last + 1, min(last + 3, len(tokens)))
                     if analysis.eojeols[i] == analysis.eojeols[last] and analysis.tags[i][0] in "JEV"]
            features[f"{name}_particle={'+'.join(after) or '-'}"] = 1.0
            features[f"{name}_particle={'+'.join(after) or '-'}|{pair}"] = 1.0
            first = min(index)
            for offset in range(1, window + 1):
                if first - offset >= 0:
                    features[f"{name}_left{min(offset, 2)}={tokens[first - offset]}"] = 1.0
                if last + offset < len(tokens):
                    features[f"{name}_right{min(offset, 2)}={tokens[last + offset]}"] = 1.0
    inside = set(subject_index) | set(object_index)
    if subject_index and object_index:
        left_end = max(subject_index if subject_first else object_index)
        right_start = min(object_index if subject_first else subject_index)
        between = [tokens[i] for i in range(left_end + 1, right_start) if i not in inside]
        features[f"between_length={_bucket(len(between))}"] = 1.0
        features[f"eojeol_distance={_bucket(abs(analysis.eojeols[right_start] - analysis.eojeols[left_end]))}"] = 1.0
        for token in between:
            features[f"between={token}"] = 1.0
        for a, b in zip(between, between[1:]):
            features[f"between2={a} {b}"] = 1.0
        if len(between) <= 4:
            features[f"between_all={' '.join(between)}|{pair}"] = 1.0
        if between_characters:  # character bigrams survive a wrong morpheme split of the trigger word
            gap = record.sentence[min(subject.end, obj.end) + 1:max(subject.start, obj.start)]
            if len(gap) <= 30:
                for i in range(len(gap) - 1):
                    features[f"between_chars={gap[i:i + 2]}|{pair}"] = 1.0
    for i, tag in enumerate(analysis.sejong_tags):
        if i not in inside and tag in CONTENT_TAGS:
            features[f"word={analysis.forms[i]}"] = 1.0
        if typed_words and tag in ("NNG", "VV"):
            features[f"word={analysis.forms[i]}|{pair}"] = 1.0
    if entity_surface:
        features.update(entity_characters("subject", subject))
        features.update(entity_characters("object", obj))
    return features


class RelationClassifier(TaskModel, LinearExplanation, ClassifierMixin, BaseEstimator):
    """Entity-pair indicator features -> multinomial logistic regression with class probabilities.

    Parameters
    ----------
    C : float
        Inverse L2 strength of the logistic regression.
    window : int
        Morphemes taken on each side of the two entities.
    min_count : int
        A feature must occur in this many training pairs.
    adapt_priors : bool
        Adjust the posteriors to the label proportions a batch suggests (baselines.models.priors).
    between_characters, entity_surface, typed_words : bool
        Feature groups: character bigrams between the entities; the entities' first and last characters,
        length and bigrams; the sentence's nouns and verbs crossed with the type pair.
    entity_neighbours : int
        Nearest morphemes in Kiwi's CoNg model of each entity morpheme; 0 leaves them out.
    parser : fitted dependency parser or None
        A model with this toolkit's DP predict (raw sentences -> (heads, relations) per eojeol) whose trees
        give dependency_path_features; None leaves them out. `--param dp_train=FILE` fits DP's parser on a
        KLUE-DP training file, with Kiwi's tags, at first order with one perceptron (TASK.links.requires).
    max_iter : int
    random_state : int

    Attributes
    ----------
    vectorizer_ : DictVectorizer
        Restricted to the features kept by min_count.
    classifier_ : OrderedLogisticRegression
    classes_ : ndarray of str
    train_priors_ : ndarray
        The training share of each class (for adapt_priors).

    X is a sequence of ReExample records or of dicts shaped like a raw JSONL row.
    """

    _to_records = staticmethod(as_records)
    _in_nfc = staticmethod(in_nfc)
    _headline = staticmethod(headline)

    _parameter_constraints = {
        "C": [POSITIVE], "window": [WINDOW], "min_count": [MIN_COUNT], "adapt_priors": ["boolean"],
        "between_characters": ["boolean"], "entity_surface": ["boolean"], "typed_words": ["boolean"],
        "entity_neighbours": [NEIGHBOURS], "parser": [None, HasMethods(["predict"])], "max_iter": [ITERATIONS],
        "random_state": [SEED],
    }

    def __init__(self, *, C: float = 1.0, window: int = 3, min_count: int = 2, adapt_priors: bool = False,
                 between_characters: bool = True, entity_surface: bool = True, typed_words: bool = True,
                 entity_neighbours: int = 10, parser=None, max_iter: int = 300, random_state: int = 0):
        self.C = C
        self.parser = parser
        self.entity_neighbours = entity_neighbours
        self.between_characters = between_characters
        self.entity_surface = entity_surface
        self.typed_words = typed_words
        self.adapt_priors = adapt_priors
        self.window = window
        self.min_count = min_count
        self.max_iter = max_iter
        self.random_state = random_state

    def _dicts(self, records: Sequence[ReExample]) -> Iterator[dict[str, float]]:
        """Each pair's features, made as the DictVectorizer reads them: all 32,470 training pairs' dicts at once
        held about 800 MB, on top of which the fit then built its matrix and its solver."""
        analyses = analyze(r.sentence for r in records)
        neighbours = [None] * len(records)
        if self.entity_neighbours:  # only the entities' morphemes need them
            spans = [entity_morphemes(r, a) for r, a in zip(records, analyses)]
            prefetch_neighbours(analyses, self.entity_neighbours, spans)
            neighbours = [neighbour_tokens(a, self.entity_neighbours, span) for a, span in zip(analyses, spans)]
        features = (pair_features(r, a, self.window, self.between_characters, self.entity_surface, self.typed_words,
                                  near) for r, a, near in zip(records, analyses, neighbours))
        if self.parser is None:
            return features
        sentences = list(dict.fromkeys(r.sentence for r in records))
        trees = {}
        for start in range(0, len(sentences), PARSED_AT_ONCE):  # predict holds every eojeol's labeller features
            batch = sentences[start:start + PARSED_AT_ONCE]
            trees.update(zip(batch, self.parser.predict(batch)))
        return ({**pair, **dependency_path_features(r, a, *trees[r.sentence])}
                for pair, r, a in zip(features, records, analyses))

    def fit(self, X: Sequence, y: Sequence[str]) -> "RelationClassifier":
        """Learn the relation of each entity pair from features of the pair and the words around it.

        Parameters
        ----------
        X : sequence of ReExample or dict
            Training examples, as records or raw rows of the official file (sentence, subject_entity,
            object_entity).
        y : sequence of str
            The relation of each pair, one of the 30 KLUE-RE relations (no_relation included).

        Returns
        -------
        self : RelationClassifier
            The fitted model.
        """
        records = self._fit_records(X)
        self.vectorizer_ = DictVectorizer()
        features = self.vectorizer_.fit_transform(self._dicts(records))
        # Features seen in fewer than min_count training pairs cannot generalise; dropping them shrinks the
        # model and the optimisation several times over.
        support = np.asarray((features > 0).sum(axis=0)).ravel() >= self.min_count
        self.vectorizer_.restrict(support)
        features = features[:, support]
        self.classifier_ = OrderedLogisticRegression(C=self.C, max_iter=self.max_iter)
        self.classifier_.fit(features, np.asarray(y))
        self.classes_ = self.classifier_.classes_
        self.train_priors_ = np.array([np.mean(np.asarray(y) == label) for label in self.classes_])
        return self

    def _explained_names(self) -> np.ndarray:
        return self.vectorizer_.get_feature_names_out()

    def _explained_matrix(self, records: Sequence[ReExample]):
        return self.vectorizer_.transform(self._dicts(records))

    def predict_proba(self, X: Sequence) -> np.ndarray:
        """Posteriors; with adapt_priors, adjusted to the label proportions that the batch itself suggests (see
        baselines.models.priors).

        Parameters
        ----------
        X : sequence of ReExample or dict

        Returns
        -------
        ndarray of shape (n_examples, n_classes)
            Columns in the order of ``classes_``; the official AUPRC reads them.
        """
        records = self._fitted_records(X)
        probabilities = self.classifier_.predict_proba(self.vectorizer_.transform(self._dicts(records)))
        return adapt_to_priors(probabilities, self.train_priors_) if self.adapt_priors else probabilities

    def predict(self, X: Sequence) -> np.ndarray:
        """The most probable relation of each pair.

        Parameters
        ----------
        X : sequence of ReExample or dict

        Returns
        -------
        ndarray of shape (n_examples,)
            One relation of ``classes_`` per example.
        """
        probabilities = self.predict_proba(X)
        return self.classes_[probabilities.argmax(axis=1)]



def eojeol_pair_features(record: ReExample, window: int = 2) -> dict[str, float]:
    """Indicator features of one entity pair read without Kiwi: types, order, the entities' words and
    character surface (entity_characters), what follows each entity in its eojeol (its particle, '-이', '-의'),
    the eojeols between the two (each, all of them when few, their count) and the character bigrams of the gap,
    and `window` eojeols on each side of each entity."""
    subject, obj, sentence = record.subject, record.object, record.sentence
    pair = f"{subject.type}>{obj.type}"
    subject_first = subject.start <= obj.start
    features = {f"pair={pair}": 1.0, f"subject_type={subject.type}": 1.0, f"object_type={obj.type}": 1.0,
                f"order={'so' if subject_first else 'os'}|{pair}": 1.0,
                f"subject={subject.word.lower()}": 1.0, f"object={obj.word.lower()}": 1.0,
                **entity_characters("subject", subject), **entity_characters("object", obj)}
    first, second = (subject, obj) if subject_first else (obj, subject)
    gap = sentence[first.end + 1:second.start] if first.end < second.start else ""
    between = gap.split()
    features[f"between_length={_bucket(len(between))}"] = 1.0
    features.update({f"between={word}": 1.0 for word in between})
    if len(between) <= 3:
        features[f"between_all={' '.join(between)}|{pair}"] = 1.0
    if len(gap) <= 30:  # a short gap's characters are the trigger word itself ('의 아들', '대표')
        features.update({f"between_chars={gap[i:i + 2]}|{pair}": 1.0 for i in range(len(gap) - 1)})
    for name, entity in (("subject", subject), ("object", obj)):
        rest = sentence[entity.end + 1:]
        attached, _space, beyond = rest.partition(" ")  # the rest of the entity's eojeol, then the eojeols after it
        features[f"{name}_after={attached[:3] if rest else '</s>'}|{pair}"] = 1.0
        left, right = sentence[:entity.start].split(), beyond.split()
        for offset in range(1, window + 1):
            if len(left) >= offset:
                features[f"{name}_left{offset}={left[-offset]}"] = 1.0
            if len(right) >= offset:
                features[f"{name}_right{offset}={right[offset - 1]}"] = 1.0
    return features


class EojeolRelationClassifier(RelationClassifier):
    """The fast setting, with no Kiwi: the entity pair's indicator features read from its eojeols and characters
    (eojeol_pair_features) -> multinomial logistic regression with class probabilities.

    Parameters
    ----------
    C : float
        Inverse L2 strength of the logistic regression.
    window : int
        Eojeols taken on each side of each entity.
    min_count : int
        A feature must occur in this many training pairs.
    adapt_priors : bool
        Adjust the posteriors to the label proportions a batch suggests (baselines.models.priors).
    max_iter : int
        L-BFGS iterations of the logistic regression.
    random_state : int
        Not read (the fit draws nothing at random); kept so that every model takes the run's seed.

    Attributes
    ----------
    vectorizer_ : DictVectorizer
        Restricted to the features kept by min_count.
    classifier_ : OrderedLogisticRegression
    classes_ : ndarray of str
    train_priors_ : ndarray
        The training share of each class (for adapt_priors).

    X is a sequence of ReExample records or of dicts shaped like a raw JSONL row.
    """

    _analyses_text = False  # eojeols and characters only: no Kiwi

    _parameter_constraints = {"C": [POSITIVE], "window": [WINDOW], "min_count": [MIN_COUNT],
                              "adapt_priors": ["boolean"], "max_iter": [ITERATIONS], "random_state": [SEED]}

    def __init__(self, *, C: float = 1.0, window: int = 2, min_count: int = 2, adapt_priors: bool = False,
                 max_iter: int = 100, random_state: int = 0):
        self.C = C
        self.window = window
        self.min_count = min_count
        self.adapt_priors = adapt_priors
        self.max_iter = max_iter
        self.random_state = random_state

    def _dicts(self, records: Sequence[ReExample]) -> Iterator[dict[str, float]]:
        return (eojeol_pair_features(record, self.window) for record in records)


def compare(records: Sequence, aligned: Sequence[dict]):
    return compare_labels(aligned, targets(records), "entity pair")


def marked_sentence(record) -> str:
    """The sentence with its two entities marked by tokens of their own, as a text classifier peer reads it:
    '<S> 이순신 </S>', '<O> 장군 </O>' (taskspec.PEER_MARKS; the later entity marked first, so that the earlier one's
    offsets still hold)."""
    text = record.sentence
    spans = sorted([(record.subject, "S"), (record.object, "O")], key=lambda pair: -pair[0].start)
    for entity, mark in spans:
        text = f"{text[:entity.start]} <{mark}> {text[entity.start:entity.end + 1]} </{mark}> {text[entity.end + 1:]}"
    return " ".join(text.split())


def pair_only(records: Sequence[ReExample]) -> list[ReExample]:
    """Each record's two entities, their words and types, as the whole sentence: the subject, a space, the object."""
    shown = []
    for record in records:
        subject, obj = record.subject, record.object
        start = len(subject.word) + 1
        shown.append(replace(record, sentence=f"{subject.word} {obj.word}",
                             subject=Entity(subject.word, 0, len(subject.word) - 1, subject.type),
                             object=Entity(obj.word, start, start + len(obj.word) - 1, obj.type)))
    return shown


PROBES = (
    Probe("entity pair only", "the two entities' words and types, without the sentence", pair_only),
)


TASK = TaskSpec(
    code="re",
    title="RE relation extraction",
    folder="klue-re-v1.1",
    train_file="klue-re-v1.1_train.json",
    dev_file="klue-re-v1.1_dev.json",
    reading=Reading(
        texts=lambda records: [r.sentence for r in records],
        load=load,
        from_hf=from_hf,
        load_input=load_input,
        as_records=as_records,
        plain_inputs=plain_inputs,
        group=lambda record: record.sentence,
    ),
    modelling=Modelling(
        targets=targets,
        models={"features-lr": ModelEntry(RelationClassifier),
                # The quickest fit within the spread between folds of the best (results/tuning/re-fast.json).
                "fast": ModelEntry(EojeolRelationClassifier, {"C": 0.5, "max_iter": 50}),
                "trivial": ModelEntry(RelationPrior, {"strategy": "prior"})},
        default_model="features-lr",
        predict=label_predictions,
        saved_types=(RelationClassifier, EojeolRelationClassifier, RelationPrior,
                     OrderedLogisticRegression, DictVectorizer),
    ),
    scoring=Scoring(
        score=score,
        tally=tally,
        breakdown="class_f1",
        headline=("micro_f1", "auprc"),
        prediction_example='{"guid": "klue-re-v1_dev_00000", "label": "no_relation", '
                           '"probs": {"no_relation": 0.91, "per:title": 0.02, ...}}',
        compare=compare,
        trainer_score=scoring.score_re,
    ),
    resources=Resources(
        extra_files=(RELATION_LIST,),
        optional_extras=(RELATION_LIST,),
        check_resource_labels=check_resource_labels,
        load_resources=load_resources,
    ),
    links=Links(
        mentions=lambda records: [(entity.word, entity.type) for r in records for entity in (r.subject, r.object)],
        requires=(Requirement("dp", "dp_train", "parser", "a KLUE-DP training file in the official TSV format, whose "
                              "trees train the parser of the RE dependency-path features",
                              settings=(("pos", "kiwi"), ("order", 1), ("perceptrons", 1))),),
    ),
    presentation=Presentation(drawer=html.draw_re, page_form="relation"),
    benchmarks=Benchmarks(grow=grown.sentence_extended, peer="fasttext", peer_text=marked_sentence,
                          peer_probabilities=True, probes=PROBES),
)
