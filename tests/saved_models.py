"""Test helper: model files as a release saves them, one a task, kept under tests/data/model-files/<version>/ so that
a later change to the code (a type moved, a feature renamed) shows against files saved before it.

    python tests/saved_models.py tests/data/model-files/0.2.0     # writes <task>.model and <task>.predictions.json

Each model is fitted on the first records of the shipped sample's training file, few enough that the file stays
small (a task's default where that is small, its fast model where the default holds large fixed tables), and
saved as `train` saves it; beside it, its predictions on the first records of the sample's dev file. Written again
for each release: a file saved by another version is refused with one line (the check of `test_saved_models`).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from baselines import api
from baselines.runner import persistence
from baselines.runner.registry import TASK_CODES, get_task
from baselines.runtime import provenance

MODEL_FILES = Path(__file__).with_name("data") / "model-files"
# Each task's model and how many training records it is fitted on: the defaults of STS, NLI and DP hold tables of
# a fixed size (boosted trees, hashed weights) that would make the files megabytes.
SAVED = {"ynat": ("tfidf-lr", 80), "sts": ("fast", 60), "nli": ("fast", 60), "ner": ("crf", 60),
         "re": ("features-lr", 80), "dp": ("fast", 60), "mrc": ("span-ranker", 60), "wos": ("rules-lr", 10)}
DEV_RECORDS = 20


def dev_records(code: str) -> list:
    """The records the saved predictions are of: the first of the sample's dev file."""
    return get_task(code).reading.load(api.data_file(code, "dev"))[:DEV_RECORDS]


def write(target: Path) -> list[Path]:
    """Every task's model file and predictions under `target`."""
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for code in TASK_CODES:
        spec, (name, count) = get_task(code), SAVED[code]
        train = api.data_file(code, "train")
        records = spec.reading.load(train)[:count]
        model = api.make_model(code, name).fit(records, spec.modelling.targets(records))
        path = target / f"{code}.model"
        persistence.save_model(path, model, code, name, [train], provenance.versions())
        predictions = spec.modelling.predict(model, dev_records(code))
        text = json.dumps(predictions, ensure_ascii=False, indent=0) + "\n"
        (target / f"{code}.predictions.json").write_text(text, encoding="utf-8")
        written += [path, target / f"{code}.predictions.json"]
    return written


if __name__ == "__main__":
    for written_path in write(Path(sys.argv[1])):
        print(written_path)
