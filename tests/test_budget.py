"""`bench budget`: a task's default row rerun and set against raw Kiwi analysis of the same texts, in one run."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from baselines.bench import budget

from baselines.runner import tables


def test_the_default_row_is_rerun_and_measured_against_raw_kiwi(tmp_path):
    for models in (["--model", "trivial"], []):
        recorded = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "run", "ynat", *models,
                                   "--results-dir", "results"], cwd=tmp_path, capture_output=True, text=True)
        assert recorded.returncode == 0, recorded.stderr
    bench = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "bench", "budget", "ynat"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert bench.returncode == 0, bench.stdout + bench.stderr
    report = json.loads((tmp_path / "results" / "budget.json").read_text(encoding="utf-8"))
    assert list(report["tasks"]) == ["ynat"]  # the trivial row is not the suite's
    task = report["tasks"]["ynat"]
    committed = json.loads((tmp_path / "results" / "ynat.json").read_text(encoding="utf-8"))["runs"]["tfidf-lr"]
    assert task["run"] == "tfidf-lr" and task["headline"] == committed["headline"]  # the row, rerun
    assert task["raw_kiwi"]["texts"] == 400  # the sample's 300 training and 100 dev titles, each once
    assert task["ratio"] == round(task["seconds"] / task["raw_kiwi"]["seconds"], 2)
    assert report["suite"]["within_budget"] == (report["suite"]["ratio"] <= 5)
    assert report["command"] == "klue-baselines -q bench budget ynat"
    assert "| suite, default |" in (tmp_path / "results" / "README.md").read_text(encoding="utf-8")
    fast = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "bench", "budget", "ynat", "--model", "fast"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert fast.returncode != 0 and "no fast rows to rerun" in fast.stderr  # `run --model fast` made none


def test_the_budget_table_shows_each_task_and_the_suite(tmp_path):
    report = {"tasks": {"ynat": {"run": "tfidf-lr", "seconds": 44.0, "ratio": 2.2,
                                 "raw_kiwi": {"seconds": 20.0, "texts": 54785}}},
              "suite": {"seconds": 44.0, "raw_kiwi_seconds": 20.0, "ratio": 2.2, "budget_ratio": 5.0,
                        "within_budget": True}}
    (tmp_path / "budget.json").write_text(json.dumps(report), encoding="utf-8")
    table = tables.budget_table(Path(tmp_path))
    assert "| ynat | tfidf-lr | 44.0 | 20.0 | 54785 | 2.20x |" in table and "within the budget of 5x" in table
    fast = {"tasks": {"ynat": {"run": "fast", "seconds": 14.0, "ratio": 0.7, "raw_kiwi": {"seconds": 20.0,
                                                                                         "texts": 54785}}},
            "suite": {"seconds": 14.0, "raw_kiwi_seconds": 20.0, "ratio": 0.7, "budget_ratio": 5.0,
                      "within_budget": True}}
    (tmp_path / "budget-fast.json").write_text(json.dumps(fast), encoding="utf-8")
    table = tables.budget_table(Path(tmp_path))
    assert "| suite, default | | 44.0 | 20.0 | | 2.20x |" in table and "| ynat | fast | 14.0 |" in table
    assert "With the fast models the suite takes 0.70 times" in table
    assert tables.budget_table(Path(tmp_path / "absent")) is None


def test_the_texts_come_from_the_data_files_not_the_extras():
    record = {"files": [{"path": "/d/klue-re-v1.1_train.json"}, {"path": "/d/klue-re-v1.1_dev.json"},
                        {"path": "/d/relation_list.json"}]}
    assert budget.data_files("re", record) == ["/d/klue-re-v1.1_train.json", "/d/klue-re-v1.1_dev.json"]
    assert budget.data_files("wos", {"files": [{"path": "/d/wos-v1.1_dev.json"}, {"path": "/d/ontology.json"}]}) \
        == ["/d/wos-v1.1_dev.json"]
