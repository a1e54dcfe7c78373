"""Hostile ready-models folders: train --all never replaces a file it did not write, and a tampered catalogue or a
damaged model is a clear refusal for the API, the page and doctor, never an AttributeError, a 500 or "works"."""
from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from baselines import api
from baselines.bench import doctor
from baselines.cli import main
from baselines.errors import ModelFileError, UsageError
from baselines.runner import ready


@pytest.fixture(scope="module")
def trained_folder(tmp_path_factory):
    """A ready-models folder with YNAT's default model trained on the sample, made once for the module."""
    folder = tmp_path_factory.mktemp("ready") / "models"
    api.train_all(["ynat"], models_dir=folder, command="klue-baselines train --all", log=api.quiet)
    return folder


@pytest.fixture
def folder(trained_folder, tmp_path):
    copy = tmp_path / "models"
    shutil.copytree(trained_folder, copy)
    return copy


@pytest.mark.parametrize("name, content", [
    ("README.md", "# My notes on the models\n\nDo not lose these.\n"),
    ("README.md", ""),
    ("models.json", '{"my": "settings"}'),
    ("models.json", "[" * 100_000 + "]" * 100_000),
    ("ynat.model", "not a model file"),
])
def test_train_all_never_replaces_a_file_it_did_not_write(tmp_path, name, content):
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / name).write_text(content, encoding="utf-8")
    with pytest.raises(UsageError, match=f"{folder / name}: train_all would replace this file, which it did not "
                                         f"write \\(move it, or choose another models_dir\\)"):
        api.train_all(["ynat"], models_dir=folder, log=api.quiet)
    assert (folder / name).read_text(encoding="utf-8") == content and sorted(p.name for p in folder.iterdir()) == [
        name]


def test_the_command_line_refuses_before_training_anything(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "README.md").write_text("my notes\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["-q", "train", "--all", "--out-dir", str(folder)])
    assert result.exit_code != 0 and result.output == (
        f"Error: {folder / 'README.md'}: train --all would replace this file, which it did not write (move it, or "
        f"choose another --out-dir)\n")


def test_train_all_rewrites_its_own_files_and_keeps_the_others(folder):
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert readme.startswith(ready.README_MARK + "\n# Ready models")
    api.train_all(["ynat"], models_dir=folder, command="again", log=api.quiet)
    assert "    again" in (folder / "README.md").read_text(encoding="utf-8")
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_a_readme_written_before_the_mark_is_still_rewritten(folder):
    readme = folder / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").split("\n", 1)[1], encoding="utf-8")  # as 0.2.0 wrote it
    api.train_all(["ynat"], models_dir=folder, log=api.quiet)
    assert readme.read_text(encoding="utf-8").startswith(ready.README_MARK)


@pytest.mark.parametrize("entry", ["a string", 3, None, ["ynat"], {"task": "ynat"},
                                   {"task": "ynat", "model": "tfidf-lr", "file": "ynat.model", "size_mb": 1,
                                    "train_seconds": 1, "train": "not an object", "headline": {}}])
def test_a_tampered_catalogue_entry_is_left_out_for_the_api_the_page_and_the_readme(folder, entry):
    catalogue = json.loads((folder / "models.json").read_text(encoding="utf-8"))
    catalogue["models"]["ynat"] = entry
    catalogue["models"]["re"] = {"task": "re", "file": "re.model"}  # no headline: the README had a KeyError
    (folder / "models.json").write_text(json.dumps(catalogue), encoding="utf-8")
    said = []
    assert api.class_model("ynat", models_dir=folder, log=said.append) is not None
    assert said == [f"ynat: using the ready model {folder / 'ynat.model'} (trained on its training file)"]
    assert ready.entry_problem("ynat", entry) is not None
    ready._write_readme(folder, ready._catalogue(folder))
    assert "| re |" not in (folder / "README.md").read_text(encoding="utf-8")


def test_a_catalogue_nested_past_pythons_stack_is_no_catalogue(folder):
    (folder / "models.json").write_text('{"models": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    assert ready._catalogue(folder) == {}
    assert api.ready_model("ynat", models_dir=folder) is not None


def test_the_page_answers_with_a_tampered_catalogue(folder):
    starlette = pytest.importorskip("starlette.testclient", reason="the page needs the serve extra")
    from baselines.web import app as web_app

    (folder / "models.json").write_text('{"models": {"ynat": "x", "ner": 7}}', encoding="utf-8")
    client = starlette.TestClient(web_app.create_app(folder), base_url="http://127.0.0.1:8000")
    assert client.get("/").status_code == 200
    answer = client.post("/predict", json={"task": "ynat", "text": "손흥민 시즌 10호 골"})
    assert answer.status_code == 200 and 'class="item"' in answer.json()["html"]


def damaged(folder):
    path = folder / "ynat.model"
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def test_doctor_loads_each_ready_model_and_fails_on_a_damaged_one(folder):
    assert doctor._ready_model("ynat", folder).ok is True
    path = damaged(folder)
    check = doctor._ready_model("ynat", folder)
    assert check.ok is False and check.name == "ready ynat"
    assert check.detail == (f"{path}: damaged model file (the model's bytes do not match the sha256 in its header) "
                            f"(klue-baselines train --all makes it again)")
    with pytest.raises(ModelFileError):
        api.class_model("ynat", models_dir=folder, log=api.quiet)


def test_doctor_does_not_say_the_install_works_with_a_damaged_ready_model(folder, monkeypatch):
    """The whole command, with every other check passing at once (each is tested in test_doctor.py)."""
    damaged(folder)
    monkeypatch.setattr(doctor, "_task_on_sample", lambda task, name: doctor.Check(f"{task.code} {name}", True, ""))
    result = CliRunner().invoke(main, ["-q", "doctor", "--models-dir", str(folder)])
    assert result.exit_code == 1 and "The install works." not in result.output
    assert "FAILED ready ynat" in result.output and result.output.splitlines()[-1].endswith("ready ynat")
