"""The tap's cost: what wrapping an agent's app with :class:`~agui_pipeline.tap.Tap` adds.

In one process, no network: an ASGI app sends the benchmark workload as SSE, one
``http.response.body`` message per event, to a ``send`` that does nothing, once
bare and once through the tap. Reported:

- the app's wait per ``send`` (p50 / p99 / max, µs): what the agent feels per event —
  the forward, the copy to the checker, and the checking when the checker runs
  between sends on the same event loop;
- CPU per event, bare and tapped, over the whole response (the checker included):
  what the tap costs the process.

    python -m benchmarks.bench_tap [--events 20000]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import anyio
from agui_pipeline.tap import Tap
from starlette.types import Message, Receive, Scope, Send

from .workload import encode_sse, events

SCOPE: dict[str, Any] = {"type": "http", "method": "POST", "path": "/", "headers": []}
BODY = b'{"threadId":"t","runId":"r","messages":[]}'


def agent_app(frames: list[bytes], waits: list[float]) -> Any:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        start = {"type": "http.response.start", "status": 200}
        await send({**start, "headers": [(b"content-type", b"text/event-stream")]})
        for frame in frames:
            before = time.perf_counter()
            await send({"type": "http.response.body", "body": frame, "more_body": True})
            waits.append(time.perf_counter() - before)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


async def serve_once(app: Any) -> float:
    async def receive() -> Message:
        return {"type": "http.request", "body": BODY, "more_body": False}

    async def send(_message: Message) -> None:
        return None

    started = time.process_time()
    await app(SCOPE, receive, send)
    return time.process_time() - started


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    args = parser.parse_args()
    workload = events(args.events)
    frames = [encode_sse([event]) for event in workload]
    for name, wrap in (("bare", lambda app: app), ("tapped", Tap)):
        waits: list[float] = []
        cpu = anyio.run(serve_once, wrap(agent_app(frames, waits)))
        print(
            f"{name:7} wait per send p50 {percentile(waits, 0.5) * 1e6:6.1f} µs, "
            f"p99 {percentile(waits, 0.99) * 1e6:6.1f} µs, max {max(waits) * 1e6:8.1f} µs; "
            f"CPU {cpu / len(frames) * 1e6:6.1f} µs/event ({len(frames)} events)"
        )


if __name__ == "__main__":
    main()
