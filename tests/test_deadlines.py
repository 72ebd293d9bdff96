"""The live source's clocks: ``idle_timeout`` (waiting without an event) and
``max_duration`` (a deadline for the whole exchange), against real servers on
127.0.0.1 — the replay server slowed down, and a socket that accepts and never answers.

A live stream ends, judged as it stands, when either fires; the diagnostic names
which one (``source.idle-timeout`` or ``source.max-duration``). A response whose
headers never come is the binding's error path (no run): ``RequestFailed``, naming
the setting that bounded the wait.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest
from agui_pipeline import Outcome, Pipeline
from agui_pipeline.http.client import RequestFailed
from agui_pipeline.http.serve import Replay, ReplayServer

from tests.conftest import http_agent

pytestmark = pytest.mark.anyio

RUN = [
    {"type": "RUN_STARTED", "threadId": "t-clock", "runId": "r-1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m-1", "role": "assistant"},
    *({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "tick "} for _ in range(40)),
    {"type": "TEXT_MESSAGE_END", "messageId": "m-1"},
    {"type": "RUN_FINISHED", "threadId": "t-clock", "runId": "r-1"},
]
INPUT: dict[str, Any] = {"threadId": "t-clock", "runId": "r-1", "messages": []}


def codes(result: Any) -> list[str]:
    return [diagnostic.code for diagnostic in result.diagnostics]


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer(Replay(RUN)) as running:
        yield running


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A server that accepts connections, reads nothing and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return  # the listener was closed: the test is over
            held.append(connection)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    finally:
        listener.close()
        for connection in held:
            connection.close()
        thread.join(timeout=5)


async def test_one_byte_at_a_time_does_not_reset_the_idle_timeout(
    server: ReplayServer, transport: str
) -> None:
    # Every byte its own write, 20 ms apart: bytes flow all the time, but a frame of
    # ~70 bytes takes over a second to complete.
    server.replay.split, server.replay.pause = 1, 0.02
    started = time.monotonic()
    async with http_agent(server.url, transport, pipeline=Pipeline(idle_timeout=0.3)) as agent:
        result = await agent.run(INPUT)
    assert time.monotonic() - started < 3
    assert result.verdict.outcome is Outcome.TRUNCATED
    idle = [d for d in result.diagnostics if d.code == "source.idle-timeout"]
    assert len(idle) == 1
    assert "no event for 0.3 s" in idle[0].message


async def test_max_duration_ends_a_steady_stream(server: ReplayServer, transport: str) -> None:
    # An event every 50 ms never trips a 0.5 s idle window; the deadline ends it.
    server.replay.pause = 0.05
    started = time.monotonic()
    pipeline = Pipeline(idle_timeout=0.5, max_duration=0.6)
    async with http_agent(server.url, transport, pipeline=pipeline) as agent:
        result = await agent.run(INPUT)
    elapsed = time.monotonic() - started
    assert 0.55 < elapsed < 1.5
    assert result.verdict.outcome is Outcome.TRUNCATED
    assert codes(result) == ["source.max-duration"]
    assert "0.6 s (max_duration)" in result.diagnostics[0].message
    assert 2 < len(result.events) < len(RUN)


async def test_a_stream_inside_its_deadline_completes(server: ReplayServer, transport: str) -> None:
    server.replay.pause = 0.001
    # Windows far above the stream's own pauses: a loaded machine's scheduling gaps (half a
    # second and more, seen) must not read as the producer falling silent.
    pipeline = Pipeline(idle_timeout=5, max_duration=10)
    async with http_agent(server.url, transport, pipeline=pipeline) as agent:
        result = await agent.run(INPUT)
    assert result.verdict.outcome is Outcome.COMPLETED
    assert result.events == RUN


@pytest.mark.parametrize(
    ("settings", "named"),
    [({"idle_timeout": 0.3}, "idle_timeout"), ({"max_duration": 0.3}, "max_duration")],
)
async def test_a_server_that_never_answers_is_given_up_on(
    silent_url: str, settings: dict[str, float], named: str, transport: str
) -> None:
    started = time.monotonic()
    async with http_agent(silent_url, transport, pipeline=Pipeline(**settings)) as agent:  # type: ignore[arg-type]
        with pytest.raises(RequestFailed, match=f"no response within 0.3 s \\({named}\\)"):
            await agent.run(INPUT)
    assert time.monotonic() - started < 2


def check_url(url: str, transport: str, *options: str) -> subprocess.CompletedProcess[str]:
    command = ["check", url, "--format", "json", "--transport", transport, *options]
    return subprocess.run(
        [sys.executable, "-m", "agui_pipeline", *command],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_check_url_max_duration_on_the_command_line(server: ReplayServer, transport: str) -> None:
    server.replay.pause = 0.05
    done = check_url(server.url, transport, "--max-duration", "0.5")
    assert done.returncode == 1, done.stderr
    assert '"source.max-duration"' in done.stdout
    assert '"truncated"' in done.stdout


def test_check_url_idle_timeout_on_the_command_line(server: ReplayServer, transport: str) -> None:
    server.replay.pause, server.replay.keepalive = 2.0, 0.05
    started = time.monotonic()
    done = check_url(server.url, transport, "--idle-timeout", "0.3")
    assert time.monotonic() - started < 10
    assert done.returncode == 1, done.stderr
    assert '"source.idle-timeout"' in done.stdout


def test_check_url_gives_up_on_a_server_that_never_answers(silent_url: str, transport: str) -> None:
    started = time.monotonic()
    done = check_url(silent_url, transport, "--max-duration", "0.5")
    assert time.monotonic() - started < 10
    assert done.returncode == 2
    assert "no response within 0.5 s (max_duration)" in done.stderr + done.stdout


def test_duration_options_refuse_what_is_not_seconds(server: ReplayServer) -> None:
    done = check_url(server.url, "httpx", "--max-duration", "soon")
    assert done.returncode == 2
    assert "expected seconds, got 'soon'" in done.stderr


# -- the engine's own clock, over a source that is an async generator -------------------
# No source timeout here: the engine's clock alone bounds each read (on asyncio one timer
# per stream, armed again only when it fires; on trio a scope per read). Each test runs
# under both backends and holds them to the same verdicts.


def frame(event: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(event).encode() + b"\n\n"


async def read_all(pipeline: Pipeline, source: AsyncIterator[bytes]) -> tuple[Any, float]:
    """The run's result and how long it took, event by event as a live consumer reads."""
    started = time.monotonic()
    with anyio.fail_after(10):
        result = await pipeline.run(source)
    return result, time.monotonic() - started


async def test_a_stream_that_goes_silent_after_a_read_is_given_up_on() -> None:
    # The second event comes 0.2 s in, so the window first set to end at 0.3 s ends at
    # 0.5 s: the timer fires once in the third read's wait and is moved, then ends it.
    async def silent_after_two() -> AsyncIterator[bytes]:
        yield frame(RUN[0])
        await anyio.sleep(0.2)
        yield frame(RUN[1])
        await anyio.sleep_forever()
        yield b""  # pragma: no cover

    result, elapsed = await read_all(Pipeline(idle_timeout=0.3), silent_after_two())
    assert 0.45 < elapsed < 2
    assert result.verdict.outcome is Outcome.TRUNCATED
    assert codes(result) == ["source.idle-timeout"]
    assert result.events == RUN[:2]
    assert result.diagnostics[0].event_index == 2


async def test_events_trickling_within_the_window_hold_it_open_past_many_windows() -> None:
    # An event every 0.1 s for 1.3 s, with a 0.3 s window: the stream's one timer fires
    # in the middle of a read many times, and each time finds the window moved on.
    async def trickle() -> AsyncIterator[bytes]:
        for event in RUN[:12]:
            await anyio.sleep(0.1)
            yield frame(event)
        yield frame(RUN[-2]) + frame(RUN[-1])

    result, elapsed = await read_all(Pipeline(idle_timeout=0.3), trickle())
    assert elapsed > 1.2  # four windows
    assert result.verdict.outcome is Outcome.COMPLETED, codes(result)
    assert codes(result) == []
    assert result.events == RUN[:12] + RUN[-2:]


async def test_keep_alive_comments_within_the_window_do_not_hold_it_open() -> None:
    async def comments_only() -> AsyncIterator[bytes]:
        yield frame(RUN[0])
        while True:
            await anyio.sleep(0.05)
            yield b": keep-alive\n\n"

    result, elapsed = await read_all(Pipeline(idle_timeout=0.3), comments_only())
    assert 0.25 < elapsed < 2
    assert codes(result) == ["source.idle-timeout"]
    assert result.events == RUN[:1]


async def test_a_slow_consumer_is_not_taken_for_a_silent_producer() -> None:
    # The source answers at once; the consumer takes twice the window over each event.
    async def prompt() -> AsyncIterator[bytes]:
        for event in RUN[:3] + RUN[-2:]:
            yield frame(event)

    delivered = []
    with anyio.fail_after(10):
        async with Pipeline(idle_timeout=0.15).open(prompt()) as stream:
            async for event in stream:
                delivered.append(event)
                await anyio.sleep(0.3)
    assert stream.verdict.outcome is Outcome.COMPLETED
    assert delivered == RUN[:3] + RUN[-2:]


async def test_max_duration_ends_a_stream_whose_events_never_stop() -> None:
    async def steady() -> AsyncIterator[bytes]:
        for event in RUN[:-2]:
            await anyio.sleep(0.05)
            yield frame(event)

    result, elapsed = await read_all(Pipeline(idle_timeout=0.3, max_duration=0.5), steady())
    assert 0.45 < elapsed < 2
    assert codes(result) == ["source.max-duration"]
    assert 3 < len(result.events) < len(RUN) - 2


async def test_a_cancellation_from_outside_goes_on_as_it_came() -> None:
    # The caller's own scope fires while a read waits under the engine's clock: the
    # caller's cancellation, not the idle window, ends the read (and it is not swallowed).
    async def silent() -> AsyncIterator[bytes]:
        yield frame(RUN[0])
        await anyio.sleep_forever()
        yield b""  # pragma: no cover

    stream = Pipeline(idle_timeout=5).open(silent())
    with anyio.move_on_after(0.2) as scope:
        async with stream:
            async for _event in stream:
                pass
    assert scope.cancelled_caught
    assert not stream.ended
    # The caller's task is not left with a cancellation pending: it waits again as usual.
    with anyio.fail_after(2):
        await anyio.sleep(0.01)
