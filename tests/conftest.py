"""Shared test fixtures: where ../shared is, and an analysis cache that never touches the user's."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KLUE_SHARED_DIR", REPO.parent / "shared"))


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


def shared_folder(name: str, what: str) -> Path:
    """A folder of ../shared, or a skip that says what is missing and why."""
    path = SHARED / name
    if not path.is_dir():
        pytest.skip(f"{what} in {path} are absent (they are not part of the repository)")
    return path


@pytest.fixture(scope="session")
def shared_klue() -> Path:
    return shared_folder("klue", "the KLUE copies")


@pytest.fixture(scope="session")
def metric_vectors() -> Path:
    return shared_folder("klue-metric-vectors", "the reference metric vectors")


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path
