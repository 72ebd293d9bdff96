"""The enforce benchmark: ``Enforce`` alone on the realistic 100,000-event stream.

The stream (``benchmarks.workload``: token-sized text deltas, tool calls with
argument deltas and results, reasoning, state snapshots and JSON Patch deltas,
steps, metadata) is decoded once by ``Parse`` from 64 KiB reads, so enforce
gets the batches a transport read would give it; only ``Enforce.process`` on
those batches is timed. The stream is valid, so this is the fast path every
conforming event takes. Target (issue 3): at least 800,000 events/s.

A second figure times the same stream with an undescribed member on every
event: every event then takes the slow path (walk, strip, warn) — what a
stream from a newer producer costs.

    python -m benchmarks.bench_enforce [--events N] [--repeat R]
"""

from __future__ import annotations

import argparse
import copy
from functools import partial

import anyio
from agui_pipeline.batch import Batch
from agui_pipeline.options import Options
from agui_pipeline.stage import StreamContext
from agui_pipeline.stages.enforce import Enforce
from agui_pipeline.stages.parse import Parse

from .timing import median, rounds
from .workload import chunks, encode_jsonl, events

TARGET = 800_000
"""Events per second enforce alone must reach on the clean stream."""


def batches_of(stream: list[dict[str, object]]) -> list[Batch]:
    """The stream as the engine hands it to enforce: one batch per 64 KiB read."""
    decoder = Parse(StreamContext(Options()))
    out = [decoder.feed(read) for read in chunks(encode_jsonl(stream))]
    out.append(decoder.finish())
    return [batch for batch in out if batch.events]


def enforce_all(batches: list[Batch]) -> int:
    """Run a fresh ``Enforce`` over ``batches``; the number of events it delivers."""
    stage = Enforce(StreamContext(Options()))

    async def go() -> int:
        delivered = 0
        for batch in batches:
            delivered += len(await stage.process(batch))
        return delivered

    return anyio.run(go)


def with_future_member(batches: list[Batch]) -> list[Batch]:
    """A copy in which every event carries an undescribed member (the slow path)."""
    out = []
    for batch in batches:
        marked = [{**copy.deepcopy(event), "futureProp": 1} for event in batch.events]
        out.append(Batch(marked, list(batch.indices)))
    return out


def measure(n: int = 100_000, repeat: int = 7, seed: int = 0) -> dict[str, float]:
    """Events per second: the clean stream (median of ``repeat`` rounds) and the slow path."""
    clean = batches_of(events(n, seed))
    assert enforce_all(clean) == n
    times = rounds({"clean": partial(enforce_all, clean)}, repeat)
    # The slow path strips in place, so each round needs its own copy.
    slow_times = []
    for _ in range(max(1, repeat // 3)):
        marked = with_future_member(clean)
        slow_times += rounds({"slow": partial(enforce_all, marked)}, 1)["slow"]
    return {"clean": n / median(times["clean"]), "slow": n / median(slow_times)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    rates = measure(args.events, args.repeat)
    verdict = "met" if rates["clean"] >= TARGET else "MISSED"
    print(f"enforce alone: {args.events:,} events, batches of one 64 KiB read each")
    print(
        f"  clean stream (fast path)        {rates['clean']:>12,.0f} events/s   "
        f"target ≥ {TARGET:,}: {verdict}"
    )
    print(f"  every event stripped (slow path) {rates['slow']:>11,.0f} events/s")
    return 0 if rates["clean"] >= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
