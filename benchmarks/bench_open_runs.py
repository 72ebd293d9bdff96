"""Memory per open run: many streams open at once in one process, each mid-run.

Each stream is the default pipeline (Conversation included) reading an async
iterable that delivers a run's start, an open assistant message and
``--deltas`` text deltas, then waits (a live run between tokens). With
``--runs`` streams waiting so, the process's RSS growth over its baseline,
divided by the runs, is what one open run holds; it is measured again after
every run has received as many deltas once more, to see whether it stays flat.

    python -m benchmarks.bench_open_runs [--runs 1000 10000] [--deltas 20]

No HTTP here: the figure is the pipeline's (its stages' state, the
Conversation, the stream's generators), not a socket's buffers.
"""

from __future__ import annotations

import argparse
import gc
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import orjson
from agui_pipeline import Pipeline


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def _frame(event: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(event) + b"\n\n"


async def _measure(runs: int, deltas: int) -> dict[str, Any]:
    pipeline = Pipeline()
    more = [anyio.Event() for _ in range(2)]
    received = [0]

    async def source(number: int) -> AsyncIterator[bytes]:
        run, message = f"r-{number}", f"m-{number}"
        yield _frame({"type": "RUN_STARTED", "threadId": "t", "runId": run})
        yield _frame({"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"})
        for gate in more:
            for _ in range(deltas):
                yield _frame(
                    {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": "tok "}
                )
            received[0] += 1
            await gate.wait()
        yield _frame({"type": "TEXT_MESSAGE_END", "messageId": message})
        yield _frame({"type": "RUN_FINISHED", "threadId": "t", "runId": run})

    async def one(number: int) -> None:
        async with pipeline.open(source(number)) as stream:
            async for _event in stream:
                pass
        assert stream.verdict.completed, stream.verdict

    gc.collect()
    baseline = _rss_kib()
    figures: dict[str, Any] = {"runs": runs, "deltas per step": deltas}
    async with anyio.create_task_group() as group:
        for number in range(runs):
            group.start_soon(one, number)
        for step, gate in enumerate(more):
            while received[0] < runs * (step + 1):
                await anyio.sleep(0.01)
            gc.collect()
            grown = _rss_kib() - baseline
            figures[f"KiB per open run after {deltas * (step + 1)} deltas"] = round(grown / runs, 2)
            gate.set()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--deltas", type=int, default=20)
    args = parser.parse_args(argv)
    for runs in args.runs:
        print(json.dumps(anyio.run(_measure, runs, args.deltas)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
