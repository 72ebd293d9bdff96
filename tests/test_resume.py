"""resume_input: the next input after an interrupt, and the consumer's coverage rules."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from agui_pipeline import Pipeline, RunResult
from agui_pipeline.delivery.resume import pending_interrupts, resume_input
from agui_pipeline.errors import InputRejected
from agui_pipeline.model.run_input import prepare_input
from agui_pipeline.subscribers import encode_sse

from tests.conftest import run

PREVIOUS: dict[str, Any] = {
    "threadId": "t-int",
    "runId": "r-1",
    "messages": [{"id": "u-1", "role": "user", "content": "Move the money."}],
    "state": {"step": 0},
    "tools": [{"name": "confirm", "description": "ask the user"}],
    "forwardedProps": {"tenant": "acme"},
}


def interrupted(*interrupts: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "RUN_STARTED", "threadId": "t-int", "runId": "r-1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m-1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "May I?"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m-1"},
        {"type": "STATE_SNAPSHOT", "snapshot": {"step": 1}},
        {
            "type": "RUN_FINISHED",
            "threadId": "t-int",
            "runId": "r-1",
            "outcome": {"type": "interrupt", "interrupts": list(interrupts)},
        },
    ]


APPROVAL = {"id": "i-1", "reason": "approval"}
CHOICE = {"id": "i-2", "reason": "choice", "expiresAt": "2026-01-01T00:00:00Z"}


def result_of(*interrupts: dict[str, Any], pipeline: Pipeline | None = None) -> RunResult:
    return run(encode_sse(interrupted(*interrupts)), pipeline, run_input=PREVIOUS)


def test_the_next_input_answers_every_interrupt_and_keeps_the_thread() -> None:
    result = result_of(APPROVAL, CHOICE)
    nxt = resume_input(
        PREVIOUS, result, {"i-1": {"approved": True}}, cancelled=["i-2"], run_id="r-2"
    )
    assert nxt["resume"] == [
        {"interruptId": "i-1", "status": "resolved", "payload": {"approved": True}},
        {"interruptId": "i-2", "status": "cancelled"},
    ]
    assert nxt["threadId"] == "t-int" and nxt["runId"] == "r-2"
    assert [m["id"] for m in nxt["messages"]] == ["u-1", "m-1"]
    assert nxt["messages"][1]["content"] == "May I?"
    assert nxt["state"] == {"step": 1}  # what the interrupted run left behind
    assert nxt["tools"] == PREVIOUS["tools"] and nxt["forwardedProps"] == {"tenant": "acme"}
    assert prepare_input(nxt).body["resume"] == nxt["resume"]  # the boundary accepts it


def test_the_next_input_is_a_copy() -> None:
    result = result_of(APPROVAL)
    nxt = resume_input(PREVIOUS, result, {"i-1": None})
    nxt["messages"][0]["content"] = "changed"
    assert result.conversation.messages[0]["content"] == "Move the money."
    assert nxt["resume"] == [{"interruptId": "i-1", "status": "resolved"}]
    assert nxt["runId"] != "r-1"


def test_an_uncovered_interrupt_is_refused_before_sending() -> None:
    with pytest.raises(InputRejected, match="i-2") as raised:
        resume_input(PREVIOUS, result_of(APPROVAL, CHOICE), {"i-1": True})
    assert raised.value.code == "input.resume-uncovered"


def test_an_entry_for_an_interrupt_never_raised_is_refused() -> None:
    with pytest.raises(InputRejected, match="i-9") as raised:
        resume_input(PREVIOUS, result_of(APPROVAL), {"i-1": True, "i-9": True})
    assert raised.value.code == "input.resume-unknown"


def test_nothing_to_resume_after_a_run_that_was_not_interrupted() -> None:
    clean = [
        *interrupted(APPROVAL)[:-1],
        {"type": "RUN_FINISHED", "threadId": "t-int", "runId": "r-1"},
    ]
    with pytest.raises(InputRejected, match="interrupt outcome"):
        resume_input(PREVIOUS, run(encode_sse(clean)), {"i-1": True})


def test_an_expired_interrupt_can_be_cancelled_but_not_answered() -> None:
    result = result_of(CHOICE)
    later = datetime(2026, 6, 1, tzinfo=UTC)
    with pytest.raises(InputRejected) as raised:
        resume_input(PREVIOUS, result, {"i-2": "b"}, now=later)
    assert raised.value.code == "input.resume-expired"
    assert resume_input(PREVIOUS, result, cancelled=["i-2"], now=later)["resume"] == [
        {"interruptId": "i-2", "status": "cancelled"}
    ]
    earlier = datetime(2025, 6, 1, tzinfo=UTC)
    assert resume_input(PREVIOUS, result, {"i-2": "b"}, now=earlier)["resume"][0]["payload"] == "b"


def test_an_unreadable_expiry_never_expires() -> None:
    odd = {"id": "i-3", "reason": "x", "expiresAt": "next tuesday"}
    assert resume_input(PREVIOUS, result_of(odd), {"i-3": 1})["resume"][0]["status"] == "resolved"


def test_without_a_conversation_the_events_and_previous_input_are_used() -> None:
    result = result_of(APPROVAL, pipeline=Pipeline(conversation=False))
    assert pending_interrupts(result) == [APPROVAL]
    nxt = resume_input(PREVIOUS, result, {"i-1": True})
    assert nxt["messages"] == PREVIOUS["messages"] and nxt["state"] == {"step": 0}
