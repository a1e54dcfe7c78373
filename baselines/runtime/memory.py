"""Peak resident memory of this process, measurable per task: Linux lets a process reset its high-water mark."""
from __future__ import annotations

import re
import sys
from pathlib import Path

try:
    import resource
except ImportError:  # Windows: peak memory is not measured there
    resource = None

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_helper_peaks: list[float] = []  # peaks of the helper processes run beside this one since reset_peak


def reset_peak() -> bool:
    """Start a new peak at the current resident size (Linux 4.0+: writing 5 to clear_refs resets VmHWM).
    Returns False where that cannot be done; peak_mb then reports the peak since the process started."""
    _helper_peaks.clear()
    try:
        _CLEAR_REFS.write_text("5")
        return True
    except OSError:
        return False


def peak_mb() -> float | None:
    """Peak resident memory of this process in MiB: since the last reset_peak where the kernel allows it,
    else since it started (getrusage, which macOS reports in bytes and Linux in KiB); None where neither
    exists (Windows), and a record then leaves it out."""
    try:
        found = re.search(r"^VmHWM:\s+(\d+) kB", _STATUS.read_text(), re.MULTILINE)
        if found:
            return int(found.group(1)) / 1024
    except OSError:
        pass
    if resource is None:
        return None
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def add_helper_peak(peak: float | None) -> None:
    """Count the peak of a helper process that worked beside this one (parallel.in_background) in
    total_peak_mb: both held their memory at the same time."""
    if peak is not None:
        _helper_peaks.append(peak)


def total_peak_mb() -> float | None:
    """peak_mb plus the peaks of the helper processes since reset_peak: an upper bound of what this process
    and its helpers held at once."""
    peak = peak_mb()
    return None if peak is None else peak + sum(_helper_peaks)


def rounded_peak_mb() -> float | None:
    peak = total_peak_mb()
    return None if peak is None else round(peak, 1)
