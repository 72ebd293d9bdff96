"""The live source's clocks: ``idle_timeout`` (waiting without an event) and
``max_duration`` (a deadline for the whole exchange), against real servers on
127.0.0.1 — the replay server slowed down, and a socket that accepts and never answers.

A live stream ends, judged as it stands, when either fires; the diagnostic names
which one (``source.idle-timeout`` or ``source.max-duration``). A response whose
headers never come is the binding's error path (no run): ``RequestFailed``, naming
the setting that bounded the wait.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

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
