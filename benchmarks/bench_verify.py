"""The verify benchmark: what sequencing verification costs per event, and what it keeps.

Verify sees every event and does a few dict lookups for each. It runs on the
realistic workload in the batches parse makes from 64 KiB reads, next to a
pass-through stage (the floor), at two lengths: the cost per event must not
grow with the stream. The memory figure is what verify allocated while
reading the whole stream (tracemalloc), i.e. the state it keeps: the ids the
thread must not reuse, one entry per message, tool call and run — never one
per event.

    python -m benchmarks.bench_verify [--events N ...] [--repeat R]
"""

from __future__ import annotations

import argparse
import tracemalloc

import anyio
from agui_pipeline.batch import Batch
from agui_pipeline.options import Options
from agui_pipeline.stage import Stage, StreamContext
from agui_pipeline.stages.verify import Verify

from .bench_compat import batches_of, through
from .timing import median, rounds
from .workload import events


def kept_bytes(batches: list[Batch]) -> int:
    """Bytes verify still holds after the whole stream (its state, not the events)."""

    async def go() -> Verify:
        stage = Verify(StreamContext(Options()))
        for batch in batches:
            await stage.process(batch)
        await stage.finish()
        return stage

    tracemalloc.start()
    stage = anyio.run(go)
    kept, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del stage
    return kept


def measure(n: int, repeat: int) -> dict[str, float]:
    plain = batches_of(events(n))
    times = rounds(
        {
            "pass-through": lambda: through(Stage, plain),
            "verify": lambda: through(Verify, plain),
        },
        repeat,
    )
    figures = {name: median(seconds) for name, seconds in times.items()}
    figures["kept"] = kept_bytes(plain)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"verify alone, 64 KiB batches, median of {args.repeat} rounds (per input event)")
    print(f"{'events':>10} {'stage':<14} {'events/s':>12} {'ns/event':>9} {'over floor':>11}")
    for n in args.events:
        figures = measure(n, args.repeat)
        floor = figures["pass-through"]
        for name in ("pass-through", "verify"):
            seconds = figures[name]
            over = (seconds - floor) / n * 1e9
            print(
                f"{n:>10,} {name:<14} {n / seconds:>12,.0f} {seconds / n * 1e9:>9.0f} "
                f"{over:>9.0f}ns"
            )
        print(f"{n:>10,} verify keeps {figures['kept'] / 1e6:.2f} MB of state at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
