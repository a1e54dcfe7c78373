"""Bad options, settings and surroundings: wrong values, typos, another task's files, a locked or read-only
cache, an endless download, an interrupt: one `Error:` line or a warning, before any work where it can be."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from baselines import api
from baselines.cli import main
from baselines.data.sources import official_manifest, sample_dir
from baselines.runner.registry import get_task
from features.analysis import MorphemeAnalyzer
from features.cache import AnalysisCache, CacheWarning

from helpers import cli, refused, sample_file


@pytest.mark.parametrize("args, message", [
    (["--workers", "-3", "tasks"], "--workers"),
    (["--workers", "0", "run", "ynat"], "--workers"),
    (["run", "ynat", "--cv", "1"], "1 fold"),
    (["run", "ynat", "--seed", "-1"], "--seed"),
    (["run", "ynat", "--param", "C=-1"], "'C' parameter"),
    (["run", "ynat", "--param", "C=abc"], "'C' parameter"),
    (["run", "ynat", "--param", "C=NaN"], "'C' parameter"),
    (["run", "ynat", "--param", "max_iter=0"], "'max_iter' parameter"),
    (["run", "ynat", "--param", "C=1", "--param", "C=2"], "more than once"),
    (["run", "ner", "--param", "type_folds=1"], "'type_folds' parameter"),
    (["tune", "ynat", "--param", "C=1,2", "--folds", "100000"], "100000 folds need"),
    (["tune", "ynat", "--param", "C=1,-2"], "'C' parameter"),
    (["download", "ynat", "--mirror", "not-a-url"], "not an http"),
])
def test_bad_option_values_are_refused_before_any_work(args, message):
    result = CliRunner().invoke(main, ["--quiet", *args])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "Error:" in result.output and message in result.output, result.output


def test_ctrl_c_inside_a_c_extension_aborts_without_a_traceback(monkeypatch, tmp_path):
    def interrupted_in_c(*args, **kwargs):
        # What CPython raises when a C function (Kiwi's analysis) returns while a KeyboardInterrupt is pending.
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as pending:
            raise SystemError("<built-in method analyze> returned a result with an exception set") from pending

    monkeypatch.setattr(api, "run", interrupted_in_c)
    result = CliRunner().invoke(main, ["run", "ynat", "--results-dir", str(tmp_path)])
    assert result.exit_code == 1 and result.output.strip().endswith("Aborted!"), result.output
    assert "Traceback" not in result.output and "SystemError" not in result.output
    monkeypatch.setattr(api, "run", lambda *args, **kwargs: 1 / 0)  # any other failure still surfaces
    assert isinstance(CliRunner().invoke(main, ["run", "ynat"]).exception, ZeroDivisionError)


def test_more_stacking_folds_than_premises_is_one_error_line(tmp_path):
    few = tmp_path / "klue-nli-v1.1_train.json"
    few.write_text(json.dumps(json.loads(sample_file("nli", "train").read_text(encoding="utf-8"))[:12]),
                   encoding="utf-8")
    line = refused("run", "nli", "--train", few, "--dev", sample_file("nli"), "--param", "stack_folds=20",
                   "--param", "neighbours=0", "--results-dir", tmp_path)
    assert "stack_folds=20 needs at least 20 premises in the training data" in line


@pytest.mark.parametrize("task, assignment, accepted", [
    ("ynat", "min_df=1001", "[1, 1000]"),
    ("ynat", "char_ngrams=[1,11]", "1 <= low <= high <= 10"),
    ("nli", "stack_folds=21", "[2, 20]"),
    ("nli", "stack_folds=1", "[2, 20]"),
    ("nli", "n_jobs=1000", "[1, 64]"),
    ("re", "window=51", "[0, 50]"),
    ("re", "min_count=100000", "[1, 1000]"),
    ("sts", "shift_folds=100", "[2, 20]"),
    ("sts", "min_samples_leaf=10001", "[1, 10000]"),
    ("ner", "type_folds=21", "[2, 20]"),
    ("dp", "dimension=1099511627776", "[1024, 67108864]"),
    ("dp", "min_count=1001", "[1, 1000]"),
    ("mrc", "calibration_folds=21", "[2, 20]"),
    ("mrc", "max_calibration_questions=100001", "[1, 100000]"),
    ("wos", "selection_folds=21", "[2, 20]"),
    ("wos", "min_df=5000", "[1, 1000]"),
])
def test_every_count_hyper_parameter_has_an_upper_bound(tmp_path, task, assignment, accepted):
    line = refused("run", task, "--param", assignment, "--results-dir", tmp_path)
    assert f"'{assignment.split('=')[0]}' parameter" in line and accepted in line, line


def test_a_missing_or_wrong_ner_file_for_the_mrc_reader_is_one_error_line(tmp_path):
    line = refused("run", "mrc", "--param", f"ner_train={tmp_path / 'absent.tsv'}")
    assert "absent.tsv" in line and "no such file" in line
    not_ner = sample_dir("mrc") / "klue-mrc-v1.1" / "klue-mrc-v1.1_train.json"
    line = refused("run", "mrc", "--param", f"ner_train={not_ner}")
    assert "klue-mrc-v1.1_train.json" in line


def test_a_locked_cache_warns_and_the_run_goes_on_uncached(tmp_path):
    texts = ["잠긴 캐시에도 분석은 계속된다."]
    expected = MorphemeAnalyzer(use_cache=False).analyze(texts)
    holder = AnalysisCache(tmp_path, "options")
    holder.put_many([])  # creates the database
    lock = sqlite3.connect(holder.path, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        analyzer = MorphemeAnalyzer(cache_dir=tmp_path)
        analyzer._cache = AnalysisCache(tmp_path, analyzer.options_key(), timeout=0.2)
        with pytest.warns(CacheWarning, match="cannot be used"):
            assert analyzer.analyze(texts) == expected
        assert analyzer.cache.disabled
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert holder.path.exists()  # never deleted: the other process still holds it


@pytest.mark.parametrize("where", ["below-a-file", "a-file"])
def test_a_cache_that_cannot_be_a_folder_warns(tmp_path, where):
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    cache_dir = blocker / "cache" if where == "below-a-file" else blocker
    texts = ["캐시 폴더가 파일 아래에 있다."]
    with pytest.warns(CacheWarning):
        assert MorphemeAnalyzer(cache_dir=cache_dir).analyze(texts) == MorphemeAnalyzer(use_cache=False).analyze(texts)
    assert blocker.read_text() == ""


def test_a_read_only_cache_warns(tmp_path):
    texts = ["읽기 전용 캐시"]
    MorphemeAnalyzer(cache_dir=tmp_path).analyze(["다른 문장"])
    uri = f"file:{tmp_path / 'analyses.sqlite3'}?mode=ro"
    analyzer = MorphemeAnalyzer(cache_dir=tmp_path)
    cache = analyzer.cache
    cache._connection = sqlite3.connect(uri, uri=True, isolation_level=None)
    with pytest.warns(CacheWarning, match="readonly"):
        assert analyzer.analyze(texts) == MorphemeAnalyzer(use_cache=False).analyze(texts)


class EndlessHandler(BaseHTTPRequestHandler):
    """Serves more bytes than any manifest size, without a Content-Length, and counts what it sent."""
    sent = 0

    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        chunk = b"x" * 65536
        try:
            for _ in range(400):  # at most 25 MiB, so the test ends even if the client kept reading
                self.wfile.write(chunk)
                type(self).sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format, *args):
        pass


def test_download_stops_reading_past_the_manifest_size(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), EndlessHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        result = CliRunner().invoke(main, ["--quiet", "download", "re", "--data-dir", str(tmp_path / "data"),
                                           "--mirror", f"http://127.0.0.1:{server.server_address[1]}"])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert result.exit_code == 1 and "sent more than the expected" in result.output
    assert not list((tmp_path / "data").rglob("*.json"))
    biggest = max(f.size for f in official_manifest().values() if f.name.startswith(("klue-re", "relation")))
    assert biggest < 25 * 2**20  # the server could send more than every RE file; the client stopped first


def test_the_package_imports_and_runs_without_the_resource_module(tmp_path):
    # Windows has neither the resource module nor /proc.
    script = ("import sys, pathlib; sys.modules['resource'] = None\n"
              "from baselines.runner import evaluate as evaluation\n"
              "from baselines.runtime import memory\n"
              "memory._STATUS = memory._CLEAR_REFS = pathlib.Path('/nonexistent/proc')\n"
              "from baselines.data.locate import locate\n"
              "from baselines.runner.registry import get_task\n"
              "spec = get_task('ynat')\n"
              "data = locate(spec)\n"
              "record, _ = evaluation.evaluate_task(spec, data, model_name='trivial')\n"
              "print(record['peak_rss_mb'], record['headline']['macro_f1'] > 0)\n")
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.split() == ["None", "True"]


def test_numbers_are_not_booleans_counts_are_bounded_and_the_bad_value_is_named(tmp_path):
    for assignment, expected in (("C=true", "'C' parameter of TopicClassifier must be a number, not true"),
                                 ("neighbours=1000000000", "'neighbours' parameter of TopicClassifier must be an int "
                                                           "in the range [0, 100]"),
                                 ("max_iter=1000000000", "'max_iter' parameter")):
        error = refused("run", "ynat", "--param", assignment, "--results-dir", tmp_path)
        assert expected in error, error
    error = refused("tune", "ynat", "--param", "C=1,abc", "--results-dir", tmp_path)
    assert "'abc'" in error and "got 1 " not in error, error


def test_a_misspelt_or_capitalised_task_name_is_found_before_any_file():
    line = refused("predict", "ynta", "--input", "no-such-file.json")
    assert "unknown task 'ynta' (did you mean ynat?)" in line and "no-such-file" not in line
    code, output = cli("run", "YNAT", "--model", "trivial", "--results-dir", "/nonexistent-dir-for-test/results")
    assert "unknown task" not in output
    assert api.data_file("YNAT", "validation") == api.data_file("ynat", "dev")
    with pytest.raises(ValueError, match=r"unknown task 'ynta' \(did you mean ynat\?\)"):
        api.make_model("ynta")
    assert get_task("NLI") is get_task("nli")


def test_a_hyper_parameter_typo_gets_the_closest_name():
    line = refused("run", "ynat", "--param", "c=2")
    assert "no hyper-parameters ['c'] (did you mean C?)" in line


@pytest.mark.parametrize("task, param, suffix, what, wrong, taken", [
    ("ner", "re_train", "json", "KLUE-RE training file", ("nli", "klue-nli-v1.1", "klue-nli-v1.1_train.json"),
     "re gazetteer"),
    ("re", "dp_train", "tsv", "KLUE-DP training file", ("ner", "klue-ner-v1.1", "klue-ner-v1.1_train.tsv"), "dp model"),
])
def test_a_missing_or_wrong_file_of_another_task_is_one_error_line(tmp_path, task, param, suffix, what, wrong, taken):
    line = refused("run", task, "--param", f"{param}={tmp_path / ('absent.' + suffix)}")
    assert f"absent.{suffix}" in line and "no such file" in line and what in line
    not_theirs = sample_dir(wrong[0]).joinpath(*wrong[1:])
    line = refused("run", task, "--param", f"{param}={not_theirs}")
    assert wrong[2] in line
    line = refused("run", "ynat", "--param", f"{param}={not_theirs}")
    assert param in line
    line = refused("tune", task, "--model", "trivial", "--param", f"{param}=null", "--results-dir", tmp_path)
    assert f"trivial takes no {taken}, so no {param}" in line
    line = refused("run", task, "--model", "trivial", "--param", f"{param}={not_theirs}", "--results-dir", tmp_path)
    assert f"trivial takes no {taken}, so no {param}" in line


def test_a_determinism_run_that_fails_is_one_error_line_and_another_tasks_file_is_made_absolute(tmp_path,
                                                                                               monkeypatch):
    # The variants run in a scratch folder: a relative re_train must reach them as the user's file.
    monkeypatch.chdir(tmp_path)
    line = refused("bench", "determinism", "ner", "--param", "re_train=absent-re.json", "--results-dir", tmp_path)
    assert "failed under" in line and f"{tmp_path / 'absent-re.json'}: no such file" in line
    assert not (tmp_path / "determinism.json").exists()
