"""The tap's cost: what wrapping an agent's app with :class:`~agui_pipeline.http.tap.Tap` adds.

In one process, no network: an ASGI app sends the benchmark workload as SSE, one
``http.response.body`` message per event, to a ``send`` that does nothing, once
bare and once through the tap. Reported:

- the app's wait per ``send`` (p50 / p99 / max, µs): what the agent feels per event —
  the forward, the copy to the checker, and the checking when the checker runs
  between sends on the same event loop;
- CPU per event, bare and tapped, over the whole response (the checker included):
  what the tap costs the process.

``--telemetry`` adds a third row, ``Tap(app, telemetry=...)`` recording to the
OpenTelemetry SDK in memory (a span per response, as without an instrumentation,
and the counters); ``--stray-every N`` gives every N-th event a member the schema
does not describe, one diagnostic (a log record, a span event, a count) each. The
tap's logger gets a handler that drops records, so no row pays for output.

    python -m benchmarks.bench_tap [--events 20000] [--telemetry] [--stray-every N]
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable
from typing import Any

import anyio
from agui_pipeline.http.tap import Tap
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


def with_telemetry() -> Callable[[Any], Tap]:
    """A tap recording to the OpenTelemetry SDK in memory (the ``otel`` extra and the SDK)."""
    from agui_pipeline.http.telemetry import Telemetry
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    telemetry = Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
    return lambda app: Tap(app, telemetry=telemetry)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument(
        "--telemetry", action="store_true", help="also measure the tap with OpenTelemetry on"
    )
    parser.add_argument(
        "--stray-every",
        type=int,
        metavar="N",
        help="give every N-th event an undescribed member (one diagnostic each)",
    )
    args = parser.parse_args()
    workload = events(args.events)
    if args.stray_every:
        for event in workload[:: args.stray_every]:
            event["strayMember"] = True
    frames = [encode_sse([event]) for event in workload]
    quiet = logging.getLogger("agui_pipeline.http.tap")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    rows: list[tuple[str, Callable[[Any], Any]]] = [("bare", lambda app: app), ("tapped", Tap)]
    if args.telemetry:
        rows.append(("otel", with_telemetry()))
    for name, wrap in rows:
        waits: list[float] = []
        cpu = anyio.run(serve_once, wrap(agent_app(frames, waits)))
        print(
            f"{name:7} wait per send p50 {percentile(waits, 0.5) * 1e6:6.1f} µs, "
            f"p99 {percentile(waits, 0.99) * 1e6:6.1f} µs, max {max(waits) * 1e6:8.1f} µs; "
            f"CPU {cpu / len(frames) * 1e6:6.1f} µs/event ({len(frames)} events)"
        )


if __name__ == "__main__":
    main()
