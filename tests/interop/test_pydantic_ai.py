"""pydantic-ai's AG-UI adapter (``AGUIAdapter.dispatch_request``) over a scripted FunctionModel.

Scenarios: text, backend tool, state (a tool's STATE_SNAPSHOT), reasoning, a model
error, a frontend tool and the second turn answering it. pydantic-ai gets every
finding right that these scenarios can show: its arguments are
JSON, it names pending frontend calls, it restates nothing it streamed differently. So
each scenario asserts the verdict, the Conversation, and no lint finding at all.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from agui_pipeline import Outcome

from tests.interop.servers import drive, lint_codes, run_input, shown, user

pytest.importorskip("pydantic_ai.ui.ag_ui", reason="the interop extra is not installed")

from ag_ui.core import EventType, StateSnapshotEvent
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext, ToolReturn
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import (
    AgentInfo,
    DeltaThinkingPart,
    DeltaToolCall,
)
from pydantic_ai.models.function import FunctionModel as PydanticFunctionModel
from pydantic_ai.ui import StateDeps
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

pytestmark = pytest.mark.interop


async def scripted(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    """The model: what the last user message asks for, streamed in pieces."""
    last = messages[-1].parts[-1]
    if last.part_kind in ("tool-return", "retry-prompt") or "answered" in str(last):
        yield "Done: "
        yield "it is sunny."
        return
    asked = str(getattr(last, "content", ""))
    if asked == "fail":
        raise RuntimeError("the scripted model failed")
    if asked == "weather":
        yield {0: DeltaToolCall(name="weather", json_args='{"city": ')}
        yield {0: DeltaToolCall(json_args='"Paris"}')}
    elif asked == "confirm":
        yield {0: DeltaToolCall(name="confirm", json_args='{"ok": ')}
        yield {0: DeltaToolCall(json_args="true}")}
    elif asked == "note":
        yield {0: DeltaToolCall(name="remember", json_args='{"item": "milk"}')}
    elif asked == "think":
        yield {0: DeltaThinkingPart(content="Let me ")}
        yield {0: DeltaThinkingPart(content="think.")}
        yield "Thought about it."
    else:
        yield "Hello "
        yield "there."


class Notes(BaseModel):
    """The shared state: what the agent was asked to remember."""

    items: list[str] = []


def app() -> Starlette:
    agent = Agent(PydanticFunctionModel(stream_function=scripted), deps_type=StateDeps[Notes])

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    @agent.tool
    def remember(ctx: RunContext[StateDeps[Notes]], item: str) -> ToolReturn:
        """Add to the shared notes, and send the application the new state."""
        ctx.deps.state.items.append(item)
        state = StateSnapshotEvent(
            type=EventType.STATE_SNAPSHOT, snapshot=ctx.deps.state.model_dump()
        )
        return ToolReturn(return_value="noted", metadata=[state])

    async def endpoint(request: Request) -> Response:
        return await AGUIAdapter.dispatch_request(request, agent=agent, deps=StateDeps(Notes()))

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])])


def test_text_backend_tool_reasoning_and_error() -> None:
    text, tool, think, failed = drive(
        app(),
        run_input("text", user("u1", "hello")),
        run_input("tool", user("u1", "weather")),
        run_input("think", user("u1", "think")),
        run_input("fail", user("u1", "fail")),
    )
    assert text.verdict.outcome is Outcome.COMPLETED
    assert shown(text) == [("user", "hello"), ("assistant", "Hello there.")]
    assert tool.verdict.outcome is Outcome.COMPLETED
    assert shown(tool) == [
        ("user", "weather"),
        ("assistant", [("weather", '{"city": "Paris"}')]),
        ("tool", "sunny in Paris"),
        ("assistant", "Done: it is sunny."),
    ]
    assert think.verdict.outcome is Outcome.COMPLETED
    assert ("reasoning", "Let me think.") in shown(think)
    assert shown(think)[-1] == ("assistant", "Thought about it.")
    assert failed.verdict.outcome is Outcome.COMPLETED  # RUN_ERROR is a verdict on the run
    assert failed.runs[-1].status == "error"
    for result in (text, tool, think, failed):
        assert lint_codes(result) == [], result.diagnostics


def test_frontend_tool_round_trip() -> None:
    asked = run_input("front", user("u1", "confirm"), tools=("confirm",))
    (first,) = drive(app(), asked)
    assert first.verdict.outcome is Outcome.COMPLETED
    assert first.runs[-1].outcome is not None
    (pending,) = first.runs[-1].outcome["pendingToolCallIds"]
    assert shown(first) == [("user", "confirm"), ("assistant", [("confirm", '{"ok": true}')])]
    assert lint_codes(first) == []
    # The second turn: the application answers the call in the next run's input.
    history = [m for m in first.conversation.messages if m["role"] != "reasoning"]
    answer = {"id": "t1", "role": "tool", "toolCallId": pending, "content": "answered: yes"}
    (second,) = drive(app(), run_input("front", *history, answer, tools=("confirm",)))
    assert second.verdict.outcome is Outcome.COMPLETED
    assert shown(second)[-1] == ("assistant", "Done: it is sunny.")
    assert lint_codes(second) == []


def test_state_round_trip() -> None:
    asked = {**run_input("state", user("u1", "note")), "state": {"items": ["eggs"]}}
    (noted,) = drive(app(), asked)
    assert noted.verdict.outcome is Outcome.COMPLETED
    assert noted.conversation.state == {"items": ["eggs", "milk"]}
    assert shown(noted)[-2:] == [("tool", "noted"), ("assistant", "Done: it is sunny.")]
    assert lint_codes(noted) == []
