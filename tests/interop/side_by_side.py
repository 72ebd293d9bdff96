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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
from agui_pipeline.run_input import prepare_input
from agui_pipeline.serve import BackgroundServer

from tests.interop.servers import drive, run_input, user

PEER = "ag-ui-validate"
"""The anchor validator (the interop extra pins 0.4.0)."""

SAME_FINDING = {"AGUI204": "lint.arguments-not-json"}
"""ag-ui-validate's producer rules and the lint code that reports the same fault."""


@dataclass(frozen=True)
class Capture:
    """One response body as a framework sent it, with the run input that asked for it."""

    framework: str
    scenario: str
    stream: Path
    run_input: Path


Scenario = tuple[str, Callable[[Any], dict[str, Any]]]


def _ask(thread: str, asked: str, *tools: str) -> Callable[[Any], dict[str, Any]]:
    return lambda _app: run_input(thread, user("u1", asked), tools=tools)


def _second_turn(app: Any) -> dict[str, Any]:
    """The input answering the frontend call the first turn left pending."""
    asked = run_input("turns", user("u1", "confirm"), tools=("confirm",))
    (first,) = drive(app, asked)
    (call,) = [
        call["id"]
        for message in first.conversation.messages
        for call in message.get("toolCalls") or ()
    ]
    history = [m for m in first.conversation.messages if m["role"] != "reasoning"]
    answer = {"id": "t1", "role": "tool", "toolCallId": call, "content": "answered: yes"}
    return {**run_input("turns", *history, answer, tools=("confirm",)), "runId": "r2"}


SCENARIOS: list[Scenario] = [
    ("text", _ask("text", "hello")),
    ("backend tool", _ask("tool", "weather")),
    ("reasoning", _ask("think", "think")),
    ("model error", _ask("fail", "fail")),
    ("state", _ask("state", "note")),
    ("frontend tool", _ask("front", "confirm", "confirm")),
    ("second turn", _second_turn),
]


def record(framework: str, app: Any, into: Path) -> list[Capture]:
    """Every scenario's response from ``app``, as sent, each beside its run input."""
    captures = []
    for number, (scenario, make_input) in enumerate(SCENARIOS):
        body = prepare_input(make_input(app)).body  # what HttpAgent would send
        with BackgroundServer(app) as server:
            response = httpx.post(
                server.url, json=body, headers={"Accept": "text/event-stream"}, timeout=60
            )
        response.raise_for_status()
        stem = into / f"{framework}-{number}"
        stream, sent = stem.with_suffix(".sse"), stem.with_suffix(".input.json")
        stream.write_bytes(response.content)
        sent.write_bytes(orjson.dumps(body))
        captures.append(Capture(framework, scenario, stream, sent))
    return captures


def _tool(name: str) -> str:
    """The console script beside this interpreter (the venv's), else on PATH."""
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} is not installed (pip install -e '.[interop]')")
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

    from tests.interop import test_langgraph, test_pydantic_ai

    frameworks = {"pydantic-ai": test_pydantic_ai.app, "langgraph": test_langgraph.app}
    with tempfile.TemporaryDirectory() as scratch:
        print(f"| framework | scenario | {PEER} (warnings, errors) | agui-pipeline findings |")
        print("|---|---|---|---|")
        for framework, app in frameworks.items():
            for capture in record(framework, app(), Path(scratch)):
                peer = ", ".join(codes(peer_findings(capture))) or "none"
                verdict, ours = our_findings(capture)
                mine = ", ".join(f"`{code}`" for code in codes(ours)) or "none"
                print(f"| {framework} | {capture.scenario} | {peer} | {mine} ({verdict}) |")


if __name__ == "__main__":
    main()
