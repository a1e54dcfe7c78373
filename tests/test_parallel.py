"""Folds and tuning trials on joblib workers: the same predictions and reports for any jobs count and backend,
memory measured per task and per worker, and a call run in the background."""
from __future__ import annotations

import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from baselines import api

from baselines.data.locate import locate
from baselines.runner import evaluate as evaluation

from baselines.runtime import memory, parallel
from baselines.runner.registry import get_task
from helpers import invoke

HAS_DASK = importlib.util.find_spec("distributed") is not None
HAS_RAY = importlib.util.find_spec("ray") is not None


# Fewer candidate spans for the MRC reader: what is compared is serial against parallel, and its default
# candidates take most of a minute per cross-fit on the sample.
LIGHTER = {"mrc": {"top_sentences": 1, "max_eojeols": 3}}


def cross_fitted(code: str, workers: parallel.Workers) -> tuple[dict, list[dict]]:
    spec = get_task(code)
    return evaluation.evaluate_task(spec, locate(spec), cv=3, workers=workers, params=LIGHTER.get(code))


@pytest.mark.parametrize("code", ["ynat", "wos", "mrc"])
def test_parallel_cross_fitting_predicts_what_serial_cross_fitting_does(code):
    serial, serial_predictions = cross_fitted(code, parallel.Workers(1))
    spread, spread_predictions = cross_fitted(code, parallel.Workers(2, "loky"))
    assert spread_predictions == serial_predictions
    assert spread["metrics"] == serial["metrics"]
    assert spread["trained_on"] == serial["trained_on"]
    assert "workers" not in serial
    assert spread["workers"]["jobs"] == 2 and len(spread["workers"]["fold_seconds"]) == 3
    assert spread["workers"]["peak_rss_mb"] > 0  # each worker measures its own process


def test_cross_fitting_and_tuning_folds_fit_fold_copies_that_skip_the_parsers_feature_names(monkeypatch, tmp_path):
    from baselines.tasks.dp.parser import MstParser

    def named(*_args):
        raise AssertionError("a fold's parser named its features")

    monkeypatch.setattr(MstParser, "_name_strongest_arcs", named)
    spec = get_task("dp")
    record, _predictions = evaluation.evaluate_task(spec, locate(spec), cv=2, workers=parallel.Workers(1),
                                                params={"perceptrons": 1})
    assert record["hyper_parameters"]["name_features"] is True  # the model asked for; its folds' copies do not
    report, _path = api.tune("dp", {"perceptrons": [1]}, folds=2, results_dir=tmp_path, log=lambda _message: None)
    assert len(report["trials"]) == 1
    with pytest.raises(AssertionError, match="named its features"):
        api.fit("dp", api.data_file("dp", "train"), perceptrons=1)


@pytest.mark.skipif(not HAS_DASK, reason="dask.distributed is not installed (extra [cluster])")
def test_a_local_dask_cluster_predicts_what_serial_cross_fitting_does():
    _serial, serial_predictions = cross_fitted("dp", parallel.Workers(1))
    _spread, spread_predictions = cross_fitted("dp", parallel.Workers(2, "dask"))
    assert spread_predictions == serial_predictions


@pytest.mark.skipif(not HAS_RAY, reason="ray is not installed (extra [cluster]; .ci/run installs it and says so)")
def test_a_local_ray_cluster_predicts_what_serial_cross_fitting_does():
    import ray

    _serial, serial_predictions = cross_fitted("dp", parallel.Workers(1))
    try:
        _spread, spread_predictions = cross_fitted("dp", parallel.Workers(2, "ray"))
        assert ray.is_initialized()  # the folds ran on the local ray that the backend started
    finally:
        ray.shutdown()
    assert spread_predictions == serial_predictions


def test_tune_reports_the_same_trials_for_any_jobs_count(tmp_path):
    grid = {"C": [0.5, 4.0]}
    serial, _path = api.tune("ynat", grid, folds=2, results_dir=tmp_path / "serial")
    spread, _path = api.tune("ynat", grid, folds=2, results_dir=tmp_path / "spread", jobs=2)
    assert spread["trials"] == serial["trials"]
    assert [trial["params"] for trial in serial["trials"]] != []


def test_a_backend_is_checked_before_any_work(monkeypatch):
    with pytest.raises(parallel.BackendError, match="unknown backend 'spark'"):
        parallel.Workers(2, "spark")
    with pytest.raises(parallel.BackendError, match="at least 1"):
        parallel.Workers(0)
    monkeypatch.setattr(parallel.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(parallel.BackendError, match=r"needs distributed: pip install 'klue-baselines\[cluster\]'"):
        parallel.Workers(2, "dask")


def test_the_cli_refuses_an_unknown_backend_in_one_line():
    result = invoke("run", "ynat", "--cv", "2", "--jobs", "2", "--backend", "spark", expect=2)
    assert "unknown backend 'spark'" in result.output and "Traceback" not in result.output


def test_each_task_of_a_run_reports_its_own_peak():
    if not memory.reset_peak():
        pytest.skip("this kernel does not let a process reset its peak resident memory")
    ballast = bytearray(300 * 2**20)
    ballast[::4096] = b"x" * len(ballast[::4096])  # touched, so resident
    before = memory.peak_mb()
    del ballast
    memory.reset_peak()
    assert memory.peak_mb() < before - 200
    spec = get_task("ynat")
    record, _predictions = evaluation.evaluate_task(spec, locate(spec), model_name="trivial")
    assert record["peak_rss_mb"] < before - 200


def _held_for_a_while(megabytes: int) -> int:
    ballast = bytearray(megabytes * 2**20)
    ballast[::4096] = b"x" * len(ballast[::4096])  # touched, so resident
    return os.getpid()


def test_a_call_in_the_background_runs_in_a_worker_whose_peak_counts_in_this_process():
    memory.reset_peak()
    with parallel.in_background(_held_for_a_while, 200) as result:
        worker = result()
    assert worker != os.getpid()
    own = memory.peak_mb()
    assert memory.total_peak_mb() >= own + 200  # the worker held its 200 MiB beside this process
    assert memory.rounded_peak_mb() == round(memory.total_peak_mb(), 1)
    memory.reset_peak()  # a new task: the worker's peak is behind it
    assert memory.total_peak_mb() == memory.peak_mb()


def _touch(path: str) -> None:
    open(path, "w").close()


def _say_pid_then_wait(path: str) -> None:
    """Write this worker's pid to `path`, then wait for what never comes: only being stopped ends it."""
    Path(path).write_text(str(os.getpid()))
    threading.Event().wait()


def waited_for(condition: Callable[[], bool], what: str, timeout: float = 120) -> None:
    """Wait until `condition` holds (a process's state that has no event to wait on), failing after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.01)


def test_leaving_the_block_before_the_background_call_ends_stops_its_worker(tmp_path):
    mark, said = tmp_path / "the call ran to its end", tmp_path / "pid"
    with parallel.in_background(_touch, str(mark)) as result:
        result()
    assert mark.exists()  # the call, left to run, does its work
    with pytest.raises(KeyError):
        with parallel.in_background(_say_pid_then_wait, str(said)):
            waited_for(lambda: said.exists() and said.read_text(), "the worker to start")
            raise KeyError("the caller failed first")
    worker = int(said.read_text())

    def stopped() -> bool:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return True
        return False
    waited_for(stopped, "the worker to be stopped")  # it waits forever unless stopped
