"""``agui-pipeline proxy``: a validating gateway between a UI and an agent.

A :class:`~agui_pipeline.http.relay.Relay` behind a :class:`~agui_pipeline.http.gateway.Gateway`
(descriptor budget, timeouts, health, metrics, graceful shutdown) served by uvicorn,
printing every run's diagnostics on stderr as they happen — text lines, or JSON lines
with ``log_format="json"`` — one line with the verdict when the run ends, and the
gateway's errors summarised.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TextIO

import orjson
from agui_pipeline._engine.pipeline import Pipeline
from agui_pipeline._engine.result import Verdict
from agui_pipeline.delivery.escaping import inert, inert_json, quoted
from agui_pipeline.errors import Diagnostic
from agui_pipeline.http.relay import Relay, Upstream
from agui_pipeline.http.transport import Transport

if TYPE_CHECKING:
    from agui_pipeline.http.gateway import GatewaySettings, SummarisedLog
    from agui_pipeline.http.gateway_metrics import GatewayMetrics


class RunLog:
    """Writes each relayed run's diagnostics and verdict, one line each, as they happen.

    What a client or a producer chose is inert: the ids are quoted and every control
    character escaped (:mod:`agui_pipeline.delivery.escaping`), so no request can end a line or
    write one of its own; a JSON line escapes the characters JSON itself leaves raw.
    """

    def __init__(self, out: TextIO, log_format: str = "text") -> None:
        if log_format not in ("text", "json"):
            raise ValueError(f"--log-format expects text or json, got {log_format!r}")
        self.out = out
        self.json = log_format == "json"

    def diagnostic(self, run_input: Mapping[str, Any], diagnostic: Diagnostic) -> None:
        if self.json:
            self._line({**_ids(run_input), "diagnostic": diagnostic.to_dict()})
        else:
            self._text(run_input, inert(str(diagnostic)))

    def end(self, run_input: Mapping[str, Any], verdict: Verdict | None, cause: str | None) -> None:
        """The run's verdict, or why it has none (``cause``: ``refused 422 <code>``,
        ``upstream error <class>``, ``client gone``, ``ended: <reason>``)."""
        if self.json:
            record = None if verdict is None else verdict.to_dict()
            self._line({**_ids(run_input), "verdict": record, "cause": cause})
        elif verdict is None:
            self._text(run_input, f"no verdict: {inert(cause or 'unknown')}")
        else:
            ended = str(verdict.outcome)
            said = ended if verdict.completed else f"{ended}: {inert(verdict.message or '')}"
            self._text(run_input, said)

    def _text(self, run_input: Mapping[str, Any], text: str) -> None:
        ids = _ids(run_input)
        run = "(no runId)" if ids["runId"] is None else quoted(ids["runId"])
        thread = "(no threadId)" if ids["threadId"] is None else quoted(ids["threadId"])
        self.out.write(f"run {run} (thread {thread}): {text}\n")
        self.out.flush()

    def _line(self, record: dict[str, Any]) -> None:
        self.out.write(inert_json(orjson.dumps(record).decode()) + "\n")
        self.out.flush()


def _ids(run_input: Mapping[str, Any]) -> dict[str, Any]:
    return {"threadId": run_input.get("threadId"), "runId": run_input.get("runId")}


def proxy_app(
    upstream: str,
    *,
    pipeline: Pipeline | None = None,
    log: RunLog | None = None,
    transport: Transport | None = None,
) -> Relay:
    """The proxy's ASGI app: a :class:`Relay` to ``upstream`` reporting to ``log``, reading
    through ``transport`` (httpx by default)."""
    log = log or RunLog(sys.stderr)
    target = Upstream(upstream, pipeline=pipeline, transport=transport)
    return Relay(target, on_diagnostic=log.diagnostic, on_end=log.end)


def proxy(
    upstream: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    pipeline: Pipeline | None = None,
    log: RunLog | None = None,
    on_listening: Callable[[str], None] | None = None,
    transport: Transport | None = None,
    settings: GatewaySettings | None = None,
    metrics: GatewayMetrics | None = None,
) -> None:
    """Serve the proxy in the foreground until SIGTERM or SIGINT: the relay behind the
    gateway's budget, timeouts, endpoints and graceful shutdown (:mod:`agui_pipeline.http.gateway`).
    ``metrics`` counts for ``/metrics`` and OpenTelemetry (``None``: no counters)."""
    from agui_pipeline.http.gateway import Gateway, GatewaySettings, SummarisedLog, serve_gateway
    from agui_pipeline.http.serve import bind

    log = log or RunLog(sys.stderr)
    settings = settings or GatewaySettings()
    relay = proxy_app(upstream, pipeline=pipeline, log=log, transport=transport)
    errors = SummarisedLog(log.out, json=log.json, interval=settings.log_interval)
    gateway = Gateway(relay, settings=settings, log=errors, metrics=metrics)
    sock = bind(host, port)
    # uvicorn says only what goes wrong, summarised with the gateway's errors: stderr is
    # the runs' log.
    logging.getLogger("uvicorn.error").addFilter(_Summarised(errors))
    serve_gateway(gateway, sock, on_listening)


class _Summarised(logging.Filter):
    """uvicorn's own warnings and errors, each message once per interval, then counted."""

    def __init__(self, log: SummarisedLog) -> None:
        super().__init__()
        self.log = log

    def filter(self, record: logging.LogRecord) -> bool:
        """Said by the summarised log; uvicorn's own line only for the first of a cause
        that carries a traceback, which is worth reading whole once."""
        if record.levelno < logging.WARNING:
            return True
        first_line = record.getMessage().splitlines()[0][:80] if record.getMessage() else ""
        first = self.log.note(f"server: {first_line}", "")
        return first and record.exc_info is not None
