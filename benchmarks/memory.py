"""The memory run, in a process of its own: ``python -m benchmarks.memory N``.

Streams ``N`` workload events (made and encoded as they are read, never all in
memory) through the default pipeline with no Conversation — events dispatched
and forgotten, as a consumer that only forwards them — and prints one JSON
line: peak RSS of the process, its RSS before the stream, and the
tracemalloc peak of a second pass (Python allocations only; slower, so timed
apart).
"""

from __future__ import annotations

import json
import resource
import sys
import time
import tracemalloc

import anyio
from agui_pipeline import Pipeline

from .workload import DECLARATION, iter_sse_chunks


async def _stream(n: int) -> None:
    pipeline = Pipeline(capabilities=DECLARATION, conversation=False)
    async with pipeline.open(iter_sse_chunks(n)) as stream:
        async for _batch in stream.batches():
            pass
    if not stream.verdict.completed:
        raise RuntimeError(f"the benchmark stream was not accepted: {stream.verdict}")


def _peak_rss_mb() -> float:
    """This process's peak resident set so far, in MiB."""
    try:
        # VmHWM starts afresh at exec; ru_maxrss would still count the parent we forked from.
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    scale = 2**20 if sys.platform == "darwin" else 2**10  # bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def main(n: int) -> dict[str, float]:
    baseline = _peak_rss_mb()
    started = time.perf_counter()
    anyio.run(_stream, n)
    seconds = time.perf_counter() - started
    peak = _peak_rss_mb()
    tracemalloc.start()
    anyio.run(_stream, n)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "events": n,
        "baseline_rss_mb": baseline,
        "peak_rss_mb": peak,
        "tracemalloc_peak_mb": traced_peak / 2**20,
        "seconds": seconds,
    }


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]))))
