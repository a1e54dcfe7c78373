"""`doctor`: a check of the install that names what fails and exits with 1 then."""
from __future__ import annotations

import json

from click.testing import CliRunner

from baselines.cli import main
from baselines.runtime.provenance import versions
from features import analysis


def test_doctor_says_the_install_works_and_what_else_is_there(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "nli.json").write_text(json.dumps({"task": "nli", "runs": {"trivial": {
        "command": "klue-baselines run nli --model trivial", "headline": {"accuracy": 33.33},
        "versions": {**versions(), "scipy": "0.9.0"}}}}), encoding="utf-8")
    result = CliRunner().invoke(main, ["-q", "doctor", "--models-dir", str(tmp_path), "--results-dir", str(results)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[-1] == "The install works."
    assert [line.split()[1] for line in lines if line.startswith("ok ") and line.split()[2] == "trivial"] == [
        "ynat", "sts", "nli", "ner", "re", "dp", "mrc", "wos"]
    assert any(line.startswith("ok     ner crf ") and "entity_macro_f1" in line for line in lines)
    assert any(line.startswith("--     ready models") and f"none in {tmp_path}" in line for line in lines)
    assert f"--     recorded versions scipy: the rows recorded 0.9.0; installed {versions()['scipy']}" in lines[-2]


def test_doctor_names_a_failing_check_and_exits_with_1(monkeypatch):
    def broken(texts):
        raise RuntimeError("no model files")

    monkeypatch.setattr(analysis, "analyze", broken)
    result = CliRunner().invoke(main, ["-q", "doctor"])
    assert result.exit_code == 1
    assert "FAILED kiwi             cannot analyse a sentence: RuntimeError: no model files" in result.output
    assert "checks failed: kiwi" in result.output.splitlines()[-1]  # and the models that analyse text
