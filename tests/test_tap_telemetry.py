"""The tap's OpenTelemetry extra, read back through the real SDK: apps served on 127.0.0.1,
under the real ASGI instrumentation's request span or with none, and a tap without the
extra that never imports OpenTelemetry."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from agui_pipeline import BackgroundServer
from agui_pipeline.http.tap import Tap, tap_extra
from agui_pipeline.http.telemetry import Telemetry
from agui_pipeline.subscribers import encode_sse
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, Sum
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tests.test_tap import BROKEN_BYTES, INPUT, Records, misbehaving_app, post, pydantic_ai_app


class Collected:
    """A tracer provider and a meter provider of the SDK, keeping what they record."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.telemetry = Telemetry(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider
        )

    def wait_for_span(self, found: Callable[[ReadableSpan], bool]) -> ReadableSpan:
        """The span once it has ended: the client has its last byte before the tap judges."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for span in self.spans.get_finished_spans():
                if found(span):
                    return span
            time.sleep(0.01)
        raise AssertionError(f"no such span among {self.spans.get_finished_spans()}")

    def counts(self, name: str) -> dict[frozenset[tuple[str, Any]], float]:
        """The tap's counter ``name``: its value by attribute set."""
        data = self.reader.get_metrics_data()
        assert data is not None
        counted: dict[frozenset[tuple[str, Any]], float] = {}
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if scope.scope.name == "agui_pipeline.http.tap" and metric.name == name:
                        assert isinstance(metric.data, Sum) and metric.data.is_monotonic
                        for point in metric.data.data_points:
                            counted[frozenset((point.attributes or {}).items())] = point.value
        return counted


@pytest.fixture
def collected() -> Iterator[Collected]:
    providers = Collected()
    yield providers
    providers.tracer_provider.shutdown()
    providers.meter_provider.shutdown()


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    handler = Records()
    logger = logging.getLogger("agui_pipeline.http.tap")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler.records
    logger.removeHandler(handler)


def events(span: ReadableSpan, name: str) -> list[dict[str, Any]]:
    return [dict(event.attributes or {}) for event in span.events if event.name == name]


def test_findings_are_events_on_the_request_span_with_the_log_records_fields(
    collected: Collected, records: list[logging.LogRecord]
) -> None:
    tapped = Tap(misbehaving_app(), telemetry=collected.telemetry)
    app = OpenTelemetryMiddleware(
        tapped, tracer_provider=collected.tracer_provider, meter_provider=MeterProvider()
    )
    with BackgroundServer(app) as server:
        post(server.url + "run")
        request = collected.wait_for_span(lambda span: span.kind is SpanKind.SERVER)
    logged = [tap_extra(r) for r in records if "agui_severity" in tap_extra(r)]
    assert logged, "the broken stream has findings"
    as_attributes = [
        {name.replace("agui_", "agui.", 1): v for name, v in found.items() if v is not None}
        for found in logged
    ]
    assert events(request, "agui.diagnostic") == as_attributes  # the same fields, in order
    stripped = next(e for e in as_attributes if e.get("agui.pointer") == "/rogue")
    assert stripped["agui.event_index"] == 0 and stripped["agui.run_id"] == "r-tap"
    assert stripped["agui.thread_id"] == "t-tap" and stripped["agui.path"] == "/run"
    assert stripped["agui.severity"] == "warning" and stripped["agui.spec"].startswith("/spec/")
    [verdict] = events(request, "agui.verdict")
    assert verdict["agui.outcome"] == "rejected" and verdict["agui.code"].startswith("verify.")
    assert "m-2" in verdict["agui.message"] and verdict["agui.run_id"] == "r-tap"
    assert request.attributes is not None and request.attributes["agui.outcome"] == "rejected"
    assert request.status.status_code is StatusCode.ERROR
    assert verdict["agui.code"] in (request.status.description or "")
    # The request's span held them: the tap started none of its own.
    assert [s.name for s in collected.spans.get_finished_spans() if s.name.startswith("agui")] == []

    by_code = Counter((e["agui.code"], e["agui.severity"]) for e in as_attributes)
    assert collected.counts("agui.tap.diagnostics") == {
        frozenset({("agui.code", code), ("agui.severity", severity)}): count
        for (code, severity), count in by_code.items()
    }
    assert collected.counts("agui.tap.streams") == {frozenset({("agui.outcome", "rejected")}): 1}


def test_without_a_request_span_a_clean_stream_gets_a_span_of_its_own(
    collected: Collected,
) -> None:
    with BackgroundServer(Tap(pydantic_ai_app(), telemetry=collected.telemetry)) as server:
        assert post(server.url).status_code == 200
        check = collected.wait_for_span(lambda span: span.name == "agui.tap.check")
    assert check.kind is SpanKind.INTERNAL and check.parent is None
    assert dict(check.attributes or {}) == {
        "agui.thread_id": "t-tap",
        "agui.run_id": "r-tap",
        "agui.path": "/",
        "agui.outcome": "completed",
    }
    assert events(check, "agui.diagnostic") == []
    assert events(check, "agui.verdict") == [
        {
            "agui.thread_id": "t-tap",
            "agui.run_id": "r-tap",
            "agui.path": "/",
            "agui.outcome": "completed",
        }
    ]
    assert check.status.status_code is StatusCode.UNSET
    assert collected.counts("agui.tap.streams") == {frozenset({("agui.outcome", "completed")}): 1}
    assert collected.counts("agui.tap.diagnostics") == {}


CUT_SHORT = encode_sse(
    [
        {"type": "RUN_STARTED", "threadId": "t-tap", "runId": "r-tap"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m-1", "role": "assistant"},
    ]
)


def test_a_truncated_stream_marks_its_span_as_an_error(collected: Collected) -> None:
    async def endpoint(request: Request) -> Response:
        async def body() -> AsyncIterator[bytes]:
            yield CUT_SHORT

        await request.body()
        return StreamingResponse(body(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/", endpoint, methods=["POST"])])
    with BackgroundServer(Tap(app, telemetry=collected.telemetry)) as server:
        post(server.url)
        check = collected.wait_for_span(lambda span: span.name == "agui.tap.check")
    assert check.status.status_code is StatusCode.ERROR
    assert check.status.description == "AG-UI stream truncated: verify.truncated"
    assert events(check, "agui.verdict")[0]["agui.outcome"] == "truncated"
    assert collected.counts("agui.tap.streams") == {frozenset({("agui.outcome", "truncated")}): 1}


# In a fresh interpreter each: what a process imports, and the global providers. Not
# tests.test_tap's app: pydantic-ai imports OpenTelemetry's API itself.
SERVED = f"""
import httpx, logging, sys
from agui_pipeline import BackgroundServer
from agui_pipeline.http.tap import Tap
from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.routing import Route

async def endpoint(request):
    async def body():
        yield {BROKEN_BYTES!r}

    await request.body()
    return StreamingResponse(body(), media_type="text/event-stream")

def misbehaving_app():
    return Starlette(routes=[Route("/run", endpoint, methods=["POST"])])

found = []
logging.getLogger("agui_pipeline.http.tap").addHandler(logging.Handler())
logging.getLogger("agui_pipeline.http.tap").handlers[0].emit = found.append
logging.getLogger("agui_pipeline.http.tap").setLevel(logging.INFO)

def request(tap):
    with BackgroundServer(tap) as server:
        httpx.post(server.url + "run", json={json.dumps(INPUT)!r}, timeout=20)
"""

WITHOUT_THE_EXTRA = (
    SERVED
    + """
request(Tap(misbehaving_app()))
assert any(hasattr(r, "agui_outcome") for r in found), "the response was checked"
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")))
sys.modules["opentelemetry"] = None  # as if the extra were not installed
try:
    Tap(misbehaving_app(), telemetry=True)
except ImportError as error:
    print(json.dumps(str(error)))
"""
)

GLOBAL_PROVIDERS = (
    SERVED
    + """
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, Sum
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

tap = Tap(misbehaving_app(), telemetry=True)  # made before the application sets providers
spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
trace.set_tracer_provider(provider)
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
request(tap)
import time
deadline = time.monotonic() + 10
while not spans.get_finished_spans() and time.monotonic() < deadline:
    time.sleep(0.01)
streams = [
    dict(point.attributes)
    for resource in reader.get_metrics_data().resource_metrics
    for scope in resource.scope_metrics
    for metric in scope.metrics if metric.name == "agui.tap.streams"
    for point in metric.data.data_points
]
print(json.dumps([[s.name, [e.name for e in s.events][-1]] for s in spans.get_finished_spans()]))
print(json.dumps(streams))
"""
)


def run_python(script: str) -> list[Any]:
    done = subprocess.run(
        [sys.executable, "-c", "import json\n" + script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_without_telemetry_the_tap_never_imports_opentelemetry() -> None:
    imported, refusal = run_python(WITHOUT_THE_EXTRA)
    assert imported == []
    assert "pip install 'agui-pipeline[otel]'" in refusal


def test_telemetry_true_uses_the_global_providers_set_later() -> None:
    spans, streams = run_python(GLOBAL_PROVIDERS)
    assert spans == [["agui.tap.check", "agui.verdict"]]
    assert streams == [{"agui.outcome": "rejected"}]
