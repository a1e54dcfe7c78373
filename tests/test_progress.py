"""Long work says so: heartbeats with elapsed time, progress bars in the API, the sample warned about."""
from __future__ import annotations

import threading
import warnings
from typing import Callable

import pytest
from click.testing import CliRunner

from baselines import api

from baselines.runtime import progress
from baselines.cli import main
from features import analysis


def heard_until(count: int) -> tuple[list, threading.Event, Callable[[str], None]]:
    """What a log hears, an event set once it has heard `count` lines, and the log."""
    said, enough = [], threading.Event()

    def hear(line: str) -> None:
        said.append(line)
        if len(said) >= count:
            enough.set()
    return said, enough, hear


def test_a_silent_phase_tells_its_elapsed_time_and_its_end():
    said, two_beats, hear = heard_until(2)
    with progress.heartbeat("ynat: fitting tfidf-lr", hear, every=0.05):
        assert two_beats.wait(timeout=120)  # the phase lasts until the heartbeat has spoken twice, however slow
    assert len(said) >= 3 and all(line.startswith("ynat: fitting tfidf-lr: ") for line in said)
    assert said[-1].startswith("ynat: fitting tfidf-lr: done in ") and said[0].endswith(" s")
    quick = []
    with progress.heartbeat("quick", quick.append, every=5):
        pass
    assert quick == []  # nothing to tell about a phase shorter than a beat


def test_a_heartbeat_keeps_quiet_while_a_progress_bar_is_drawn(monkeypatch):
    _asked, three_beats, ask = heard_until(3)  # each beat asks whether a bar is on screen
    monkeypatch.setattr(analysis, "progress_shown", lambda: ask("is a bar shown?") or True)
    said = []
    with progress.heartbeat("phase", said.append, every=0.05):
        assert three_beats.wait(timeout=120)
    assert [line for line in said if "done in" not in line] == []


def test_the_tenths_bar_counts_up_by_tenths():
    said = []
    bar = progress._TenthsBar("Kiwi analysis", 100, said.append)
    for _ in range(20):
        bar.update(5)
    assert [line.split(" (")[0] for line in said] == [f"Kiwi analysis: {n} %" for n in range(10, 101, 10)]


def test_the_api_speaks_by_default_and_warns_about_the_sample(capsys, monkeypatch):
    monkeypatch.setattr(api, "_SAMPLE_WARNED", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        api.fit("ynat", api.data_file("ynat", "train"), "trivial")
    assert "ynat: fitting trivial on 300 records" in capsys.readouterr().err
    assert [w for w in caught if issubclass(w.category, api.SampleDataWarning)]
    api.fit("ynat", api.data_file("ynat", "train"), "trivial", log=api.quiet)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("command", [["run", "ynat", "--model", "trivial"], ["tune", "ynat", "--param", "C=1"]])
def test_quiet_cli_leaves_kiwi_without_progress_bars(tmp_path, monkeypatch, command):
    # run hands its log to the API's locate by position, and tune calls the API's resources, which calls locate
    # with its default log: each once drew the API's bars under -q. Only the outermost API call decides.
    monkeypatch.setattr(analysis, "_analyzer", None)
    result = CliRunner().invoke(main, ["-q", "--no-cache", *command, "--results-dir", str(tmp_path)],
                                catch_exceptions=False)
    assert result.exit_code == 0
    assert analysis.analyzer().progress is None


def test_an_api_call_with_a_quiet_log_draws_no_bars_through_the_api_calls_it_makes(tmp_path, monkeypatch):
    monkeypatch.setattr(analysis, "_analyzer", None)
    analysis.configure(use_cache=False)
    api.tune("ynat", {"C": [1]}, results_dir=tmp_path, log=api.quiet)  # resources -> locate, with its default log
    assert analysis.analyzer().progress is None
