"""An ASGI relay: a client's run, sent on to an upstream agent and judged on the way back.

Needs the ``http`` and ``serve`` extras. The client POSTs a ``RunAgentInput``;
the relay sends it upstream through :class:`~agui_pipeline.HttpAgent` (so the
input passes the outgoing boundary first), reads the response through a
pipeline, and writes what the pipeline delivers back as SSE
(``/spec/1.1/basic/transports/http-sse``). What the client gets, case by case:

- a clean upstream run: the delivered events, one ``data:`` frame each, as they arrive;
- an input the run-input rules refuse: ``422`` with the code and the pointer, nothing sent upstream;
- an upstream error status, or no upstream answer: ``502`` with the upstream
  status and an excerpt of its body, before any stream;
- a stream the pipeline rejects, or one cut short: what was delivered, then a
  ``RUN_ERROR`` whose ``code`` and ``message`` name the rejection. The relay is
  a producer to its client, and the spec admits exactly this:
  ``RUN_ERROR`` ends a run that failed, may come first when the run failed
  before it began, may follow a ``RUN_FINISHED`` as a late failure
  (``/spec/1.1/events/lifecycle``, RUN_ERROR and After a run closes), and a
  truncation may be surfaced as a synthetic failure — never as a success
  (``/spec/1.1/basic/transports``, Truncation). After a ``RUN_ERROR`` already
  delivered nothing more is sent, since nothing but ``RUN_STARTED`` may follow one;
- a client that goes away: the upstream request is cancelled, its connection closed;
- a body not received whole within ``body_timeout``: ``408``, nothing sent upstream;
- a run ended by :meth:`Relay.end_runs` (the proxy's shutdown, after its grace period):
  what was delivered, then a ``RUN_ERROR`` (``relay.shutdown``) whose ``message`` says
  why; before any stream, ``503`` with ``Retry-After``.

Mount :class:`Relay` as an app, or return a :class:`RelayResponse` from your
own route (your auth, your routing)::

    @app.post("/agent")
    async def agent(request: Request) -> Response:
        return RelayResponse(upstream, await request.json())
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any

import anyio
import httpx
import orjson
from agui_pipeline._engine.pipeline import Pipeline
from agui_pipeline._engine.result import Verdict
from agui_pipeline.errors import Diagnostic
from agui_pipeline.http.client import (
    BODY_EXCERPT,
    HttpAgent,
    HttpStatusError,
    HttpxTransport,
    RequestFailed,
)
from agui_pipeline.http.transport import Transport
from agui_pipeline.model.run_input import InputRejected
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
MAX_BODY = 16 * 1024 * 1024
"""The largest request body :class:`Relay` reads by default (16 MiB); larger is answered 413."""
BODY_TIMEOUT = 30.0
"""Seconds :class:`Relay` waits by default for a whole request body; longer is answered 408."""
SHUTDOWN_CODE = "relay.shutdown"
"""The ``RUN_ERROR`` code of a run the relay ended (:meth:`Relay.end_runs`)."""
_TERMINAL = frozenset({"RUN_FINISHED", "RUN_ERROR"})

OnDiagnostic = Callable[[Mapping[str, Any], Diagnostic], None]
"""Called with the run input and each diagnostic, as the run streams."""
OnEnd = Callable[[Mapping[str, Any], Verdict | None, str | None], None]
"""Called with the run input and the verdict once a run ends (``None``: no stream, or the
client went away first)."""


class Upstream:
    """Where runs are relayed to: a URL, with the pipeline and headers every run gets.

    One transport (its connection pool) serves every run: httpx by default, a
    ``client`` you pass (an ``httpx.AsyncClient``), or ``transport=AiohttpTransport()``
    to read through aiohttp (the ``aiohttp`` extra). :meth:`aclose` closes it
    (:class:`Relay` does at lifespan shutdown); a client you pass stays yours to close.
    """

    def __init__(
        self,
        url: str,
        *,
        pipeline: Pipeline | None = None,
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
        transport: Transport | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        if client is not None and transport is not None:
            raise TypeError("pass client (an httpx.AsyncClient) or transport, not both")
        self.url = url
        self.pipeline = pipeline or Pipeline()
        self.headers = dict(headers or {})
        self.transport = transport or HttpxTransport(
            client,
            connect_timeout,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=100),
        )

    def agent(self, on_diagnostic: Callable[[Diagnostic], None] | None) -> HttpAgent:
        """An agent for one run, on the upstream's transport: closed with the upstream,
        not with the agent."""
        pipeline = self.pipeline
        if on_diagnostic is not None:
            pipeline = pipeline.with_options(on_diagnostic=on_diagnostic)
        return HttpAgent(
            self.url, pipeline=pipeline, headers=self.headers, transport=self.transport
        )

    async def aclose(self) -> None:
        await self.transport.aclose()


class RelayResponse(Response):
    """A Starlette response relaying one run to ``upstream`` (see the module docstring).

    A pull-based body: it reads the upstream stream and writes each delivered
    batch itself, so no task group or memory stream of yours is needed.
    ``headers`` go on this upstream request only.
    """

    def __init__(
        self,
        upstream: Upstream | str,
        run_input: Any,
        *,
        headers: Mapping[str, str] | None = None,
        on_diagnostic: OnDiagnostic | None = None,
        on_end: OnEnd | None = None,
    ) -> None:
        super().__init__()
        self.upstream = upstream if isinstance(upstream, Upstream) else Upstream(upstream)
        self._owns_upstream = not isinstance(upstream, Upstream)
        self.run_input = run_input
        self.upstream_headers = dict(headers or {})
        self.on_diagnostic = on_diagnostic
        self.on_end = on_end
        self.verdict: Verdict | None = None
        """The upstream stream's verdict once relayed (``None`` before, or without a stream)."""
        self.ended: str | None = None
        """Why the relay ended this run before its upstream did (:meth:`end`), if it did."""
        self.cause: str | None = None
        """Why the run has no verdict (refused, upstream error, client gone, ended), if so."""
        self._relaying: anyio.CancelScope | None = None

    def end(self, reason: str) -> None:
        """End this run now: what was delivered stays, a ``RUN_ERROR`` saying ``reason``
        follows (or, before any stream, a ``503``), and the upstream request is closed."""
        self.ended = reason
        if self._relaying is not None:
            self._relaying.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            if type(self.run_input) is not dict:
                await _json(send, 400, {"error": "expected a RunAgentInput JSON object"})
                return
            async with anyio.create_task_group() as group:

                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    group.cancel_scope.cancel()  # closes the upstream request too

                group.start_soon(watch)
                with suppress(OSError):  # the client went away between the watch and a write
                    await self._relay(send)
                group.cancel_scope.cancel()
        finally:
            if self.verdict is None and self.cause is None:
                self.cause = "client gone" if self.ended is None else f"ended: {self.ended}"
            if self.on_end is not None and isinstance(self.run_input, dict):
                self.on_end(self.run_input, self.verdict, self.cause)
            if self._owns_upstream:
                await self.upstream.aclose()

    async def _relay(self, send: Send) -> None:
        run_input: dict[str, Any] = self.run_input
        report = self.on_diagnostic
        agent = self.upstream.agent(
            None if report is None else (lambda diagnostic: report(run_input, diagnostic))
        )
        started = False
        last_run_event: str | None = None
        verdict: Verdict | None = None
        try:
            with anyio.CancelScope() as self._relaying:
                if self.ended is not None:
                    self._relaying.cancel()
                async with agent.open(run_input, headers=self.upstream_headers) as stream:
                    await send(
                        {"type": "http.response.start", "status": 200, "headers": SSE_HEADERS}
                    )
                    started = True
                    async for batch in stream.batches():
                        frames = bytearray()
                        for event in batch.events:
                            frames += b"data: " + orjson.dumps(event) + b"\n\n"
                            kind = event.get("type")
                            if kind == "RUN_STARTED" or kind in _TERMINAL:
                                last_run_event = kind
                        await send(
                            {"type": "http.response.body", "body": bytes(frames), "more_body": True}
                        )
                    self.verdict = verdict = stream.verdict
        except InputRejected as error:
            body = {"error": str(error), "code": error.code, "pointer": error.pointer}
            self.cause = f"refused 422 {error.code}"
            await _json(send, 422, body)
            return
        except HttpStatusError as error:
            self.cause = f"upstream error HttpStatusError (status {error.status})"
            await _json(send, 502, _upstream_failure(error, error.status, error.body))
            return
        except RequestFailed as error:
            assert not started  # RequestFailed is raised only before the stream
            self.cause = f"upstream error {_error_class(error)}"
            await _json(send, 502, _upstream_failure(error, None, ""))
            return
        tail = b""
        if verdict is None:  # ended by end(): the reason, as the run's failure
            if not started:
                await _json(send, 503, {"error": self.ended}, retry_after=RETRY_AFTER)
                return
            if last_run_event != "RUN_ERROR":
                ended = {"type": "RUN_ERROR", "code": SHUTDOWN_CODE, "message": self.ended}
                tail = b"data: " + orjson.dumps(ended) + b"\n\n"
        elif not verdict.completed and last_run_event != "RUN_ERROR":
            tail = b"data: " + orjson.dumps(run_error(verdict)) + b"\n\n"
        await send({"type": "http.response.body", "body": tail, "more_body": False})


def run_error(verdict: Verdict) -> dict[str, Any]:
    """The ``RUN_ERROR`` a relay sends its client for a stream that did not complete."""
    code = verdict.code or f"relay.{verdict.outcome}"
    message = verdict.message or f"the upstream stream was {verdict.outcome}"
    return {"type": "RUN_ERROR", "code": code, "message": f"upstream stream {message}"}


def _error_class(error: BaseException) -> str:
    """The failure's class, and the transport's underneath it (``ConnectError``...)."""
    under = error.__cause__
    return type(error).__name__ + ("" if under is None else f" ({type(under).__name__})")


def _upstream_failure(error: RequestFailed, status: int | None, body: str) -> dict[str, Any]:
    return {
        "error": str(error),
        "upstream": error.url,
        "upstreamStatus": status,
        "excerpt": body[:BODY_EXCERPT],
    }


RETRY_AFTER = 1
"""Seconds a ``503`` tells the client to wait (``Retry-After``) before it tries again."""


async def _json(
    send: Send, status: int, body: Mapping[str, Any], *, retry_after: int | None = None
) -> None:
    content = orjson.dumps(body)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(content)).encode()),
    ]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content, "more_body": False})


async def read_body(receive: Receive, limit: int, declared: str | None) -> bytes | None:
    """The request body, or ``None`` once it is known to exceed ``limit`` bytes: the one
    capped reader of a request body (the relay's and ``serve``'s).

    A declared ``Content-Length`` over the limit is refused before a byte is read.
    """
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            return bytes(body)
        body += message.get("body", b"")
        if len(body) > limit:
            return None
        if not message.get("more_body", False):
            return bytes(body)


class Relay:
    """An ASGI app relaying every POSTed run to ``upstream`` (see the module docstring).

    ::

        app = Relay("http://127.0.0.1:9000/agent")          # the whole app
        starlette_app.mount("/agent", Relay(upstream))      # or a path of yours

    ``max_body`` caps the request body (413 above it) and ``body_timeout`` the wait for
    it (408 past it: a client sending a byte now and then holds nothing for long);
    ``on_diagnostic`` and ``on_end`` see each run's diagnostics live and its verdict.
    :meth:`end_runs` ends the runs in flight (a shutdown's last step).
    """

    def __init__(
        self,
        upstream: Upstream | str,
        *,
        max_body: int = MAX_BODY,
        body_timeout: float | None = BODY_TIMEOUT,
        on_diagnostic: OnDiagnostic | None = None,
        on_end: OnEnd | None = None,
    ) -> None:
        self.upstream = upstream if isinstance(upstream, Upstream) else Upstream(upstream)
        self.max_body = max_body
        self.body_timeout = body_timeout
        self.on_diagnostic = on_diagnostic
        self.on_end = on_end
        self._running: set[RelayResponse] = set()

    @property
    def running(self) -> int:
        """Runs being relayed now."""
        return len(self._running)

    def end_runs(self, reason: str) -> int:
        """End every run in flight with a ``RUN_ERROR`` saying ``reason`` (see
        :meth:`RelayResponse.end`); returns how many there were."""
        running = list(self._running)
        for response in running:
            response.end(reason)
        return len(running)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            raise RuntimeError(f"Relay serves HTTP, not {scope['type']}")
        if scope["method"] != "POST":
            await _json(send, 405, {"error": "POST a RunAgentInput"})
            return
        headers = {
            name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]
        }
        raw: bytes | None = b""
        with anyio.move_on_after(self.body_timeout) as waiting:
            raw = await read_body(receive, self.max_body, headers.get("content-length"))
        if waiting.cancelled_caught:
            wait = f"{self.body_timeout:g} s"
            await _json(send, 408, {"error": f"the request body did not arrive within {wait}"})
            return
        if raw is None:
            await _json(send, 413, {"error": f"the body exceeds {self.max_body} bytes"})
            return
        try:
            run_input = orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            await _json(send, 400, {"error": f"the body is not JSON: {error}"})
            return
        response = RelayResponse(
            self.upstream, run_input, on_diagnostic=self.on_diagnostic, on_end=self.on_end
        )
        self._running.add(response)
        try:
            await response(scope, receive, send)
        finally:
            self._running.discard(response)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.upstream.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return
