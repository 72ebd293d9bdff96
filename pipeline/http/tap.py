"""A producer-side tap: ASGI middleware checking an agent's AG-UI responses as they leave.

Wrap the agent's app (pydantic-ai's, LangGraph's, your own) and every response
stream is read through a pipeline on its way to the client, with the request
body as the run input; what the pipeline says goes to :mod:`logging`::

    app = Tap(agent_app)                     # logger "agui_pipeline.http.tap"

The tap is an observer. Each piece of the response is passed on to the server
first, unchanged and in order, and only then copied to the checker — so no byte
is altered, reordered or withheld, and the client never waits for a judgement.
The checker runs beside the app in the same task group and reads the copies
from a bounded channel (``TAP_BUFFER`` pieces): what the app waits for per
piece is one channel send, and, only when the checker falls that far behind,
the checking itself. An idle producer is not the tap's to judge (the client's
timeouts are), so its pipeline has no idle timeout.

Each diagnostic is one log record (``WARNING`` for an error or warning,
``INFO`` otherwise) whose ``extra`` carries ``agui_code``, ``agui_severity``,
``agui_event_index``, ``agui_pointer``, ``agui_spec``, ``agui_thread_id``,
``agui_run_id`` and ``agui_path``; the verdict is one more (``agui_outcome``,
``agui_code``), ``INFO`` when the stream completed and ``ERROR`` otherwise. A message
is made inert (:func:`~agui_pipeline.delivery.escaping.inert`): what the producer sent cannot
write control characters into a log read on a terminal.
A bug in the checker is logged with its traceback and ends the checking of that
response only: the agent's stream goes on untouched.

With the ``otel`` extra, ``Tap(app, telemetry=True)`` also puts each diagnostic
and the verdict on the request's span as span events (``agui.code``,
``agui.severity``, … — the same fields), marks a stream that did not complete
with an ``ERROR`` status, and counts diagnostics by code and severity and
streams by outcome; pass a :class:`~agui_pipeline.http.telemetry.Telemetry` to use
providers other than the global ones. The details are in
:mod:`agui_pipeline.http.telemetry`; without it the tap never imports OpenTelemetry.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

import anyio
import orjson
from agui_pipeline._engine.pipeline import Pipeline
from agui_pipeline._engine.result import Verdict
from agui_pipeline.delivery.escaping import inert
from agui_pipeline.errors import Diagnostic
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class ResponseTrace(Protocol):
    """What the tap reports of one response (its span and counters)."""

    def start(self, fields: Mapping[str, Any]) -> None: ...

    def diagnostic(self, fields: Mapping[str, Any]) -> None: ...

    def verdict(self, verdict: Verdict, fields: Mapping[str, Any]) -> None: ...

    def end(self) -> None: ...


class TapTelemetry(Protocol):
    """Where the tap reports: :class:`agui_pipeline.http.telemetry.Telemetry` (the ``otel``
    extra's OpenTelemetry spans and counters), or your own."""

    def request(self) -> ResponseTrace: ...


TAP_BUFFER = 64
"""Response pieces the checker may fall behind by before the app's ``send`` waits for it."""
MAX_INPUT = 16 * 1024 * 1024
"""A request body larger than this is not kept as the run input (the stream is checked
without one)."""
PROTO_MEDIA_TYPE = b"application/vnd.ag-ui.event+proto"
_MEDIA_TYPES = (b"text/event-stream", PROTO_MEDIA_TYPE)


class Tap:
    """ASGI middleware checking every AG-UI response ``app`` sends (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        pipeline: Pipeline | None = None,
        logger: logging.Logger | None = None,
        telemetry: bool | TapTelemetry = False,
    ) -> None:
        self.app = app
        self.pipeline = (pipeline or Pipeline()).with_options(idle_timeout=None)
        self.logger = logger or logging.getLogger("agui_pipeline.http.tap")
        self.telemetry = _telemetry(telemetry)
        """Span events and counters besides the log (the ``otel`` extra), or ``None``."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        kept = True
        traced = None if self.telemetry is None else self.telemetry.request()

        async def tee_receive() -> Message:
            nonlocal kept
            message = await receive()
            if kept and message["type"] == "http.request":
                body.extend(message.get("body", b""))
                if len(body) > MAX_INPUT:
                    kept = False
                    body.clear()
            return message

        async with anyio.create_task_group() as group:
            copies: MemoryObjectSendStream[bytes] | None = None

            async def tee_send(message: Message) -> None:
                nonlocal copies
                await send(message)  # the client's bytes first, exactly as the app sent them
                if message["type"] == "http.response.start":
                    media_type = _event_stream_type(message)
                    if media_type is not None:
                        copies, readable = anyio.create_memory_object_stream[bytes](TAP_BUFFER)
                        run_input = _run_input(body) if kept else None
                        group.start_soon(
                            self._check, scope, media_type, run_input, readable, traced
                        )
                elif copies is not None and message["type"] == "http.response.body":
                    piece = message.get("body", b"")
                    try:
                        if piece:
                            await copies.send(piece)
                    except anyio.BrokenResourceError:  # the checker failed and said so
                        copies = None
                        return
                    if not message.get("more_body", False):
                        copies.close()

            try:
                await self.app(scope, tee_receive, tee_send)
            finally:
                if copies is not None:
                    copies.close()  # the response ended (or broke): the checker judges it

    async def _check(
        self,
        scope: Scope,
        media_type: bytes,
        run_input: dict[str, Any] | None,
        readable: MemoryObjectReceiveStream[bytes],
        traced: ResponseTrace | None,
    ) -> None:
        ids = {
            "agui_thread_id": None if run_input is None else run_input.get("threadId"),
            "agui_run_id": None if run_input is None else run_input.get("runId"),
            "agui_path": scope.get("path"),
        }

        def report(diagnostic: Diagnostic) -> None:
            level = logging.INFO if diagnostic.severity == "info" else logging.WARNING
            extra = {
                **ids,
                "agui_code": diagnostic.code,
                "agui_severity": str(diagnostic.severity),
                "agui_event_index": diagnostic.event_index,
                "agui_pointer": diagnostic.pointer,
                "agui_spec": diagnostic.spec,
            }
            self.logger.log(level, "%s", inert(str(diagnostic)), extra=extra)
            if traced is not None:
                traced.diagnostic(extra)

        pipeline = self.pipeline.with_options(on_diagnostic=report)
        if media_type == PROTO_MEDIA_TYPE:
            pipeline = pipeline.with_options(framing="proto")
        try:
            async with readable:
                if traced is not None:
                    traced.start(ids)
                stream = pipeline.open(readable, run_input=run_input)
                result = await stream.drain(conversation=False)  # the verdict alone
            verdict = result.verdict
            self.logger.log(
                logging.INFO if verdict.completed else logging.ERROR,
                "AG-UI stream %s%s",
                verdict.outcome,
                "" if verdict.completed else f": {inert(verdict.message or '')}",
                extra={**ids, "agui_outcome": str(verdict.outcome), "agui_code": verdict.code},
            )
            if traced is not None:
                traced.verdict(verdict, ids)
        except Exception:  # a bug in the checker: said loudly, never the agent's problem
            # The channel is closed: the app's next send stops copying.
            self.logger.exception("the AG-UI tap failed while checking a response", extra=ids)
        finally:
            if traced is not None:
                traced.end()


def _telemetry(setting: bool | TapTelemetry) -> TapTelemetry | None:
    """The tap's telemetry; OpenTelemetry is imported only when it is asked for."""
    if setting is False:
        return None
    try:
        from agui_pipeline.http.telemetry import Telemetry
    except ImportError as missing:
        raise ImportError(
            "the tap's telemetry needs OpenTelemetry's API: pip install 'agui-pipeline[otel]'"
        ) from missing
    return Telemetry() if setting is True else setting


def _event_stream_type(start: Message) -> bytes | None:
    """The media type of a ``200`` AG-UI event stream, or ``None`` for any other response."""
    if start.get("status") != 200:
        return None
    for name, value in start.get("headers", ()):
        if name.lower() == b"content-type":
            media_type: bytes = value.split(b";")[0].strip().lower()
            return media_type if media_type in _MEDIA_TYPES else None
    return None


def _run_input(body: bytes | bytearray) -> dict[str, Any] | None:
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return document if type(document) is dict else None


def tap_extra(record: logging.LogRecord) -> Mapping[str, Any]:
    """The structured fields a tap put on ``record`` (for a formatter or a test)."""
    return {name: value for name, value in vars(record).items() if name.startswith("agui_")}
