"""verify: one test per sequencing rule, each able to fail.

Most tests drive the stage alone (``Verify(StreamContext(Options()))``) over
schema-valid events; a few go through the default pipeline to check what the
result and the CLI say. ``tests/streams.py`` supplies valid streams for the
property tests.
"""

from __future__ import annotations

import contextlib
import io
import tracemalloc
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from agui_pipeline import (
    Batch,
    Diagnostic,
    Limits,
    Options,
    Outcome,
    RunResult,
    RunStatus,
    StreamContext,
    StreamRejected,
    StreamTruncated,
)
from agui_pipeline import catalog as c
from agui_pipeline._engine.builtin import run_without_loop
from agui_pipeline.cli import main
from agui_pipeline.stages.verify import Verify
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import run, through_built_in
from tests.streams import valid_stream

pytestmark = pytest.mark.usefixtures("built_in_run")  # every rule on every path (conftest)

Event = dict[str, Any]


# -- helpers ---------------------------------------------------------------------


def check(
    events: list[Event], run_input: dict[str, Any] | None = None, batch_size: int | None = None
) -> StreamContext:
    """Run ``events`` through a lone Verify (and its finish) as the engine runs it (on the
    path ``built_in_run`` chose); return the context."""
    ctx = StreamContext(Options(), run_input)
    stage = Verify(ctx)
    size = batch_size or max(len(events), 1)

    for start in range(0, len(events), size):
        chunk = events[start : start + size]
        through_built_in([stage], Batch(chunk, list(range(start, start + len(chunk)))))
    run_without_loop(stage.finish())
    return ctx


def rejected(
    events: list[Event], code: c.Code, *contains: str, run_input: dict[str, Any] | None = None
) -> StreamRejected:
    with pytest.raises(StreamRejected) as info:
        check(events, run_input)
    error = info.value
    assert error.code == code.id, str(error)
    assert error.spec == code.spec
    for text in contains:
        assert text in str(error), str(error)
    return error


def accepted(events: list[Event], run_input: dict[str, Any] | None = None) -> RunResult:
    """The default pipeline over ``events`` (JSON lines); the stream must be accepted."""
    data = b"".join(orjson.dumps(event) + b"\n" for event in events)
    result = run(data, run_input=run_input)
    assert result.verdict.outcome is Outcome.COMPLETED, result.verdict.message
    return result


def problems(result: RunResult) -> list[str]:
    """The codes of what was reported above information (a clean stream has none)."""
    return [d.code for d in result.diagnostics if d.severity != "info"]


def reported(
    events: list[Event], code: c.Code, *contains: str, run_input: dict[str, Any] | None = None
) -> Diagnostic:
    """A rule that binds only the producer: the default pipeline accepts ``events``, verify
    alone rejects nothing, and ``code`` is reported (its first diagnostic, returned)."""
    check(events, run_input)
    found = [d for d in accepted(events, run_input).diagnostics if d.code == code.id]
    assert found, f"expected {code.id}"
    assert found[0].severity == code.severity
    for text in contains:
        assert text in found[0].message, found[0].message
    return found[0]


def started(run_id: str = "r1", thread: str = "t", **extra: Any) -> Event:
    return {"type": "RUN_STARTED", "threadId": thread, "runId": run_id, **extra}


def finished(run_id: str = "r1", thread: str = "t", **extra: Any) -> Event:
    return {"type": "RUN_FINISHED", "threadId": thread, "runId": run_id, **extra}


def error(message: str = "boom") -> Event:
    return {"type": "RUN_ERROR", "message": message}


def in_run(*events: Event, run_id: str = "r1", **finish: Any) -> list[Event]:
    return [started(run_id), *events, finished(run_id, **finish)]


def tagged(event: Event, sub: str | None) -> Event:
    return event if sub is None else {**event, "subagentRunId": sub}


def text(message_id: str, sub: str | None = None, role: str | None = None) -> list[Event]:
    start: Event = {"type": "TEXT_MESSAGE_START", "messageId": message_id}
    if role is not None:
        start["role"] = role
    return [
        tagged(start, sub),
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": message_id},
    ]


def call(call_id: str, sub: str | None = None, parent: str | None = None) -> list[Event]:
    start: Event = {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": "f"}
    if parent is not None:
        start["parentMessageId"] = parent
    return [
        tagged(start, sub),
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
    ]


def result(call_id: str, message_id: str) -> Event:
    return {
        "type": "TOOL_CALL_RESULT",
        "messageId": message_id,
        "toolCallId": call_id,
        "content": "ok",
    }


def thought(message_id: str) -> list[Event]:
    return [
        {"type": "REASONING_MESSAGE_START", "messageId": message_id, "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": message_id, "delta": "hmm"},
        {"type": "REASONING_MESSAGE_END", "messageId": message_id},
    ]


def sub_started(sub: str, parent: str | None = None) -> Event:
    event: Event = {"type": "SUBAGENT_STARTED", "subagentRunId": sub, "name": "helper"}
    if parent is not None:
        event["parentSubagentRunId"] = parent
    return event


def sub_finished(sub: str, **extra: Any) -> Event:
    return {"type": "SUBAGENT_FINISHED", "subagentRunId": sub, **extra}


def interrupt(interrupt_id: str, sub: str | None = None) -> dict[str, Any]:
    return tagged({"id": interrupt_id, "reason": "approval"}, sub)


def interrupted(*interrupts: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"type": "interrupt", "interrupts": list(interrupts)}}


STEP = {"type": "STEP_STARTED", "stepName": "plan"}
STEP_END = {"type": "STEP_FINISHED", "stepName": "plan"}


# -- the run lifecycle (/spec/1.1/events/lifecycle) ---------------------------


@pytest.mark.parametrize(
    "first",
    [text("m")[0], STEP, finished(), {"type": "CUSTOM", "name": "x", "value": 1}],
    ids=lambda event: event["type"],
)
def test_a_stream_begins_with_run_started_or_run_error(first: Event) -> None:
    error = rejected([first], c.VERIFY_FIRST_EVENT, "First event must be 'RUN_STARTED'")
    assert (error.event_index, error.pointer) == (0, "/type")


def test_a_stream_may_open_with_run_error_and_then_start_a_run() -> None:
    ctx = check([error("unreachable"), *in_run(*text("m"))])
    assert [(r.run_id, r.status, r.error) for r in ctx.runs] == [
        (None, RunStatus.ERROR, "unreachable"),
        ("r1", RunStatus.FINISHED, None),
    ]


def test_no_run_starts_inside_another() -> None:
    error = rejected(
        [started("r1"), started("r2")],
        c.VERIFY_NESTED_RUN,
        "Cannot send 'RUN_STARTED' while a run is still active",
        "'r1'",
    )
    assert error.event_index == 1


@pytest.mark.parametrize(
    "late",
    [text("m")[0], STEP, {"type": "STATE_SNAPSHOT", "snapshot": {}}, finished()],
    ids=lambda event: event["type"],
)
def test_after_run_finished_only_a_new_run_or_a_late_error(late: Event) -> None:
    rejected(
        [*in_run(), late], c.VERIFY_AFTER_CLOSE, "The run has already finished with 'RUN_FINISHED'"
    )


def test_a_late_run_error_fails_the_finished_run() -> None:
    ctx = check([*in_run(), error("flush failed")])
    assert (ctx.runs[0].status, ctx.runs[0].error) == (RunStatus.ERROR, "flush failed")


@pytest.mark.parametrize(
    "late", [error(), finished(), text("m")[0]], ids=lambda event: event["type"]
)
def test_after_run_error_only_run_started(late: Event) -> None:
    rejected([started(), error(), late], c.VERIFY_AFTER_CLOSE, "'RUN_ERROR'")
    rejected([error(), late], c.VERIFY_AFTER_CLOSE, "'RUN_ERROR'")


def test_a_new_run_may_follow_a_finished_or_failed_one() -> None:
    ctx = check([*in_run(run_id="r1"), started("r2"), error(), *in_run(run_id="r3")])
    assert [r.status for r in ctx.runs] == [
        RunStatus.FINISHED,
        RunStatus.ERROR,
        RunStatus.FINISHED,
    ]


# Identifiers bind the producer (basic/index, run-input): reported by lint, never rejected.


@pytest.mark.parametrize("field", ["runId", "threadId"])
def test_run_finished_naming_another_run_is_reported(field: str) -> None:
    closing = finished()
    closing[field] = "someone-else"
    found = reported([started(), closing], c.LINT_RUN_IDENTITY, "someone-else")
    assert (found.pointer, found.event_index) == (f"/{field}", 1)


def test_a_run_on_another_thread_is_reported() -> None:
    events = [*in_run(run_id="r1"), started("r2", thread="t2"), finished("r2", thread="t2")]
    found = reported(events, c.LINT_THREAD_CHANGED, "'t2'", "'t'")
    assert (found.pointer, found.event_index) == ("/threadId", 2)
    assert accepted(events).runs[1].thread_id == "t2"


def test_a_reused_run_id_is_reported() -> None:
    found = reported([*in_run(run_id="r1"), *in_run(run_id="r1")], c.LINT_RUN_ID_REUSED, "'r1'")
    assert (found.pointer, found.event_index) == ("/runId", 2)
    reported([started("r1"), error(), *in_run(run_id="r1")], c.LINT_RUN_ID_REUSED)
    assert not [d for d in accepted([*in_run(run_id="r1"), *in_run(run_id="r2")]).diagnostics]


@pytest.mark.parametrize("field", ["runId", "threadId"])
def test_an_echoed_input_naming_another_run_is_reported(field: str) -> None:
    echo = {"threadId": "t", "runId": "r1", "messages": []}
    assert not problems(accepted([started(input=echo), finished()]))
    echo[field] = "other"
    found = reported([started(input=echo), finished()], c.LINT_RUN_IDENTITY, "'other'")
    assert found.pointer == f"/input/{field}"


OPENERS: dict[str, tuple[list[Event], str]] = {
    "text": (text("m")[:2], "text messages are still active: 'm'"),
    "tool": (call("c")[:2], "tool calls are still active: 'c'"),
    "reasoning": (thought("th")[:2], "reasoning messages are still active: 'th'"),
    "span": ([{"type": "REASONING_START", "messageId": "sp"}], "reasoning spans"),
    "step": ([STEP], "steps are still active: 'plan'"),
    "subagent": ([sub_started("s1")], "subagent invocations are still active: 's1'"),
}


@pytest.mark.parametrize("kind", list(OPENERS))
def test_everything_the_run_opened_is_closed_at_run_finished(kind: str) -> None:
    opened, says = OPENERS[kind]
    error = rejected(in_run(*opened), c.VERIFY_OPEN_AT_FINISH, "Cannot send 'RUN_FINISHED'", says)
    assert error.event_index == len(opened) + 1


@pytest.mark.parametrize("kind", list(OPENERS))
def test_run_error_ends_whatever_is_open_and_nothing_crosses_runs(kind: str) -> None:
    opened, _ = OPENERS[kind]
    # The same items open again in the next run: nothing of the failed run is still open.
    ctx = check([started("r1"), *opened, error(), started("r2"), *opened, error()])
    assert [r.status for r in ctx.runs] == [RunStatus.ERROR, RunStatus.ERROR]


def test_an_item_of_a_failed_run_cannot_be_continued_in_the_next() -> None:
    events = [started("r1"), *text("m")[:1], error(), started("r2"), text("m")[1]]
    rejected(events, c.VERIFY_TEXT_MESSAGE, "No active text message found with ID 'm'")


# -- steps ------------------------------------------------------------------------


def test_steps_open_once_and_finish_only_when_open() -> None:
    check(in_run(STEP, STEP_END, STEP, STEP_END))
    rejected(in_run(STEP, STEP), c.VERIFY_STEP, "already open")
    error = rejected(in_run(STEP_END), c.VERIFY_STEP, "'plan'", "that was not started")
    assert (error.event_index, error.pointer) == (1, "/stepName")
    rejected(in_run(STEP, STEP_END, STEP_END), c.VERIFY_STEP, "that was not started")


def test_steps_are_matched_by_name_and_overlap_freely() -> None:
    other = {"type": "STEP_STARTED", "stepName": "other"}
    other_end = {"type": "STEP_FINISHED", "stepName": "other"}
    check(in_run(STEP, other, *text("m"), STEP_END, other_end))


def test_steps_are_per_owner() -> None:
    mine, theirs = STEP, tagged(STEP, "s1")
    check(in_run(mine, theirs, tagged(STEP_END, "s1"), STEP_END))
    error = rejected(
        in_run(theirs, STEP_END, tagged(STEP_END, "s1")),
        c.VERIFY_STEP,
        "that was not started",
        "open under subagent 's1'",
    )
    assert error.event_index == 2


# -- the streamed items (/spec/1.1/basic/patterns/streaming) --------------------


TRIADS: dict[str, tuple[Callable[[str], list[Event]], c.Code, str]] = {
    "text": (text, c.VERIFY_TEXT_MESSAGE, "text message"),
    "tool": (call, c.VERIFY_TOOL_CALL, "tool call"),
    "reasoning": (thought, c.VERIFY_REASONING, "reasoning message"),
}


@pytest.mark.parametrize("family", list(TRIADS))
def test_an_item_is_not_opened_while_open(family: str) -> None:
    make, code, _ = TRIADS[family]
    start, content, _ = make("x")
    rejected(in_run(start, content, start), code, "already active")


@pytest.mark.parametrize("family", list(TRIADS))
@pytest.mark.parametrize("which", ["content", "end"])
def test_an_item_is_continued_and_closed_only_while_open(family: str, which: str) -> None:
    make, code, label = TRIADS[family]
    start, content, end = make("x")
    orphan = content if which == "content" else end
    says = f"No active {label} found with ID 'x'"
    error = rejected(in_run(orphan), code, says)
    field = "toolCallId" if family == "tool" else "messageId"
    assert (error.event_index, error.pointer) == (1, f"/{field}")
    rejected(in_run(start, end, orphan), code, says)  # closed is not open


@pytest.mark.parametrize("family", list(TRIADS))
def test_a_closed_item_may_be_reopened(family: str) -> None:
    make, _, _ = TRIADS[family]
    check(in_run(*make("x"), *make("x")))
    check([*in_run(*make("x"), run_id="r1"), *in_run(*make("x"), run_id="r2")])


def test_items_interleave_freely() -> None:
    (t1, t2, t3), (c1, c2, c3), (r1, r2, r3) = text("m"), call("c"), thought("th")
    check(in_run(t1, c1, r1, t2, c2, r2, STEP, t3, c3, r3, STEP_END))


def test_reasoning_spans_open_once_and_close_only_when_open() -> None:
    span = {"type": "REASONING_START", "messageId": "sp"}
    span_end = {"type": "REASONING_END", "messageId": "sp"}
    check(in_run(span, *thought("th"), span_end))
    rejected(in_run(span, span), c.VERIFY_REASONING, "already active")
    rejected(in_run(span_end), c.VERIFY_REASONING, "No active reasoning span found with ID 'sp'")


def test_a_span_and_its_message_may_share_an_id_but_a_span_opens_no_message() -> None:
    span = {"type": "REASONING_START", "messageId": "x"}
    span_end = {"type": "REASONING_END", "messageId": "x"}
    check(in_run(span, *thought("x"), span_end))
    rejected(
        in_run(span, thought("x")[1]),
        c.VERIFY_REASONING,
        "No active reasoning message found with ID 'x'",
    )


def test_a_message_id_reused_for_another_kind_is_reported_and_the_later_message_stands() -> None:
    snapshot = {"type": "ACTIVITY_SNAPSHOT", "messageId": "x", "activityType": "a", "content": {}}
    cases = [
        (in_run(*text("x"), *thought("x")), "a text message", "reasoning"),
        (in_run(*thought("x"), *text("x")), "a reasoning message", "assistant"),
        (in_run(*call("c"), result("c", "x"), *text("x")), "a tool message", "assistant"),
        (in_run(*text("x"), snapshot), "a text message", "activity"),
        (in_run(snapshot, *text("x")), "a activity message", "assistant"),
        (in_run(*text("x"), *call("c"), result("c", "x")), "a text message", "tool"),
    ]
    for events, was, now in cases:
        found = reported(events, c.LINT_MESSAGE_ID_REUSED, was)
        assert found.pointer == "/messageId"
        held = accepted(events).conversation.messages
        assert [(m["id"], m["role"]) for m in held if m["id"] == "x"] == [("x", now)]
    # A second result under one messageId: one tool message, the later.
    events = in_run(*call("c"), result("c", "r"), {**result("c", "r"), "content": "again"})
    reported(events, c.LINT_MESSAGE_ID_REUSED, "a second tool message")
    tools = [m for m in accepted(events).conversation.messages if m["role"] == "tool"]
    assert [(m["id"], m["content"]) for m in tools] == [("r", "again")]


def test_an_activity_delta_for_a_non_activity_message_is_not_verifys_to_reject() -> None:
    delta = {"type": "ACTIVITY_DELTA", "messageId": "m", "activityType": "a", "patch": []}
    check(in_run(*text("m"), delta, {**delta, "messageId": "never-created"}))


def test_chunks_never_reach_verification() -> None:
    chunk = {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "x"}
    rejected(in_run(chunk), c.VERIFY_UNEXPANDED_CHUNK, "TEXT_MESSAGE_CHUNK")


# -- attribution and subagents (/spec/1.1/events/subagents) ---------------------


CONTINUATIONS: dict[str, tuple[Callable[[str | None], list[Event]], int]] = {
    "text": (lambda sub: text("x", sub), 1),
    "text-end": (lambda sub: text("x", sub), 2),
    "tool": (lambda sub: call("x", sub), 1),
    "tool-end": (lambda sub: call("x", sub), 2),
    "reasoning": (lambda sub: [tagged(thought("x")[0], sub), *thought("x")[1:]], 1),
    "span": (
        lambda sub: [
            tagged({"type": "REASONING_START", "messageId": "x"}, sub),
            {"type": "REASONING_END", "messageId": "x"},
        ],
        1,
    ),
}


@pytest.mark.parametrize("item", list(CONTINUATIONS))
def test_a_continuation_agrees_with_its_items_owner(item: str) -> None:
    make, position = CONTINUATIONS[item]
    check(in_run(*make("s1")))  # untagged continuations continue the owner
    events = make("s1")
    events[position] = tagged(events[position], "s1")
    check(in_run(*events))
    events[position] = tagged(events[position], "s2")
    error = rejected(in_run(*events), c.VERIFY_ATTRIBUTION, "does not match", "'s1'")
    assert (error.event_index, error.pointer) == (position + 1, "/subagentRunId")
    # A parent agent's item continued under a subagent's tag disagrees too.
    events = make(None)
    events[position] = tagged(events[position], "s2")
    rejected(in_run(*events), c.VERIFY_ATTRIBUTION, "the parent agent")


def test_an_activity_delta_agrees_with_the_snapshot_that_opened_it() -> None:
    snapshot = tagged(
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "t", "content": {}}, "s1"
    )
    delta = {"type": "ACTIVITY_DELTA", "messageId": "a", "activityType": "t", "patch": []}
    check(in_run(snapshot, delta, tagged(delta, "s1")))
    rejected(in_run(snapshot, tagged(delta, "s2")), c.VERIFY_ATTRIBUTION, "'s1'")
    # A replacing snapshot re-mints the owner; replace: false leaves it standing.
    check(in_run(snapshot, {**snapshot, "subagentRunId": "s2"}, tagged(delta, "s2")))
    keeps = {**snapshot, "subagentRunId": "s2", "replace": False}
    rejected(in_run(snapshot, keeps, tagged(delta, "s2")), c.VERIFY_ATTRIBUTION)


def test_reopening_in_the_same_run_keeps_the_owner() -> None:
    rejected(in_run(*text("m", "s1"), *text("m", "s2")), c.VERIFY_ATTRIBUTION, "'s1'")
    rejected(in_run(*call("c", "s1"), *call("c", "s2")), c.VERIFY_ATTRIBUTION, "'s1'")
    check(in_run(*text("m", "s1"), *text("m")))  # untagged reopening continues the owner
    # Ownership tracking resets at a run boundary, so another run may differ.
    check([*in_run(*text("m", "s1"), run_id="r1"), *in_run(*text("m", "s2"), run_id="r2")])


def test_a_tool_call_tagged_otherwise_than_its_message_is_reported() -> None:
    check(in_run(*text("m", "s1"), *call("c", "s1", parent="m")))
    found = reported(
        in_run(*text("m", "s1"), *call("c", "s2", parent="m")),
        c.VERIFY_CALL_ATTRIBUTION,
        "belongs to subagent 's2'",
        "'s1'",
    )
    assert (found.event_index, found.pointer) == (4, "/subagentRunId")
    reported(in_run(*text("m"), *call("c", "s2", parent="m")), c.VERIFY_CALL_ATTRIBUTION)
    # A message streamed after its call is judged alike, and each keeps its own owner:
    # the call's continuation under its own tag is no disagreement.
    events = [*call("c", "s1", parent="m")[:2], *text("m", "s2"), call("c")[2]]
    events[1] = tagged(events[1], "s1")
    reported(in_run(*events), c.VERIFY_CALL_ATTRIBUTION, "subagent 's2'", "subagent 's1'")
    # An untagged call inherits its message's owner: its continuations agree with that.
    events = call("c", parent="m")
    events[1] = tagged(events[1], "s1")
    check(in_run(*text("m", "s1"), *events))
    events[1] = tagged(events[1], "s2")
    rejected(in_run(*text("m", "s1"), *events), c.VERIFY_ATTRIBUTION)


def test_attribution_without_announcement_is_accepted() -> None:
    check(in_run(*text("m", "s1"), *call("c", "s2"), tagged(STEP, "s3"), tagged(STEP_END, "s3")))


# Announcing is the producer's duty (subagents.mdx, Lifecycle): reported, the stream goes on.


def test_an_invocation_announced_after_its_events_is_reported() -> None:
    check(in_run(sub_started("s1"), *text("m", "s1"), sub_finished("s1")))
    found = reported(
        in_run(*text("m", "s1"), sub_started("s1"), sub_finished("s1")),
        c.VERIFY_SUBAGENT_ORDER,
        "already had events attributed to it",
    )
    assert (found.event_index, found.pointer) == (4, "/subagentRunId")


def test_an_invocation_announced_twice_is_reported() -> None:
    reported(
        in_run(sub_started("s1"), sub_started("s1"), sub_finished("s1")),
        c.VERIFY_SUBAGENT_ORDER,
        "already active",
    )
    reported(
        in_run(sub_started("s1"), sub_finished("s1"), sub_started("s1"), sub_finished("s1")),
        c.VERIFY_SUBAGENT_ORDER,
        "already finished in this run",
    )
    # An id may reappear in a later run (a suspended invocation continued).
    first = in_run(sub_started("s1"), sub_finished("s1"), run_id="r1")
    assert not problems(
        accepted([*first, *in_run(sub_started("s1"), sub_finished("s1"), run_id="r2")])
    )


@pytest.mark.parametrize("closing", ["SUBAGENT_FINISHED", "SUBAGENT_ERROR"])
def test_only_an_active_invocation_is_closed(closing: str) -> None:
    end: Event = {"type": closing, "subagentRunId": "s1"}
    if closing == "SUBAGENT_ERROR":
        end["message"] = "failed"
    check(in_run(sub_started("s1"), end, *text("m")))  # ends the invocation, not the run
    rejected(in_run(end), c.VERIFY_SUBAGENT, "'s1'", "never started")
    rejected(in_run(sub_started("s1"), end, end), c.VERIFY_SUBAGENT, "already ended")
    rejected(in_run(*text("m", "s1"), end), c.VERIFY_SUBAGENT, "never announced")


def test_an_event_attributed_to_an_ended_invocation_is_reported_once() -> None:
    events = in_run(sub_started("s1"), sub_finished("s1"), *text("m", "s1"), tagged(STEP, "s1"))
    events.append(events.pop(-1))  # the run's end last
    events.insert(-1, tagged(STEP_END, "s1"))
    found = reported(events, c.VERIFY_SUBAGENT_ORDER, "after that invocation ended")
    assert found.event_index == 3
    codes = [d.code for d in accepted(events).diagnostics]
    assert codes.count(c.VERIFY_SUBAGENT_ORDER.id) == 1


def test_a_nested_invocation_under_a_parent_not_active_is_reported() -> None:
    check(
        in_run(
            sub_started("s1"),
            sub_started("s2", parent="s1"),
            sub_finished("s2"),
            sub_finished("s1"),
        )
    )
    reported(
        in_run(sub_started("s2", parent="s1"), sub_finished("s2")),
        c.VERIFY_SUBAGENT_ORDER,
        "not announced",
    )
    reported(
        in_run(
            sub_started("s1"),
            sub_finished("s1"),
            sub_started("s2", parent="s1"),
            sub_finished("s2"),
        ),
        c.VERIFY_SUBAGENT_ORDER,
        "already ended",
    )


def test_run_error_abandons_open_invocations() -> None:
    check(
        [
            started("r1"),
            sub_started("s1"),
            error(),
            *in_run(sub_started("s1"), sub_finished("s1"), run_id="r2"),
        ]
    )


# -- outcomes -------------------------------------------------------------------------


# What an outcome says is the producer's account: compared with the run by lint, reported.


def test_repeated_interrupt_ids_are_reported() -> None:
    assert not accepted(in_run(**interrupted(interrupt("i1"), interrupt("i2")))).diagnostics
    found = reported(
        in_run(**interrupted(interrupt("i1"), interrupt("i1"))), c.LINT_INTERRUPT_OUTCOME, "'i1'"
    )
    assert found.pointer == "/outcome/interrupts/1/id"
    run_record = accepted(in_run(**interrupted(interrupt("i1"), interrupt("i1")))).runs[0]
    assert run_record.status is RunStatus.INTERRUPTED


def test_a_suspended_subagents_interrupts_disagreeing_with_the_outcome_are_reported() -> None:
    suspended = sub_finished("s1", outcome={"type": "suspended", "interruptIds": ["i1"]})
    body = (sub_started("s1"), suspended)
    assert not accepted(in_run(*body, **interrupted(interrupt("i1", "s1")))).diagnostics
    assert not accepted(in_run(*body, **interrupted(interrupt("i1")))).diagnostics
    reported(
        in_run(*body, **interrupted(interrupt("i2"))),
        c.LINT_INTERRUPT_OUTCOME,
        "no interrupt with that id",
    )
    reported(in_run(*body, **interrupted(interrupt("i1", "s2"))), c.LINT_INTERRUPT_OUTCOME, "'s2'")
    reported(in_run(*body), c.LINT_INTERRUPT_OUTCOME, "finished as success")
    reported(in_run(*body, outcome={"type": "success"}), c.LINT_INTERRUPT_OUTCOME)
    assert not problems(accepted(in_run(*body, outcome={"type": "cancelled"})))
    # Suspended because a descendant interrupted: no ids of its own, nothing to match.
    quiet = in_run(sub_started("s1"), sub_finished("s1", outcome={"type": "suspended"}))
    assert not problems(accepted(quiet))


def test_pending_tool_call_ids_other_than_the_unanswered_calls_are_reported() -> None:
    body = (*call("a"), *call("b"), result("a", "ra"), *call("c"))

    def pending(*ids: str) -> dict[str, Any]:
        return {"outcome": {"type": "success", "pendingToolCallIds": list(ids)}}

    for fine in [pending("b", "c"), pending(), {}]:
        assert not problems(accepted(in_run(*body, **fine)))
    for wrong in [("b",), ("a", "b", "c"), ("b", "c", "c"), ("b", "c", "z")]:
        found = reported(in_run(*body, **pending(*wrong)), c.LINT_PENDING_INEXACT, "'b', 'c'")
        assert found.pointer == "/outcome/pendingToolCallIds"
    # Only this run's calls: one started in an earlier run is not pending here.
    earlier = in_run(*call("old"), run_id="r0")
    reported([*earlier, *in_run(**pending("old"))], c.LINT_PENDING_INEXACT)


def test_a_cancelled_run_with_a_result_warns_and_counts_as_cancelled() -> None:
    ctx = check(in_run(*text("m"), outcome={"type": "cancelled"}, result={"partial": True}))
    assert [d.code for d in ctx.diagnostics] == [c.VERIFY_CANCELLED_RESULT.id]
    assert "/result" in str(ctx.diagnostics[0])
    assert ctx.runs[0].status is RunStatus.CANCELLED
    assert not check(in_run(outcome={"type": "cancelled"})).diagnostics


def test_run_records_say_how_each_run_ended() -> None:
    events = [
        *in_run(run_id="a"),
        *in_run(run_id="b", outcome={"type": "success"}),
        *in_run(run_id="c", outcome={"type": "cancelled"}),
        *in_run(run_id="d", **interrupted(interrupt("i"))),
        started("e"),
        error("nope"),
    ]
    runs = check(events).runs
    assert [(r.run_id, r.thread_id, str(r.status)) for r in runs] == [
        ("a", "t", "finished"),
        ("b", "t", "finished"),
        ("c", "t", "cancelled"),
        ("d", "t", "interrupted"),
        ("e", "t", "error"),
    ]
    assert runs[3].outcome == {"type": "interrupt", "interrupts": [interrupt("i")]}
    assert runs[4].to_dict()["error"] == "nope"


# -- tool results (/spec/1.1/events/tool-calls) -----------------------------------


# None of it is fatal (tool-calls.mdx, Error Handling): reported by lint, and the result is a
# message in its own right whatever it answers.


def test_a_result_before_its_calls_end_is_reported_and_the_call_stays_open() -> None:
    assert not problems(accepted(in_run(*call("c"), result("c", "r"))))
    start, args, end = call("c")
    args, more = {**args, "delta": '{"a": '}, {**args, "delta": "1}"}
    events = in_run(start, args, result("c", "r"), more, end)
    found = reported(events, c.LINT_RESULT_BEFORE_END, "still open")
    assert (found.pointer, found.event_index) == ("/toolCallId", 3)
    done = accepted(events)
    assert [d.code for d in done.diagnostics if d.severity != "info"] == [
        c.LINT_RESULT_BEFORE_END.id
    ]
    held = done.conversation.messages
    assert held[0]["toolCalls"][0]["function"]["arguments"] == '{"a": 1}'  # grew after the result
    assert (held[1]["role"], held[1]["toolCallId"]) == ("tool", "c")


HISTORY = {
    "threadId": "t",
    "runId": "r1",
    "messages": [
        {
            "id": "a1",
            "role": "assistant",
            "toolCalls": [
                {"id": "old", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
    ],
}


def test_a_result_for_a_call_nothing_carried_is_reported_and_held_as_an_orphan() -> None:
    assert not problems(accepted(in_run(result("old", "r")), HISTORY))
    found = reported(
        in_run(result("nowhere", "r")),
        c.LINT_RESULT_UNKNOWN_CALL,
        "no call has that id",
        run_input=HISTORY,
    )
    assert found.pointer == "/toolCallId"
    held = accepted(in_run(result("nowhere", "r")), HISTORY).conversation.messages
    assert [(m["id"], m["role"], m.get("toolCallId")) for m in held] == [
        ("a1", "assistant", None),
        ("r", "tool", "nowhere"),
    ]
    assert not problems(accepted([started(input=HISTORY), result("old", "r"), finished()]))
    # From an earlier run on the stream, or from a messages snapshot before it.
    assert not problems(accepted([*in_run(*call("c"), run_id="r0"), *in_run(result("c", "r"))]))
    snapshot = {"type": "MESSAGES_SNAPSHOT", "messages": HISTORY["messages"]}
    assert not problems(accepted(in_run(snapshot, result("old", "r")), {"messages": []}))
    # The call only in a snapshot after its result (a real framework's bug): reported.
    late = in_run(result("old", "r"), snapshot)
    reported(late, c.LINT_RESULT_UNKNOWN_CALL, run_input={"messages": []})


def test_a_result_for_a_call_unseen_without_history_warns() -> None:
    found = reported(in_run(result("elsewhere", "r")), c.LINT_RESULT_UNSEEN)
    assert (found.severity, found.pointer) == ("warning", "/toolCallId")


def test_a_result_answering_a_frontend_tool_is_reported() -> None:
    run_input = {"messages": [], "tools": [{"name": "confirm", "description": "ask"}]}
    frontend = [{**call("c")[0], "toolCallName": "confirm"}, *call("c")[1:]]
    assert problems(accepted(in_run(*frontend), run_input)) == [c.LINT_PENDING_OMITTED.id]
    assert not problems(accepted(in_run(*call("c"), result("c", "r")), run_input))
    reported(
        in_run(*frontend, result("c", "r")),
        c.LINT_RESULT_FRONTEND,
        "'confirm'",
        run_input=run_input,
    )
    echoed = started(input={"threadId": "t", "runId": "r1", **run_input})
    reported([echoed, *frontend, result("c", "r"), finished()], c.LINT_RESULT_FRONTEND)


# -- truncation (/spec/1.1/basic/transports) ------------------------------------------


def test_a_stream_ending_inside_a_run_is_truncated() -> None:
    with pytest.raises(StreamTruncated) as info:
        check([started(), *text("m")[:2]])
    assert info.value.code == c.VERIFY_TRUNCATED.id
    assert "'r1'" in str(info.value) and "'m'" in str(info.value)


def test_an_empty_stream_is_truncated() -> None:
    with pytest.raises(StreamTruncated, match="no event"):
        check([])


def test_truncation_keeps_what_was_delivered_and_says_so() -> None:
    events = [started(), *text("m"), STEP]
    data = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
    result = run(data)
    assert result.verdict.outcome is Outcome.TRUNCATED
    assert result.verdict.code == c.VERIFY_TRUNCATED.id
    assert [e["type"] for e in result.events] == [e["type"] for e in events]
    assert [str(r.status) for r in result.runs] == ["truncated"]
    assert run(b"").verdict.outcome is Outcome.TRUNCATED


def test_a_stream_ending_after_a_terminal_event_completes() -> None:
    for events in ([*in_run()], [error()], [*in_run(), error()]):
        data = b"".join(orjson.dumps(e) + b"\n" for e in events)
        assert run(data).verdict.outcome is Outcome.COMPLETED


def test_chunked_subagent_lanes_verify_cleanly_through_the_pipeline() -> None:
    """Expand closes a subagent's chunk streams no later than its terminal event, so the
    ends it synthesizes agree with their owners and nothing outlives its invocation."""
    events = [
        started(),
        sub_started("s1"),
        sub_started("s2"),
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "subagentRunId": "s1", "delta": "a"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m2", "subagentRunId": "s2", "delta": "b"},
        {
            "type": "TOOL_CALL_CHUNK",
            "toolCallId": "c",
            "toolCallName": "f",
            "parentMessageId": "m1",
            "subagentRunId": "s1",
            "delta": "{}",
        },
        {"type": "SUBAGENT_ERROR", "subagentRunId": "s1", "message": "failed"},
        {"type": "TEXT_MESSAGE_CHUNK", "subagentRunId": "s2", "delta": "c"},
        sub_finished("s2"),
        finished(),
    ]
    result = run(b"".join(orjson.dumps(e) + b"\n" for e in events))
    assert result.verdict.outcome is Outcome.COMPLETED, result.verdict.message
    ends = [e for e in result.events if e["type"] in ("TEXT_MESSAGE_END", "TOOL_CALL_END")]
    assert len(ends) == 3


# -- robustness and the report ---------------------------------------------------------


@pytest.mark.parametrize("kind", list(OPENERS))
def test_open_items_are_bounded_by_max_open_items(kind: str) -> None:
    def opener(n: int) -> Event:
        event = dict(OPENERS[kind][0][0])
        for field in ("messageId", "toolCallId", "stepName", "subagentRunId"):
            if field in event:
                event[field] = f"{event[field]}-{n}"
        return event

    ctx = StreamContext(Options(limits=Limits(max_open_items=3)))
    stage = Verify(ctx)
    events = [started(), *[opener(n) for n in range(4)]]
    with pytest.raises(StreamRejected) as info:
        through_built_in([stage], Batch(events, list(range(len(events)))))
    assert (info.value.code, info.value.event_index) == (c.LIMIT_OPEN_ITEMS.id, 4)
    assert "max_open_items" in str(info.value)
    # Closing makes room again: the limit is on what is open at once.
    stage = Verify(StreamContext(Options(limits=Limits(max_open_items=1))))
    events = in_run(
        *text("a"),
        *call("b"),
        STEP,
        STEP_END,
        sub_started("s1"),
        sub_finished("s1"),
        sub_started("s2"),
        sub_finished("s2"),
    )
    through_built_in([stage], Batch(events, list(range(len(events)))))


def test_an_event_it_cannot_read_is_rejected_not_a_crash() -> None:
    # Only reachable when enforce is missing from the pipeline.
    missing = {"type": "TEXT_MESSAGE_CONTENT", "delta": "x"}
    rejected(in_run(missing), c.VERIFY_UNREADABLE, "messageId")
    rejected(
        in_run({"type": "TEXT_MESSAGE_START", "messageId": ["not", "hashable"]}),
        c.VERIFY_UNREADABLE,
    )
    # Without a type, or not an object: verify reads the types from the batch, where such
    # an event has None, and still says what reading the event itself raises.
    rejected(in_run({"messageId": "m", "delta": "x"}), c.VERIFY_UNREADABLE, "KeyError: 'type'")
    rejected(in_run(["not", "an", "object"]), c.VERIFY_UNREADABLE, "TypeError")  # type: ignore[arg-type]


def test_the_cli_prints_one_line_per_run(tmp_path: Any) -> None:
    events = [error("down"), *in_run(run_id="r1", **interrupted(interrupt("i"))), started("r2")]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    out = io.StringIO()
    assert main(["check", str(path)], out) == 1
    lines = out.getvalue().splitlines()
    assert "  run (failed before it began): error: down" in lines
    assert "  run 'r1' (thread 't'): interrupted, 1 interrupt(s)" in lines
    assert "  run 'r2' (thread 't'): truncated" in lines
    out = io.StringIO()
    main(["check", str(path), "--format", "json"], out)
    assert [r["status"] for r in orjson.loads(out.getvalue())["runs"]] == [
        "error",
        "interrupted",
        "truncated",
    ]


# -- properties ----------------------------------------------------------------------------


@given(valid_stream(), st.integers(1, 7))
def test_valid_streams_pass_in_any_batching(events: list[Event], size: int) -> None:
    ctx = check(events, batch_size=size)
    assert all(r.status is not RunStatus.OPEN for r in ctx.runs)
    assert not ctx.diagnostics


@given(valid_stream(), st.data())
def test_a_valid_stream_cut_inside_a_run_is_truncated(events: list[Event], data: Any) -> None:
    cut = data.draw(st.integers(0, len(events) - 1))
    prefix = events[:cut]
    ends_closed = bool(prefix) and prefix[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")
    if ends_closed:
        check(prefix)
    else:
        with pytest.raises(StreamTruncated):
            check(prefix)


_STRUCTURAL = {
    "RUN_STARTED",
    "RUN_FINISHED",
    "STEP_STARTED",
    "STEP_FINISHED",
    "REASONING_START",
    "REASONING_END",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_END",
    "TOOL_CALL_START",
    "TOOL_CALL_END",
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_END",
}


@given(valid_stream(), st.data())
def test_losing_any_opener_or_closer_is_caught(events: list[Event], data: Any) -> None:
    """Drop one event that opens or closes something: the stream no longer passes —
    except where what is left may be legal: a closer inside a run that ends with RUN_ERROR
    (which abandons what is open), or the RUN_STARTED of a run that is only a RUN_ERROR,
    first or after a finished run (left as a failure before any run, or a late failure)."""
    positions = [i for i, event in enumerate(events) if event["type"] in _STRUCTURAL]
    position = data.draw(st.sampled_from(positions))
    kind = events[position]["type"]
    terminal = next(
        e["type"] for e in events[position:] if e["type"] in ("RUN_FINISHED", "RUN_ERROR")
    )
    closer = kind.endswith(("_END", "_FINISHED")) and kind != "RUN_FINISHED"
    before = [e["type"] for e in events[:position] if e["type"] in ("RUN_FINISHED", "RUN_ERROR")]
    bare_error = (
        kind == "RUN_STARTED"
        and events[position + 1]["type"] == "RUN_ERROR"
        and (not before or before[-1] == "RUN_FINISHED")
    )
    damaged = events[:position] + events[position + 1 :]
    if bare_error:
        check(damaged)
    elif closer and terminal == "RUN_ERROR":
        with contextlib.suppress(StreamRejected):  # caught only if something later needs it
            check(damaged)
    else:
        with pytest.raises(StreamRejected):  # a StreamTruncated is one too
            check(damaged)


@pytest.mark.parametrize("shape", ["deltas", "messages"])
def test_what_verify_keeps_does_not_grow_per_event(shape: str) -> None:
    """One message with many deltas keeps nothing per delta; many messages keep one id each."""

    def kept(n: int) -> int:
        if shape == "deltas":
            body = [text("m")[0], *[text("m")[1]] * n, text("m")[2]]
        else:
            body = [event for k in range(n // 3) for event in text(f"m{k}")]
        events = in_run(*body)
        stage = Verify(StreamContext(Options()))
        batch = Batch(events, list(range(len(events))))
        batch.types  # noqa: B018 - the batch's own (parse reads them in a pipeline), not verify's
        tracemalloc.start()
        # Driven by hand (verify never suspends): no event loop in the figure.
        with pytest.raises(StopIteration):
            stage.process(batch).send(None)
        size, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return size

    small, large = kept(3_000), kept(30_000)
    if shape == "deltas":
        assert large < small + 2_000  # flat: nothing per event
    else:
        assert large / 10_000 < 300  # one small entry per message id (dicts grow in steps)
