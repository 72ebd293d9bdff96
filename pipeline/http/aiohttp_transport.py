"""aiohttp's client as :class:`~agui_pipeline.HttpAgent`'s transport (the ``aiohttp`` extra).

A live stream arrives one frame per read, and httpx is most of what a read costs:
aiohttp's client reads the same runs for about half the CPU
(``benchmarks/bench_live.py``, docs/performance.md, The live path). Everything the binding
asks — the request, the status and content-type rules, the bounded inflating, the
idle window and the deadline — is :mod:`agui_pipeline.http.client`'s, as over httpx;
this module only sends the request and hands over the raw body. aiohttp runs under
asyncio only.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack

import aiohttp
import httpx
from agui_pipeline._engine.sources import SourceTimedOut
from agui_pipeline._proto import TRANSPORT as PROTO
from agui_pipeline.errors import UsageError
from agui_pipeline.http.client import (
    BODY_EXCERPT,
    RequestFailed,
    Transport,
    _Response,
    connection_lost,
)
from agui_pipeline.stage import StreamContext


class AiohttpTransport(Transport):
    """Reads through an ``aiohttp.ClientSession``: the one given, or one of its own.

    ::

        async with HttpAgent(url, transport=AiohttpTransport()) as agent:
            result = await agent.run(run_input)

    A session of its own is made on the first request (aiohttp makes one inside a
    running loop only) and closed with the agent; ``connect_timeout`` bounds
    connecting there. A session you pass is yours to close, and its connector's
    limits, TLS and cookies apply. Each request asks aiohttp not to decompress —
    whatever the session's setting — so the body is inflated by the agent, bounded
    (``Limits.max_decompression_ratio``), as over httpx.
    """

    def __init__(
        self, session: aiohttp.ClientSession | None = None, *, connect_timeout: float = 10.0
    ) -> None:
        self._owns_session = session is None
        self._session = session
        self._connect_timeout = connect_timeout

    async def _send(
        self,
        stack: AsyncExitStack,
        url: str,
        content: bytes,
        headers: dict[str, str],
        auth: httpx.Auth | tuple[str, str] | None,
        read_timeout: float | None,
    ) -> _Response:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise UsageError(
                "aiohttp runs under asyncio only: read under asyncio, or use the default "
                "transport (httpx), which runs under trio too"
            ) from None
        if auth is not None:
            if not isinstance(auth, tuple):
                raise TypeError("an httpx.Auth needs the httpx transport; pass (user, password)")
            headers = {**headers, "Authorization": _basic(*auth)}
        session = self._session
        if session is None:
            session = self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, connect=self._connect_timeout)
            )
        session_timeout = session.timeout
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=session_timeout.connect,
            sock_connect=session_timeout.sock_connect,
            sock_read=read_timeout,
        )
        try:
            response = await stack.enter_async_context(
                session.post(
                    url,
                    data=content,
                    headers=headers,
                    timeout=timeout,
                    auto_decompress=False,  # the agent inflates, bounded (client._Inflating)
                )
            )
        except TimeoutError as error:
            if isinstance(error, aiohttp.ConnectionTimeoutError):
                said = f"{type(error).__name__}: {error}"
                raise RequestFailed(url, said, connecting=True) from error
            raise  # no response headers within the read timeout
        except aiohttp.ClientError as error:
            connecting = isinstance(error, aiohttp.ClientConnectorError)
            said = f"{type(error).__name__}: {error}"
            raise RequestFailed(url, said, connecting=connecting) from error
        return _AiohttpResponse(response)

    async def aclose(self) -> None:
        if self._owns_session and self._session is not None:
            await self._session.close()
            self._session = None


def _basic(user: str, password: str) -> str:
    """HTTP Basic credentials (RFC 7617), UTF-8 as httpx sends them (aiohttp's own ``auth``
    is deprecated)."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


COALESCE_BELOW = 512
"""A read shorter than this that ends mid-line (an SSE or JSON-lines frame ends a line) is
part of a frame sent in pieces."""
COALESCE_PAUSE = 0.005
"""Seconds the socket is left unread after a trickle, for what follows to pile up."""


async def _coalesce(transport: asyncio.BaseTransport | None) -> None:
    """Tiny reads coalesced: after a short read ending mid-frame, a producer trickling its
    frames (a byte a write) is left unread for ``COALESCE_PAUSE`` seconds with the socket's
    reading paused, so the kernel gathers what it sends and the next read takes it whole:
    one wake-up, one parse and one pipeline pass per pause instead of per byte. A healthy
    stream, a frame a write, reads whole frames and never pauses; a frame sent in pieces
    completes at most ``COALESCE_PAUSE`` later. Protobuf frames end anywhere: never paused."""
    if not isinstance(transport, asyncio.ReadTransport) or not transport.is_reading():
        return  # gone, or paused by aiohttp's own flow control: left as it is
    transport.pause_reading()
    try:
        await asyncio.sleep(COALESCE_PAUSE)
    finally:
        if not transport.is_closing():
            transport.resume_reading()


class _AiohttpResponse(_Response):
    __slots__ = ("_response",)

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        headers = response.headers
        encodings = headers.getall("Content-Encoding", [])
        super().__init__(
            response.status,
            headers.get("Content-Type", ""),
            encodings,
            headers.get("Retry-After"),
        )
        self._response = response

    async def body(self, ctx: StreamContext) -> AsyncGenerator[bytes]:
        content = self._response.content
        connection = self._response.connection
        transport = None if connection is None else connection.transport
        try:
            while chunk := await content.readany():
                yield chunk
                if len(chunk) < COALESCE_BELOW and chunk[-1:] != b"\n" and ctx.transport != PROTO:
                    await _coalesce(transport)  # a frame in pieces: let the rest pile up
        except TimeoutError:
            raise SourceTimedOut from None  # the idle window, on the socket: the engine says so
        except aiohttp.ClientError as error:
            connection_lost(ctx, error)

    async def start(self) -> bytes:
        try:
            return await self._response.content.read(BODY_EXCERPT)
        except aiohttp.ClientError:
            return b""  # the status is the error; a body cut short is only less to show
