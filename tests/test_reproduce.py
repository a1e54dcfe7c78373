"""`reproduce` and `bench determinism`: recorded commands rerun safely, differences and their likely causes
named (code, machine, versions), predictions compared under other kernels, threads and hash seeds."""
from __future__ import annotations

import json
import re
import subprocess
import sys

from baselines import api
from baselines.bench import determinism, reproduce
from baselines.runtime import provenance
from baselines.data.fileio import write_json_atomic
from baselines.runner.registry import TASK_CODES

from helpers import cli, refused


def test_reproduce_reruns_recorded_commands_and_fails_on_a_difference(tmp_path):
    run = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "run", "ynat", "nli", "--model", "trivial",
                          "--results-dir", "results"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    record = json.loads((tmp_path / "results" / "ynat.json").read_text(encoding="utf-8"))["runs"]["trivial"]
    assert len(record["code"]["source_sha256"]) == 64
    assert record["command"] == "klue-baselines -q run ynat nli --model trivial --results-dir results"

    same = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "reproduce", "ynat", "nli"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "2 of 2 recorded scores reproduced" in same.stdout and "Warning" not in same.stderr

    data = json.loads((tmp_path / "results" / "ynat.json").read_text(encoding="utf-8"))
    data["runs"]["trivial"]["versions"]["kiwipiepy"] = "0.1.0"
    write_json_atomic(tmp_path / "results" / "ynat.json", data)
    other_kiwi = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "reproduce", "ynat"], cwd=tmp_path,
                                capture_output=True, text=True)
    installed = provenance.versions()["kiwipiepy"]
    assert other_kiwi.stderr.startswith(f"Warning: kiwipiepy: the rows recorded 0.1.0; installed {installed}\n")
    assert "pip install -c results/constraints.txt" in other_kiwi.stderr
    assert "kiwipiepy==" in (tmp_path / "results" / "constraints.txt").read_text(encoding="utf-8")

    data = json.loads((tmp_path / "results" / "nli.json").read_text(encoding="utf-8"))
    assert data["runs"]["trivial"]["machine"] == provenance.machine()
    data["runs"]["trivial"]["headline"]["accuracy"] += 0.0001
    write_json_atomic(tmp_path / "results" / "nli.json", data)
    different = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "reproduce", "ynat", "nli"],
                               cwd=tmp_path, capture_output=True, text=True)
    assert different.returncode == 1 and "DIFFERENT" in different.stdout
    assert "recorded on" not in different.stdout  # recorded here: the machine does not explain it

    # A row recorded with other kernels says so, with this machine's for comparison.
    data["runs"]["trivial"]["machine"]["kiwi_arch"] = "avx512vnni"
    write_json_atomic(tmp_path / "results" / "nli.json", data)
    elsewhere = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "reproduce", "ynat", "nli"],
                               cwd=tmp_path, capture_output=True, text=True)
    assert "nli trivial: recorded on" in elsewhere.stdout and "Kiwi kernels avx512vnni" in elsewhere.stdout
    assert "ynat trivial" not in elsewhere.stdout.split("reproduced")[-1]  # the same scores need no note
    assert "this machine: " in elsewhere.stdout

    # A row recorded by other code says so, whether or not its scores moved.
    here = provenance.code_version().get("git_commit")
    for task in ("nli", "ynat"):
        data = json.loads((tmp_path / "results" / f"{task}.json").read_text(encoding="utf-8"))
        data["runs"]["trivial"]["code"]["git_commit"] = "0" * 40
        write_json_atomic(tmp_path / "results" / f"{task}.json", data)
    older = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "reproduce", "ynat", "nli"],
                           cwd=tmp_path, capture_output=True, text=True)
    if here:  # HEAD as the rerun saw it (this process's may be older, if a commit came meanwhile)
        assert re.search(r"nli trivial: recorded by the code at 0000000, rerun at [0-9a-f]{7}: differs", older.stdout)
        assert re.search(r"ynat trivial: recorded by the code at 0000000, rerun at [0-9a-f]{7}: reproduced",
                         older.stdout)
    else:
        assert "this code is not a git checkout" in older.stdout


def test_reproduce_names_the_code_each_row_was_rerun_by():
    """A commit can land while a long reproduce runs: each row's note names the code its own rerun recorded."""
    early, late, recorded = "a" * 40, "b" * 40, "c" * 40
    comparisons = [reproduce.Comparison("ynat", "fast", "macro_f1", 81.84, 81.84, None, recorded, early),
                   reproduce.Comparison("mrc", "fast", "exact_match", 31.93, 31.93, None, recorded, late),
                   reproduce.Comparison("wos", "fast", "slot_f1", 90.69, 90.69, None, late, late),
                   reproduce.Comparison("dp", "fast", "uas_micro_f1", 85.67, 85.67, None, recorded, None)]
    assert reproduce.code_notes(comparisons, late) == [
        "ynat fast: recorded by the code at ccccccc, rerun at aaaaaaa: reproduced all the same",
        "mrc fast: recorded by the code at ccccccc, rerun at bbbbbbb: reproduced all the same",
        "dp fast: recorded by the code at ccccccc, rerun at bbbbbbb: reproduced all the same"]


def test_reproduce_runs_only_the_installed_toolkits_run_and_writes_only_to_its_scratch_folder(tmp_path):
    run = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "run", "ynat", "--model", "trivial",
                          "--results-dir", "results"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    # A baselines/ folder beside results/ must not be what runs.
    planted = tmp_path / "baselines"
    planted.mkdir()
    marker = tmp_path / "planted-code-ran"
    for name in ("__init__.py", "cli.py"):
        (planted / name).write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    results_file = tmp_path / "results" / "ynat.json"
    data = json.loads(results_file.read_text(encoding="utf-8"))
    recorded = data["runs"]["trivial"]["command"]
    data["runs"]["trivial"]["command"] = recorded + " --plots figures --predictions-dir predictions"
    write_json_atomic(results_file, data)
    code, output = cli("reproduce", "ynat", "--results-dir", tmp_path / "results")
    assert code == 0 and "1 of 1 recorded scores reproduced" in output, output
    assert not marker.exists() and not (tmp_path / "figures").exists() and not (tmp_path / "predictions").exists()
    # Only `run` is rerun: a recorded bench command with the word run in it is not.
    data["runs"]["trivial"]["command"] = "klue-baselines bench learning-curve ynat --data-dir run --plots figures"
    write_json_atomic(results_file, data)
    code, output = cli("reproduce", "ynat", "--results-dir", tmp_path / "results")
    assert code == 1 and "not rerun: only `klue-baselines run` commands are rerun" in output, output
    assert not (tmp_path / "figures").exists()
    data["runs"]["trivial"]["command"] = recorded + " --no-such-option 3"
    write_json_atomic(results_file, data)
    code, output = cli("reproduce", "ynat", "--results-dir", tmp_path / "results")
    assert code == 1 and "is not one `run` takes (No such option" in output and "--no-such-option" in output, output
    # Malformed fields: one line each, no traceback, and nothing read from stdin.
    for field, value, expected in (("command", 42, "'command' should be the recorded command line, not int"),
                                   ("command", None, "'command' should be the recorded command line, not NoneType"),
                                   ("headline", [1, 2], "'headline' should be an object of metric names")):
        data["runs"]["trivial"] = {**data["runs"]["trivial"], "command": recorded, field: value}
        write_json_atomic(results_file, data)
        error = refused("reproduce", "ynat", "--results-dir", tmp_path / "results")
        assert f"{results_file}: run trivial: {expected}" in error, error


def test_all_default_models_predict_alike_under_other_kernels_threads_and_hash_seeds(tmp_path):
    """`bench determinism` on the sample: every default model, rerun under other OpenBLAS kernels, 1 and 2 BLAS
    and OpenMP threads, numpy's loops without AVX2 and another PYTHONHASHSEED each, predicts every row alike."""
    chosen = determinism.variants()
    assert len({variant.environment["PYTHONHASHSEED"] for variant in chosen}) == len(chosen) >= 3
    assert {variant.environment["OPENBLAS_NUM_THREADS"] for variant in chosen} == {"1", "2"}
    report, path = api.determinism(results_dir=tmp_path, at_once=2)
    written = json.loads(path.read_text(encoding="utf-8"))
    assert path == tmp_path / "determinism.json" and [bench["sample"] for bench in written["benches"]] == [True]
    assert written["benches"][0]["model"] is None  # the default models: what `--model fast` is kept beside
    assert {stem.split("-")[0] for stem in report["tasks"]} == set(TASK_CODES)
    different = {stem: [(v["name"], v["first_differing"][:3]) for v in entry["variants"] if v["differing_rows"]]
                 for stem, entry in report["tasks"].items() if not entry["identical"]}
    assert report["identical"] and not different, different
    assert all(entry["rows"] > 0 and entry["headline"] for entry in report["tasks"].values())


def test_determinism_json_keeps_the_latest_bench_of_each_task_and_model(tmp_path):
    path = tmp_path / "determinism.json"
    bench = {"nli": {"task_codes": ["nli"], "identical": True}, "ner": {"task_codes": ["ner"], "identical": False},
             "ynat-sts": {"task_codes": ["ynat", "sts"], "identical": True}}
    for name in ("nli", "ner", "ynat-sts"):
        write_json_atomic(path, determinism.merged_file(path, bench[name]))
    assert [b["task_codes"] for b in json.loads(path.read_text())["benches"]] == [["ynat", "sts"], ["nli"], ["ner"]]
    assert json.loads(path.read_text())["identical"] is False
    rerun = {"task_codes": ["ner"], "identical": True}
    written = determinism.merged_file(path, rerun)
    assert written["identical"] is True and written["benches"][-1] is rerun and len(written["benches"]) == 3
    write_json_atomic(path, written)
    fast = {"task_codes": ["nli"], "model": "fast", "identical": True}
    with_fast = determinism.merged_file(path, fast)  # another model of the task: kept beside the default's
    assert [(b["task_codes"], b.get("model")) for b in with_fast["benches"]] == [
        (["ynat", "sts"], None), (["nli"], None), (["nli"], "fast"), (["ner"], None)]
    write_json_atomic(path, with_fast)
    fast_again = {"task_codes": ["nli"], "model": "fast", "identical": False}
    assert determinism.merged_file(path, fast_again)["benches"][2] is fast_again
    assert determinism.merged_file(path, fast_again)["benches"][1]["identical"] is True
    path.write_text('{"tasks": {}, "identical": true}')  # the single-report form of earlier versions
    assert determinism.merged_file(path, rerun)["benches"] == [rerun]


def test_determinism_compares_predictions_not_only_scores():
    reference = [{"guid": "a", "label": "x", "probs": {"x": 0.6, "y": 0.4}}, {"guid": "b", "belief": -0.4527289068}]
    last_bits = [{"guid": "a", "label": "x", "probs": {"x": 0.600001, "y": 0.4}},
                 {"guid": "b", "belief": -0.45272890681}]
    assert determinism.differing_rows(reference, last_bits) == []
    relabelled = [{"guid": "a", "label": "y", "probs": {"x": 0.6, "y": 0.4}}, reference[1]]
    assert determinism.differing_rows(reference, relabelled) == [{"guid": "a", "fields": ["label"]}]
    assert determinism.differing_rows(reference, reference[:1]) == [{"guid": "b", "fields": ["belief", "guid"]}]
    # A kernel pinned by the environment is kept; threads and numpy's loops still vary.
    pinned = determinism.variants(flags=["pni", "avx", "avx2"], machine="x86_64", pinned_kernel="Prescott")
    assert {v.environment["OPENBLAS_CORETYPE"] for v in pinned} == {"Prescott"} and len(pinned) == 3
    assert [v.environment.get("OPENBLAS_CORETYPE") for v in determinism.variants(
        flags=["pni", "avx", "avx2"], machine="x86_64", pinned_kernel="")] == ["Haswell", "Sandybridge", "Prescott",
                                                                               "Haswell"]


def test_reproduce_of_one_task_reruns_that_task_only_of_a_command_that_ran_several(tmp_path):
    """The floors of YNAT, STS, NLI and RE were recorded by one command; `reproduce sts` reruns it for STS alone."""
    from baselines.cli.scores import run as run_command

    recorded = "klue-baselines -q run ynat sts nli re --data-dir data --model trivial"
    (tmp_path / "data").mkdir()
    arguments = reproduce.rerun_arguments(recorded, run_command, tmp_path, tmp_path / "out", tmp_path / "cache",
                                          {"sts"})
    assert arguments[arguments.index("run") + 1:arguments.index("--model")] == ["sts"]
    every = reproduce.rerun_arguments(recorded, run_command, tmp_path, tmp_path / "out", tmp_path / "cache")
    assert every[every.index("run") + 1:every.index("--model")] == ["ynat", "sts", "nli", "re"]
