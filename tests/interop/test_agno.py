"""Agno's AG-UI interface (``agno.os.interfaces.agui.AGUI``) over a scripted agno ``Model``.

Agno ships no fake model, so the script is a ``Model`` subclass, the way a provider is
added: it streams ``ModelResponse`` deltas (text in pieces, a tool call whole). The
agent keeps its sessions in agno's ``InMemoryDb``, which a paused run needs to resume.
What the integration does:

- a frontend tool pauses the run, which ends with no ``pendingToolCallIds``:
  ``lint.pending-omitted``; the second turn's tool message resumes it, cleanly;
- a backend tool that needs a person's confirmation (``requires_confirmation``) pauses
  the run the same way; the call names a tool the input never listed, so nothing says
  the run owes an answer (issue 23's ``lint.pending-unlisted-tool``). Resumed with the
  person's answer as a tool message, it streams the call again under a new parent
  message (``lint.reopen-disagrees``, ``lint.history-restreamed``: the Conversation
  appends the arguments a second time) and then the tool's own result, a second
  result for the call the input already answered (``lint.second-tool-result``);
- text, a backend tool, state, a model error (``RUN_ERROR``) and a repeated thread are
  clean.

Not covered: reasoning (agno streams reasoning from its reasoning agents, not from a
model's reasoning deltas, which its AG-UI interface drops).
"""

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from agui_pipeline import Outcome

from tests.interop.servers import drive, findings, run_input, shown, user

pytest.importorskip("agno.os.interfaces.agui", reason="the interop extra is not installed")

from agno.agent import Agent
from agno.db.in_memory import InMemoryDb
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse
from agno.os.interfaces.agui import AGUI
from agno.run import RunContext
from agno.tools import tool
from fastapi import FastAPI

pytestmark = pytest.mark.interop

PATH = "agui"
"""Where the interface's router takes run inputs."""

CALLS = {
    "weather": ("weather", '{"city": "Paris"}'),
    "confirm": ("confirm", '{"ok": true}'),
    "note": ("remember", '{"item": "milk"}'),
    "approve": ("approve", '{"item": "milk"}'),
}


def script(messages: list[Message]) -> Iterator[ModelResponse]:
    """The model's deltas: what the last message asks for."""
    last = messages[-1]
    if last.role == "tool":
        pieces: list[str] = ["Done: ", "it is sunny."]
    elif str(last.content).strip() == "fail":
        raise RuntimeError("the scripted model failed")
    elif (asked := str(last.content).strip()) in CALLS:
        name, arguments = CALLS[asked]
        call = {"id": f"call-{name}", "type": "function"}
        yield ModelResponse(
            role="assistant",
            tool_calls=[{**call, "function": {"name": name, "arguments": arguments}}],
        )
        return
    else:
        pieces = ["Hello ", "there."]
    for piece in pieces:
        yield ModelResponse(role="assistant", content=piece)


@dataclass
class ScriptedModel(Model):
    """A model provider whose 'API' is the script: only the async stream is used."""

    id: str = "scripted"
    name: str = "Scripted"
    provider: str = "scripted"

    def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        raise NotImplementedError("the AG-UI interface streams")

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        raise NotImplementedError("the AG-UI interface streams")

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        raise NotImplementedError("the AG-UI interface streams asynchronously")

    async def ainvoke_stream(  # type: ignore[override]
        self, messages: list[Message], **kwargs: Any
    ) -> AsyncIterator[ModelResponse]:
        for delta in script(messages):
            yield delta

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def remember(run_context: RunContext, item: str) -> str:
    """Add to the shared notes (the session state, which the interface sends back)."""
    assert run_context.session_state is not None
    run_context.session_state.setdefault("items", []).append(item)
    return "noted"


@tool(requires_confirmation=True)
def approve(item: str) -> str:
    """Buy an item once a person approves."""
    return f"bought {item}"


def app() -> FastAPI:
    agent = Agent(model=ScriptedModel(), tools=[weather, remember, approve], db=InMemoryDb())
    served = FastAPI()
    served.include_router(AGUI(agent=agent).get_router())
    return served


def test_text_backend_tool_and_error() -> None:
    text, backend, failed = drive(
        app(),
        run_input("text", user("u1", "hello")),
        run_input("tool", user("u1", "weather")),
        run_input("fail", user("u1", "fail")),
        path=PATH,
    )
    assert text.verdict.outcome is Outcome.COMPLETED
    assert shown(text) == [("user", "hello"), ("assistant", "Hello there.")]
    assert findings(text) == []
    assert backend.verdict.outcome is Outcome.COMPLETED
    # The tool call rides an empty assistant message; the result is JSON-encoded.
    assert shown(backend) == [
        ("user", "weather"),
        ("assistant", [("weather", '{"city": "Paris"}')]),
        ("tool", '"sunny in Paris"'),
        ("assistant", "Done: it is sunny."),
    ]
    assert findings(backend) == []
    assert failed.verdict.outcome is Outcome.COMPLETED
    assert failed.runs[-1].status == "error"
    assert findings(failed) == []


def test_state_round_trip() -> None:
    asked = {**run_input("state", user("u1", "note")), "state": {"items": ["eggs"]}}
    (noted,) = drive(app(), asked, path=PATH)
    assert noted.verdict.outcome is Outcome.COMPLETED
    assert noted.conversation.state == {"items": ["eggs", "milk"]}
    assert shown(noted)[-2:] == [("tool", '"noted"'), ("assistant", "Done: it is sunny.")]
    assert findings(noted) == []


def test_frontend_tool_and_the_second_turn_answering_it() -> None:
    served = app()
    (first,) = drive(
        served, run_input("front", user("u1", "confirm"), tools=("confirm",)), path=PATH
    )
    assert first.verdict.outcome is Outcome.COMPLETED
    assert shown(first) == [("user", "confirm"), ("assistant", [("confirm", '{"ok": true}')])]
    assert findings(first) == ["lint.pending-omitted"]
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
    assert findings(second) == []


def test_confirmation_pauses_and_the_answer_resumes() -> None:
    served = app()
    (paused,) = drive(served, run_input("hitl", user("u1", "approve")), path=PATH)
    assert paused.verdict.outcome is Outcome.COMPLETED
    assert paused.runs[-1].outcome is None  # a plain RUN_FINISHED, no interrupt outcome
    assert shown(paused) == [("user", "approve"), ("assistant", [("approve", '{"item": "milk"}')])]
    assert findings(paused) == ["lint.pending-unlisted-tool"]
    answer = {
        "id": "t1",
        "role": "tool",
        "toolCallId": "call-approve",
        "content": '{"accepted": true}',
    }
    history = [*paused.conversation.messages, answer]
    (resumed,) = drive(served, {**run_input("hitl", *history), "runId": "r2"}, path=PATH)
    assert resumed.verdict.outcome is Outcome.COMPLETED
    assert shown(resumed) == [
        ("user", "approve"),
        ("assistant", [("approve", '{"item": "milk"}{"item": "milk"}')]),
        ("tool", '{"accepted": true}'),
        ("assistant", ""),
        ("tool", '"bought milk"'),
        ("assistant", "Done: it is sunny."),
    ]
    assert findings(resumed) == [
        "lint.history-restreamed",
        "lint.reopen-disagrees",
        "lint.second-tool-result",
    ]


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
    assert findings(second) == []
