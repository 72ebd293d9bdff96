"""The interop tier: real AG-UI server integrations on 127.0.0.1, driven through HttpAgent.

Each framework runs its own AG-UI integration over a scripted model (no network),
served by uvicorn from a background thread that the test starts and stops. The
frameworks come from the ``interop`` extra (``pip install -e '.[interop]'``); without
them these tests are skipped, and ``pytest -m interop`` runs only them.
"""

from __future__ import annotations

from typing import Any

import anyio
from agui_pipeline import RunResult
from agui_pipeline.client import HttpAgent
from agui_pipeline.serve import BackgroundServer


def drive(app: Any, *run_inputs: dict[str, Any]) -> list[RunResult]:
    """Serve ``app`` on 127.0.0.1 for as long as it takes to POST each input in turn."""

    async def go() -> list[RunResult]:
        with BackgroundServer(app) as server:
            async with HttpAgent(server.url) as agent:
                return [await agent.run(run_input) for run_input in run_inputs]

    return anyio.run(go)


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
