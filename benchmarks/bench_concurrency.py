"""Concurrency: many simultaneous runs from a real local agent into one process.

``agui-pipeline serve`` replays a realistic run (the benchmark workload) from
its own process on 127.0.0.1, one ``data:`` write per event as an agent
streams them. This process opens ``--runs`` HTTP+SSE runs at once through one
``HttpAgent`` (one connection each) and reads them all through the default
pipeline, Conversation included. Reported:

- aggregate events/s: events delivered by all runs / wall time of the whole batch;
- client CPU per event: this process's CPU time / events (what reading costs here,
  HTTP included);
- p50/p99 added latency per event: from the moment a read's bytes are in the
  pipeline's hands to the moment the event has been dispatched (the
  Conversation applied), weighted by event;
- peak memory: this process's peak RSS, and its growth over the baseline.

    python -m benchmarks.bench_concurrency [--runs 1000] [--events 200]

Both processes share the machine (2 cores here): the server's writes are
pure-Python HTTP too, so the aggregate rate is the pair's, not the pipeline's
alone — the client CPU figure is the one to compare with the per-event budget.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar
from weakref import WeakKeyDictionary

import anyio
import httpx
from agui_pipeline._engine.pipeline import Pipeline
from agui_pipeline.batch import Batch
from agui_pipeline.http.client import HttpAgent
from agui_pipeline.stage import Stage, StreamContext
from agui_pipeline.stages.parse import Parse

from .memory import _peak_rss_mb
from .workload import encode_sse, events

ROOT = Path(__file__).resolve().parents[1]


_READ_AT: WeakKeyDictionary[StreamContext, float] = WeakKeyDictionary()
"""When each stream's latest read reached the pipeline, by the stream's context: the
benchmark's own record, not a field stages share."""


class _TimedParse(Parse):
    """Parse, noting when each read's bytes reached the pipeline."""

    def feed(self, chunk: bytes) -> Batch:
        _READ_AT[self.ctx] = time.perf_counter()
        return super().feed(chunk)


class _Latency(Stage):
    """After dispatch: how long the batch took from its read to delivered."""

    name: ClassVar[str] = "latency"
    samples: ClassVar[list[tuple[float, int]]] = []

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)

    async def process(self, batch: Batch) -> Batch:
        read_at = _READ_AT.get(self.ctx)
        if read_at is not None:
            _Latency.samples.append((time.perf_counter() - read_at, len(batch)))
        return batch


def _percentile(samples: list[tuple[float, int]], fraction: float) -> float:
    """The latency below which ``fraction`` of the events fall (each batch weighs its events)."""
    ordered = sorted(samples)
    total = sum(count for _, count in ordered)
    seen = 0
    for latency, count in ordered:
        seen += count
        if seen >= fraction * total:
            return latency
    return ordered[-1][0] if ordered else 0.0


def _start_server(recording: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "agui_pipeline", "serve", str(recording), "--port", "0"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    if " at " not in line:
        process.kill()
        raise RuntimeError(f"the replay server did not start: {line!r}")
    return process, line.rsplit(" at ", 1)[1].strip()


async def _all_runs(url: str, runs: int, per_run: int) -> dict[str, Any]:
    # Pipeline.replace is typed for stages only; "parse" takes a decoder.
    timed = Pipeline().replace("parse", _TimedParse)  # type: ignore[arg-type]
    pipeline = timed.insert_after("dispatch", _Latency)
    limits = httpx.Limits(max_connections=runs, max_keepalive_connections=runs)
    outcomes: dict[str, int] = {}
    delivered = 0
    async with (
        httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(None, connect=60)) as client,
        HttpAgent(url, pipeline=pipeline, client=client) as agent,
    ):

        async def one(number: int) -> None:
            nonlocal delivered
            result = await agent.run(
                {"threadId": f"t-{number}", "runId": f"r-{number}", "messages": []}
            )
            outcome = str(result.verdict.outcome)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            delivered += result.counters.delivered

        cpu, wall = time.process_time(), time.perf_counter()
        async with anyio.create_task_group() as group:
            for number in range(runs):
                group.start_soon(one, number)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"outcomes": outcomes, "delivered": delivered, "wall": wall, "cpu": cpu}


def measure(runs: int, per_run: int) -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, max(soft, 4 * runs + 256))
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))  # the server inherits it
    stream = events(per_run)
    with tempfile.TemporaryDirectory() as folder:
        recording = Path(folder) / "run.sse"
        recording.write_bytes(encode_sse(stream))
        server, url = _start_server(recording)
        try:
            baseline = _peak_rss_mb()
            _Latency.samples.clear()
            figures = anyio.run(_all_runs, url, runs, per_run)
            peak = _peak_rss_mb()
        finally:
            server.terminate()
            server.wait(timeout=30)
    delivered = figures["delivered"]
    return {
        "runs": runs,
        "events per run": len(stream),
        "outcomes": figures["outcomes"],
        "events delivered": delivered,
        "wall s": round(figures["wall"], 3),
        "aggregate events/s": round(delivered / figures["wall"]),
        "client CPU µs/event": round(figures["cpu"] / delivered * 1e6, 2),
        "p50 added latency ms": round(_percentile(_Latency.samples, 0.50) * 1e3, 3),
        "p99 added latency ms": round(_percentile(_Latency.samples, 0.99) * 1e3, 3),
        "batches": len(_Latency.samples),
        "peak RSS MiB": round(peak, 1),
        "RSS growth MiB": round(peak - baseline, 1),
        "cpus": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="simultaneous runs (1000)")
    parser.add_argument("--events", type=int, default=200, help="events per run (200)")
    args = parser.parse_args(argv)
    for name, value in measure(args.runs, args.events).items():
        print(f"{name:>22}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
