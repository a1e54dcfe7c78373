"""DP: dependency parsing over eojeols (whitespace words): a head and a relation label for each."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from numbers import Integral
from pathlib import Path
from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_extraction import DictVectorizer
from sklearn.utils.validation import check_is_fitted

from baselines.linear import OrderedLogisticRegression
from baselines import hf, scoring, tallies
from baselines.dataio import DataError, atomic_output, looks_like_jsonl, read_text, read_tsv_blocks, require
from baselines.estimators import PLAIN_INPUT, TaskModel, plain_text, records_from
from baselines.explain import linear_top_features
from baselines.params import ITERATIONS, MIN_COUNT, POSITIVE, SEED, Interval, StrOptions
from baselines.report import Comparison
from baselines.taskspec import (ModelEntry, PredictionError, PredictionFiles, TaskSpec, align_predictions, copy_marker,
                                jsonl_records)
from features.analysis import analyze
from features.morphemes import eojeol_spans
from features.normalize import nfc_fields
from baselines.tasks.dp.trees import max_spanning_tree, projective_tree

LABELS = scoring.DP_LABELS
COLUMNS = "INDEX WORD_FORM LEMMA POS HEAD DEPREL"


@dataclass
class DpWord:
    form: str
    lemma: str | None = None  # space-separated lemmas of the eojeol's morphemes, as in the data
    pos: str | None = None  # '+'-joined Sejong tags, as in the data
    head: int | None = None  # 0 = root, else the 1-based index of the head eojeol
    deprel: str | None = None


@dataclass
class DpSentence:
    guid: str
    text: str
    words: list[DpWord]


def ascii_number(text: str) -> bool:
    """Digits 0-9 only: str.isdigit() also takes '²' and other digits that int() refuses."""
    return text.isascii() and text.isdigit()


def _word(columns: list[str], position: int, size: int, path: Path, where: str) -> DpWord:
    if len(columns) != 6:
        raise DataError(path, where, f"expected 6 columns {COLUMNS}, got {len(columns)}")
    index, form, lemma, pos, head, deprel = columns
    if index != str(position):
        raise DataError(path, where, f"INDEX should be {position}, got {index!r}")
    if not ascii_number(head) or not 0 <= int(head) <= size:
        raise DataError(path, where, f"HEAD {head!r} is not 0 (root) or an eojeol index 1-{size}")
    if deprel not in LABELS:
        raise DataError(path, where, f"DEPREL {deprel!r} is not a KLUE-DP relation")
    return DpWord(form, lemma, pos, int(head), deprel)


def load(path: Path) -> list[DpSentence]:
    """The official DP TSV: '## guid<TAB>sentence', then one row per eojeol with 6 columns."""
    records = []
    for block in read_tsv_blocks(path):
        size = len(block.rows)
        words = [_word(columns, position, size, path, f"line {number} (guid {block.guid})")
                 for position, (number, columns) in enumerate(block.rows, start=1)]
        problem = tree_problem([word.head for word in words])
        if problem:
            raise DataError(path, f"line {block.line} (guid {block.guid})", f"the heads do not form a tree: {problem}")
        records.append(DpSentence(block.guid, block.text, words))
    return records


def from_hf(rows: list[dict], path: Path) -> list[DpSentence]:
    """Rows of the Hugging Face klue 'dp' schema: one list per official column (index, word_form, lemma, pos,
    head, deprel); guids by position (see baselines.hf)."""
    records = []
    for number, (row, guid) in enumerate(zip(rows, hf.positional_guids(hf.SCHEMAS["dp"], len(rows))), start=1):
        where = f"row {number}"
        columns = [require(row, name, list, path, where) for name in ("index", "word_form", "lemma", "pos", "head",
                                                                      "deprel")]
        if len({len(column) for column in columns}) != 1:
            raise DataError(path, where, "index, word_form, lemma, pos, head and deprel differ in length")
        size = len(columns[0])
        words = [_word([str(value) for value in word], position, size, path, f"{where}, word {position}")
                 for position, word in enumerate(zip(*columns), start=1)]
        problem = tree_problem([word.head for word in words])
        if problem:
            raise DataError(path, where, f"the heads do not form a tree: {problem}")
        records.append(DpSentence(guid, require(row, "sentence", str, path, where), words))
    return records


def tree_problem(heads: Sequence[int]) -> str | None:
    """What keeps 1-based heads (0 = root) from being a dependency tree: a self-head, no root or more than
    one, or a cycle;
    None when they form one. Training and scoring assume trees, and a decoder that always outputs one could
    never match a gold cycle."""
    for index, head in enumerate(heads, start=1):
        if head == index:
            return f"eojeol {index} is its own head"
    if 0 not in heads:
        return "no eojeol is attached to the root (HEAD 0)"
    roots = [index for index, head in enumerate(heads, start=1) if head == 0]
    if len(roots) > 1:  # KLUE-DP has one root per sentence (every sentence of the official files does)
        return f"eojeols {', '.join(map(str, roots))} are all attached to the root (HEAD 0): a tree has one"
    for start in range(1, len(heads) + 1):
        seen, node = set(), start
        while node != 0:
            if node in seen:
                cycle, member = [node], heads[node - 1]
                while member != node:
                    cycle.append(member)
                    member = heads[member - 1]
                return f"eojeols {', '.join(map(str, sorted(cycle)))} form a cycle"
            seen.add(node)
            node = heads[node - 1]
    return None


def load_input(path: Path) -> list[DpSentence]:
    """Official TSV, CoNLL-U, or JSONL with a 'text' per line (eojeols are its whitespace-separated words)."""
    if not looks_like_jsonl(path):
        return load_tsv_or_conllu(path)
    return jsonl_records(path, lambda row, guid, where: raw_sentence(require(row, "text", str, path, where), guid,
                                                                     path, where))


def raw_sentence(text: str, guid: str, path: Path, where: str) -> DpSentence:
    """A sentence of raw text, its eojeols the whitespace-separated words (nothing known of them yet)."""
    if not text.split():
        raise DataError(path, where, "empty 'text'")
    return DpSentence(guid, text, [DpWord(form) for form in text.split()])


def targets(records: Sequence[DpSentence]) -> list[tuple[list[int], list[str]]]:
    return [([w.head for w in r.words], [w.deprel for w in r.words]) for r in records]


def predict(model, records: Sequence[DpSentence]) -> list[dict]:
    return [{"guid": record.guid, "heads": [int(h) for h in heads], "deprels": list(deprels)}
            for record, (heads, deprels) in zip(records, model.predict(records))]


def scored_trees(records: Sequence[DpSentence], predictions: Sequence[dict]) -> tuple[list, list, list, list]:
    """Gold heads and relations, then predicted ones, per sentence in record order, the predictions
    checked."""
    aligned = align_predictions(records, predictions)
    for record, prediction in zip(records, aligned):
        heads, deprels = prediction.get("heads"), prediction.get("deprels")
        if not isinstance(heads, list) or not isinstance(deprels, list) \
                or len(heads) != len(record.words) or len(deprels) != len(record.words):
            raise PredictionError(f"prediction {record.guid} needs 'heads' and 'deprels' with "
                                  f"{len(record.words)} items each")
    not_heads = [record.guid for record, p in zip(records, aligned)
                 if not all(isinstance(head, (int, np.integer)) and not isinstance(head, bool)
                            and 0 <= head <= len(record.words) for head in p["heads"])]
    if not_heads:
        raise PredictionError(f"{len(not_heads)} predictions have 'heads' that are not eojeol numbers (integers "
                              f"from 0, the root, to the sentence's length) (first: {', '.join(not_heads[:3])})")
    bad = [p["guid"] for p in aligned if not all(isinstance(deprel, str) and deprel in LABELS
                                                 for deprel in p["deprels"])]
    if bad:
        raise PredictionError(f"{len(bad)} predictions use relations outside the KLUE-DP set "
                              f"(first: {', '.join(bad[:3])})")
    gold = targets(records)
    return [g[0] for g in gold], [g[1] for g in gold], [p["heads"] for p in aligned], [p["deprels"] for p in aligned]


def score(records: Sequence[DpSentence], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    return scoring.score_dp(*scored_trees(records, predictions))


def tally(records: Sequence[DpSentence], predictions: Sequence[dict], resources: dict) -> tallies.Tally:
    return tallies.tally_dp(*scored_trees(records, predictions))


def in_nfc(records: Sequence[DpSentence]) -> list[DpSentence]:
    """The sentences with their text, forms and lemmas in NFC (see features.normalize); the eojeols stay
    as many."""
    return [replace(nfc_fields(record, "text"), words=[nfc_fields(word, "form", "lemma") for word in record.words])
            for record in records]


def as_records(X: Sequence) -> list[DpSentence]:
    """DpSentence records, or plain sentences (str) whose eojeols are their whitespace-separated words."""
    return records_from(X, DpSentence, lambda item, guid, where: raw_sentence(plain_text(item, where), guid,
                                                                             PLAIN_INPUT, where))


def with_trees(records: Sequence[DpSentence], y: Sequence[tuple[Sequence[int], Sequence[str]]]) -> list[DpSentence]:
    """The sentences with the heads and relations of y (what a parser learns from), checked for size."""
    trees = []
    for record, (heads, deprels) in zip(records, y):
        if len(heads) != len(record.words) or len(deprels) != len(record.words):
            raise ValueError(f"{record.guid}: y has {len(heads)} heads and {len(deprels)} relations for "
                             f"{len(record.words)} eojeols")
        words = [replace(word, head=int(head), deprel=str(deprel))
                 for word, head, deprel in zip(record.words, heads, deprels)]
        trees.append(replace(record, words=words))
    return trees


def plain_inputs(records: Sequence[DpSentence]) -> list[str]:
    """The sentences (their eojeols are the whitespace-separated words; the data's POS is not carried)."""
    return [" ".join(word.form for word in record.words) for record in records]


def headline(records: Sequence[DpSentence], y: Sequence, predicted: Sequence) -> float:
    return scoring.score_dp([list(h) for h, _ in y], [list(d) for _, d in y],
                            [list(h) for h, _ in predicted], [list(d) for _, d in predicted])["uas_micro_f1"]


class AttachToNextParser(TaskModel, BaseEstimator):
    """The trivial floor: every eojeol depends on the next one (the last on the root), with the most
    frequent relation of the training data.

    Attributes
    ----------
    deprel_ : str
        The most frequent relation in y.
    """

    _to_records = staticmethod(as_records)
    _headline = staticmethod(headline)

    _analyses_text = False

    def fit(self, X: Sequence, y: Sequence) -> "AttachToNextParser":
        """Find the most frequent relation label.

        Parameters
        ----------
        X : sequence of DpSentence or str
        y : sequence of (heads, deprels)
            Only the relation labels are read.

        Returns
        -------
        self : AttachToNextParser
            The fitted model.
        """
        counts = Counter(label for _heads, deprels in y for label in deprels)
        self.deprel_ = min(counts, key=lambda label: (-counts[label], label))
        return self

    def predict(self, X: Sequence) -> list[tuple[list[int], list[str]]]:
        """Each eojeol attached to the next, the last to the root, all with the most frequent label.

        Parameters
        ----------
        X : sequence of DpSentence or str

        Returns
        -------
        list of (list of int, list of str)
            For each sentence, a head per eojeol (1-based, 0 for the root) and a relation label per eojeol.
        """
        output = []
        for record in self._fitted_records(X):
            size = len(record.words)
            output.append(([i + 2 for i in range(size - 1)] + [0], [self.deprel_] * size))
        return output



PUNCTUATION_TAGS = frozenset({"SF", "SP", "SS", "SE", "SO", "SW"})
VERBAL_ENDINGS = ("EC", "EF", "ETM")  # an eojeol ending in one of these closes a clause
ATTRIBUTES = ("form", "first_pos", "last_pos", "first_lemma", "last_lemma", "pos_pattern")
ROOT = {name: "<root>" for name in ATTRIBUTES}


def eojeol_attributes(word: DpWord) -> dict[str, str]:
    """What the parser sees of an eojeol: its form, first and last (non-punctuation) POS and lemma, and
    its POS pattern. Korean eojeols end in the particles and endings that carry their syntax."""
    tags = (word.pos or "NA").split("+")
    lemmas = (word.lemma or word.form).split(" ")
    if len(lemmas) != len(tags):
        lemmas = lemmas[:1] * len(tags)
    content = [i for i, tag in enumerate(tags) if tag not in PUNCTUATION_TAGS] or [len(tags) - 1]
    last = content[-1]
    pattern = "+".join(tags) if len(tags) <= 4 else "+".join(tags[:2] + ["~"] + tags[-2:])
    return {"form": word.form.lower(), "first_pos": tags[0], "last_pos": tags[last],
            "first_lemma": f"{lemmas[0]}/{tags[0]}", "last_lemma": f"{lemmas[last]}/{tags[last]}",
            "pos_pattern": pattern}


# Arc templates: attributes of the head (h), the dependent (d) and their neighbours (h-1, h+1, d-1, d+1).
# Each is used alone and joined with the arc's direction and distance.
ARC_TEMPLATES = (
    (("h", "last_pos"), ("d", "last_pos")), (("h", "first_pos"), ("d", "last_pos")),
    (("h", "last_lemma"), ("d", "last_pos")), (("h", "last_pos"), ("d", "last_lemma")),
    (("h", "last_lemma"), ("d", "last_lemma")), (("h", "form"), ("d", "last_pos")),
    (("h", "last_pos"), ("d", "form")), (("h", "pos_pattern"), ("d", "pos_pattern")),
    (("h", "first_lemma"), ("d", "last_lemma")), (("h", "first_pos"), ("d", "first_pos")),
    (("h", "last_pos"),), (("h", "last_lemma"),), (("h", "form"),), (("h", "pos_pattern"),),
    (("h", "last_pos"), ("h+1", "first_pos"), ("d-1", "last_pos"), ("d", "last_pos")),
    (("h-1", "last_pos"), ("h", "last_pos"), ("d", "last_pos"), ("d+1", "first_pos")),
    (("h", "last_pos"), ("d", "last_pos"), ("d+1", "last_pos")),
    (("h", "last_pos"), ("h-1", "last_pos"), ("d", "last_pos")),
    (("h", "pos_pattern"), ("d", "last_lemma")), (("h", "last_lemma"), ("d", "pos_pattern")),
)
_MULTIPLIER = np.uint64(1000003)


def _bucket(distance: np.ndarray) -> np.ndarray:
    return np.minimum(distance, 5) + (distance > 7) + (distance > 12)


class ArcFeaturizer:
    """Hashed arc features of a sentence, computed for all (head, dependent) pairs at once with numpy."""

    def __init__(self, vocabulary: dict[str, int], dimension: int):
        self.vocabulary = vocabulary
        self.dimension = dimension

    def ids(self, sentence: DpSentence) -> dict[str, np.ndarray]:
        """Per attribute, the vocabulary ids of the root (position 0) and every eojeol, with padding at
        both ends so that h-1 and d+1 always exist."""
        rows = [ROOT] + [eojeol_attributes(word) for word in sentence.words]
        padded = {}
        for name in ATTRIBUTES:
            values = [self.vocabulary.get(f"{name}={row[name]}", 1) for row in rows]
            padded[name] = np.array([2] + values + [3], dtype=np.uint64)
        return padded

    def arcs(self, sentence: DpSentence) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(heads, dependents, feature index matrix): one row per possible arc h -> d (d >= 1, h != d)."""
        size = len(sentence.words)
        heads, dependents = np.meshgrid(np.arange(size + 1), np.arange(1, size + 1), indexing="ij")
        keep = heads != dependents
        heads, dependents = heads[keep], dependents[keep]
        ids = self.ids(sentence)
        position = {"h": heads + 1, "h-1": heads, "h+1": heads + 2,
                    "d": dependents + 1, "d-1": dependents, "d+1": dependents + 2}
        direction = (heads > dependents).astype(np.uint64)
        distance = _bucket(np.abs(heads - dependents)).astype(np.uint64)
        # Every term stays uint64: one signed term would turn the sums into float64, whose 53-bit mantissa
        # drops the low bits of the wrapped hashes and folds most features onto a few thousand indices.
        last = (heads == size).astype(np.uint64) + np.uint64(2) * (heads == 0).astype(np.uint64)
        between_predicates = self._predicates_between(sentence, heads, dependents)
        arc_class = (direction * np.uint64(16) + distance) * np.uint64(8) + last * np.uint64(2)
        columns = []
        with np.errstate(over="ignore"):  # the hash wraps around on purpose
            for number, template in enumerate(ARC_TEMPLATES):
                key = np.full(len(heads), number + 1, dtype=np.uint64)
                for who, name in template:
                    key = key * _MULTIPLIER + ids[name][position[who]]
                columns.append(key)
                columns.append(key * _MULTIPLIER + arc_class + np.uint64(1))
                columns.append(key * _MULTIPLIER + between_predicates + np.uint64(977))
        features = (np.stack(columns, axis=1) % np.uint64(self.dimension)).astype(np.int64)
        return heads, dependents, features

    @staticmethod
    def _predicates_between(sentence: DpSentence, heads: np.ndarray, dependents: np.ndarray) -> np.ndarray:
        """How many eojeols strictly between head and dependent end in a verbal ending (0, 1, 2+)."""
        verbal = np.array([0] + [eojeol_attributes(w)["last_pos"] in VERBAL_ENDINGS for w in sentence.words],
                          dtype=np.int64)
        cumulative = np.cumsum(verbal)
        low, high = np.minimum(heads, dependents), np.maximum(heads, dependents)
        count = cumulative[np.maximum(high - 1, 0)] - cumulative[low]
        return np.minimum(np.maximum(count, 0), 2).astype(np.uint64)


ARC_VARIANTS = 3  # each template's columns: alone, with the arc's shape, with the verbal endings between
ARC_FEATURES_NAMED = 100  # the strongest arc features a fitted parser names, for and against an arc


def _padded_value(rows: list[dict[str, str]], position: int, name: str) -> str:
    """An attribute at a padded position of ArcFeaturizer.ids: 0 is before the root, len(rows) + 1 after
    the last eojeol."""
    if position == 0:
        return "<start>"
    return "<end>" if position > len(rows) else rows[position - 1][name]


def arc_feature_name(rows: list[dict[str, str]], head: int, dependent: int, column: int) -> str:
    """The readable name of column `column` of ArcFeaturizer.arcs for the arc head -> dependent, `rows` being
    the root's and the eojeols' attributes: 'h.last_pos=VV d.last_pos=JKS, head right, distance 1'."""
    template, variant = divmod(column, ARC_VARIANTS)
    offsets = {"h": head + 1, "h-1": head, "h+1": head + 2, "d": dependent + 1, "d-1": dependent, "d+1": dependent + 2}
    name = " ".join(f"{who}.{attribute}={_padded_value(rows, offsets[who], attribute)}"
                    for who, attribute in ARC_TEMPLATES[template])
    if variant == 1:
        distance = int(_bucket(np.array([abs(head - dependent)]))[0])
        shown = {6: "8-12", 7: "13+"}.get(distance, "5-7" if distance == 5 else str(distance))
        name += f", head {'right' if head > dependent else 'left'}, distance {shown}"
        if head == 0:
            name += ", head is the root"
        elif head == len(rows) - 1:
            name += ", head is the last eojeol"
    elif variant == 2:
        between = rows[min(head, dependent) + 1:max(head, dependent)]
        verbal = sum(row["last_pos"] in VERBAL_ENDINGS for row in between)
        name += f", {min(verbal, 2)}{'+' if verbal >= 2 else ''} verbal endings between"
    return name


def _relation_features(sentence: DpSentence, attributes: list[dict[str, str]], dependent: int,
                       head: int) -> dict[str, float]:
    d = attributes[dependent]
    h = attributes[head] if head > 0 else ROOT
    direction = "L" if head < dependent else "R"
    distance = str(min(abs(head - dependent), 6))
    features = {f"d_{name}={d[name]}": 1.0 for name in ATTRIBUTES}
    features.update({f"h_{name}={h[name]}": 1.0 for name in ("first_pos", "last_pos", "last_lemma", "pos_pattern")})
    features.update({f"pair={d['last_pos']}|{h['last_pos']}": 1.0, f"pair2={d['last_lemma']}|{h['first_pos']}": 1.0,
                     f"dir={direction}{distance}": 1.0, f"dir_pos={direction}|{d['last_pos']}": 1.0,
                     f"is_last={dependent == len(sentence.words)}": 1.0})
    return features


def is_projective(heads: Sequence[int]) -> bool:
    """True when no two arcs of the tree (1-based heads, 0 = root) cross."""
    spans = sorted(((min(head, dependent), -max(head, dependent)) for dependent, head in enumerate(heads, start=1)))
    open_ends: list[int] = []  # right ends of the spans that enclose the current one, innermost last
    for start, negative_end in spans:  # outer spans first where two start together
        end = -negative_end
        while open_ends and open_ends[-1] <= start:
            open_ends.pop()
        if open_ends and end > open_ends[-1]:
            return False
        open_ends.append(end)
    return True


def is_head_final(heads: Sequence[int]) -> bool:
    """True when every eojeol but the last has its head to its right, and the last is the root's child."""
    return all(head > dependent for dependent, head in enumerate(heads[:-1], start=1)) and heads[-1] == 0


class MstParser(TaskModel, BaseEstimator):
    """First-order arc-factored parser: hashed arc features scored by an averaged structured perceptron,
    decoded as the best tree with one root child; relations by logistic regression. With structure='learnt'
    predictions keep to what every training tree has: heads only to the right (KLUE-DP is head-final) and
    no crossing arcs (then Eisner's projective decoder, else Chu-Liu-Edmonds). Training decodes freely, so
    the perceptron also learns from the mistakes that the shape would have hidden: in 3-fold CV on the
    training sentences, UAS 83.83 against 83.22 when training keeps to the shape as well
    (results/tuning/README.md).

    Parameters
    ----------
    epochs : int
        Perceptron passes over the training sentences.
    dimension : int
        Size of the hashed arc-feature space. 2**24 and min_count 2 by 3-fold CV on the training sentences
        (results/tuning/dp-mst-dimension-min-count.json, dp-mst-min-count.json): UAS 82.69 at 2**22 and 1,
        83.34 at 2**24 and 2.
    min_count : int
        An eojeol attribute must occur this often in training to get a vocabulary id (rarer values share
        the unknown id, so what is learnt of them carries over to unseen words).
    label_C : float
        Inverse L2 strength of the relation labeller. 16 by 3-fold CV on the training sentences
        (results/tuning/dp-mst-label-c*.json: LAS rises from C=1 to 16 and falls at 32).
    structure : 'learnt' or 'free'
        'learnt': predicted trees keep to the shape that all training trees share (head_final_,
        projective_). 'free': any tree with one root child (Chu-Liu-Edmonds over all arcs).
    pos : 'gold' or 'kiwi'
        Read the lemmas and POS given in the data ('gold'), or derive them with Kiwi ('kiwi'; also used for
        any sentence without them, such as raw text).
    random_state : int
        Seeds the perceptron's sentence order.

    Attributes
    ----------
    featurizer_ : ArcFeaturizer
    head_final_ : bool
        structure is 'learnt' and every training tree is head-final (see is_head_final), so only such trees
        are predicted.
    projective_ : bool
        structure is 'learnt' and every training tree is projective, so predictions are decoded with
        Eisner's algorithm.
    weights_ : ndarray of shape (dimension,)
        The averaged perceptron weights.
    arc_feature_names_ : list of (int, str)
        Readable names of the strongest arc weights, found at fit time (see top_features).
    relation_vectorizer_ : DictVectorizer
    relation_classifier_ : OrderedLogisticRegression

    X is a sequence of DpSentence records or of plain sentences (str); y holds (heads, relations) per
    sentence, heads 1-based with 0 for the root.
    """

    _to_records = staticmethod(as_records)
    _in_nfc = staticmethod(in_nfc)
    _headline = staticmethod(headline)

    _parameter_constraints = {
        "epochs": [ITERATIONS], "dimension": [Interval(Integral, 1024, 2 ** 26, closed="both")],
        "min_count": [MIN_COUNT], "label_C": [POSITIVE], "structure": [StrOptions({"learnt", "free"})],
        "pos": [StrOptions({"gold", "kiwi"})], "random_state": [SEED],
    }

    def __init__(self, *, epochs: int = 6, dimension: int = 2 ** 24, min_count: int = 2, label_C: float = 16.0,
                 structure: str = "learnt", pos: str = "gold", random_state: int = 0):
        self.epochs = epochs
        self.structure = structure
        self.pos = pos
        self.dimension = dimension
        self.min_count = min_count
        self.label_C = label_C
        self.random_state = random_state

    @staticmethod
    def _decode(weights: np.ndarray, sentence: DpSentence, arcs, projective: bool = False) -> np.ndarray:
        heads, dependents, features = arcs
        size = len(sentence.words) + 1
        scores = np.full((size, size), -np.inf)
        scores[heads, dependents] = weights[features].sum(axis=1)
        return projective_tree(scores) if projective else max_spanning_tree(scores)

    def _shaped_arcs(self, sentence: DpSentence):
        """The featurized arcs a prediction may choose: for a head-final parser, only those to a head on the
        right, and the root's arc to the last eojeol (fewer arcs to score, and no tree of another shape)."""
        heads, dependents, features = self.featurizer_.arcs(sentence)
        if self.head_final_:
            keep = (heads > dependents) | ((heads == 0) & (dependents == len(sentence.words)))
            heads, dependents, features = heads[keep], dependents[keep], features[keep]
        return heads, dependents, features

    def uses_morpheme_analysis(self) -> bool:
        return self.pos == "kiwi"  # gold POS comes with the data

    def _inputs(self, records: Sequence[DpSentence]) -> Sequence[DpSentence]:
        """The sentences as the parser sees them: with the data's lemmas and POS ('gold'), or with Kiwi's
        ('kiwi', also used for any sentence that has none, such as raw text)."""
        if self.pos == "gold" and all(w.pos for r in records for w in r.words):
            return records
        return with_kiwi_pos(records)

    def fit(self, X: Sequence, y: Sequence[tuple[Sequence[int], Sequence[str]]]) -> "MstParser":
        """Train the arc scorer (structured perceptron over eojeol pairs) and the relation labeller.

        Parameters
        ----------
        X : sequence of DpSentence or str
            Training sentences, as records or plain strings (which get Kiwi's POS, whatever ``pos`` says).
        y : sequence of (heads, deprels)
            For each sentence, the 1-based head of each eojeol (0 for the root) and its relation label.

        Returns
        -------
        self : MstParser
            The fitted model.
        """
        records = self._inputs(with_trees(self._fit_records(X), y))
        counts = Counter(f"{name}={value}" for sentence in records for word in sentence.words
                         for name, value in eojeol_attributes(word).items())
        vocabulary = {key: index for index, key in
                      enumerate(sorted(k for k, c in counts.items() if c >= self.min_count), start=4)}
        self.featurizer_ = ArcFeaturizer(vocabulary, self.dimension)
        learnt = self.structure == "learnt"
        trees = [[w.head for w in sentence.words] for sentence in records]
        self.head_final_ = learnt and all(is_head_final(heads) for heads in trees)
        self.projective_ = learnt and all(is_projective(heads) for heads in trees)
        arcs = [self.featurizer_.arcs(sentence) for sentence in records]
        gold_rows = []
        for sentence, (heads, dependents, _features) in zip(records, arcs):
            gold = np.array([0] + [w.head for w in sentence.words])
            gold_rows.append(np.flatnonzero(heads == gold[dependents]))
        weights = np.zeros(self.dimension)
        totals = np.zeros(self.dimension)  # step-weighted updates, for averaging
        step = 1
        rng = np.random.default_rng(self.random_state)
        for _epoch in range(self.epochs):
            for index in rng.permutation(len(records)):
                sentence, sentence_arcs = records[index], arcs[index]
                predicted = self._decode(weights, sentence, sentence_arcs)
                heads, dependents, features = sentence_arcs
                predicted_rows = np.flatnonzero(heads == predicted[dependents])
                if not np.array_equal(predicted_rows, gold_rows[index]):
                    for rows, sign in ((gold_rows[index], 1.0), (predicted_rows, -1.0)):
                        np.add.at(weights, features[rows].ravel(), sign)
                        np.add.at(totals, features[rows].ravel(), sign * step)
                step += 1
        self.weights_ = weights - totals / step
        self.arc_feature_names_ = self._name_strongest_arcs(records, arcs)
        self._fit_relations(records)
        return self

    def _as_featurized(self, attributes: dict[str, str]) -> dict[str, str]:
        """An eojeol's attributes as the featurizer sees them: a value below min_count is '<rare>', the one
        id that all such values share (so a feature on it is named once, not by every rare word)."""
        vocabulary = self.featurizer_.vocabulary
        return {name: value if f"{name}={value}" in vocabulary else "<rare>" for name, value in attributes.items()}

    def _name_strongest_arcs(self, records: Sequence[DpSentence], arcs: list) -> list[tuple[int, str]]:
        """(index, name) of the ARC_FEATURES_NAMED strongest arc weights each way, named from the training
        arcs they fired on. The features are hashed, so their names exist only here, at fit time; where two
        features share an index, both names are kept, joined by ' / '."""
        order = np.argsort(self.weights_, kind="stable")
        kept = np.concatenate([order[:ARC_FEATURES_NAMED], order[-ARC_FEATURES_NAMED:]])
        kept = kept[self.weights_[kept] != 0]
        names: dict[int, dict[str, None]] = {int(index): {} for index in kept}
        for sentence, (heads, dependents, features) in zip(records, arcs):
            hits = np.isin(features, kept)
            if not hits.any():
                continue
            rows = [ROOT] + [self._as_featurized(eojeol_attributes(w)) for w in sentence.words]
            for column in np.flatnonzero(hits.any(axis=0)):
                indices, first = np.unique(features[hits[:, column], column], return_index=True)
                arc_rows = np.flatnonzero(hits[:, column])[first]
                for index, row in zip(indices, arc_rows):
                    names[int(index)][arc_feature_name(rows, int(heads[row]), int(dependents[row]), int(column))] = None
        return [(index, " / ".join(found)) for index, found in names.items() if found]

    def _fit_relations(self, records: Sequence[DpSentence]) -> None:
        rows, labels = [], []
        for sentence in records:
            attributes = [ROOT] + [eojeol_attributes(w) for w in sentence.words]
            for position, word in enumerate(sentence.words, start=1):
                rows.append(_relation_features(sentence, attributes, position, word.head))
                labels.append(word.deprel)
        self.relation_vectorizer_ = DictVectorizer()
        self.relation_classifier_ = OrderedLogisticRegression(C=self.label_C, max_iter=500)
        self.relation_classifier_.fit(self.relation_vectorizer_.fit_transform(rows), labels)

    def top_features(self, top_k: int = 10) -> dict[str, list[tuple[str, float]]]:
        """The arc scorer's strongest features for and against an arc (h: the head, d: the dependent, h-1 and
        d+1 their neighbours; named at fit time, at most ARC_FEATURES_NAMED each way), then per relation the
        features of a dependent and its head that speak most for it."""
        check_is_fitted(self)
        named = [(name, float(self.weights_[index])) for index, name in self.arc_feature_names_]
        sections = {
            "arc scorer: for an arc": sorted((pair for pair in named if pair[1] > 0), key=lambda p: (-p[1], p[0])),
            "arc scorer: against an arc": sorted((pair for pair in named if pair[1] < 0), key=lambda p: (p[1], p[0])),
        }
        sections = {section: pairs[:top_k] for section, pairs in sections.items()}
        sections.update(linear_top_features(self.relation_vectorizer_.get_feature_names_out(),
                                            self.relation_classifier_, top_k, prefix="relation "))
        return sections

    def predict(self, X: Sequence) -> list[tuple[list[int], list[str]]]:
        """The best tree of each sentence and its relation labels.

        Parameters
        ----------
        X : sequence of DpSentence or str

        Returns
        -------
        list of (list of int, list of str)
            For each sentence, a head per eojeol (1-based, 0 for the root) and a relation label per eojeol.
        """
        parsed, rows = [], []
        for sentence in self._inputs(self._fitted_records(X)):
            heads = self._decode(self.weights_, sentence, self._shaped_arcs(sentence), self.projective_)
            parsed.append([int(h) for h in heads[1:]])
            attributes = [ROOT] + [eojeol_attributes(w) for w in sentence.words]
            rows.extend(_relation_features(sentence, attributes, d, h) for d, h in enumerate(parsed[-1], start=1))
        labels = iter(self.relation_classifier_.predict(self.relation_vectorizer_.transform(rows)) if rows else [])
        return [(heads, [str(next(labels)) for _ in heads]) for heads in parsed]




def with_kiwi_pos(records: Sequence[DpSentence]) -> list[DpSentence]:
    """Copies of the sentences whose eojeols carry Kiwi's lemmas and POS (Sejong tags, '+'-joined, as in
    the data) instead of the annotated ones; heads and relations are kept."""
    analyses = analyze(r.text for r in records)
    converted = []
    for sentence, analysis in zip(records, analyses):
        spans = eojeol_spans(sentence.text)
        if len(spans) != len(sentence.words):  # the header text does not split like the rows: use the forms
            text = " ".join(w.form for w in sentence.words)
            analysis, spans = analyze([text])[0], eojeol_spans(text)
        lemmas: list[list[str]] = [[] for _ in spans]
        tags: list[list[str]] = [[] for _ in spans]
        for form, tag, eojeol in zip(analysis.forms, analysis.sejong_tags, analysis.eojeols):
            lemmas[eojeol].append(form)
            tags[eojeol].append(tag)
        words = [DpWord(w.form, " ".join(lemma) or w.form, "+".join(tag) or "NA", w.head, w.deprel)
                 for w, lemma, tag in zip(sentence.words, lemmas, tags)]
        converted.append(DpSentence(sentence.guid, sentence.text, words))
    return converted


CONLLU_COLUMNS = "ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC"


def write_conllu(path: Path, records: Sequence[DpSentence], predictions: Sequence[dict]) -> None:
    """Predictions as 10-column CoNLL-U: '# sent_id' and '# text' comments, then per eojeol its form, lemma
    (KLUE's space-separated morpheme lemmas), UPOS '_' (KLUE has no UD tags), the Sejong tags in XPOS, the
    integer HEAD and the KLUE relation in DEPREL."""
    shown = records if all(w.pos for r in records for w in r.words) else with_kiwi_pos(records)
    with atomic_output(path) as handle:
        for sentence, prediction in zip(shown, predictions):
            handle.write(f"# sent_id = {sentence.guid}\n# text = {sentence.text}\n")
            for index, (word, head, deprel) in enumerate(zip(sentence.words, prediction["heads"],
                                                             prediction["deprels"]), start=1):
                columns = [str(index), word.form, word.lemma or "_", "_", word.pos or "_", "_", str(head), deprel,
                           "_", "_"]
                handle.write("\t".join(columns) + "\n")
            handle.write("\n")


def looks_like_conllu(path: Path) -> bool:
    """True when the first token line has CoNLL-U's 10 tab-separated columns (the official TSV has 6)."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as handle:
            for line in handle:
                if line.strip() and not line.startswith("#"):
                    return len(line.rstrip("\r\n").split("\t")) == 10
    except OSError:
        return False
    return False


def _given(value: str) -> str | None:
    """A CoNLL-U field, None where it is '_' (not given)."""
    return None if value == "_" else value


def load_conllu(path: Path) -> list[DpSentence]:
    """Sentences of a CoNLL-U file: '# sent_id' as the guid (else conllu-N), '# text' as the text (else the
    forms joined by spaces), XPOS as the Sejong tags. Multiword-token ranges (1-2) and empty nodes (1.1) are
    skipped. HEAD and DEPREL are read when given ('_' everywhere: an unparsed sentence)."""
    records = []
    for first_line, comment_lines, token_rows in _conllu_blocks(path):
        comments = {key.strip(): value for key, _sep, value in (line.lstrip("# ").partition(" = ")
                                                                  for line in comment_lines)}
        rows = [(number, columns) for number, columns in token_rows if ascii_number(columns[0])]
        guid = comments.get("sent_id", f"conllu-{len(records)}").strip()
        where = f"line {first_line} (sent_id {guid})"
        for number, columns in rows:
            if len(columns) != 10:
                raise DataError(path, f"line {number} (sent_id {guid})", f"expected the 10 columns {CONLLU_COLUMNS}, "
                                                                         f"got {len(columns)}")
        unparsed = all(columns[6] == "_" for _number, columns in rows)
        words = [DpWord(columns[1], _given(columns[2]), _given(columns[4]))
                 if unparsed else _word([columns[0], columns[1], columns[2], columns[4], columns[6], columns[7]],
                                        position, len(rows), path, f"line {number} (sent_id {guid})")
                 for position, (number, columns) in enumerate(rows, start=1)]
        if not unparsed:
            problem = tree_problem([word.head for word in words])
            if problem:
                raise DataError(path, where, f"the heads do not form a tree: {problem}")
        records.append(DpSentence(guid, comments.get("text", " ".join(w.form for w in words)).strip(), words))
    return records


def _conllu_blocks(path: Path) -> list[tuple[int, list[str], list[tuple[int, list[str]]]]]:
    """(first line number, comment lines, numbered token rows) per sentence; blank lines end sentences."""
    blocks, comments, rows, first = [], [], [], 1
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            if comments or rows:
                blocks.append((first, comments, rows))
            comments, rows, first = [], [], number + 1
        elif line.startswith("#") and not rows:
            comments.append(line)
        else:
            rows.append((number, line.split("\t")))
    if comments or rows:
        blocks.append((first, comments, rows))
    return blocks


def load_tsv_or_conllu(path: Path) -> list[DpSentence]:
    """The official DP TSV, or CoNLL-U (told apart by the number of columns)."""
    return load_conllu(path) if looks_like_conllu(path) else load(path)


def write_tsv(path: Path, records: Sequence[DpSentence], predictions: Sequence[dict]) -> None:
    """Predictions in the official DP TSV layout: '## guid<TAB>text', then INDEX WORD_FORM LEMMA POS
    HEAD DEPREL per eojeol (lemma and POS as given in the input, or Kiwi's for raw text)."""
    shown = records if all(w.pos for r in records for w in r.words) else with_kiwi_pos(records)
    with atomic_output(path) as handle:
        handle.write(f"## 칼럼명 : {COLUMNS.replace(' ', chr(9))}\n")
        for sentence, prediction in zip(shown, predictions):
            handle.write(f"## {sentence.guid}\t{sentence.text}\n")
            for index, (word, head, deprel) in enumerate(zip(sentence.words, prediction["heads"],
                                                             prediction["deprels"]), start=1):
                handle.write(f"{index}\t{word.form}\t{word.lemma}\t{word.pos}\t{head}\t{deprel}\n")
            handle.write("\n")


def predictions_from_file(path: Path) -> list[dict]:
    """Predictions given as an official DP TSV file or as CoNLL-U (as `predict dp --format tsv` or
    `--format conllu` write them)."""
    return [{"guid": r.guid, "heads": [w.head for w in r.words], "deprels": [w.deprel for w in r.words]}
            for r in load_tsv_or_conllu(path)]


def compare(records: Sequence[DpSentence], aligned: Sequence[dict]) -> Comparison:
    """Relations, word by word (gold relation against predicted relation, whatever the heads); a sentence
    is as wrong as its share of words with a wrong head or relation, shown as 'word->head/RELATION'."""
    comparison = Comparison("word", ranked_by="the share of words with a wrong head or relation")
    for record, prediction in zip(records, aligned):
        words = record.words
        gold = [(w.head, w.deprel) for w in words]
        pred = list(zip(prediction["heads"], prediction["deprels"]))
        comparison.gold.extend(deprel for _head, deprel in gold)
        comparison.predicted.extend(str(deprel) for _head, deprel in pred)
        wrong = [index for index, (g, p) in enumerate(zip(gold, pred)) if g != p]
        comparison.wrong.append(len(wrong) / len(words) if words else 0.0)
        comparison.shown.append(tuple(" ".join(f"{words[i].form}->{arcs[i][0]}/{arcs[i][1]}" for i in wrong)
                                      for arcs in (gold, pred)))
    return comparison



def distinct_copy(record: DpSentence, copy: int) -> DpSentence:
    """Copy `copy` of a sentence for the scale benchmark: one more eojeol in front, copy_marker(copy),
    attached to the root as an adjunct."""
    root = next(index for index, word in enumerate(record.words, start=1) if word.head == 0)
    marker = copy_marker(copy)
    words = [DpWord(marker, f"사례 {copy}", "NNG+SN", root + 1, "NP_AJT")]
    words += [replace(word, head=word.head + 1 if word.head else 0) for word in record.words]
    return replace(record, guid=f"{record.guid}-copy{copy}", text=f"{marker} {record.text}", words=words)


TASK = TaskSpec(
    code="dp", title="DP dependency parsing", folder="klue-dp-v1.1",
    train_file="klue-dp-v1.1_train.tsv", dev_file="klue-dp-v1.1_dev.tsv",
    texts=lambda records: [r.text for r in records],
    load=load_tsv_or_conllu, from_hf=from_hf,
    load_input=load_input,
    as_records=as_records, plain_inputs=plain_inputs, targets=targets,
    models={"mst": ModelEntry(MstParser),
            "mst-kiwi": ModelEntry(MstParser, {"pos": "kiwi"}),
            "trivial": ModelEntry(AttachToNextParser)},
    default_model="mst",
    predict=predict, score=score, tally=tally,
    headline=("uas_micro_f1", "las_micro_f1", "uas_macro_f1", "las_macro_f1"),
    prediction_files=PredictionFiles("JSONL with one prediction per line, the official TSV, or CoNLL-U",
                                     from_file=predictions_from_file,
                                     writers={"tsv": write_tsv, "conllu": write_conllu}),
    model_for_pos={"gold": "mst", "kiwi": "mst-kiwi"},
    prediction_example='{"guid": "klue-dp-v1_dev_00000_wikitree", "heads": [2, 6, 4, 6, 6, 0], '
                       '"deprels": ["NP", "NP_SBJ", "NP_MOD", "NP_AJT", "NP_OBJ", "VP"]}',
    compare=compare,
    distinct_copy=distinct_copy,
)
