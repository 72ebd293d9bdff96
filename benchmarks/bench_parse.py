"""The parse benchmark: the ``Parse`` decoder next to bare ``orjson.loads`` per frame.

Both sides decode the same 100,000-event realistic stream in the same run.
The baseline is the floor for any Python decoder: ``orjson.loads`` on each
frame's JSON, already cut out of the stream for it. ``Parse`` gets the stream
as a transport delivers it — 64 KiB reads, frames split across reads — and
does the framing too. Targets (issue 2): within 1.5× of the baseline on JSON
lines, within 2× on SSE.

    python -m benchmarks.bench_parse [--events N] [--repeat R]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import partial

import orjson
from agui_pipeline.options import Options
from agui_pipeline.stage import StreamContext
from agui_pipeline.stages.parse import Parse

from .timing import median, ratio, rounds
from .workload import chunks, encode_jsonl, encode_sse, events

TARGETS = {"jsonl": 1.5, "sse": 2.0}
"""Largest acceptable parse time / bare orjson time, per framing."""


def decode_with_parse(reads: list[bytes], framing: str | None = None) -> int:
    """Feed ``reads`` to a fresh ``Parse`` as the engine would; the number of events."""
    decoder = Parse(StreamContext(Options(framing=framing)))
    count = 0
    for read in reads:
        count += len(decoder.feed(read))
    return count + len(decoder.finish())


def decode_with_orjson(payloads: list[bytes]) -> int:
    """The baseline: ``orjson.loads`` on each frame's JSON, frames already split."""
    loads = orjson.loads
    return len([loads(payload) for payload in payloads])


def frame_payloads(body: bytes, framing: str) -> list[bytes]:
    """Each frame's JSON, cut out of ``body`` before the clock starts (the baseline's input)."""
    if framing == "jsonl":
        return body.splitlines()
    return [frame.removeprefix(b"data: ") for frame in body.split(b"\n\n")[:-1]]


@dataclass(frozen=True)
class ParseFigures:
    framing: str
    events: int
    parse_seconds: list[float]
    orjson_seconds: list[float]

    @property
    def parse_rate(self) -> float:
        return self.events / median(self.parse_seconds)

    @property
    def orjson_rate(self) -> float:
        return self.events / median(self.orjson_seconds)

    @property
    def ratio(self) -> float:
        """Parse time over orjson time (median of the rounds' ratios)."""
        return ratio(self.parse_seconds, self.orjson_seconds)

    @property
    def target(self) -> float:
        return TARGETS[self.framing]

    def row(self) -> str:
        verdict = "met" if self.ratio <= self.target else "MISSED"
        target = f"≤ {self.target:.1f}x"
        return (
            f"{self.framing:<7} {self.parse_rate:>12,.0f} {self.orjson_rate:>12,.0f} "
            f"{self.ratio:>6.2f}x {target:>7} {verdict}"
        )


def measure(n: int = 100_000, repeat: int = 7, seed: int = 0) -> list[ParseFigures]:
    stream = events(n, seed)
    figures = []
    for framing, body in (("jsonl", encode_jsonl(stream)), ("sse", encode_sse(stream))):
        reads = chunks(body)
        payloads = frame_payloads(body, framing)
        assert decode_with_parse(reads) == decode_with_orjson(payloads) == n
        times = rounds(
            {
                "parse": partial(decode_with_parse, reads),
                "orjson": partial(decode_with_orjson, payloads),
            },
            repeat,
        )
        figures.append(ParseFigures(framing, n, times["parse"], times["orjson"]))
    return figures


HEADER = f"{'framing':<7} {'parse ev/s':>12} {'orjson ev/s':>12} {'ratio':>7} {'target':>7}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    figures = measure(args.events, args.repeat)
    print(
        f"parse vs bare orjson.loads per frame: {args.events:,} events, 64 KiB reads, "
        f"median of {args.repeat} interleaved rounds"
    )
    print(HEADER)
    for figure in figures:
        print(figure.row())
    return 0 if all(f.ratio <= f.target for f in figures) else 1


if __name__ == "__main__":
    raise SystemExit(main())
