"""DP: dependency parsing over eojeols (whitespace words): a head and a relation label for each."""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np
from sklearn.feature_extraction import DictVectorizer

from baselines.display import html
from baselines.metrics import scoring, tallies
from baselines.metrics.teaching import Comparison
from baselines.models.linear import OrderedLogisticRegression
from baselines.data import grown
from baselines.taskspec import (HIDDEN_TEXT, Reading, Modelling, Scoring, Presentation, Benchmarks, ModelEntry, Probe,
                                PredictionError, PredictionFiles, TaskSpec, align_predictions)
from baselines.tasks.dp.data import (LABELS, DpSentence, DpWord, as_records, distinct_copy, from_hf, load, load_input,
                                     load_tsv_or_conllu, plain_inputs, predictions_from_file, targets, tree_problem,
                                     with_kiwi_pos, write_conllu, write_tsv)
from baselines.tasks.dp.features import ArcFeaturizer, eojeol_attributes
from baselines.tasks.dp.parser import AttachToNextParser, MstParser, is_head_final, is_projective

__all__ = ["TASK", "LABELS", "DpSentence", "DpWord", "load", "load_input", "load_tsv_or_conllu", "targets",
           "tree_problem", "with_kiwi_pos", "ArcFeaturizer", "eojeol_attributes", "AttachToNextParser", "MstParser",
           "is_head_final", "is_projective", "predict", "score"]


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


def tags_only(records: Sequence[DpSentence]) -> list[DpSentence]:
    """Each sentence with every word's form and lemmas hidden (one stand-in a morpheme, so that lemmas and tags
    still pair up): the parser sees the words' tags and places alone."""
    shown = []
    for record in records:
        words = [replace(word, form=HIDDEN_TEXT,
                         lemma=None if word.lemma is None else " ".join([HIDDEN_TEXT] * len(word.lemma.split())))
                 for word in record.words]
        shown.append(replace(record, text=" ".join(word.form for word in words), words=words))
    return shown


PROBES = (
    Probe("tags only", "each word's part-of-speech tags and place; its form and lemmas hidden", tags_only),
)


TASK = TaskSpec(
    code="dp",
    title="DP dependency parsing",
    folder="klue-dp-v1.1",
    train_file="klue-dp-v1.1_train.tsv",
    dev_file="klue-dp-v1.1_dev.tsv",
    reading=Reading(
        texts=lambda records: [r.text for r in records],
        load=load_tsv_or_conllu,
        from_hf=from_hf,
        load_input=load_input,
        as_records=as_records,
        plain_inputs=plain_inputs,
        distinct_copy=distinct_copy,
    ),
    modelling=Modelling(
        targets=targets,
        models={"mst": ModelEntry(MstParser),
                "mst-kiwi": ModelEntry(MstParser, {"pos": "kiwi"}),
                # One perceptron of first order (arcs alone): a quarter of the passes, each cheaper to decode.
                "fast": ModelEntry(MstParser, {"perceptrons": 1, "order": 1}),
                "trivial": ModelEntry(AttachToNextParser)},
        default_model="mst",
        predict=predict,
        model_for_pos={"gold": "mst", "kiwi": "mst-kiwi"},
        saved_types=(MstParser, AttachToNextParser, ArcFeaturizer, OrderedLogisticRegression, DictVectorizer),
    ),
    scoring=Scoring(
        score=score,
        tally=tally,
        headline=("uas_micro_f1", "las_micro_f1", "uas_macro_f1", "las_macro_f1"),
        prediction_files=PredictionFiles("JSONL with one prediction per line, the official TSV, or CoNLL-U",
                                         from_file=predictions_from_file,
                                         writers={"tsv": write_tsv, "conllu": write_conllu}),
        prediction_example='{"guid": "klue-dp-v1_dev_00000_wikitree", "heads": [2, 6, 4, 6, 6, 0], '
                           '"deprels": ["NP", "NP_SBJ", "NP_MOD", "NP_AJT", "NP_OBJ", "VP"]}',
        compare=compare,
    ),
    presentation=Presentation(drawer=html.draw_dp),
    benchmarks=Benchmarks(grow=grown.eojeols, size_unit="eojeols", peer="udpipe", probes=PROBES),
)
