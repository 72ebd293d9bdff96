"""LangGraph's AG-UI integration (``ag_ui_langgraph``) over a scripted chat model.

The graph is the usual two nodes — a chat model, and a node that runs the backend
tool — with a chat model that streams scripted replies: text word by word, tool
calls as argument chunks. What the integration gets wrong shows as findings:

- it drops the argument text of a tool call's first chunk (``{"city": `` never
  reaches the stream), so the arguments are not JSON at ``TOOL_CALL_END``, and the
  final ``MESSAGES_SNAPSHOT`` restates the right ones: ``lint.arguments-not-json``
  and ``lint.snapshot-contradicts-stream``;
- it finishes a run that called a frontend tool with no ``pendingToolCallIds``:
  ``lint.pending-omitted``.

Text, reasoning, an error and a second turn answering a frontend call are clean.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from agui_pipeline import Outcome

from tests.interop.servers import drive, lint_codes, run_input, shown, user

pytest.importorskip("ag_ui_langgraph", reason="the interop extra is not installed")

from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

pytestmark = pytest.mark.interop

SNAPSHOT_AND_JSON = ["lint.snapshot-contradicts-stream", "lint.arguments-not-json"]


class ScriptedChatModel(BaseChatModel):
    """Answers what the last human message asks for; streams it in pieces."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _chunks(self, messages: list[BaseMessage]) -> Iterator[AIMessageChunk]:
        last = messages[-1]
        asked = str(last.content)
        if isinstance(last, ToolMessage):
            words = ["Done:", "it", "is", "sunny."]
        elif asked == "fail":
            raise RuntimeError("the scripted model failed")
        elif asked == "think":  # thinking blocks, then the answer, as content parts
            for kind, piece, index in (
                ("thinking", "Let me ", 0),
                ("thinking", "think.", 0),
                ("text", "Thought ", 1),
                ("text", "about it.", 1),
            ):
                yield AIMessageChunk(content=[{"type": kind, kind: piece, "index": index}])
            return
        elif asked in ("weather", "confirm"):
            name, pieces = (
                ("weather", ['{"city": ', '"Paris"}'])
                if asked == "weather"
                else ("confirm", ['{"ok": ', "true}"])
            )
            for number, piece in enumerate(pieces):
                first = number == 0
                chunk = {"name": name if first else None, "args": piece, "index": 0}
                chunk["id"] = f"call-{name}" if first else None
                yield AIMessageChunk(content="", tool_call_chunks=[chunk])  # type: ignore[list-item]
            return
        else:
            words = ["Hello", "there."]
        for number, word in enumerate(words):
            yield AIMessageChunk(content=word if number == 0 else " " + word)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        whole: AIMessageChunk | None = None
        for chunk in self._chunks(messages):
            whole = chunk if whole is None else whole + chunk
        assert whole is not None
        reply = AIMessage(content=whole.content, tool_calls=whole.tool_calls)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _stream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages):
            yield ChatGenerationChunk(message=chunk)


def app() -> FastAPI:
    model = ScriptedChatModel()

    async def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    async def tools(state: MessagesState) -> dict[str, Any]:
        calls = state["messages"][-1].tool_calls  # type: ignore[attr-defined]
        return {
            "messages": [
                ToolMessage(content=f"sunny in {c['args']['city']}", tool_call_id=c["id"])
                for c in calls
                if c["name"] == "weather"
            ]
        }

    def route(state: MessagesState) -> str:
        calls = getattr(state["messages"][-1], "tool_calls", None) or []
        return "tools" if any(c["name"] == "weather" for c in calls) else END

    graph = StateGraph(MessagesState)
    graph.add_node("chat", chat)
    graph.add_node("tools", tools)
    graph.add_edge(START, "chat")
    graph.add_conditional_edges("chat", route)
    graph.add_edge("tools", "chat")
    served = FastAPI()
    agent = LangGraphAgent(name="scripted", graph=graph.compile(checkpointer=MemorySaver()))
    add_langgraph_fastapi_endpoint(served, agent, "/")
    return served


def test_text_and_error() -> None:
    text, failed = drive(
        app(), run_input("text", user("u1", "hello")), run_input("fail", user("u1", "fail"))
    )
    assert text.verdict.outcome is Outcome.COMPLETED
    assert shown(text) == [("user", "hello"), ("assistant", "Hello there.")]
    assert lint_codes(text) == []
    assert failed.verdict.outcome is Outcome.COMPLETED
    assert failed.runs[-1].status == "error"
    assert lint_codes(failed) == []


def test_reasoning() -> None:
    (think,) = drive(app(), run_input("think", user("u1", "think")))
    assert think.verdict.outcome is Outcome.COMPLETED
    # The final snapshot leaves the reasoning message out, which keeps it (state.mdx).
    assert shown(think) == [
        ("user", "think"),
        ("reasoning", "Let me think."),
        ("assistant", "Thought about it."),
    ]
    assert lint_codes(think) == []


def test_backend_tool_dropped_first_chunk_and_state() -> None:
    (tool,) = drive(app(), run_input("tool", user("u1", "weather")))
    assert tool.verdict.outcome is Outcome.COMPLETED
    # The snapshot repaired the arguments the stream broke; the result lands last.
    assert shown(tool) == [
        ("user", "weather"),
        ("assistant", [("weather", '{"city": "Paris"}')]),
        ("assistant", "Done: it is sunny."),
        ("tool", "sunny in Paris"),
    ]
    assert lint_codes(tool) == SNAPSHOT_AND_JSON
    streamed = next(d for d in tool.diagnostics if d.code == "lint.snapshot-contradicts-stream")
    assert "'\"Paris\"}'" in streamed.message and '{"city": "Paris"}' in streamed.message
    # The graph's state rides STATE_SNAPSHOT: the Conversation holds it.
    assert tool.conversation.state["messages"]


def test_frontend_tool_leaves_pending_unnamed() -> None:
    (front,) = drive(app(), run_input("front", user("u1", "confirm"), tools=("confirm",)))
    assert front.verdict.outcome is Outcome.COMPLETED
    assert shown(front) == [("user", "confirm"), ("assistant", [("confirm", '{"ok": true}')])]
    assert lint_codes(front) == [*SNAPSHOT_AND_JSON, "lint.pending-omitted"]


def test_a_second_turn_answering_the_frontend_call_is_clean() -> None:
    served = app()
    asked = run_input("turns", user("u1", "confirm"), tools=("confirm",))
    (first,) = drive(served, asked)
    answer = {"id": "t1", "role": "tool", "toolCallId": "call-confirm", "content": "yes"}
    history = [*first.conversation.messages, answer]
    (second,) = drive(served, {**run_input("turns", *history, tools=("confirm",)), "runId": "r2"})
    assert second.verdict.outcome is Outcome.COMPLETED
    assert shown(second) == [
        ("user", "confirm"),
        ("assistant", [("confirm", '{"ok": true}')]),
        ("tool", "yes"),
        ("assistant", "Done: it is sunny."),
    ]
    # The answered call is not re-streamed, and the resumed run's identity is the input's.
    assert lint_codes(second) == []
