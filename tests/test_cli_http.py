"""``agui-pipeline check URL`` and ``agui-pipeline serve FILE`` against real sockets."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from agui_pipeline._engine.result import Outcome
from agui_pipeline.cli import main
from agui_pipeline.http.serve import Replay, ReplayServer
from agui_pipeline.subscribers import encode_json_lines, encode_sse

from tests.conftest import ROOT, http_agent

RUN = [
    {"type": "RUN_STARTED", "threadId": "t-cli", "runId": "r-1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m-1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m-1"},
    {"type": "RUN_FINISHED", "threadId": "t-cli", "runId": "r-1"},
]


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer(Replay(RUN)) as running:
        yield running


def input_file(tmp_path: Path) -> str:
    """The run input RUN answers: a replay sends its recording's ids whatever it is asked,
    and a run whose ids are not the input's is a producer finding (lint.run-identity)."""
    path = tmp_path / "input.json"
    path.write_text(json.dumps({"threadId": "t-cli", "runId": "r-1", "messages": []}))
    return str(path)


def check(*argv: str, transport: str = "httpx") -> tuple[int, str]:
    out = io.StringIO()
    status = main(["check", *argv, "--transport", transport], out=out)
    return status, out.getvalue()


def test_check_url_reports_like_a_file(
    server: ReplayServer, tmp_path: Path, transport: str
) -> None:
    status, report = check(server.url, "--input", input_file(tmp_path), transport=transport)
    assert status == 0
    assert report.startswith(f"{server.url}: completed")
    assert "http+sse" in report
    recorded = tmp_path / "run.sse"
    recorded.write_bytes(encode_sse(RUN))
    _, file_report = check(str(recorded))
    # The same report after the name, but for how the bytes arrived.
    same = report.replace("(http+sse)", "(sse)").split("\n")[1:]
    assert same == file_report.split("\n")[1:]
    assert "run 'r-1'" in report


def test_check_url_json_report_and_input_file(
    server: ReplayServer, tmp_path: Path, transport: str
) -> None:
    run_input = tmp_path / "input.json"
    run_input.write_text(json.dumps({"threadId": "t-cli", "runId": "r-1", "messages": []}))
    status, report = check(
        server.url, "--input", str(run_input), "--format", "json", transport=transport
    )
    assert status == 0
    assert json.loads(report)["verdict"]["outcome"] == "completed"
    assert server.replay.requests[-1][1]["threadId"] == "t-cli"


def test_check_url_passes_headers(
    server: ReplayServer, capsys: pytest.CaptureFixture[str], transport: str, tmp_path: Path
) -> None:
    server.replay.token = "tok"
    status, _ = check(server.url, transport=transport)
    assert status == 2
    assert "HTTP 401" in capsys.readouterr().err
    status, _ = check(
        server.url,
        "--input",
        input_file(tmp_path),
        "--header",
        "Authorization: Bearer tok",
        "--header",
        "X-A:b",
        transport=transport,
    )
    assert status == 0
    assert server.replay.requests[-1][0]["x-a"] == "b"


def test_check_url_truncated_exit_status(server: ReplayServer, transport: str) -> None:
    server.replay.drop_after = 2
    status, report = check(server.url, transport=transport)
    assert status == 1
    assert ": truncated" in report and "transport.connection-lost" in report


def test_check_url_progress_on_stderr(
    server: ReplayServer, capsys: pytest.CaptureFixture[str], tmp_path: Path, transport: str
) -> None:
    server.replay.pause = 0.15
    status, _ = check(
        server.url, "--progress", "--input", input_file(tmp_path), transport=transport
    )
    err = capsys.readouterr().err
    assert status == 0
    assert "5 events" in err and "/s" in err and "run r-1" in err and "0 diagnostics" in err


def test_check_url_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert check("http://127.0.0.1:9/", "--header", "no-colon")[0] == 2
    assert "NAME:VALUE" in capsys.readouterr().err


def test_serve_command_replays_a_recording(tmp_path: Path, transport: str) -> None:
    recording = tmp_path / "run.jsonl"
    recording.write_bytes(encode_json_lines(RUN))  # any framing parse reads
    command = [sys.executable, "-m", "agui_pipeline", "serve", str(recording), "--port", "0"]
    with subprocess.Popen(
        [*command, "--split", "3"], cwd=ROOT, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stderr is not None
            line = process.stderr.readline()
            assert "(5 events)" in line, line
            url = line.rsplit(" at ", 1)[1].strip()

            async def fetch() -> Outcome:
                async with http_agent(url, transport) as agent:
                    body = {"threadId": "t-cli", "runId": "r-1", "messages": []}  # RUN's ids
                    result = await agent.run(body)
                assert result.events == RUN
                return result.verdict.outcome

            assert anyio.run(fetch) is Outcome.COMPLETED
        finally:
            process.terminate()
            process.wait(timeout=10)


def test_serve_refuses_a_recording_that_does_not_parse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.sse"
    bad.write_bytes(b"data: {not json}\n\n")
    assert main(["serve", str(bad)]) == 2
    assert "does not parse" in capsys.readouterr().err
    assert main(["serve", str(tmp_path / "missing.sse")]) == 2


def test_check_url_reconciles_with_a_declaration(
    server: ReplayServer, tmp_path: Path, transport: str
) -> None:
    declaration = tmp_path / "capabilities.json"
    declaration.write_text(json.dumps({"transport": {"streaming": False}}))
    status, report = check(
        server.url, "--input", input_file(tmp_path), "--capabilities", str(declaration),
        transport=transport,
    )  # fmt: skip
    assert status == 1  # reconcile never rejects; its warning fails the default gate
    assert report.startswith(f"{server.url}: completed, failed: 1 warning(s)")
    assert "reconcile.transport" in report  # the stream arrived over http+sse all the same


def test_serve_stops_promptly_with_a_stream_in_flight(tmp_path: Path) -> None:
    recording = tmp_path / "run.sse"
    recording.write_bytes(encode_sse(RUN))
    command = [sys.executable, "-m", "agui_pipeline", "serve", str(recording), "--port", "0"]
    with subprocess.Popen(
        [*command, "--pause", "30"], cwd=ROOT, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stderr is not None
            url = process.stderr.readline().rsplit(" at ", 1)[1].strip()
            body = {"threadId": "t", "runId": "r", "messages": []}
            with httpx.Client() as client, client.stream("POST", url, json=body) as response:
                assert next(response.iter_bytes()).startswith(b"data: ")  # then a 30 s pause
                started = time.monotonic()
                process.terminate()
                assert process.wait(timeout=10) == 0
            assert time.monotonic() - started < 5
        finally:
            process.kill()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_serve_exits_0_when_stopped_by_a_signal(tmp_path: Path, stop: signal.Signals) -> None:
    """The documented status of a server stopped as servers are (`serve --help`)."""
    recording = tmp_path / "run.sse"
    recording.write_bytes(encode_sse(RUN))
    command = [sys.executable, "-m", "agui_pipeline", "serve", str(recording), "--port", "0"]
    with subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stderr is not None
            assert "serving" in process.stderr.readline()
            process.send_signal(stop)
            assert process.wait(timeout=10) == 0
            assert "Traceback" not in process.stderr.read()
        finally:
            process.kill()


@pytest.fixture
def ctrl_c_reaches_children() -> Iterator[None]:
    """A child started meanwhile takes Ctrl-C as a terminal's foreground job does, even
    where the test run itself was started with SIGINT ignored (a background job of a shell
    without job control): a child inherits an ignored signal, and Python then installs no
    ``KeyboardInterrupt`` handler. A handled signal is reset to its default in the child."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize("sources", [1, 2])
@pytest.mark.usefixtures("ctrl_c_reaches_children")
def test_an_interrupted_check_leaves_a_report_that_parses(tmp_path: Path, sources: int) -> None:
    """Ctrl-C while a URL streams: the JSON written so far is closed round the sources done
    (or nothing is written), the status is 130, and no traceback."""
    recording = tmp_path / "run.sse"
    recording.write_bytes(encode_sse(RUN))
    with ReplayServer(Replay(RUN, pause=5.0)) as slow:
        names = [str(recording), slow.url][-sources:]
        command = [sys.executable, "-m", "agui_pipeline", "check", *names, "--format", "json"]
        with subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as process:
            deadline = time.monotonic() + 30
            while not slow.replay.requests:  # the file, if any, is reported by now
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=20)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    if sources == 1:
        assert out == ""
    else:
        assert [part["source"] for part in json.loads(out)] == [str(recording)]
