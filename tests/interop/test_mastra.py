"""Mastra's AG-UI bridge (``@ag-ui/mastra``, TypeScript) over the AI SDK's mock model.

``node/mastra_server.mjs`` wraps a Mastra agent whose model is ``MockLanguageModelV3``
(``ai/test``) answering from a script, and serves the bridge's events as SSE; the
versions are pinned by ``node/package-lock.json``. What the bridge does:

- it finishes a run that called a frontend tool with no ``pendingToolCallIds``:
  ``lint.pending-omitted``;
- a backend tool that suspends (a person must approve) ends the run with the interrupt
  outcome, but the call it asks about was never streamed (the bridge holds a
  suspending call's events back): ``lint.interrupt-unknown-call``. The resumed run
  then answers that call with a ``TOOL_CALL_RESULT`` for a call no stream carried:
  ``lint.result-for-unknown-call``, the result held as an orphan tool message (it was
  rejected before tool-calls.mdx's Error Handling was followed to the letter);
- text, a backend tool, reasoning, a model error (``RUN_ERROR``), the second turn
  answering a frontend tool and a repeated thread are clean.

Not covered: shared state (the bridge carries Mastra's working memory, which needs
``@mastra/memory``, a package this tier does not install).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agui_pipeline import Outcome

from tests.interop.servers import (
    drive_url,
    findings,
    node_missing,
    node_server,
    run_input,
    shown,
    user,
)

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def mastra() -> Iterator[str]:
    """The URL of one Mastra server for the module (threads keep the runs apart)."""
    missing = node_missing()
    if missing is not None:
        pytest.skip(missing)
    with node_server("mastra_server.mjs") as url:
        yield url


def test_text_backend_tool_reasoning_and_error(mastra: str) -> None:
    text, tool, think, failed = drive_url(
        mastra,
        run_input("text", user("u1", "hello")),
        run_input("tool", user("u1", "weather")),
        run_input("think", user("u1", "think")),
        run_input("fail", user("u1", "fail")),
    )
    assert text.verdict.outcome is Outcome.COMPLETED
    assert shown(text) == [("user", "hello"), ("assistant", "Hello there.")]
    assert tool.verdict.outcome is Outcome.COMPLETED
    # A backend tool's arguments are re-serialised (a frontend tool's stream as sent).
    assert shown(tool) == [
        ("user", "weather"),
        ("assistant", [("weather", '{"city":"Paris"}')]),
        ("tool", '"sunny in Paris"'),
        ("assistant", "Done: it is sunny."),
    ]
    assert think.verdict.outcome is Outcome.COMPLETED
    assert shown(think) == [
        ("user", "think"),
        ("reasoning", "Let me think."),
        ("assistant", "Thought about it."),
    ]
    assert failed.verdict.outcome is Outcome.COMPLETED
    assert failed.runs[-1].status == "error"
    for result in (text, tool, think, failed):
        assert findings(result) == [], result.diagnostics


def test_frontend_tool_and_the_second_turn_answering_it(mastra: str) -> None:
    (first,) = drive_url(mastra, run_input("front", user("u1", "confirm"), tools=("confirm",)))
    assert first.verdict.outcome is Outcome.COMPLETED
    assert shown(first) == [("user", "confirm"), ("assistant", [("confirm", '{"ok": true}')])]
    assert findings(first) == ["lint.pending-omitted"]
    answer = {"id": "t1", "role": "tool", "toolCallId": "call-confirm", "content": "answered: yes"}
    history = [*first.conversation.messages, answer]
    (second,) = drive_url(
        mastra, {**run_input("front", *history, tools=("confirm",)), "runId": "r2"}
    )
    assert second.verdict.outcome is Outcome.COMPLETED
    assert shown(second) == [
        ("user", "confirm"),
        ("assistant", [("confirm", '{"ok": true}')]),
        ("tool", "answered: yes"),
        ("assistant", "Done: it is sunny."),
    ]
    assert findings(second) == []


def test_a_suspended_tool_interrupts_and_the_resume_answers_it(mastra: str) -> None:
    (asked,) = drive_url(mastra, run_input("hitl", user("u1", "approve")))
    assert asked.verdict.outcome is Outcome.COMPLETED
    assert asked.runs[-1].status == "interrupted"
    (interrupt,) = asked.conversation.interrupts
    assert (interrupt["id"], interrupt["toolCallId"]) == ("hitl-run::call-approve", "call-approve")
    assert shown(asked) == [("user", "approve")]  # the suspended call was held back
    assert findings(asked) == ["lint.interrupt-unknown-call"]
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    history = asked.conversation.messages
    (resumed,) = drive_url(mastra, {**run_input("hitl", *history), "runId": "r2", "resume": resume})
    assert resumed.verdict.outcome is Outcome.COMPLETED, resumed.verdict.message
    assert shown(resumed) == [
        ("user", "approve"),
        ("tool", '"bought milk"'),
        ("assistant", "Done: it is sunny."),
    ]
    assert findings(resumed) == ["lint.result-for-unknown-call"]


def test_a_repeated_thread_keeps_its_history(mastra: str) -> None:
    (first,) = drive_url(mastra, run_input("again", user("u1", "hello")))
    history = [*first.conversation.messages, user("u2", "hello")]
    (second,) = drive_url(mastra, {**run_input("again", *history), "runId": "r2"})
    assert second.verdict.outcome is Outcome.COMPLETED
    assert shown(second) == [
        ("user", "hello"),
        ("assistant", "Hello there."),
        ("user", "hello"),
        ("assistant", "Hello there."),
    ]
    assert findings(second) == []
