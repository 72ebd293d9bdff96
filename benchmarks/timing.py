"""Timing that holds up on a shared 2-core machine: interleaved repetitions, medians.

Everything compared in one table is measured in the same rounds — each round
runs every contender once, in turn — so a burst of load from elsewhere hits
all of them alike, and a ratio is the median of the per-round ratios. Time is
this process's CPU time (``time.process_time``), not wall time: another
process taking the core for a while does not count against whoever was running.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Mapping


def seconds_of(work: Callable[[], object]) -> float:
    """CPU time of one call, with the cyclic collector off (as a long-lived server tunes it)."""
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        work()
        return time.process_time() - started
    finally:
        gc.enable()


class SelfTimed:
    """A work that measures itself (another process, say) and returns its seconds."""

    def __init__(self, work: Callable[[], float]) -> None:
        self.work = work


Work = Callable[[], object] | SelfTimed


def rounds(works: Mapping[str, Work], repeat: int) -> dict[str, list[float]]:
    """``repeat`` rounds, each timing every work once in turn; seconds per work, per round."""
    times: dict[str, list[float]] = {name: [] for name in works}
    for _ in range(repeat):
        for name, work in works.items():
            seconds = work.work() if isinstance(work, SelfTimed) else seconds_of(work)
            times[name].append(seconds)
    return times


def median(values: list[float]) -> float:
    return statistics.median(values)


def ratio(numerator: list[float], denominator: list[float]) -> float:
    """Median of the per-round ratios of two contenders timed in the same rounds."""
    return statistics.median(a / b for a, b in zip(numerator, denominator, strict=True))
