"""What the DP parser sees: eojeol attributes, hashed arc, sibling and grandparent features for every head and
dependent at once, their readable names, and the relation labeller's features."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from baselines.tasks.dp.data import DpSentence, DpWord


PUNCTUATION_TAGS = frozenset({"SF", "SP", "SS", "SE", "SO", "SW"})
VERBAL_ENDINGS = ("EC", "EF", "ETM")  # an eojeol ending in one of these closes a clause
ATTRIBUTES = ("form", "first_pos", "last_pos", "first_lemma", "last_lemma", "pos_pattern")  # what arcs read
# The relation labeller also reads what follows the last content morpheme (a comma, a quote) and the last two
# content tags (EP+EC: a tensed connective; NNG+JKS): higher LAS in 3-fold CV on the training sentences under
# each of three seeds (results/tuning/README.md). Arcs keep the six above: their vocabulary ids, and
# so their hashed slots, stay those the parser was tuned with.
LABEL_ATTRIBUTES = ATTRIBUTES + ("trail", "last2")
ROOT = {name: "<root>" for name in LABEL_ATTRIBUTES}


def eojeol_attributes(word: DpWord) -> dict[str, str]:
    """What the parser sees of an eojeol: its form, first and last (non-punctuation) POS and lemma, and
    its POS pattern; for the relation labeller also the punctuation tag that ends it ('-' for none) and its last
    two non-punctuation tags. Korean eojeols end in the particles and endings that carry their syntax."""
    tags = (word.pos or "NA").split("+")
    lemmas = (word.lemma or word.form).split(" ")
    if len(lemmas) != len(tags):
        lemmas = lemmas[:1] * len(tags)
    content = [i for i, tag in enumerate(tags) if tag not in PUNCTUATION_TAGS] or [len(tags) - 1]
    last = content[-1]
    pattern = "+".join(tags) if len(tags) <= 4 else "+".join(tags[:2] + ["~"] + tags[-2:])
    return {"form": word.form.lower(), "first_pos": tags[0], "last_pos": tags[last],
            "first_lemma": f"{lemmas[0]}/{tags[0]}", "last_lemma": f"{lemmas[last]}/{tags[last]}",
            "pos_pattern": pattern, "trail": tags[-1] if tags[-1] in PUNCTUATION_TAGS else "-",
            "last2": "+".join(tags[i] for i in content[-2:])}


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
        features = (np.stack(columns, axis=1) % np.uint64(self.dimension)).astype(np.int32)
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


# Sibling templates: attributes of a head (h) and two neighbouring dependents of it, the outer one (a) and the
# inner one (b). Each is used alone and with the distance between a and b; where b is h's leftmost dependent
# (no a), the templates are numbered apart and a's attributes are left out.
SIBLING_TEMPLATES = (
    (("h", "last_pos"), ("a", "last_pos"), ("b", "last_pos")), (("a", "last_pos"), ("b", "last_pos")),
    (("h", "last_lemma"), ("a", "last_pos"), ("b", "last_pos")), (("a", "last_lemma"), ("b", "last_pos")),
    (("a", "last_pos"), ("b", "last_lemma")), (("h", "first_pos"), ("a", "last_pos"), ("b", "last_pos")),
    (("h", "last_pos"), ("a", "last_lemma"), ("b", "last_pos")),
    (("h", "last_pos"), ("a", "last_pos"), ("b", "last_lemma")),
)
_SIBLING_NUMBERS = len(ARC_TEMPLATES) + 1  # sibling template numbers start after the arc templates'


def sibling_triples(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(heads, outer, inner): every head h of a head-final tree over words 1..size with two neighbouring
    dependents outer < inner < h, and with inner as its leftmost dependent (outer = 0)."""
    positions = np.arange(size + 1, dtype=np.int32)
    heads, outer, inner = np.meshgrid(positions, positions, positions, indexing="ij")
    keep = (outer < inner) & (inner < heads) & (inner >= 1)
    return heads[keep], outer[keep], inner[keep]


def sibling_features(featurizer: "ArcFeaturizer",
                     sentence: DpSentence) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(heads, outer, inner, feature index matrix): one row per sibling_triples entry, hashed into the same
    space as the arc features; SIBLING_VARIANTS columns per template."""
    heads, outer, inner = sibling_triples(len(sentence.words))
    ids = featurizer.ids(sentence)
    position = {"h": heads + 1, "a": outer + 1, "b": inner + 1}
    leftmost = outer == 0
    spread = np.where(leftmost, 0, _bucket(inner - outer) + 1).astype(np.uint64)
    columns = []
    with np.errstate(over="ignore"):  # the hash wraps around on purpose
        for number, template in enumerate(SIBLING_TEMPLATES):
            key = np.where(leftmost, _SIBLING_NUMBERS + len(SIBLING_TEMPLATES) + number,
                           _SIBLING_NUMBERS + number).astype(np.uint64)
            for who, name in template:
                values = ids[name][position[who]]
                key = key * _MULTIPLIER + (np.where(leftmost, np.uint64(0), values) if who == "a" else values)
            columns.append(key)
            columns.append(key * _MULTIPLIER + spread + np.uint64(1))
    features = (np.stack(columns, axis=1) % np.uint64(featurizer.dimension)).astype(np.int32)
    return heads, outer, inner, features


# Grandparent templates: attributes of a dependent (d), its head (h) and the head's own head (g, the root
# for the last eojeol). Each is used alone and with the distance from h to g.
GRAND_TEMPLATES = (
    (("g", "last_pos"), ("h", "last_pos"), ("d", "last_pos")), (("g", "last_pos"), ("d", "last_pos")),
    (("g", "last_lemma"), ("h", "last_pos"), ("d", "last_pos")),
    (("g", "last_pos"), ("h", "last_lemma"), ("d", "last_pos")),
    (("g", "last_pos"), ("h", "last_pos"), ("d", "last_lemma")),
    (("g", "first_pos"), ("h", "last_pos"), ("d", "last_pos")),
    (("g", "last_lemma"), ("d", "last_pos")),
)
_GRAND_NUMBERS = _SIBLING_NUMBERS + 2 * len(SIBLING_TEMPLATES)  # after the sibling and leftmost templates'


def grand_triples(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(grands, heads, dependents): every chain g -> h -> d of a head-final tree over words 1..size (d < h < g,
    or g = 0, the root, above h = size), in ascending order of (g, h, d)."""
    positions = np.arange(size + 1, dtype=np.int32)
    grands, heads, dependents = np.meshgrid(positions, positions, positions, indexing="ij")
    keep = (dependents >= 1) & (dependents < heads) & ((heads < grands) | ((grands == 0) & (heads == size)))
    return grands[keep], heads[keep], dependents[keep]


def grand_features(featurizer: "ArcFeaturizer",
                   sentence: DpSentence) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(grands, heads, dependents, feature index matrix): one row per grand_triples entry, hashed into the
    same space as the arc features; GRAND_VARIANTS columns per template."""
    grands, heads, dependents = grand_triples(len(sentence.words))
    ids = featurizer.ids(sentence)
    position = {"g": grands + 1, "h": heads + 1, "d": dependents + 1}
    spread = np.where(grands == 0, 0, _bucket(grands - heads) + 1).astype(np.uint64)
    columns = []
    with np.errstate(over="ignore"):  # the hash wraps around on purpose
        for number, template in enumerate(GRAND_TEMPLATES):
            key = np.full(len(heads), _GRAND_NUMBERS + number, dtype=np.uint64)
            for who, name in template:
                key = key * _MULTIPLIER + ids[name][position[who]]
            columns.append(key)
            columns.append(key * _MULTIPLIER + spread + np.uint64(1))
    features = (np.stack(columns, axis=1) % np.uint64(featurizer.dimension)).astype(np.int32)
    return grands, heads, dependents, features


ARC_VARIANTS = 3  # each template's columns: alone, with the arc's shape, with the verbal endings between
SIBLING_VARIANTS = 2  # each sibling template's columns: alone, with the distance between the siblings
GRAND_VARIANTS = 2  # each grandparent template's columns: alone, with the distance from the head to its own
ARC_FEATURES_NAMED = 100  # the strongest arc features a fitted parser names, for and against an arc


def _padded_value(rows: list[dict[str, str]], position: int, name: str) -> str:
    """An attribute at a padded position of ArcFeaturizer.ids: 0 is before the root, len(rows) + 1 after
    the last eojeol."""
    if position == 0:
        return "<start>"
    return "<end>" if position > len(rows) else rows[position - 1][name]


def _distance_shown(distance: int) -> str:
    """A distance as _bucket's bucket of it reads: '1' .. '4', '5-7', '8-12', '13+'."""
    bucket = int(_bucket(np.array([distance]))[0])
    return {5: "5-7", 6: "8-12", 7: "13+"}.get(bucket, str(bucket))


def arc_feature_name(rows: list[dict[str, str]], head: int, dependent: int, column: int) -> str:
    """The readable name of column `column` of ArcFeaturizer.arcs for the arc head -> dependent, `rows` being
    the root's and the eojeols' attributes: 'h.last_pos=VV d.last_pos=JKS, head right, distance 1'."""
    template, variant = divmod(column, ARC_VARIANTS)
    offsets = {"h": head + 1, "h-1": head, "h+1": head + 2, "d": dependent + 1, "d-1": dependent, "d+1": dependent + 2}
    name = " ".join(f"{who}.{attribute}={_padded_value(rows, offsets[who], attribute)}"
                    for who, attribute in ARC_TEMPLATES[template])
    if variant == 1:
        name += f", head {'right' if head > dependent else 'left'}, distance {_distance_shown(abs(head - dependent))}"
        if head == 0:
            name += ", head is the root"
        elif head == len(rows) - 1:
            name += ", head is the last eojeol"
    elif variant == 2:
        between = rows[min(head, dependent) + 1:max(head, dependent)]
        verbal = sum(row["last_pos"] in VERBAL_ENDINGS for row in between)
        name += f", {min(verbal, 2)}{'+' if verbal >= 2 else ''} verbal endings between"
    return name


def sibling_feature_name(rows: list[dict[str, str]], head: int, outer: int, inner: int, column: int) -> str:
    """The readable name of column `column` of sibling_features for dependents outer < inner of head (outer 0:
    inner is the leftmost), `rows` as in arc_feature_name: 'siblings: h.last_pos=VV a.last_pos=JKS
    b.last_pos=JKO, 1 apart'."""
    template, variant = divmod(column, SIBLING_VARIANTS)
    offsets = {"h": head, "a": outer, "b": inner}
    parts = [f"{who}.{attribute}={rows[offsets[who]][attribute]}" for who, attribute in SIBLING_TEMPLATES[template]
             if not (who == "a" and outer == 0)]
    name = ("leftmost dependent: " if outer == 0 else "siblings: ") + " ".join(parts)
    if variant == 1 and outer > 0:
        name += f", {_distance_shown(inner - outer)} apart"
    return name


def grand_feature_name(rows: list[dict[str, str]], grand: int, head: int, dependent: int, column: int) -> str:
    """The readable name of column `column` of grand_features for the chain grand -> head -> dependent, `rows`
    as in arc_feature_name: 'grandparent: g.last_pos=VV h.last_pos=ETM d.last_pos=JKS, 1 apart'."""
    template, variant = divmod(column, GRAND_VARIANTS)
    offsets = {"g": grand, "h": head, "d": dependent}
    name = "grandparent: " + " ".join(f"{who}.{attribute}={rows[offsets[who]][attribute]}"
                                      for who, attribute in GRAND_TEMPLATES[template])
    if variant == 1 and grand > 0:
        name += f", {_distance_shown(grand - head)} apart"
    return name


def relation_features(sentence: DpSentence, attributes: list[dict[str, str]], dependent: int, head: int,
                       context: str = "arc", heads: Sequence[int] = ()) -> dict[str, float]:
    """The relation labeller's features of the arc head -> dependent (attributes: eojeol_attributes of the
    root, then of each eojeol). context 'arc': the two ends and the arc's direction and distance; 'context':
    also the eojeols beside the dependent and more of the head; 'tree': also where the dependent sits among
    the head's dependents in the sentence's tree `heads` (1-based, 0 = root)."""
    d = attributes[dependent]
    h = attributes[head] if head > 0 else ROOT
    direction = "L" if head < dependent else "R"
    distance = str(min(abs(head - dependent), 6))
    features = {f"d_{name}={d[name]}": 1.0 for name in LABEL_ATTRIBUTES}
    features.update({f"h_{name}={h[name]}": 1.0 for name in ("first_pos", "last_pos", "last_lemma", "pos_pattern")})
    features.update({f"pair={d['last_pos']}|{h['last_pos']}": 1.0, f"pair2={d['last_lemma']}|{h['first_pos']}": 1.0,
                     f"dir={direction}{distance}": 1.0, f"dir_pos={direction}|{d['last_pos']}": 1.0,
                     f"is_last={dependent == len(sentence.words)}": 1.0})
    if context == "arc":
        return features
    after = attributes[dependent + 1] if dependent < len(sentence.words) else _END
    before = attributes[dependent - 1] if dependent > 1 else _START
    features.update({
        f"d+1_first_pos={after['first_pos']}": 1.0, f"d+1_last_pos={after['last_pos']}": 1.0,
        f"d-1_last_pos={before['last_pos']}": 1.0, f"d_last|d+1_first={d['last_pos']}|{after['first_pos']}": 1.0,
        f"h_form={h['form']}": 1.0, f"h_first_lemma={h['first_lemma']}": 1.0,
        f"lemmas={d['last_lemma']}|{h['last_lemma']}": 1.0, f"patterns={d['pos_pattern']}|{h['pos_pattern']}": 1.0})
    if context == "tree":
        siblings = [other for other, its_head in enumerate(heads, start=1) if its_head == head]
        outward = len(siblings) - 1 - siblings.index(dependent)  # 0: the head's nearest dependent
        own = sum(1 for its_head in heads if its_head == dependent)
        features.update({f"outward={min(outward, 4)}": 1.0, f"adjacent={head == dependent + 1}|{d['last_pos']}": 1.0,
                         f"own_dependents={min(own, 3)}|{d['last_pos']}": 1.0})
    return features


_START = {name: "<start>" for name in LABEL_ATTRIBUTES}  # before the first eojeol, for relation_features
_END = {name: "<end>" for name in LABEL_ATTRIBUTES}  # after the last
