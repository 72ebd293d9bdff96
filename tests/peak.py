"""A process's own peak RSS, for the tests that bound a child's memory.

``resource.getrusage(RUSAGE_SELF).ru_maxrss`` is not it on Linux: the kernel keeps the peak
from before an ``exec``, so a child forked from a pytest worker that has grown to 1 GB reports
1 GB whatever it did itself. ``VmHWM`` in ``/proc/self/status`` is the peak of the process's
own memory since its ``exec``. Nothing is imported here that a child would not import anyway.
"""

from __future__ import annotations

import resource


def peak_kib() -> int:
    """This process's peak RSS in KiB: ``VmHWM``; ``ru_maxrss`` where there is no ``/proc``."""
    try:
        with open("/proc/self/status") as status:
            return int(next(line for line in status if line.startswith("VmHWM:")).split()[1])
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
