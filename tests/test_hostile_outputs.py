"""Where results and outputs are written: never over an input, never half-written, never out of their folder,
with permissions kept; results/ recorded honestly (sample rows apart, protocols from the bytes, two writers at
once both kept)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner

from baselines.data import sources
from baselines.runner import evaluate as evaluation, result_files
from baselines.cli import main
from baselines.data.fileio import atomic_output, file_sha256, write_json_atomic, write_jsonl_atomic
from baselines.runner.registry import get_task

from helpers import cli, json_records, refused, sample_file, write_json, write_lines


def test_sts_floor_row_is_undefined_in_results(tmp_path):
    code, output = cli("run", "sts", "--model", "trivial", "--results-dir", tmp_path)
    assert code == 0, output
    record = json.loads((tmp_path / "sts.json").read_text(encoding="utf-8"))["runs"]["trivial"]
    assert record["metrics"]["pearsonr"] is None and record["headline"]["pearsonr"] is None
    assert "| sts | pearsonr | 100 | n/a | - | - |" in (tmp_path / "README.md").read_text(encoding="utf-8")


def test_an_output_that_is_one_of_the_inputs_is_refused_and_left_alone(tmp_path):
    train = tmp_path / "train.json"
    shutil.copy(sample_file("ynat", "train"), train)
    link = tmp_path / "link.json"
    link.symlink_to(train)
    original = train.read_bytes()
    predictions = write_lines(tmp_path / "p.jsonl", [{"guid": r["guid"], "label": r["label"]}
                                                     for r in json_records("ynat")])
    for command in (["train", "ynat", "--model", "trivial", "--train", train, "--out", link],
                    ["predict", "ynat", "--train", train, "--input", train, "--output", train],
                    ["report", "ynat", "--gold", sample_file("ynat"), "--predictions", predictions, "--out",
                     predictions]):
        error = refused(*command)
        assert "is also an input of this command" in error, error
    assert train.read_bytes() == original and predictions.read_text(encoding="utf-8").count("\n") == 100


def test_written_files_follow_the_umask_and_keep_existing_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        write_json_atomic(tmp_path / "new.json", {"a": 1})
        assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o644
        existing = tmp_path / "existing.json"
        existing.write_text("{}")
        existing.chmod(0o640)
        write_json_atomic(existing, {"b": 2})
        assert stat.S_IMODE(existing.stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_writing_a_symlink_writes_its_target(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_json_atomic(link, {"written": True})
    assert link.is_symlink() and json.loads(target.read_text()) == {"written": True}


def test_writing_a_fifo_writes_through_and_keeps_it(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    write_jsonl_atomic(fifo, [{"guid": "a"}])
    reader.join(timeout=10)
    assert received == ['{"guid": "a"}\n'] and stat.S_ISFIFO(fifo.stat().st_mode)


def test_dev_null_stays_a_device(tmp_path):
    code, output = cli("predict", "ynat", "--input", sample_file("ynat"), "--output", "/dev/null",
                       "--train", sample_file("ynat", "train"))
    assert code == 0, output
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_an_output_folder_below_a_file_is_refused_before_training(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = CliRunner().invoke(main, ["run", "ynat", "--results-dir", str(blocker / "results")])
    assert result.exit_code == 1 and "is a file" in result.output
    assert "fitting" not in result.output  # nothing was trained
    error = refused("train", "ynat", "--out", blocker / "model.joblib")
    assert "is a file" in error


def test_a_part_file_left_by_a_killed_writer_is_cleaned_up(tmp_path):
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(finished.stdout)
    leftover = tmp_path / f".out.json.{dead_pid}.part"
    leftover.write_text("half")
    live = tmp_path / f".out.json.{os.getppid()}.part"  # a live process's write in progress is left alone
    live.write_text("busy")
    write_json_atomic(tmp_path / "out.json", [1])
    assert not leftover.exists() and live.exists()


def test_an_interrupted_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_output(path) as handle:
            handle.write("new, half written")
            raise RuntimeError("killed")
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_param_value_never_steers_a_file_out_of_its_folder(tmp_path):
    record = {"task": "mrc", "model": "span-ranker", "params": {"x": "../../../etc/passwd"}}
    stem = result_files.run_file_stem(record)
    assert "/" not in stem and ".." not in stem
    assert (tmp_path / f"{stem}.jsonl").resolve().parent == tmp_path.resolve()


def test_a_run_killed_after_a_results_file_leaves_no_stale_readme_after_the_next_command(tmp_path):
    results_dir = tmp_path / "results"
    code, output = cli("run", "ynat", "nli", "--model", "trivial", "--results-dir", results_dir)
    assert code == 0, output
    ynat_file, readme = results_dir / "ynat.json", results_dir / "README.md"

    def ynat_seeds() -> list:
        return sorted(run["seed"] for run in json.loads(ynat_file.read_text(encoding="utf-8"))["runs"].values())

    # README.md is written with ynat.json, not at the end of the run: it shows the new YNAT run while NLI's
    # model is still being fitted, and a SIGKILL then leaves it current. The run is held in NLI's fit (which
    # waits for a signal that never comes) until it is killed: the kill lands there, however fast the machine.
    held_in_nli = ("import signal, sys; from baselines.runner.registry import get_task; "
                   "get_task('nli').modelling.models['tfidf-lr'].estimator.fit = "
                   "lambda *args, **kwargs: signal.pause(); "
                   "from baselines.cli import main; main()")
    process = subprocess.Popen([sys.executable, "-c", held_in_nli, "-q", "run", "ynat", "nli", "--seed", "7",
                                "--results-dir", str(results_dir)], cwd=tmp_path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    while "run ynat nli --seed 7" not in readme.read_text(encoding="utf-8"):
        assert process.poll() is None, "the run ended before it reached NLI's fit"
        time.sleep(0.01)  # polling a file that the run writes; the run itself waits for the kill
    process.kill()
    assert process.wait() == -signal.SIGKILL and ynat_seeds() == [0, 7]
    # The window between ynat.json and README.md, whether or not the kill fell into it: README.md as a killed
    # run of the old code left it.
    stale = readme.read_text(encoding="utf-8").replace("run ynat nli --seed 7", "")
    readme.write_text(stale, encoding="utf-8")
    code, output = cli("run", "sts", "--model", "trivial", "--results-dir", results_dir)
    assert code == 0, output
    healed = readme.read_text(encoding="utf-8")
    assert "run ynat nli --seed 7" in healed and "| sts | trivial |" in healed


def test_copies_of_the_sample_are_recorded_as_sample_and_never_rewrite_results(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train, dev = tmp_path / "ynat-v1.1_train.json", tmp_path / "ynat-v1.1_dev.json"
    train.write_bytes(sample_file("ynat", "train").read_bytes())
    dev.write_bytes(sample_file("ynat").read_bytes())
    code, output = cli("run", "ynat", "--model", "trivial", "--train", train, "--dev", dev)
    assert code == 0 and "sample" in output
    assert not (tmp_path / "results").exists()
    code, output = cli("run", "ynat", "--model", "trivial", "--data-dir", tmp_path)
    assert code == 0 and not (tmp_path / "results").exists()
    # Given a results folder that holds KLUE runs, a sample run is refused before training.
    official = {"task": "ynat", "runs": {"tfidf-lr": {"sample": False, "headline": {"macro_f1": 83.0}}}}
    write_json_atomic(tmp_path / "klue-results" / "ynat.json", official)
    error = refused("run", "ynat", "--model", "trivial", "--train", train, "--dev", dev,
                    "--results-dir", tmp_path / "klue-results")
    assert "holds runs on KLUE data" in error
    assert json.loads((tmp_path / "klue-results" / "ynat.json").read_text()) == official


def test_runs_recorded_by_two_processes_at_once_are_all_kept(tmp_path):
    base = subprocess.run([sys.executable, "-m", "baselines.cli", "-q", "run", "ynat", "--model", "trivial",
                           "--results-dir", "results"], cwd=tmp_path, capture_output=True, text=True)
    assert base.returncode == 0, base.stderr
    script = ("import json, sys; from pathlib import Path; from baselines.runner import results\n"
              "record = json.loads(Path('results/ynat.json').read_text())['runs']['trivial']\n"
              "for number in range(60):\n"
              "    results.record_run(Path('results'), dict(record, params={'writer': sys.argv[1], 'n': number}))\n")
    writers = [subprocess.Popen([sys.executable, "-c", script, name], cwd=tmp_path) for name in ("a", "b")]
    assert [writer.wait() for writer in writers] == [0, 0]
    runs = json.loads((tmp_path / "results" / "ynat.json").read_text(encoding="utf-8"))["runs"]
    assert len(runs) == 1 + 2 * 60
    assert (tmp_path / "results" / "README.md").read_text(encoding="utf-8").count("| ynat | trivial") == 1 + 2 * 60


def test_protocols_are_named_from_the_bytes_not_from_names_or_record_counts(tmp_path, monkeypatch):
    spec = get_task("ynat")
    named_as_official = write_json(tmp_path / spec.dev_file, json_records("ynat"))
    train = write_json(tmp_path / spec.train_file, json_records("ynat", "train"))
    dev_file, train_file = evaluation.describe_file(named_as_official), evaluation.describe_file(train)
    assert dev_file["origin"] == "custom" and evaluation.protocol_name(spec, 0, train_file, dev_file) == "custom"
    # Listed as derivations of the official files (as an export of exactly the official records would be):
    # whole, they make the official protocol; a listed part of train makes official-partial-train; a listed
    # part of dev is scored under a protocol only by cross-fitting.
    listed = {entry["sha256"]: sources.DerivedFile(official, 1, entry["sha256"], 1, part, "a test copy")
              for entry, official, part in ((train_file, spec.train_file, False), (dev_file, spec.dev_file, False))}
    monkeypatch.setattr(sources, "derived_manifest", lambda: listed)
    train_file, dev_file = evaluation.describe_file(train), evaluation.describe_file(named_as_official)
    assert (train_file["origin"], train_file["official_name"]) == ("derived", spec.train_file)
    assert evaluation.protocol_name(spec, 0, train_file, dev_file) == "official"
    assert evaluation.protocol_name(spec, 0, train_file, dev_file, train_records=300) == "official-partial-train"
    assert evaluation.protocol_name(spec, 0, {**train_file, "part": True}, dev_file) == "official-partial-train"
    assert evaluation.protocol_name(spec, 0, train_file, {**dev_file, "part": True}) == "custom"
    assert evaluation.protocol_name(spec, 5, None, {**dev_file, "part": True}) == "dev-crossfit"
    # The dev file's bytes given as training data stand for no training file.
    assert evaluation.protocol_name(spec, 0, dev_file, dev_file) == "custom"
    code, output = cli("run", "ynat", "--model", "trivial", "--train", sample_file("ynat", "train"), "--dev",
                       sample_file("ynat"), "--results-dir", tmp_path / "results")
    assert code == 0 and "sample" in output  # the sample's bytes, however named, stay the sample


def test_a_modified_dev_file_is_recorded_custom_with_its_sha256_everywhere(tmp_path):
    rows = json_records("nli")
    rows[0]["gold_label"] = "neutral" if rows[0]["gold_label"] != "neutral" else "entailment"
    modified = write_json(tmp_path / "klue-nli-v1.1_dev.json", rows)
    train = write_json(tmp_path / "klue-nli-v1.1_train.json", json_records("nli", "train")[:-1])  # not the sample
    code, output = cli("run", "nli", "--model", "trivial", "--train", train, "--dev", modified,
                       "--results-dir", tmp_path / "results")
    assert code == 0, output
    assert [line.split()[-1] for line in output.splitlines() if line.startswith("nli ")] == ["custom"]
    record = json.loads((tmp_path / "results" / "nli.json").read_text(encoding="utf-8"))["runs"]["trivial"]
    assert record["protocol"] == "custom"
    dev = next(entry for entry in record["files"] if entry["path"] == str(modified))
    assert (dev["origin"], dev["records"], dev["sha256"]) == ("custom", len(rows), file_sha256(modified))
    readme = (tmp_path / "results" / "README.md").read_text(encoding="utf-8")
    assert "| custom † |" in readme and "| custom | a train or dev file that is neither" in readme
