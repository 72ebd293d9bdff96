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
- no byte for ``Options.idle_timeout`` seconds: the same, by the engine;
- a compressed body (``Content-Encoding``, only ``gzip`` and ``deflate`` are
  offered): undone layer by layer in bounded pieces before the decoder, and
  refused (``limit.decompression``) once it inflates past
  ``Limits.max_decompression_ratio`` bytes per byte received.

Cancelling the reading task closes the connection.

Two transports carry the exchange, with the same behaviour: httpx (the default, the
``http`` extra) and aiohttp's client (:class:`~agui_pipeline.AiohttpTransport`, the
``aiohttp`` extra), which reads a live stream for about half the CPU
(``benchmarks/bench_live.py``). What is the binding's — the request, the status and
content-type rules, the bounded inflating, the timeouts — lives here once; a
:class:`Transport` only sends the request and hands over the raw body.
"""

from __future__ import annotations

import math
import zlib
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import Any

import anyio
import httpx
import orjson
from agui_pipeline._engine.pipeline import Pipeline
from agui_pipeline._engine.result import RunResult
from agui_pipeline._engine.sources import ByteReads, SourceTimedOut
from agui_pipeline._engine.stream import EventStream
from agui_pipeline._proto import MEDIA_TYPE as PROTO_MEDIA_TYPE
from agui_pipeline._proto import TRANSPORT as PROTO_TRANSPORT
from agui_pipeline.batch import Batch, Event, empty_batch
from agui_pipeline.catalog import (
    LIMIT_DECOMPRESSION,
    PARSE_CONTENT_ENCODING,
    TRANSPORT_CONNECTION_LOST,
    TRANSPORT_CONTENT_TYPE,
)
from agui_pipeline.delivery.redaction import redact_in, redact_url
from agui_pipeline.errors import AguiPipelineError, Diagnostic, StreamRejected, cut_message
from agui_pipeline.model.run_input import prepare_input
from agui_pipeline.stage import Decoder, DecoderFactory, StreamContext, reject_after

SSE_MEDIA_TYPE = "text/event-stream"
ACCEPT_ENCODING = "gzip, deflate"
"""The codings every request offers: the ones :class:`_Inflating` undoes (httpx would also
offer brotli and zstd when installed, and undo them unbounded)."""
BODY_EXCERPT = 2048
"""Bytes of an error response kept on :class:`HttpStatusError`."""


class RequestFailed(AguiPipelineError):
    """The request produced no event stream: the run never started (or was never seen to).

    ``url`` and the message name the agent's URL redacted (:func:`~agui_pipeline.delivery.redaction.
    redact_url`: no userinfo, no query values), and the message is cut at ``MAX_MESSAGE``.
    """

    def __init__(self, url: str, message: str, *, connecting: bool = False) -> None:
        self.url = redact_url(url)
        self.connecting = connecting
        """The connection itself failed (refused, unreachable, connect timeout)."""
        super().__init__(cut_message(f"POST {self.url}: {redact_in(message)}"))


class HttpStatusError(RequestFailed):
    """The agent answered with an error status before any stream (the binding's error path)."""

    def __init__(self, url: str, status: int, content_type: str, body: str) -> None:
        self.status = status
        self.content_type = content_type
        self.body = body
        """The start of the response body (at most ``BODY_EXCERPT`` bytes, decoded leniently)."""
        self.retry_after: str | None = None
        """The response's ``Retry-After`` header, as sent."""
        excerpt = body if len(body) <= 300 else body[:300] + "…"
        super().__init__(url, f"HTTP {status}; the run did not start: {excerpt!r}")


@dataclass(frozen=True, slots=True)
class Retries:
    """Opt-in retries for :class:`HttpAgent`, before the first event only: a connect error,
    or a ``502``/``503`` answer, is tried again up to ``attempts`` tries in all.

    The wait before try *n* + 1 is ``backoff * 2 ** (n - 1)`` seconds, or the answer's
    ``Retry-After`` (seconds or an HTTP date, RFC 9110 section 10.2.3) when it has one;
    either is capped at ``max_wait``. Once a response is streaming, nothing is retried:
    no event the application has seen is sent again.
    """

    attempts: int = 3
    backoff: float = 0.5
    max_wait: float = 30.0

    def wait(self, tries: int, error: RequestFailed) -> float | None:
        """Seconds to wait before trying again after ``tries`` failed tries, or ``None``."""
        if tries >= self.attempts:
            return None
        if isinstance(error, HttpStatusError):
            if error.status not in (502, 503):
                return None
            asked = _retry_after(error.retry_after)
            if asked is not None:
                return min(asked, self.max_wait)
        elif not error.connecting:
            return None
        return min(self.backoff * 2.0 ** (tries - 1), self.max_wait)


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds from now: delay-seconds or an HTTP date; ``None`` if neither."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None  # an HTTP date is always GMT; one without a zone is not one
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class Transport(ABC):
    """How an :class:`HttpAgent` reaches the agent: sends the request, hands over the raw body.

    Two exist, with the same behaviour: the default reads through httpx (the
    ``http`` extra; ``HttpAgent(client=...)`` shares an ``httpx.AsyncClient``), and
    :class:`~agui_pipeline.AiohttpTransport` through aiohttp's client (the
    ``aiohttp`` extra). An agent closes its transport when it closes; a transport
    closes the client or session it made, never one it was given.
    """

    @abstractmethod
    async def _send(
        self,
        stack: AsyncExitStack,
        url: str,
        content: bytes,
        headers: dict[str, str],
        auth: httpx.Auth | tuple[str, str] | None,
        read_timeout: float | None,
    ) -> _Response:
        """POST ``content``; the response, closed with ``stack``. Connecting or sending
        fails as :class:`RequestFailed`; waiting longer than ``read_timeout`` for a
        read raises :class:`TimeoutError` (the caller bounds the whole wait too)."""

    @abstractmethod
    async def aclose(self) -> None:
        """Close the client or session this transport made (one given it stays open)."""

    async def __aenter__(self) -> Transport:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


class _Response(ABC):
    """A response as a transport hands it over: status, the headers read, the raw body."""

    __slots__ = ("codings", "content_type", "retry_after", "status")

    def __init__(
        self,
        status: int,
        content_type: str,
        content_encoding: Iterable[str],
        retry_after: str | None = None,
    ) -> None:
        self.status = status
        self.retry_after = retry_after
        self.content_type = content_type
        self.codings = _codings(content_encoding)

    @abstractmethod
    def body(self, ctx: StreamContext) -> AsyncGenerator[bytes]:
        """The body as sent (:class:`_Inflating` undoes its coding), read by read. A read
        that waits past the read timeout raises :class:`SourceTimedOut`; a transport
        failure ends the body, reported by :func:`connection_lost`, and never escapes."""

    @abstractmethod
    async def start(self) -> bytes:
        """The body's first ``BODY_EXCERPT`` bytes or so, as sent; a failure only ends it."""


def _detailed(error: httpx.RequestError, timeout: httpx.Timeout) -> str:
    """``Name: what happened``. httpx's timeouts often say nothing (a TLS handshake that a
    port never answers is ``ConnectTimeout`` with no text): then which wait ran out, and
    how long it was."""
    said = str(error) or str(error.__cause__ or "")
    if not said and isinstance(error, httpx.TimeoutException):
        waits = {
            httpx.ConnectTimeout: ("the connection (TCP, then TLS for https)", timeout.connect),
            httpx.WriteTimeout: ("sending the request", timeout.write),
            httpx.PoolTimeout: ("a free connection in the pool", timeout.pool),
            httpx.ReadTimeout: ("the response", timeout.read),
        }
        what, seconds = waits.get(type(error), ("the exchange", None))
        said = f"{what} did not complete within {seconds:g} s" if seconds else f"{what} timed out"
    return f"{type(error).__name__}: {said or 'no detail given'}"


def connection_lost(ctx: StreamContext, error: Exception) -> None:
    """Report a transport failure mid-body: the stream is judged as it stands. The error's
    text is the HTTP library's: any URL in it is redacted, and its length bounded."""
    said = redact_in(str(error))  # the diagnostic cuts the message at MAX_MESSAGE
    ctx.report(
        TRANSPORT_CONNECTION_LOST(error_type=type(error).__name__, said=said),
        event_index=ctx.counters.read,
    )


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
    ``httpx.AsyncClient`` (its own timeouts then apply to connecting), or
    ``transport=AiohttpTransport()`` to read through aiohttp instead (the
    ``aiohttp`` extra; a ``(user, password)`` pair is its only ``auth``).
    One agent reuses its client's connections across its runs, which may overlap.

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
        transport: Transport | None = None,
        binary: bool = False,
        retries: Retries | None = None,
    ) -> None:
        if client is not None and transport is not None:
            raise TypeError("pass client (an httpx.AsyncClient) or transport, not both")
        self.url = url
        self.accept = f"{PROTO_MEDIA_TYPE}, {SSE_MEDIA_TYPE}" if binary else SSE_MEDIA_TYPE
        """The ``Accept`` of every request: explicit media types, never a wildcard."""
        self.pipeline = pipeline or Pipeline()
        self.headers = dict(headers or {})
        self.auth = auth
        self.transport = transport or HttpxTransport(client, connect_timeout)
        self.retries = retries
        """Retries before the first event (``None``, the default: the first failure raises)."""

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
        await self.transport.aclose()

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
            "Accept-Encoding": ACCEPT_ENCODING,
        }
        idle = math.inf if options.idle_timeout is None else options.idle_timeout
        most = math.inf if options.max_duration is None else options.max_duration
        wait, which = (idle, "idle_timeout") if idle <= most else (most, "max_duration")
        opened_at = anyio.current_time()
        # The client already waits on every socket read under a timeout (none by default):
        # the idle window there is one timer per read, where a cancel scope of the
        # engine's own would cost a whole scope more (see engine._Clock).
        read_timeout = options.idle_timeout
        async with AsyncExitStack() as stack:
            tries = 1
            while True:
                try:
                    async with AsyncExitStack() as trial:
                        try:
                            with anyio.fail_after(wait):
                                response = await self.transport._send(
                                    trial,
                                    self.url,
                                    content,
                                    request_headers,
                                    self.auth,
                                    read_timeout,
                                )
                        except TimeoutError:
                            said = f"no response within {wait:g} s ({which})"
                            raise RequestFailed(self.url, said) from None
                        if not 200 <= response.status < 300:
                            raise await _status_error(self.url, response, wait)
                        stack.push_async_exit(trial.pop_all())  # the response is kept
                    break
                except RequestFailed as error:
                    pause = None if self.retries is None else self.retries.wait(tries, error)
                    if pause is None:
                        raise
                await anyio.sleep(pause)
                tries += 1
            ctx = self.pipeline.context(prepared.body)
            _report_outgoing(ctx, prepared.diagnostics)
            _check_content_type(ctx, response.content_type)
            pipeline = self.pipeline
            if response.codings:
                inflating = _inflating(response.codings, pipeline.decoder)
                pipeline = pipeline.replace("parse", inflating)  # type: ignore[arg-type]
            async with EventStream(
                pipeline,
                ByteReads(response.body(ctx)),
                ctx,
                opened_at=opened_at,
                source_timeout=read_timeout,
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


# -- httpx, the default transport --------------------------------------------------------


class HttpxTransport(Transport):
    """Reads through an ``httpx.AsyncClient``: the one given, or one of its own (made with
    ``limits``, httpx's default pool when ``None``); the default transport."""

    def __init__(
        self,
        client: httpx.AsyncClient | None = None,
        connect_timeout: float = 10.0,
        *,
        limits: httpx.Limits | None = None,
    ) -> None:
        self._owns_client = client is None
        self.client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(None, connect=connect_timeout, write=connect_timeout),
            limits=limits or httpx.Limits(max_connections=100, max_keepalive_connections=20),
        )

    async def _send(
        self,
        stack: AsyncExitStack,
        url: str,
        content: bytes,
        headers: dict[str, str],
        auth: httpx.Auth | tuple[str, str] | None,
        read_timeout: float | None,
    ) -> _Response:
        timeout = self.client.timeout
        timeout = httpx.Timeout(
            connect=timeout.connect, read=read_timeout, write=timeout.write, pool=timeout.pool
        )
        try:
            response = await stack.enter_async_context(
                self.client.stream(
                    "POST",
                    url,
                    content=content,
                    headers=headers,
                    auth=auth or httpx.USE_CLIENT_DEFAULT,
                    timeout=timeout,
                )
            )
        except httpx.ReadTimeout as error:
            raise TimeoutError from error  # no response headers within the read timeout
        except httpx.RequestError as error:
            connecting = isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout))
            raise RequestFailed(url, _detailed(error, timeout), connecting=connecting) from error
        return _HttpxResponse(response)

    async def aclose(self) -> None:
        if self._owns_client:
            await self.client.aclose()


class _HttpxResponse(_Response):
    __slots__ = ("_response",)

    def __init__(self, response: httpx.Response) -> None:
        headers = response.headers
        codings = headers.get_list("content-encoding")
        super().__init__(
            response.status_code,
            headers.get("content-type", ""),
            codings,
            headers.get("retry-after"),
        )
        self._response = response

    async def body(self, ctx: StreamContext) -> AsyncGenerator[bytes]:
        # The response's byte stream itself, not aiter_raw(): the same bytes as they
        # arrived (no decoder is involved in either), without aiter_raw's generator and
        # chunker on every read — 3,800 instructions a read of the 260,000 a live event
        # costs here (benchmarks/http_instructions.py). httpx's errors are the same (its
        # transport maps them); the response is closed as the exchange ends.
        stream = self._response.stream
        assert isinstance(stream, httpx.AsyncByteStream)  # an AsyncClient's response
        try:
            async for chunk in stream:
                yield chunk
        except httpx.ReadTimeout:
            raise SourceTimedOut from None  # the idle window, on the socket: the engine says so
        except httpx.RequestError as error:
            connection_lost(ctx, error)

    async def start(self) -> bytes:
        excerpt = bytearray()
        try:
            async for chunk in self._response.aiter_raw():
                excerpt += chunk
                if len(excerpt) >= BODY_EXCERPT:
                    break
        except httpx.RequestError:
            pass  # the status is the error; a body cut short is only less to show
        return bytes(excerpt)


# -- the binding's rules, whatever the transport -------------------------------------------


async def _status_error(url: str, response: _Response, idle: float) -> HttpStatusError:
    raw = b""
    with anyio.move_on_after(idle):
        raw = await response.start()
    failed = HttpStatusError(
        url,
        response.status,
        response.content_type,
        _inflated_excerpt(raw, response.codings).decode("utf-8", "replace"),
    )
    failed.retry_after = response.retry_after
    return failed


def _inflated_excerpt(raw: bytes, codings: list[str]) -> bytes:
    """The start of an error body with its codings undone, each layer bounded to
    ``BODY_EXCERPT`` bytes out (a bomb stays small); shown as sent if it does not decode."""
    data = raw
    try:
        for coding in reversed(codings):
            data = zlib.decompressobj(_WINDOW[coding]).decompress(data, BODY_EXCERPT)
    except (KeyError, zlib.error):
        return raw[:BODY_EXCERPT]
    return data[:BODY_EXCERPT]


def _check_content_type(ctx: StreamContext, content_type: str) -> None:
    media_type = content_type.split(";")[0].strip().lower()
    if media_type == SSE_MEDIA_TYPE:
        ctx.transport = "http+sse"
        return
    if media_type == PROTO_MEDIA_TYPE:
        ctx.transport = PROTO_TRANSPORT  # parse reads the body as protobuf frames
        return
    ctx.report(
        TRANSPORT_CONTENT_TYPE(expected=SSE_MEDIA_TYPE, content_type=content_type or "none"),
    )


def _report_outgoing(ctx: StreamContext, diagnostics: Iterable[Diagnostic]) -> None:
    """The outgoing boundary's warnings belong to this exchange's diagnostics."""
    for diagnostic in diagnostics:
        ctx.diagnostics.append(diagnostic)
        if ctx.options.on_diagnostic is not None:
            ctx.options.on_diagnostic(diagnostic)


def _codings(content_encoding: Iterable[str]) -> list[str]:
    """The content codings of the ``Content-Encoding`` header lines, in the order they
    were applied (``identity`` left out)."""
    listed = (coding.strip().lower() for line in content_encoding for coding in line.split(","))
    return [coding for coding in listed if coding and coding != "identity"]


def _inflating(codings: list[str], inner: DecoderFactory) -> DecoderFactory:
    def factory(ctx: StreamContext) -> Decoder:
        return _Inflating(ctx, codings, inner(ctx))

    return factory


_INFLATED_PIECE = 64 * 1024
"""The most one layer inflates in one step: what is held of a layer's output at a time."""
_RATIO_GRACE = 1024 * 1024
"""Inflated bytes allowed before the ratio counts: a short body may compress far better."""
_WINDOW = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}


class _Inflating(Decoder):
    """Undoes a response's content codings ahead of the decoder, bounded.

    httpx inflates each read whole, so two ``gzip`` layers turn 13 kB into
    8 GiB inside one call. Here each layer gives at most ``_INFLATED_PIECE``
    bytes a step, each piece goes to the decoder as it is made, and the body is
    refused once it has inflated to more than ``max_decompression_ratio``
    bytes per byte received (past the first MiB).
    """

    def __init__(self, ctx: StreamContext, codings: list[str], inner: Decoder) -> None:
        super().__init__(ctx)
        self._inner = inner
        self._codings = codings
        self._layers: list[zlib._Decompress] = []
        self._windows: list[int] = []
        self._received = 0
        self._inflated = 0
        self._ratio = ctx.limits.max_decompression_ratio

    def feed(self, chunk: bytes) -> Batch:
        self._received += len(chunk)
        return self._decoded(chunk)

    def finish(self) -> Batch:
        batch = self._decoded(b"")
        try:
            return batch + self._inner.finish()
        except StreamRejected as fault:
            raise reject_after(batch + (fault.kept or empty_batch()), fault) from None

    def _decoded(self, chunk: bytes) -> Batch:
        """What the decoder makes of ``chunk`` inflated, piece by piece."""
        batch = empty_batch()
        try:
            if not self._layers:
                self._layers = self._start()
            for piece in self._inflate(0, chunk):
                batch = batch + self._inner.feed(piece)
        except StreamRejected as fault:
            raise reject_after(batch + (fault.kept or empty_batch()), fault) from None
        return batch

    def _start(self) -> list[zlib._Decompress]:
        unknown = [coding for coding in self._codings if coding not in _WINDOW]
        if unknown:
            raise StreamRejected(
                PARSE_CONTENT_ENCODING(accepted=ACCEPT_ENCODING, coding=unknown[0]),
                event_index=0,
            )
        # The last coding applied is the first to undo.
        self._windows = [_WINDOW[coding] for coding in reversed(self._codings)]
        return [zlib.decompressobj(window) for window in self._windows]

    def _inflate(self, layer: int, data: bytes) -> Iterator[bytes]:
        """``data`` through layers ``layer``.. in bounded pieces; the last layer's pieces out."""
        if layer == len(self._layers):
            self._inflated += len(data)
            if self._inflated > self._ratio * self._received + _RATIO_GRACE:
                raise StreamRejected(
                    LIMIT_DECOMPRESSION(
                        inflated=self._inflated,
                        received=self._received,
                        codings=", ".join(self._codings),
                        ratio=self._ratio,
                    ),
                    event_index=self.ctx.counters.read,
                )
            yield data
            return
        inflater = self._layers[layer]
        while True:
            try:
                piece = inflater.decompress(data, _INFLATED_PIECE)
            except zlib.error as error:
                raise StreamRejected(
                    PARSE_CONTENT_ENCODING(
                        "undecodable",
                        coding=self._codings[len(self._codings) - 1 - layer],
                        error=error,
                    ),
                    event_index=self.ctx.counters.read,
                ) from None
            data = inflater.unconsumed_tail
            if piece:
                yield from self._inflate(layer + 1, piece)
            if inflater.eof and inflater.unused_data:  # another member follows (RFC 1952)
                data = inflater.unused_data
                inflater = self._layers[layer] = zlib.decompressobj(self._windows[layer])
            elif not data and len(piece) < _INFLATED_PIECE:
                return
