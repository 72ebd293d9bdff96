"""``serve`` plays a conversation, and defends itself: real sockets on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
from agui_pipeline import HttpAgent, Pipeline, Replay, ReplayServer, resume_input
from agui_pipeline.http.serve import BackgroundServer, ReplayApp, read_conversation
from agui_pipeline.subscribers import encode_sse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tests.cli_run import agui, write_json
from tests.conftest import ROOT

ASKED: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t-rec", "runId": "r-rec-1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m-1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "May I move the money?"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m-1"},
    {
        "type": "RUN_FINISHED",
        "threadId": "t-rec",
        "runId": "r-rec-1",
        "outcome": {"type": "interrupt", "interrupts": [{"id": "i-1", "reason": "approval"}]},
    },
]
DONE: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t-rec", "runId": "r-rec-2"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m-2", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-2", "delta": "Moved."},
    {"type": "TEXT_MESSAGE_END", "messageId": "m-2"},
    {"type": "RUN_FINISHED", "threadId": "t-rec", "runId": "r-rec-2"},
]
FIRST = {
    "threadId": "t-live",
    "runId": "r-live-1",
    "messages": [{"id": "u-1", "role": "user", "content": "Move the money."}],
}


def post(url: str, content: bytes, **headers: str) -> httpx.Response:
    return httpx.post(url, content=content, headers=headers, timeout=10)


def test_interrupt_then_resume_end_to_end_turn_by_turn() -> None:
    replay = Replay.conversation([ASKED, DONE], echo_ids=True)

    async def converse() -> tuple[Any, Any, dict[str, Any]]:
        async with HttpAgent(server.url) as agent:
            first = await agent.run(FIRST)
            second_input = resume_input(FIRST, first, {"i-1": {"approved": True}}, run_id="r-2")
            second = await agent.run(second_input)
        return first, second, second_input

    with ReplayServer(replay) as server:
        first, second, second_input = anyio.run(converse)
    assert first.verdict.completed and second.verdict.completed
    # Each turn answered with its own run, under the request's ids.
    assert first.events[0] == {"type": "RUN_STARTED", "threadId": "t-live", "runId": "r-live-1"}
    assert first.events[-1]["outcome"]["type"] == "interrupt"
    assert second.events[0]["runId"] == "r-2" and second.events[-1]["runId"] == "r-2"
    assert second.events[2]["delta"] == "Moved."
    # The server saw the resume the client built from the interrupt.
    assert replay.requests[1][1]["resume"] == [
        {"interruptId": "i-1", "status": "resolved", "payload": {"approved": True}}
    ]
    assert second_input["messages"][1]["content"] == "May I move the money?"
    assert replay.played == 2


def test_a_request_past_the_last_turn_is_refused() -> None:
    with ReplayServer(Replay.conversation([ASKED])) as server:
        assert post(server.url, orjson.dumps(FIRST)).status_code == 200
        over = post(server.url, orjson.dumps(FIRST))
    assert over.status_code == 409 and "1 turns" in over.json()["error"]


def test_without_echo_ids_the_recording_is_served_as_recorded() -> None:
    with ReplayServer(Replay(ASKED)) as server:
        body = post(server.url, orjson.dumps(FIRST)).content
    assert b'"threadId":"t-rec"' in body and b"t-live" not in body


# A recording of several runs: one replayed from the thread's history, then the requested
# run, which echoes the input it was started from.
REPLAYED_THEN_ASKED: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t-rec", "runId": "r-rec-0"},
    {"type": "RUN_FINISHED", "threadId": "t-rec", "runId": "r-rec-0"},
    {
        "type": "RUN_STARTED",
        "threadId": "t-rec",
        "runId": "r-rec-1",
        "input": {"threadId": "t-rec", "runId": "r-rec-1", "messages": []},
    },
    *ASKED[1:-1],
    {"type": "RUN_FINISHED", "threadId": "t-rec", "runId": "r-rec-1"},
]


def identities(body: bytes) -> list[tuple[Any, ...]]:
    """Each boundary event's type and ids (and its echoed input's), as served."""
    served = [orjson.loads(frame.removeprefix(b"data: ")) for frame in body.split(b"\n\n")[:-1]]
    return [
        (
            e["type"],
            e["threadId"],
            e["runId"],
            e.get("parentRunId"),
            e.get("input", {}).get("runId"),
        )
        for e in served
        if e["type"] in ("RUN_STARTED", "RUN_FINISHED")
    ]


@pytest.mark.parametrize("flags", [[], ["--echo-ids"]])
def test_serve_echoes_the_requested_run_as_the_request_named_it_by_default(
    tmp_path: Path, flags: list[str]
) -> None:
    """``serve`` (``--echo-ids`` is the default): every run on the request's thread, the
    last (requested) run under the request's runId, its echoed input too; our own check,
    with the request as its input, finds the run identity consistent."""
    recording = tmp_path / "replayed.sse"
    recording.write_bytes(encode_sse(REPLAYED_THEN_ASKED))
    request = write_json(tmp_path / "input.json", FIRST)
    body, judged = _serve_and_check(recording, request, flags)
    report = json.loads(judged.stdout)
    assert judged.returncode == 0 and report["verdict"]["outcome"] == "completed", report
    codes = [d["code"] for d in report["diagnostics"]]
    assert codes == [], codes  # lint.run-identity among them
    assert identities(body) == [
        ("RUN_STARTED", "t-live", "r-rec-0", None, None),  # replayed history: its own runId
        ("RUN_FINISHED", "t-live", "r-rec-0", None, None),
        ("RUN_STARTED", "t-live", "r-live-1", None, "r-live-1"),
        ("RUN_FINISHED", "t-live", "r-live-1", None, None),
    ]
    assert b'"threadId":"t-live","runId":"r-live-1","messages"' in body  # the echoed input


def test_serve_no_echo_ids_serves_the_recording_as_recorded(tmp_path: Path) -> None:
    recording = tmp_path / "replayed.sse"
    recording.write_bytes(encode_sse(REPLAYED_THEN_ASKED))
    request = write_json(tmp_path / "input.json", FIRST)
    body, judged = _serve_and_check(recording, request, ["--no-echo-ids"])
    assert body == encode_sse(REPLAYED_THEN_ASKED)
    codes = {d["code"] for d in json.loads(judged.stdout)["diagnostics"]}
    assert "lint.run-identity" in codes and judged.returncode == 1  # a warning fails the gate


def _serve_and_check(
    recording: Path, request: Path, flags: list[str]
) -> tuple[bytes, subprocess.CompletedProcess[str]]:
    """``serve RECORDING FLAGS``: the body it answers ``FIRST`` with, and ``check URL``'s run."""
    command = [sys.executable, "-m", "agui_pipeline", "serve", str(recording), "--port", "0"]
    with subprocess.Popen(
        [*command, *flags], cwd=ROOT, stderr=subprocess.PIPE, text=True
    ) as server:
        try:
            assert server.stderr is not None
            url = server.stderr.readline().rsplit(" at ", 1)[1].strip()
            body = post(url, orjson.dumps(FIRST)).content
            judged = agui("check", url, "--input", request, "--format", "json")
        finally:
            server.terminate()
            server.wait(timeout=10)
    return body, judged


def test_echo_ids_follows_the_requested_run_into_a_run_it_spawned() -> None:
    spawned = [
        *ASKED[:-1],
        {"type": "RUN_FINISHED", "threadId": "t-rec", "runId": "r-rec-1"},
        {"type": "RUN_STARTED", "threadId": "t-rec", "runId": "r-sub", "parentRunId": "r-rec-1"},
        {"type": "RUN_FINISHED", "threadId": "t-rec", "runId": "r-sub"},
    ]
    with ReplayServer(Replay(spawned, echo_ids=True)) as server:
        body = post(server.url, orjson.dumps(FIRST)).content
    assert identities(body) == [
        ("RUN_STARTED", "t-live", "r-live-1", None, None),
        ("RUN_FINISHED", "t-live", "r-live-1", None, None),
        ("RUN_STARTED", "t-live", "r-sub", "r-live-1", None),  # a run of its own, its parent's
        ("RUN_FINISHED", "t-live", "r-sub", None, None),
    ]
    result = anyio.run(lambda: Pipeline().run(body, run_input=FIRST))
    assert result.verdict.completed and result.diagnostics == []


def test_echo_ids_in_protobuf_frames() -> None:
    replay = Replay(REPLAYED_THEN_ASKED, echo_ids=True, proto=True)
    with ReplayServer(replay) as server:
        accept = "application/vnd.ag-ui.event+proto"
        body = post(server.url, orjson.dumps(FIRST), Accept=accept).content
    result = anyio.run(lambda: Pipeline(framing="proto").run(body, run_input=FIRST))
    assert result.verdict.completed and result.diagnostics == []
    started = [e for e in result.events if e["type"] == "RUN_STARTED"]
    assert [(e["threadId"], e["runId"]) for e in started] == [
        ("t-live", "r-rec-0"),
        ("t-live", "r-live-1"),
    ]
    assert started[1].get("input", {}).get("runId") == "r-live-1"


def test_a_conversation_reads_from_a_directory_or_a_json_list(tmp_path: Path) -> None:
    (tmp_path / "turns").mkdir()
    (tmp_path / "turns" / "1.sse").write_bytes(encode_sse(ASKED))
    (tmp_path / "turns" / "2.sse").write_bytes(encode_sse(DONE))
    (tmp_path / "turns.json").write_bytes(orjson.dumps([ASKED, DONE]))
    (tmp_path / "one.json").write_bytes(orjson.dumps(ASKED))
    assert read_conversation(tmp_path / "turns") == [ASKED, DONE]
    assert read_conversation(tmp_path / "turns.json") == [ASKED, DONE]
    assert read_conversation(tmp_path / "one.json") == [ASKED]  # a JSON array of events


# -- hardening ------------------------------------------------------------------------------


def test_a_body_over_the_cap_is_answered_413() -> None:
    with ReplayServer(Replay(ASKED, max_body=1000)) as server:
        big = {**FIRST, "messages": [{"id": "u", "role": "user", "content": "x" * 2000}]}
        assert post(server.url, orjson.dumps(big)).status_code == 413
        assert post(server.url, orjson.dumps(FIRST)).status_code == 200
        # Chunked, with no Content-Length to refuse up front: counted as it is read.
        chunked = httpx.post(server.url, content=iter([orjson.dumps(big)]), timeout=10)
        assert "content-length" not in chunked.request.headers
        assert chunked.status_code == 413


def _raw_request(url: str, head: str) -> bytes:
    """Send only a request head (a body declared but never sent) and read the answer."""
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(head.encode())
        return sock.recv(4096)


def test_an_unauthenticated_or_oversized_body_is_never_read() -> None:
    # 1 GB declared and not one byte sent: an answer at all shows nothing waited on the body.
    head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += "Content-Length: 1000000000\r\n"
    with ReplayServer(Replay(ASKED, token="secret")) as server:
        assert _raw_request(server.url, head + "\r\n").startswith(b"HTTP/1.1 401")
        authorised = head + "Authorization: Bearer secret\r\n\r\n"
        assert _raw_request(server.url, authorised).startswith(b"HTTP/1.1 413")


def test_the_token_scheme_is_matched_in_any_case() -> None:
    with ReplayServer(Replay(ASKED, token="secret")) as server:
        body = orjson.dumps(FIRST)
        assert post(server.url, body, Authorization="bearer secret").status_code == 200
        assert post(server.url, body, Authorization="BEARER  secret").status_code == 200
        assert post(server.url, body, Authorization="Bearer secreT").status_code == 401
        assert post(server.url, body, Authorization="Basic secret").status_code == 401


def test_wrong_typed_input_is_answered_422_with_the_pointer() -> None:
    with ReplayServer(Replay(ASKED)) as server:
        answer = post(server.url, b'{"threadId":1,"runId":[],"messages":"x"}')
    assert answer.status_code == 422
    assert answer.json()["pointer"] in ("/threadId", "/runId", "/messages")
    assert answer.json()["code"].startswith("input.")


def test_frames_are_encoded_once_per_recording() -> None:
    replay = Replay(ASKED)
    assert replay.frames() is replay.frames()  # kept, not encoded per request
    replay.events = DONE
    assert replay.frames()[0] == encode_sse(DONE[:1])  # a new recording is encoded anew


@pytest.mark.parametrize(
    "content",
    [b"", b"garbage\n\n", encode_sse(ASKED)[:-20], b"{not json}\n"],
    ids=["empty", "garbage", "cut-mid-frame", "not-json"],
)
def test_a_recording_that_does_not_parse_whole_is_refused_at_start(
    tmp_path: Path, content: bytes
) -> None:
    recording = tmp_path / "bad.sse"
    recording.write_bytes(content)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "agui_pipeline", "serve", str(recording), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2, done.stderr
    assert "bad.sse" in done.stderr and "serving" not in done.stderr
    assert time.monotonic() - started < 30


class CountingWrites:
    """ASGI middleware counting the body writes the app makes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.writes = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def counted(message: Message) -> None:
            self.writes += message["type"] == "http.response.body"
            await send(message)

        await self.app(scope, receive, counted)


def test_a_client_that_leaves_early_stops_its_stream_and_keeps_no_one_waiting() -> None:
    """Writes yield to the loop: a response to a client gone (whose writes never wait) does
    not run to its end before the disconnect is seen and other clients get their turn."""
    long_run = [ASKED[0], ASKED[1], *[{**ASKED[2], "delta": str(n)} for n in range(20_000)]]
    replay = Replay(long_run)
    app = CountingWrites(ReplayApp(replay))
    with BackgroundServer(app) as server:
        with httpx.stream("POST", server.url, json=FIRST, timeout=10) as response:
            next(response.iter_bytes())
        deadline = time.monotonic() + 10
        while replay.disconnects == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        second = time.monotonic()
        with httpx.stream("POST", server.url, json=FIRST, timeout=10) as response:
            next(response.iter_bytes())
        waited = time.monotonic() - second
    assert replay.disconnects >= 1
    assert app.writes < 10_000, app.writes  # the rest of the 20002 was never written
    assert waited < 5
