"""Shared test fixtures: where ../shared is, and an analysis cache that never touches the user's."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import quick_model, sample_records, shared_folder


@pytest.fixture(autouse=True, scope="session")
def private_analysis_cache(tmp_path_factory):
    """Every test session gets its own analysis cache and data-dir settings."""
    from features import analysis

    cache = tmp_path_factory.mktemp("analysis-cache")
    saved = {key: os.environ.get(key) for key in ("KLUE_BASELINES_CACHE", "KLUE_DATA_DIR", "XDG_CACHE_HOME")}
    os.environ["KLUE_BASELINES_CACHE"] = str(cache)
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    os.environ.pop("KLUE_DATA_DIR", None)
    analysis.configure(cache_dir=cache)
    yield cache
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def shared_klue() -> Path:
    return shared_folder("klue", "the KLUE copies")


@pytest.fixture(scope="session")
def metric_vectors() -> Path:
    return shared_folder("klue-metric-vectors", "the reference metric vectors")


@pytest.fixture(scope="session")
def quick_fit():
    """fit(code, name): that model with helpers.QUICK's settings, fitted on its sample's training file the first
    time a test asks for it in this process, then shared. Tests read these models and never change them."""
    from baselines.runner.registry import get_task

    fitted = {}

    def fit(code: str, name: str):
        if (code, name) not in fitted:
            records = sample_records(code, "train")
            fitted[code, name] = quick_model(code, name).fit(records, get_task(code).modelling.targets(records))
        return fitted[code, name]
    return fit
