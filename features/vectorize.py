"""Analysers and transformers that put morpheme analyses into scikit-learn vectorisers and pipelines."""
from __future__ import annotations

from typing import Iterable, Sequence

from sklearn.base import BaseEstimator, TransformerMixin

from features.analysis import analyze, neighbour_names, neighbours
from features.morphemes import Analysis
from features.tags import to_sejong

# Morphemes that carry content: nouns, numerals, pronouns, predicates' stems, adverbs and determiners,
# roots, foreign words, Chinese characters and numbers. Particles, endings, affixes and punctuation don't.
CONTENT_TAGS = frozenset({"NNG", "NNP", "NNB", "NR", "NP", "VV", "VA", "MAG", "MM", "XR", "SL", "SH", "SN"})


def morpheme_tokens(analysis: Analysis, with_tags: bool = True, content_only: bool = False) -> list[str]:
    """'form/TAG' (Sejong tags) or bare forms, optionally content morphemes only."""
    tokens = []
    for form, tag in zip(analysis.forms, analysis.tags):
        sejong = to_sejong(tag)
        if content_only and sejong not in CONTENT_TAGS:
            continue
        tokens.append(f"{form.lower()}/{sejong}" if with_tags else form.lower())
    return tokens


def ngrams(tokens: Sequence[str], ngram_range: tuple[int, int]) -> list[str]:
    low, high = ngram_range
    grams = list(tokens) if low == 1 else []
    for size in range(max(low, 2), high + 1):
        grams.extend(" ".join(tokens[i:i + size]) for i in range(len(tokens) - size + 1))
    return grams


class MorphemeNgrams:
    """A picklable `analyzer=` for CountVectorizer/TfidfVectorizer: Analysis -> morpheme n-grams.

    Given a plain string it analyses it on the spot (one Kiwi call per document: fine for a few, slow for
    many; put `Analyse()` in front of the vectoriser instead).
    """

    def __init__(self, ngram_range: tuple[int, int] = (1, 2), with_tags: bool = True, content_only: bool = False):
        self.ngram_range = ngram_range
        self.with_tags = with_tags
        self.content_only = content_only

    def __call__(self, document: Analysis | str) -> list[str]:
        if isinstance(document, str):
            document = analyze([document])[0]
        return ngrams(morpheme_tokens(document, self.with_tags, self.content_only), self.ngram_range)

    def __repr__(self) -> str:
        return (f"MorphemeNgrams(ngram_range={self.ngram_range}, with_tags={self.with_tags}, "
                f"content_only={self.content_only})")


class CharacterNgrams:
    """A picklable `analyzer=`: character n-grams of the text inside word boundaries (like 'char_wb'),
    for Analysis objects or strings."""

    def __init__(self, ngram_range: tuple[int, int] = (1, 3)):
        self.ngram_range = ngram_range

    def __call__(self, document: Analysis | str) -> list[str]:
        text = document.text if isinstance(document, Analysis) else document
        grams = []
        low, high = self.ngram_range
        for word in text.lower().split():
            padded = f" {word} "
            for size in range(low, high + 1):
                grams.extend(padded[i:i + size] for i in range(len(padded) - size + 1))
        return grams

    def __repr__(self) -> str:
        return f"CharacterNgrams(ngram_range={self.ngram_range})"


# Morphemes whose neighbours are worth adding: nouns, predicates, roots, adverbs, numerals, foreign words.
NEIGHBOUR_TAGS = frozenset({"NNG", "NNP", "VV", "VA", "XR", "SL", "NR", "MAG"})


def neighbour_queries(analysis: Analysis, indices: Iterable[int] | None = None) -> list[tuple[str, str]]:
    """The (form, Kiwi tag) of each morpheme of `analysis` (or of those at `indices`) whose neighbours
    are wanted."""
    chosen = range(len(analysis)) if indices is None else indices
    return [(analysis.forms[i], analysis.tags[i]) for i in chosen if to_sejong(analysis.tags[i]) in NEIGHBOUR_TAGS]


def prefetch_neighbours(analyses: Sequence[Analysis], top_n: int,
                        indices: Sequence[Iterable[int]] | None = None) -> None:
    """Look up the neighbours of every morpheme of a batch (or of the morphemes at `indices[k]` in
    `analyses[k]`) at once: one cache query, one progress bar."""
    chosen = indices if indices is not None else [None] * len(analyses)
    neighbours((query for analysis, where in zip(analyses, chosen) for query in neighbour_queries(analysis, where)),
               top_n)


def neighbour_tokens(analysis: Analysis, top_n: int, indices: Iterable[int] | None = None) -> list[tuple[str, ...]]:
    """For each morpheme of `analysis`, 'form/TAG' of its `top_n` nearest morphemes in Kiwi's language model,
    nearest first; none for particles, endings, punctuation, morphemes the model does not know, and
    morphemes outside `indices` when it is given."""
    wanted = set(range(len(analysis)) if indices is None else indices)
    found = neighbour_names(neighbour_queries(analysis, sorted(wanted)), top_n)
    return [found[(form, tag)] if i in wanted and to_sejong(tag) in NEIGHBOUR_TAGS else ()
            for i, (form, tag) in enumerate(zip(analysis.forms, analysis.tags))]


class MorphemeNeighbours:
    """A picklable `analyzer=`: Analysis -> 'form/TAG' of the `top_n` nearest morphemes of each content
    morpheme in Kiwi's language model.

    A title about 농구 then shares features with titles about 축구 and 배구, and a word never seen in
    training still speaks through its neighbours, which matters when the texts to classify are newer
    than the training data.
    """

    def __init__(self, top_n: int = 20):
        self.top_n = top_n

    def __call__(self, document: Analysis | str) -> list[str]:
        if isinstance(document, str):
            document = analyze([document])[0]
        return [token for tokens in neighbour_tokens(document, self.top_n) for token in tokens]

    def __repr__(self) -> str:
        return f"MorphemeNeighbours(top_n={self.top_n})"


class Analyse(BaseEstimator, TransformerMixin):
    """Pipeline step: texts -> Analysis objects, in one batch through the process-wide analyser."""

    def fit(self, texts: Iterable[str], y=None) -> "Analyse":
        return self

    def transform(self, texts: Iterable[str]) -> list[Analysis]:
        return analyze(list(texts))
