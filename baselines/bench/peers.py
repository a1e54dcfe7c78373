"""`bench peers`: the tools a user would pick instead, against our default and our fast model, on the same files.

Each peer runs with fixed settings, written here, and chooses what it chooses on its training file only (a 10 %
hold-out of it, drawn with the run's seed); its predictions are scored with this toolkit's scorer. The peer's
choice runs once; then the peer with its chosen settings, our default model and our fast model run in turn, three
rounds by default, each run in a new Python process of its own with an empty analysis cache, so that seconds and
peak memory are each one's alone. Every run of a system gives the same scores; its seconds and peak memory are
the median of its runs, with their spread, and each ratio to the peer is taken round by round (the two ran
minutes apart on the same machine), so that it holds on any machine and is not one lucky run.

- YNAT, NLI, RE: fastText 0.9.2 supervised (the fasttext-wheel build), one thread, on raw text with character
  n-grams (minn 2, maxn 4) or on Kiwi's morphemes as form/tag; wordNgrams 1 or 2; (epoch, lr) (5, 0.1),
  (25, 0.1) or (10, 0.5); dim 100. It reads YNAT's title; NLI's premise and hypothesis joined by '[SEP]'; RE's
  sentence with its subject between '<S>' and '</S>' and its object between '<O>' and '</O>' (RE's AUPRC reads
  fastText's probability of every relation).
- STS: the cosine of the two sentences' TF-IDF vectors (scikit-learn, sublinear tf, fitted on the training
  sentences) over character n-grams inside words, 1-3 or 2-4, or words and word pairs; the threshold of cosine
  with the best F1 on the training pairs (score >= 3 is similar), and least squares' slope, map the cosine to
  3 + slope x (cosine - threshold), clipped to 0-5.
- NER: sklearn-crfsuite on characters only: the character and those at -2..+2, the bigrams with the previous
  and the next one, and three flags (digit, Latin letter, Hangul syllable); L-BFGS, 100 iterations,
  c1 = c2 in (0.03, 0.1, 0.3).
- DP: UDPipe 1's parser (ufal.udpipe 1.4) on the data's tags (the eojeol's Sejong tag pattern as UPOS and
  XPOS, its lemmas as LEMMA), without tokenizer or tagger, single_root=0 (KLUE's root relation is not 'root'),
  its other options its defaults (10 iterations); nothing is chosen, and no heldout data is given (UDPipe
  1.4 crashes evaluating heldout sentences with relations its training part lacks).
"""
from __future__ import annotations

import importlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from kiwipiepy import Kiwi

from baselines import errors
from baselines.data.locate import locate
from baselines.runner import evaluate as evaluation, results
from baselines.errors import UsageError
from baselines.runtime.provenance import code_version, machine, versions


from baselines.runtime import memory
from baselines.runtime.parallel import answer_in_new_process, in_new_process
from baselines.runner.registry import all_tasks, get_task
from baselines.taskspec import PEER_MARKS, TaskSpec

HOLD_OUT = 0.1
ROUNDS = 3  # runs of each system: the median of three is not one lucky run
FAST_MODEL = "fast"  # every task's model for speed (the default is its most accurate)
EXTRA = "pip install 'klue-baselines[peers]'"


def _needs(module: str, what: str) -> Any:
    """The peer's library, or a UsageError that says which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(f"{what} is not installed: {EXTRA}") from None


def hold_out(task: TaskSpec, train: Sequence, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(training, held-out) indices of `train`: a seeded 10 % of its groups held out (TaskSpec.reading.group: NLI's
    premise, RE's sentence; a record is a group of its own elsewhere). Records that share a group share their
    words, and a peer that saw a premise with two of its labels learns to give its third hypothesis another
    one: below chance, on a hold-out of single records."""
    groups = task.reading.group_keys(train)
    distinct = list(dict.fromkeys(groups))
    order = np.random.default_rng(seed).permutation(len(distinct))
    held_groups = {distinct[i] for i in order[len(distinct) - max(1, int(round(len(distinct) * HOLD_OUT))):]}
    held = np.array([i for i, group in enumerate(groups) if group in held_groups], dtype=int)
    inner = np.array([i for i, group in enumerate(groups) if group not in held_groups], dtype=int)
    return inner, held


def held_out_score(task: TaskSpec, train: list, held: np.ndarray, predicted: Sequence[dict],
                   resources: dict) -> float:
    """The task's first headline metric of the predictions for the held-out records, one row each without its
    guid ({'tags': [...]}, {'label': ..., 'probs': {...}})."""
    rows = [{"guid": train[i].guid, **row} for i, row in zip(held, predicted)]
    return task.scoring.score([train[i] for i in held], rows, resources)[task.scoring.headline[0]]


class Clock:
    """Seconds per stage of a peer's run."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    def measure(self, stage: str, work: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        result = work()
        self.seconds[stage] = round(self.seconds.get(stage, 0.0) + time.perf_counter() - start, 3)
        return result


# --- YNAT, NLI, RE: fastText ------------------------------------------------------------------------------------

FASTTEXT_GRID = [{"input": representation, "wordNgrams": ngrams, "epoch": epoch, "lr": lr}
                 for representation in ("characters", "morphemes") for ngrams in (1, 2)
                 for epoch, lr in ((5, 0.1), (25, 0.1), (10, 0.5))]
# Between NLI's premise and hypothesis: a token in no sentence. Not fastText's own '</s>': its reader ends the
# line there, and the hypothesis would be read as a line without a label.


def kiwi_morphemes(texts: Sequence[str]) -> list[str]:
    """Each text as Kiwi's morphemes, 'form/tag' separated by spaces (raw Kiwi, as a fastText user runs it); the
    separator and the entity marks stay tokens of their own."""
    kept = set(PEER_MARKS)
    runs = [[" ".join(run) for run in _split_at(text.split(" "), kept)] for text in texts]
    analysed = iter(" ".join(f"{token.form}/{token.tag}" for token in tokens)
                    for tokens in Kiwi().tokenize([run for parts in runs for run in parts if run not in kept]))
    return [" ".join(run if run in kept else next(analysed) for run in parts) for parts in runs]


def _split_at(words: Sequence[str], kept: set[str]) -> list[list[str]]:
    """The words in runs, each token of `kept` a run of its own."""
    runs: list[list[str]] = []
    for word in words:
        if word in kept or not runs or runs[-1][0] in kept:
            runs.append([word])
        else:
            runs[-1].append(word)
    return runs


def _fasttext_fit(texts: Sequence[str], labels: Sequence[str], setting: dict, seed: int):
    fasttext = _needs("fasttext", "fastText (fasttext-wheel)")
    with tempfile.TemporaryDirectory(prefix="klue-peers-") as folder:
        path = Path(folder) / "train.txt"
        path.write_text("".join(f"__label__{label} {text}\n" for text, label in zip(texts, labels)),
                        encoding="utf-8")
        characters = setting["input"] == "characters"
        return fasttext.train_supervised(input=str(path), lr=setting["lr"], epoch=setting["epoch"],
                                         wordNgrams=setting["wordNgrams"], minn=2 if characters else 0,
                                         maxn=4 if characters else 0, dim=100, thread=1, seed=seed, verbose=0)


def _fasttext_predict(model, texts: Sequence[str]) -> list[dict]:
    """For each text, the likeliest label and every label's probability. One text at a time, through the
    binding's own predict: fasttext-wheel 0.9.2's list predict repeats each text's first probability for every
    label, and its Python predict of one text fails under NumPy 2 (np.array(..., copy=False))."""
    rows = []
    for text in texts:
        ranked = model.f.predict(text.replace("\n", " ") + "\n", -1, 0.0, "strict")  # (probability, label), best first
        rows.append({"label": ranked[0][1].removeprefix("__label__"),
                     "probs": {label.removeprefix("__label__"): round(float(p), 6) for p, label in ranked}})
    return rows


def _with_every_label(task: TaskSpec, rows: list[dict], resources: dict) -> list[dict]:
    """Rows with a probability for every relation (0 for one that fastText never saw in training) where the task's
    score reads them (RE's AUPRC); other tasks' rows without probabilities, as their scores read none."""
    if not task.benchmarks.peer_probabilities:
        return [{key: value for key, value in row.items() if key != "probs"} for row in rows]
    relations = resources["relations"]
    return [{**row, "probs": {relation: row["probs"].get(relation, 0.0) for relation in relations}} for row in rows]


def fasttext_select(task: TaskSpec, train: list, seed: int, clock: Clock, log, resources: dict) -> dict:
    """fastText's setting, chosen by the first headline metric on the hold-out (the first of the best on a tie)."""
    labels = task.modelling.targets(train)
    raw = {"characters": [task.benchmarks.peer_text(record) for record in train]}
    raw["morphemes"] = clock.measure("selection", lambda: kiwi_morphemes(raw["characters"]))
    inner, held = hold_out(task, train, seed)
    table = []
    for setting in FASTTEXT_GRID:
        texts = raw[setting["input"]]
        model = clock.measure("selection", lambda: _fasttext_fit([texts[i] for i in inner],
                                                                 [labels[i] for i in inner], setting, seed))
        predicted = _with_every_label(task, _fasttext_predict(model, [texts[i] for i in held]), resources)
        score = held_out_score(task, train, held, predicted, resources)
        table.append({**setting, task.scoring.headline[0]: round(score, 4)})
        log(f"{task.code}: fastText {setting}: {score:.2f} on the hold-out")
    chosen = max(zip(table, FASTTEXT_GRID), key=lambda pair: pair[0][task.scoring.headline[0]])[1]
    return {"chosen": chosen, "selection": table}


def fasttext_peer(task: TaskSpec, train: list, dev: list, chosen: dict, seed: int, clock: Clock,
                  resources: dict) -> list[dict]:
    """fastText with the chosen setting, fitted on the whole training file, predicting the dev file."""
    labels = task.modelling.targets(train)
    raw = [task.benchmarks.peer_text(record) for record in list(train) + list(dev)]
    texts = clock.measure("analysis", lambda: kiwi_morphemes(raw)) if chosen["input"] == "morphemes" else raw
    model = clock.measure("fit", lambda: _fasttext_fit(texts[:len(train)], labels, chosen, seed))
    predicted = clock.measure("predict", lambda: _fasttext_predict(model, texts[len(train):]))
    return _with_every_label(task, [{"guid": record.guid, **row} for record, row in zip(dev, predicted)], resources)


# --- STS: TF-IDF cosine ---------------------------------------------------------------------------------------

TFIDF_VIEWS = {"characters 1-3": {"analyzer": "char_wb", "ngram_range": (1, 3)},
               "characters 2-4": {"analyzer": "char_wb", "ngram_range": (2, 4)},
               "words 1-2": {"analyzer": "word", "ngram_range": (1, 2), "token_pattern": r"\S+"}}


def tfidf_vectorizer(view: str, pairs: Sequence[tuple[str, str]]):
    """A TF-IDF of the view, its vocabulary and weights fitted on the sentences of `pairs`."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    sentences = [sentence for pair in pairs for sentence in pair]
    return TfidfVectorizer(sublinear_tf=True, **TFIDF_VIEWS[view]).fit(sentences)


def tfidf_cosines(vectorizer, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    """The cosine of the two sentences of each pair in the vectorizer's TF-IDF space."""
    left = vectorizer.transform([first for first, _second in pairs])
    right = vectorizer.transform([second for _first, second in pairs])
    return np.asarray(left.multiply(right).sum(axis=1)).ravel()  # rows are L2-normalised: the dot is the cosine


def cosine_map(cosines: np.ndarray, scores: np.ndarray) -> dict:
    """The threshold and linear map of cosines to 0-5 chosen on training pairs: the threshold is the cosine above
    which a pair counts as similar (score >= 3) with the best F1 on them; the slope is least squares'; the map
    sends the threshold to 3, so that the mapped score is >= 3 exactly where the cosine reaches the threshold."""
    from sklearn.metrics import f1_score
    similar = scores >= 3.0
    candidates = np.unique(np.quantile(cosines, np.linspace(0.02, 0.98, 97)))
    f1s = [f1_score(similar, cosines >= threshold, zero_division=0) for threshold in candidates]
    threshold = float(candidates[int(np.argmax(f1s))])
    slope = float(np.polyfit(cosines, scores, 1)[0])
    return {"threshold": round(threshold, 6), "slope": round(slope, 6)}


def mapped_scores(cosines: np.ndarray, mapping: dict) -> np.ndarray:
    return np.clip(3.0 + mapping["slope"] * (cosines - mapping["threshold"]), 0.0, 5.0)


def tfidf_fit(view: str, pairs: Sequence[tuple[str, str]], scores: np.ndarray) -> tuple[Any, dict]:
    """The view's TF-IDF fitted on the training sentences, and its cosines' threshold and map fitted on their
    pairs."""
    vectorizer = tfidf_vectorizer(view, pairs)
    return vectorizer, cosine_map(tfidf_cosines(vectorizer, pairs), scores)


def tfidf_select(task: TaskSpec, train: list, seed: int, clock: Clock, log, resources: dict) -> dict:
    """The TF-IDF view, chosen by Pearson r on the hold-out (the first of the best on a tie), fitted on the
    rest."""
    pairs, scores = task.reading.plain_inputs(train), np.asarray(task.modelling.targets(train), dtype=float)
    inner, held = hold_out(task, train, seed)
    table = []
    for view in TFIDF_VIEWS:
        def held_out_scores():
            vectorizer, mapping = tfidf_fit(view, [pairs[i] for i in inner], scores[inner])
            return mapped_scores(tfidf_cosines(vectorizer, [pairs[i] for i in held]), mapping)
        predicted = clock.measure("selection", held_out_scores)
        score = held_out_score(task, train, held, [{"score": float(value)} for value in predicted], resources)
        table.append({"view": view, task.scoring.headline[0]: round(score, 4)})
        log(f"sts: TF-IDF cosine over {view}: {score:.2f} on the hold-out")
    chosen = max(table, key=lambda row: row[task.scoring.headline[0]])["view"]
    return {"chosen": {"view": chosen}, "selection": table}


def tfidf_sts(task: TaskSpec, train: list, dev: list, chosen: dict, seed: int, clock: Clock,
              resources: dict) -> list[dict]:
    """The chosen view fitted on the training file (its TF-IDF, threshold and map), scoring the dev pairs."""
    pairs, scores = task.reading.plain_inputs(train), np.asarray(task.modelling.targets(train), dtype=float)
    vectorizer, mapping = clock.measure("fit", lambda: tfidf_fit(chosen["view"], pairs, scores))
    plain_inputs = task.reading.plain_inputs  # read inside the timed step, as before the groups
    predicted = clock.measure("predict", lambda: mapped_scores(tfidf_cosines(vectorizer, plain_inputs(dev)), mapping))
    return [{"guid": record.guid, "score": round(float(value), 6)} for record, value in zip(dev, predicted)]


# --- NER: a plain character CRF -------------------------------------------------------------------------------

CRF_C = (0.03, 0.1, 0.3)


def character_features(text: str) -> list[dict[str, Any]]:
    """Per character: itself and its neighbours at -2..+2, its bigrams with the previous and the next one, and
    whether it is a digit, a Latin letter or a Hangul syllable."""
    padded = "^^" + text + "$$"
    rows = []
    for index, character in enumerate(text):
        at = index + 2
        rows.append({"c": character, "c-2": padded[at - 2], "c-1": padded[at - 1], "c+1": padded[at + 1],
                     "c+2": padded[at + 2], "b-1": padded[at - 1:at + 1], "b+1": padded[at:at + 2],
                     "digit": character.isdigit(), "latin": character.isascii() and character.isalpha(),
                     "hangul": "\uac00" <= character <= "\ud7a3"})
    return rows


def _crf(c: float):
    crfsuite = _needs("sklearn_crfsuite", "sklearn-crfsuite")
    return crfsuite.CRF(algorithm="lbfgs", c1=c, c2=c, max_iterations=100)


def crf_select(task: TaskSpec, train: list, seed: int, clock: Clock, log, resources: dict) -> dict:
    """The CRF's c1 = c2, chosen by entity macro F1 on the hold-out (the first of the best on a tie)."""
    tags = task.modelling.targets(train)
    features = [character_features(text) for text in task.reading.plain_inputs(train)]
    inner, held = hold_out(task, train, seed)
    table = []
    for c in CRF_C:
        model = clock.measure("selection", lambda: _crf(c).fit([features[i] for i in inner], [tags[i] for i in inner]))
        score = held_out_score(task, train, held, [{"tags": list(tags)} for tags in model.predict(
            [features[i] for i in held])], resources)
        table.append({"c1": c, "c2": c, task.scoring.headline[0]: round(score, 4)})
        log(f"ner: plain CRF c1 = c2 = {c}: {score:.2f} on the hold-out")
    chosen = max(table, key=lambda row: row[task.scoring.headline[0]])["c1"]
    return {"chosen": {"c1": chosen, "c2": chosen, "max_iterations": 100}, "selection": table}


def plain_crf_ner(task: TaskSpec, train: list, dev: list, chosen: dict, seed: int, clock: Clock,
                  resources: dict) -> list[dict]:
    """The plain CRF with the chosen penalty, fitted on the whole training file, tagging the dev file."""
    tags = task.modelling.targets(train)
    plain_inputs = task.reading.plain_inputs
    features = clock.measure("features", lambda: [character_features(text) for text in plain_inputs(train)])
    model = clock.measure("fit", lambda: _crf(chosen["c1"]).fit(features, tags))
    dev_features = clock.measure("features", lambda: [character_features(text) for text in plain_inputs(dev)])
    predicted = clock.measure("predict", lambda: model.predict(dev_features))
    return [{"guid": record.guid, "tags": list(row)} for record, row in zip(dev, predicted)]


# --- DP: UDPipe 1 ---------------------------------------------------------------------------------------------

def udpipe_conllu(records: Sequence, trees: Sequence[tuple[Sequence[int], Sequence[str]]] | None) -> str:
    """Sentences as CoNLL-U for UDPipe: the eojeol's Sejong tag pattern as UPOS and XPOS (its parser reads
    UPOS), its lemmas as LEMMA, and the gold tree where it is given ('_' otherwise)."""
    blocks = []
    for number, record in enumerate(records):
        heads, deprels = trees[number] if trees is not None else (None, None)
        lines = [f"# sent_id = {record.guid}"]
        for index, word in enumerate(record.words, start=1):
            tag = word.pos or "NA"
            lemma = (word.lemma or word.form).replace(" ", "+")
            head, deprel = (str(heads[index - 1]), deprels[index - 1]) if heads is not None else ("_", "_")
            lines.append("\t".join([str(index), word.form, lemma, tag, tag, "_", head, deprel, "_", "_"]))
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks) + "\n"


def _udpipe_sentences(udpipe, text: str):
    reader = udpipe.InputFormat.newConlluInputFormat()
    reader.setText(text)
    sentences, sentence, error = udpipe.Sentences(), udpipe.Sentence(), udpipe.ProcessingError()
    while reader.nextSentence(sentence, error):
        sentences.append(sentence)
        sentence = udpipe.Sentence()
    if error.occurred():
        raise UsageError(f"UDPipe could not read the CoNLL-U it was given: {error.message}")
    return sentences


def udpipe_select(task: TaskSpec, train: list, seed: int, clock: Clock, log, resources: dict) -> dict:
    """Nothing to choose: UDPipe's defaults, but a single root, which wants the relation 'root' that KLUE's
    roots (VP, NP ...) do not carry."""
    return {"chosen": {"parser": "single_root=0", "tokenizer": "none", "tagger": "none"}}


def udpipe_dp(task: TaskSpec, train: list, dev: list, chosen: dict, seed: int, clock: Clock,
              resources: dict) -> list[dict]:
    """UDPipe's parser trained on the whole training file, then parsing the dev file on its gold tags."""
    udpipe = _needs("ufal.udpipe", "UDPipe (ufal.udpipe)")
    trees = task.modelling.targets(train)
    training = _udpipe_sentences(udpipe, udpipe_conllu(train, trees))
    error = udpipe.ProcessingError()
    options = chosen["parser"]
    data = clock.measure("fit", lambda: udpipe.Trainer.train("morphodita_parsito", training, udpipe.Sentences(),
                                                             "none", "none", options, error))
    if error.occurred():
        raise UsageError(f"UDPipe's trainer failed: {error.message}")
    with tempfile.TemporaryDirectory(prefix="klue-peers-") as folder:
        path = Path(folder) / "dp.udpipe"
        path.write_bytes(data)
        model = udpipe.Model.load(str(path))
    pipeline = udpipe.Pipeline(model, "conllu", udpipe.Pipeline.NONE, udpipe.Pipeline.DEFAULT, "conllu")
    parsed = clock.measure("predict", lambda: pipeline.process(udpipe_conllu(dev, None), error))
    if error.occurred():
        raise UsageError(f"UDPipe's parser failed: {error.message}")
    rows = []
    for record, block in zip(dev, [b for b in parsed.strip().split("\n\n") if b.strip()]):
        words = [line.split("\t") for line in block.split("\n") if line and not line.startswith("#")]
        rows.append({"guid": record.guid, "heads": [int(columns[6]) for columns in words],
                     "deprels": [columns[7] for columns in words]})
    return rows


# By kind (Benchmarks.peer, which each task declares): the peer's name, how it chooses its settings on the
# training file, and how it runs with them.
PEER_KINDS: dict[str, tuple[str, Callable, Callable]] = {
    "fasttext": ("fastText 0.9.2", fasttext_select, fasttext_peer),
    "tfidf-cosine": ("TF-IDF cosine (scikit-learn)", tfidf_select, tfidf_sts),
    "plain-crf": ("plain character CRF (sklearn-crfsuite)", crf_select, plain_crf_ner),
    "udpipe": ("UDPipe 1.4 parser", udpipe_select, udpipe_dp),
}


def peer_of(code: str) -> tuple[str, Callable, Callable]:
    """The (name, select, run) of the peer that the task declares; a UsageError naming the tasks that have one."""
    task = get_task(code)
    if task.benchmarks is None or task.benchmarks.peer is None:
        with_peers = [other.code for other in all_tasks() if other.benchmarks and other.benchmarks.peer]
        raise UsageError(f"bench peers knows peers for {', '.join(with_peers)}, not {code}")
    return PEER_KINDS[task.benchmarks.peer]


SYSTEMS = ("peer", "default", "fast")  # the order each round runs them in


def measure(code: str, who: str, seed: int, data: dict, chosen: dict | None = None,
            log: Callable[[str], None] = lambda message: None) -> dict:
    """One step, in this process (a fresh one: bench_peers starts one per step): the peer's choice of settings
    on the training file ('select'); the peer with them ('peer'); or one of ours, the task's default model or its
    fast one as `run` trains and scores it ('default', 'fast'). For the last three, the headline scores, seconds
    and peak memory."""
    task = get_task(code)
    located = locate(task, data.get("data_dir"), data.get("train"), data.get("dev"))
    if who in ("default", "fast"):
        model = task.modelling.default_model if who == "default" else FAST_MODEL
        record, _predictions = evaluation.evaluate_task(task, located, model_name=model, seed=seed, log=log)
        # Scoring is left out of both sides' totals: the peer's predictions are scored by this toolkit too.
        seconds = {stage: value for stage, value in record["seconds"].items() if stage != "score"}
        return {"name": f"klue-baselines {record['model']}",
                "metrics": {metric: record["metrics"][metric] for metric in task.scoring.headline},
                "seconds": seconds, "total_seconds": round(sum(seconds.values()), 3),
                "peak_rss_mb": record.get("peak_rss_mb")}
    memory.reset_peak()
    clock = Clock()
    name, select, run = peer_of(code)
    train = clock.measure("load", lambda: task.reading.load(located.train))
    resources = task.resources.load_resources(located.extras)
    if who == "select":
        chosen = select(task, train, seed, clock, log, resources)
        return {**chosen, "seconds": clock.seconds.get("selection", 0.0), "peak_rss_mb": memory.rounded_peak_mb()}
    dev = clock.measure("load", lambda: task.reading.load(located.dev))
    rows = run(task, train, dev, chosen, seed, clock, resources)
    metrics = task.scoring.score(dev, rows, resources)
    return {"name": name, "metrics": {metric: round(metrics[metric], 6) for metric in task.scoring.headline},
            "settings": chosen, "seconds": clock.seconds, "total_seconds": round(sum(clock.seconds.values()), 3),
            "peak_rss_mb": memory.rounded_peak_mb()}


def spread(values: Sequence[float], digits: int) -> dict:
    """The median, least and greatest of `values`, and each of them, rounded."""
    return {"median": round(float(np.median(values)), digits), "min": round(min(values), digits),
            "max": round(max(values), digits), "runs": [round(value, digits) for value in values]}


def summary(runs: list[dict], code: str) -> dict:
    """One system's runs as one row: its scores (the same in every run, or a UsageError), the stages of its
    median run, and the spread of its seconds and peak memory."""
    scores = {json.dumps(run["metrics"], sort_keys=True) for run in runs}
    if len(scores) > 1:
        raise UsageError(f"{code}: {runs[0]['name']} scored differently in its runs ({' / '.join(sorted(scores))}); "
                         f"bench peers compares runs that give the same predictions")
    totals = [run["total_seconds"] for run in runs]
    middle = runs[sorted(range(len(runs)), key=totals.__getitem__)[len(runs) // 2]]
    row = {key: value for key, value in middle.items() if key not in ("total_seconds", "peak_rss_mb")}
    peaks = [run["peak_rss_mb"] for run in runs if run["peak_rss_mb"] is not None]
    return {**row, "total_seconds": spread(totals, 3), "peak_rss_mb": spread(peaks, 1) if peaks else None}


def ratios(task: TaskSpec, ours: list[dict], peer: list[dict]) -> dict:
    """Ours against the peer, round by round (each round ran both on the same machine, one after the other):
    the spread of the ratios of seconds and of peak memory, and the lead on each headline metric."""
    memory_ratios = [mine["peak_rss_mb"] / theirs["peak_rss_mb"] for mine, theirs in zip(ours, peer)
                     if mine["peak_rss_mb"] and theirs["peak_rss_mb"]]
    return {"seconds": spread([mine["total_seconds"] / theirs["total_seconds"] for mine, theirs in zip(ours, peer)], 3),
            "peak_rss": spread(memory_ratios, 3) if memory_ratios else None,
            "lead": {metric: round(ours[0]["metrics"][metric] - peer[0]["metrics"][metric], 4)
                     for metric in task.scoring.headline}}


def bench_peers(code: str, seed: int = 0, data_dir: str | Path | None = None, train: str | Path | None = None,
                dev: str | Path | None = None, command: str | None = None, rounds: int = ROUNDS,
                log: Callable[[str], None] = lambda message: None) -> dict:
    """The task's peer, our default model and our fast one, each run `rounds` times in turn (peer, default, fast,
    then again), each run in a new process with an empty analysis cache; their medians, spreads and ratios."""
    peer_name = peer_of(code)[0]
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise UsageError(f"{errors.setting('--rounds', 'rounds')} must be a whole number of at least 1, not {rounds!r}")
    task = get_task(code)
    located = locate(task, data_dir, train, dev)
    if located.is_sample or located.train is None:
        raise UsageError(f"bench peers needs KLUE training and dev files: give "
                         f"{errors.setting('--data-dir', 'data_dir')} (and {errors.setting('--train', 'train')} "
                         f"for a partial training file)")
    data = {"data_dir": str(data_dir) if data_dir else None, "train": str(train) if train else None,
            "dev": str(dev) if dev else None}
    log(f"{code}: {peer_name} chooses its settings on the training file, in a new process")
    selection = in_new_process("baselines.bench.peers", {"code": code, "who": "select", "seed": seed, "data": data},
                               f"{code}: select failed")
    log(f"{code}: chosen {selection['chosen']} in {selection['seconds']:.1f} s")
    runs: dict[str, list[dict]] = {who: [] for who in SYSTEMS}
    for round_number in range(1, rounds + 1):
        for who in SYSTEMS:
            log(f"{code}: round {round_number} of {rounds}: {peer_name if who == 'peer' else who}, "
                f"in a new process")
            run = in_new_process("baselines.bench.peers", {"code": code, "who": who, "seed": seed, "data": data,
                                                           "chosen": selection["chosen"]}, f"{code}: {who} failed")
            runs[who].append(run)
            log(f"{code}: {run['name']}: {run['metrics']} in {run['total_seconds']:.1f} s, "
                f"peak {run['peak_rss_mb']} MiB")
    systems = {who: summary(runs[who], code) for who in SYSTEMS}
    systems["peer"]["choice"] = selection
    report = {
        "task": code, "seed": seed, "rounds": rounds, "method": __doc__.split("\n\n")[1].replace("\n", " "),
        "files": [evaluation.describe_file(path) for path in (located.train, located.dev)],
        "systems": systems,
        "ratios": {who: ratios(task, runs[who], runs["peer"]) for who in ("default", "fast")},
        "versions": versions(), "machine": machine(), "code": code_version(),
    }
    if command is not None:
        report["command"] = command
    return report


if __name__ == "__main__":
    answer_in_new_process(lambda request: measure(**request, log=lambda message: print(message, file=sys.stderr)),
                          sys.argv)


def record_report(results_dir: Path, code: str, report: dict) -> Path:
    """Write `report` into results_dir/peers.json in place of the task's earlier one, keeping the other tasks'."""
    path = results_dir / "peers.json"
    with results.locked(results_dir):
        try:
            earlier = json.loads(path.read_text(encoding="utf-8")).get("tasks", {})
        except (OSError, ValueError, AttributeError):
            earlier = {}  # absent or unreadable: it is this command's own output, started afresh
        merged = {"tasks": {**(earlier if isinstance(earlier, dict) else {}), code: report}}
        return results.write_result(results_dir, path, merged)  # the lock is re-entrant: read and write as one
