"""``agui-pipeline proxy``: a validating gateway between a UI and an agent.

A :class:`~agui_pipeline.http.relay.Relay` served by uvicorn, printing every run's
diagnostics on stderr as they happen — text lines, or JSON lines with
``log_format="json"`` — and one line with the verdict when the run ends.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any, TextIO

import orjson
from agui_pipeline._engine.pipeline import Pipeline
from agui_pipeline._engine.result import Verdict
from agui_pipeline.errors import Diagnostic
from agui_pipeline.http.client import Transport
from agui_pipeline.http.relay import Relay, Upstream


class RunLog:
    """Writes each relayed run's diagnostics and verdict, one line each, as they happen."""

    def __init__(self, out: TextIO, log_format: str = "text") -> None:
        if log_format not in ("text", "json"):
            raise ValueError(f"--log-format expects text or json, got {log_format!r}")
        self.out = out
        self.json = log_format == "json"

    def diagnostic(self, run_input: Mapping[str, Any], diagnostic: Diagnostic) -> None:
        if self.json:
            self._line({**_ids(run_input), "diagnostic": diagnostic.to_dict()})
        else:
            self._text(run_input, str(diagnostic))

    def end(self, run_input: Mapping[str, Any], verdict: Verdict | None) -> None:
        if self.json:
            self._line(
                {**_ids(run_input), "verdict": None if verdict is None else verdict.to_dict()}
            )
        elif verdict is None:
            self._text(run_input, "no stream (refused, upstream error, or the client went away)")
        else:
            ended = str(verdict.outcome)
            self._text(run_input, ended if verdict.completed else f"{ended}: {verdict.message}")

    def _text(self, run_input: Mapping[str, Any], text: str) -> None:
        ids = _ids(run_input)
        self.out.write(f"run {ids['runId']} (thread {ids['threadId']}): {text}\n")
        self.out.flush()

    def _line(self, record: dict[str, Any]) -> None:
        self.out.write(orjson.dumps(record).decode() + "\n")
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
) -> None:
    """Serve the proxy in the foreground until interrupted."""
    from agui_pipeline.http.serve import bind, run_server, url_of

    sock = bind(host, port)
    if on_listening is not None:
        on_listening(url_of(sock))
    # uvicorn says only what goes wrong: stderr is the runs' log.
    app = proxy_app(upstream, pipeline=pipeline, log=log, transport=transport)
    run_server(app, sock, "warning", lifespan=True)  # the Relay closes its pool on shutdown
