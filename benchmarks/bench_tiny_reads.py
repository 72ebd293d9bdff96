"""What a producer writing one byte at a time costs the client, per event.

``agui-pipeline serve --split N --pause S`` (a process of its own) replays the benchmark
workload writing every frame in pieces of N bytes, S seconds apart; this process reads
the run through ``HttpAgent`` and reports its own CPU per event and per byte.
``--split 1 --pause 0.0002`` is the hostile case (a byte every fraction of a millisecond,
each its own HTTP chunk and its own read); a large N is the healthy one.

    python -m benchmarks.bench_tiny_reads [--split 1] [--pause 0.0002] [--events 100]
                                          [--transport httpx|aiohttp]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from agui_pipeline import HttpAgent

from .workload import encode_sse, events


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


async def _read(url: str, transport: Any) -> tuple[int, float, float]:
    async with HttpAgent(url, transport=transport) as agent:
        cpu, wall = _cpu(), time.monotonic()
        result = await agent.run({"threadId": "t", "runId": "r", "messages": []})
        return len(result.events), _cpu() - cpu, time.monotonic() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", type=int, default=1)
    parser.add_argument("--pause", type=float, default=0.0002)
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--transport", choices=("httpx", "aiohttp"), default="httpx")
    args = parser.parse_args()
    transport = None
    if args.transport == "aiohttp":
        from agui_pipeline import AiohttpTransport

        transport = AiohttpTransport()
    data = encode_sse(events(args.events))
    with tempfile.TemporaryDirectory() as folder:
        recording = Path(folder) / "run.sse"
        recording.write_bytes(data)
        command = [sys.executable, "-m", "agui_pipeline", "serve", str(recording), "--port", "0"]
        serve = subprocess.Popen(
            [*command, "--split", str(args.split), "--pause", str(args.pause)],
            stderr=subprocess.PIPE,
            text=True,
        )
        assert serve.stderr is not None
        url = next(word for word in serve.stderr.readline().split() if word.startswith("http"))
        try:
            count, cpu, wall = anyio.run(_read, url, transport)
        finally:
            serve.terminate()
            serve.wait()
    print(
        f"--split {args.split} --pause {args.pause:g} over {args.transport}: {count} events, "
        f"{len(data)} bytes; "
        f"client CPU {cpu * 1e6 / count:.0f} us/event, {cpu * 1e6 / len(data):.2f} us/byte; "
        f"wall {wall:.2f} s"
    )


if __name__ == "__main__":
    main()
