"""The HTTP + SSE client against a real server on 127.0.0.1 (``serve``), no mocks.

Each case gets the verdict ``/spec/1.1/basic/transports`` and
``/spec/1.1/basic/transports/http-sse`` give it: a clean close is a closed
run, a connection that dies without a terminal event is a truncated run with
everything before the break kept, an error status before the stream is the
binding's error path (no run), and cancelling closes the connection.
"""

from __future__ import annotations

import asyncio
import gzip
import importlib.util
import socket
import subprocess
import sys
import textwrap
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
from agui_pipeline import Outcome, Pipeline
from agui_pipeline.delivery.resume import pending_interrupts, resume_input
from agui_pipeline.errors import InputRejected, UsageError
from agui_pipeline.http.client import BODY_EXCERPT, HttpAgent, HttpStatusError, RequestFailed
from agui_pipeline.http.serve import BackgroundServer, Replay, ReplayServer
from agui_pipeline.subscribers import SseSink, encode_sse
from agui_pipeline.testing.conformance import Fixture, check_fixture, load_fixture, replay_fixture
from agui_pipeline.testing.conformance import FixtureReplay as ConformanceReplay
from starlette.types import Receive, Scope, Send

from tests.conftest import ROOT, corpus_paths, http_agent, unavailable

pytestmark = pytest.mark.anyio

RUN = [
    {"type": "RUN_STARTED", "threadId": "t-http", "runId": "r-1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m-1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "Grüße, "},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "world ✓"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m-1"},
    {"type": "RUN_FINISHED", "threadId": "t-http", "runId": "r-1"},
]
INPUT: dict[str, Any] = {"threadId": "t-http", "runId": "r-1", "messages": []}


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer(Replay(RUN)) as running:
        yield running


def plain_http() -> httpx.AsyncClient:
    """A client that never loads CA certificates: these tests speak plain HTTP, and
    loading them costs ~70 ms per client."""
    return httpx.AsyncClient(verify=False)


def codes(result: Any) -> list[str]:
    return [diagnostic.code for diagnostic in result.diagnostics]


async def test_clean_run_matches_the_same_bytes_in_memory(
    server: ReplayServer, transport: str
) -> None:
    async with http_agent(server.url, transport) as agent:
        result = await agent.run(INPUT)
    in_memory = await Pipeline().run(encode_sse(RUN))
    assert result.verdict.outcome is Outcome.COMPLETED
    assert result.events == in_memory.events == RUN
    assert result.transport == "http+sse"
    assert result.warnings == []
    headers, body = server.replay.requests[-1]
    assert headers["accept"] == "text/event-stream"
    assert headers["content-type"] == "application/json"
    assert body["threadId"] == "t-http" and body["protocolVersion"]  # the consumer declares it


@pytest.mark.parametrize("split", [1, 2, 7])
async def test_frames_split_at_every_byte_boundary(
    server: ReplayServer, split: int, transport: str
) -> None:
    server.replay.split = split  # split=1: every byte of every frame is its own write
    async with http_agent(server.url, transport) as agent:
        result = await agent.run(INPUT)
    assert result.verdict.outcome is Outcome.COMPLETED
    assert result.events == RUN


async def test_split_writes_reach_the_client_as_separate_reads(server: ReplayServer) -> None:
    server.replay.split = 1
    async with (
        httpx.AsyncClient() as client,
        client.stream("POST", server.url, json=INPUT) as response,
    ):
        reads = [chunk async for chunk in response.aiter_bytes()]
    assert b"".join(reads) == encode_sse(RUN)
    assert len(reads) > len(RUN)  # the frames really were cut on the wire


async def test_keep_alive_comments_are_ignored(server: ReplayServer, transport: str) -> None:
    server.replay.pause, server.replay.keepalive = 0.1, 0.02
    async with http_agent(server.url, transport, pipeline=Pipeline(idle_timeout=0.5)) as agent:
        result = await agent.run(INPUT)
    assert result.verdict.outcome is Outcome.COMPLETED
    assert result.events == RUN
    assert codes(result) == []


async def test_keep_alive_comments_do_not_hold_the_stream_past_the_idle_timeout(
    server: ReplayServer,
    transport: str,
) -> None:
    # Idle is "no event": comments every 50 ms through a 1 s silence do not reset it.
    server.replay.pause, server.replay.keepalive = 1.0, 0.05
    started = time.monotonic()
    async with http_agent(server.url, transport, pipeline=Pipeline(idle_timeout=0.2)) as agent:
        result = await agent.run(INPUT)
    assert time.monotonic() - started < 0.9
    assert result.verdict.outcome is Outcome.TRUNCATED
    assert result.events == RUN[:1]
    assert "source.idle-timeout" in codes(result)


async def test_idle_timeout_ends_the_stream_as_truncated(
    server: ReplayServer, transport: str
) -> None:
    server.replay.pause = 1.0
    started = time.monotonic()
    async with http_agent(server.url, transport, pipeline=Pipeline(idle_timeout=0.2)) as agent:
        result = await agent.run(INPUT)
    assert time.monotonic() - started < 0.9
    assert "source.idle-timeout" in codes(result)
    assert result.verdict.outcome is Outcome.TRUNCATED
    assert result.events == RUN[:1]


async def test_dropped_connection_is_a_truncated_run_with_events_kept(
    server: ReplayServer,
    transport: str,
) -> None:
    server.replay.drop_after = 3
    async with http_agent(server.url, transport) as agent:
        result = await agent.run(INPUT)
    assert result.verdict.outcome is Outcome.TRUNCATED
    assert result.events == RUN[:3]
    assert "transport.connection-lost" in codes(result)


async def test_connection_dropped_after_the_terminal_event_is_a_closed_run(
    server: ReplayServer,
    transport: str,
) -> None:
    server.replay.drop_after = len(RUN)  # every event sent, the response never ended
    async with http_agent(server.url, transport) as agent:
        result = await agent.run(INPUT)
    assert result.verdict.outcome is Outcome.COMPLETED
    assert result.events == RUN
    assert "transport.connection-lost" in codes(result)


@pytest.mark.parametrize("status", [404, 500, 503])
async def test_error_status_before_the_stream_is_the_error_path(
    server: ReplayServer, status: int, transport: str
) -> None:
    server.replay.status = status
    async with http_agent(server.url, transport) as agent:
        with pytest.raises(HttpStatusError) as raised:
            await agent.run(INPUT)
    assert raised.value.status == status
    assert f"answers {status}" in raised.value.body
    assert f"HTTP {status}" in str(raised.value)


async def test_authentication_is_passed_through(server: ReplayServer, transport: str) -> None:
    server.replay.token = "s3cret"
    async with http_agent(server.url, transport) as agent:
        with pytest.raises(HttpStatusError) as raised:
            await agent.run(INPUT)
        assert raised.value.status == 401
    async with http_agent(
        server.url, transport, headers={"Authorization": "Bearer s3cret", "X-Trace": "abc"}
    ) as agent:
        result = await agent.run(INPUT, headers={"X-Call": "1"})
    assert result.verdict.outcome is Outcome.COMPLETED
    headers, _ = server.replay.requests[-1]
    assert headers["x-trace"] == "abc" and headers["x-call"] == "1"
    server.replay.token = None
    async with http_agent(server.url, transport, auth=("ada", "pw")) as agent:
        await agent.run(INPUT)
    assert server.replay.requests[-1][0]["authorization"] == "Basic YWRhOnB3"


async def test_malformed_input_is_refused_before_anything_is_sent(
    server: ReplayServer, transport: str
) -> None:
    async with http_agent(server.url, transport) as agent:
        with pytest.raises(InputRejected):
            await agent.run({"threadId": "t", "runId": 7, "messages": []})
    assert server.replay.requests == []


async def test_wrong_content_type_is_a_diagnostic(server: ReplayServer, transport: str) -> None:
    server.replay.content_type = "application/json"
    async with http_agent(server.url, transport) as agent:
        result = await agent.run(INPUT)
    assert result.verdict.outcome is Outcome.COMPLETED  # the body is still a stream of events
    assert result.events == RUN
    [diagnostic] = [d for d in result.diagnostics if d.code == "transport.content-type"]
    assert "application/json" in diagnostic.message


async def test_nothing_listening_is_a_request_failure(transport: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with http_agent(f"http://127.0.0.1:{port}/", transport) as agent:
        # httpx's ConnectError, aiohttp's ClientConnectorError: the client's own name for it.
        with pytest.raises(RequestFailed, match=r"Connect(or)?Error"):
            await agent.run(INPUT)


async def test_no_response_headers_within_the_idle_timeout_is_a_request_failure(
    transport: str,
) -> None:
    # A socket that listens but never answers: the kernel completes the handshake.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        started = time.monotonic()
        async with http_agent(url, transport, pipeline=Pipeline(idle_timeout=0.2)) as agent:
            with pytest.raises(RequestFailed, match=r"no response within 0\.2 s"):
                await agent.run(INPUT)
        assert time.monotonic() - started < 2


async def test_cancellation_mid_frame_closes_the_connection(
    server: ReplayServer, transport: str
) -> None:
    # The first frame arrives in two pieces a second apart: cancel in between.
    server.replay.split, server.replay.pause = 20, 1.0
    seen: list[Any] = []
    async with http_agent(server.url, transport) as agent:
        with anyio.move_on_after(0.3) as scope:
            async with agent.open(INPUT) as stream:
                async for event in stream:
                    seen.append(event)
    assert scope.cancelled_caught
    assert seen == []
    deadline = time.monotonic() + 5
    while server.replay.active and time.monotonic() < deadline:
        await anyio.sleep(0.02)
    assert server.replay.active == 0
    assert server.replay.disconnects == 1


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # counts asyncio tasks
async def test_cancellation_leaves_no_task_behind(server: ReplayServer, transport: str) -> None:
    server.replay.split, server.replay.pause = 20, 1.0

    async def read() -> None:
        async with http_agent(server.url, transport) as agent:
            with anyio.move_on_after(0.2):
                await agent.run(INPUT)

    before = asyncio.all_tasks()
    await read()
    assert asyncio.all_tasks() == before


# -- the aiohttp transport's own terms -------------------------------------------------


def aiohttp_transport() -> Any:
    """:class:`AiohttpTransport`, or the test skips (fails in the full tier) without aiohttp."""
    if importlib.util.find_spec("aiohttp") is None:
        unavailable("needs aiohttp (the 'aiohttp' extra; pip install -e . --group test pins it)")
    from agui_pipeline.http.aiohttp_transport import AiohttpTransport

    return AiohttpTransport


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_aiohttp_session_of_yours_serves_many_runs_and_stays_open(
    server: ReplayServer,
) -> None:
    import aiohttp

    transport = aiohttp_transport()
    # auto_decompress left on: each request still asks for the raw body, so the agent's
    # bounded inflater, not aiohttp's, undoes a coding (the gzip tests run on it too).
    async with aiohttp.ClientSession() as session:
        async with HttpAgent(server.url, transport=transport(session)) as agent:
            results = [await agent.run(INPUT) for _ in range(3)]
        assert not session.closed
        assert all(result.events == RUN for result in results)
        with BackgroundServer(encoded_app(gzip.compress(encode_sse(RUN)), "gzip")) as gzipped:
            async with HttpAgent(gzipped.url, transport=transport(session)) as agent:
                result = await agent.run(INPUT)
        assert result.verdict.outcome is Outcome.COMPLETED and result.events == RUN


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_the_aiohttp_transport_says_it_needs_asyncio(server: ReplayServer) -> None:
    async with HttpAgent(server.url, transport=aiohttp_transport()()) as agent:
        with pytest.raises(UsageError, match="asyncio only"):
            await agent.run(INPUT)
    assert server.replay.requests == []


async def test_an_httpx_auth_becomes_a_header_over_either_transport(
    server: ReplayServer, transport: str
) -> None:
    auth = httpx.BasicAuth("ada", "pw")
    async with http_agent(server.url, transport, auth=auth) as agent:
        result = await agent.run(INPUT)
    assert result.verdict.outcome is Outcome.COMPLETED
    assert server.replay.requests[-1][0]["authorization"] == "Basic YWRhOnB3"


# -- the conformance corpus over real HTTP + SSE --------------------------------------


@pytest.fixture(scope="module")
def corpus_server() -> Iterator[ReplayServer]:
    with ReplayServer(Replay([])) as running:
        yield running


async def _http_replay(fixture: Fixture, url: str, transport: str) -> ConformanceReplay:
    """The fixture run by the client over HTTP, recorded as the runner records a replay."""
    pipeline = Pipeline(peer_max_protocol_version=fixture.peer_max_protocol_version)
    async with http_agent(url, transport, plain=True, pipeline=pipeline) as agent:
        try:
            result = await agent.run(fixture.raw_input())
        except InputRejected as error:
            return ConformanceReplay(fixture, None, [], input_error=error)
    # The outgoing boundary's diagnostics are on the result already.
    return ConformanceReplay(fixture, None, [], result=result)


@pytest.mark.parametrize("path", corpus_paths())
async def test_every_fixture_passes_over_http(
    corpus_server: ReplayServer, path: Path, transport: str
) -> None:
    fixture = load_fixture(path)
    corpus_server.replay.events = fixture.stream
    corpus_server.replay.requests.clear()
    replay = await _http_replay(fixture, corpus_server.url, transport)
    if corpus_server.replay.requests:
        replay.request = corpus_server.replay.requests[-1][1]  # the body as the agent got it
    report = check_fixture(replay)
    assert report.passed, report.line()
    in_memory = await replay_fixture(fixture, fixture.sse())  # the pipeline's: events kept
    assert replay.result is not None and in_memory.result is not None
    assert replay.result.verdict.to_dict() == in_memory.result.verdict.to_dict()
    assert replay.result.events == in_memory.result.events
    assert replay.result.conversation.to_dict() == in_memory.result.conversation.to_dict()


@pytest.mark.parametrize("path", corpus_paths())
async def test_the_runner_reads_the_http_body_as_it_reads_memory(
    corpus_server: ReplayServer, path: Path
) -> None:
    """D's runner, given the response body of a real HTTP exchange as its byte source."""
    fixture = load_fixture(path)
    corpus_server.replay.events = fixture.stream

    async def body() -> AsyncIterator[bytes]:
        async with (
            plain_http() as client,
            client.stream("POST", corpus_server.url, json=fixture.raw_input()) as response,
        ):
            async for chunk in response.aiter_bytes():
                yield chunk

    report = check_fixture(await replay_fixture(fixture, body()))
    assert report.passed, report.line()


async def test_resuming_an_interrupt_over_http(server: ReplayServer, transport: str) -> None:
    interrupt = {"id": "i-1", "reason": "approval"}
    server.replay.events = [
        *RUN[:-1],
        {**RUN[-1], "outcome": {"type": "interrupt", "interrupts": [interrupt]}},
    ]
    async with http_agent(server.url, transport) as agent:
        first = await agent.run(INPUT)
        assert pending_interrupts(first) == [interrupt]
        server.replay.events = RUN
        second = await agent.run(resume_input(INPUT, first, {"i-1": {"ok": True}}))
    assert second.verdict.outcome is Outcome.COMPLETED
    _, body = server.replay.requests[-1]
    assert body["resume"] == [{"interruptId": "i-1", "status": "resolved", "payload": {"ok": True}}]
    assert body["threadId"] == "t-http" and body["runId"] != "r-1"
    assert body["messages"][-1]["content"] == "Grüße, world ✓"


# -- a gateway: agent → pipeline → browser, over real HTTP on both sides --------------


def gateway(agent_url: str, transport: str) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """An ASGI app that relays an agent's run to the caller through the default pipeline:
    what the browser gets is what the pipeline delivered, re-encoded by an SseSink that
    writes straight into the response (so the browser's pace is the agent read's pace)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )

        async def to_browser(data: bytes) -> None:
            await send({"type": "http.response.body", "body": data, "more_body": True})

        pipeline = Pipeline(sinks=[SseSink(to_browser)])
        async with http_agent(agent_url, transport, plain=True, pipeline=pipeline) as agent:
            await agent.run(orjson.loads(body))
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


async def test_a_gateway_relays_only_what_the_pipeline_delivered(
    server: ReplayServer, transport: str
) -> None:
    noisy: list[dict[str, Any]] = [
        {**RUN[0], "futureProp": 1},
        {"type": "FUTURE_EVENT", "x": 1},
        *RUN[1:],
    ]
    server.replay.events = noisy
    with BackgroundServer(gateway(server.url, transport)) as relay:
        async with http_agent(relay.url, transport, plain=True) as browser:
            result = await browser.run(INPUT)
    assert result.verdict.outcome is Outcome.COMPLETED
    assert result.events == RUN  # stripped and dropped at the gateway
    assert result.warnings == []  # the browser sees a clean stream


async def test_a_gateway_passes_a_truncation_on(server: ReplayServer, transport: str) -> None:
    server.replay.drop_after = 3
    with BackgroundServer(gateway(server.url, transport)) as relay:
        async with http_agent(relay.url, transport, plain=True) as browser:
            result = await browser.run(INPUT)
    assert result.verdict.outcome is Outcome.TRUNCATED
    assert result.events == RUN[:3]


# -- Content-Encoding: undone layer by layer, bounded (issue 13, item 5) --------------------


def encoded_app(
    body: bytes, encoding: str, status: int = 200
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """An agent that answers every POST with ``status`` and ``body``, sent as
    ``Content-Encoding: encoding``."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        headers = [
            (b"content-type", b"text/event-stream"),
            (b"content-encoding", encoding.encode()),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        for start in range(0, len(body), 4096):
            await send(
                {
                    "type": "http.response.body",
                    "body": body[start : start + 4096],
                    "more_body": True,
                }
            )
        await send({"type": "http.response.body", "body": b""})

    return app


def gzip_bomb(inflated: int) -> bytes:
    """``Content-Encoding: gzip, gzip``: a RUN_STARTED frame, then blank lines, ``inflated``
    bytes of them once both layers are undone, from a body of a few kilobytes.

    The inner layer is one 1 MiB block of newlines compressed again and again after a full
    flush (which makes every copy the same bytes), so the bomb is built without ever holding
    or compressing what it inflates to; it never ends (no trailer): it is read until refused.
    """
    block = b"\n" * 2**20
    inner = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = inner.compress(encode_sse(RUN[:1]) + block) + inner.flush(zlib.Z_FULL_FLUSH)
    again = inner.compress(block) + inner.flush(zlib.Z_FULL_FLUSH)
    return gzip.compress(head + again * (inflated // len(block)), 9)


async def test_one_and_two_gzip_layers_are_read_as_plain_bytes(transport: str) -> None:
    body = encode_sse(RUN)
    for encoding, encoded in (
        ("gzip", gzip.compress(body)),
        ("gzip, gzip", gzip.compress(gzip.compress(body))),
        ("deflate", zlib.compress(body)),
        ("x-gzip, identity", gzip.compress(body)),
    ):
        with BackgroundServer(encoded_app(encoded, encoding)) as agent_server:
            async with http_agent(agent_server.url, transport, plain=True) as agent:
                result = await agent.run(INPUT)
        assert result.verdict.outcome is Outcome.COMPLETED, (encoding, result.verdict)
        assert result.events == RUN, encoding


async def test_a_body_that_does_not_decode_by_its_encoding_is_refused(transport: str) -> None:
    with BackgroundServer(encoded_app(b"not gzip at all" * 10, "gzip")) as agent_server:
        async with http_agent(agent_server.url, transport, plain=True) as agent:
            result = await agent.run(INPUT)
    assert result.verdict.code == "parse.content-encoding"
    assert "gzip" in str(result.verdict.message)
    with BackgroundServer(encoded_app(encode_sse(RUN), "br")) as agent_server:
        async with http_agent(agent_server.url, transport, plain=True) as agent:
            result = await agent.run(INPUT)
    assert result.verdict.code == "parse.content-encoding"
    assert "'br'" in str(result.verdict.message)


async def test_an_error_body_is_shown_inflated_and_bounded(transport: str) -> None:
    """An error status's excerpt is the body with its codings undone (servers compress
    error pages too), each layer inflated no further than the excerpt's size."""
    said = b'{"error": "quota exceeded"}'
    with BackgroundServer(encoded_app(gzip.compress(said), "gzip", 429)) as agent_server:
        async with http_agent(agent_server.url, transport, plain=True) as agent:
            with pytest.raises(HttpStatusError) as raised:
                await agent.run(INPUT)
    assert raised.value.status == 429 and raised.value.body == said.decode()
    bomb = gzip_bomb(8 * 1024**3)
    with BackgroundServer(encoded_app(bomb, "gzip, gzip", 500)) as agent_server:
        async with http_agent(agent_server.url, transport, plain=True) as agent:
            with pytest.raises(HttpStatusError) as raised:
                await agent.run(INPUT)
    assert raised.value.body.startswith("data: ") and len(raised.value.body) <= BODY_EXCERPT


def test_a_gzip_gzip_bomb_is_refused_at_the_ratio_limit_in_bounded_memory(transport: str) -> None:
    """13 kB that inflate to 8 GiB: refused by limit.decompression within a few reads,
    in a child process capped at 2 GB of address space and 60 s of CPU (before: the whole
    8 GiB were inflated inside one httpx call, and MemoryError escaped the client)."""
    script = textwrap.dedent(
        """
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))
        resource.setrlimit(resource.RLIMIT_CPU, (60, 60))
        import sys
        import anyio
        from agui_pipeline.http.serve import BackgroundServer
        from tests.conftest import http_agent
        from tests.test_limits import peak_mb
        from tests.test_transport import INPUT, encoded_app, gzip_bomb

        body = gzip_bomb(8 * 1024**3)

        async def main():
            with BackgroundServer(encoded_app(body, "gzip, gzip")) as server:
                async with http_agent(server.url, sys.argv[1], plain=True) as agent:
                    return await agent.run(INPUT)

        result = anyio.run(main)
        rss = peak_mb()
        print(len(body), result.verdict.code, len(result.events), rss)
        print(result.verdict.message)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, transport],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    size, code, delivered, rss = done.stdout.split("\n")[0].split()
    assert int(size) < 20_000
    assert code == "limit.decompression"
    assert "max_decompression_ratio=" in done.stdout
    assert int(delivered) == 1  # the RUN_STARTED before the blank lines
    assert int(rss) < 300, rss


async def test_a_tls_handshake_never_answered_names_the_wait_that_ran_out() -> None:
    # A port that takes the TCP connection and never speaks TLS: httpx's ConnectTimeout
    # carries no text of its own (issue 34), so the message says which wait ran out.
    from agui_pipeline.http.client import HttpxTransport

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"https://127.0.0.1:{silent.getsockname()[1]}/"
        transport = HttpxTransport(connect_timeout=0.3)
        async with HttpAgent(url, transport=transport) as agent:
            with pytest.raises(RequestFailed) as failed:
                await agent.run(INPUT)
    assert str(failed.value).endswith(
        "ConnectTimeout: the connection (TCP, then TLS for https) did not complete within 0.3 s"
    ), str(failed.value)
