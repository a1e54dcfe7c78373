"""Model files saved by a release still load and predict as they did when saved, or, saved by another version, are
refused with one line that names the version and the command that trains a new one."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from baselines.errors import ModelFileError
from baselines.runner import persistence
from baselines.runner.registry import TASK_CODES, get_task
from baselines.runtime import provenance
from saved_models import MODEL_FILES, dev_records

pytest.importorskip("skops.io", reason="the secure extra (skops) is in the test extra; the saved files are skops")
SAVED = sorted(path for path in MODEL_FILES.glob("*/*.model"))


def same(saved, predicted) -> bool:
    """Predictions equal, numbers to 1e-9 (a loaded model computes as the saved one did; another CPU's BLAS kernels
    may round the last bits of a probability otherwise)."""
    if isinstance(saved, dict) and isinstance(predicted, dict):
        return saved.keys() == predicted.keys() and all(same(saved[key], predicted[key]) for key in saved)
    if isinstance(saved, list) and isinstance(predicted, list):
        return len(saved) == len(predicted) and all(map(same, saved, predicted))
    if isinstance(saved, float) or isinstance(predicted, float):
        return math.isclose(saved, predicted, rel_tol=1e-9, abs_tol=1e-12)
    return saved == predicted


def test_every_task_has_a_saved_model_of_this_release():
    assert {path.stem for path in (MODEL_FILES / provenance.versions()["klue_baselines"]).glob("*.model")} == \
        set(TASK_CODES)


@pytest.mark.parametrize("path", SAVED, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_a_saved_model_loads_and_predicts_as_it_did_or_is_refused_in_one_line(path: Path):
    code = path.stem
    metadata, _offset = persistence.read_metadata(path)
    current = provenance.versions()
    differing = [library for library in ("klue_baselines", "kiwipiepy", "scikit_learn")
                 if metadata["versions"].get(library) != current.get(library)]
    if differing:
        library = differing[0]
        with pytest.raises(ModelFileError) as refused:
            persistence.load_model(path, code, current)
        message = str(refused.value)
        assert "\n" not in message and f"saved with {library} {metadata['versions'][library]}" in message
        assert f"klue-baselines train {code}" in message
        return
    model, loaded = persistence.load_model(path, code, current)
    assert loaded["model"] in get_task(code).modelling.models
    saved = json.loads(path.with_name(f"{code}.predictions.json").read_text(encoding="utf-8"))
    assert same(saved, get_task(code).modelling.predict(model, dev_records(code)))


def test_a_file_of_another_version_is_refused_naming_it_and_the_command(tmp_path):
    """As a file of the next release will be: its header's version is not this one's."""
    source = MODEL_FILES / provenance.versions()["klue_baselines"] / "ynat.model"
    current = {**provenance.versions(), "klue_baselines": "0.0.1"}
    with pytest.raises(ModelFileError, match=r"saved with klue_baselines \S+, but this is 0\.0\.1; train the model "
                                             r"again with this version \(klue-baselines train ynat; train --all for "
                                             r"the ready models\)$"):
        persistence.load_model(source, "ynat", current)
