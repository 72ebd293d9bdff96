"""The interop tier: real AG-UI server integrations on 127.0.0.1, driven through HttpAgent.

Each framework runs its own AG-UI integration over a scripted model (no network).
A Python framework is served by uvicorn from a background thread that the test starts
and stops; a TypeScript one by a node script (``node/``) that the test starts as a
child process and stops. The Python frameworks come from the ``interop`` extra
(``pip install -e . --group interop``), the node packages from ``node/package-lock.json``
(``npm ci`` in ``node/``); without them these tests are skipped, and
``pytest -m interop`` runs only them.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from agui_pipeline import RunResult
from agui_pipeline.http.client import HttpAgent
from agui_pipeline.http.serve import BackgroundServer

NODE_DIR = Path(__file__).with_name("node")
"""The TypeScript servers and their pinned packages (``package-lock.json``)."""


def drive(app: Any, *run_inputs: dict[str, Any], path: str = "") -> list[RunResult]:
    """Serve ``app`` on 127.0.0.1 for as long as it takes to POST each input in turn."""
    with BackgroundServer(app) as server:
        return drive_url(server.url + path, *run_inputs)


def drive_url(url: str, *run_inputs: dict[str, Any]) -> list[RunResult]:
    """POST each input in turn to a server already listening at ``url``."""

    async def go() -> list[RunResult]:
        async with HttpAgent(url) as agent:
            return [await agent.run(run_input) for run_input in run_inputs]

    return anyio.run(go)


def node_missing() -> str | None:
    """Why the TypeScript servers cannot run here, or ``None``.

    Their packages are installed by ``npm ci`` in ``node/`` (``.ci/run`` does it before
    the interop tier), not by the tests: the default test run, which has no interop
    extra either, skips them.
    """
    if shutil.which("node") is None:
        return "node not found: the TypeScript frameworks are skipped"
    if not (NODE_DIR / "node_modules" / ".package-lock.json").is_file():
        return f"the TypeScript frameworks are not installed: run `npm ci` in {NODE_DIR}"
    return None


@contextmanager
def node_server(script: str) -> Iterator[str]:
    """Run ``node/<script>`` until leaving; yield the URL it printed once listening.

    The script binds a free port on 127.0.0.1 and prints ``listening URL`` first; its
    output goes to a file, so a chatty framework cannot fill a pipe and stall it.
    """
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            ["node", str(NODE_DIR / script)], cwd=NODE_DIR, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            yield _listening(process, log)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _listening(process: subprocess.Popen[bytes], log: Any, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log.seek(0)
        for line in log:
            if line.startswith("listening "):
                return str(line.split()[1])
        if process.poll() is not None:
            break
        time.sleep(0.05)
    log.seek(0)
    raise RuntimeError(f"the node server did not start: {log.read()[-2000:]}")


def lint_codes(result: RunResult) -> list[str]:
    """The producer findings (lint warnings) of one run, in order."""
    return [
        d.code for d in result.diagnostics if d.code.startswith("lint.") and d.severity != "info"
    ]


def shown(result: RunResult) -> list[tuple[str, Any]]:
    """The Conversation a UI would show: each message's role and content or tool calls."""
    messages = result.conversation.messages
    return [
        (
            m["role"],
            [(c["function"]["name"], c["function"]["arguments"]) for c in m["toolCalls"]]
            if m.get("toolCalls")
            else m.get("content"),
        )
        for m in messages
    ]


def run_input(
    thread: str, *messages: dict[str, Any], tools: tuple[str, ...] = ()
) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": f"{thread}-run",
        "messages": list(messages),
        "tools": [
            {
                "name": name,
                "description": f"the application's {name}",
                "parameters": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
            }
            for name in tools
        ],
        "state": {},
        "context": [],
        "forwardedProps": {},
    }


def user(message_id: str, content: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": content}


def findings(result: RunResult) -> list[str]:
    """Every code the run earned above info (lint, transport...), each once, sorted."""
    return sorted({d.code for d in result.diagnostics if d.severity != "info"})
