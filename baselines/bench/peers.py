"""`bench peers`: the tools a user would pick instead, against our default model, on the same files in one run.

Each peer runs with fixed settings, written here, and chooses what it chooses on its training file only (a 10 %
hold-out of it, drawn with the run's seed); its predictions are scored with this toolkit's scorer. The peer's
choice, the peer with its chosen settings, and ours each run in a new Python process of their own, one after
another, with an empty analysis cache, so that seconds and peak memory are each one's alone and their ratios
hold on any machine.

- YNAT: fastText 0.9.2 supervised (the fasttext-wheel build), one thread, on raw titles with character
  n-grams (minn 2, maxn 4) or on Kiwi's morphemes as form/tag; wordNgrams 1 or 2; (epoch, lr) (5, 0.1),
  (25, 0.1) or (10, 0.5); dim 100.
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
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from kiwipiepy import Kiwi

from baselines import errors
from baselines.data.locate import locate
from baselines.runner import evaluate as evaluation
from baselines.errors import UsageError
from baselines.runtime.provenance import code_version, machine, versions


from baselines.runtime import memory
from baselines.runtime.parallel import answer_in_new_process, in_new_process
from baselines.runner.registry import get_task
from baselines.taskspec import TaskSpec

HOLD_OUT = 0.1
EXTRA = "pip install 'klue-baselines[peers]'"


def _needs(module: str, what: str) -> Any:
    """The peer's library, or a UsageError that says which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(f"{what} is not installed: {EXTRA}") from None


def hold_out(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(training, held-out) indices: a seeded 10 % of `count` records held out."""
    order = np.random.default_rng(seed).permutation(count)
    cut = count - max(1, int(round(count * HOLD_OUT)))
    return np.sort(order[:cut]), np.sort(order[cut:])


def held_out_score(task: TaskSpec, train: list, held: np.ndarray, key: str, predicted: Sequence) -> float:
    """The task's first headline metric of the predictions (`key`: 'label', 'tags') for the held-out records."""
    rows = [{"guid": train[i].guid, key: value} for i, value in zip(held, predicted)]
    return task.score([train[i] for i in held], rows, {})[task.headline[0]]


class Clock:
    """Seconds per stage of a peer's run."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    def measure(self, stage: str, work: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        result = work()
        self.seconds[stage] = round(self.seconds.get(stage, 0.0) + time.perf_counter() - start, 3)
        return result


# --- YNAT: fastText -------------------------------------------------------------------------------------------

FASTTEXT_GRID = [{"input": representation, "wordNgrams": ngrams, "epoch": epoch, "lr": lr}
                 for representation in ("characters", "morphemes") for ngrams in (1, 2)
                 for epoch, lr in ((5, 0.1), (25, 0.1), (10, 0.5))]


def kiwi_morphemes(titles: Sequence[str]) -> list[str]:
    """Each title as Kiwi's morphemes, 'form/tag' separated by spaces (raw Kiwi, as a fastText user runs it)."""
    return [" ".join(f"{token.form}/{token.tag}" for token in tokens) for tokens in Kiwi().tokenize(list(titles))]


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


def _fasttext_predict(model, texts: Sequence[str]) -> list[str]:
    labels, _probabilities = model.predict([text.replace("\n", " ") for text in texts])
    return [found[0].removeprefix("__label__") for found in labels]


def fasttext_select(task: TaskSpec, train: list, seed: int, clock: Clock, log) -> dict:
    """fastText's setting, chosen by macro F1 on the hold-out (the first of the best on a tie)."""
    labels = task.targets(train)
    raw = {"characters": task.plain_inputs(train)}
    raw["morphemes"] = clock.measure("selection", lambda: kiwi_morphemes(raw["characters"]))
    inner, held = hold_out(len(train), seed)
    table = []
    for setting in FASTTEXT_GRID:
        texts = raw[setting["input"]]
        model = clock.measure("selection", lambda: _fasttext_fit([texts[i] for i in inner],
                                                                 [labels[i] for i in inner], setting, seed))
        score = held_out_score(task, train, held, "label", _fasttext_predict(model, [texts[i] for i in held]))
        table.append({**setting, task.headline[0]: round(score, 4)})
        log(f"ynat: fastText {setting}: {score:.2f} on the hold-out")
    chosen = max(zip(table, FASTTEXT_GRID), key=lambda pair: pair[0][task.headline[0]])[1]
    return {"chosen": chosen, "selection": table}


def fasttext_ynat(task: TaskSpec, train: list, dev: list, chosen: dict, seed: int, clock: Clock) -> list[dict]:
    """fastText with the chosen setting, fitted on the whole training file, predicting the dev file."""
    labels = task.targets(train)
    titles = task.plain_inputs(train) + task.plain_inputs(dev)
    texts = clock.measure("analysis", lambda: kiwi_morphemes(titles)) if chosen["input"] == "morphemes" else titles
    model = clock.measure("fit", lambda: _fasttext_fit(texts[:len(train)], labels, chosen, seed))
    predicted = clock.measure("predict", lambda: _fasttext_predict(model, texts[len(train):]))
    return [{"guid": record.guid, "label": label} for record, label in zip(dev, predicted)]


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


def crf_select(task: TaskSpec, train: list, seed: int, clock: Clock, log) -> dict:
    """The CRF's c1 = c2, chosen by entity macro F1 on the hold-out (the first of the best on a tie)."""
    tags = task.targets(train)
    features = [character_features(text) for text in task.plain_inputs(train)]
    inner, held = hold_out(len(train), seed)
    table = []
    for c in CRF_C:
        model = clock.measure("selection", lambda: _crf(c).fit([features[i] for i in inner], [tags[i] for i in inner]))
        score = held_out_score(task, train, held, "tags", [list(tags) for tags in model.predict(
            [features[i] for i in held])])
        table.append({"c1": c, "c2": c, task.headline[0]: round(score, 4)})
        log(f"ner: plain CRF c1 = c2 = {c}: {score:.2f} on the hold-out")
    chosen = max(table, key=lambda row: row[task.headline[0]])["c1"]
    return {"chosen": {"c1": chosen, "c2": chosen, "max_iterations": 100}, "selection": table}


def plain_crf_ner(task: TaskSpec, train: list, dev: list, chosen: dict, seed: int, clock: Clock) -> list[dict]:
    """The plain CRF with the chosen penalty, fitted on the whole training file, tagging the dev file."""
    tags = task.targets(train)
    features = clock.measure("features", lambda: [character_features(text) for text in task.plain_inputs(train)])
    model = clock.measure("fit", lambda: _crf(chosen["c1"]).fit(features, tags))
    dev_features = clock.measure("features", lambda: [character_features(text) for text in task.plain_inputs(dev)])
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


def udpipe_select(task: TaskSpec, train: list, seed: int, clock: Clock, log) -> dict:
    """Nothing to choose: UDPipe's defaults, but a single root, which wants the relation 'root' that KLUE's
    roots (VP, NP ...) do not carry."""
    return {"chosen": {"parser": "single_root=0", "tokenizer": "none", "tagger": "none"}}


def udpipe_dp(task: TaskSpec, train: list, dev: list, chosen: dict, seed: int, clock: Clock) -> list[dict]:
    """UDPipe's parser trained on the whole training file, then parsing the dev file on its gold tags."""
    udpipe = _needs("ufal.udpipe", "UDPipe (ufal.udpipe)")
    trees = task.targets(train)
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


# By task: the peer's name, how it chooses its settings on the training file, and how it runs with them.
PEERS: dict[str, tuple[str, Callable, Callable]] = {
    "ynat": ("fastText 0.9.2", fasttext_select, fasttext_ynat),
    "ner": ("plain character CRF (sklearn-crfsuite)", crf_select, plain_crf_ner),
    "dp": ("UDPipe 1.4 parser", udpipe_select, udpipe_dp),
}


def measure(code: str, who: str, seed: int, data: dict, chosen: dict | None = None,
            log: Callable[[str], None] = lambda message: None) -> dict:
    """One step, in this process (a fresh one: bench_peers starts one per step): the peer's choice of settings
    on the training file ('select'); the peer with them ('peer'); or ours, the task's default model as `run`
    trains and scores it ('ours'). For the last two, the headline scores, seconds and peak memory."""
    task = get_task(code)
    located = locate(task, data.get("data_dir"), data.get("train"), data.get("dev"))
    if who == "ours":
        record, _predictions = evaluation.evaluate_task(task, located, seed=seed, log=log)
        # Scoring is left out of both sides' totals: the peer's predictions are scored by this toolkit too.
        seconds = {stage: value for stage, value in record["seconds"].items() if stage != "score"}
        return {"name": f"klue-baselines {record['model']}",
                "metrics": {metric: record["metrics"][metric] for metric in task.headline},
                "seconds": seconds, "total_seconds": round(sum(seconds.values()), 3),
                "peak_rss_mb": record.get("peak_rss_mb")}
    memory.reset_peak()
    clock = Clock()
    name, select, run = PEERS[code]
    train = clock.measure("load", lambda: task.load(located.train))
    if who == "select":
        chosen = select(task, train, seed, clock, log)
        return {**chosen, "seconds": clock.seconds.get("selection", 0.0), "peak_rss_mb": memory.rounded_peak_mb()}
    dev = clock.measure("load", lambda: task.load(located.dev))
    rows = run(task, train, dev, chosen, seed, clock)
    metrics = task.score(dev, rows, task.load_resources(located.extras))
    return {"name": name, "metrics": {metric: round(metrics[metric], 6) for metric in task.headline},
            "settings": chosen, "seconds": clock.seconds, "total_seconds": round(sum(clock.seconds.values()), 3),
            "peak_rss_mb": memory.rounded_peak_mb()}


def bench_peers(code: str, seed: int = 0, data_dir: str | Path | None = None, train: str | Path | None = None,
                dev: str | Path | None = None, command: str | None = None,
                log: Callable[[str], None] = lambda message: None) -> dict:
    """Ours and the task's peer, each in a new process with an empty analysis cache, and the ratios."""
    if code not in PEERS:
        raise UsageError(f"bench peers knows peers for {', '.join(PEERS)}, not {code}")
    task = get_task(code)
    located = locate(task, data_dir, train, dev)
    if located.is_sample or located.train is None:
        raise UsageError(f"bench peers needs KLUE training and dev files: give "
                         f"{errors.setting('--data-dir', 'data_dir')} (and {errors.setting('--train', 'train')} "
                         f"for a partial training file)")
    data = {"data_dir": str(data_dir) if data_dir else None, "train": str(train) if train else None,
            "dev": str(dev) if dev else None}
    log(f"{code}: {PEERS[code][0]} chooses its settings on the training file, in a new process")
    selection = in_new_process("baselines.bench.peers", {"code": code, "who": "select", "seed": seed, "data": data},
                               f"{code}: select failed")
    log(f"{code}: chosen {selection['chosen']} in {selection['seconds']:.1f} s")
    sides = {}
    for who in ("peer", "ours"):
        log(f"{code}: {PEERS[code][0] if who == 'peer' else 'ours'}, in a new process")
        sides[who] = in_new_process("baselines.bench.peers", {"code": code, "who": who, "seed": seed, "data": data,
                                                        "chosen": selection["chosen"]}, f"{code}: {who} failed")
        log(f"{code}: {sides[who]['name']}: {sides[who]['metrics']} in {sides[who]['total_seconds']:.1f} s, "
            f"peak {sides[who]['peak_rss_mb']} MiB")
    ours, peer = sides["ours"], {**sides["peer"], "choice": selection}
    report = {
        "task": code, "seed": seed, "method": __doc__.split("\n\n")[1].replace("\n", " "),
        "files": [evaluation.describe_file(path) for path in (located.train, located.dev)],
        "ours": ours, "peer": peer,
        "ratios": {"seconds": round(ours["total_seconds"] / peer["total_seconds"], 2),
                   "peak_rss": (round(ours["peak_rss_mb"] / peer["peak_rss_mb"], 2)
                                if ours["peak_rss_mb"] and peer["peak_rss_mb"] else None),
                   "lead": {metric: round(ours["metrics"][metric] - peer["metrics"][metric], 4)
                            for metric in task.headline}},
        "versions": versions(), "machine": machine(), "code": code_version(),
    }
    if command is not None:
        report["command"] = command
    return report


if __name__ == "__main__":
    answer_in_new_process(lambda request: measure(**request, log=lambda message: print(message, file=sys.stderr)),
                          sys.argv)
