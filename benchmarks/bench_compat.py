"""The compat benchmark: what the always-on compatibility boundary costs per event.

Compat runs on every event of every stream, so its cost on a current stream —
one with no retired shape in it, the ordinary case — is what matters. It is
measured on the realistic 100,000-event stream, in the batches parse makes
from 64 KiB reads, next to a pass-through stage over the same batches (the
floor: the engine's per-batch await and nothing else). A legacy stream, the
same events with every reasoning event spelled as retired ``THINKING_*``,
shows the translating path too.

    python -m benchmarks.bench_compat [--events N] [--repeat R]
"""

from __future__ import annotations

import argparse
import copy

import anyio
from agui_pipeline.batch import Batch, Event
from agui_pipeline.options import Options
from agui_pipeline.stage import Stage, StreamContext
from agui_pipeline.stages.compat import Compat
from agui_pipeline.stages.parse import Parse

from .timing import median, rounds
from .workload import chunks, encode_jsonl, events

_RETIRED = {
    "REASONING_START": "THINKING_START",
    "REASONING_END": "THINKING_END",
    "REASONING_MESSAGE_START": "THINKING_TEXT_MESSAGE_START",
    "REASONING_MESSAGE_CONTENT": "THINKING_TEXT_MESSAGE_CONTENT",
    "REASONING_MESSAGE_END": "THINKING_TEXT_MESSAGE_END",
}


def batches_of(stream: list[Event]) -> list[Batch]:
    """The stream cut into the batches parse delivers from 64 KiB reads."""
    decoder = Parse(StreamContext(Options()))
    out = [decoder.feed(read) for read in chunks(encode_jsonl(stream))]
    return [batch for batch in [*out, decoder.finish()] if batch.events]


def legacy(stream: list[Event]) -> list[Event]:
    """Reasoning events in their retired spelling, with no ``messageId`` or ``role``."""
    out = []
    for event in stream:
        retired = _RETIRED.get(event["type"])
        if retired is None:
            out.append(event)
        else:
            old = {k: v for k, v in event.items() if k not in ("messageId", "role")}
            out.append({**old, "type": retired})
    return out


def through(factory: type[Stage], batches: list[Batch]) -> int:
    async def main() -> int:
        stage = factory(StreamContext(Options()))
        count = 0
        for batch in batches:
            count += len(await stage.process(batch))
        return count

    return anyio.run(main)


def measure(n: int, repeat: int) -> dict[str, float]:
    stream = events(n)
    current = batches_of(stream)
    old = batches_of(legacy(stream))
    # Translation rewrites events in place: each legacy round gets fresh copies.
    copies = [copy.deepcopy(old) for _ in range(repeat)]
    times = rounds(
        {
            "pass-through": lambda: through(Stage, current),
            "compat (current stream)": lambda: through(Compat, current),
            "compat (legacy THINKING_*)": lambda: through(Compat, copies.pop()),
        },
        repeat,
    )
    return {name: median(seconds) for name, seconds in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    figures = measure(args.events, args.repeat)
    floor = figures["pass-through"]
    print(f"compat alone: {args.events:,} events, 64 KiB batches, median of {args.repeat} rounds")
    print(f"{'stage':<28} {'events/s':>12} {'ns/event':>9} {'over floor':>11}")
    for name, seconds in figures.items():
        over = (seconds - floor) / args.events * 1e9
        print(
            f"{name:<28} {args.events / seconds:>12,.0f} {seconds / args.events * 1e9:>9.0f} "
            f"{over:>9.0f}ns"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
