"""Models ready before class: trained into one folder with a README, found again by the API and the lessons."""
from __future__ import annotations

import json

from click.testing import CliRunner

from baselines import api
from baselines.cli import main
from helpers import beats_the_sample_floor


def test_ready_models_are_trained_recorded_and_found_again(tmp_path, monkeypatch):
    monkeypatch.delenv("KLUE_DATA_DIR", raising=False)
    folder = tmp_path / "models"
    lines = []
    entries = api.train_all(["ynat", "re"], models_dir=folder, command="klue-baselines train --all", log=lines.append)
    assert [entry["task"] for entry in entries] == ["ynat", "re"]
    assert (folder / "ynat.model").is_file() and (folder / "re.model").is_file()
    assert any(line.startswith("[1/2] ynat: training tfidf-lr") for line in lines)
    assert any(line.startswith("[2/2] re: re.model") and "micro_f1" in line for line in lines)
    catalogue = json.loads((folder / "models.json").read_text(encoding="utf-8"))["models"]
    assert catalogue["ynat"]["sample"] is True
    assert beats_the_sample_floor("ynat", "macro_f1", catalogue["ynat"]["headline"]["macro_f1"])
    assert set(catalogue["ynat"]) >= {"train_seconds", "train_peak_rss_mb", "size_mb", "train", "dev", "command"}
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert "| ynat | tfidf-lr | ynat.model |" in readme and "(the shipped sample)" in readme
    assert "    klue-baselines train --all" in readme
    model = api.ready_model("ynat", models_dir=folder)
    rows = api.predict("ynat", model, ["손흥민 시즌 10호 골"], log=api.quiet)
    assert rows[0]["label"] == api.predict("ynat", api.fit("ynat", api.data_file("ynat", "train"), log=api.quiet),
                                           ["손흥민 시즌 10호 골"], log=api.quiet)[0]["label"]
    said = []
    assert api.class_model("ynat", models_dir=folder, log=said.append) is not None
    assert said == [f"ynat: using the ready model {folder / 'ynat.model'} (trained on ynat-v1.1_train.json)"]
    assert api.ready_model("ner", models_dir=folder) is None
    said.clear()
    api.class_model("ner", models_dir=folder, log=said.append)
    assert said[0].startswith(f"ner: no ready model in {folder}: fitting crf on klue-ner-v1.1_train.tsv")


def test_the_ready_models_folder_comes_from_the_environment(tmp_path, monkeypatch):
    from baselines.runner import ready
    monkeypatch.setenv("KLUE_MODELS_DIR", str(tmp_path))
    assert ready.models_dir() == tmp_path and ready.models_dir(tmp_path / "x") == tmp_path / "x"
    monkeypatch.delenv("KLUE_MODELS_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert ready.models_dir() == tmp_path / "cache" / "klue-baselines" / "models"


def test_train_all_is_a_command_that_takes_no_task_of_its_own():
    refused = CliRunner().invoke(main, ["train", "ner", "--all"])
    assert refused.exit_code != 0 and "--all trains each task's default model on its own files: leave out TASK" \
        in refused.output
    assert "give a TASK, or --all" in CliRunner().invoke(main, ["train"]).output
    assert "--out-dir goes with --all" in CliRunner().invoke(main, ["train", "ner", "--out-dir", "x"]).output
