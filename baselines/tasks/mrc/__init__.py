"""MRC: extractive reading comprehension; a third of the questions have no answer in the passage."""
from __future__ import annotations

from typing import Sequence

from sklearn.feature_extraction import DictVectorizer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from baselines.display import html
from baselines.metrics import scoring, tallies
from baselines.models.linear import OrderedLogisticRegression
from baselines.metrics.teaching import Comparison
from baselines.data import grown
from baselines.taskspec import (Reading as TaskReading, Modelling, Scoring, Links, Presentation, Benchmarks,
                                TFIDF_PARTS, ModelEntry, PredictionError, PredictionFiles, Requirement, TaskSpec,
                                align_predictions, check_numbers)
from baselines.tasks.mrc.candidates import (FEATURE_INDEX, FEATURE_NAMES, QUESTION_TYPES, QuestionView,
                                            candidate_spans, question_type, question_view, related_words)
from baselines.tasks.mrc.data import (MrcAnswer, MrcQuestion, as_records, distinct_copy, from_hf, load, load_input,
                                      plain_inputs, predictions_from_json, targets)
from baselines.tasks.mrc.answer_types import AnswerTypeModel
from baselines.tasks.mrc.decision import AnswerDecision
from baselines.tasks.mrc.passages import Retrieval
from baselines.tasks.mrc.ranking import ListwiseRanker
from baselines.tasks.mrc.reader import EmptyAnswerReader, Reading, SpanRanker
from features.vectorize import Analyse, MorphemeNgrams

__all__ = ["TASK", "FEATURE_INDEX", "FEATURE_NAMES", "QUESTION_TYPES", "QuestionView", "candidate_spans",
           "question_type", "question_view", "related_words", "MrcAnswer", "MrcQuestion", "load", "load_input",
           "targets", "EmptyAnswerReader", "Reading", "SpanRanker", "predict", "score"]


def predict(model, records: Sequence[MrcQuestion]) -> list[dict]:
    """The answer ('' for none) with its offsets; a reader that ranks spans adds its best span and its
    belief in it even where it declines, so that the span scorer and the no-answer decision can be
    measured apart and a user can answer at a threshold of their own, and its n-best list of spans."""
    if not hasattr(model, "read"):
        return [{"guid": record.guid, "answer": answer, "start": start, "end": start + len(answer)}
                for record, (answer, start) in zip(records, model.predict(records))]
    rows = []
    for record, reading in zip(records, model.read(records)):
        answer, start = (reading.best_span, reading.best_start) if reading.answered else ("", 0)
        rows.append({"guid": record.guid, "answer": answer, "start": start, "end": start + len(answer),
                     "best_span": reading.best_span, "best_span_start": reading.best_start,
                     "belief": reading.belief, "asks_for": reading.asks_for,
                     "expected_type": reading.expected_type, "n_best": list(reading.n_best)})
    return rows


def score(records: Sequence[MrcQuestion], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    aligned = align_predictions(records, predictions)
    _check_answers(aligned)
    gold, answers, types = _scored_answers(records, aligned)
    metrics = scoring.score_mrc(gold, answers, types)
    if all(isinstance(p.get("best_span"), str) for p in aligned):
        check_numbers(aligned, "belief", optional=True)
        _check_n_best(aligned)
        metrics.update(scoring.mrc_reader_diagnostics(gold, aligned))
        metrics.update(_breakdown(gold, aligned))
    return metrics


def _check_answers(aligned: Sequence[dict]) -> None:
    bad = [p.get("guid") for p in aligned if not isinstance(p.get("answer"), str)]
    if bad:
        raise PredictionError(f"{len(bad)} predictions lack a string 'answer' (first: {', '.join(bad[:3])})")


def _scored_answers(records: Sequence[MrcQuestion], aligned: Sequence[dict]) -> tuple[dict, dict, dict | None]:
    """Gold answers, predicted answers and question types (None when no question has one), by question id."""
    gold = {r.guid: answers for r, answers in zip(records, targets(records))}
    types = {r.guid: r.question_type for r in records if r.question_type is not None}
    return gold, {p["guid"]: p["answer"] for p in aligned}, types or None


def tally(records: Sequence[MrcQuestion], predictions: Sequence[dict], resources: dict) -> tallies.Tally:
    """The exact match and ROUGE-W of `score` (the reader's diagnostics are not sums: `compare` scores those
    resample by resample)."""
    aligned = align_predictions(records, predictions)
    _check_answers(aligned)
    gold, answers, types = _scored_answers(records, aligned)
    return tallies.tally_mrc(gold, answers, [r.guid for r in records], types)


def _check_n_best(aligned: Sequence[dict]) -> None:
    """An n-best list, where a prediction gives one, is a list of strings."""
    bad = [p.get("guid") for p in aligned
           if "n_best" in p and not (isinstance(p["n_best"], list) and all(isinstance(t, str) for t in p["n_best"]))]
    if bad:
        raise PredictionError(f"{len(bad)} predictions have an 'n_best' that is not a list of strings "
                              f"(first: {', '.join(map(str, bad[:3]))})")


# What a reader says of each question besides its answer, by which its diagnostics are broken down.
BREAKDOWN_KEYS = ("asks_for", "expected_type")


def _breakdown(gold: dict[str, list[str]], aligned: Sequence[dict]) -> dict[str, float]:
    """Exact match, the best span's exact match on answerable questions and the belief's AUC, per kind of
    question as the reader saw it (what its words ask for; the answer type it expected), with the number of
    questions of each kind: where the reader loses."""
    metrics: dict[str, float] = {}
    for key in BREAKDOWN_KEYS:
        groups: dict[str, list[dict]] = {}
        for prediction in aligned:
            if isinstance(prediction.get(key), str):
                groups.setdefault(prediction[key], []).append(prediction)
        for value, members in sorted(groups.items()):
            subset = {p["guid"]: gold[p["guid"]] for p in members}
            name = f"{key}={value}"  # first, so that a kind's figures sort together
            metrics[f"{name}/questions"] = float(len(members))
            metrics[f"{name}/exact_match"] = scoring.score_mrc(subset, {p["guid"]: p["answer"] for p in members}
                                                              )["exact_match"]
            for diagnostic, number in scoring.mrc_reader_diagnostics(subset, members).items():
                if diagnostic in ("best_span_exact_match/answerable", "answerable_auc"):
                    metrics[f"{name}/{diagnostic}"] = number
    return metrics


def compare(records: Sequence[MrcQuestion], aligned: Sequence[dict]) -> Comparison:
    """Answers are free text, so there are no classes: the groups are question types (and answerable or not),
    each with its exact match and ROUGE-W. A question is wrong when its answer is not an exact match; the
    reader's belief, where it gave one, puts its confident errors first."""
    beliefs = all(isinstance(p.get("belief"), (int, float)) for p in aligned)
    comparison = Comparison("question", group_by="question type", right_or_wrong=True, ranked_by=(
        "the reader's belief in its wrong answer" if beliefs else
        "nothing: the predictions carry no beliefs, so the errors are in file order"))
    by_group: dict[str, list[tuple[float, float]]] = {}
    for record, answers, prediction in zip(records, targets(records), aligned):
        belief = prediction.get("belief")
        exact, rouge = scoring.mrc_question_scores(prediction["answer"], answers)
        if exact:
            comparison.wrong.append(0.0)
        else:
            comparison.wrong.append(2.0 + belief if isinstance(belief, (int, float)) else 1.0)
        comparison.shown.append((" | ".join(answers) or "(no answer)", prediction["answer"] or "(no answer)"))
        by_group.setdefault("answerable" if answers else "unanswerable", []).append((exact, rouge))
        if record.question_type is not None:
            by_group.setdefault(f"question_type {record.question_type}", []).append((exact, rouge))
    comparison.groups = [{"group": group, "questions": len(pairs),
                          "exact_match": round(100 * sum(e for e, _ in pairs) / len(pairs), 4),
                          "rouge_w": round(100 * sum(r for _, r in pairs) / len(pairs), 4)}
                         for group, pairs in sorted(by_group.items())]
    return comparison


TASK = TaskSpec(
    code="mrc",
    title="MRC machine reading comprehension",
    folder="klue-mrc-v1.1",
    train_file="klue-mrc-v1.1_train.json",
    dev_file="klue-mrc-v1.1_dev.json",
    reading=TaskReading(
        texts=lambda records: [t for r in records for t in (r.context, r.question)],
        load=load,
        from_hf=from_hf,
        load_input=load_input,
        as_records=as_records,
        plain_inputs=plain_inputs,
        group=lambda record: record.context,
        distinct_copy=distinct_copy,
    ),
    modelling=Modelling(
        targets=targets,
        models={"span-ranker": ModelEntry(SpanRanker),
                # alpha set to the most penalised of RANKER_ALPHAS, which converges in the fewest iterations, instead of
                # chosen from all four in grouped folds (a set 0.1 took longer than the search, which starts each fit
                # from the more penalised one's weights; without neighbours the reader was slower still).
                "fast": ModelEntry(SpanRanker, {"alpha": 1.0}),
                "trivial": ModelEntry(EmptyAnswerReader)},
        default_model="span-ranker",
        predict=predict,
        saved_types=(SpanRanker, EmptyAnswerReader, AnswerTypeModel, AnswerDecision, Retrieval, ListwiseRanker,
                     Pipeline, StandardScaler, OrderedLogisticRegression, DictVectorizer, *TFIDF_PARTS, Analyse,
                     MorphemeNgrams),
    ),
    scoring=Scoring(
        score=score,
        tally=tally,
        breakdown="exact_match",
        headline=("exact_match", "rouge_w"),
        prediction_files=PredictionFiles("JSONL with one prediction per line, or a {question_id: answer} object",
                                         from_object=predictions_from_json),
        prediction_example='{"guid": "klue-mrc-v1_dev_01891", "answer": "뉴 740Li 25주년 에디션"}',
        compare=compare,
    ),
    links=Links(
        requires=(Requirement("ner", "ner_train", "tagger", "a KLUE-NER training file in the official TSV format, for "
                              "the reader's tagger"),),
    ),
    presentation=Presentation(drawer=html.draw_mrc, page_form="passage"),
    benchmarks=Benchmarks(grow=grown.field_grown("context")),
)
