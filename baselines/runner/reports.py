"""What a reader is shown of scored predictions: the teaching report of one system, two systems compared, and what
a model learnt."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from baselines.errors import UsageError
from baselines.metrics import significance, teaching
from baselines.runner import result_files, tables
from baselines.taskspec import TaskSpec, align_predictions


def teaching_report(spec: TaskSpec, records: Sequence, rows: Sequence[dict], metrics: dict[str, float],
                    errors: int) -> dict:
    """The official metrics; per class precision, recall, F1 and support and the confusion matrix where the
    task has classes; its groups; and the `errors` records that are most wrong, with input, gold and prediction."""
    aligned = align_predictions(records, rows)
    comparison = spec.scoring.compare(records, aligned)
    built: dict[str, Any] = {"task": spec.code, "unit": comparison.unit,
                             "metrics": result_files.jsonable_scores(metrics, 4)}
    if comparison.gold:
        built["classes"] = teaching.per_class(comparison)
        built["confusion"] = teaching.confusion(comparison)
    if comparison.groups:
        built["groups"] = {"by": comparison.group_by, "rows": comparison.groups}
    built["errors"] = teaching.worst_errors(comparison, [record.guid for record in records],
                                            spec.reading.plain_inputs(records), errors)
    built["errors_ranked_by"] = comparison.ranked_by
    if spec.scoring.entity_errors is not None:
        built["entities"] = spec.scoring.entity_errors(records, aligned, errors)
    return built


def compared_systems(spec: TaskSpec, records: Sequence, resources: dict, scored_a: tuple[list[dict], dict],
                     scored_b: tuple[list[dict], dict], *, metrics: Sequence[str] | None, resamples: int, seed: int,
                     n_jobs: int, progress: Callable[[int], None], examples: int) -> dict:
    """Two systems' checked predictions and metrics on the same gold, compared by paired bootstrap: the
    headline rows under 'metrics', the breakdown's (Holm-corrected, largest difference first) under 'breakdown',
    what a reviewer asks besides (see reviewer_answers) and the published anchors of the same metrics."""
    (rows_a, metrics_a), (rows_b, metrics_b) = scored_a, scored_b
    try:
        headline, breakdown = significance.chosen_metrics(spec, metrics, (metrics_a, metrics_b))
    except ValueError as error:
        raise UsageError(str(error)) from None
    compared = significance.paired_bootstrap(spec, records, rows_a, rows_b, resources, metrics=headline + breakdown,
                                             resamples=resamples, seed=seed, n_jobs=n_jobs,
                                             progress=progress, observed=(metrics_a, metrics_b))
    rows = compared.pop("metrics")
    compared["metrics"] = rows[:len(headline)]
    breakdown_rows = rows[len(headline):]
    for row, adjusted in zip(breakdown_rows, significance.holm([row["p_value"] for row in breakdown_rows])):
        row["p_holm"] = adjusted  # corrected for testing as many differences as the breakdown has rows
    compared["breakdown"] = sorted(breakdown_rows, key=lambda row: -abs(row["difference"] or 0.0))
    compared.update(reviewer_answers(spec, records, rows_a, rows_b, examples))
    compared["anchors"] = tables.anchors_beside(spec.code, [row["metric"] for row in compared["metrics"]])
    return compared


def reviewer_answers(spec: TaskSpec, records: Sequence, rows_a: list[dict], rows_b: list[dict], examples: int) -> dict:
    """What a comparison adds to the bootstrap: McNemar's exact test where each record is wholly right or wrong,
    both systems' entity errors where the task has spans, and `examples` records a group where they differ."""
    aligned = [align_predictions(records, rows) for rows in (rows_a, rows_b)]
    comparisons = [spec.scoring.compare(records, rows) for rows in aligned]
    answers: dict[str, Any] = {}
    if comparisons[0].right_or_wrong:
        answers["mcnemar"] = {"unit": comparisons[0].unit,
                              **significance.mcnemar(comparisons[0].wrong, comparisons[1].wrong)}
    if spec.scoring.entity_errors is not None:
        answers["entities"] = {system: spec.scoring.entity_errors(records, rows, examples)
                               for system, rows in zip("ab", aligned)}
    if examples:
        answers["examples"] = significance.disagreements(
            comparisons[0].wrong, comparisons[1].wrong, comparisons[0].shown, comparisons[1].shown,
            [record.guid for record in records], spec.reading.plain_inputs(records), examples)
    return answers


def _listed(weights: list[tuple[str, float]]) -> list[dict]:
    return [{"feature": feature, "weight": weight} for feature, weight in weights]


def explanation(spec: TaskSpec, model: Any, top_k: int, records: Sequence | None, per_input: int) -> dict:
    """What a fitted model learnt, `top_k` features a section; with records, each one's prediction and the
    `per_input` features that pushed it (a linear classifier) or each character's tag and its features (NER's
    CRF); 'rows' holds the same flat, one dict per feature."""
    built: dict[str, Any] = {"task": spec.code, "estimator": type(model).__name__, "sections": {
        section: _listed(weights) for section, weights in model.top_features(top_k).items()}}
    rows = [{"section": section, "feature": item["feature"], "weight": item["weight"]}
            for section, items in built["sections"].items() for item in items]
    if records is not None:
        guids, plain = [record.guid for record in records], spec.reading.plain_inputs(records)
        if hasattr(model, "feature_contributions"):
            built["examples"] = [
                {"guid": guid, "input": shown, "prediction": label, "features": _listed(features)}
                for guid, shown, (label, features) in zip(guids, plain,
                                                          model.feature_contributions(records, per_input))]
            rows += [{"guid": example["guid"], "prediction": example["prediction"], **item}
                     for example in built["examples"] for item in example["features"]]
        else:
            built["examples"] = [
                {"guid": guid, "input": shown, "characters": [
                    {"character": row["character"], "tag": row["tag"], "features": _listed(row["features"])}
                    for row in characters]}
                for guid, shown, characters in zip(guids, plain, model.character_contributions(records, per_input))]
            rows += [{"guid": example["guid"], "position": position, "character": character["character"],
                      "tag": character["tag"], **item}
                     for example in built["examples"]
                     for position, character in enumerate(example["characters"]) for item in character["features"]]
    built["rows"] = rows
    return built
