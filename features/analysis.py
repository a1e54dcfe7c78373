"""Kiwi morpheme analysis for whole batches of texts, memoised in memory and cached on disk."""
from __future__ import annotations

import contextlib
import gc
import operator
import os
import threading
import time
import warnings
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager, Iterable, Iterator

import joblib

from features import embeddings
from features.cache import AnalysisCache, default_cache_dir
from features.characters import without_lone_surrogates
from features.morphemes import Analysis
from features.normalize import nfc
from features.tags import to_sejong


# A progress bar factory: (label, total) -> a context manager with update(n), such as click.progressbar.
ProgressFactory = Callable[[str, int], ContextManager]
PROGRESS_MIN_TEXTS = 5000  # smaller batches finish before a bar would tell anything


_TOKEN_FIELDS = operator.attrgetter("form", "tag", "start", "end")

# Kiwi runs its language model with the widest SIMD kernels the CPU has (SSE4.1, AVX2, AVX-512 or NEON), and
# its output depends on them: its unquantised kernels ("none") move MRC's best span from 20.43 to 19.14 %.
# The MRC rows recorded on one machine did not come out the same on the next, an AMD EPYC with AVX2 (ROUGE-W
# 33.41 against 33.45), where other BLAS kernels changed nothing, and where SSE4.1 and AVX2 gave the same
# analyses and MRC scores. So an x86-64 CPU with AVX2, an AVX-512 one included, is asked for AVX2; others
# keep Kiwi's choice. Kiwi reads the variable when it is created.
KIWI_ARCH_VARIABLE = "KIWI_ARCH_TYPE"
COMPARABLE_KIWI_ARCH = "avx2"


def cpu_info() -> dict[str, str]:
    """The first processor's fields as Linux lists them in /proc/cpuinfo ("model name", "flags"...); empty
    elsewhere."""
    try:
        lines = Path("/proc/cpuinfo").read_text(errors="replace").splitlines()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in lines:
        if not line.strip():
            break
        name, _colon, value = line.partition(":")
        fields[name.strip()] = value.strip()
    return fields


def kiwi_model_version() -> str:
    """The version of Kiwi's model package (kiwipiepy-model), "unknown" without it."""
    try:
        import kiwipiepy_model
    except ImportError:
        return "unknown"
    return kiwipiepy_model.__version__


def kiwi_arch() -> str:
    """The SIMD kernels Kiwi is asked for: $KIWI_ARCH_TYPE when set, else avx2 where the CPU has it, else
    "default" (Kiwi's own choice)."""
    has_avx2 = "avx2" in cpu_info().get("flags", "").split()
    return os.environ.get(KIWI_ARCH_VARIABLE) or (COMPARABLE_KIWI_ARCH if has_avx2 else "default")


def _columns(text: str, tokens) -> Analysis:
    """Kiwi's tokens as an Analysis. One attrgetter pass and a transpose, because this runs for every
    morpheme of every text that is not cached, on the cores that Kiwi's own threads are using."""
    if not tokens:
        return Analysis(text, (), (), array("i"), array("i"))
    forms, tags, start_values, end_values = zip(*map(_TOKEN_FIELDS, tokens))
    starts, ends = array("i", start_values), array("i", end_values)
    if min(starts) < 0 or max(ends) > len(text):  # never seen, but offsets must fit the text
        starts = array("i", [min(max(s, 0), len(text)) for s in starts])
        ends = array("i", [min(max(e, s), len(text)) for s, e in zip(starts, ends)])
    if not all(map(operator.le, starts, starts[1:])):
        starts = _ordered_starts(starts)
    return Analysis(text, forms, tags, starts, ends)


def _ordered_starts(starts: array) -> array:
    """Kiwi restores contractions with offsets out of order: '냬' -> 냐고 [0,1), 하 [1,1), 어 [0,1).
    Pulling each start back to the next morpheme's start makes the morphemes of a contraction share its
    characters (all three cover '냬') and keeps spans in text order; ends are unchanged."""
    ordered = array("i", starts)
    for index in range(len(ordered) - 2, -1, -1):
        if ordered[index] > ordered[index + 1]:
            ordered[index] = ordered[index + 1]
    return ordered


@dataclass
class AnalysisStats:
    """What analysis cost in this process: Kiwi's time, and how many texts came from where."""
    seconds: float = 0.0
    analysed: int = 0
    characters: int = 0
    cache_hits: int = 0
    memory_hits: int = 0


# The most characters one text may have. Kiwi's time grows faster than a text's length (one text of a million
# characters ran for minutes where ten of 100,000 took seconds), and no KLUE text comes near: the longest, an
# MRC passage, has a few thousand. A longer text is refused, not analysed for minutes.
MAX_TEXT_CHARACTERS = 100_000


class TextTooLong(ValueError):
    """A text longer than MAX_TEXT_CHARACTERS, which is not analysed."""


def too_long(text: str) -> str | None:
    """Why `text` is refused, in words, or None when it is short enough: as written, and as the models read it
    (NFC can make a text up to three times longer: a text within the bound that NFC takes past it is refused
    where it is read, with its file and record, not when Kiwi is given it)."""
    length = len(text)
    if length <= MAX_TEXT_CHARACTERS:
        if length * 3 <= MAX_TEXT_CHARACTERS or (read := len(nfc(text))) <= MAX_TEXT_CHARACTERS:
            return None
        return (f"a text of {length:,} characters that is {read:,} in NFC, as the models read it (it starts "
                f"{text[:20]!r}), more than the {MAX_TEXT_CHARACTERS:,} one text may have; split it")
    return (f"a text of {length:,} characters (it starts {text[:20]!r}), more than the {MAX_TEXT_CHARACTERS:,} "
            f"one text may have; split it")


def usable_threads(requested: int | None) -> int:
    """Kiwi threads: `requested`, at most the cores this process may use (joblib's count: CPU affinity and
    container limits), with a warning when it asks for more; all of them when None. Kiwi starts every thread
    it is asked for, and a pool of 100,000 stalled instead of failing. None or 0: all the cores."""
    cores = joblib.cpu_count()
    if not requested:
        return cores
    if requested > cores:
        warnings.warn(f"{requested} Kiwi threads asked for, more than the {cores} cores this process may use: "
                      f"using {cores}", stacklevel=3)
        return cores
    return max(1, requested)


class MorphemeAnalyzer:
    """One lazily created Kiwi per process, its thread pool used through batch calls, a memory memo
    and a disk cache in front of it. Never pickled inside a model: models hold options, not this."""

    def __init__(self, num_workers: int | None = None, cache_dir: str | os.PathLike | None = None,
                 use_cache: bool = True, memo_limit: int = 2_000_000, progress: ProgressFactory | None = None):
        self.num_workers = usable_threads(num_workers)
        self.progress = progress
        self.cache_dir = cache_dir
        self.use_cache = use_cache
        self.memo_limit = memo_limit
        self._kiwi = None
        self._embeddings: embeddings.MorphemeEmbeddings | None = None
        self._cache: AnalysisCache | None = None
        self._memo: dict[str, Analysis] = {}
        self._neighbour_memo: dict[int, dict[tuple[str, str], tuple]] = {}
        self._neighbour_name_memo: dict[int, dict[tuple[str, str], tuple[str, ...]]] = {}
        self._lock = threading.Lock()
        self._embeddings_lock = threading.Lock()
        self.stats = AnalysisStats()

    @property
    def kiwi(self):
        with self._lock:
            if self._kiwi is None:
                from kiwipiepy import Kiwi

                arch = kiwi_arch()
                if arch != "default":
                    os.environ[KIWI_ARCH_VARIABLE] = arch
                self._kiwi = Kiwi(num_workers=self.num_workers)
            return self._kiwi

    @property
    def embeddings(self) -> embeddings.MorphemeEmbeddings:
        """The CoNg embeddings of Kiwi's model, read once per process (about 3 s, 90 MB) when a neighbour list
        or a similarity is first asked for."""
        with self._embeddings_lock:
            if self._embeddings is None:
                self._embeddings = embeddings.MorphemeEmbeddings.from_kiwi(self.kiwi)
            return self._embeddings

    def options_key(self) -> str:
        """Everything that changes an analysis: the analyser's versions and the options used."""
        import kiwipiepy

        return (f"kiwipiepy={kiwipiepy.__version__};model={kiwi_model_version()};arch={kiwi_arch()};"
                "tokenize=default;format=3")

    @property
    def cache(self) -> AnalysisCache | None:
        if not self.use_cache:
            return None
        if self._cache is None:
            self._cache = AnalysisCache(self.cache_dir or default_cache_dir(), self.options_key())
        return self._cache

    def analyze(self, texts: Iterable[str]) -> list[Analysis]:
        """The analysis of each text, in order. Repeated texts are analysed once."""
        texts = list(texts)
        wanted = [text for text in dict.fromkeys(texts) if text not in self._memo]
        for text in wanted:
            problem = too_long(text)
            if problem:
                raise TextTooLong(problem)
        self.stats.memory_hits += len(texts) - len(wanted)
        if wanted:
            gc_was_enabled = gc.isenabled()
            gc.disable()  # building millions of small tuples otherwise triggers full collections
            try:
                cache = self.cache
                keys = cache.keys(wanted) if cache is not None else {}
                found = cache.get_many(keys) if cache is not None else {}
                self.stats.cache_hits += len(found)
                missing = [text for text in wanted if text not in found]
                if missing:
                    fresh = self._run_kiwi(missing)
                    if cache is not None:
                        cache.put_many([(keys[text], analysis) for text, analysis in fresh.items()])
                    found.update(fresh)
                if len(self._memo) + len(found) > self.memo_limit:
                    self._memo.clear()
                self._memo.update(found)
            finally:
                if gc_was_enabled:
                    gc.enable()
        return [self._memo[text] if text in self._memo else found[text] for text in texts]

    def _run_kiwi(self, texts: list[str]) -> dict[str, Analysis]:
        start = time.perf_counter()
        # Kiwi raises on a lone surrogate, and one such text would lose the whole batch; the loaders replace
        # them, and this covers texts handed over from Python. U+FFFD keeps every offset in place.
        readable = [without_lone_surrogates(text) for text in texts]
        tokenized = zip(texts, self.kiwi.tokenize(readable))
        if self.progress is not None and len(texts) >= PROGRESS_MIN_TEXTS:
            results = {}
            with _shown(self.progress("Kiwi analysis", len(texts))) as bar:
                for number, (text, tokens) in enumerate(tokenized, start=1):
                    results[text] = _columns(text, tokens)
                    if number % 512 == 0 or number == len(texts):
                        bar.update(512 if number % 512 == 0 else number % 512)
        else:
            results = {text: _columns(text, tokens) for text, tokens in tokenized}
        self.stats.seconds += time.perf_counter() - start
        self.stats.analysed += len(texts)
        self.stats.characters += sum(map(len, texts))
        return results

    def neighbours(self, morphemes: Iterable[tuple[str, str]], top_n: int) -> dict[tuple[str, str], tuple]:
        """The `top_n` morphemes nearest to each (form, Kiwi tag) in the embeddings of Kiwi's CoNg language
        model, as (form, tag, cosine) triples, nearest first; empty for a morpheme the model has no vector of
        its own for (most unknown proper nouns, foreign words). Computed exactly (features/embeddings.py), so
        the same on every CPU; looked up once per morpheme, then memoised and cached on disk."""
        memo = self._neighbour_memo.setdefault(top_n, {})
        wanted = [m for m in dict.fromkeys(morphemes) if m not in memo]
        if wanted:
            cache = self.cache
            keys = ({m: cache.neighbour_key(m, top_n, embeddings.METHOD) for m in wanted} if cache is not None
                    else {})
            found = cache.get_neighbours(keys) if cache is not None else {}
            missing = [m for m in wanted if m not in found]
            if missing:
                fresh = self._look_up_neighbours(missing, top_n)
                if cache is not None:
                    cache.put_neighbours([(keys[m], fresh[m]) for m in missing])
                found.update(fresh)
            memo.update(found)
        return memo

    def neighbour_names(self, morphemes: Iterable[tuple[str, str]],
                        top_n: int) -> dict[tuple[str, str], tuple[str, ...]]:
        """The neighbours of each (form, Kiwi tag) as features name them, 'form/TAG' with Sejong tags, nearest
        first; memoised, as a vectoriser asks for the same morphemes once per text."""
        names = self._neighbour_name_memo.setdefault(top_n, {})
        wanted = [m for m in dict.fromkeys(morphemes) if m not in names]
        if wanted:
            found = self.neighbours(wanted, top_n)
            for morpheme in wanted:
                names[morpheme] = tuple(f"{near}/{to_sejong(near_tag)}" for near, near_tag, _score in found[morpheme])
        return names

    def _look_up_neighbours(self, morphemes: list[tuple[str, str]], top_n: int) -> dict[tuple[str, str], tuple]:
        start = time.perf_counter()
        table = self.embeddings
        progress = (_shown(self.progress("Kiwi neighbours", len(morphemes))) if self.progress is not None
                    and len(morphemes) >= PROGRESS_MIN_TEXTS else contextlib.nullcontext())
        with progress as bar:
            results = table.nearest(morphemes, top_n, advance=bar.update if bar is not None else None)
        self.stats.seconds += time.perf_counter() - start
        return results

    def similarity(self, first: tuple[str, str], second: tuple[str, str]) -> float | None:
        """Cosine of two (form, Kiwi tag) morphemes in the embeddings of Kiwi's CoNg language model, computed
        exactly; None when the model has no vector of its own for one of them. A call takes a few
        microseconds, so it is neither memoised nor cached: a memo of every pair asked would only grow."""
        return self.embeddings.similarity(first, second)

    def clear_memo(self) -> None:
        self._memo.clear()
        self._neighbour_memo.clear()


_bars_on_screen = 0  # progress bars now drawn, so that heartbeats (baselines.runtime.progress) keep quiet meanwhile


@contextlib.contextmanager
def _shown(bar_context: contextlib.AbstractContextManager) -> Iterator:
    global _bars_on_screen
    with bar_context as bar:
        _bars_on_screen += 1
        try:
            yield bar
        finally:
            _bars_on_screen -= 1


def show_progress(factory: ProgressFactory) -> None:
    """Draw progress bars with `factory` where the process-wide analyser has none yet (the Python API's;
    the CLI configures its own, or none with --quiet)."""
    current = analyzer()
    if current.progress is None:
        current.progress = factory


def progress_shown() -> bool:
    """Whether a progress bar of the analysis is being drawn now."""
    return _bars_on_screen > 0


_analyzer: MorphemeAnalyzer | None = None


def configure(num_workers: int | None = None, cache_dir: str | os.PathLike | None = None,
              use_cache: bool | None = None, progress: ProgressFactory | None = None) -> MorphemeAnalyzer:
    """Set up the process-wide analyser (the CLI's --no-cache, --cache-dir and --quiet end here)."""
    global _analyzer
    if use_cache is None:
        use_cache = os.environ.get("KLUE_BASELINES_NO_CACHE", "") in ("", "0")
    _analyzer = MorphemeAnalyzer(num_workers=num_workers, cache_dir=cache_dir, use_cache=use_cache,
                                 progress=progress)
    return _analyzer


def worker_settings(share_of_cores: int = 1) -> dict:
    """What a worker process needs to analyse as this one does: the same disk cache (so that it reads what
    this process analysed, and the workers share what they add) and Kiwi threads for its share of the cores."""
    current = analyzer()
    return {"cache_dir": current.cache_dir, "use_cache": current.use_cache,
            "num_workers": max(1, current.num_workers // max(1, share_of_cores))}


def adopt(settings: dict) -> MorphemeAnalyzer:
    """Configure this (worker) process's analyser from worker_settings, unless it already is: a worker that
    runs several jobs keeps its Kiwi and its memo. Analyses do not depend on the thread count."""
    if _analyzer is None or (_analyzer.cache_dir, _analyzer.use_cache, _analyzer.num_workers) != (
            settings["cache_dir"], settings["use_cache"], settings["num_workers"]):
        configure(**settings)
    return _analyzer


def analyzer() -> MorphemeAnalyzer:
    if _analyzer is None:
        configure()
    return _analyzer


def analyze(texts: Iterable[str]) -> list[Analysis]:
    """Morpheme analyses of `texts` with the process-wide analyser (batched, memoised, cached)."""
    return analyzer().analyze(texts)


def neighbours(morphemes: Iterable[tuple[str, str]], top_n: int) -> dict[tuple[str, str], tuple]:
    """Nearest morphemes in Kiwi's language model, with the process-wide analyser (memoised, cached)."""
    return analyzer().neighbours(morphemes, top_n)


def neighbour_names(morphemes: Iterable[tuple[str, str]], top_n: int) -> dict[tuple[str, str], tuple[str, ...]]:
    """Nearest morphemes in Kiwi's language model as 'form/TAG' (Sejong tags), with the process-wide analyser."""
    return analyzer().neighbour_names(morphemes, top_n)


def similarity(first: tuple[str, str], second: tuple[str, str]) -> float | None:
    """Similarity of two morphemes in Kiwi's language model, with the process-wide analyser."""
    return analyzer().similarity(first, second)


def stats() -> AnalysisStats:
    return analyzer().stats
