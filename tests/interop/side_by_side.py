"""agui-pipeline's producer lint beside ag-ui-validate, over the same real captures.

Each interop framework serves its scenarios on 127.0.0.1; every response body is
recorded as it came off the wire, with the run input that asked for it. Then both
command-line tools judge each recording: ``ag-ui-validate FILE --json`` (it reads
the stream only) and ``agui-pipeline check FILE --input INPUT --format json``.
``tests/interop/test_side_by_side.py`` asserts the comparison; run this module to
print it as a table::

    python -m tests.interop.side_by_side
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
from agui_pipeline.http.serve import BackgroundServer
from agui_pipeline.model.run_input import prepare_input

from tests.interop.servers import drive_url, node_server, run_input, user

PEER = "ag-ui-validate"
"""The anchor validator (the interop extra pins 0.4.0)."""

SAME_FINDING = {
    "AGUI204": "lint.arguments-not-json",
    "AGUI207": "lint.result-for-unknown-call",  # a TOOL_CALL_RESULT for a call never started
}
"""ag-ui-validate's producer rules and the lint code that reports the same fault."""


@dataclass(frozen=True)
class Capture:
    """One response body as a framework sent it, with the run input that asked for it."""

    framework: str
    scenario: str
    stream: Path
    run_input: Path


Scenario = Callable[[str], dict[str, Any]]
"""The run input of a scenario, given the server's URL (a later turn drives the first)."""


def _ask(thread: str, asked: str, *tools: str) -> Scenario:
    return lambda _url: run_input(thread, user("u1", asked), tools=tools)


def _second_turn(url: str) -> dict[str, Any]:
    """The input answering the frontend call the first turn left pending."""
    asked = run_input("turns", user("u1", "confirm"), tools=("confirm",))
    (first,) = drive_url(url, asked)
    (call,) = [
        call["id"]
        for message in first.conversation.messages
        for call in message.get("toolCalls") or ()
    ]
    history = [m for m in first.conversation.messages if m["role"] != "reasoning"]
    answer = {"id": "t1", "role": "tool", "toolCallId": call, "content": "answered: yes"}
    return {**run_input("turns", *history, answer, tools=("confirm",)), "runId": "r2"}


def _repeated_thread(url: str) -> dict[str, Any]:
    """The input of a thread's second run, its first run's Conversation as history."""
    (first,) = drive_url(url, run_input("again", user("u1", "hello")))
    return {**run_input("again", *first.conversation.messages, user("u2", "hello")), "runId": "r2"}


def _resume(url: str) -> dict[str, Any]:
    """The input resuming a run that stopped for a person's approval.

    With the interrupt outcome, its ``resume`` entry; without (the call is left
    pending), a tool message answering the call.
    """
    (asked,) = drive_url(url, run_input("hitl", user("u1", "approve")))
    resumed = {**run_input("hitl", *asked.conversation.messages), "runId": "r2"}
    if asked.conversation.interrupts:
        (interrupt,) = asked.conversation.interrupts
        entry = {
            "interruptId": interrupt["id"],
            "status": "resolved",
            "payload": {"approved": True},
        }
        return {**resumed, "resume": [entry]}
    answer = {
        "id": "t1",
        "role": "tool",
        "toolCallId": "call-approve",
        "content": '{"accepted": true}',
    }
    return {**resumed, "messages": [*resumed["messages"], answer]}


SCENARIOS: dict[str, Scenario] = {
    "text": _ask("text", "hello"),
    "backend tool": _ask("tool", "weather"),
    "reasoning": _ask("think", "think"),
    "model error": _ask("fail", "fail"),
    "state": _ask("state", "note"),
    "frontend tool": _ask("front", "confirm", "confirm"),
    "second turn": _second_turn,
    "repeated thread": _repeated_thread,
    "interrupt": _ask("hitl", "approve"),
    "resume": _resume,
}

FRAMEWORKS: dict[str, list[str]] = {
    "pydantic-ai": [*SCENARIOS][:7],
    "langgraph": [*SCENARIOS][:7],
    "llamaindex": [
        "text",
        "backend tool",
        "model error",
        "state",
        "frontend tool",
        "second turn",
        "repeated thread",
    ],
    "agno": [
        "text",
        "backend tool",
        "model error",
        "state",
        "frontend tool",
        "second turn",
        "repeated thread",
        "interrupt",
        "resume",
    ],
    "mastra": [
        "text",
        "backend tool",
        "reasoning",
        "model error",
        "frontend tool",
        "second turn",
        "repeated thread",
        "interrupt",
        "resume",
    ],
}
"""Each framework's scenarios: the ones its integration supports (its test module says)."""


@contextmanager
def _asgi(app: Any, path: str = "") -> Iterator[str]:
    with BackgroundServer(app) as server:
        yield server.url + path


def serve(framework: str) -> AbstractContextManager[str]:
    """Start ``framework``'s server (its test module's); the context yields the URL."""
    if framework == "pydantic-ai":
        from tests.interop import test_pydantic_ai

        return _asgi(test_pydantic_ai.app())
    if framework == "langgraph":
        from tests.interop import test_langgraph

        return _asgi(test_langgraph.app())
    if framework == "llamaindex":
        from tests.interop import test_llamaindex

        return _asgi(test_llamaindex.app(), test_llamaindex.PATH)
    if framework == "agno":
        from tests.interop import test_agno

        return _asgi(test_agno.app(), test_agno.PATH)
    if framework == "mastra":
        return node_server("mastra_server.mjs")
    raise ValueError(f"no such framework: {framework}")


def record(framework: str, into: Path) -> list[Capture]:
    """Every scenario's response from ``framework``, as sent, each beside its run input.

    A body cut short (a server that drops the connection after RUN_ERROR) is kept as far
    as it came.
    """
    captures = []
    with serve(framework) as url:
        for number, scenario in enumerate(FRAMEWORKS[framework]):
            body = prepare_input(SCENARIOS[scenario](url)).body  # what HttpAgent would send
            received = bytearray()
            with httpx.stream(
                "POST", url, json=body, headers={"Accept": "text/event-stream"}, timeout=60
            ) as response:
                response.raise_for_status()
                try:
                    for chunk in response.iter_bytes():
                        received += chunk
                except httpx.RemoteProtocolError:
                    pass
            stem = into / f"{framework}-{number}"
            stream, sent = stem.with_suffix(".sse"), stem.with_suffix(".input.json")
            stream.write_bytes(bytes(received))
            sent.write_bytes(orjson.dumps(body))
            captures.append(Capture(framework, scenario, stream, sent))
    return captures


def _tool(name: str) -> str:
    """The console script beside this interpreter (the venv's), else on PATH."""
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} is not installed (pip install -e . --group interop)")
    return found


def peer_findings(capture: Capture) -> list[str]:
    """ag-ui-validate's warnings and errors: ``RULE: message``."""
    ran = subprocess.run(
        [_tool(PEER), str(capture.stream), "--json"], capture_output=True, check=False
    )
    if ran.returncode not in (0, 1):
        raise RuntimeError(f"{PEER} failed on {capture.stream}: {ran.stderr.decode()[-500:]}")
    report = orjson.loads(ran.stdout)
    return [
        f"{d['rule']}: {d['message']}"
        for d in report["diagnostics"]
        if d["severity"] in ("warning", "error")
    ]


def our_findings(capture: Capture) -> tuple[str, list[str]]:
    """``check``'s verdict and its producer findings (lint warnings): ``code: message``."""
    ran = subprocess.run(
        [
            _tool("agui-pipeline"),
            "check",
            str(capture.stream),
            "--input",
            str(capture.run_input),
            "--format",
            "json",
        ],
        capture_output=True,
        check=False,
    )
    if ran.returncode not in (0, 1):
        raise RuntimeError(f"check failed on {capture.stream}: {ran.stderr.decode()[-500:]}")
    report = orjson.loads(ran.stdout)
    findings = [
        f"{d['code']}: {d['message']}"
        for d in report["diagnostics"]
        if d["code"].startswith("lint.") and d["severity"] != "info"
    ]
    return report["verdict"]["outcome"], findings


def codes(findings: list[str]) -> list[str]:
    return sorted({finding.split(":", 1)[0] for finding in findings})


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        print(f"| framework | scenario | {PEER} (warnings, errors) | agui-pipeline findings |")
        print("|---|---|---|---|")
        for framework in FRAMEWORKS:
            for capture in record(framework, Path(scratch)):
                peer = ", ".join(codes(peer_findings(capture))) or "none"
                verdict, ours = our_findings(capture)
                mine = ", ".join(f"`{code}`" for code in codes(ours)) or "none"
                print(f"| {framework} | {capture.scenario} | {peer} | {mine} ({verdict}) |")


if __name__ == "__main__":
    main()
