"""Test helper: a fitted model saved and loaded predicts as before, and is refused as an older version saved it."""
from __future__ import annotations

import numpy as np
import pytest

from baselines.runtime.provenance import versions
from baselines.errors import ModelFileError
from baselines.runner.persistence import load_model, save_model


def assert_persists_and_refused_without(tmp_path, model, task: str, model_name: str, test: list, attribute: str,
                                        refusal: str):
    """Saved and loaded, `model` predicts `test` exactly as before; saved without `attribute` (as a version
    before it saved the model), loading it fails with a ModelFileError matching `refusal`. Returns the model
    loaded back."""
    train_file = tmp_path / "train"
    train_file.write_text("", encoding="utf-8")
    save_model(tmp_path / "new.joblib", model, task, model_name, [train_file], versions())
    loaded, _ = load_model(tmp_path / "new.joblib", task, versions())
    np.testing.assert_equal(loaded.predict(test), model.predict(test))
    delattr(model, attribute)
    save_model(tmp_path / "old.joblib", model, task, model_name, [train_file], versions())
    with pytest.raises(ModelFileError, match=refusal):
        load_model(tmp_path / "old.joblib", task, versions())
    return loaded
