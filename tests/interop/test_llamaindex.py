"""LlamaIndex's AG-UI workflow (``llama-index-protocols-ag-ui``) over ``MockFunctionCallingLLM``.

The router's own chat workflow (``get_ag_ui_workflow_router``) runs the backend tools
and passes the input's tools through as frontend tools; the model is llama-index's
public mock, answering from a script. What the integration does:

- every ``MESSAGES_SNAPSHOT`` restates each message it streamed (and each one before)
  under a fresh id, and it sends one after every step: the streamed assistant message
  is removed and re-added, and a backend tool's result, first carried by one snapshot,
  comes back under a new id in the next;
- it streams a tool call only as ``TOOL_CALL_CHUNK``, and its result only inside a
  snapshot (never ``TOOL_CALL_RESULT``);
- it finishes a run that called a frontend tool with no ``pendingToolCallIds``:
  ``lint.pending-omitted``;
- on a model error it sends ``RUN_ERROR`` and then drops the connection mid-body:
  ``transport.connection-lost``;
- a second turn's tool answer reaches its model as a user message (its own
  conversion), so the model answers it as such.

Not covered: reasoning (the workflow streams no reasoning) and interrupts (it has none).
"""

from typing import Any

import pytest
from agui_pipeline import Outcome

from tests.interop.servers import drive, findings, run_input, shown, user

pytest.importorskip("llama_index.protocols.ag_ui", reason="the interop extra is not installed")

from fastapi import FastAPI
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.workflow import Context
from llama_index.protocols.ag_ui.router import get_ag_ui_workflow_router

pytestmark = pytest.mark.interop

PATH = "run"
"""Where the router takes run inputs."""

RESTATED = "lint.snapshot-renames-message"
"""Each snapshot restates what the run streamed under new ids (issue 23's lint)."""

CALLS = {
    "weather": ("weather", {"city": "Paris"}),
    "confirm": ("confirm", {"ok": True}),
    "note": ("remember", {"item": "milk"}),
}


def scripted(messages: list[ChatMessage], **_: Any) -> ChatMessage:
    """The model: answers what the last message asks for (the workflow may prefix state)."""
    last = messages[-1]
    asked = (last.content or "").strip()
    if last.role.value == "tool" or asked.startswith("answered"):
        return ChatMessage(role="assistant", content="Done: it is sunny.")
    if asked.endswith("fail"):
        raise RuntimeError("the scripted model failed")
    for word, (name, arguments) in CALLS.items():
        if asked.endswith(word):
            call = ToolCallBlock(tool_call_id=f"call-{name}", tool_name=name, tool_kwargs=arguments)
            return ChatMessage(role="assistant", blocks=[call])
    return ChatMessage(role="assistant", content="Hello there.")


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


async def remember(ctx: Context, item: str) -> str:
    """Add to the shared notes (the workflow's state, sent back as STATE_SNAPSHOT)."""
    state = await ctx.store.get("state", default={})
    state.setdefault("items", []).append(item)
    await ctx.store.set("state", state)
    return "noted"


def app() -> FastAPI:
    model = MockFunctionCallingLLM(response_generator=scripted)
    served = FastAPI()
    served.include_router(get_ag_ui_workflow_router(llm=model, backend_tools=[weather, remember]))
    return served


def test_text_backend_tool_and_error() -> None:
    text, tool, failed = drive(
        app(),
        run_input("text", user("u1", "hello")),
        run_input("tool", user("u1", "weather")),
        run_input("fail", user("u1", "fail")),
        path=PATH,
    )
    assert text.verdict.outcome is Outcome.COMPLETED
    assert shown(text) == [("user", "hello"), ("assistant", "Hello there.")]
    assert findings(text) == [RESTATED]
    assert tool.verdict.outcome is Outcome.COMPLETED
    assert shown(tool) == [
        ("user", "weather"),
        ("assistant", [("weather", '{"city": "Paris"}')]),
        ("tool", "sunny in Paris"),
        ("assistant", "Done: it is sunny."),
    ]
    # One result in the Conversation, though two snapshots carried it under two ids.
    assert findings(tool) == [RESTATED]
    assert failed.verdict.outcome is Outcome.COMPLETED  # RUN_ERROR arrived before the cut
    assert failed.runs[-1].status == "error"
    assert shown(failed) == [("user", "fail")]
    assert findings(failed) == ["transport.connection-lost"]


def test_state_round_trip() -> None:
    asked = {**run_input("state", user("u1", "note")), "state": {"items": ["eggs"]}}
    (noted,) = drive(app(), asked, path=PATH)
    assert noted.verdict.outcome is Outcome.COMPLETED
    assert noted.conversation.state == {"items": ["eggs", "milk"]}
    assert shown(noted)[1:] == [
        ("assistant", [("remember", '{"item": "milk"}')]),
        ("tool", "noted"),
        ("assistant", "Done: it is sunny."),
    ]
    assert findings(noted) == [RESTATED]


def test_frontend_tool_and_the_second_turn_answering_it() -> None:
    served = app()
    asked = run_input("front", user("u1", "confirm"), tools=("confirm",))
    (first,) = drive(served, asked, path=PATH)
    assert first.verdict.outcome is Outcome.COMPLETED
    assert shown(first) == [("user", "confirm"), ("assistant", [("confirm", '{"ok": true}')])]
    assert findings(first) == ["lint.pending-omitted", RESTATED]
    answer = {"id": "t1", "role": "tool", "toolCallId": "call-confirm", "content": "answered: yes"}
    history = [*first.conversation.messages, answer]
    (second,) = drive(
        served, {**run_input("front", *history, tools=("confirm",)), "runId": "r2"}, path=PATH
    )
    assert second.verdict.outcome is Outcome.COMPLETED
    assert shown(second) == [
        ("user", "confirm"),
        ("assistant", [("confirm", '{"ok": true}')]),
        ("tool", "answered: yes"),
        ("assistant", "Done: it is sunny."),
    ]
    assert findings(second) == [RESTATED]


def test_a_repeated_thread_keeps_its_history() -> None:
    served = app()
    (first,) = drive(served, run_input("again", user("u1", "hello")), path=PATH)
    history = [*first.conversation.messages, user("u2", "hello")]
    (second,) = drive(served, {**run_input("again", *history), "runId": "r2"}, path=PATH)
    assert second.verdict.outcome is Outcome.COMPLETED
    assert shown(second) == [
        ("user", "hello"),
        ("assistant", "Hello there."),
        ("user", "hello"),
        ("assistant", "Hello there."),
    ]
    assert findings(second) == [RESTATED]
