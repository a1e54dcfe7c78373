"""Independent fits (cross-fitting folds, tuning trials) run on joblib workers, with the same results for any
number of jobs and any backend: loky on this machine, or Dask and Ray on a cluster; and one call that holds
the GIL runs in a worker beside this process; and a benchmark's measurement in a new Python process of its own."""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from joblib import Parallel, delayed, parallel_config
from joblib.externals import loky
from joblib.parallel import BACKENDS

from baselines.runtime import memory
from features import analysis
from baselines.errors import BackendError, caller_stacklevel, UsageError
from features.cache import CACHE_VARIABLE

# Backends that joblib does not bring: the package that registers each, and the extra that installs it.
CLUSTER_BACKENDS = {"dask": "distributed", "ray": "ray"}
LIST_ONLY_BACKENDS = frozenset({"ray"})  # joblib backends that refuse return_as="generator"


@dataclass(frozen=True)
class Workers:
    """How many fits run at once, and where. jobs=1 runs them one after another in this process."""
    jobs: int = 1
    backend: str = "loky"

    def __post_init__(self) -> None:
        if self.jobs < 1:
            raise BackendError(f"jobs must be at least 1, not {self.jobs}")
        if self.backend not in BACKENDS and self.backend not in CLUSTER_BACKENDS:
            known = sorted({*BACKENDS, *CLUSTER_BACKENDS})
            raise BackendError(f"unknown backend {self.backend!r}; the backends are {', '.join(known)}")
        package = CLUSTER_BACKENDS.get(self.backend)
        if package and importlib.util.find_spec(package) is None:  # said before any work, not after
            raise BackendError(f"the {self.backend} backend needs {package}: pip install 'klue-baselines[cluster]'")
        if self.backend not in CLUSTER_BACKENDS:  # a cluster's cores are not this machine's
            object.__setattr__(self, "jobs", local_jobs(self.jobs))


def local_jobs(jobs: int) -> int:
    """`jobs`, at most this machine's usable cores (joblib's count: CPU affinity and container limits), with
    a warning when it is more: processes beyond the cores only share them, each with its own memory."""
    cores = loky.cpu_count()
    if jobs > cores:
        warnings.warn(f"{jobs} jobs at once is more than the {cores} cores this process may use: running {cores} "
                      f"at once", stacklevel=caller_stacklevel())
        return cores
    return jobs


@dataclass
class Outcome:
    """The results of the calls, in their order, and the largest peak resident memory of a worker process
    (None when the calls ran in this process, whose own peak the caller measures)."""
    results: list
    worker_peak_rss_mb: float | None = None


def run(calls: Sequence[tuple[Callable, tuple]], workers: Workers = Workers(),
        on_result: Callable[[int, Any], None] = lambda index, result: None, texts: Sequence[str] = ()) -> Outcome:
    """function(*args) for each call, in order. With several jobs the calls go to the backend's workers, which
    analyse text with this process's analysis cache (see features.analysis.adopt), and `texts`, those that
    the calls will analyse, are analysed here first: once, instead of by every worker at the same time.
    on_result(index, result) is called as each result arrives, in order, so the caller can log progress."""
    if workers.jobs == 1:
        results = []
        for index, (function, args) in enumerate(calls):
            results.append(function(*args))
            on_result(index, results[-1])
        return Outcome(results)
    if texts:
        analysis.analyze(texts)
    settings = analysis.worker_settings(share_of_cores=workers.jobs)
    parent = os.getpid()
    results, peaks = [], []
    # Results as they arrive, for progress; ray's joblib backend returns them only as a list, all at the end.
    return_as = "list" if workers.backend in LIST_ONLY_BACKENDS else "generator"
    with _backend(workers):
        jobs = (delayed(_in_worker)(parent, settings, function, args) for function, args in calls)
        for index, (result, peak) in enumerate(Parallel(n_jobs=workers.jobs, return_as=return_as)(jobs)):
            results.append(result)
            if peak is not None:
                peaks.append(peak)
            on_result(index, result)
    return Outcome(results, round(max(peaks), 1) if peaks else None)


@contextlib.contextmanager
def in_background(function: Callable, *args) -> Iterator[Callable[[], Any]]:
    """function(*args) in a worker process of its own, started at once so that this process works meanwhile
    (for work that holds the GIL, such as a CRF's fit), with text analysed as this process does. The block
    gets what waits for the result; leaving the block before the worker is done stops it. The worker's peak
    memory counts in this process's (memory.total_peak_mb). loky's workers, unlike multiprocessing's spawned
    ones, do not rerun a user's script that has no `if __name__ == "__main__"` guard."""
    executor = loky.ProcessPoolExecutor(max_workers=1)
    future = executor.submit(_in_worker, os.getpid(), analysis.worker_settings(), function, args)

    def result() -> Any:
        value, peak = future.result()
        memory.add_helper_peak(peak)
        return value

    try:
        yield result
    finally:
        done = future.done()
        executor.shutdown(wait=done, kill_workers=not done)


def in_new_process(module: str, request: Any, failed: str) -> Any:
    """`python -m <module> <request as JSON>` in a new Python process with an empty analysis cache of its own, so
    that its seconds and peak memory are its own (the benchmarks measure so), and what that process answers
    (answer_in_new_process). A failure is a UsageError: `failed`, then the process's last line of error."""
    with tempfile.TemporaryDirectory(prefix="klue-new-process-cache-") as cache_dir:
        finished = subprocess.run([sys.executable, "-m", module, json.dumps(request)], capture_output=True,
                                  text=True, env={**os.environ, CACHE_VARIABLE: cache_dir})
    if finished.returncode != 0:
        last = (finished.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise UsageError(f"{failed}: {last}")
    return json.loads(finished.stdout.strip().splitlines()[-1])


def answer_in_new_process(work: Callable[[Any], Any], argv: Sequence[str]) -> None:
    """The new process's side of in_new_process: work(the request) printed as JSON on the last line; a
    UsageError as a one-line 'Error:' and a non-zero exit."""
    try:
        answer = work(json.loads(argv[1]))
    except UsageError as error:
        sys.exit(f"Error: {error}")
    print(json.dumps(answer))


def _in_worker(parent: int, settings: dict, function: Callable, args: tuple) -> tuple[Any, float | None]:
    """One call in a worker process: analysis set up as in the parent, and the worker's own peak memory
    measured from the start of the call. In the parent itself (the threading backend) neither is touched."""
    if os.getpid() == parent:
        return function(*args), None
    analysis.adopt(settings)
    memory.reset_peak()
    result = function(*args)
    return result, memory.total_peak_mb()


@contextlib.contextmanager
def _backend(workers: Workers) -> Iterator[None]:
    """joblib's backend for the run. Dask needs a distributed client: the scheduler at
    $DASK_SCHEDULER_ADDRESS, else a local cluster of `jobs` single-threaded worker processes. Ray connects to
    $RAY_ADDRESS, else starts on this machine."""
    name = workers.backend
    if name not in CLUSTER_BACKENDS:
        with parallel_config(backend=name, n_jobs=workers.jobs):
            yield
        return
    if name == "ray":
        import ray
        from ray.util.joblib import register_ray

        register_ray()
        if not ray.is_initialized():
            ray.init(address=os.environ.get("RAY_ADDRESS"), log_to_driver=False)
        with parallel_config(backend="ray", n_jobs=workers.jobs):
            yield
        return
    import distributed

    address = os.environ.get("DASK_SCHEDULER_ADDRESS")
    with contextlib.ExitStack() as stack:
        if not address:
            address = stack.enter_context(distributed.LocalCluster(
                n_workers=workers.jobs, threads_per_worker=1, processes=True, dashboard_address=None))
        stack.enter_context(distributed.Client(address))  # joblib's dask backend uses the current client
        with parallel_config(backend="dask", n_jobs=workers.jobs, wait_for_workers_timeout=120):
            yield
