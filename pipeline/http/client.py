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
(``benchmarks/bench_live.py``). What is the binding's — the request, authentication,
the status and content-type rules, the bounded inflating, the timeouts, retries and
resuming — lives here once; a :class:`~agui_pipeline.Transport` only sends the request
and hands over the raw body (:mod:`agui_pipeline.http.transport`, the contract).
"""

from __future__ import annotations

import base64
import math
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
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
    TRANSPORT_CONTENT_TYPE,
)
from agui_pipeline.delivery.redaction import redact_in, redact_url
from agui_pipeline.errors import AguiPipelineError, Diagnostic, StreamRejected, cut_message
from agui_pipeline.http.reconnect import Resuming, connection_lost
from agui_pipeline.http.transport import (
    ConnectionLost,
    Transport,
    TransportRequest,
    TransportResponse,
)
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

    ``resume=True`` also reconnects a stream whose connection fails mid-body, when the
    agent's SSE events carry ``id:`` fields: the request is sent again with
    ``Last-Event-ID`` (with the same tries and waits), and what the agent sends from
    there continues the stream, any event already read skipped. The HTTP + SSE binding
    has no resumption (``/spec/1.1/basic/transports/http-sse``, No resumption), so it is
    off by default, and is for agents known to honour ``Last-Event-ID``.
    """

    attempts: int = 3
    backoff: float = 0.5
    max_wait: float = 30.0
    resume: bool = False

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
        return self.backoff_wait(tries)

    def backoff_wait(self, tries: int) -> float:
        """The backoff after ``tries`` failed tries: ``backoff`` doubling, capped."""
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
    ``aiohttp`` extra), or any :class:`~agui_pipeline.Transport`. ``auth`` becomes a
    header before the transport sees the request: an ``httpx.Auth`` flow, a challenge
    such as Digest included, runs in the agent, so it works over every transport.
    One agent reuses its client's connections across its runs, which may overlap.
    ``retries`` (:class:`~agui_pipeline.Retries`) retries a run that did not start, and
    with ``resume=True`` resumes one whose connection failed (``Last-Event-ID``).

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
        request = TransportRequest(self.url, content, request_headers, read_timeout=read_timeout)
        async with AsyncExitStack() as stack:
            response = await self._connect(request, wait, which)
            stack.push_async_callback(response.aclose)
            ctx = self.pipeline.context(prepared.body)
            _report_outgoing(ctx, prepared.diagnostics)
            content_type = response.header("content-type") or ""
            _check_content_type(ctx, content_type)
            codings = _codings(response.header_values("content-encoding"))
            pipeline = self.pipeline
            if codings:
                inflating = _inflating(codings, pipeline.decoder)
                pipeline = pipeline.replace("parse", inflating)  # type: ignore[arg-type]
            if self.retries is not None and self.retries.resume:
                resuming = self._resuming(request, wait, which, response, ctx, codings)
                stack.push_async_callback(resuming.aclose)
                reads = resuming.reads()
            else:
                reads = _reads(response.body, ctx)
            async with EventStream(
                pipeline, ByteReads(reads), ctx, opened_at=opened_at, source_timeout=read_timeout
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

    async def _connect(
        self, request: TransportRequest, wait: float, which: str
    ) -> TransportResponse:
        """A ``2xx`` response to ``request``, tried as :attr:`retries` allows; the caller
        closes it."""
        tries = 1
        while True:
            try:
                async with AsyncExitStack() as trial:
                    try:
                        with anyio.fail_after(wait):
                            response = await self._exchange(request, trial)
                    except TimeoutError:
                        said = f"no response within {wait:g} s ({which})"
                        raise RequestFailed(self.url, said) from None
                    if not 200 <= response.status < 300:
                        raise await _status_error(self.url, response, wait)
                    trial.pop_all()  # the response is kept: the caller closes it
                    return response
            except RequestFailed as error:
                pause = None if self.retries is None else self.retries.wait(tries, error)
                if pause is None:
                    raise
            await anyio.sleep(pause)
            tries += 1

    async def _exchange(
        self, request: TransportRequest, trial: AsyncExitStack
    ) -> TransportResponse:
        """The response to ``request`` with the agent's ``auth`` applied: a pair is a Basic
        header; an ``httpx.Auth`` runs its flow here, over whichever transport, so a
        challenge (Digest) answered by a second request works over every one."""
        auth = self.auth
        if isinstance(auth, tuple):
            basic = {**request.headers, "Authorization": _basic(*auth)}
            request = replace(request, headers=basic)
        elif auth is not None:
            return await _authenticated(self.transport, auth, request, trial)
        response = await self.transport.send(request)
        trial.push_async_callback(response.aclose)
        return response

    def _resuming(
        self,
        request: TransportRequest,
        wait: float,
        which: str,
        response: TransportResponse,
        ctx: StreamContext,
        codings: list[str],
    ) -> Resuming:
        async def reconnect(last_id: str) -> TransportResponse:
            headers = {**request.headers, "Last-Event-ID": last_id}
            fresh = await self._connect(replace(request, headers=headers), wait, which)
            media_type = (fresh.header("content-type") or "").split(";")[0].strip().lower()
            if media_type != SSE_MEDIA_TYPE or _codings(fresh.header_values("content-encoding")):
                await fresh.aclose()
                said = "the new response is not uncompressed text/event-stream"
                raise RequestFailed(self.url, said)
            return fresh

        cannot = None
        if ctx.transport != "http+sse":
            cannot = "the response is not text/event-stream; "
        elif codings:
            cannot = "the body is compressed; "
        assert self.retries is not None
        retries = self.retries
        return Resuming(response, ctx, reconnect, retries.attempts, retries.backoff_wait, cannot)


async def _reads(body: AsyncIterator[bytes], ctx: StreamContext) -> AsyncGenerator[bytes]:
    """The body's reads, a transport's failures said the engine's way: a read past the read
    timeout is the idle window, and a lost connection ends the body, reported."""
    try:
        async for chunk in body:
            yield chunk
    except TimeoutError:
        raise SourceTimedOut from None  # the idle window, on the socket: the engine says so
    except ConnectionLost as error:
        connection_lost(ctx, error)


AUTH_BODY_MOST = 64 * 1024
"""Bytes of a response read for an ``httpx.Auth`` whose flow asks for the body."""


async def _authenticated(
    transport: Transport, auth: httpx.Auth, request: TransportRequest, trial: AsyncExitStack
) -> TransportResponse:
    """Run ``auth``'s flow: each request it makes goes through ``transport``, each
    response goes back to it, and the last response is the answer."""
    outgoing = httpx.Request(
        request.method, request.url, headers=request.headers, content=request.content
    )
    flow = auth.async_auth_flow(outgoing)
    try:
        outgoing = await flow.__anext__()
        while True:
            response = await transport.send(_as_sent(outgoing, request))
            trial.push_async_callback(response.aclose)
            content = b""
            if auth.requires_response_body:
                content = await _start(response, AUTH_BODY_MOST)
                response = replace(response, body=_after(content, response.body))
            seen = httpx.Response(
                response.status, headers=list(response.headers), content=content, request=outgoing
            )
            try:
                outgoing = await flow.asend(seen)
            except StopAsyncIteration:
                return response
    finally:
        await flow.aclose()


def _as_sent(outgoing: httpx.Request, request: TransportRequest) -> TransportRequest:
    """An auth flow's request as a transport takes it: the agent's headers, with what the
    flow set or changed (never ``Host`` or ``Content-Length``: the transport's own)."""
    given = {name.lower(): value for name, value in request.headers.items()}
    changed = {
        name: value
        for name, value in outgoing.headers.multi_items()
        if name not in ("host", "content-length") and given.get(name) != value
    }
    headers = {n: v for n, v in request.headers.items() if n.lower() not in changed}
    return replace(
        request,
        method=outgoing.method,
        url=str(outgoing.url),
        content=outgoing.content,
        headers={**headers, **changed},
    )


async def _after(start: bytes, rest: AsyncIterator[bytes]) -> AsyncGenerator[bytes]:
    if start:
        yield start
    async for chunk in rest:
        yield chunk


def _basic(user: str, password: str) -> str:
    """HTTP Basic credentials (RFC 7617), UTF-8 as httpx sends them."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


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

    async def send(self, request: TransportRequest) -> TransportResponse:
        timeout = self.client.timeout
        timeout = httpx.Timeout(
            connect=timeout.connect,
            read=request.read_timeout,
            write=timeout.write,
            pool=timeout.pool,
        )
        outgoing = self.client.build_request(
            request.method,
            request.url,
            content=request.content,
            headers=request.headers,
            timeout=timeout,
        )
        try:
            response = await self.client.send(outgoing, stream=True)
        except httpx.ReadTimeout as error:
            raise TimeoutError from error  # no response headers within the read timeout
        except httpx.RequestError as error:
            connecting = isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout))
            said = _detailed(error, timeout)
            raise RequestFailed(request.url, said, connecting=connecting) from error
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)  # an AsyncClient's response
        return TransportResponse(
            response.status_code, response.headers.multi_items(), _body(stream), response.aclose
        )

    async def aclose(self) -> None:
        if self._owns_client:
            await self.client.aclose()


async def _body(stream: httpx.AsyncByteStream) -> AsyncGenerator[bytes]:
    # The response's byte stream itself, not aiter_raw(): the same bytes as they arrived
    # (no decoder is involved in either), without aiter_raw's generator and chunker on
    # every read (benchmarks/http_instructions.py). httpx's errors are the same (its
    # transport maps them).
    try:
        async for chunk in stream:
            yield chunk
    except httpx.ReadTimeout:
        raise TimeoutError from None
    except httpx.RequestError as error:
        raise ConnectionLost(f"{type(error).__name__}: {error}") from error


# -- the binding's rules, whatever the transport -------------------------------------------


async def _start(response: TransportResponse, most: int) -> bytes:
    """The body's first ``most`` bytes or so, as sent; a failure only ends it."""
    excerpt = bytearray()
    try:
        async for chunk in response.body:
            excerpt += chunk
            if len(excerpt) >= most:
                break
    except (ConnectionLost, TimeoutError):
        pass  # the status is the error; a body cut short is only less to show
    return bytes(excerpt)


async def _status_error(url: str, response: TransportResponse, idle: float) -> HttpStatusError:
    raw = b""
    with anyio.move_on_after(idle):
        raw = await _start(response, BODY_EXCERPT)
    content_type = response.header("content-type") or ""
    codings = _codings(response.header_values("content-encoding"))
    failed = HttpStatusError(
        url,
        response.status,
        content_type,
        _inflated_excerpt(raw, codings).decode("utf-8", "replace"),
    )
    failed.retry_after = response.header("retry-after")
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
