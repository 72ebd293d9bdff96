"""The HTTP + SSE client (the ``http`` extra): POST a run input, read the run as it streams.

``/spec/1.1/basic/transports/http-sse``: the request is a ``POST`` of the
``RunAgentInput`` as one JSON object with ``Accept: text/event-stream``; the
response is read through a :class:`~agui_pipeline.Pipeline` as the bytes arrive.
What can go wrong, and what each is:

- an error status before the stream: the run never started — :class:`HttpStatusError`,
  with the status and an excerpt of the body;
- no connection, or no response within the timeouts: :class:`RequestFailed`;
- a content type other than ``text/event-stream`` (or, with ``binary=True``
  asked, ``application/vnd.ag-ui.event+proto``): a diagnostic, and the body
  is read with the framing its first bytes show;
- a connection that drops, or a transport error, mid-body: the stream ends
  there, with a diagnostic, and is judged as it stands — a run left open is a
  truncated run (``/spec/1.1/basic/transports``, Truncation), never a crash;
- no byte for ``Options.idle_timeout`` seconds: the same, by the engine.

Cancelling the reading task closes the connection.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from types import TracebackType
from typing import Any

import anyio
import httpx
import orjson

from ._proto import MEDIA_TYPE as PROTO_MEDIA_TYPE
from ._proto import TRANSPORT as PROTO_TRANSPORT
from .catalog import TRANSPORT_CONNECTION_LOST, TRANSPORT_CONTENT_TYPE
from .engine import EventStream, Pipeline, RunResult
from .errors import AguiPipelineError, Diagnostic
from .run_input import prepare_input
from .sources import SourceTimedOut
from .stage import Event, StreamContext

SSE_MEDIA_TYPE = "text/event-stream"
BODY_EXCERPT = 2048
"""Bytes of an error response kept on :class:`HttpStatusError`."""


class RequestFailed(AguiPipelineError):
    """The request produced no event stream: the run never started (or was never seen to)."""

    def __init__(self, url: str, message: str) -> None:
        self.url = url
        super().__init__(f"POST {url}: {message}")


class HttpStatusError(RequestFailed):
    """The agent answered with an error status before any stream (the binding's error path)."""

    def __init__(self, url: str, status: int, content_type: str, body: str) -> None:
        self.status = status
        self.content_type = content_type
        self.body = body
        """The start of the response body (at most ``BODY_EXCERPT`` bytes, decoded leniently)."""
        excerpt = body if len(body) <= 300 else body[:300] + "…"
        super().__init__(url, f"HTTP {status}; the run did not start: {excerpt!r}")


class HttpAgent:
    """An agent endpoint spoken to over HTTP + SSE.

    ::

        async with HttpAgent(url, headers={"Authorization": f"Bearer {token}"}) as agent:
            result = await agent.run(run_input)            # the whole run
            async with agent.open(run_input) as stream:    # or event by event
                async for event in stream:
                    ...

    ``pipeline`` (default: the default pipeline) processes every response;
    its ``idle_timeout`` bounds the wait for the response headers and for
    each event of the body, and its ``max_duration`` the whole exchange, from the
    request on. ``connect_timeout`` bounds connecting. ``headers``
    and ``auth`` go on every request (an ``httpx.Auth`` or a
    ``(user, password)`` pair). Pass ``client`` to share an
    ``httpx.AsyncClient`` (its own timeouts then apply to connecting).

    ``binary=True`` asks for the HTTP + Protobuf binding (needs the ``proto``
    extra): ``Accept`` names both media types, and each response is read by the
    parser its ``Content-Type`` names — SSE stays possible, since a producer
    without the binding answers SSE (``/spec/1.1/basic/transports/http-protobuf``).
    """

    def __init__(
        self,
        url: str,
        *,
        pipeline: Pipeline | None = None,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | tuple[str, str] | None = None,
        connect_timeout: float = 10.0,
        client: httpx.AsyncClient | None = None,
        binary: bool = False,
    ) -> None:
        self.url = url
        self.accept = f"{PROTO_MEDIA_TYPE}, {SSE_MEDIA_TYPE}" if binary else SSE_MEDIA_TYPE
        """The ``Accept`` of every request: explicit media types, never a wildcard."""
        self.pipeline = pipeline or Pipeline()
        self.headers = dict(headers or {})
        self.auth = auth
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(None, connect=connect_timeout, write=connect_timeout)
        )

    async def __aenter__(self) -> HttpAgent:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    @asynccontextmanager
    async def open(
        self, run_input: Mapping[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[EventStream]:
        """POST ``run_input`` and yield the response as an :class:`~agui_pipeline.EventStream`.

        The input goes through the outgoing boundary first, so a malformed one
        raises ``InputRejected`` before anything is sent.
        """
        options = self.pipeline.options
        prepared = prepare_input(
            dict(run_input), peer_max_protocol_version=options.peer_max_protocol_version
        )
        content = orjson.dumps(prepared.body)
        request_headers = {
            **self.headers,
            **(headers or {}),
            "Content-Type": "application/json",
            "Accept": self.accept,
        }
        idle = math.inf if options.idle_timeout is None else options.idle_timeout
        most = math.inf if options.max_duration is None else options.max_duration
        wait, which = (idle, "idle_timeout") if idle <= most else (most, "max_duration")
        opened_at = anyio.current_time()
        # httpcore already waits on every socket read under a timeout (none by default):
        # the idle window there is one timer per read, where a cancel scope of the
        # engine's own would cost a whole scope more (see engine._Clock).
        read_timeout = options.idle_timeout
        timeout = self._client.timeout
        timeout = httpx.Timeout(
            connect=timeout.connect, read=read_timeout, write=timeout.write, pool=timeout.pool
        )
        async with AsyncExitStack() as stack:
            try:
                with anyio.fail_after(wait):
                    response = await stack.enter_async_context(
                        self._client.stream(
                            "POST",
                            self.url,
                            content=content,
                            headers=request_headers,
                            auth=self.auth or httpx.USE_CLIENT_DEFAULT,
                            timeout=timeout,
                        )
                    )
            except TimeoutError:
                raise RequestFailed(self.url, f"no response within {wait:g} s ({which})") from None
            except httpx.RequestError as error:
                raise RequestFailed(self.url, f"{type(error).__name__}: {error}") from error
            if not response.is_success:
                raise await _status_error(self.url, response, wait)
            ctx = self.pipeline.context(prepared.body)
            _report_outgoing(ctx, prepared.diagnostics)
            _check_content_type(ctx, response)
            body = _body(response, ctx)
            async with EventStream(
                self.pipeline, body, ctx, opened_at=opened_at, source_timeout=read_timeout
            ) as stream:
                yield stream

    async def run(
        self, run_input: Mapping[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> RunResult:
        """POST ``run_input`` and read the whole run: events, diagnostics, verdict."""
        events: list[Event] = []
        async with self.open(run_input, headers=headers) as stream:
            async for batch in stream.batches():
                events += batch.events
        return stream.result(events)


async def _body(response: httpx.Response, ctx: StreamContext) -> AsyncGenerator[bytes]:
    """The response body as it arrives; a transport failure ends it, it does not escape."""
    try:
        async for chunk in response.aiter_bytes():
            yield chunk
    except httpx.ReadTimeout:
        raise SourceTimedOut from None  # the idle window, on the socket: the engine says so
    except httpx.RequestError as error:
        ctx.report(
            TRANSPORT_CONNECTION_LOST,
            f"the connection failed before the response body ended ({type(error).__name__}: "
            f"{error}); the stream is judged as it stands",
            event_index=ctx.counters.read,
        )


async def _status_error(url: str, response: httpx.Response, idle: float) -> HttpStatusError:
    excerpt = bytearray()
    try:
        with anyio.move_on_after(idle):
            async for chunk in response.aiter_bytes():
                excerpt += chunk
                if len(excerpt) >= BODY_EXCERPT:
                    break
    except httpx.RequestError:
        pass  # the status is the error; a body cut short is only less to show
    return HttpStatusError(
        url,
        response.status_code,
        response.headers.get("content-type", ""),
        bytes(excerpt[:BODY_EXCERPT]).decode("utf-8", "replace"),
    )


def _check_content_type(ctx: StreamContext, response: httpx.Response) -> None:
    content_type = response.headers.get("content-type", "")
    media_type = content_type.split(";")[0].strip().lower()
    if media_type == SSE_MEDIA_TYPE:
        ctx.transport = "http+sse"
        return
    if media_type == PROTO_MEDIA_TYPE:
        ctx.transport = PROTO_TRANSPORT  # parse reads the body as protobuf frames
        return
    ctx.report(
        TRANSPORT_CONTENT_TYPE,
        f"expected Content-Type {SSE_MEDIA_TYPE}, found {content_type or 'none'!r}; "
        "the body is read with the framing its first bytes show",
    )


def _report_outgoing(ctx: StreamContext, diagnostics: Iterable[Diagnostic]) -> None:
    """The outgoing boundary's warnings belong to this exchange's diagnostics."""
    for diagnostic in diagnostics:
        ctx.diagnostics.append(diagnostic)
        if ctx.options.on_diagnostic is not None:
            ctx.options.on_diagnostic(diagnostic)
