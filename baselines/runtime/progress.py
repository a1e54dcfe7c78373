"""Long work that says so: elapsed time while a silent phase runs, and progress bars in a terminal or a notebook."""
from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import Callable, Iterator

from features import analysis

Log = Callable[[str], None]

# A phase shorter than this ends before a line about it would tell anything; a longer one is told about this
# often, and once more when it ends.
EVERY_SECONDS = 10.0


def say(message: str) -> None:
    """The Python API's default `log`: one line on stderr, where a terminal and a notebook both show it."""
    print(message, file=sys.stderr, flush=True)


def quiet(message: str) -> None:
    """A `log` that says nothing."""


@contextlib.contextmanager
def heartbeat(label: str, log: Log, every: float = EVERY_SECONDS) -> Iterator[None]:
    """While the block runs, `log` hears '<label>: <n> s' every `every` seconds, except while a progress bar
    (Kiwi's analysis) is on screen, and '<label>: done in <n> s' at its end if it took that long."""
    if log is quiet:
        yield
        return
    start, done = time.perf_counter(), threading.Event()

    def beat() -> None:
        while not done.wait(every):
            if not analysis.progress_shown():
                log(f"{label}: {time.perf_counter() - start:.0f} s")

    beating = threading.Thread(target=beat, name="klue-baselines heartbeat", daemon=True)
    beating.start()
    try:
        yield
    finally:
        done.set()
        beating.join()
        elapsed = time.perf_counter() - start
        if elapsed >= every:
            log(f"{label}: done in {elapsed:.1f} s")


def text_progress(log: Log) -> Callable[[str, int], contextlib.AbstractContextManager]:
    """A progress bar factory for the Python API (as the CLI passes click's): tqdm's where tqdm is installed, a
    widget in a notebook that has ipywidgets and a text bar anywhere else; without tqdm, a line through `log` at
    every tenth."""
    tqdm = tqdm_bar()

    @contextlib.contextmanager
    def bar(label: str, length: int) -> Iterator:
        if tqdm is not None:
            with tqdm(total=length, desc=label, file=sys.stderr, leave=False) as shown:
                yield shown
            return
        yield _TenthsBar(label, length, log)
    return bar


def tqdm_bar() -> Callable | None:
    """tqdm's notebook widget where ipywidgets can draw it, else its text bar (tqdm.auto would warn in every cell
    of a notebook without ipywidgets, 'IProgress not found', and draw the text bar anyway); None without tqdm."""
    try:
        import ipywidgets  # noqa: F401  (only whether it is there)
    except ImportError:
        ipywidgets = None
    try:
        if ipywidgets is not None:
            from tqdm.auto import tqdm
        else:
            from tqdm.std import tqdm
    except ImportError:
        return None
    return tqdm


class _TenthsBar:
    """update(n) as a progress bar has it, saying '<label>: 30 % (<n> s)' as each tenth is passed."""

    def __init__(self, label: str, length: int, log: Log):
        self.label, self.length, self.log = label, max(1, length), log
        self.done, self.tenths, self.start = 0, 0, time.perf_counter()

    def update(self, count: int) -> None:
        self.done += count
        reached = min(10, self.done * 10 // self.length)
        if reached > self.tenths:
            self.tenths = reached
            self.log(f"{self.label}: {reached * 10} % ({time.perf_counter() - self.start:.0f} s)")
