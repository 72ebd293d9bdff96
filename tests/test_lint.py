"""lint: each producer finding on the stream that shows it, and silence where the producer is
right; verify's attribution rule in both arrival orders; a property over valid streams.

Streams go through the default pipeline as ``bytes`` (JSON lines), so each finding is
checked as a user meets it: a diagnostic beside a completed verdict.
"""

from __future__ import annotations

import io
import json
from typing import Any

import orjson
import pytest
from agui_pipeline import Outcome, Pipeline, RunResult
from agui_pipeline import catalog as c
from agui_pipeline.cli import main
from agui_pipeline.delivery.report import producer_report
from agui_pipeline.errors import Diagnostic
from hypothesis import given
from hypothesis import strategies as st

from benchmarks import workload
from tests.conftest import corpus_file, run
from tests.streams import valid_stream
from tests.test_verify import call, check, in_run, rejected, reported, tagged, text

pytestmark = pytest.mark.usefixtures("built_in_run")  # every rule on every path (conftest)

Event = dict[str, Any]
THREAD, RUN = "t1", "r1"


def lint(events: list[Event], run_input: dict[str, Any] | None = None) -> RunResult:
    """The default pipeline over ``events``; the stream must be accepted."""
    data = b"".join(orjson.dumps(event) + b"\n" for event in events)
    result = run(data, run_input=run_input)
    assert result.verdict.outcome is Outcome.COMPLETED, result.verdict.message
    return result


def findings(result: RunResult) -> list[Diagnostic]:
    return [d for d in result.diagnostics if d.code.startswith("lint.") and d.severity != "info"]


def codes(result: RunResult) -> list[str]:
    return [d.code for d in findings(result)]


def one_run(*events: Event, **outcome: Any) -> list[Event]:
    finish: Event = {"type": "RUN_FINISHED", "threadId": THREAD, "runId": RUN}
    if outcome:
        finish["outcome"] = outcome
    return [{"type": "RUN_STARTED", "threadId": THREAD, "runId": RUN}, *events, finish]


def message(message_id: str, *deltas: str, role: str = "assistant", **extra: Any) -> list[Event]:
    start = {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": role, **extra}
    return [
        start,
        *({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": d} for d in deltas),
        {"type": "TEXT_MESSAGE_END", "messageId": message_id},
    ]


def tool(call_id: str, name: str, *deltas: str, parent: str | None = None) -> list[Event]:
    start: Event = {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name}
    if parent is not None:
        start["parentMessageId"] = parent
    return [
        start,
        *({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": d} for d in deltas),
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
    ]


def result_event(call_id: str, message_id: str, content: str = "ok") -> Event:
    return {
        "type": "TOOL_CALL_RESULT",
        "messageId": message_id,
        "toolCallId": call_id,
        "content": content,
        "role": "tool",
    }


def snapshot(*messages: dict[str, Any]) -> Event:
    return {"type": "MESSAGES_SNAPSHOT", "messages": list(messages)}


def assistant(message_id: str, content: str | None, *calls: tuple[str, str, str]) -> Event:
    restated: Event = {"id": message_id, "role": "assistant"}
    if content is not None:
        restated["content"] = content
    if calls:
        restated["toolCalls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    return restated


def run_input(*messages: dict[str, Any], tools: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "threadId": THREAD,
        "runId": RUN,
        "messages": list(messages),
        "tools": [{"name": n, "description": n, "parameters": {"type": "object"}} for n in tools],
        "state": {},
        "context": [],
        "forwardedProps": {},
    }


# -- verify: one attribution rule in both arrival orders (/spec/1.1/events/subagents) --------


def test_an_untagged_call_inherits_its_message_whichever_arrives_first() -> None:
    # The message first: the call inherits s1.
    check(in_run(*text("m", "s1"), *call("c", parent="m")))
    # The call first: the same judgement once the message arrives.
    ctx = check(in_run(*call("c", parent="m"), *text("m", "s1")))
    assert ctx.runs[0].status == "finished"
    # Two untagged calls ahead of their message, then the message: both inherit.
    check(in_run(*call("c", parent="m"), *call("d", parent="m"), *text("m", "s1")))


def test_an_inherited_owner_binds_the_calls_continuations_in_both_orders() -> None:
    # Message first: the call is s1's, so a continuation tagged s2 disagrees.
    events = call("c", parent="m")
    events[2] = tagged(events[2], "s2")
    rejected(in_run(*text("m", "s1"), *events[:2], events[2]), c.VERIFY_ATTRIBUTION)
    # Call started first, message arrives while it is open, then the s2-tagged end.
    rejected(
        in_run(events[0], events[1], *text("m", "s1"), events[2]),
        c.VERIFY_ATTRIBUTION,
    )
    # An end tagged with the inherited owner agrees, in both orders.
    events[2] = tagged(events[2], "s1")
    check(in_run(*text("m", "s1"), *events))
    check(in_run(events[0], events[1], *text("m", "s1"), events[2]))


def test_a_tagged_call_disagreeing_with_its_message_is_reported_in_both_orders() -> None:
    # subagents.mdx binds the producer here ("MUST NOT attribute a tool call to one owner
    # while the message carrying it is attributed to another") and words no consumer verdict.
    reported(in_run(*text("m", "s1"), *call("c", "s2", parent="m")), c.VERIFY_CALL_ATTRIBUTION)
    reported(in_run(*call("c", "s2", parent="m"), *text("m", "s1")), c.VERIFY_CALL_ATTRIBUTION)
    # An untagged call ahead of it settles nothing: the tagged one still decides.
    reported(
        in_run(*call("c", parent="m"), *call("d", "s2", parent="m"), *text("m", "s1")),
        c.VERIFY_CALL_ATTRIBUTION,
    )


# -- quiet where the producer is right ----------------------------------------------------


def test_the_conformance_corpus_quiet_run_stays_quiet() -> None:
    fixture = json.loads(corpus_file("conformant-run-is-quiet").read_text())
    result = lint(fixture["stream"])
    assert result.warnings == []
    assert findings(result) == []


def test_the_benchmark_workload_is_quiet() -> None:
    result = lint(workload.events(3000, seed=7))
    assert codes(result) == []


def test_a_faithful_snapshot_and_answered_history_are_quiet() -> None:
    history = (
        {"id": "u0", "role": "user", "content": "weather?"},
        assistant("a0", None, ("c0", "weather", '{"city": "Paris"}')),
        {"id": "t0", "role": "tool", "toolCallId": "c0", "content": "sunny"},
    )
    events = one_run(
        *message("a1", "It is ", "sunny."),
        *tool("c1", "lookup", '{"q":', ' "x"}', parent="a1"),
        result_event("c1", "t1"),
        *tool("c2", "confirm", parent="a1"),  # no arguments at all: fine
        snapshot(
            *history,
            assistant("a1", "It is sunny.", ("c1", "lookup", '{"q":"x"}'), ("c2", "confirm", "")),
            {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "ok"},
        ),
    )
    result = lint(events, run_input(*history, tools=("confirm",)))
    # c2 is a frontend call left unanswered, so pendingToolCallIds is due; name it.
    assert codes(result) == ["lint.pending-omitted"]
    events[-1]["outcome"] = {"type": "success", "pendingToolCallIds": ["c2"]}
    assert codes(lint(events, run_input(*history, tools=("confirm",)))) == []


# -- each finding ----------------------------------------------------------------------------


def test_a_snapshot_restating_a_streamed_answer_differently() -> None:
    events = one_run(*message("a1", "Paris is ", "sunny."), snapshot(assistant("a1", "")))
    result = lint(events)
    (finding,) = findings(result)
    assert finding.code == "lint.snapshot-contradicts-stream"
    assert finding.pointer == "/messages/0/content" and finding.event_index == 5
    assert "'Paris is sunny.'" in finding.message and "empty text" in finding.message
    assert finding.spec == "/spec/1.1/events/state"
    # The same text restated is quiet, and so is a message from an earlier run.
    events[-2] = snapshot(assistant("a1", "Paris is sunny."))
    assert codes(lint(events)) == []


def test_a_snapshot_restating_streamed_arguments_differently() -> None:
    # The dropped first chunk: the stream carries `: "Paris"}`, the snapshot the right text.
    streamed = tool("c1", "weather", ': "Paris"}', parent="a1")
    right = assistant("a1", None, ("c1", "weather", '{"city": "Paris"}'))
    result = lint(one_run(*message("a1"), *streamed, snapshot(right)))
    assert codes(result) == ["lint.snapshot-contradicts-stream", "lint.arguments-not-json"]
    contradiction, not_json = findings(result)
    assert contradiction.pointer == "/messages/0/toolCalls/0/function/arguments"
    assert not_json.event_index == 5 and not_json.pointer == "/toolCallId"
    # Without a snapshot (a run that fails), the argument check still names it.
    failed = [*one_run(*message("a1"), *streamed)[:-1], {"type": "RUN_ERROR", "message": "x"}]
    assert codes(lint(failed)) == ["lint.arguments-not-json"]
    # The same JSON value re-serialised is a faithful restatement.
    good = tool("c1", "weather", '{"city":', ' "Paris"}', parent="a1")
    compact = assistant("a1", None, ("c1", "weather", '{"city":"Paris"}'))
    assert codes(lint(one_run(*message("a1"), *good, snapshot(compact)))) == []


def test_a_second_result_for_one_call() -> None:
    streamed = [*tool("c1", "f", "{}"), result_event("c1", "t1")]
    twice = lint(one_run(*streamed, result_event("c1", "t2")))
    assert codes(twice) == ["lint.second-tool-result"]
    assert findings(twice)[0].event_index == 5
    # A snapshot minting the streamed result under a new id.
    renamed = snapshot(
        assistant("c1", None, ("c1", "f", "{}")),  # the call's carrier, under its own id
        {"id": "t9", "role": "tool", "toolCallId": "c1", "content": "ok"},
    )
    # The snapshot drops t1 (state.mdx), so the Conversation holds one result: a rename,
    # not a second result.
    minted = lint(one_run(*streamed, renamed))
    assert codes(minted) == ["lint.snapshot-renames-message"]
    assert findings(minted)[0].pointer == "/messages/1/id"
    assert [m["id"] for m in minted.conversation.messages if m["role"] == "tool"] == ["t9"]
    # Keeping t1 beside t9: two results held.
    kept = snapshot(*renamed["messages"], {"id": "t1", "role": "tool", "toolCallId": "c1"})
    kept["messages"][2]["content"] = "ok"
    both = lint(one_run(*streamed, kept))
    assert codes(both) == ["lint.second-tool-result"]
    assert findings(both)[0].pointer == "/messages/2/toolCallId"
    assert [m["id"] for m in both.conversation.messages if m["role"] == "tool"] == ["t1", "t9"]
    # The same id restated is quiet.
    renamed["messages"][1]["id"] = "t1"
    assert codes(lint(one_run(*streamed, renamed))) == []
    # A call the input already answered, answered again on the stream.
    history = (
        assistant("a0", None, ("c0", "f", "{}")),
        {"id": "t0", "role": "tool", "toolCallId": "c0", "content": "ok"},
    )
    again = lint(one_run(result_event("c0", "t5")), run_input(*history))
    assert codes(again) == ["lint.second-tool-result"]


def test_a_resumed_runs_result_for_a_call_in_its_history_is_quiet() -> None:
    history = (assistant("a0", None, ("c0", "f", "{}")),)
    assert codes(lint(one_run(result_event("c0", "t0")), run_input(*history))) == []


def test_a_reopening_that_disagrees() -> None:
    events = one_run(*tool("c1", "f", "{"), *tool("c1", "g", "}"))
    result = lint(events)
    assert codes(result) == ["lint.reopen-disagrees"]
    assert "toolCallName 'g' (was 'f')" in findings(result)[0].message
    assert codes(lint(one_run(*tool("c1", "f", "{"), *tool("c1", "f", "}")))) == []
    # A text message reopened under another name; and a user message of the input reopened
    # as an assistant message.
    renamed = one_run(*message("m", "a", name="x"), *message("m", "b", name="y"))
    assert codes(lint(renamed)) == ["lint.reopen-disagrees"]
    history = ({"id": "u0", "role": "user", "content": "hi"},)
    reopened = lint(one_run(*message("u0", " there")), run_input(*history))
    assert codes(reopened) == ["lint.reopen-disagrees"]
    assert "role 'assistant' (was 'user')" in findings(reopened)[0].message


def test_history_restreamed_as_new_triads() -> None:
    history = (
        assistant("a0", None, ("c0", "confirm", '{"ok": true}')),
        {"id": "t0", "role": "tool", "toolCallId": "c0", "content": "yes"},
    )
    # The answered frontend call re-emitted as new material, without its parent.
    events = one_run(*tool("c0", "confirm", '{"ok":', " true}"), *message("a1", "Done."))
    result = lint(events, run_input(*history, tools=("confirm",)))
    assert codes(result) == ["lint.history-restreamed"]
    assert findings(result)[0].event_index == 4
    # New arguments appended to a call of the history are new material, not a restatement.
    more = one_run(*tool("c0", "confirm", ""), *message("a1", "Done."))
    assert codes(lint(more, run_input(*history))) == []
    # A message of the history streamed again word for word.
    text_history = (assistant("a0", "Hello."),)
    assert codes(lint(one_run(*message("a0", "Hello.")), run_input(*text_history))) == [
        "lint.history-restreamed"
    ]


def test_history_in_an_input_the_run_echoes_is_read_mid_batch() -> None:
    """No run input from the caller: RUN_STARTED's echoed ``input`` holds the history, and
    the events after it in the same read are judged against it (the lint's table looks the
    rest of the batch up again, with the message ends it now needs)."""
    text_history = run_input(assistant("a0", "Hello."))
    events = one_run(*message("a0", "Hello."), *message("a1", "New."))
    events[0] = {**events[0], "input": text_history}
    result = lint(events)  # one read: the whole stream is one batch
    assert codes(result) == ["lint.history-restreamed"]
    assert findings(result)[0].event_index == 3


def test_a_run_past_the_text_budget_is_no_longer_compared_and_says_so() -> None:
    """What lint holds of a run's text is bounded by max_text_chars: past it, the run's
    snapshot is not compared (nothing held to compare with) and lint says why, once; the
    next run is compared again."""
    from agui_pipeline import Limits, Pipeline

    pipeline = Pipeline(limits=Limits(max_text_chars=5_000))
    messages = [event for number in range(60) for event in message(f"m{number}", "x" * 100)]
    restated = [assistant(f"m{number}", "x" * 100) for number in range(60)]
    restated[0]["content"] = "other"
    long_run = one_run(*messages, snapshot(*restated))
    second = [
        {**event, "runId": "r2"} if "runId" in event else event
        for event in one_run(*message("n1", "Hello."), snapshot(assistant("n1", "Bye.")))
    ]
    data = b"".join(orjson.dumps(event) + b"\n" for event in long_run + second)
    result = run(data, pipeline)
    assert result.verdict.outcome is Outcome.COMPLETED
    assert [d.code for d in result.diagnostics if d.code == "lint.text-budget"] == [
        "lint.text-budget"
    ]
    (budget,) = [d for d in result.diagnostics if d.code == "lint.text-budget"]
    assert budget.event_index == len(long_run) - 2  # the snapshot that read the text
    assert "max_text_chars=5000" in budget.message and budget.spec
    (contradiction,) = findings(result)  # the second run's, not the first's
    assert contradiction.code == "lint.snapshot-contradicts-stream"
    assert contradiction.event_index == len(long_run) + 4  # the second run's snapshot
    # Within the budget, the first run's snapshot is compared as ever.
    roomy = run(b"".join(orjson.dumps(e) + b"\n" for e in long_run))
    assert codes(roomy) == ["lint.snapshot-contradicts-stream"]


def test_argument_deltas_joined_at_once_keep_their_order_after_held_ones() -> None:
    """Deltas held among other events (a mixed stretch), then a stretch of the same call's
    deltas alone: joined in stream order, not the later ones first (found by the property
    over both spellings: `\"`, `a`, `\"` read as `\"\"a`)."""
    start, *deltas, end = tool("c1", "f", '"', "a", '"')
    activity = {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "p", "content": {}}
    custom = {"type": "CUSTOM", "name": "x", "value": 1}
    events = one_run(start, deltas[0], custom, deltas[1], custom, activity, deltas[2], end)
    assert codes(lint(events)) == []


def test_argument_deltas_of_calls_open_together_are_told_apart() -> None:
    """One call open: its argument deltas are joined as they come; two open: each delta
    goes to its own call. Either way the text judged and compared is each call's own."""
    a, b = tool("ca", "first", '{"a": ', "1}"), tool("cb", "second", '{"b": ', "2}")
    interleaved = [a[0], b[0], a[1], b[1], a[2], b[2], a[3], b[3]]  # starts, deltas, ends
    restated = snapshot(  # each call on its carrier (no parentMessageId: the call's own id)
        assistant("ca", None, ("ca", "first", '{"a": 1}')),
        assistant("cb", None, ("cb", "second", '{"b": 2}')),
    )
    for calls in (a + b, interleaved):
        assert codes(lint(one_run(*calls, restated))) == []
    broken = [b[0], a[0], a[1], b[1], a[2], b[3], a[3]]  # cb loses its second delta
    result = lint(one_run(*broken))
    assert codes(result) == ["lint.arguments-not-json"]
    assert "'cb'" in findings(result)[0].message


def test_a_frontend_call_left_pending_without_pending_tool_call_ids() -> None:
    events = one_run(*message("a1"), *tool("c1", "confirm", "{}", parent="a1"))
    result = lint(events, run_input(tools=("confirm",)))
    (finding,) = findings(result)
    assert finding.code == "lint.pending-omitted" and finding.event_index == 6
    assert "'c1'" in finding.message
    # Named, or the call a backend one: quiet; and an interrupted run derives them.
    named = one_run(*events[1:-1], type="success", pendingToolCallIds=["c1"])
    assert codes(lint(named, run_input(tools=("confirm",)))) == []
    # A call to a tool the input did not list, left unanswered: no one will answer it.
    assert codes(lint(events, run_input(tools=("other",)))) == ["lint.pending-unlisted-tool"]
    interrupted = one_run(*events[1:-1], type="interrupt", interrupts=[{"id": "i", "reason": "r"}])
    assert codes(lint(interrupted, run_input(tools=("confirm",)))) == []


def test_run_identity_against_the_input() -> None:
    events = one_run(*message("a1", "hi"))
    other_thread = {**run_input(), "threadId": "t9"}
    result = lint(events, other_thread)
    assert codes(result) == ["lint.run-identity"]
    assert findings(result)[0].pointer == "/threadId"
    other_run = {**run_input(), "runId": "r9"}
    assert [d.pointer for d in findings(lint(events, other_run))] == ["/runId"]
    # A replayed run before the requested one carries its own runId: quiet.
    replay = [*one_run(*message("a0", "x"))]
    replay[0]["runId"] = replay[-1]["runId"] = "r0"
    assert codes(lint([*replay, *events], run_input())) == []


def test_an_interrupt_naming_an_unknown_call() -> None:
    interrupt = {"id": "i1", "reason": "approval", "toolCallId": "c9"}
    events = one_run(*tool("c1", "f", "{}"), type="interrupt", interrupts=[interrupt])
    result = lint(events)
    assert codes(result) == ["lint.interrupt-unknown-call"]
    assert findings(result)[0].pointer == "/outcome/interrupts/0/toolCallId"
    interrupt["toolCallId"] = "c1"
    assert codes(lint(events)) == []


def test_token_usage_arithmetic() -> None:
    usage = {"inputTokens": 100, "outputTokens": 20, "totalTokens": 120, "cachedInputTokens": 40}
    usage |= {"cacheWriteInputTokens": 60, "reasoningTokens": 20}
    events = one_run(*message("a1", "hi"))
    events[-1]["usage"] = [usage]
    assert codes(lint(events)) == []  # parts within totals; absent counts not judged
    assert codes(lint([*events[:1], {**events[-1], "usage": [{"outputTokens": 5}]}])) == []
    events[-1]["usage"] = [{**usage, "cacheWriteInputTokens": 61}]
    (disjoint,) = findings(lint(events))
    assert disjoint.code == "lint.usage-arithmetic"
    assert disjoint.pointer == "/usage/0/cacheWriteInputTokens"
    assert "disjoint" in disjoint.message
    events[-1]["usage"] = [usage, {**usage, "totalTokens": 100, "reasoningTokens": 21}]
    assert [d.pointer for d in findings(lint(events))] == [
        "/usage/1/reasoningTokens",
        "/usage/1/totalTokens",
    ]
    failed = [
        events[0],
        {"type": "RUN_ERROR", "message": "x", "usage": [{**usage, "totalTokens": 1}]},
    ]
    assert codes(lint(failed)) == ["lint.usage-arithmetic"]


@pytest.mark.parametrize(("total", "found"), [(119, True), (120, False), (121, True)])
def test_total_tokens_is_the_sum_exactly(total: int, found: bool) -> None:
    """``totalTokens`` against ``inputTokens + outputTokens`` (100 + 20): one below and one
    above the sum are both findings; only the sum itself is not."""
    events = one_run(*message("a1", "hi"))
    events[-1]["usage"] = [{"inputTokens": 100, "outputTokens": 20, "totalTokens": total}]
    pointers = [d.pointer for d in findings(lint(events))]
    assert pointers == (["/usage/0/totalTokens"] if found else [])


def test_the_run_report_counts_findings_and_the_producer_report_groups_them() -> None:
    bad = [*tool("c1", "f", "{"), *tool("c2", "f", "nope"), *tool("c3", "f", "{}")]
    result = lint(one_run(*bad))
    (summary,) = [d for d in result.diagnostics if d.code == "lint.run-report"]
    assert "lint.arguments-not-json ×2" in summary.message
    report = producer_report(result.diagnostics)
    (group,) = report.groups
    assert group.code == "lint.arguments-not-json" and group.count == 2
    assert group.first.event_index == 3
    assert "lint.arguments-not-json: 2" in report.render()
    assert report.to_dict()["groups"][0]["count"] == 2
    assert producer_report(lint(one_run(*tool("c3", "f", "{}"))).diagnostics).groups == []


# -- the property -----------------------------------------------------------------------------


def faithful_snapshot(events: list[Event]) -> list[Event]:
    """Each run that finishes restates what it streamed, faithfully, just before it does."""
    out: list[Event] = []
    texts: dict[str, list[str]] = {}
    calls: dict[str, tuple[str, list[str]]] = {}
    results: dict[str, str] = {}
    carriers: dict[str, str] = {}
    for event in events:
        kind = event["type"]
        if kind == "RUN_STARTED":
            texts, calls, results, carriers = {}, {}, {}, {}
        elif kind == "TEXT_MESSAGE_START":
            texts[event["messageId"]] = []
        elif kind == "TEXT_MESSAGE_CONTENT":
            texts[event["messageId"]].append(event["delta"])
        elif kind == "TOOL_CALL_START":
            calls[event["toolCallId"]] = (event["toolCallName"], [])
            if "parentMessageId" in event:
                carriers[event["toolCallId"]] = event["parentMessageId"]
        elif kind == "TOOL_CALL_ARGS":
            calls[event["toolCallId"]][1].append(event["delta"])
        elif kind == "TOOL_CALL_RESULT":
            results[event["toolCallId"]] = event["messageId"]
        elif kind == "RUN_FINISHED":
            restated: list[dict[str, Any]] = [
                {"id": i, "role": "assistant", "content": "".join(t)} for i, t in texts.items()
            ]
            # Each call on the message that carries it: the one it named, or, none named,
            # the one the Conversation holds under the call's own id.
            restated += [
                assistant(carriers.get(i, i), None, (i, n, "".join(a)))
                for i, (n, a) in calls.items()
            ]
            restated += [
                {"id": m, "role": "tool", "toolCallId": i, "content": ""}
                for i, m in results.items()
            ]
            out.append(snapshot(*restated))
        out.append(event)
    return out


@given(events=valid_stream(), restate=st.booleans())
def test_valid_streams_with_or_without_faithful_snapshots_have_no_findings(
    events: list[Event], restate: bool
) -> None:
    assert codes(lint(faithful_snapshot(events) if restate else events)) == []


@given(events=valid_stream(), data=st.data())
def test_restating_a_streamed_message_with_changed_content_gives_one_finding(
    events: list[Event], data: st.DataObject
) -> None:
    streamed = faithful_snapshot(events)
    targets = [
        (position, number)
        for position, event in enumerate(streamed)
        if event["type"] == "MESSAGES_SNAPSHOT"
        for number, restated in enumerate(event["messages"])
        if restated["role"] == "assistant" and "content" in restated
    ]
    if not targets:
        streamed = one_run(*message("m", "text"), snapshot(assistant("m", "text")))
        targets = [(1 + 3, 0)]
    position, number = data.draw(st.sampled_from(targets))
    restated = streamed[position]["messages"][number]
    restated["content"] += data.draw(st.text(min_size=1, max_size=5))
    (finding,) = findings(lint(streamed))
    assert finding.code == "lint.snapshot-contradicts-stream"
    assert finding.event_index == position
    assert finding.pointer == f"/messages/{number}/content"


@given(events=valid_stream(), data=st.data())
def test_a_snapshot_dropping_or_renaming_a_streamed_message_gives_one_finding(
    events: list[Event], data: st.DataObject
) -> None:
    """state.mdx: a snapshot replaces by id, so a UI drops what the snapshot leaves out. Any
    message a run streamed (text or tool result), left out or restated under a fresh id."""
    streamed = faithful_snapshot(events)
    targets = [
        (position, number)
        for position, event in enumerate(streamed)
        if event["type"] == "MESSAGES_SNAPSHOT"
        for number, restated in enumerate(event["messages"])
    ]
    if not targets:
        streamed = one_run(*message("m", "text"), snapshot(assistant("m", "text")))
        targets = [(1 + 3, 0)]
    position, number = data.draw(st.sampled_from(targets))
    messages = streamed[position]["messages"]
    old_id, renamed = messages[number]["id"], data.draw(st.booleans())
    if renamed:
        messages[number] = {**messages[number], "id": "fresh-" + old_id}
    else:
        del messages[number]
    (finding,) = findings(lint(streamed))
    assert finding.event_index == position
    assert repr(old_id) in finding.message
    copy = messages[number] if renamed else None
    if copy is not None and (
        copy["role"] == "tool" or copy.get("content") or copy.get("toolCalls")
    ):
        assert finding.code == "lint.snapshot-renames-message"
        assert finding.pointer == f"/messages/{number}/id"
        assert repr(copy["id"]) in finding.message
    else:  # an empty text says nothing of whose copy it is: a message left out
        assert finding.code == "lint.snapshot-drops-message"


@given(events=valid_stream(), restate=st.booleans(), data=st.data())
def test_lint_changes_no_event_verdict_or_conversation(
    events: list[Event], restate: bool, data: st.DataObject
) -> None:
    streamed = faithful_snapshot(events) if restate else events
    for event in streamed:  # some restatements changed, so findings are made too
        if event["type"] == "MESSAGES_SNAPSHOT" and data.draw(st.booleans()):
            for restated in event["messages"]:
                restated["content"] = "changed"
    encoded = b"".join(orjson.dumps(event) + b"\n" for event in streamed)
    linted, plain = run(encoded), run(encoded, Pipeline().without("lint"))
    assert linted.verdict.outcome is plain.verdict.outcome is Outcome.COMPLETED
    assert linted.events == plain.events == streamed
    assert linted.conversation.to_dict() == plain.conversation.to_dict()
    others = [d for d in linted.diagnostics if not d.code.startswith("lint.")]
    assert others == plain.diagnostics


@pytest.mark.parametrize("order", ["message first", "call first"])
def test_the_pipeline_accepts_an_inherited_call_in_either_order(order: str) -> None:
    held = [*message("m", "hi", subagentRunId="s1"), *tool("c", "f", "{}", parent="m")]
    if order == "call first":
        held = held[3:] + held[:3]
    assert codes(lint(one_run(*held))) == []


def test_check_text_output_ends_with_the_producer_report(tmp_path: Any) -> None:
    recording = tmp_path / "run.jsonl"
    events = one_run(*tool("c1", "f", "{"), *tool("c2", "f", "nope"))
    recording.write_bytes(b"".join(orjson.dumps(event) + b"\n" for event in events))
    out = io.StringIO()
    assert main(["check", str(recording)], out=out) == 1  # warnings fail the default gate
    report = out.getvalue().split("producer report", 1)[1]
    assert "lint.arguments-not-json: 2 (first at event 3, /toolCallId)" in report
    clean = tmp_path / "clean.jsonl"
    clean.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in one_run(*message("m", "hi"))))
    out = io.StringIO()
    assert main(["check", str(clean)], out=out) == 0
    assert "producer report" not in out.getvalue()


def test_a_long_run_read_in_pieces_is_compared_whole() -> None:
    # More deltas than lint sets aside before folding them into text, over many reads.
    deltas = [f"w{n} " for n in range(10_000)]
    events = one_run(*message("a1", *deltas), snapshot(assistant("a1", "".join(deltas))))
    data = b"".join(orjson.dumps(event) + b"\n" for event in events)
    reads = [data[start : start + 4096] for start in range(0, len(data), 4096)]
    result = run(reads)
    assert result.verdict.outcome is Outcome.COMPLETED
    assert codes(result) == []
    events[-2] = snapshot(assistant("a1", "".join(deltas[:-1])))
    data = b"".join(orjson.dumps(event) + b"\n" for event in events)
    assert codes(run([data[start : start + 4096] for start in range(0, len(data), 4096)])) == [
        "lint.snapshot-contradicts-stream"
    ]
