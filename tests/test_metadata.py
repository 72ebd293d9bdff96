"""metadata: each event's metadata merges into the item it builds (/spec/1.1/basic/metadata).

The corpus covers text messages and tool calls; these are the other rows of
the page's table, the stored-metadata rules, and what must not happen: an
event altered, a merge that recurses, metadata landing where the table puts
none.
"""

from __future__ import annotations

import copy
from typing import Any

import anyio
import orjson
import pytest
from agui_pipeline import Batch, Options, Pipeline, StreamContext
from agui_pipeline.model.conversation import Conversation
from agui_pipeline.stage import ItemMetadata
from agui_pipeline.stages.metadata import Metadata

from tests.conftest import through_built_in

pytestmark = pytest.mark.usefixtures("built_in_run")  # every rule on every path (conftest)

Event = dict[str, Any]

RS: Event = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
RF: Event = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def merged(
    events: list[Event], run_input: dict[str, Any] | None = None
) -> tuple[ItemMetadata, Conversation, list[Event]]:
    """Run the stage (then the Conversation) over ``events``, on the path ``built_in_run``
    chose; also return what it passed on."""
    ctx = StreamContext(Options(), run_input)
    stage = Metadata(ctx)
    conversation = Conversation(ctx)
    batch = through_built_in([stage], Batch(events, list(range(len(events)))))
    conversation.apply(batch)
    assert ctx.item_metadata is stage.store
    return stage.store, conversation, batch.events


def test_reasoning_message_events_merge_into_the_reasoning_message() -> None:
    store, conversation, _ = merged(
        [
            {
                "type": "REASONING_MESSAGE_START",
                "messageId": "r",
                "role": "reasoning",
                "metadata": {"model": "m1", "effort": "low"},
            },
            {
                "type": "REASONING_MESSAGE_CONTENT",
                "messageId": "r",
                "delta": "…",
                "metadata": {"effort": "high"},
            },
            {"type": "REASONING_MESSAGE_END", "messageId": "r", "metadata": {"tokens": 12}},
        ]
    )
    assert store.message("r") == {"model": "m1", "effort": "high", "tokens": 12}
    assert conversation.messages[0]["metadata"] == {"model": "m1", "effort": "high", "tokens": 12}


def test_a_tool_result_merges_into_the_tool_message_it_mints_not_the_call() -> None:
    store, conversation, _ = merged(
        [
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c",
                "toolCallName": "f",
                "parentMessageId": "a",
                "metadata": {"on": "call"},
            },
            {"type": "TOOL_CALL_END", "toolCallId": "c"},
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": "t",
                "toolCallId": "c",
                "content": "ok",
                "metadata": {"on": "result"},
            },
        ]
    )
    assert store.tool_call("c") == {"on": "call"}
    assert store.message("t") == {"on": "result"}
    assistant, tool = conversation.messages
    assert "metadata" not in assistant
    assert assistant["toolCalls"][0]["metadata"] == {"on": "call"}
    assert tool["metadata"] == {"on": "result"}


def test_activity_metadata_survives_a_replacing_snapshot() -> None:
    def snapshot(content: dict[str, Any], metadata: dict[str, Any]) -> Event:
        return {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "act",
            "activityType": "search",
            "content": content,
            "metadata": metadata,
        }

    _, conversation, _ = merged(
        [
            snapshot({"found": 0}, {"started": 1, "phase": "a"}),
            {
                "type": "ACTIVITY_DELTA",
                "messageId": "act",
                "activityType": "search",
                "patch": [{"op": "replace", "path": "/found", "value": 1}],
                "metadata": {"delta": 1},
            },
            snapshot({"found": 9}, {"phase": "b"}),
        ]
    )
    (message,) = conversation.messages
    assert message["content"] == {"found": 9}
    assert message["metadata"] == {"started": 1, "phase": "b", "delta": 1}


def test_a_delta_for_an_activity_nothing_created_merges_nowhere() -> None:
    store, conversation, _ = merged(
        [
            {
                "type": "ACTIVITY_DELTA",
                "messageId": "ghost",
                "activityType": "s",
                "patch": [],
                "metadata": {"lost": True},
            },
            {"type": "ACTIVITY_SNAPSHOT", "messageId": "ghost", "activityType": "s", "content": {}},
        ]
    )
    assert store.message("ghost") is None
    assert "metadata" not in conversation.messages[0]


def test_events_with_no_target_keep_their_metadata_to_themselves() -> None:
    events: list[Event] = [
        {**RS, "metadata": {"run": 1}},
        {"type": "STEP_STARTED", "stepName": "s", "metadata": {"step": 1}},
        {"type": "STATE_SNAPSHOT", "snapshot": {}, "metadata": {"state": 1}},
        {"type": "CUSTOM", "name": "n", "value": 1, "metadata": {"custom": 1}},
        {"type": "REASONING_START", "messageId": "span", "metadata": {"span": 1}},
        {"type": "MESSAGES_SNAPSHOT", "messages": [], "metadata": {"snap": 1}},
        {**RF, "metadata": {"usage": 3}},
    ]
    store, conversation, delivered = merged(events)
    assert store.messages == {} and store.tool_calls == {}
    assert conversation.messages == []
    assert delivered[0]["metadata"] == {"run": 1}


def test_no_delivered_event_is_altered_by_the_merge() -> None:
    events: list[Event] = [
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": {"a": 1, "list": [1]}},
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "m",
            "delta": "x",
            "metadata": {"a": 2, "b": 2},
        },
        {"type": "TEXT_MESSAGE_END", "messageId": "m", "metadata": {"list": [2, 3]}},
    ]
    sent = copy.deepcopy(events)
    store, _, delivered = merged(events)
    assert delivered == sent
    assert store.message("m") == {"a": 2, "b": 2, "list": [2, 3]}
    assert store.message("m") is not events[0]["metadata"]


def test_the_merge_replaces_an_object_under_a_key_wholesale() -> None:
    store, _, _ = merged(
        [
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c",
                "toolCallName": "f",
                "metadata": {"usage": {"input": 1, "output": 2}},
            },
            {"type": "TOOL_CALL_END", "toolCallId": "c", "metadata": {"usage": {"output": 5}}},
        ]
    )
    assert store.tool_call("c") == {"usage": {"output": 5}}


def test_a_null_value_is_metadata_like_any_other() -> None:
    store, _, _ = merged(
        [
            {"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": {"k": "v"}},
            {"type": "TEXT_MESSAGE_END", "messageId": "m", "metadata": {"k": None}},
        ]
    )
    assert store.message("m") == {"k": None}


def test_a_restated_message_brings_its_stored_metadata_and_later_events_merge_into_it() -> None:
    run_input = {
        "threadId": "t",
        "runId": "r",
        "messages": [
            {"id": "m", "role": "assistant", "content": "a", "metadata": {"from": "input"}}
        ],
    }
    events: list[Event] = [
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": {"reopened": True}},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {
                    "id": "m",
                    "role": "assistant",
                    "content": "a",
                    "metadata": {"from": "snapshot"},
                    "toolCalls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "f", "arguments": ""},
                            "metadata": {"call": "stored"},
                        }
                    ],
                }
            ],
        },
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": {"again": 1}},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c",
            "toolCallName": "f",
            "parentMessageId": "m",
            "metadata": {"args": 1},
        },
    ]
    store, conversation, _ = merged(events, run_input)
    assert store.message("m") == {"from": "snapshot", "again": 1}
    assert store.tool_call("c") == {"call": "stored", "args": 1}
    (message,) = conversation.messages
    assert message["metadata"] == {"from": "snapshot", "again": 1}
    assert message["toolCalls"][0]["metadata"] == {"call": "stored", "args": 1}


def test_a_message_a_snapshot_dropped_starts_afresh_if_its_id_returns() -> None:
    store, conversation, _ = merged(
        [
            {"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": {"old": 1}},
            {"type": "TEXT_MESSAGE_END", "messageId": "m"},
            {
                "type": "REASONING_MESSAGE_START",
                "messageId": "r",
                "role": "reasoning",
                "metadata": {"kept": 1},
            },
            {"type": "REASONING_MESSAGE_END", "messageId": "r"},
            {"type": "MESSAGES_SNAPSHOT", "messages": []},
            {"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": {"new": 1}},
        ]
    )
    assert store.message("m") == {"new": 1}
    assert store.message("r") == {"kept": 1}  # reasoning survives a snapshot without any
    assert [m.get("metadata") for m in conversation.messages] == [{"kept": 1}, {"new": 1}]


def test_chunk_metadata_reaches_the_item_through_the_default_pipeline() -> None:
    events: list[Event] = [
        RS,
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "hi", "metadata": {"a": 1}},
        {"type": "TEXT_MESSAGE_CHUNK", "metadata": {"finish": "stop", "a": 2}},
        RF,
    ]
    stream = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
    result = anyio.run(Pipeline().run, stream)
    assert result.verdict.completed, result.verdict.message
    assert result.conversation is not None
    assert result.conversation.messages[0]["metadata"] == {"a": 2, "finish": "stop"}
