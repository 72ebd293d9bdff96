"""OpenTelemetry for the producer-side tap: span events and counters (the ``otel`` extra).

:class:`~agui_pipeline.http.tap.Tap` imports this module only when it is asked for
telemetry (``Tap(app, telemetry=True)``, or a :class:`Telemetry` of your own),
so the core never imports OpenTelemetry. Only the API is needed here: the
application installs and configures the SDK (exporters, sampling, limits).

What a checked response produces:

- a span event ``agui.diagnostic`` per diagnostic, carrying the log record's
  ``extra`` with ``agui_`` spelled ``agui.``: ``agui.code``, ``agui.severity``,
  ``agui.event_index``, ``agui.pointer``, ``agui.spec``, ``agui.thread_id``,
  ``agui.run_id``, ``agui.path`` (an absent value is left out: an attribute
  cannot be null);
- a span event ``agui.verdict`` (``agui.outcome``, ``agui.code``,
  ``agui.message``), the same outcome and code as span attributes, and an
  ``ERROR`` status naming the rejection when the stream did not complete;
- the counters ``agui.tap.diagnostics`` (attributes ``agui.code``,
  ``agui.severity``) and ``agui.tap.streams`` (``agui.outcome``).

The span is the one current where the request reached the tap — the server's
request span when an OpenTelemetry ASGI instrumentation wraps the tapped app,
so the findings sit on the request they are about. When that span is not
recording (no instrumentation, or not sampled), the tap starts a span of its
own, ``agui.tap.check``, from the response's start to its verdict: events put
on a span that does not record are dropped, and without it the extra would say
nothing where no instrumentation is installed. A span ends with a bounded number
of events (the SDK's span limits, 128 by default); the counters count them all,
and their attribute sets stay few whatever a producer sends: codes come from the
catalog, severities and outcomes from fixed sets.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

if TYPE_CHECKING:
    from agui_pipeline._engine.result import Verdict

_SCOPE = "agui_pipeline.http.tap"
_VERSION = version("agui-pipeline")


def meter(meter_provider: metrics.MeterProvider | None = None) -> metrics.Meter:
    """The meter the tap counts with, also the gateway's
    (:mod:`agui_pipeline.http.gateway_metrics`): the global provider's unless given another."""
    return metrics.get_meter(_SCOPE, _VERSION, meter_provider=meter_provider)


class Telemetry:
    """Where the tap sends its spans and counters: the global providers unless given others.

    ``Tap(app, telemetry=True)`` is ``Tap(app, telemetry=Telemetry())``.
    """

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        # With the global providers these are proxies until the application sets them.
        self._tracer = trace.get_tracer(_SCOPE, _VERSION, tracer_provider=tracer_provider)
        counting = meter(meter_provider)
        self._diagnostics = counting.create_counter(
            "agui.tap.diagnostics",
            unit="{diagnostic}",
            description="Diagnostics the tap found in AG-UI responses, by code and severity",
        )
        self._streams = counting.create_counter(
            "agui.tap.streams",
            unit="{stream}",
            description="AG-UI response streams the tap checked, by outcome",
        )

    def request(self) -> ResponseTelemetry:
        """Called where the request reaches the tap: the span current there is the request's."""
        return ResponseTelemetry(self, trace.get_current_span())


class ResponseTelemetry:
    """The telemetry of one checked response (made by :meth:`Telemetry.request`)."""

    def __init__(self, telemetry: Telemetry, current: Span) -> None:
        self._telemetry = telemetry
        self._span = current
        self._own: Span | None = None

    def start(self, fields: Mapping[str, Any]) -> None:
        """The response is an event stream to check: start a span if there is none to use."""
        if not self._span.is_recording():
            self._own = self._span = self._telemetry._tracer.start_span(
                "agui.tap.check", kind=SpanKind.INTERNAL, attributes=attributes(fields)
            )

    def diagnostic(self, fields: Mapping[str, Any]) -> None:
        named = attributes(fields)
        self._span.add_event("agui.diagnostic", named)
        self._telemetry._diagnostics.add(
            1, {"agui.code": named["agui.code"], "agui.severity": named["agui.severity"]}
        )

    def verdict(self, verdict: Verdict, fields: Mapping[str, Any]) -> None:
        outcome = str(verdict.outcome)
        judged = {"agui_outcome": outcome, "agui_code": verdict.code}
        said = {**fields, **judged, "agui_message": verdict.message}
        self._span.add_event("agui.verdict", attributes(said))
        self._span.set_attributes(attributes(judged))
        if not verdict.completed:
            why = f"AG-UI stream {outcome}" + (f": {verdict.code}" if verdict.code else "")
            self._span.set_status(Status(StatusCode.ERROR, why))
        self._telemetry._streams.add(1, {"agui.outcome": outcome})

    def end(self) -> None:
        """The checking is over (judged, failed or cancelled): end the tap's own span."""
        if self._own is not None:
            self._own.end()
            self._own = None


def attributes(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The tap's log ``extra`` as span attributes: ``agui_x`` is ``agui.x``, and an absent
    value is left out (OpenTelemetry attributes cannot be null)."""
    return {
        name.replace("agui_", "agui.", 1): value
        for name, value in fields.items()
        if value is not None
    }
