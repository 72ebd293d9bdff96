"""`check --input` means the same on every framing as live, and fixtures are sources."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import PLACE, agui, write_json
from tests.conftest import ROOT, corpus_file
from tests.streams import encode

# A producer that answers the frontend tool its input declared: tool-calls.mdx, "A
# producer that calls a frontend tool MUST NOT answer it".
RUN_INPUT: dict[str, Any] = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "book it"}],
    "tools": [{"name": "confirm", "description": "ask the user", "parameters": {}}],
    "state": {"count": 1},
    "context": [],
    "forwardedProps": {},
}
ANSWERS_FRONTEND_TOOL: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "confirm"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    {"type": "TOOL_CALL_RESULT", "messageId": "tm1", "toolCallId": "c1", "content": "yes"},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
]
# A delta on the input's state: it applies only against that baseline.
PATCHES_INPUT_STATE: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
    {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/count", "value": 2}]},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
]


def _verdict(completed: subprocess.CompletedProcess[str]) -> tuple[int, str, str | None]:
    report = json.loads(completed.stdout)
    return completed.returncode, report["verdict"]["outcome"], report["verdict"]["code"]


FRONTEND_ANSWERED = "lint.result-for-frontend-tool"
"""What a result answering the application's tool earns: a producer finding (tool-calls.mdx
forbids the producer the answer, and makes none of it the consumer's verdict)."""


def _codes(completed: subprocess.CompletedProcess[str]) -> list[str]:
    return [d["code"] for d in json.loads(completed.stdout)["diagnostics"]]


def _sources(tmp_path: Path, events: list[dict[str, Any]]) -> dict[str, tuple[str, bytes | None]]:
    """The same stream as every kind of source ``check`` reads: (argument, stdin)."""
    sources: dict[str, tuple[str, bytes | None]] = {}
    for framing in ("sse", "jsonl", "json"):
        path = tmp_path / f"run.{framing}"
        path.write_bytes(encode(events, framing))
        sources[framing] = (str(path), None)
    sources["stdin"] = ("-", encode(events, "sse"))
    fixture = {"name": "answers", "stream": events, "expect": {}}
    sources["fixture"] = (str(write_json(tmp_path / "fixture.json", fixture)), None)
    return sources


@pytest.mark.parametrize("kind", ["sse", "jsonl", "json", "stdin", "fixture"])
def test_input_judges_the_frontend_tool_on_every_framing(tmp_path: Path, kind: str) -> None:
    source, stdin = _sources(tmp_path, ANSWERS_FRONTEND_TOOL)[kind]
    run_input = write_json(tmp_path / "input.json", RUN_INPUT)
    strict = ("--format", "json", "--fail-on", "warning")
    without = agui("check", source, *strict, stdin=stdin)
    assert _verdict(without) == (0, "completed", None), without.stderr
    judged = agui("check", source, "--input", run_input, *strict, stdin=stdin)
    assert _verdict(judged) == (1, "completed", None), judged.stderr
    (finding,) = [
        d for d in json.loads(judged.stdout)["diagnostics"] if d["code"] != "lint.run-report"
    ]
    assert finding["code"] == FRONTEND_ANSWERED
    assert "the run input's tool 'confirm'" in finding["message"]


def test_same_bytes_same_input_same_verdict_as_live(tmp_path: Path) -> None:
    recording = tmp_path / "run.sse"
    recording.write_bytes(encode(ANSWERS_FRONTEND_TOOL, "sse"))
    run_input = write_json(tmp_path / "input.json", RUN_INPUT)
    command = [sys.executable, "-m", "agui_pipeline", "serve", str(recording), "--port", "0"]
    with subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True) as server:
        try:
            assert server.stderr is not None
            url = server.stderr.readline().rsplit(" at ", 1)[1].strip()
            live = agui("check", url, "--input", run_input, "--format", "json")
        finally:
            server.terminate()
            server.wait(timeout=10)
    from_file = agui("check", recording, "--input", run_input, "--format", "json")
    assert _verdict(live) == _verdict(from_file)
    assert _verdict(from_file)[1:] == ("completed", None)
    assert FRONTEND_ANSWERED in _codes(from_file)
    live_report, file_report = json.loads(live.stdout), json.loads(from_file.stdout)
    assert live_report["diagnostics"] == [
        finding | dict.fromkeys(PLACE) for finding in file_report["diagnostics"]
    ]
    assert live_report["verdict"] == file_report["verdict"] | dict.fromkeys(PLACE)  # no lines


@pytest.mark.parametrize("kind", ["sse", "stdin", "fixture"])
def test_input_state_is_the_baseline(tmp_path: Path, kind: str) -> None:
    source, stdin = _sources(tmp_path, PATCHES_INPUT_STATE)[kind]
    without = agui("check", source, "--format", "json", stdin=stdin)
    codes = [d["code"] for d in json.loads(without.stdout)["diagnostics"]]
    assert codes == ["conversation.state-patch-failed"]
    run_input = write_json(tmp_path / "input.json", RUN_INPUT)
    judged = agui(
        "check", source, "--input", run_input, "--format", "json", "--conversation", stdin=stdin
    )
    report = json.loads(judged.stdout)
    assert judged.returncode == 0
    assert report["diagnostics"] == []
    assert report["conversation"]["state"] == {"count": 2}
    assert report["conversation"]["messages"][0]["id"] == "u1"  # the history, too


def test_a_fixture_brings_its_own_input_and_input_overrides_it(tmp_path: Path) -> None:
    fixture = write_json(
        tmp_path / "fixture.json",
        {"name": "frontend", "stream": ANSWERS_FRONTEND_TOOL, "input": RUN_INPUT, "expect": {}},
    )
    own = agui("check", fixture, "--format", "json")
    assert FRONTEND_ANSWERED in _codes(own)
    no_tools = write_json(tmp_path / "input.json", {**RUN_INPUT, "tools": []})
    overridden = agui("check", fixture, "--input", no_tools, "--format", "json")
    assert FRONTEND_ANSWERED not in _codes(overridden)
    assert _verdict(overridden)[1:] == ("completed", None)


def test_a_corpus_fixture_checked_directly() -> None:
    fixture = corpus_file("conformant-run-is-quiet")
    completed = agui("check", fixture)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert f"{fixture}: completed" in completed.stdout
    assert "diagnostics" not in completed.stdout  # quiet, as the fixture expects


def test_an_input_the_boundary_rejects_is_a_usage_error(tmp_path: Path) -> None:
    stream = tmp_path / "run.sse"
    stream.write_bytes(encode(ANSWERS_FRONTEND_TOOL, "sse"))
    bad = write_json(tmp_path / "input.json", {**RUN_INPUT, "messages": "not a list"})
    completed = agui("check", stream, "--input", bad)
    assert completed.returncode == 2
    assert "/messages" in completed.stderr
    not_json = tmp_path / "input.txt"
    not_json.write_text("{")
    assert agui("check", stream, "--input", not_json).returncode == 2
