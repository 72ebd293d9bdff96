"""The Conversation: what a stream materialises, one rule per test.

The corpus covers the common paths (triads, tool results with parts, state
snapshots and deltas, activity snapshot then delta); these are the rules it
does not reach. The Conversation is driven directly, after the metadata stage,
with events as verification would let them through.
"""

from __future__ import annotations

import copy
from typing import Any

import anyio
import orjson
import pytest
from agui_pipeline import Batch, Options, Pipeline, StreamContext
from agui_pipeline.catalog import (
    CONVERSATION_ACTIVITY_PATCH,
    CONVERSATION_ACTIVITY_TARGET,
    CONVERSATION_ENCRYPTED_TARGET,
    CONVERSATION_NO_CARRIER,
    CONVERSATION_STATE_PATCH,
)
from agui_pipeline.model.conversation import _JOIN_AT, Conversation
from agui_pipeline.model.patch import json_equal
from agui_pipeline.stages.metadata import Metadata
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import run
from tests.streams import encode, split, valid_stream

Event = dict[str, Any]

RS: Event = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
RF: Event = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def materialise(
    events: list[Event], run_input: dict[str, Any] | None = None
) -> tuple[Conversation, StreamContext]:
    ctx = StreamContext(Options(), run_input)
    stage = Metadata(ctx)
    conversation = Conversation(ctx)
    batch = Batch(events, list(range(len(events))))
    anyio.run(stage.process, batch)
    conversation.apply(batch)
    return conversation, ctx


def text(message_id: str, content: str, **start: Any) -> list[Event]:
    return [
        {"type": "TEXT_MESSAGE_START", "messageId": message_id, **start},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": content},
        {"type": "TEXT_MESSAGE_END", "messageId": message_id},
    ]


def codes(ctx: StreamContext) -> list[str]:
    return [d.code for d in ctx.diagnostics]


# -- text and reasoning messages -------------------------------------------------------


def test_role_and_name_come_from_the_start_and_an_absent_role_is_assistant() -> None:
    conversation, _ = materialise(text("u", "hi", role="user", name="ann") + text("a", "yo"))
    assert conversation.messages == [
        {"id": "u", "role": "user", "content": "hi", "name": "ann"},
        {"id": "a", "role": "assistant", "content": "yo"},
    ]


def test_a_reopened_message_appends_and_keeps_its_established_role() -> None:
    events = text("m", "one ", role="assistant") + text("m", "two", role="user")
    conversation, _ = materialise(events)
    assert conversation.messages == [{"id": "m", "role": "assistant", "content": "one two"}]


def test_attribution_is_kept_on_the_message() -> None:
    conversation, _ = materialise(text("m", "x", subagentRunId="s1"))
    assert conversation.messages[0]["subagentRunId"] == "s1"


def test_reasoning_messages_materialise_with_the_reasoning_role() -> None:
    events = [
        {"type": "REASONING_START", "messageId": "span"},
        {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "hmm"},
        {"type": "REASONING_MESSAGE_END", "messageId": "r1"},
        {"type": "REASONING_END", "messageId": "span"},
    ]
    conversation, _ = materialise(events)
    assert conversation.messages == [{"id": "r1", "role": "reasoning", "content": "hmm"}]


# -- tool calls ----------------------------------------------------------------------------


def call(call_id: str, name: str, args: str, **start: Any) -> list[Event]:
    return [
        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name, **start},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": args},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
    ]


def test_calls_with_one_parent_share_its_message_in_order() -> None:
    events = (
        text("m", "looking")
        + call("c1", "a", "{}", parentMessageId="m")
        + call("c2", "b", "[]", parentMessageId="m")
    )
    conversation, _ = materialise(events)
    (message,) = conversation.messages
    assert [c["id"] for c in message["toolCalls"]] == ["c1", "c2"]
    assert message["toolCalls"][1]["function"] == {"name": "b", "arguments": "[]"}


def test_a_call_with_no_parent_gets_an_assistant_message_of_its_own() -> None:
    conversation, _ = materialise(call("c1", "search", '{"q":1}', subagentRunId="s"))
    assert conversation.messages == [
        {
            "id": "c1",
            "role": "assistant",
            "subagentRunId": "s",
            "toolCalls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"q":1}'},
                }
            ],
        }
    ]


def test_a_text_message_opened_on_a_call_made_parent_gains_content() -> None:
    events = call("c1", "f", "{}", parentMessageId="m") + text("m", "after")
    conversation, _ = materialise(events)
    assert conversation.messages[0]["content"] == "after"
    assert conversation.messages[0]["toolCalls"][0]["id"] == "c1"


def test_a_parent_that_is_not_an_assistant_message_holds_no_call_and_warns() -> None:
    events = text("u", "hi", role="user") + call("c1", "f", "{}", parentMessageId="u")
    conversation, ctx = materialise(events)
    assert "toolCalls" not in conversation.messages[0]
    assert codes(ctx) == [CONVERSATION_NO_CARRIER.id]


def test_a_result_with_string_content_mints_a_tool_message_after_the_call() -> None:
    result: Event = {
        "type": "TOOL_CALL_RESULT",
        "messageId": "t1",
        "toolCallId": "c1",
        "content": "done",
        "role": "tool",
    }
    events = [*call("c1", "f", "{}", parentMessageId="m"), result]
    conversation, _ = materialise(events)
    assert conversation.messages[1] == {
        "id": "t1",
        "role": "tool",
        "toolCallId": "c1",
        "content": "done",
    }


# -- state ------------------------------------------------------------------------------------


def test_state_starts_from_the_run_input_or_the_empty_object() -> None:
    assert materialise([])[0].state == {}
    state = {"plan": [1]}
    conversation, _ = materialise(
        [{"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/plan/-", "value": 2}]}],
        {"threadId": "t", "runId": "r", "messages": [], "state": state},
    )
    assert conversation.state == {"plan": [1, 2]}
    assert state == {"plan": [1]}  # the caller's input is not touched


def test_a_snapshot_of_false_replaces_the_state() -> None:
    events: list[Event] = [
        {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}},
        {"type": "STATE_SNAPSHOT", "snapshot": False},
    ]
    assert materialise(events)[0].state is False


def test_a_delta_that_does_not_apply_warns_and_leaves_the_state_exactly() -> None:
    events: list[Event] = [
        {"type": "STATE_SNAPSHOT", "snapshot": {"items": ["a", "b"], "n": 1}},
        {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "remove", "path": "/items/0"},
                {"op": "replace", "path": "/n", "value": 2},
                {"op": "test", "path": "/n", "value": 3},
            ],
        },
    ]
    conversation, ctx = materialise(events)
    assert conversation.state == {"items": ["a", "b"], "n": 1}
    (warning,) = ctx.diagnostics
    assert warning.code == CONVERSATION_STATE_PATCH.id
    assert warning.pointer == "/delta/2"
    assert "Failed to apply state patch" in str(warning)


@pytest.mark.parametrize("op", [["add"], {"op": "add"}, 7])
def test_an_operation_whose_op_is_not_a_string_is_a_failed_patch_not_a_crash(op: Any) -> None:
    # A hostile producer's op (an array, an object) cannot be looked up as an operation
    # name: the patch fails and says why, the state stays as it was (issue 34).
    delta: Event = {"type": "STATE_DELTA", "delta": [{"op": op, "path": "/n", "value": 1}]}
    conversation, ctx = materialise([{"type": "STATE_SNAPSHOT", "snapshot": {"n": 0}}, delta])
    assert conversation.state == {"n": 0}
    (warning,) = ctx.diagnostics
    assert warning.code == CONVERSATION_STATE_PATCH.id
    assert "op is a string" in str(warning)


def test_the_state_never_aliases_the_events_that_built_it() -> None:
    snapshot: Event = {"type": "STATE_SNAPSHOT", "snapshot": {"list": [1]}}
    add: Event = {
        "type": "STATE_DELTA",
        "delta": [{"op": "add", "path": "/obj", "value": {"k": []}}],
    }
    later: Event = {
        "type": "STATE_DELTA",
        "delta": [
            {"op": "add", "path": "/list/-", "value": 2},
            {"op": "add", "path": "/obj/k/-", "value": 3},
        ],
    }
    sent = copy.deepcopy([snapshot, add, later])
    conversation, _ = materialise([snapshot, add, later])
    assert conversation.state == {"list": [1, 2], "obj": {"k": [3]}}
    assert [snapshot, add, later] == sent


def test_a_delta_costs_what_it_touches_not_a_copy_of_the_state() -> None:
    big = {"rows": [{"n": n} for n in range(10_000)], "meta": {"count": 10_000}}
    conversation, _ = materialise([], {"threadId": "t", "runId": "r", "messages": [], "state": big})
    rows = conversation.state["rows"]
    conversation.apply(
        Batch(
            [
                {
                    "type": "STATE_DELTA",
                    "delta": [
                        {"op": "replace", "path": "/meta/count", "value": 10_001},
                        {"op": "add", "path": "/rows/-", "value": {"n": 10_000}},
                    ],
                }
            ],
            [0],
        )
    )
    # The same containers, changed in place: nothing was copied.
    assert conversation.state["rows"] is rows
    assert len(rows) == 10_001
    conversation.apply(
        Batch(
            [
                {
                    "type": "STATE_DELTA",
                    "delta": [
                        {"op": "remove", "path": "/rows/0"},
                        {"op": "remove", "path": "/missing"},
                    ],
                }
            ],
            [1],
        )
    )
    assert conversation.state["rows"] is rows and rows[0] == {"n": 0}  # rolled back in place


def test_state_and_messages_carry_across_runs() -> None:
    events = [
        RS,
        {"type": "STATE_SNAPSHOT", "snapshot": {"n": 1}},
        *text("a", "one"),
        RF,
        {**RS, "runId": "r2"},
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/n", "value": 2}]},
        *text("b", "two"),
        {**RF, "runId": "r2"},
    ]
    conversation, _ = materialise(events)
    assert conversation.state == {"n": 2}
    assert [m["id"] for m in conversation.messages] == ["a", "b"]


# -- appending costs the same at any length ------------------------------------------------


def test_content_deltas_are_appended_and_joined_only_when_read() -> None:
    conversation, _ = materialise(
        [
            {"type": "TEXT_MESSAGE_START", "messageId": "m"},
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c",
                "toolCallName": "f",
                "parentMessageId": "m",
            },
        ]
    )
    (message,) = conversation.messages
    for size in (1, 100_000):
        before = message["content"]
        deltas = [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}] * size
        args = [{"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "y"}] * size
        conversation.apply(Batch(deltas + args, list(range(2 * size))))
        # Each delta added one piece to a list behind what was there; the pieces were
        # joined at most once for the batch (past _JOIN_AT of them, to bound what they
        # cost), never per delta: no string of the message's length was built per delta.
        for pieces in (conversation._text["m"], conversation._arguments["c"]):
            assert len(pieces) == (1 + size if size <= _JOIN_AT else 1)
            assert pieces.joined == (0 if size <= _JOIN_AT else 1)
        assert message["content"] == before
        assert conversation.messages == [message]  # reading joins, once
        assert not conversation._text and not conversation._arguments
    assert message["content"] == "x" * 100_001
    assert message["toolCalls"][0]["function"]["arguments"] == "y" * 100_001


def test_closing_an_item_joins_its_pieces_so_only_open_items_hold_them() -> None:
    conversation, _ = materialise(
        [
            *text("m", "a"),
            *call("c", "f", "{}"),
            {"type": "TEXT_MESSAGE_START", "messageId": "open"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "open", "delta": "b"},
        ]
    )
    assert list(conversation._text) == ["open"] and not conversation._arguments
    assert conversation.message("m") == {"id": "m", "role": "assistant", "content": "a"}


# -- MESSAGES_SNAPSHOT ---------------------------------------------------------------------


def snapshot(*messages: dict[str, Any]) -> Event:
    return {"type": "MESSAGES_SNAPSHOT", "messages": list(messages)}


def test_a_snapshot_replaces_in_place_appends_new_and_drops_the_rest() -> None:
    events = [
        *text("a", "A"),
        *text("b", "B"),
        *text("c", "C"),
        snapshot(
            {"id": "new", "role": "user", "content": "N"},
            {"id": "c", "role": "assistant", "content": "C2"},
            {"id": "a", "role": "assistant", "content": "A2"},
        ),
    ]
    conversation, _ = materialise(events)
    assert [(m["id"], m["content"]) for m in conversation.messages] == [
        ("a", "A2"),
        ("c", "C2"),
        ("new", "N"),
    ]


def test_activity_and_reasoning_survive_a_snapshot_that_carries_none_of_their_role() -> None:
    activity: Event = {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "act",
        "activityType": "s",
        "content": {},
    }
    reasoning = [
        {"type": "REASONING_MESSAGE_START", "messageId": "r", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_END", "messageId": "r"},
    ]
    events = [
        activity,
        *reasoning,
        *text("a", "A"),
        snapshot({"id": "a", "role": "assistant", "content": "A"}),
    ]
    assert [m["id"] for m in materialise(events)[0].messages] == ["act", "r", "a"]
    # A snapshot carrying any activity message declares the complete activity set.
    events[-1] = snapshot({"id": "other", "role": "activity", "activityType": "s", "content": {}})
    assert [m["id"] for m in materialise(events)[0].messages] == ["r", "other"]


def test_content_after_a_snapshot_appends_to_the_restated_message() -> None:
    events = [
        {"type": "TEXT_MESSAGE_START", "messageId": "m"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "lost"},
        snapshot({"id": "m", "role": "assistant", "content": "kept"}),
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "+more"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    ]
    assert materialise(events)[0].messages[0]["content"] == "kept+more"


def test_a_snapshot_is_copied_not_aliased() -> None:
    restated = {
        "id": "a",
        "role": "assistant",
        "toolCalls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{"}}],
    }
    event = snapshot(restated)
    sent = copy.deepcopy(event)
    conversation, _ = materialise(
        [
            event,
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c",
                "toolCallName": "f",
                "parentMessageId": "a",
            },
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "}"},
        ]
    )
    assert conversation.messages[0]["toolCalls"][0]["function"]["arguments"] == "{}"
    assert event == sent


def test_run_input_messages_are_the_starting_point() -> None:
    run_input = {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": "u", "role": "user", "content": "hi"}],
    }
    conversation, _ = materialise(text("a", "hello"), run_input)
    assert [m["id"] for m in conversation.messages] == ["u", "a"]


# -- encrypted values -------------------------------------------------------------------------


def encrypted(subtype: str, entity: str, value: str, **extra: Any) -> Event:
    return {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": subtype,
        "entityId": entity,
        "encryptedValue": value,
        **extra,
    }


def test_an_encrypted_value_is_stored_on_the_message_or_call_it_names() -> None:
    events = [
        *text("m", "x"),
        *call("c", "f", "{}", parentMessageId="m"),
        encrypted("message", "m", "E1", encryptedValueType="vendor.sig"),
        encrypted("tool-call", "c", "E2"),
    ]
    message = materialise(events)[0].messages[0]
    assert (message["encryptedValue"], message["encryptedValueType"]) == ("E1", "vendor.sig")
    assert message["toolCalls"][0]["encryptedValue"] == "E2"
    assert "encryptedValueType" not in message["toolCalls"][0]


def test_a_new_encrypted_value_without_a_type_removes_the_old_type() -> None:
    events = [
        *text("m", "x"),
        encrypted("message", "m", "E1", encryptedValueType="t"),
        encrypted("message", "m", "E2"),
    ]
    message = materialise(events)[0].messages[0]
    assert message["encryptedValue"] == "E2"
    assert "encryptedValueType" not in message


def test_an_encrypted_value_for_an_unknown_or_activity_target_warns_and_is_dropped() -> None:
    events = [
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "act", "activityType": "s", "content": {}},
        encrypted("message", "act", "E"),
        encrypted("tool-call", "nobody", "E"),
    ]
    conversation, ctx = materialise(events)
    assert codes(ctx) == [CONVERSATION_ENCRYPTED_TARGET.id] * 2
    assert "encryptedValue" not in conversation.messages[0]


# -- activity ---------------------------------------------------------------------------------


def activity(content: dict[str, Any], **extra: Any) -> Event:
    return {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "act",
        "activityType": "search",
        "content": content,
        **extra,
    }


def test_a_replacing_snapshot_replaces_content_type_and_ownership() -> None:
    events = [
        activity({"q": 1}, subagentRunId="s"),
        {**activity({"q": 2}), "activityType": "other"},
    ]
    (message,) = materialise(events)[0].messages
    assert message == {
        "id": "act",
        "role": "activity",
        "activityType": "other",
        "content": {"q": 2},
    }


def test_replace_false_leaves_an_existing_activity_as_it_stands() -> None:
    events = [activity({"q": 1}), {**activity({"q": 2}, replace=False), "activityType": "x"}]
    (message,) = materialise(events)[0].messages
    assert (message["content"], message["activityType"]) == ({"q": 1}, "search")
    # ...but creates one when there is none.
    (created,) = materialise([activity({"q": 2}, replace=False)])[0].messages
    assert created["content"] == {"q": 2}


def test_a_delta_may_retype_the_activity() -> None:
    events = [
        activity({"n": 0}),
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "act",
            "activityType": "done",
            "patch": [{"op": "replace", "path": "/n", "value": 1}],
        },
    ]
    (message,) = materialise(events)[0].messages
    assert (message["content"], message["activityType"]) == ({"n": 1}, "done")


def test_an_activity_delta_that_does_not_apply_warns_and_changes_nothing() -> None:
    events = [
        activity({"n": 0}),
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "act",
            "activityType": "retyped",
            "patch": [
                {"op": "replace", "path": "/n", "value": 1},
                {"op": "remove", "path": "/missing"},
            ],
        },
    ]
    conversation, ctx = materialise(events)
    assert conversation.messages[0]["content"] == {"n": 0}
    assert conversation.messages[0]["activityType"] == "search"
    assert codes(ctx) == [CONVERSATION_ACTIVITY_PATCH.id]


def test_an_activity_delta_naming_a_non_activity_message_is_skipped_with_a_warning() -> None:
    delta = {
        "type": "ACTIVITY_DELTA",
        "messageId": "m",
        "activityType": "s",
        "patch": [{"op": "add", "path": "/n", "value": 1}],
    }
    conversation, ctx = materialise([*text("m", "x"), delta, {**delta, "messageId": "none"}])
    assert conversation.messages == [{"id": "m", "role": "assistant", "content": "x"}]
    assert codes(ctx) == [CONVERSATION_ACTIVITY_TARGET.id] * 2


def test_an_activity_snapshot_reusing_a_messages_id_takes_its_place() -> None:
    """A producer reusing an id (basic/index: MUST be unique; lint reports it): the later
    message stands where the earlier one was, as a snapshot restating the id would have it."""
    events = [*text("m", "x"), *text("n", "y"), {**activity({"n": 0}), "messageId": "m"}]
    conversation, ctx = materialise(events)
    assert conversation.messages == [
        {"id": "m", "role": "activity", "activityType": "search", "content": {"n": 0}},
        {"id": "n", "role": "assistant", "content": "y"},
    ]
    assert codes(ctx) == []


def test_activity_content_is_a_copy_of_the_snapshot() -> None:
    event = activity({"list": [1]})
    sent = copy.deepcopy(event)
    materialise(
        [
            event,
            {
                "type": "ACTIVITY_DELTA",
                "messageId": "act",
                "activityType": "s",
                "patch": [{"op": "add", "path": "/list/-", "value": 2}],
            },
        ]
    )
    assert event == sent


# -- interrupts ---------------------------------------------------------------------------------


def test_an_interrupt_outcome_leaves_pending_interrupts_until_the_next_run() -> None:
    interrupt = {"id": "i1", "reason": "approval"}
    finished = {**RF, "outcome": {"type": "interrupt", "interrupts": [interrupt]}}
    conversation, _ = materialise([RS, finished])
    assert conversation.interrupts == [interrupt]
    conversation.apply(Batch([{**RS, "runId": "r2"}], [2]))
    assert conversation.interrupts == []
    conversation, _ = materialise([RS, {**RF, "outcome": {"type": "success"}}])
    assert conversation.interrupts == []


# -- through the pipeline -----------------------------------------------------------------------


def test_the_default_pipeline_materialises_the_conversation_unless_told_not_to() -> None:
    events = [RS, *text("m", "hello"), RF]
    stream = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
    result = anyio.run(Pipeline().run, stream)
    assert result.conversation is not None
    assert result.conversation.messages == [{"id": "m", "role": "assistant", "content": "hello"}]
    result = anyio.run(Pipeline(conversation=False).run, stream)
    assert result.materialised is None


# -- properties ---------------------------------------------------------------------------------


def _drive(stage: Metadata, batch: Batch) -> None:
    """Run the stage on one batch without an event loop (it awaits nothing)."""
    step = stage.process(batch)
    try:
        step.send(None)
    except StopIteration:
        return
    raise AssertionError("the metadata stage suspended")


@given(stream=valid_stream(), cuts=st.lists(st.integers(0, 1 << 20), max_size=8))
def test_how_events_are_batched_or_read_changes_nothing(
    stream: list[Event], cuts: list[int]
) -> None:
    sent = copy.deepcopy(stream)
    whole, _ = materialise(copy.deepcopy(stream))
    # One event per batch, as dispatch feeds the Conversation around each handler.
    ctx = StreamContext(Options())
    stage, stepwise = Metadata(ctx), Conversation(ctx)
    for index, event in enumerate(stream):
        batch = Batch([event], [index])
        _drive(stage, batch)
        stepwise.apply(batch)
    assert stepwise.messages == whole.messages
    assert json_equal(stepwise.state, whole.state)
    # The whole pipeline, reads falling anywhere: the same Conversation, and every
    # delivered event exactly as it was sent.
    result = run(split(encode(stream, "sse"), cuts))
    assert result.verdict.completed, result.verdict.message
    assert result.conversation is not None
    assert result.conversation.messages == whole.messages
    assert json_equal(result.conversation.state, whole.state)
    assert result.events == sent


_ids = st.sampled_from(["a", "b", "c"])
_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from(["x", ""]),
    st.just({"k": [1]}),
    st.just([{"k": 1}]),
)
_meta = st.one_of(st.nothing(), st.dictionaries(st.sampled_from(["k", "j"]), _value, max_size=2))
_pointer = st.sampled_from(["", "/k", "/k/0", "/k/-", "/j", "/0", "/k/k"])
_operation = st.one_of(
    st.fixed_dictionaries(
        {"op": st.sampled_from(["add", "replace", "test"]), "path": _pointer, "value": _value}
    ),
    st.fixed_dictionaries({"op": st.just("remove"), "path": _pointer}),
    st.fixed_dictionaries(
        {"op": st.sampled_from(["move", "copy"]), "from": _pointer, "path": _pointer}
    ),
)
_message = st.one_of(
    st.fixed_dictionaries(
        {
            "id": _ids,
            "role": st.sampled_from(["user", "assistant", "system"]),
            "content": st.sampled_from(["", "hi"]),
        },
        optional={"metadata": _meta},
    ),
    st.fixed_dictionaries(
        {
            "id": _ids,
            "role": st.just("assistant"),
            "toolCalls": st.lists(
                st.fixed_dictionaries(
                    {
                        "id": _ids,
                        "type": st.just("function"),
                        "function": st.just({"name": "f", "arguments": "{"}),
                    },
                    optional={"metadata": _meta},
                ),
                max_size=2,
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "id": _ids,
            "role": st.just("activity"),
            "activityType": _ids,
            "content": st.just({"k": [0]}),
        }
    ),
    st.fixed_dictionaries({"id": _ids, "role": st.just("reasoning"), "content": st.just("r")}),
    st.fixed_dictionaries(
        {
            "id": _ids,
            "role": st.just("tool"),
            "toolCallId": _ids,
            "content": st.sampled_from(["out", [{"type": "text", "text": "t"}]]),
        }
    ),
)
_any_event = st.one_of(
    *[
        st.fixed_dictionaries(
            {"type": st.just(kind), "messageId": _ids},
            optional={"metadata": _meta, "subagentRunId": _ids},
        )
        for kind in ("TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "REASONING_MESSAGE_END")
    ],
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"]),
            "messageId": _ids,
            "delta": st.just("d"),
        },
        optional={"metadata": _meta},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("REASONING_MESSAGE_START"),
            "messageId": _ids,
            "role": st.just("reasoning"),
        },
        optional={"metadata": _meta},
    ),
    st.fixed_dictionaries(
        {"type": st.just("TOOL_CALL_START"), "toolCallId": _ids, "toolCallName": st.just("f")},
        optional={"parentMessageId": _ids, "metadata": _meta},
    ),
    st.fixed_dictionaries(
        {"type": st.just("TOOL_CALL_ARGS"), "toolCallId": _ids, "delta": st.just("}")},
        optional={"metadata": _meta},
    ),
    st.fixed_dictionaries(
        {"type": st.just("TOOL_CALL_END"), "toolCallId": _ids}, optional={"metadata": _meta}
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("TOOL_CALL_RESULT"),
            "messageId": _ids,
            "toolCallId": _ids,
            "content": st.sampled_from(["r", []]),
        },
        optional={"metadata": _meta},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("REASONING_ENCRYPTED_VALUE"),
            "subtype": st.sampled_from(["message", "tool-call"]),
            "entityId": _ids,
            "encryptedValue": st.just("E"),
        },
        optional={"encryptedValueType": st.just("t")},
    ),
    st.fixed_dictionaries({"type": st.just("STATE_SNAPSHOT"), "snapshot": _value}),
    st.fixed_dictionaries(
        {"type": st.just("STATE_DELTA"), "delta": st.lists(_operation, max_size=3)}
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("ACTIVITY_SNAPSHOT"),
            "messageId": _ids,
            "activityType": _ids,
            "content": st.just({"k": [0]}),
        },
        optional={"replace": st.booleans(), "metadata": _meta, "subagentRunId": _ids},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("ACTIVITY_DELTA"),
            "messageId": _ids,
            "activityType": _ids,
            "patch": st.lists(_operation, max_size=3),
        },
        optional={"metadata": _meta},
    ),
    st.fixed_dictionaries(
        {"type": st.just("MESSAGES_SNAPSHOT"), "messages": st.lists(_message, max_size=3)}
    ),
    st.just(RS),
    st.fixed_dictionaries(
        {
            "type": st.just("RUN_FINISHED"),
            "threadId": st.just("t"),
            "runId": st.just("r"),
            "outcome": st.just({"type": "interrupt", "interrupts": [{"id": "i"}]}),
        }
    ),
)


@given(events=st.lists(_any_event, max_size=25))
def test_schema_valid_events_in_any_order_never_break_the_conversation(
    events: list[Event],
) -> None:
    """Without verification (a specialised pipeline), any order of well-formed events is
    applied or warned about — never an exception — and no event is changed."""
    sent = copy.deepcopy(events)
    conversation, ctx = materialise(events)
    messages = conversation.messages
    assert all(type(m["id"]) is str and type(m["role"]) is str for m in messages)
    assert len({m["id"] for m in messages}) == len(messages)
    assert all(d.severity == "warning" for d in ctx.diagnostics)
    assert events == sent


def test_a_result_minted_again_replaces_its_tool_message_in_place() -> None:
    result: Event = {
        "type": "TOOL_CALL_RESULT",
        "messageId": "t",
        "toolCallId": "c",
        "content": "first",
    }
    events = [*call("c", "f", "{}"), result, *text("after", "x"), {**result, "content": "second"}]
    conversation, _ = materialise(events)
    assert [(m["id"], m.get("content")) for m in conversation.messages] == [
        ("c", None),
        ("t", "second"),
        ("after", "x"),
    ]
