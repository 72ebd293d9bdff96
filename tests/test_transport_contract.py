"""A third transport, written from the public names alone, carries a real stream.

``Transport.send(TransportRequest) -> TransportResponse`` is the whole contract
(:mod:`agui_pipeline.http.transport`). ``Socket`` below speaks HTTP/1.1 over a bare TCP
stream (anyio's), importing nothing from this project but ``agui_pipeline`` itself, and
runs the same stream as the built-in transports against a server on 127.0.0.1 that the
test starts and stops: the run completes, a dropped connection is a truncated run, a
silent server is the idle window, and authentication arrives as a header — a Digest
challenge too, answered by the agent, over httpx and aiohttp alike.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import pytest
from agui_pipeline import (
    BackgroundServer,
    ConnectionLost,
    HttpAgent,
    Outcome,
    Pipeline,
    Replay,
    ReplayServer,
    RequestFailed,
    Transport,
    TransportRequest,
    TransportResponse,
    encode_sse,
)
from anyio.streams.buffered import BufferedByteReceiveStream
from starlette.types import Receive, Scope, Send

from tests.conftest import http_agent
from tests.test_transport import INPUT, RUN

pytestmark = pytest.mark.anyio

LINE_MOST = 8192


class Socket(Transport):
    """HTTP/1.1 over one TCP connection a request (``Connection: close``); chunked or
    close-delimited bodies."""

    def __init__(self) -> None:
        self.sent: list[TransportRequest] = []

    async def send(self, request: TransportRequest) -> TransportResponse:
        self.sent.append(request)
        url = urlsplit(request.url)
        try:
            stream = await anyio.connect_tcp(url.hostname or "", url.port or 80)
        except OSError as error:
            raise RequestFailed(request.url, str(error), connecting=True) from error
        head = [f"{request.method} {url.path or '/'} HTTP/1.1", f"Host: {url.netloc}"]
        head += [f"{name}: {value}" for name, value in request.headers.items()]
        head += [f"Content-Length: {len(request.content)}", "Connection: close", "", ""]
        await stream.send("\r\n".join(head).encode("latin-1") + request.content)
        reader = BufferedByteReceiveStream(stream)
        with anyio.fail_after(request.read_timeout or float("inf")):
            status = int((await reader.receive_until(b"\r\n", LINE_MOST)).split()[1])
            headers = []
            while line := await reader.receive_until(b"\r\n", LINE_MOST):
                name, _, value = line.decode("latin-1").partition(":")
                headers.append((name.strip(), value.strip()))
        chunked = any(
            name.lower() == "transfer-encoding" and "chunked" in value.lower()
            for name, value in headers
        )
        body = _chunked(reader, request.read_timeout) if chunked else _until_close(reader)
        return TransportResponse(status, headers, body, stream.aclose)


async def _chunked(reader: BufferedByteReceiveStream, wait: float | None) -> AsyncIterator[bytes]:
    try:
        while True:
            with anyio.fail_after(wait or float("inf")):
                size = int((await reader.receive_until(b"\r\n", LINE_MOST)).split(b";")[0], 16)
                if size == 0:
                    return
                chunk = await reader.receive_exactly(size)
                await reader.receive_exactly(2)
            yield chunk
    except TimeoutError:
        raise  # the read timeout (an OSError too: kept apart from a lost connection)
    except (anyio.IncompleteRead, anyio.EndOfStream, OSError) as error:
        raise ConnectionLost(f"{type(error).__name__}: the body ended mid-chunk") from error


async def _until_close(reader: BufferedByteReceiveStream) -> AsyncIterator[bytes]:
    try:
        while True:
            yield await reader.receive()
    except anyio.EndOfStream:
        return


@pytest.fixture
def server() -> Any:
    with ReplayServer(Replay(RUN)) as running:
        yield running


async def test_a_transport_of_public_names_reads_a_run(server: ReplayServer) -> None:
    socket = Socket()
    async with HttpAgent(server.url, transport=socket, auth=("ada", "pw")) as agent:
        result = await agent.run(INPUT)
    assert result.verdict.outcome is Outcome.COMPLETED
    assert result.events == RUN and result.transport == "http+sse"
    headers, _ = server.replay.requests[-1]
    assert headers["authorization"] == "Basic YWRhOnB3"  # a header before the transport
    assert socket.sent[-1].headers["Accept"] == "text/event-stream"
    assert socket.sent[-1].method == "POST"


async def test_its_lost_connection_is_a_truncated_run(server: ReplayServer) -> None:
    server.replay.drop_after = 3
    async with HttpAgent(server.url, transport=Socket()) as agent:
        result = await agent.run(INPUT)
    assert result.verdict.outcome is Outcome.TRUNCATED
    assert result.events == RUN[:3]
    lost = [d for d in result.diagnostics if d.code == "transport.connection-lost"]
    assert lost and "IncompleteRead" in lost[0].message


async def test_its_read_timeout_is_the_idle_window(server: ReplayServer) -> None:
    server.replay.pause = 2.0
    async with HttpAgent(
        server.url, transport=Socket(), pipeline=Pipeline(idle_timeout=0.3)
    ) as agent:
        result = await agent.run(INPUT)
    assert result.verdict.outcome is Outcome.TRUNCATED
    assert "source.idle-timeout" in [d.code for d in result.diagnostics]


class DigestProtected:
    """Answers ``401`` with a Digest challenge (RFC 7616) until a request's
    ``Authorization`` answers it for ``ada:pw``, then streams ``RUN``."""

    realm, nonce = "agents", "5f3b0c"

    def __init__(self) -> None:
        self.authorizations: list[str | None] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        given = dict(scope["headers"]).get(b"authorization")
        self.authorizations.append(given and given.decode())
        if not (given and self._answers(given.decode(), scope["path"])):
            challenge = f'Digest realm="{self.realm}", nonce="{self.nonce}", qop="auth"'
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"www-authenticate", challenge.encode())],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        sse = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": sse})
        await send({"type": "http.response.body", "body": encode_sse(RUN)})

    def _answers(self, given: str, path: str) -> bool:
        fields = dict(
            part.strip().split("=", 1) for part in given.removeprefix("Digest ").split(",")
        )
        said = {key: value.strip('"') for key, value in fields.items()}

        def md5(text: str) -> str:
            return hashlib.md5(text.encode()).hexdigest()

        first, second = md5(f"ada:{self.realm}:pw"), md5(f"POST:{path}")
        expected = md5(f"{first}:{self.nonce}:{said.get('nc')}:{said.get('cnonce')}:auth:{second}")
        return said.get("response") == expected


@pytest.mark.parametrize("via", ["httpx", "aiohttp", "socket"])
async def test_a_digest_challenge_is_answered_by_the_agent_over_any_transport(
    via: str, anyio_backend: str
) -> None:
    if via == "aiohttp" and anyio_backend != "asyncio":
        pytest.skip("aiohttp runs under asyncio only")
    app = DigestProtected()
    with BackgroundServer(app) as served:
        auth = httpx.DigestAuth("ada", "pw")
        if via == "socket":
            async with HttpAgent(served.url, transport=Socket(), auth=auth) as agent:
                result = await agent.run(INPUT)
        else:
            async with http_agent(served.url, via, auth=auth) as agent:
                result = await agent.run(INPUT)
    assert result.verdict.outcome is Outcome.COMPLETED and result.events == RUN
    assert app.authorizations[0] is None  # the challenge first, then its answer
    assert len(app.authorizations) == 2 and (app.authorizations[1] or "").startswith("Digest ")
