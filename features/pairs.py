"""Sentence-pair features (STS, NLI): overlaps, soft and embedding alignment, cue mismatches, what a hypothesis adds."""
from __future__ import annotations

import numpy as np

from features.analysis import analyzer, neighbours
from features.morphemes import Analysis
from features.tags import to_sejong
from features.vectorize import CONTENT_TAGS, morpheme_tokens, neighbour_queries

# Morphemes that negate or forbid (안/못 + predicate, -지 않다/못하다/말다, 없다, 아니다, 금지, 불가).
NEGATION_FORMS = frozenset({"않", "안", "못", "없", "아니", "말", "금지", "불가", "불가능", "아무"})
# Quantifiers and restrictors whose change flips entailment (all/some/only/at least/never ...).
QUANTITY_FORMS = frozenset({"모든", "모두", "전부", "항상", "절대", "일부", "만", "뿐", "이상", "이하", "최소",
                            "최대", "전혀", "가장", "유일", "몇", "많", "적", "여러", "다른", "또"})
TIME_FORMS = frozenset({"어제", "오늘", "내일", "과거", "미래", "전", "후", "이전", "이후", "아직", "이미",
                        "곧", "처음", "마지막", "년", "월", "일", "시"})


def content_forms(analysis: Analysis) -> list[str]:
    return morpheme_tokens(analysis, with_tags=False, content_only=True)


def numbers(analysis: Analysis) -> set[str]:
    return {form for form, tag in zip(analysis.forms, analysis.tags) if tag == "SN"}


def char_ngrams(text: str, size: int) -> set[str]:
    squeezed = "".join(text.split())
    return {squeezed[i:i + size] for i in range(max(len(squeezed) - size + 1, 0))}


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def _jaccard(a: set, b: set) -> float:
    return _ratio(len(a & b), len(a | b))


def _dice(a: set, b: set) -> float:
    return _ratio(2 * len(a & b), len(a) + len(b))


def soft_alignments(first: list[str], second: list[str]) -> tuple[float, float]:
    """Mean over the tokens of each list of their best character-bigram Dice match in the other (1 for an
    exact match), first to second and second to first: credits '호스트분' against '호스트' where exact overlap
    gives nothing. Dice is symmetric, so each pair of distinct tokens is compared once for both directions."""
    if not first or not second:
        return 0.0, 0.0
    distinct_1, distinct_2 = list(dict.fromkeys(first)), list(dict.fromkeys(second))
    grams_1, grams_2 = ([char_ngrams(token, 2) or {token} for token in tokens] for tokens in (distinct_1, distinct_2))
    similar = [[1.0 if token == other else _dice(grams, other_grams) for other, other_grams in zip(distinct_2, grams_2)]
               for token, grams in zip(distinct_1, grams_1)]
    best_1 = dict(zip(distinct_1, map(max, similar)))
    best_2 = dict(zip(distinct_2, map(max, zip(*similar))))
    return _mean_in_order(best_1, first), _mean_in_order(best_2, second)


def _mean_in_order(value_of: dict[str, float], tokens: list[str]) -> float:
    # Added one after another in the tokens' order: sum() compensates its rounding from Python 3.12 on.
    total = 0.0
    for token in tokens:
        total += value_of[token]
    return total / len(tokens)


def overlap_features(first: Analysis, second: Analysis) -> dict[str, float]:
    """Symmetric and directional similarity of two analysed sentences, all in [0, 1] or small ratios."""
    content_1, content_2 = content_forms(first), content_forms(second)
    set_1, set_2 = set(content_1), set(content_2)
    morph_1 = {f"{f}/{t}" for f, t in zip(first.forms, first.tags)}
    morph_2 = {f"{f}/{t}" for f, t in zip(second.forms, second.tags)}
    features = {
        "content_jaccard": _jaccard(set_1, set_2),
        "content_covered_1": _ratio(len(set_1 & set_2), len(set_1)),
        "content_covered_2": _ratio(len(set_1 & set_2), len(set_2)),
        "morpheme_jaccard": _jaccard(morph_1, morph_2),
        **dict(zip(("align_1_to_2", "align_2_to_1"), soft_alignments(content_1, content_2))),
        "length_ratio": _ratio(min(len(first.text), len(second.text)), max(len(first.text), len(second.text))),
        "content_length_ratio": _ratio(min(len(set_1), len(set_2)), max(len(set_1), len(set_2))),
    }
    for size in (2, 3):
        grams_1, grams_2 = char_ngrams(first.text, size), char_ngrams(second.text, size)
        features[f"char{size}_jaccard"] = _jaccard(grams_1, grams_2)
        features[f"char{size}_covered_1"] = _ratio(len(grams_1 & grams_2), len(grams_1))
        features[f"char{size}_covered_2"] = _ratio(len(grams_1 & grams_2), len(grams_2))
    numbers_1, numbers_2 = numbers(first), numbers(second)
    features["numbers_differ"] = float(bool(numbers_1 ^ numbers_2))
    features["numbers_only_in_2"] = float(bool(numbers_2 - numbers_1))
    for name, cue_forms in (("negation", NEGATION_FORMS), ("quantity", QUANTITY_FORMS), ("time", TIME_FORMS)):
        cues_1 = set(first.forms) & cue_forms
        cues_2 = set(second.forms) & cue_forms
        features[f"{name}_in_1"] = float(bool(cues_1))
        features[f"{name}_in_2"] = float(bool(cues_2))
        features[f"{name}_mismatch"] = float(cues_1 != cues_2)
    return features


# Content morphemes by kind: a pair can share its nouns and differ in its predicate (or the reverse).
EMBEDDING_KINDS = {"noun": frozenset({"NNG", "NNP", "NR", "NP", "SL", "SH", "SN", "XR"}),
                   "predicate": frozenset({"VV", "VA"})}
UNALIGNED_BELOW = (0.4, 0.6)  # cosines under which a morpheme has no near word on the other side
EMBEDDING_FEATURES = ("embedding_align_1_to_2", "embedding_align_2_to_1", "embedding_least_aligned",
                      "embedding_sentence_cosine", "embedding_known_share",
                      *(f"embedding_unaligned_share_below_{cut}" for cut in UNALIGNED_BELOW),
                      *(f"embedding_{kind}_{name}" for kind in EMBEDDING_KINDS
                        for name in ("least_aligned", "mean_aligned", "on_one_side")))


def content_morphemes(analysis: Analysis) -> list[tuple[str, str]]:
    """The distinct content morphemes as (form, Kiwi tag), the keys of Kiwi's embeddings, in text order."""
    return list(dict.fromkeys((form, tag) for form, tag in zip(analysis.forms, analysis.tags)
                              if to_sejong(tag) in CONTENT_TAGS))


def embedding_alignment(first: Analysis, second: Analysis) -> dict[str, float]:
    """How near the two sentences' content morphemes are in Kiwi's language model, where overlap sees only
    the same words (숙소 and 호텔, 저렴 and 싸): each morpheme's best cosine on the other side, averaged either
    way, and the lowest (the word the other sentence has least of); the share that have no near word (best
    cosine under each of UNALIGNED_BELOW); the lowest and the mean best cosine among nouns and among predicates
    alone, or that only one side has that kind; the cosine of the two sentences' summed vectors; the share
    of content morphemes with a vector. 0 where one side has none."""
    table = analyzer().embeddings
    morphemes_1, morphemes_2 = content_morphemes(first), content_morphemes(second)
    known_1 = [m for m in morphemes_1 if table.has_vector(m)]
    known_2 = [m for m in morphemes_2 if table.has_vector(m)]
    total = len(morphemes_1) + len(morphemes_2)
    features = dict.fromkeys(EMBEDDING_FEATURES, 0.0)
    features["embedding_known_share"] = (len(known_1) + len(known_2)) / total if total else 0.0
    if not known_1 or not known_2:
        return features
    similar = table.cosines(known_1, known_2)
    best_1, best_2 = similar.max(axis=1), similar.max(axis=0)
    features["embedding_align_1_to_2"] = float(best_1.mean())
    features["embedding_align_2_to_1"] = float(best_2.mean())
    features["embedding_least_aligned"] = float(min(best_1.min(), best_2.min()))
    features["embedding_sentence_cosine"] = table.summed_cosine(known_1, known_2)
    for cut in UNALIGNED_BELOW:  # a share, not a count: a linear model reads these beside values in [0, 1]
        features[f"embedding_unaligned_share_below_{cut}"] = ((best_1 < cut).sum() + (best_2 < cut).sum()) / (
            len(best_1) + len(best_2))
    sejong_1, sejong_2 = [to_sejong(tag) for _form, tag in known_1], [to_sejong(tag) for _form, tag in known_2]
    for kind, tags in EMBEDDING_KINDS.items():
        kind_1 = np.array([tag in tags for tag in sejong_1], dtype=bool)
        kind_2 = np.array([tag in tags for tag in sejong_2], dtype=bool)
        if kind_1.any() and kind_2.any():
            within = similar[np.ix_(kind_1, kind_2)]  # the kind's rows and columns of the cosines above
            best_1, best_2 = within.max(axis=1), within.max(axis=0)
            features[f"embedding_{kind}_least_aligned"] = float(min(best_1.min(), best_2.min()))
            features[f"embedding_{kind}_mean_aligned"] = float((best_1.mean() + best_2.mean()) / 2)
        elif kind_1.any() or kind_2.any():
            features[f"embedding_{kind}_on_one_side"] = 1.0
    return features


ANCHOR_TAGS = frozenset({"VV", "VA", "NNG", "NNP", "XR"})  # what a Korean sentence's last content word can be


def hypothesis_marks(premise: Analysis, hypothesis: Analysis) -> dict[str, float]:
    """What the hypothesis adds, and where: each of its morphemes ('form/TAG') marked 'in:' when the premise
    has it, else 'out:'; each pair of neighbouring marks where one is new ('in' standing for any kept one);
    how many are new (8 = 8 or more); its last predicate or noun, marked; and its last four morphemes, where
    Korean puts negation, tense and mood."""
    premise_tokens = set(morpheme_tokens(premise))
    tokens = morpheme_tokens(hypothesis)
    marks = [("in:" if token in premise_tokens else "out:") + token for token in tokens]
    features = {mark: 1.0 for mark in marks}
    sequence = [mark if mark.startswith("out:") else "in" for mark in marks]
    features.update({f"next={first}_{second}": 1.0 for first, second in zip(sequence, sequence[1:])
                     if (first, second) != ("in", "in")})
    features[f"new_count={min(sum(mark.startswith('out:') for mark in marks), 8)}"] = 1.0
    anchors = [token for token in tokens if token.rsplit("/", 1)[-1] in ANCHOR_TAGS]
    if anchors:
        side = "in" if anchors[-1] in premise_tokens else "out"
        features[f"last_anchor_{side}"] = 1.0
        features[f"last_anchor={side}:{anchors[-1]}"] = 1.0
    features["tail=" + " ".join(tokens[-4:])] = 1.0
    return features


def neighbour_alignment(premise: Analysis, hypothesis: Analysis, top_n: int) -> dict[str, float]:
    """Each content morpheme of the hypothesis that the premise lacks, aligned to the premise morpheme that
    is nearest to it among its top_n neighbours in Kiwi's language model (설립 to 창립): 'aligned=' and the
    pair 'substituted=hypothesis|premise' (a learnt lexicon of paraphrases and antonyms), or 'unaligned='
    where none is near; how many are unaligned (5 = 5 or more) and the least similarity of an aligned pair
    (1 when there is none). Look the neighbours up in batches first (prefetch_neighbours)."""
    in_premise = set(zip(premise.forms, premise.tags))
    queries = [query for query in neighbour_queries(hypothesis) if query not in in_premise]
    found = neighbours(queries, top_n)
    features, similarities, unaligned = {}, [], 0
    for form, tag in queries:
        token = f"{form}/{to_sejong(tag)}"
        near = [(score, near_form) for near_form, near_tag, score in found[(form, tag)]
                if (near_form, near_tag) in in_premise]
        if not near:
            unaligned += 1
            features[f"unaligned={token}"] = 1.0
            continue
        score, partner = max(near)
        features[f"aligned={token}"] = 1.0
        features[f"substituted={form}|{partner}"] = 1.0
        similarities.append(score)
    features[f"unaligned_count={min(unaligned, 5)}"] = 1.0
    features["least_aligned_similarity"] = min(similarities) if similarities else 1.0
    return features
