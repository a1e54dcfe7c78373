"""The DP models: the attach-to-next floor and the graph-based MST parser (perceptron-trained arc, sibling and
grandparent scorer, tree decoding, relation labeller)."""
from __future__ import annotations

import functools
import warnings
from collections import Counter
from collections.abc import Sequence as SequenceABC
from dataclasses import replace
from numbers import Integral
from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.feature_extraction import DictVectorizer
from sklearn.utils.validation import check_is_fitted

from baselines.metrics import scoring
from baselines.errors import caller_stacklevel, InputWarning, TrainingDataError
from baselines.models.estimators import TaskModel
from baselines.models.explain import linear_top_features
from baselines.models.linear import OrderedLogisticRegression
from baselines.models.params import ITERATIONS, MIN_COUNT, POSITIVE, SEED, Interval, StrOptions
from baselines.tasks.dp.data import DpSentence, as_records, in_nfc, with_kiwi_pos, with_trees
from baselines.tasks.dp.features import (ARC_FEATURES_NAMED, ATTRIBUTES, ROOT, ArcFeaturizer, arc_feature_name,
                                         eojeol_attributes, grand_feature_name, grand_features, relation_features,
                                         sibling_feature_name, sibling_features)
from baselines.tasks.dp.trees import (head_final_grand_sibling_tree, head_final_sibling_tree, max_spanning_tree,
                                      projective_tree)


# The most eojeols the parser decodes as one tree. Decoding takes memory that grows with the cube of a sentence's
# eojeols and time with their fourth power (third order): 128 take about a second and a hundred MB, while 2,000
# asked for 30 GiB. Every sentence of the KLUE files here is shorter: DP's longest has 35 eojeols, and RE's, which
# RE's dependency-path features parse, 108 (a bound of 100 cut four of them and moved that row). A longer one is
# parsed in consecutive pieces of at most this many (sentence_pieces), and left out of training.
MAX_TREE_EOJEOLS = 128


def sentence_pieces(size: int, limit: int = MAX_TREE_EOJEOLS) -> list[tuple[int, int]]:
    """[start, end) eojeol ranges that cut a sentence of `size` eojeols into as few consecutive pieces of at most
    `limit` as there can be, of sizes that differ by one at most."""
    count = -(-size // limit)
    bounds = [round(index * size / count) for index in range(count + 1)]
    return list(zip(bounds, bounds[1:]))


def joined_trees(pieces: Sequence[tuple[int, Sequence[int]]]) -> list[int]:
    """One tree of a sentence parsed in pieces: each (start, heads) is a piece's tree (1-based within the
    piece, 0 for its root) from eojeol `start` on; each piece's root takes the next piece's root as its head,
    and the last piece's root is the sentence's. A head-final tree stays head-final and projective."""
    joined: list[int] = []
    roots: list[int] = []
    for start, heads in pieces:
        joined.extend(head + start if head else 0 for head in heads)
        roots.append(start + list(heads).index(0))
    for root, next_root in zip(roots, roots[1:]):
        joined[root] = next_root + 1
    return joined


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


def sibling_rows(siblings: tuple, tree: np.ndarray) -> np.ndarray:
    """The rows of sibling_features that a tree uses (heads 1-based, entry 0 unused): for each head, its
    leftmost dependent, then each pair of neighbouring dependents."""
    heads, outer, inner, _features = siblings
    size = len(tree) - 1
    dependents = np.arange(1, size + 1)
    order = np.lexsort((dependents, tree[1:]))
    by_head, in_order = tree[1:][order], dependents[order]
    first = np.ones(size, dtype=bool)
    first[1:] = by_head[1:] != by_head[:-1]
    previous = np.where(first, 0, np.roll(in_order, 1))
    keep = by_head > 0  # the root's one child has no siblings
    wanted = (by_head[keep] * (size + 1) + previous[keep]) * (size + 1) + in_order[keep]
    keys = (heads * (size + 1) + outer) * (size + 1) + inner  # ascending: sibling_triples' order
    return np.searchsorted(keys, wanted)


def grand_rows(grands: tuple, tree: np.ndarray) -> np.ndarray:
    """The rows of grand_features that a tree uses (heads 1-based, entry 0 unused): one per eojeol whose head
    is not the root, with its head's own head."""
    grand_of, heads, dependents, _features = grands
    size = len(tree) - 1
    words = np.arange(1, size + 1)
    keep = tree[1:] > 0
    head = tree[1:][keep]
    wanted = (tree[head] * (size + 1) + head) * (size + 1) + words[keep]
    keys = (grand_of * (size + 1) + heads) * (size + 1) + dependents  # ascending: grand_triples' order
    return np.searchsorted(keys, wanted)


def head_final_arcs(arcs: tuple, size: int) -> tuple:
    """Of (heads, dependents, features) over a sentence of `size` eojeols, the arcs a head-final tree may use:
    those to a head on the right, and the root's arc to the last eojeol."""
    heads, dependents, features = arcs
    keep = (heads > dependents) | ((heads == 0) & (dependents == size))
    return heads[keep], dependents[keep], features[keep]


def slot_positions(slots: np.ndarray, dimension: int, missing: int) -> np.ndarray:
    """For each of `dimension` hashed slots, its index in the ascending `slots`, or `missing` for a slot not
    among them: the map from hashed arc features to the parser's compact weights."""
    positions = np.full(dimension, missing, dtype=np.int32)
    positions[slots] = np.arange(len(slots), dtype=np.int32)
    return positions


class _Perceptron:
    """One of MstParser's averaged structured perceptrons over its training sentences: passes that decode each
    sentence in a random order and, where the tree is wrong, add the gold tree's features and take away the
    predicted one's. One object for one perceptron's warm and higher-order passes, which share its weights, its
    step-weighted totals (for averaging) and its step; `rng` draws its orders."""

    def __init__(self, parser: "MstParser", records: Sequence[DpSentence], golds: list[np.ndarray], slots: int,
                 rng: np.random.Generator):
        self.parser, self.records, self.golds = parser, records, golds
        self.weights = np.zeros(slots)
        self.totals = np.zeros(slots)
        self.step = 1
        self.rng = rng

    def passes(self, count: int, arcs: list, siblings: Sequence = (), grands: Sequence = ()) -> None:
        """`count` passes with these features of each sentence (arcs as (heads, dependents, slots); siblings
        and grands, where given, as sibling_features and grand_features with slots)."""
        gold_rows = [np.flatnonzero(heads == gold[dependents])
                     for (heads, dependents, _features), gold in zip(arcs, self.golds)]
        # The higher-order parts given, each with the function that finds a tree's rows in them.
        higher = [(parts, rows_of, [rows_of(sentence, gold) for sentence, gold in zip(parts, self.golds)])
                  for parts, rows_of in ((siblings, sibling_rows), (grands, grand_rows)) if parts]
        for _ in range(count):
            for index in self.rng.permutation(len(self.records)):
                heads, dependents, features = arcs[index]
                sentence_siblings = siblings[index] if siblings else None
                sentence_grands = grands[index] if grands else None
                predicted = self.parser._decode(self.weights, self.records[index], arcs[index],
                                                siblings=sentence_siblings, grands=sentence_grands)
                predicted_rows = np.flatnonzero(heads == predicted[dependents])
                if not np.array_equal(predicted_rows, gold_rows[index]):
                    updates = [(features[gold_rows[index]], 1.0), (features[predicted_rows], -1.0)]
                    for parts, rows_of, gold_part_rows in higher:
                        part_slots = parts[index][3]
                        updates += [(part_slots[gold_part_rows[index]], 1.0),
                                    (part_slots[rows_of(parts[index], predicted)], -1.0)]
                    for slots, sign in updates:
                        np.add.at(self.weights, slots.ravel(), sign)
                        np.add.at(self.totals, slots.ravel(), sign * self.step)
                self.step += 1

    def averaged(self) -> np.ndarray:
        """The averaged weights (the running weights, overwritten)."""
        self.totals /= self.step
        return np.subtract(self.weights, self.totals, out=self.weights)


class RecomputedParts(SequenceABC):
    """A sentence-by-sentence list of feature parts that makes each one when it is read, instead of holding
    them all."""

    def __init__(self, records: Sequence[DpSentence], make):
        self.records = records
        self.make = make

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> tuple:
        return self.make(self.records[index])


class MstParser(TaskModel, BaseEstimator):
    """Graph-based parser: hashed features of arcs, of neighbouring dependents of a head (second order) and of an arc
    with its head's own head (grandparents, third order), scored by an averaged structured perceptron and decoded as
    the best tree with one root child; relations by logistic regression. With structure='learnt' predictions keep to
    what every training tree has: heads only to the right (KLUE-DP is head-final) and no crossing arcs (then
    Eisner's projective decoder, or its second- or third-order head-final form; else Chu-Liu-Edmonds). First-order
    training decodes freely, so the perceptron also learns from the mistakes that the shape would have hidden: in
    3-fold CV on the training sentences it beat training that keeps to the shape as well
    (results/tuning/README.md). Higher-order training needs the shape for exact decoding; its warm passes decode
    freely at first order.

    Parameters
    ----------
    epochs : int
        Each perceptron's passes over the training sentences (after the warm ones, with second or third order).
    dimension : int
        Size of the hashed arc-feature space. 2**24 and min_count 2 by 3-fold CV on the training sentences
        (results/tuning/dp-mst-dimension-min-count.json, dp-mst-min-count.json): fewer collisions, and rare
        values pooled.
    min_count : int
        An eojeol attribute must occur this often in training to get a vocabulary id (rarer values share
        the unknown id, so what is learnt of them carries over to unseen words).
    label_C : float
        Inverse L2 strength of the relation labeller. 32 by 3-fold CV on the training sentences, with the
        'context' features and label_min_count 3 (results/tuning/dp-mst-label-c-3.json; 16 before them).
    label_features : 'arc', 'context' or 'tree'
        What the relation labeller sees of an arc (features.relation_features): its two ends, direction and
        distance ('arc'); also the eojeols beside the dependent and more of the head ('context'); also where
        the dependent sits among its head's dependents in the parsed tree ('tree'). 'context', the best by
        3-fold CV on the training sentences (results/tuning/dp-mst-label-features.json). Every kind reads the
        dependent's
        features.LABEL_ATTRIBUTES, the punctuation after it and its last two tags included.
    label_min_count : int
        A labeller feature must fire on this many training arcs to be kept (fewer, faster L-BFGS steps).
    structure : 'learnt' or 'free'
        'learnt': predicted trees keep to the shape that all training trees share (head_final_,
        projective_). 'free': any tree with one root child (Chu-Liu-Edmonds over all arcs).
    pos : 'gold' or 'kiwi'
        Read the lemmas and POS given in the data ('gold'), or derive them with Kiwi ('kiwi'; also used for
        any sentence without them, such as raw text).
    order : 1, 2 or 3
        1: a tree's score is the sum of its arcs'. 2: plus, for each head, scores of its neighbouring
        dependents (siblings: a subject beside an object, two adverbials) and of its leftmost one, decoded
        exactly for head-final projective trees (trees.head_final_sibling_tree, O(n^3)); used where the learnt
        shape is that (structure='learnt' and such training trees, as KLUE-DP's all are), else first order.
        Order 2 beat order 1 in each fold of a 3-fold CV on the training sentences
        (results/tuning/dp-mst-order.json). 3: also scores of each arc with its head's own head (grandparents:
        a subject's verb and the clause that verb ends), decoded exactly as well
        (trees.head_final_grand_sibling_tree, O(n^4)). 3, with 4 warm passes and 4 epochs: by 3-fold CV on the
        training sentences under three seeds, above the best order-2 settings under each seed
        (results/tuning/dp-mst-order-2*.json).
    warm_epochs : int
        With second or third order, perceptron passes before the ``epochs`` ones that decode freely at first
        order.
    perceptrons : int
        How many perceptrons are trained, each over its own random orders of the sentences (``warm_epochs``
        and ``epochs`` passes each); the parser's weights are the mean of their averaged weights. One
        perceptron's weights depend on the order it met the sentences in (3-fold CV UAS moves from seed to seed);
        the mean of several depends on it less. 4 perceptrons of 1 warm and 1 third-order pass: as many passes
        as one perceptron of 4 and 4, so no slower, and better by 3-fold CV under three seeds; 8 gain a little
        more for twice the time, and the gain shrinks as training grows
        (results/tuning/dp-mst-perceptrons*.json).
    name_features : bool
        Name the strongest arc features at the end of fit, for top_features and `explain`: the features are
        hashed, so their names can be found only from the training sentences. False leaves it out, a fifth of
        the fit on the dev protocol's 2,600 sentences (6.8 of 35.5 s), for a model that is only scored
        (fold_copy sets it in cross-fitting and CV folds); predictions are the same either way.
    random_state : int
        Seeds the perceptrons' sentence orders.

    Attributes
    ----------
    featurizer_ : ArcFeaturizer
    head_final_ : bool
        structure is 'learnt' and every training tree is head-final (see is_head_final), so only such trees
        are predicted.
    projective_ : bool
        structure is 'learnt' and every training tree is projective, so predictions are decoded with
        Eisner's algorithm.
    order_ : int
        The order in use: ``order`` where it is 2 or 3 and the learnt shape is head-final and projective, else
        1.
    arc_slots_ : ndarray of int
        The hashed arc-, sibling- and grandparent-feature slots with a weight other than 0, ascending.
    weights_ : ndarray of shape (len(arc_slots_) + 1,)
        The averaged perceptron weight of each of those slots, then a 0 for every other slot.
    arc_feature_names_ : list of (int, str) or None
        Readable names of the strongest arc weights, found at fit time (see top_features); None with
        name_features=False.
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
        "min_count": [MIN_COUNT], "label_C": [POSITIVE], "label_features": [StrOptions({"arc", "context", "tree"})],
        "label_min_count": [MIN_COUNT], "structure": [StrOptions({"learnt", "free"})],
        "pos": [StrOptions({"gold", "kiwi"})], "order": [Interval(Integral, 1, 3, closed="both")],
        "warm_epochs": [Interval(Integral, 0, None, closed="left")], "perceptrons": [ITERATIONS],
        "name_features": ["boolean"], "random_state": [SEED],
    }

    def __init__(self, *, epochs: int = 1, dimension: int = 2 ** 24, min_count: int = 2, label_C: float = 32.0,
                 label_features: str = "context", label_min_count: int = 3, structure: str = "learnt",
                 pos: str = "gold", order: int = 3, warm_epochs: int = 1, perceptrons: int = 4,
                 name_features: bool = True, random_state: int = 0):
        self.epochs = epochs
        self.warm_epochs = warm_epochs
        self.perceptrons = perceptrons
        self.order = order
        self.structure = structure
        self.pos = pos
        self.dimension = dimension
        self.min_count = min_count
        self.label_C = label_C
        self.label_features = label_features
        self.label_min_count = label_min_count
        self.name_features = name_features
        self.random_state = random_state

    @staticmethod
    def _decode(weights: np.ndarray, sentence: DpSentence, arcs, projective: bool = False,
                siblings: tuple | None = None, grands: tuple | None = None) -> np.ndarray:
        """The best tree of `sentence` under `weights`. With siblings (and grands), a head-final decoder, which
        reads only the arcs that head_final_arcs keeps: every caller passes those alone."""
        heads, dependents, features = arcs
        size = len(sentence.words) + 1
        scores = np.full((size, size), -np.inf)
        scores[heads, dependents] = weights[features].sum(axis=1)
        if siblings is not None:
            sibling_heads, outer, inner, sibling_slots = siblings
            sibling_scores = np.zeros((size, size, size))
            sibling_scores[sibling_heads, outer, inner] = weights[sibling_slots].sum(axis=1)
            if grands is not None:
                grand_of, grand_heads, grand_dependents, grand_slots = grands
                grand_scores = np.zeros((size, size, size))
                grand_scores[grand_of, grand_heads, grand_dependents] = weights[grand_slots].sum(axis=1)
                return head_final_grand_sibling_tree(scores, sibling_scores, grand_scores)
            return head_final_sibling_tree(scores, sibling_scores)
        return projective_tree(scores) if projective else max_spanning_tree(scores)

    def _shaped_arcs(self, sentence: DpSentence, slot_index: np.ndarray):
        """The featurized arcs a prediction may choose: for a head-final parser, only those to a head on the
        right, and the root's arc to the last eojeol (fewer arcs to score, and no tree of another shape). Their
        features are indices into weights_, through `slot_index` (see _slot_index)."""
        arcs = self.featurizer_.arcs(sentence)
        heads, dependents, features = head_final_arcs(arcs, len(sentence.words)) if self.head_final_ else arcs
        return heads, dependents, slot_index[features]

    def _slot_index(self) -> np.ndarray:
        """Each hashed slot's index into weights_, the last one (a 0) for slots without a weight: built for a
        call to predict (4 bytes a slot) and dropped after it, so that a saved model holds only its weights."""
        return slot_positions(self.arc_slots_, self.dimension, missing=len(self.arc_slots_))

    def uses_morpheme_analysis(self) -> bool:
        return self.pos == "kiwi"  # gold POS comes with the data

    def layout_mismatch(self) -> str | None:
        """What keeps this fitted parser from parsing with this version (one saved when it held a weight for
        every hashed slot, or before it had an order); None when it can."""
        if hasattr(self, "weights_") and not hasattr(self, "arc_slots_"):
            return "this DP parser was saved by a version that kept a weight for every hashed arc-feature slot"
        if hasattr(self, "weights_") and not hasattr(self, "order_"):
            return "this DP parser was saved by a version without second-order parsing"
        return None

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
        labelled = records
        records = [sentence for sentence in records if len(sentence.words) <= MAX_TREE_EOJEOLS]
        if len(records) < len(labelled):
            longest = max(labelled, key=lambda sentence: len(sentence.words))
            if not records:
                raise TrainingDataError(f"every training sentence has more than {MAX_TREE_EOJEOLS} eojeols (the most "
                                        f"the parser decodes as one tree); it has nothing to learn arcs from")
            warnings.warn(f"{len(labelled) - len(records)} training sentences have more than {MAX_TREE_EOJEOLS} "
                          f"eojeols, the most the parser decodes as one tree (the longest: "
                          f"{longest.guid or 'unnamed'}, {len(longest.words)}): the arc scorer learns without them, "
                          f"the labeller with them",
                          InputWarning, stacklevel=caller_stacklevel())
        # The arcs' vocabulary holds only the attributes they read, so that the labeller's own leave their ids as
        # they were.
        counts = Counter(f"{name}={value}" for sentence in records for word in sentence.words
                         for name, value in eojeol_attributes(word).items() if name in ATTRIBUTES)
        vocabulary = {key: index for index, key in
                      enumerate(sorted(k for k, c in counts.items() if c >= self.min_count), start=4)}
        self.featurizer_ = ArcFeaturizer(vocabulary, self.dimension)
        learnt = self.structure == "learnt"
        trees = [[w.head for w in sentence.words] for sentence in records]
        self.head_final_ = learnt and all(is_head_final(heads) for heads in trees)
        self.projective_ = learnt and all(is_projective(heads) for heads in trees)
        self.order_ = self.order if self.order > 1 and self.head_final_ and self.projective_ else 1
        arcs = [self.featurizer_.arcs(sentence) for sentence in records]
        # Only the features of training arcs can ever be updated, a few million of the 2**24 hashed slots: the
        # weights and their step-weighted totals are kept for those alone (MBs, not 128 MB each). Each slot
        # keeps its order, so that the scores, the ties and the names are those of the full-size arrays.
        used = np.zeros(self.dimension, dtype=bool)
        for *_ends, features in arcs:
            used[features.ravel()] = True
        higher = [sibling_features, grand_features][:self.order_ - 1]  # the higher-order passes' features
        for sentence in records:
            for make in higher:
                used[make(self.featurizer_, sentence)[-1].ravel()] = True
        seen = np.flatnonzero(used)  # ascending
        del used
        position = slot_positions(seen, self.dimension, missing=0)  # every training feature is in `seen`
        for index, (heads, dependents, features) in enumerate(arcs):
            arcs[index] = heads, dependents, position[features]
        golds = [np.array([0] + [w.head for w in sentence.words]) for sentence in records]
        # `perceptrons` perceptrons, each drawing its orders of the sentences from its own seeded generator. All
        # make their warm passes while every arc is held, and then their higher-order passes, so that the fit
        # never holds every arc beside the higher-order parts.
        perceptrons = [_Perceptron(self, records, golds, len(seen), np.random.default_rng(seed))
                       for seed in np.random.SeedSequence(self.random_state).spawn(self.perceptrons)]
        for perceptron in perceptrons:
            # With order 2 or 3, the warm passes come first and decode freely at first order: the arc weights
            # learn from every mistake, as order 1's do, before the shape-bound higher-order passes (better by
            # 3-fold CV on the training sentences; results/tuning/README.md).
            perceptron.passes(self.warm_epochs if higher else self.epochs, arcs)
        siblings, grands = [], []
        if higher:
            # The higher-order passes read only the arcs of head-final trees: the others are dropped before the
            # sibling and grandparent features are made (at the official size, 10,000 sentences, keeping every
            # arc beside them took the fit's peak to 3.5 GB).
            arcs = [head_final_arcs(parts, len(sentence.words)) for parts, sentence in zip(arcs, records)]
            siblings = [self._positions(sibling_features, sentence, position) for sentence in records]
            if self.order_ == 3:
                grands = [self._positions(grand_features, sentence, position) for sentence in records]
            for perceptron in perceptrons:
                perceptron.passes(self.epochs, arcs, siblings, grands)
        averaged = perceptrons.pop(0).averaged()
        while perceptrons:  # the mean of their averaged weights, each perceptron dropped once it is added
            averaged += perceptrons.pop(0).averaged()
        averaged /= self.perceptrons
        strongest = None
        if self.name_features:
            # Named from every training arc, made again where the higher-order passes dropped some.
            remade = functools.partial(self._positions, ArcFeaturizer.arcs, position=position)
            named_arcs = RecomputedParts(records, remade) if higher else arcs
            strongest = self._name_strongest_arcs(records, named_arcs, siblings, grands, averaged)
        del arcs, siblings, grands, position
        kept = np.flatnonzero(averaged)
        self.arc_slots_ = seen[kept]
        self.weights_ = np.append(averaged[kept], 0.0)
        self.arc_feature_names_ = None if strongest is None else [
            (int(index), name) for index, (_seen, name) in
            zip(np.searchsorted(kept, [seen_index for seen_index, _ in strongest]), strongest)]
        self._fit_relations(labelled)
        return self

    def _parse(self, sentence: DpSentence, slot_index: np.ndarray) -> list[int]:
        """The best tree of `sentence` (at most MAX_TREE_EOJEOLS eojeols): a 1-based head per eojeol, 0 for the
        root."""
        siblings = grands = None
        if self.order_ > 1:
            siblings = self._positions(sibling_features, sentence, slot_index)
        if self.order_ == 3:
            grands = self._positions(grand_features, sentence, slot_index)
        heads = self._decode(self.weights_, sentence, self._shaped_arcs(sentence, slot_index), self.projective_,
                             siblings, grands)
        return [int(h) for h in heads[1:]]

    def _positions(self, make, sentence: DpSentence, position: np.ndarray) -> tuple:
        """make(featurizer_, sentence) (ArcFeaturizer.arcs, sibling_features, grand_features), its hashed slots
        mapped through `position` to indices into the weights (the training ones, or weights_ by _slot_index)."""
        *ends, features = make(self.featurizer_, sentence)
        return (*ends, position[features])

    def _as_featurized(self, attributes: dict[str, str]) -> dict[str, str]:
        """An eojeol's attributes as the featurizer sees them: a value below min_count is '<rare>', the one
        id that all such values share (so a feature on it is named once, not by every rare word)."""
        vocabulary = self.featurizer_.vocabulary
        return {name: value if f"{name}={value}" in vocabulary else "<rare>" for name, value in attributes.items()}

    def _name_strongest_arcs(self, records: Sequence[DpSentence], arcs: list, siblings: list, grands: list,
                             weights: np.ndarray) -> list[tuple[int, str]]:
        """(index, name) of the ARC_FEATURES_NAMED strongest of `weights` each way (indices as in the
        training `arcs`, `siblings` and `grands`), named from the training arcs, sibling pairs and chains they
        fired on. The features are hashed, so their names exist only here, at fit time; where two features share
        an index, both names are kept, joined by ' / '."""
        order = np.argsort(weights, kind="stable")
        against, for_ = order[:ARC_FEATURES_NAMED], order[-ARC_FEATURES_NAMED:]
        kept = np.concatenate([against[weights[against] < 0], for_[weights[for_] > 0]])
        names: dict[int, dict[str, None]] = {int(index): {} for index in kept}
        is_kept = np.zeros(len(weights), dtype=bool)
        is_kept[kept] = True
        for parts, namer in ((arcs, arc_feature_name), (siblings, sibling_feature_name),
                             (grands, grand_feature_name)):
            for sentence, (*ends, features) in zip(records, parts):
                hit_rows, hit_columns = np.nonzero(is_kept[features])
                if not len(hit_rows):
                    continue
                rows = [ROOT] + [self._as_featurized(eojeol_attributes(w)) for w in sentence.words]
                # Each kept index is named once per column, from the first row where it fires there.
                indices = features[hit_rows, hit_columns]
                _keys, first = np.unique(hit_columns * len(weights) + indices, return_index=True)
                for row, column, index in zip(hit_rows[first], hit_columns[first], indices[first]):
                    names[int(index)][namer(rows, *(int(end[row]) for end in ends), int(column))] = None
        return [(index, " / ".join(found)) for index, found in names.items() if found]

    def _relation_rows(self, sentence: DpSentence, heads: Sequence[int]) -> list[dict[str, float]]:
        """The labeller's features of each eojeol's arc in the tree `heads` (1-based, 0 = root)."""
        attributes = [ROOT] + [eojeol_attributes(w) for w in sentence.words]
        return [relation_features(sentence, attributes, dependent, head, self.label_features, heads)
                for dependent, head in enumerate(heads, start=1)]

    def _fit_relations(self, records: Sequence[DpSentence]) -> None:
        rows, labels = [], []
        for sentence in records:
            rows.extend(self._relation_rows(sentence, [w.head for w in sentence.words]))
            labels.extend(w.deprel for w in sentence.words)
        self.relation_vectorizer_ = DictVectorizer()
        matrix = self.relation_vectorizer_.fit_transform(rows)
        if self.label_min_count > 1:  # every value is 1, so a column's non-zeros are the arcs it fires on
            frequent = matrix.getnnz(axis=0) >= self.label_min_count
            self.relation_vectorizer_.restrict(frequent)
            matrix = matrix[:, frequent]
        self.relation_classifier_ = OrderedLogisticRegression(C=self.label_C, max_iter=500)
        self.relation_classifier_.fit(matrix, labels)

    def fold_copy(self) -> "MstParser":
        """A clone that does not name its features: a fold's model is scored, never explained."""
        return clone(self).set_params(name_features=False)

    def unexplained(self) -> str | None:
        """Why top_features cannot name this parser's arc features (fitted, or to be fitted, with
        name_features=False), or None."""
        fitted_unnamed = hasattr(self, "arc_feature_names_") and self.arc_feature_names_ is None
        if fitted_unnamed or (not hasattr(self, "arc_feature_names_") and not self.name_features):
            return ("this parser was fitted with name_features=False, so its hashed arc features have no names; "
                    "fit it with name_features=True (the default) to explain it")
        return None

    def top_features(self, top_k: int = 10) -> dict[str, list[tuple[str, float]]]:
        """The arc scorer's strongest features for and against an arc (h: the head, d: the dependent, h-1 and
        d+1 their neighbours; named at fit time, at most ARC_FEATURES_NAMED each way), then per relation the
        features of a dependent and its head that speak most for it."""
        check_is_fitted(self)
        problem = self.unexplained()
        if problem:
            raise ValueError(problem)
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
        sentences = self._inputs(self._fitted_records(X))
        slot_index = self._slot_index()
        for sentence in sentences:
            if len(sentence.words) <= MAX_TREE_EOJEOLS:
                parsed.append(self._parse(sentence, slot_index))
            else:  # pieces, so that memory and time grow linearly with the sentence, not as its cube
                pieces = [(start, self._parse(replace(sentence, words=sentence.words[start:end]), slot_index))
                          for start, end in sentence_pieces(len(sentence.words))]
                parsed.append(joined_trees(pieces))
            rows.extend(self._relation_rows(sentence, parsed[-1]))
        labels = iter(self.relation_classifier_.predict(self.relation_vectorizer_.transform(rows)) if rows else [])
        return [(heads, [str(next(labels)) for _ in heads]) for heads in parsed]
