"""The gateway's counters: Prometheus text at ``/metrics`` and the OpenTelemetry meter.

What :class:`~agui_pipeline.http.gateway.Gateway` counts, under one name each way:

==========================  ===========================  ================================
Prometheus (``/metrics``)   OpenTelemetry                what
==========================  ===========================  ================================
``agui_gateway_runs_total``  ``agui.gateway.runs``        runs by ``outcome``: the verdict
                                                         (``completed``, ``rejected``,
                                                         ``truncated``…), ``refused`` (4xx),
                                                         ``upstream-error`` (502),
                                                         ``ended`` (the client left, or the
                                                         shutdown ended it)
``agui_gateway_rejections_   ``agui.gateway.rejections``  rejected or truncated streams, by
total``                                                  ``code``
``agui_gateway_findings_     ``agui.gateway.findings``    diagnostics, by ``code`` and
total``                                                  ``severity``
``agui_gateway_upstream_     ``agui.gateway.upstream_     upstream failures before a stream,
errors_total``               errors``                    by ``status`` (``none``: no answer)
``agui_gateway_shed_total``  ``agui.gateway.shed``        requests answered 503/408 at once,
                                                         by ``cause``
``agui_gateway_open_         ``agui.gateway.open_         streams being relayed now
streams``                    streams``
``agui_gateway_run_          ``agui.gateway.run_          seconds from a run's request to
duration_seconds``           duration`` (s)              its end, by ``outcome`` (as runs)
``agui_gateway_first_        ``agui.gateway.first_        seconds from a run's request to
event_seconds``              event`` (s)                 its first event sent to the client
==========================  ===========================  ================================

Every label comes from a fixed set (outcomes, causes, HTTP statuses) or the catalog
(codes), never from what a client or producer sent, so the series stay few. The
Prometheus side needs the ``metrics`` extra (``prometheus-client``), the OpenTelemetry
side the ``otel`` extra and the meter the tap uses (:func:`agui_pipeline.http.telemetry.meter`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider

_COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "runs": ("Runs relayed, by outcome", ("outcome",)),
    "rejections": ("Upstream streams rejected or truncated, by code", ("code",)),
    "findings": (
        "Diagnostics found in upstream streams, by code and severity",
        ("code", "severity"),
    ),
    "upstream_errors": ("Upstream failures before any stream, by HTTP status", ("status",)),
    "shed": ("Requests answered at once without relaying (503, 408), by cause", ("cause",)),
}
_OPEN_STREAMS = "Streams being relayed now"
_HISTOGRAMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "run_duration": ("Seconds from a run's request to its end, by outcome", ("outcome",)),
    "first_event": ("Seconds from a run's request to its first event sent", ()),
}
_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)
"""Seconds: from a quick first token to a long agent run (the gateway's default deadline)."""


class GatewayMetrics:
    """The gateway's counters, kept by ``prometheus-client`` (``prometheus=True``, for
    ``/metrics``) and/or an OpenTelemetry meter (``opentelemetry=True`` for the global
    provider, or a ``MeterProvider``)."""

    def __init__(
        self, *, prometheus: bool = True, opentelemetry: bool | MeterProvider = False
    ) -> None:
        self._registry: Any = None
        self._prometheus: dict[str, Any] = {}
        self._opentelemetry: dict[str, Any] = {}
        if prometheus:
            self._start_prometheus()
        if opentelemetry is not False:
            self._start_opentelemetry(None if opentelemetry is True else opentelemetry)

    def _start_prometheus(self) -> None:
        try:
            from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
        except ModuleNotFoundError as missing:
            raise ImportError(
                "/metrics needs prometheus-client: pip install 'agui-pipeline[metrics]'"
            ) from missing
        self._registry = CollectorRegistry()  # the gateway's own: two never collide
        for name, (description, labels) in _COUNTERS.items():
            self._prometheus[name] = Counter(
                f"agui_gateway_{name}", description, labels, registry=self._registry
            )
        self._prometheus["open_streams"] = Gauge(
            "agui_gateway_open_streams", _OPEN_STREAMS, registry=self._registry
        )
        for name, (description, labels) in _HISTOGRAMS.items():
            self._prometheus[name] = Histogram(
                f"agui_gateway_{name}_seconds",
                description,
                labels,
                registry=self._registry,
                buckets=_BUCKETS,
            )

    def _start_opentelemetry(self, provider: MeterProvider | None) -> None:
        from agui_pipeline.http.telemetry import meter

        otel = meter(provider)
        for name, (description, _) in _COUNTERS.items():
            self._opentelemetry[name] = otel.create_counter(
                f"agui.gateway.{name}", description=description
            )
        self._opentelemetry["open_streams"] = otel.create_up_down_counter(
            "agui.gateway.open_streams", description=_OPEN_STREAMS
        )
        for name, (description, _) in _HISTOGRAMS.items():
            self._opentelemetry[name] = otel.create_histogram(
                f"agui.gateway.{name}", unit="s", description=description
            )

    def _add(self, name: str, amount: int = 1, **labels: str) -> None:
        counted = self._prometheus.get(name)
        if counted is not None:
            (counted.labels(**labels) if labels else counted).inc(amount)
        instrument = self._opentelemetry.get(name)
        if instrument is not None:
            instrument.add(amount, {f"agui.{key}": value for key, value in labels.items()})

    def _observe(self, name: str, seconds: float, **labels: str) -> None:
        histogram = self._prometheus.get(name)
        if histogram is not None:
            (histogram.labels(**labels) if labels else histogram).observe(seconds)
        instrument = self._opentelemetry.get(name)
        if instrument is not None:
            instrument.record(seconds, {f"agui.{key}": value for key, value in labels.items()})

    def run(self, outcome: str, seconds: float | None = None) -> None:
        """A run ended with ``outcome``; ``seconds`` after its request, when timed."""
        self._add("runs", outcome=outcome)
        if seconds is not None:
            self._observe("run_duration", seconds, outcome=outcome)

    def first_event(self, seconds: float) -> None:
        self._observe("first_event", seconds)

    def rejection(self, code: str) -> None:
        self._add("rejections", code=code)

    def finding(self, code: str, severity: str) -> None:
        self._add("findings", code=code, severity=severity)

    def upstream_error(self, status: int | None) -> None:
        self._add("upstream_errors", status="none" if status is None else str(status))

    def shed(self, cause: str) -> None:
        self._add("shed", cause=cause)

    def stream_opened(self) -> None:
        self._add("open_streams", 1)

    def stream_closed(self) -> None:
        self._add("open_streams", -1)

    def exposition(self) -> tuple[bytes, str] | None:
        """The Prometheus text and its content type (``None`` without ``prometheus=True``)."""
        if self._registry is None:
            return None
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self._registry), CONTENT_TYPE_LATEST
