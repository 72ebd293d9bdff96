"""verify's inline continuation check: it must give the verdicts of the full checks.

``Verify.process`` passes an untagged continuation of an open item without the
full per-event checks. These tests pin down what that shortcut must not change:
the order in which the full checks judge a continuation (the run's phase, then
its ``subagentRunId``, then its item), and the frame index of the event rejected
in the middle of a batch.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from agui_pipeline import Batch, Options, StreamContext, StreamRejected
from agui_pipeline import catalog as c
from agui_pipeline.stages.verify import Verify

Event = dict[str, Any]

START: Event = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}


def verdict(events: list[Event], first_index: int = 0) -> tuple[str, int | None, str]:
    """The rejection of ``events`` sent as one batch whose first frame is ``first_index``."""
    stage = Verify(StreamContext(Options()))
    indices = list(range(first_index, first_index + len(events)))
    with pytest.raises(StreamRejected) as info:
        anyio.run(stage.process, Batch(events, indices))
    return info.value.code, info.value.event_index, str(info.value)


def content(message_id: Any = "m1", **more: Any) -> Event:
    return {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": "x", **more}


def opened(message_id: str = "m1") -> Event:
    return {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"}


def test_a_continuation_that_cannot_be_read_is_first_judged_by_the_run_phase() -> None:
    # No run yet: the first-event rule speaks before the missing messageId does.
    code, index, _ = verdict([{"type": "TEXT_MESSAGE_CONTENT", "delta": "x"}])
    assert (code, index) == (c.VERIFY_FIRST_EVENT.id, 0)
    code, index, _ = verdict([content(["not", "hashable"])])
    assert (code, index) == (c.VERIFY_FIRST_EVENT.id, 0)


def test_a_continuation_that_cannot_be_read_is_judged_by_its_tag_before_its_item() -> None:
    ended = [
        START,
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s1"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1"},
    ]
    # The tag after its invocation ended is read (and reported) before the missing messageId
    # is: the event is then rejected as unreadable, at its own frame.
    code, index, _ = verdict(
        [*ended, {"type": "TEXT_MESSAGE_CONTENT", "delta": "x", "subagentRunId": "s1"}]
    )
    assert (code, index) == (c.VERIFY_UNREADABLE.id, 3)


def test_an_unhashable_item_id_is_unreadable_at_its_own_frame() -> None:
    code, index, text = verdict([START, opened(), content(), content(["a"])], first_index=40)
    assert (code, index) == (c.VERIFY_UNREADABLE.id, 43)
    assert "unhashable" in text


@pytest.mark.parametrize(
    ("last", "expected"),
    [
        (content("m2"), c.VERIFY_TEXT_MESSAGE),  # nothing open under that id
        (
            {"type": "REASONING_MESSAGE_CONTENT", "messageId": "m1", "delta": "x"},
            c.VERIFY_REASONING,
        ),  # open, but as a text message
        (
            {"type": "TOOL_CALL_ARGS", "toolCallId": "m1", "delta": "x"},
            c.VERIFY_TOOL_CALL,
        ),  # ids of calls and messages are separate
        (content(subagentRunId="s9"), c.VERIFY_ATTRIBUTION),  # open under the parent agent
    ],
)
def test_a_bad_continuation_after_good_ones_is_rejected_at_its_frame(
    last: Event, expected: c.Code
) -> None:
    code, index, _ = verdict([START, opened(), content(), content(), last], first_index=100)
    assert (code, index) == (expected.id, 104)


def test_continuations_after_the_run_failed_are_after_close() -> None:
    failed = [START, opened(), content(), {"type": "RUN_ERROR", "message": "boom"}]
    code, index, _ = verdict([*failed, content()])
    assert (code, index) == (c.VERIFY_AFTER_CLOSE.id, 4)


def test_a_continuation_tagged_with_its_owner_passes() -> None:
    stage = Verify(StreamContext(Options()))
    events = [
        START,
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s1"},
        {**opened(), "subagentRunId": "s1"},
        content(subagentRunId="s1"),
        content(),  # untagged: continues the owner
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    ]
    batch = Batch(events, list(range(len(events))))
    assert anyio.run(stage.process, batch) is batch
