"""Tasks that another distribution registers through the `klue_baselines.tasks` entry points join the built-in
ones: listed from their cards, run, scored and recorded with no file of baselines/ edited; a clash or an
unreadable card is an error that names its sources."""
from __future__ import annotations

import json
import subprocess
import sys

from baselines.data.fileio import file_sha256
from helpers import REPO, json_records, write_json

TOY_TASK = '''"""A toy ninth task: YNAT's records, models and scorer under another code, card and folder."""
import dataclasses

from baselines.runner.registry import get_task

TASK = dataclasses.replace(get_task("ynat"), code="toy", title="TOY topics", folder="toy-v1",
                           train_file="toy_train.json", dev_file="toy_dev.json")
'''


def toy_distribution(root, name: str = "toy", module: str = "toy_topics"):
    """A package `module` with its card and TaskSpec, and a dist-info that registers it as task `name`: what
    `pip install` of a third-party task leaves on the path."""
    package = root / module
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(TOY_TASK, encoding="utf-8")
    data = root / "data" / "toy-v1"
    data.mkdir(parents=True)
    (package / "sample" / "toy-v1").mkdir(parents=True)
    for split in ("train", "dev"):  # the sample's titles less one: its own bytes, not the shipped sample's
        write_json(data / f"toy_{split}.json", json_records("ynat", split)[:-1])
        # and a sample of its own in its package, as the built-in tasks have theirs
        write_json(package / "sample" / "toy-v1" / f"toy_{split}.json", json_records("ynat", split)[:60])
    (package / "sample" / "NOTICE.md").write_text("KLUE YNAT titles, CC BY-SA 4.0\n", encoding="utf-8")
    card = json.loads((REPO / "baselines" / "tasks" / "ynat" / "card.json").read_text(encoding="utf-8"))
    card.update(code="toy", order=9, title={"en": "TOY topics", "ko": "장난감 주제"}, folder="toy-v1", derived_files=[],
                official_files=[{"file": path.name, "bytes": path.stat().st_size, "sha256": file_sha256(path),
                                 "url": f"http://127.0.0.1:9/toy-v1/{path.name}"} for path in sorted(data.iterdir())],
                published=[], files={**card["files"], "train": "toy_train.json", "dev": "toy_dev.json"})
    card["huggingface"] = {**card["huggingface"], "config": "toy", "split_sizes": {
        split: len(json.loads((data / f"toy_{split}.json").read_text(encoding="utf-8"))) for split in ("train", "dev")}}
    (package / "card.json").write_text(json.dumps(card, ensure_ascii=False), encoding="utf-8")
    info = root / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[klue_baselines.tasks]\n{name} = {module}\n", encoding="utf-8")
    return data


def cli_environment(root) -> dict[str, str]:
    return {"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "HOME": str(root), "KLUE_CACHE_DIR": str(root / "cache")}


def cli(root, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "baselines.cli", "-q", *map(str, args)], cwd=root,
                          capture_output=True, text=True, env=cli_environment(root))


# The demo page with the toy task installed: its menu name, the text form's tasks, a prediction drawn.
PAGE_CHECK = """
import re, sys
from pathlib import Path
from baselines import api
from baselines.web import app
models = app.Models(Path(sys.argv[1]), api.quiet)
print(app.task_names()["toy"])
print(re.findall('data-tasks="([^"]*)"', app.page(models))[0])
print("drawn" if 'class="item"' in app.predicted_html(models, "toy", {"text": "손흥민 시즌 10호 골"}) else "not drawn")
"""


def source_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "baselines"], cwd=REPO, capture_output=True,
                          text=True).stdout


def test_a_task_registered_by_entry_point_is_listed_run_scored_and_recorded(tmp_path):
    before = source_status()
    data = toy_distribution(tmp_path)
    listed = cli(tmp_path, "tasks")
    assert listed.returncode == 0, listed.stderr
    assert "toy   TOY topics" in listed.stdout and "toy-v1/toy_dev.json: " + str(
        tmp_path / "toy_topics" / "sample" / "toy-v1" / "toy_dev.json") in listed.stdout  # its own sample
    run = cli(tmp_path, "run", "toy", "--model", "trivial", "--train", data / "toy_train.json", "--dev",
              data / "toy_dev.json", "--results-dir", "results", "--predictions-dir", "predictions")
    assert run.returncode == 0, run.stderr
    assert "toy   trivial  macro_f1" in run.stdout and "| toy | macro_f1 | 99 |" in (
        tmp_path / "results" / "README.md").read_text(encoding="utf-8")
    record = json.loads((tmp_path / "results" / "toy.json").read_text(encoding="utf-8"))["runs"]["trivial"]
    assert record["protocol"] == "official"  # its card lists these very bytes as its official files
    scored = cli(tmp_path, "score", "toy", "--gold", data / "toy_dev.json", "--predictions",
                 tmp_path / "predictions" / "toy-trivial.jsonl", "--json")
    assert scored.returncode == 0 and json.loads(scored.stdout)["metrics"]["macro_f1"] == record["metrics"]["macro_f1"]
    on_its_sample = cli(tmp_path, "run", "toy", "--model", "trivial")
    assert on_its_sample.returncode == 0 and "toy   trivial  macro_f1" in on_its_sample.stdout
    assert "(scores on the shipped sample" in on_its_sample.stdout
    doctor = cli(tmp_path, "doctor", "--models-dir", tmp_path / "models")
    assert doctor.returncode == 0 and "ok     toy trivial" in doctor.stdout, doctor.stdout
    drawn = cli(tmp_path, "predict", "toy", "--train", data / "toy_train.json", "--input", data / "toy_dev.json",
                "--format", "html", "--output", "toy.html")
    assert drawn.returncode == 0, drawn.stderr
    assert (tmp_path / "toy.html").read_text(encoding="utf-8").count('class="item"') == 99
    on_the_page = subprocess.run([sys.executable, "-c", PAGE_CHECK, str(tmp_path / "models")], cwd=tmp_path,
                                 capture_output=True, text=True, env=cli_environment(tmp_path))
    assert on_the_page.returncode == 0, on_the_page.stderr
    assert on_the_page.stdout.splitlines() == ["TOY 장난감 주제", "ynat ner dp toy re", "drawn"]
    checked = cli(tmp_path, "download", "toy", "--data-dir", tmp_path / "data")  # its files, checked by sha256
    assert checked.returncode == 0 and "2 files ready" in checked.stdout, checked.stderr
    assert source_status() == before  # no file of baselines/ was edited or written


def test_a_clash_or_an_unreadable_card_names_its_sources(tmp_path):
    toy_distribution(tmp_path / "clash", name="ynat")
    clash = cli(tmp_path / "clash", "tasks")
    assert clash.returncode != 0 and "Traceback" not in clash.stderr
    assert ("task 'ynat' is registered twice: by baselines.tasks.ynat and by the entry point ynat = toy_topics "
            "(klue_baselines.tasks of toy_topics)") in clash.stderr
    toy_distribution(tmp_path / "broken")
    (tmp_path / "broken" / "toy_topics" / "card.json").write_text("{", encoding="utf-8")
    broken = cli(tmp_path / "broken", "tasks")
    assert broken.returncode != 0 and "Traceback" not in broken.stderr
    assert "the entry point toy = toy_topics (klue_baselines.tasks of toy_topics): cannot read" in broken.stderr
