"""The expand benchmark: what chunk expansion costs per event.

Expand sees every event: on a stream with no chunks it only watches for the
events that would close a chunk stream, so its cost there is the ordinary
case. The same realistic stream re-spelled in chunks — every text, reasoning
and tool-call triad as ``*_CHUNK`` events, the ``*_END`` left to expansion —
shows the expanding path. Both are measured in the batches parse makes from
64 KiB reads, next to a pass-through stage (the floor), at two lengths: the
cost per event must not grow with the stream.

    python -m benchmarks.bench_expand [--events N] [--repeat R]
"""

from __future__ import annotations

import argparse

from agui_pipeline.batch import Event
from agui_pipeline.stage import Stage
from agui_pipeline.stages.expand import Expand

from .bench_compat import batches_of, through
from .timing import median, rounds
from .workload import events

_FAMILIES = {
    "TEXT_MESSAGE": ("messageId", ("role", "name")),
    "REASONING_MESSAGE": ("messageId", ()),
    "TOOL_CALL": ("toolCallId", ("toolCallName", "parentMessageId")),
}
_PARTS = {
    f"{family}_{part}": (family, part)
    for family in _FAMILIES
    for part in ("START", "CONTENT", "ARGS", "END")
}


def chunked(stream: list[Event]) -> list[Event]:
    """The stream with every triad spelled as chunks.

    In the workload every ``*_END`` is followed by an event that closes the
    chunk stream in the same lane, so dropping it loses nothing but its
    metadata, which moves onto a metadata-only last chunk.
    """
    out: list[Event] = []
    for event in stream:
        found = _PARTS.get(event["type"])
        if found is None:
            out.append(event)
            continue
        family, part = found
        id_key, opener = _FAMILIES[family]
        chunk: Event = {"type": f"{family}_CHUNK"}
        if part == "START":
            chunk[id_key] = event[id_key]
            chunk.update((key, event[key]) for key in opener if key in event)
        elif part == "END" and "metadata" not in event:
            continue
        for key in ("delta", "metadata", "timestamp"):
            if key in event:
                chunk[key] = event[key]
        out.append(chunk)
    return out


def measure(n: int, repeat: int) -> dict[str, float]:
    stream = events(n)
    plain = batches_of(stream)
    spelled = batches_of(chunked(stream))
    times = rounds(
        {
            "pass-through": lambda: through(Stage, plain),
            "expand (triads, no chunks)": lambda: through(Expand, plain),
            "expand (all chunks)": lambda: through(Expand, spelled),
        },
        repeat,
    )
    return {name: median(seconds) for name, seconds in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"expand alone, 64 KiB batches, median of {args.repeat} rounds (per input event)")
    print(f"{'events':>10} {'stage':<28} {'events/s':>12} {'ns/event':>9} {'over floor':>11}")
    for n in args.events:
        figures = measure(n, args.repeat)
        floor = figures["pass-through"]
        for name, seconds in figures.items():
            over = (seconds - floor) / n * 1e9
            print(
                f"{n:>10,} {name:<28} {n / seconds:>12,.0f} {seconds / n * 1e9:>9.0f} "
                f"{over:>9.0f}ns"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
