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
from collections.abc import AsyncGenerator

import aiohttp
from agui_pipeline._proto import MEDIA_TYPE as PROTO_MEDIA
from agui_pipeline.errors import UsageError
from agui_pipeline.http.client import RequestFailed
from agui_pipeline.http.transport import (
    ConnectionLost,
    Transport,
    TransportRequest,
    TransportResponse,
)


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

    async def send(self, request: TransportRequest) -> TransportResponse:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise UsageError(
                "aiohttp runs under asyncio only: read under asyncio, or use the default "
                "transport (httpx), which runs under trio too"
            ) from None
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
            sock_read=request.read_timeout,
        )
        try:
            response = await session.request(
                request.method,
                request.url,
                data=request.content,
                headers=dict(request.headers),
                timeout=timeout,
                auto_decompress=False,  # the agent inflates, bounded (client._Inflating)
            )
        except TimeoutError as error:
            if isinstance(error, aiohttp.ConnectionTimeoutError):
                said = f"{type(error).__name__}: {error}"
                raise RequestFailed(request.url, said, connecting=True) from error
            raise  # no response headers within the read timeout
        except aiohttp.ClientError as error:
            connecting = isinstance(error, aiohttp.ClientConnectorError)
            said = f"{type(error).__name__}: {error}"
            raise RequestFailed(request.url, said, connecting=connecting) from error

        async def aclose() -> None:  # as leaving ``async with session.request(...)`` does
            response.release()
            await response.wait_for_close()

        return TransportResponse(
            response.status, list(response.headers.items()), _body(response), aclose
        )

    async def aclose(self) -> None:
        if self._owns_session and self._session is not None:
            await self._session.close()
            self._session = None


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


async def _body(response: aiohttp.ClientResponse) -> AsyncGenerator[bytes]:
    content = response.content
    connection = response.connection
    transport = None if connection is None else connection.transport
    # Whether the body is protobuf frames (never coalesced: they end anywhere).
    proto = PROTO_MEDIA in response.headers.get("Content-Type", "").lower()
    try:
        while chunk := await content.readany():
            yield chunk
            if len(chunk) < COALESCE_BELOW and chunk[-1:] != b"\n" and not proto:
                await _coalesce(transport)  # a frame in pieces: let the rest pile up
    except TimeoutError:
        raise  # the read timeout (aiohttp's is a ClientError too): the agent's idle window
    except aiohttp.ClientError as error:
        raise ConnectionLost(f"{type(error).__name__}: {error}") from error
