"""Every model of the 8 tasks is a scikit-learn citizen: clone, parameters, pickling, estimator type, plain
inputs, NotFittedError, score, cross_val_score and GridSearchCV, on the shipped sample."""
from __future__ import annotations

import inspect
import json
import math
import pickle
from dataclasses import replace

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone, is_classifier, is_regressor
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, cross_val_score

from baselines.runner.registry import get_task
from helpers import MODELS, quick_model, sample_file, sample_resources

CLASSIFIERS = {(code, name) for code, default in (("ynat", "tfidf-lr"), ("nli", "tfidf-lr"), ("re", "features-lr"))
               for name in (default, "fast", "trivial")}
REGRESSORS = {("sts", "features-gbr"), ("sts", "fast"), ("sts", "trivial")}
def sample(code: str, split: str):
    return get_task(code), sample_file(code, split)



@pytest.mark.parametrize("code,name", MODELS)
def test_hyper_parameters_are_keyword_only_and_the_seed_reaches_the_model(code, name):
    estimator = get_task(code).modelling.models[name].estimator
    positional = [parameter.name for parameter in inspect.signature(estimator).parameters.values()
                  if parameter.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert positional == [], f"{estimator.__name__} takes {positional} by position"
    if "random_state" in inspect.signature(estimator).parameters:
        assert get_task(code).modelling.models[name].build(7, {}).random_state == 7  # the run's seed reaches the model


@pytest.mark.parametrize("code,name", MODELS)
def test_fit_and_predict_document_their_parameters_and_returns(code, name):
    estimator = get_task(code).modelling.models[name].estimator
    for method in ("fit", "predict"):
        documented = inspect.getdoc(getattr(estimator, method)) or ""
        assert "Parameters\n----------\nX : " in documented and "Returns\n-------\n" in documented, \
            f"{estimator.__name__}.{method}"

def plain_inputs(code: str, records: list, path) -> list:
    """The records as a notebook user would hand them over: str, tuples, or raw dicts."""
    if code == "ynat":
        return [r.title for r in records]
    if code == "nli":
        return [(r.premise, r.hypothesis) for r in records]
    if code == "sts":
        return [(r.sentence1, r.sentence2) for r in records]
    if code in ("ner", "dp"):
        return [r.text for r in records]
    if code == "mrc":
        return [{"context": r.context, "question": r.question} for r in records]
    rows = json.loads(path.read_text(encoding="utf-8"))  # RE and WoS: the raw rows of the official file
    return [{key: value for key, value in row.items() if key not in ("label", "guid")} for row in rows]


def as_plain_records(code: str, records: list) -> list:
    """The records with only what their plain inputs carry: a DP sentence without the data's POS, an STS pair
    without its source."""
    if code == "dp":
        return [replace(r, words=[replace(w, lemma=None, pos=None, head=None, deprel=None) for w in r.words])
                for r in records]
    if code == "sts":
        return [replace(r, source=None) for r in records]
    return records


@pytest.fixture(scope="module")
def fitted(quick_fit):
    """Each model fitted once on its task's sample training file (shared with the other modules that read them)."""
    return {(code, name): quick_fit(code, name) for code, name in MODELS}


@pytest.mark.parametrize("code, name", MODELS)
def test_clone_parameters_and_estimator_type(code, name):
    model = quick_model(code, name)
    params = model.get_params()
    copy = clone(model)
    assert copy is not model and copy.get_params().keys() == params.keys()
    assert clone(model).set_params(**params).get_params() == params
    assert is_classifier(model) == ((code, name) in CLASSIFIERS)
    assert is_regressor(model) == ((code, name) in REGRESSORS)


@pytest.mark.parametrize("code, name", MODELS)
def test_predict_before_fit_raises_not_fitted(code, name):
    spec, path = sample(code, "dev")
    with pytest.raises(NotFittedError):
        quick_model(code, name).predict(spec.reading.load(path)[:2])


@pytest.mark.parametrize("code, name", MODELS)
def test_plain_inputs_predict_as_records_and_pickling_keeps_predictions(fitted, code, name):
    spec, path = sample(code, "dev")
    records = spec.reading.load(path)
    model = fitted[code, name]
    on_plain = model.predict(plain_inputs(code, records, path))
    on_records = model.predict(as_plain_records(code, records))
    assert repr(list(on_plain)) == repr(list(on_records))
    restored = pickle.loads(pickle.dumps(model))
    assert repr(list(restored.predict(records))) == repr(list(model.predict(records)))


@pytest.mark.parametrize("code, name", MODELS)
def test_score_is_the_first_headline_metric_on_the_unit_scale(fitted, code, name):
    spec, path = sample(code, "dev")
    records = spec.reading.load(path)
    model = fitted[code, name]
    value = model.score(records, spec.modelling.targets(records))
    scored = spec.scoring.score(records, spec.modelling.predict(model, records), sample_resources(code))
    official = scored[spec.scoring.headline[0]]
    if code == "re":  # micro F1 over the relations seen, which is the official one: no_relation is left out
        assert value == pytest.approx(official / 100)
    elif math.isnan(official):
        assert math.isnan(value)
    else:
        assert value == pytest.approx(official / 100)


GRIDS = {"ynat": {"C": [0.5, 2.0]}, "nli": {"C": [0.5, 2.0]}, "sts": {"learning_rate": [0.05, 0.1]},
         "ner": {"c2": [0.05, 0.2]}}


@pytest.mark.parametrize("code", sorted(GRIDS))
def test_cross_val_score_and_grid_search(code):
    spec, path = sample(code, "train")
    records = spec.reading.load(path)
    y = spec.modelling.targets(records)
    name = spec.modelling.default_model
    scores = cross_val_score(quick_model(code, name), records, y, cv=2)
    assert scores.shape == (2,) and np.all((scores >= -1) & (scores <= 1))
    search = GridSearchCV(quick_model(code, name), GRIDS[code], cv=2).fit(records, y)
    assert search.best_params_ in [dict(zip(GRIDS[code], [v])) for v in next(iter(GRIDS[code].values()))]
    assert len(search.cv_results_["mean_test_score"]) == 2


def nested_estimators(value, seen: set | None = None):
    """Every scikit-learn estimator that `value` holds, itself included, however deep in its attributes,
    lists and dicts."""
    seen = set() if seen is None else seen
    if id(value) in seen or isinstance(value, (str, bytes, np.ndarray)):
        return
    seen.add(id(value))
    if isinstance(value, BaseEstimator):
        yield value
        children = vars(value).values()
    elif isinstance(value, dict):
        children = value.values()
    elif isinstance(value, (list, tuple)):
        children = value
    else:
        return
    for child in children:
        yield from nested_estimators(child, seen)


@pytest.mark.parametrize("code, name", MODELS)
def test_every_estimator_inside_a_fitted_model_has_a_fixed_seed(fitted, code, name):
    # NLI's boosting stage once had none: its early stopping held out other rows in every process.
    unseeded = [type(estimator).__name__ for estimator in nested_estimators(fitted[code, name])
                if "random_state" in estimator.get_params(deep=False)
                and estimator.get_params(deep=False)["random_state"] is None]
    assert unseeded == []


@pytest.mark.parametrize("code,name", sorted(CLASSIFIERS))
def test_label_predictions_read_the_labels_from_one_pass_of_probabilities(fitted, code, name, monkeypatch):
    spec, path = sample(code, "dev")
    records, model = spec.reading.load(path), fitted[code, name]
    expected = [str(label) for label in model.predict(records)]
    calls = []
    original = type(model).predict_proba
    monkeypatch.setattr(type(model), "predict_proba", lambda self, X: calls.append(1) or original(self, X))
    monkeypatch.setattr(type(model), "predict", lambda self, X: pytest.fail("predict builds the features again"))
    rows = spec.modelling.predict(model, records)
    assert [row["label"] for row in rows] == expected and len(calls) == 1
    assert all(max(row["probs"], key=row["probs"].get) == row["label"] for row in rows)


def with_requirements(fitted) -> dict:
    """Models that hold what another task's training file gives (TaskSpec.links.requires), as the driver sets it:
    NER's CRF with the RE sample's gazetteer, MRC's reader with the fitted NER CRF as its tagger, RE's
    classifier with the fitted DP parser."""
    from sklearn.frozen import FrozenEstimator

    from features.gazetteer import EntityGazetteer
    re_spec, re_path = sample("re", "train")
    given = {("ner", "crf"): {"gazetteer": EntityGazetteer(re_spec.links.mentions(re_spec.reading.load(re_path)))},
             ("mrc", "span-ranker"): {"tagger": FrozenEstimator(fitted["ner", "crf"])},
             ("re", "features-lr"): {"parser": FrozenEstimator(fitted["dp", "mst"])}}
    models = {}
    for (code, name), params in given.items():
        spec, path = sample(code, "train")
        records = spec.reading.load(path)
        models[code, name] = quick_model(code, name).set_params(**params).fit(records, spec.modelling.targets(records))
    return models


def test_every_model_file_names_only_what_its_task_declares_and_loads_with_the_same_predictions(fitted, tmp_path):
    """The skops allow-list (TaskSpec.modelling.saved_types) is exactly enough: every model, and the models that hold
    another task's, saves and loads back through it and predicts the sample's dev set as before."""
    pytest.importorskip("skops.io", reason="the secure extra (skops) is not installed")
    from baselines.runtime import provenance
    from baselines.runner.persistence import load_model, save_model
    models = [(key, model) for key, model in fitted.items()]
    models += [((code, name + "+requirement"), model) for (code, name), model in with_requirements(fitted).items()]
    for (code, name), model in models:
        spec, train = sample(code, "train")
        path = tmp_path / f"{code}-{name}.model"
        save_model(path, model, code, name.split("+")[0], [train], provenance.versions())
        loaded, metadata = load_model(path, code, provenance.versions())
        assert metadata["payload_format"] == "skops"
        records = spec.reading.load(sample(code, "dev")[1])
        assert repr(list(loaded.predict(records))) == repr(list(model.predict(records))), (code, name)
