"""NER: character-level IOB2 tagging of persons, locations, organisations, dates, times and quantities."""
from __future__ import annotations

import ctypes
import sys
import threading
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace
from numbers import Integral, Real
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import sklearn_crfsuite
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from baselines.display import html
from baselines.data import hf

from baselines.metrics import scoring, tallies
from baselines.data.fileio import DataError, looks_like_jsonl, read_tsv_blocks, require
from baselines.errors import caller_stacklevel, InputWarning
from baselines.models.crfsuite_format import check_crfsuite_model
from baselines.models.estimators import NothingLearnt, TaskModel, plain_text, records_from
from baselines.models.explain import strongest
from baselines.models.params import (FOLDS_OR_OFF, ITERATIONS, NEIGHBOURS, NON_NEGATIVE, SEED, HasMethods, Interval,
                              StrOptions)
from baselines.metrics.teaching import Comparison
from baselines.data import grown
from baselines.taskspec import (Reading, Modelling, Scoring, Links, Presentation, Benchmarks, ModelEntry,
                                PredictionError, Requirement, TaskSpec, align_predictions, copy_marker, jsonl_records)
from features.align import char_to_eojeol, char_to_morpheme
from features.analysis import analyze
from features.characters import char_class, shape
from features.gazetteer import EntityGazetteer
from features.morphemes import Analysis, eojeol_spans
from features.normalize import nfc_text
from features.tags import to_sejong
from features.vectorize import NEIGHBOUR_TAGS, neighbour_tokens, prefetch_neighbours

TAGS = scoring.NER_TAGS

# crfsuite's online trainers shuffle the sentences before each epoch with the C library's rand(), which
# nothing in crfsuite seeds: left alone, a fit would depend on every rand() call made before it in the process.
_C_RAND_LOCK = threading.Lock()


@dataclass
class NerSentence:
    guid: str
    text: str
    tags: list[str] | None = field(default=None)


def load(path: Path) -> list[NerSentence]:
    """The official character TSV: '## guid<TAB>marked-up sentence', then 'CHAR<TAB>TAG' rows."""
    records = []
    for block in read_tsv_blocks(path):
        chars, tags = [], []
        for number, columns in block.rows:
            if len(columns) != 2 or len(columns[0]) != 1:
                raise DataError(path, f"line {number} (guid {block.guid})",
                                f"expected 2 columns CHAR<TAB>NE_TAG with one character, got {columns!r}")
            if columns[1] not in TAGS:
                raise DataError(path, f"line {number} (guid {block.guid})",
                                f"tag {columns[1]!r} is not a KLUE-NER tag ({' '.join(TAGS)})")
            chars.append(columns[0])
            tags.append(columns[1])
        records.append(NerSentence(block.guid, "".join(chars), tags))
    return records


def from_hf(rows: list[dict], path: Path) -> list[NerSentence]:
    """Rows of the Hugging Face klue 'ner' schema: 'tokens' (one character each, spaces included, as the
    official rows) and 'ner_tags' (ClassLabel names or indices); guids by position (see baselines.data.hf)."""
    schema = hf.SCHEMAS["ner"]
    records = []
    for number, (row, guid) in enumerate(zip(rows, hf.positional_guids(schema, len(rows))), start=1):
        where = f"row {number}"
        chars, tags = require(row, "tokens", list, path, where), require(row, "ner_tags", list, path, where)
        if len(chars) != len(tags) or not all(isinstance(c, str) and len(c) == 1 for c in chars):
            raise DataError(path, where, f"expected one tag per character: {len(chars)} 'tokens' of one character "
                                         f"each and {len(tags)} 'ner_tags'")
        names = [hf.label_name(schema, "ner_tags", tag, path, where) for tag in tags]
        records.append(NerSentence(guid, "".join(chars), None if None in names else names))
    return records


def load_input(path: Path) -> list[NerSentence]:
    """Official TSV, or JSONL with a 'text' per line."""
    if not looks_like_jsonl(path):
        return load(path)
    return jsonl_records(path, lambda row, guid, where: NerSentence(guid, require(row, "text", str, path, where)))


def targets(records: Sequence[NerSentence]) -> list[list[str]]:
    return [record.tags for record in records]


def entities(text: str, tags: Sequence[str]) -> list[dict]:
    """The entity spans of a tagged sentence, with character offsets (end exclusive), type and text."""
    return [{"start": start, "end": end, "type": kind, "text": text[start:end]}
            for kind, start, end in scoring.iob2_entities(tags)]


def predict(model, records: Sequence[NerSentence]) -> list[dict]:
    rows = []
    for record, tags in zip(records, model.predict(records)):
        tags = list(tags)
        rows.append({"guid": record.guid, "tags": tags, "entities": entities(record.text, tags)})
    return rows


def _scored_tags(record: NerSentence, tags: Sequence[str]) -> list[str]:
    """Predicted tags without the space positions (one tag per character, or per non-space character).
    Only U+0020 counts as a space, as in the official scorer: a tab or an ideographic space is a character."""
    if len(tags) == len(record.text):
        return [tag for char, tag in zip(record.text, tags) if char != " "]
    if len(tags) == len(record.text) - record.text.count(" "):
        return list(tags)
    raise PredictionError(f"prediction {record.guid} has {len(tags)} tags for a sentence of "
                          f"{len(record.text)} characters")


def gold_and_predicted_tags(records: Sequence[NerSentence],
                            predictions: Sequence[dict]) -> tuple[list[list], list[list]]:
    """Gold and predicted tags of the scored characters, per sentence in record order, the predictions
    checked."""
    aligned = align_predictions(records, predictions)
    bad = [p.get("guid") for p in aligned if not isinstance(p.get("tags"), list)
           or not set(p["tags"]) <= set(TAGS)]
    if bad:
        raise PredictionError(f"{len(bad)} predictions lack 'tags' or use tags outside the KLUE-NER set "
                              f"(first: {', '.join(map(str, bad[:3]))})")
    gold = [_scored_tags(record, record.tags) for record in records]
    pred = [_scored_tags(record, p["tags"]) for record, p in zip(records, aligned)]
    return gold, pred


def score(records: Sequence[NerSentence], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    gold, predicted = gold_and_predicted_tags(records, predictions)
    _warn_of_invalid_iob2(records, predicted)
    return scoring.score_ner(gold, predicted)


def orphan_inside_tags(tags: Sequence[str]) -> int:
    """How many I-X tags start a run, not continuing a B-X or I-X: invalid IOB2, which the official scorer
    (strict IOB2 entities) does not count as an entity, and a lenient one would read as one."""
    return sum(1 for index, tag in enumerate(tags) if _orphan_inside(tags[index - 1] if index else None, tag))


def _orphan_inside(previous: str | None, tag: str) -> bool:
    """An I-X after nothing, after O, or after another type's tag."""
    return tag.startswith("I-") and (previous is None or previous == "O" or previous[2:] != tag[2:])


def _warn_of_invalid_iob2(records: Sequence[NerSentence], predicted: Sequence[Sequence[str]]) -> None:
    """Say how many predicted runs begin with I- (counted, not repaired: the score is the official one)."""
    counts = [orphan_inside_tags(tags) for tags in predicted]
    if any(counts):
        first = next(record.guid for record, count in zip(records, counts) if count)
        warnings.warn(f"ner: {sum(counts):,} predicted runs in {sum(1 for count in counts if count):,} sentences "
                      f"begin with I- without a B- (invalid IOB2; first in {first}): as the official scorer "
                      "does, strict IOB2 counts none of them as an entity", InputWarning,
                      stacklevel=caller_stacklevel())


def tally(records: Sequence[NerSentence], predictions: Sequence[dict], resources: dict) -> tallies.Tally:
    return tallies.tally_ner(*gold_and_predicted_tags(records, predictions))


def as_records(X: Sequence) -> list[NerSentence]:
    """NerSentence records, or plain sentences (str)."""
    return records_from(X, NerSentence, lambda item, guid, where: NerSentence(guid, plain_text(item, where)))


def plain_inputs(records: Sequence[NerSentence]) -> list[str]:
    """The sentences."""
    return [record.text for record in records]


def headline(records: Sequence[NerSentence], y: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> float:
    gold = [_scored_tags(record, tags) for record, tags in zip(records, y)]
    return scoring.score_ner(gold, [_scored_tags(r, tags) for r, tags in zip(records, predicted)])["entity_macro_f1"]


class AllOutsideTagger(NothingLearnt, BaseEstimator):
    """The trivial floor: every character is outside any entity."""

    _to_records = staticmethod(as_records)
    _headline = staticmethod(headline)

    def predict(self, X: Sequence) -> list[list[str]]:
        """'O' for every character.

        Parameters
        ----------
        X : sequence of NerSentence or str

        Returns
        -------
        list of list of str
            For each sentence, one 'O' per character.
        """
        return [["O"] * len(record.text) for record in self._fitted_records(X)]


def repair_iob2(tags: Sequence[str]) -> list[str]:
    """Valid IOB2: an I-X that does not continue a B-X/I-X starts the entity, so it becomes B-X."""
    repaired = []
    for tag in tags:
        if _orphan_inside(repaired[-1] if repaired else None, tag):
            tag = "B-" + tag[2:]
        repaired.append(tag)
    return repaired


def to_iobes(tags: Sequence[str]) -> list[str]:
    """IOB2 -> IOBES: the last character of an entity becomes E-X, a one-character entity S-X."""
    converted = []
    for index, tag in enumerate(tags):
        following = tags[index + 1] if index + 1 < len(tags) else "O"
        continues = following.startswith("I-") and following[2:] == tag[2:]
        if tag.startswith("B-"):
            tag = ("B-" if continues else "S-") + tag[2:]
        elif tag.startswith("I-"):
            tag = ("I-" if continues else "E-") + tag[2:]
        converted.append(tag)
    return converted


def iobes_to_iob2(tags: Sequence[str]) -> list[str]:
    """IOBES -> IOB2 (then repair_iob2 for sequences that IOBES itself would not allow)."""
    return [iob2_label(tag) for tag in tags]


def most_probable_iob2(marginals: Sequence[dict[str, float]], outside_weight: float = 1.0) -> list[str]:
    """Each character's IOB2 tag of highest marginal probability, from the CRF's marginals over its own labels
    (IOBES or IOB2): B-/S- add up to B-, I-/E- to I-; O's probability is weighed by `outside_weight`. Ties go to
    the first tag in sorted order."""
    tags = []
    for label_probabilities in marginals:
        merged: dict[str, float] = {}
        for label, probability in sorted(label_probabilities.items()):
            tag = iob2_label(label)
            merged[tag] = merged.get(tag, 0.0) + probability
        merged["O"] = merged.get("O", 0.0) * outside_weight
        tags.append(max(sorted(merged), key=merged.__getitem__))
    return tags


def _position(index: int, start: int, end: int) -> str:
    """Where a character sits in a unit: only, first, last or inside."""
    if end - start <= 1:
        return "only"
    return "first" if index == start else "last" if index == end - 1 else "inside"


def eojeol_stems(text: str, analysis: Analysis, tags: list[str]) -> list[tuple[int, int]]:
    """For each eojeol, the span of its content part: the eojeol without the particles, endings and
    punctuation that follow its last content morpheme (entities rarely include them: '서울시청에서')."""
    words = eojeol_spans(text)
    stem_end = [start for start, _end in words]
    for m, (tag, end) in enumerate(zip(tags, analysis.ends)):
        if tag[0] not in "JES" or tag in ("SN", "SL", "SH"):
            w = analysis.eojeols[m]
            stem_end[w] = max(stem_end[w], min(end, words[w][1]))
    return [(start, max(end, start)) for (start, _word_end), end in zip(words, stem_end)]


MorphemeKey = str  # 'form<TAB>Kiwi tag': a string, so that a fitted model holds only str-keyed dicts (skops)


def morpheme_key(form: str, tag: str) -> MorphemeKey:
    return f"{form}\t{tag}"


def morpheme_types(analysis: Analysis, tags: Sequence[str]) -> list[tuple[MorphemeKey, str]]:
    """Each content morpheme of a tagged sentence with the entity type of its first character ('O' when it
    is outside any entity)."""
    typed = []
    for form, tag, start in zip(analysis.forms, analysis.tags, analysis.starts):
        if to_sejong(tag) in NEIGHBOUR_TAGS and start < len(tags):
            typed.append((morpheme_key(form, tag), tags[start][2:] or "O"))
    return typed


def type_features(counts: Counter) -> dict[str, float]:
    """How a morpheme was tagged in training: the share of each type ('O' included) and how often it was
    seen (capped at 10, scaled to 1)."""
    total = sum(counts.values())
    features = {f"morph.typed={kind}": count / total for kind, count in sorted(counts.items()) if count}
    if features:
        features["morph.seen"] = min(total, 10) / 10
    return features


def count_types(typed: Iterable[Sequence[tuple[MorphemeKey, str]]]) -> dict[MorphemeKey, Counter]:
    """How often each morpheme had each type, over sentences of morpheme_types."""
    counts: dict[MorphemeKey, Counter] = {}
    for sentence in typed:
        for key, kind in sentence:
            counts.setdefault(key, Counter())[kind] += 1
    return counts


def jackknifed_type_features(typed: Sequence[Sequence[tuple[MorphemeKey, str]]],
                             folds: int) -> list[dict[MorphemeKey, dict[str, float]]]:
    """For each training sentence, type_features of its morphemes counted on the other folds only
    (sentence k is in fold k % folds): counted on all, a morpheme seen once would look like a sure entry."""
    by_fold = [count_types(typed[fold::folds]) for fold in range(folds)]
    total = count_types(typed)
    features = []
    for index, sentence in enumerate(typed):
        own = by_fold[index % folds]
        features.append({key: type_features(total[key] - own[key]) for key, _kind in sentence})
    return features


# character_features' names for what they describe, so that an attribute reads as it is ('morph.form[+1]:년').
# Class and place values are words too; every name maps one to one from the codes they replaced, so a CRF
# trained with either learns the same weights in the same order.
CLASS_NAMES = {"HG": "hangul", "JM": "jamo", "DG": "digit", "UP": "upper", "LO": "lower", "HJ": "hanja",
               "SP": "space", "PU": "punct", "OT": "other", "BD": "edge"}
PLACE_NAMES = {"B": "first", "I": "inside", "E": "last", "S": "only"}
SPACE = "<space>"  # a space character as a value: 'char: ' would read as an empty one


def iob2_label(label: str) -> str:
    """The IOB2 label an IOBES label is shown as: S- and B- begin an entity, E- and I- continue it."""
    return label if label == "O" else ("B-" if label[:2] in ("B-", "S-") else "I-") + label[2:]


# What the fast setting leaves out of character_features (compact=True): the second characters on each side and
# their n-grams, the class context, the neighbouring morphemes' tags, the eojeol's length and shape and the
# neighbouring stems. crfsuite's time grows with the features each character carries (reading them in, training,
# tagging), and the morphemes say most of what these say.
COMPACT_LEFT_OUT = frozenset({"char[-2]", "char[+2]", "chars[-2,0]", "chars[0,+2]", "chars[-1,+1]", "class[-1]",
                              "class[+1]", "class[-1,0]", "class[0,+1]", "morph.tag[-1]", "morph.tag[+1]",
                              "morph.form[-1]", "morph.form[+1]", "eojeol.length", "eojeol.shape", "stem[-1]",
                              "stem[+1]", "stem.first", "stem.last2"})


def character_features(text: str, analysis: Analysis,
                       morpheme_neighbours: Sequence[Sequence[str]] | None = None,
                       morpheme_priors: dict[MorphemeKey, dict[str, float]] | None = None,
                       gazetteer: EntityGazetteer | None = None, gazetteer_inside: int = 0,
                       compact: bool = False) -> list[dict[str, str | float]]:
    """crfsuite features for every character of the sentence (spaces included, as in the data); with
    `morpheme_neighbours` (per morpheme, as features.vectorize.neighbour_tokens gives), also the nearest
    morphemes of the covering morpheme in Kiwi's language model (a name Kiwi knows but training never saw
    is near names of its kind: 삼성전자 -> 인텔, 애플); with `morpheme_priors`, the covering morpheme's
    type_features; with `gazetteer`, for each character inside a name it finds (features.gazetteer), the
    name's type and the character's place in it: names that training never saw but another task's annotators
    typed (the RE training file's persons and organisations); names of `gazetteer_inside` characters or more
    are also looked for inside words (EntityGazetteer.matches). `compact` leaves out COMPACT_LEFT_OUT."""
    size = len(text)
    classes = [char_class(c) for c in text]
    morpheme_of = char_to_morpheme(analysis)
    eojeol_of = char_to_eojeol(text)
    words = eojeol_spans(text)
    tags = analysis.sejong_tags
    stems = eojeol_stems(text, analysis, tags)
    stem_texts = [text[s:e] if e - s <= 12 else "<long>" for s, e in stems]
    word_shapes = [shape(text[s:e]) for s, e in words]
    # The stem's first and last characters reach every character of it: '부' ends 해양수산부 and most
    # ministries, which a window of two characters cannot see from '해'.
    stem_edges = [{"stem.first": text[s], "stem.last": text[e - 1], "stem.last2": text[max(e - 2, s):e]} if e > s
                  else {} for s, e in stems]

    def raw_char(i: int) -> str:
        return text[i] if 0 <= i < size else ("<s>" if i < 0 else "</s>")

    def char(i: int) -> str:
        return SPACE if 0 <= i < size and text[i] == " " else raw_char(i)

    def text_at(first: int, last: int) -> str:
        return "".join(raw_char(j) for j in range(first, last + 1))

    def kind(i: int) -> str:
        return CLASS_NAMES[classes[i] if 0 <= i < size else "BD"]

    def stem(w: int) -> str:
        return stem_texts[w] if 0 <= w < len(stem_texts) else "<none>"

    rows = []
    for i in range(size):
        features = {
            "char": char(i), "class": kind(i), "char[-1]": char(i - 1), "char[+1]": char(i + 1),
            "char[-2]": char(i - 2), "char[+2]": char(i + 2), "class[-1]": kind(i - 1), "class[+1]": kind(i + 1),
            "class[-1,0]": f"{kind(i - 1)},{kind(i)}", "class[0,+1]": f"{kind(i)},{kind(i + 1)}",
            "chars[-1,0]": text_at(i - 1, i), "chars[0,+1]": text_at(i, i + 1), "chars[-1,+1]": text_at(i - 1, i + 1),
            "chars[-2,0]": text_at(i - 2, i), "chars[0,+2]": text_at(i, i + 2),
        }
        m = morpheme_of[i]
        if m >= 0:
            start, end = analysis.starts[m], analysis.ends[m]
            last = len(tags) - 1
            features.update({
                "morph.tag": tags[m], "morph.tag,place": f"{tags[m]},{_position(i, start, end)}",
                "morph.form": analysis.forms[m],
                "morph.tag[-1]": tags[m - 1] if m > 0 else "<s>", "morph.tag[+1]": tags[m + 1] if m < last else "</s>",
                "morph.form[-1]": analysis.forms[m - 1] if m > 0 else "<s>",
                "morph.form[+1]": analysis.forms[m + 1] if m < last else "</s>",
            })
            if morpheme_neighbours is not None:
                for token in morpheme_neighbours[m]:
                    features[f"morph.near={token}"] = 1.0
            if morpheme_priors is not None:
                features.update(morpheme_priors.get(morpheme_key(analysis.forms[m], analysis.tags[m]), {}))
        w = eojeol_of[i]
        if w >= 0:
            start, end = words[w]
            stem_start, stem_end = stems[w]
            features.update({
                "eojeol.place": _position(i, start, end), "eojeol.length": str(min(end - start, 8)),
                "eojeol.shape": word_shapes[w] if len(word_shapes[w]) <= 8 else "<long>",
                "stem.place": _position(i, stem_start, stem_end) if i < stem_end else "after",
                "stem": stem(w), "stem[-1]": stem(w - 1), "stem[+1]": stem(w + 1),
            })
            if i < stem_end:
                features.update(stem_edges[w])
        if compact:
            features = {name: value for name, value in features.items() if name not in COMPACT_LEFT_OUT}
        rows.append(features)
    if gazetteer is not None:
        for start, end, kind in gazetteer.matches(text, gazetteer_inside):
            for i in range(start, end):
                rows[i].update({"gazetteer.type,place": f"{kind},{_position(i, start, end)}", "gazetteer.type": kind})
    return rows


def seed_c_rand(seed: int) -> None:
    """Seed the C library's rand(), which crfsuite's online trainers shuffle with."""
    try:
        # Windows' C runtime is a library of its own (its rand() state is per thread, and crfsuite trains in
        # this one); elsewhere the process's own symbols include the C library's.
        srand = (ctypes.CDLL("ucrtbase") if sys.platform == "win32" else ctypes.CDLL(None)).srand
    except (OSError, TypeError, AttributeError):
        raise ValueError("algorithm='pa' seeds the C library's rand(), which this platform does not expose; "
                         "use algorithm='lbfgs'") from None
    # glibc takes a seed of 0 for 1; shifted by one, seeds 0 to 2**32 - 2 each give their own order.
    srand(ctypes.c_uint(seed % (2**32 - 1) + 1))


def crf_model(crf: sklearn_crfsuite.CRF) -> bytes:
    """The bytes of a fitted CRF's crfsuite model, its weights and labels."""
    with open(crf.modelfile.name, "rb") as handle:
        return handle.read()


def crf_from_model(model: bytes) -> sklearn_crfsuite.CRF:
    """A CRF that tags with the crfsuite model `model` (crf_model's bytes), written to a temporary file of its
    own (sklearn_crfsuite reads its model from a file, and removes the file with the CRF); ValueError when the
    bytes are not a crfsuite model that crfsuite reads without leaving them (a model file's bytes reach its C
    reader, which checks no offset: crfsuite_format checks every one first)."""
    if not isinstance(model, bytes):
        raise ValueError(f"a CRF's model is bytes, not {type(model).__name__}")
    check_crfsuite_model(model)
    crf = sklearn_crfsuite.CRF()
    crf.modelfile.ensure_name()
    with open(crf.modelfile.name, "wb") as handle:
        handle.write(model)
    crf.tagger_  # opened now, so that bytes that are not a model fail here (pycrfsuite checks the header)
    return crf


class CharacterCRF(TaskModel, BaseEstimator):
    """Linear-chain CRF (sklearn-crfsuite: L-BFGS with elastic net, or passive-aggressive) over characters,
    with character, class, window and n-gram features, the Kiwi morpheme covering each character, that
    morpheme's nearest morphemes in Kiwi's language model and how that morpheme was tagged in training.

    Parameters
    ----------
    c1, c2 : float
        L1 and L2 penalties of the CRF.
    algorithm : 'lbfgs' or 'pa'
        How crfsuite learns the weights. 'lbfgs': the CRF's likelihood with an elastic-net penalty (c1, c2), by
        L-BFGS (max_iterations). 'pa': passive-aggressive updates, one sentence at a time (Crammer et al. 2006;
        crfsuite's type 1, averaged), `epochs` passes over the training sentences in an order shuffled by
        `random_state`: the fit takes a third of L-BFGS's time. By 3-fold CV on the training sentences the two
        are level, but with the RE gazetteer L-BFGS leads in each fold (results/tuning/ner-crf-algorithm.json,
        ner-crf-gazetteer-algorithm.json), so L-BFGS stays the default; 'pa' is the fast choice.
    epochs : int
        Passes over the training sentences with algorithm='pa'. 10, the best of 6, 8, 10, 12 and 15 by 3-fold CV
        (ner-crf-pa-epochs.json, ner-crf-pa-aggressiveness.json).
    aggressiveness : float
        With algorithm='pa', the largest step one sentence may take (crfsuite's C); smaller is more regularised.
        0.2 and 1 learn the same weights here (no step reaches 0.2); 0.05 and 0.01 score no better.
    max_iterations : int
        L-BFGS iterations with algorithm='lbfgs'. 80, for time: by 3-fold CV more iterations gain less than the
        spread between folds (results/tuning/ner-crf-max-iterations.json), and the fit takes a quarter less.
    neighbours : int
        Nearest morphemes of the covering morpheme in Kiwi's CoNg model; 0 leaves them out.
    compact : bool
        Leave out the features of COMPACT_LEFT_OUT (the fast setting: crfsuite's time grows with the features
        each character carries).
    gazetteer : features.gazetteer.EntityGazetteer or None
        Typed names to look for in each sentence (character_features). From the command line, `--param
        re_train=FILE` sets it to the subjects and objects of a KLUE-RE training file (their own types: PER,
        ORG, LOC, DAT, POH, NOH; the CRF learns what each says about its labels). None leaves it out.
    gazetteer_inside : int
        Names are looked for where a word starts, and names of at least this many characters inside words
        too (a name in a compound: 삼성전자회장); 0: at word starts only. 3, the best by 3-fold CV on the training
        sentences with the RE gazetteer (results/tuning/ner-crf-gazetteer-inside.json).
    type_folds : int
        How a morpheme was tagged in training (type_features) is counted for each training sentence on the
        other folds of this many; 0 leaves these features out.
    scheme : 'iobes' or 'iob2'
        The tags the CRF learns ('iobes': an entity's last character has a label of its own); predictions
        are IOB2 either way.
    decoding : 'viterbi' or 'marginal'
        'viterbi': each sentence's most probable tag sequence. 'marginal': each character's most probable IOB2
        tag on its own (its CRF marginals, B- and S- summed, I- and E- summed), then made valid IOB2; it
        maximises the expected number of right characters, which character F1 counts. Viterbi: by 3-fold CV
        on the training sentences it leads on entity F1 and ties on character F1
        (results/tuning/ner-crf-decoding.json).
    outside_weight : float in (0, 1]
        With marginal decoding, the O tag's probability is weighed by this before the most probable tag is
        taken: below 1, a character the CRF is unsure of goes to an entity (the CRF misses more entity
        characters than it invents). 1 with Viterbi decoding.
    random_state : int
        Seeds the order in which algorithm='pa' visits the sentences: crfsuite shuffles them with the C
        library's rand(), seeded with this before each fit (the same fit in every process on the same C
        library). L-BFGS is deterministic and reads no seed.

    Attributes
    ----------
    morpheme_types_ : dict or None
        'form<TAB>tag' -> type_features counted on all training sentences (None with type_folds=0).
    crf_ : sklearn_crfsuite.CRF

    X is a sequence of NerSentence records or of plain sentences (str); y holds one IOB2 tag per character
    of each sentence, spaces included.
    """

    _to_records = staticmethod(as_records)
    _headline = staticmethod(headline)

    _parameter_constraints = {
        "algorithm": [StrOptions({"lbfgs", "pa"})], "epochs": [ITERATIONS],
        "aggressiveness": [Interval(Real, 0, None, closed="neither")],
        "c1": [NON_NEGATIVE], "c2": [NON_NEGATIVE], "max_iterations": [ITERATIONS], "neighbours": [NEIGHBOURS],
        "compact": ["boolean"],
        "gazetteer": [None, HasMethods(["matches"])], "gazetteer_inside": [Interval(Integral, 0, 100, closed="both")],
        "type_folds": [*FOLDS_OR_OFF], "scheme": [StrOptions({"iob2", "iobes"})],
        "decoding": [StrOptions({"viterbi", "marginal"})], "outside_weight": [Interval(Real, 0, 1, closed="right")],
        "random_state": [SEED],
    }

    def __init__(self, *, algorithm: str = "lbfgs", epochs: int = 10, aggressiveness: float = 1.0,
                 c1: float = 0.05, c2: float = 0.05, max_iterations: int = 80, neighbours: int = 20,
                 compact: bool = False, gazetteer: EntityGazetteer | None = None, gazetteer_inside: int = 3,
                 type_folds: int = 5, scheme: str = "iobes", decoding: str = "viterbi", outside_weight: float = 1.0,
                 random_state: int = 0):
        self.algorithm = algorithm
        self.epochs = epochs
        self.aggressiveness = aggressiveness
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.neighbours = neighbours
        self.compact = compact
        self.gazetteer = gazetteer
        self.gazetteer_inside = gazetteer_inside
        self.type_folds = type_folds
        self.scheme = scheme
        self.decoding = decoding
        self.outside_weight = outside_weight
        self.random_state = random_state

    def _features(self, records: Sequence[NerSentence], analyses: Sequence[Analysis],
                  priors: Sequence[dict | None]) -> Iterator[list[dict[str, str | float]]]:
        """Each sentence's character feature dicts, made as crfsuite takes them in: all of them at once, as
        Python dicts, were most of a fit's memory (3.1 GB at half the official 21,008 sentences)."""
        if self.neighbours:
            prefetch_neighbours(analyses, self.neighbours)
        return (character_features(r.text, a, neighbour_tokens(a, self.neighbours) if self.neighbours else None, p,
                                   self.gazetteer, self.gazetteer_inside, getattr(self, "compact", False))
                for r, a, p in zip(records, analyses, priors))

    def fit(self, X: Sequence, y: Sequence[Sequence[str]]) -> "CharacterCRF":
        """Train the character CRF on tagged sentences.

        Parameters
        ----------
        X : sequence of NerSentence or str
            Training sentences, as records or plain strings.
        y : sequence of sequence of str
            IOB2 tags, one per character of each sentence (B-PS, I-PS, ..., O).

        Returns
        -------
        self : CharacterCRF
            The fitted model.
        """
        texts = [nfc_text(record.text) for record in self._fit_records(X)]
        y = [text.tags_to_nfc(tags) if text.changed else tags for text, tags in zip(texts, y)]
        records = [NerSentence("", text.text, None) for text in texts]
        analyses = analyze(r.text for r in records)
        priors: Sequence[dict | None] = [None] * len(records)
        self.morpheme_types_: dict[MorphemeKey, dict[str, float]] | None = None
        if self.type_folds:
            typed = [morpheme_types(a, tags) for a, tags in zip(analyses, y)]
            priors = jackknifed_type_features(typed, self.type_folds)
            self.morpheme_types_ = {key: type_features(c) for key, c in count_types(typed).items()}
        features = self._features(records, analyses, priors)
        labels = [to_iobes(tags) if self.scheme == "iobes" else list(tags) for tags in y]
        if self.algorithm == "pa":
            self.crf_ = sklearn_crfsuite.CRF(algorithm="pa", pa_type=1, c=self.aggressiveness,
                                             max_iterations=self.epochs, all_possible_transitions=True)
            with _C_RAND_LOCK:  # threads share the C library's generator
                seed_c_rand(self.random_state)
                self.crf_.fit(features, labels)
        else:
            self.crf_ = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=self.c1, c2=self.c2,
                                             max_iterations=self.max_iterations, all_possible_transitions=True)
            self.crf_.fit(features, labels)
        return self

    def __getstate__(self) -> dict:
        # The CRF travels as its weights, the bytes of crfsuite's model: sklearn_crfsuite's own state holds a
        # FileResource, which deletes the file it names when it is freed, and a model file must not be able
        # to name one (baselines.runner.persistence). Processes (joblib) and model files get the same bytes.
        state = dict(super().__getstate__())  # object's own __getstate__ returns the live __dict__, not a copy
        if "crf_" in state:
            state["crf_model_"] = crf_model(state.pop("crf_"))
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        model = state.pop("crf_model_", None)
        super().__setstate__(state)
        if model is not None:
            self.crf_ = crf_from_model(model)

    def layout_mismatch(self) -> str | None:
        """What keeps this fitted CRF from tagging with this version's features (one saved when their names were
        codes such as 'c-1'); None when it can. Every character has a 'class', so every CRF knows that name."""
        if not hasattr(self, "crf_"):
            return None
        if not any(attribute.startswith("class:") for attribute in self.crf_.attributes_):
            return "this NER model was saved by a version whose feature names were codes"
        return None

    def top_features(self, top_k: int = 10) -> dict[str, list[tuple[str, float]]]:
        """Per IOB2 label (what predict returns), the character features that speak most for it, by their names;
        with the IOBES scheme the CRF learns, a feature of a one-character entity (S-) shows under B- and
        one of an entity's last character (E-) under I-, marked so. Then the strongest label transitions
        (positive: likely, negative: unlikely)."""
        check_is_fitted(self)
        by_label: dict[str, tuple[list[str], list[float]]] = {}
        for (attribute, label), weight in self.crf_.state_features_.items():
            names, weights = by_label.setdefault(iob2_label(label), ([], []))
            marked = {"S-": " (a one-character entity)", "E-": " (an entity's last character)"}.get(label[:2], "")
            names.append(attribute + marked)
            weights.append(weight)
        sections = {f"label {label}": strongest(names, weights, top_k)
                    for label, (names, weights) in sorted(by_label.items())}
        transitions = self.crf_.transition_features_
        sections["transitions"] = strongest([f"{a} -> {b}" for a, b in transitions], list(transitions.values()),
                                            top_k, both_signs=True)
        return sections

    def character_contributions(self, X: Sequence, top_k: int = 3) -> list[list[dict]]:
        """Why each character got its tag: per sentence, per character, the IOB2 tag predicted and the
        `top_k` features that fired there with the largest state weight x value for that tag (the label the
        CRF chose, IOBES inside). Characters are those of the text in NFC, as the CRF reads it.
        The transitions between tags also count in the CRF's choice; they are the same for every sentence
        and are in top_features."""
        records = [NerSentence("", nfc_text(record.text).text, None) for record in self._fitted_records(X)]
        analyses = analyze(r.text for r in records)
        features = list(self._features(records, analyses, [self.morpheme_types_] * len(records)))
        weights = self.crf_.state_features_
        explained = []
        for record, sentence, labels in zip(records, features, self.crf_.predict(features)):
            rows = []
            # The tags shown are predict's (IOB2, repaired); the weights read are those of the CRF's own label.
            shown = repair_iob2(iobes_to_iob2(labels))
            for character, fired, label, tag in zip(record.text, sentence, labels, shown):
                pushed = []
                for key, value in fired.items():
                    attribute, amount = (f"{key}:{value}", 1.0) if isinstance(value, str) else (key, float(value))
                    weight = weights.get((attribute, label))
                    if weight is not None and weight * amount:
                        pushed.append((attribute, weight * amount))
                pushed.sort(key=lambda item: (-item[1], item[0]))
                rows.append({"character": character, "tag": tag, "features": pushed[:top_k]})
            explained.append(rows)
        return explained

    def predict(self, X: Sequence) -> list[list[str]]:
        """IOB2 tags, one per character of each record's own text: the CRF reads NFC, and its tags are carried back
        to decomposed (NFD) characters, so that entity offsets point into the user's string.

        Parameters
        ----------
        X : sequence of NerSentence or str

        Returns
        -------
        list of list of str
            For each sentence, as many tags as it has characters.
        """
        texts = [nfc_text(record.text) for record in self._fitted_records(X)]
        records = [NerSentence("", text.text, None) for text in texts]
        analyses = analyze(r.text for r in records)
        features = self._features(records, analyses, [self.morpheme_types_] * len(records))
        if self.decoding == "marginal":
            tagged = [repair_iob2(most_probable_iob2(marginals, self.outside_weight))
                      for marginals in self.crf_.predict_marginals(features)]
        else:
            tagged = [repair_iob2(iobes_to_iob2(tags)) for tags in self.crf_.predict(features)]
        return [text.tags_to_original(tags) if text.changed else tags for text, tags in zip(texts, tagged)]


def compare(records: Sequence[NerSentence], aligned: Sequence[dict]) -> Comparison:
    """Entities, span by span: a gold entity against the type of the predicted entity with exactly its span
    ('O': missed), and a predicted entity that no gold one spans against 'O' (made up). Per type, this gives
    seqeval's strict precision, recall and F1. A sentence is as wrong as its mismatched entities."""
    comparison = Comparison("entity", outside="O", ranked_by="the number of mismatched entities in the sentence")
    for record, prediction in zip(records, aligned):
        # Entities are scored on the characters without spaces; shown, they keep the sentence's own spaces.
        kept = [position for position, char in enumerate(record.text) if char != " "]
        gold = {(start, end): kind for kind, start, end in scoring.iob2_entities(_scored_tags(record, record.tags))}
        pred = {(start, end): kind for kind, start, end in
                scoring.iob2_entities(_scored_tags(record, prediction["tags"]))}
        spans = sorted(gold.keys() | pred.keys())
        for span in spans:
            comparison.gold.append(gold.get(span, "O"))
            comparison.predicted.append(pred.get(span, "O"))
        comparison.wrong.append(float(sum(gold.get(span) != pred.get(span) for span in spans)))
        comparison.shown.append(tuple(", ".join(f"{record.text[kept[start]:kept[end - 1] + 1]}/{kind}"
                                                for (start, end), kind in
                                                sorted(entities.items())) or "-" for entities in (gold, pred)))
    return comparison


ENTITY_ERROR_TYPES = ("correct", "wrong boundary", "wrong type", "wrong boundary and type", "missed", "spurious")


def entity_errors(records: Sequence[NerSentence], aligned: Sequence[dict], examples: int = 3) -> dict:
    """Entities as the official scorer reads them (strict IOB2 on the characters without spaces, as seqeval's
    strict IOB2 mode): the micro precision, recall and F1 over all entities (seqeval's micro average), and each
    gold entity's fate: correct (its span and type predicted), wrong type (its span, another type), wrong
    boundary (an overlapping prediction of its type), both (overlapping, another type) or missed (nothing
    overlaps it); a predicted entity that overlaps no gold one is spurious. Up to `examples` of each."""
    counts = dict.fromkeys(ENTITY_ERROR_TYPES, 0)
    shown: dict[str, list[dict]] = {kind: [] for kind in ENTITY_ERROR_TYPES if kind != "correct"}
    gold_total = predicted_total = 0
    for record, prediction in zip(records, aligned):
        kept = [position for position, char in enumerate(record.text) if char != " "]

        def text(entity: tuple[str, int, int]) -> str:
            return f"{record.text[kept[entity[1]]:kept[entity[2] - 1] + 1]}/{entity[0]}"

        gold = scoring.iob2_entities(_scored_tags(record, record.tags))
        predicted = scoring.iob2_entities(_scored_tags(record, prediction["tags"]))
        gold_total, predicted_total = gold_total + len(gold), predicted_total + len(predicted)
        overlapped = set()
        for entity in gold:
            overlapping = [other for other in predicted if other[1] < entity[2] and entity[1] < other[2]]
            overlapped.update(overlapping)
            same_span = [other for other in overlapping if other[1:] == entity[1:]]
            if same_span:
                fate = "correct" if same_span[0][0] == entity[0] else "wrong type"
            elif not overlapping:
                fate = "missed"
            else:
                fate = "wrong boundary" if any(other[0] == entity[0] for other in overlapping) else \
                    "wrong boundary and type"
            counts[fate] += 1
            if fate != "correct" and len(shown[fate]) < examples:
                shown[fate].append({"guid": record.guid, "sentence": record.text, "gold": text(entity),
                                    "predicted": ", ".join(map(text, overlapping)) or "-"})
        for entity in predicted:
            if entity not in overlapped:
                counts["spurious"] += 1
                if len(shown["spurious"]) < examples:
                    shown["spurious"].append({"guid": record.guid, "sentence": record.text, "gold": "-",
                                              "predicted": text(entity)})
    precision = counts["correct"] / predicted_total if predicted_total else 0.0
    recall = counts["correct"] / gold_total if gold_total else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"micro": {"precision": 100 * precision, "recall": 100 * recall, "f1": 100 * f1, "gold": gold_total,
                      "predicted": predicted_total},
            "convention": "strict IOB2 entities on the characters without spaces (the official scorer's; seqeval "
                          "with mode='strict', scheme=IOB2), micro-averaged over all entities",
            "counts": counts, "examples": shown}


def distinct_copy(record: NerSentence, copy: int) -> NerSentence:
    """Copy `copy` of a sentence for the scale benchmark: copy_marker(copy) and a space in front, tagged O."""
    prefix = copy_marker(copy) + " "
    return replace(record, guid=f"{record.guid}-copy{copy}", text=prefix + record.text,
                   tags=["O"] * len(prefix) + list(record.tags))


TASK = TaskSpec(
    code="ner",
    title="NER named entity recognition",
    folder="klue-ner-v1.1",
    train_file="klue-ner-v1.1_train.tsv",
    dev_file="klue-ner-v1.1_dev.tsv",
    reading=Reading(
        texts=lambda records: [r.text for r in records],
        load=load,
        from_hf=from_hf,
        load_input=load_input,
        as_records=as_records,
        plain_inputs=plain_inputs,
        distinct_copy=distinct_copy,
    ),
    modelling=Modelling(
        targets=targets,
        models={"crf": ModelEntry(CharacterCRF),
                # Passive-aggressive training (a third of L-BFGS's fit), 5 passes, no neighbours and the compact
                # features: 1.6 entity F1 below the full features by 3-fold CV, for two fifths less time
                # (results/tuning/ner-fast.json).
                "fast": ModelEntry(CharacterCRF, {"algorithm": "pa", "epochs": 5, "neighbours": 0, "compact": True}),
                "trivial": ModelEntry(AllOutsideTagger)},
        default_model="crf",
        predict=predict,
        saved_types=(CharacterCRF, AllOutsideTagger),
    ),
    scoring=Scoring(
        score=score,
        tally=tally,
        breakdown="entity_f1",
        headline=("entity_macro_f1", "char_macro_f1"),
        prediction_example='{"guid": "klue-ner-v1_dev_00001-wikitree", "tags": ["B-PS", "O", "O", ...]}',
        compare=compare,
        entity_errors=entity_errors,
        trainer_score=scoring.score_ner,
    ),
    links=Links(
        requires=(Requirement("re", "re_train", "gazetteer", "a KLUE-RE training file (official JSON), whose typed "
                              "subject and object entities become the NER CRF's gazetteer", provides="gazetteer"),),
    ),
    presentation=Presentation(drawer=html.draw_ner, legend=html.entity_legend),
    benchmarks=Benchmarks(grow=grown.repeated, peer="plain-crf", doctor_fits_default=True),
)
