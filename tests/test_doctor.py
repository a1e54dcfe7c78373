"""`doctor`: a check of the install that names what fails and exits with 1 then."""
from __future__ import annotations

from click.testing import CliRunner

from baselines.cli import main
from features import analysis


def test_doctor_says_the_install_works_and_what_else_is_there(tmp_path):
    result = CliRunner().invoke(main, ["-q", "doctor", "--models-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[-1] == "The install works."
    assert [line.split()[1] for line in lines if line.startswith("ok ") and line.split()[2] == "trivial"] == [
        "ynat", "sts", "nli", "ner", "re", "dp", "mrc", "wos"]
    assert any(line.startswith("ok     ner crf ") and "entity_macro_f1" in line for line in lines)
    assert any(line.startswith("--     ready models") and f"none in {tmp_path}" in line for line in lines)


def test_doctor_names_a_failing_check_and_exits_with_1(monkeypatch):
    def broken(texts):
        raise RuntimeError("no model files")

    monkeypatch.setattr(analysis, "analyze", broken)
    result = CliRunner().invoke(main, ["-q", "doctor"])
    assert result.exit_code == 1
    assert "FAILED kiwi             cannot analyse a sentence: RuntimeError: no model files" in result.output
    assert "checks failed: kiwi" in result.output.splitlines()[-1]  # and the models that analyse text
