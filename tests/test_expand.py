"""expand: chunks become the triads they stand for (/spec/1.1/basic/patterns/streaming).

Unit tests drive the stage on its own, one rule each; the property test
re-spells valid triad streams as chunks and checks nothing changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest
from agui_pipeline import Batch, Counters, Options, Outcome, Pipeline, StreamContext, StreamRejected
from agui_pipeline._engine.builtin import run_without_loop as _now
from agui_pipeline.catalog import (
    EXPAND_AMBIGUOUS,
    EXPAND_CONFLICTING_REPEAT,
    EXPAND_FIRST_CHUNK,
    EXPAND_MALFORMED_CHUNK,
    EXPAND_OWNER_CONFLICT,
)
from agui_pipeline.stages.expand import Expand
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import corpus_paths, run, through_built_in

pytestmark = pytest.mark.usefixtures("built_in_run")  # every rule on every path (conftest)

Event = dict[str, Any]

RS = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
RF = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


class Expanded:
    """What one stream through a fresh Expand produced, on the path ``built_in_run`` chose."""

    def __init__(self, events: list[Event], splits: list[int] | None = None) -> None:
        self.stage = Expand(StreamContext(Options()))
        self.events: list[Event] = []
        self.indices: list[int] = []
        cuts = [0, *(splits or []), len(events)]
        for start, stop in pairwise(cuts):
            batch = Batch(events[start:stop], list(range(start, stop)))
            self._take(through_built_in([self.stage], batch))
        self._take(_now(self.stage.finish()))

    def _take(self, batch: Batch) -> None:
        self.events += batch.events
        self.indices += batch.indices

    @property
    def counters(self) -> Counters:
        return self.stage.ctx.counters

    @property
    def types(self) -> list[Any]:
        return [event.get("type") for event in self.events]


def expand(*events: Event) -> Expanded:
    return Expanded([dict(event) for event in events])


def rejected(*events: Event) -> StreamRejected:
    with pytest.raises(StreamRejected) as info:
        expand(*events)
    return info.value


def text(delta: str | None = None, **fields: Any) -> Event:
    event = {"type": "TEXT_MESSAGE_CHUNK", **fields}
    if delta is not None:
        event["delta"] = delta
    return event


def tool(delta: str | None = None, **fields: Any) -> Event:
    event = {"type": "TOOL_CALL_CHUNK", **fields}
    if delta is not None:
        event["delta"] = delta
    return event


def thought(delta: str | None = None, **fields: Any) -> Event:
    event = {"type": "REASONING_MESSAGE_CHUNK", **fields}
    if delta is not None:
        event["delta"] = delta
    return event


# -- what a chunk becomes -----------------------------------------------------------


def test_text_chunks_become_start_content_end() -> None:
    out = expand(RS, text("Hel", messageId="m1", role="user", name="ann"), text("lo"), RF)
    assert out.events == [
        RS,
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "user", "name": "ann"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hel"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "lo"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        RF,
    ]
    # Each made event carries the index of the chunk it came from; the END the
    # index of the event that closed the stream.
    assert out.indices == [0, 1, 1, 2, 3, 3]


def test_an_absent_role_stays_absent() -> None:
    """Absent means assistant on TEXT_MESSAGE_START too: nothing to default."""
    out = expand(RS, text("x", messageId="m1"))
    assert out.events[1] == {"type": "TEXT_MESSAGE_START", "messageId": "m1"}


def test_tool_chunks_become_start_args_end() -> None:
    out = expand(
        RS,
        tool('{"q":', toolCallId="c1", toolCallName="search", parentMessageId="m0"),
        tool('"x"}'),
        RF,
    )
    assert out.events[1:5] == [
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c1",
            "toolCallName": "search",
            "parentMessageId": "m0",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"q":'},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '"x"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    ]


def test_reasoning_chunks_open_a_reasoning_role_message() -> None:
    out = expand(RS, thought("hm", messageId="r1"), RF)
    assert out.events[1:4] == [
        {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "hm"},
        {"type": "REASONING_MESSAGE_END", "messageId": "r1"},
    ]


def test_a_first_chunk_without_delta_only_opens() -> None:
    out = expand(RS, text(messageId="m1"), text(""), RF)
    assert out.types == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert out.events[2]["delta"] == ""


def test_chunk_metadata_raw_event_and_attribution_reach_the_made_events() -> None:
    chunk = text(
        "a", messageId="m1", subagentRunId="s1", metadata={"k": 1}, rawEvent={"p": [1]}, timestamp=5
    )
    out = expand(RS, chunk)
    for made in out.events[1:]:
        assert made["metadata"] == {"k": 1}
        assert made["rawEvent"] == {"p": [1]}
        assert made["subagentRunId"] == "s1"
        assert "timestamp" not in made  # the made events are not the chunk


def test_a_metadata_only_continuation_still_reaches_the_item() -> None:
    out = expand(RS, text("a", messageId="m1"), text(metadata={"finish": "stop"}), RF)
    assert out.events[3] == {
        "type": "TEXT_MESSAGE_CONTENT",
        "messageId": "m1",
        "delta": "",
        "metadata": {"finish": "stop"},
    }


def test_a_raw_event_only_continuation_is_carried() -> None:
    out = expand(RS, tool(toolCallId="c1", toolCallName="f"), tool(rawEvent=0), RF)
    assert out.events[2] == {
        "type": "TOOL_CALL_ARGS",
        "toolCallId": "c1",
        "delta": "",
        "rawEvent": 0,
    }


def test_a_bare_continuation_makes_nothing() -> None:
    out = expand(RS, text("a", messageId="m1"), text(messageId="m1", role="assistant"), RF)
    assert out.types == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert out.counters.expanded == 2


def test_unknown_members_of_a_chunk_are_not_carried() -> None:
    """Only what the protocol defines is synthesized (/spec/1.1/basic/processing)."""
    out = expand(RS, text("a", messageId="m1", future=1))
    assert all("future" not in made for made in out.events)


def test_counters() -> None:
    out = expand(
        RS, text("a", messageId="m1"), text("b"), text(), tool(toolCallId="c", toolCallName="f"), RF
    )
    assert out.counters.expanded == 4
    # START+CONTENT, CONTENT, nothing, END(m1)+START(c), END(c)
    assert out.counters.synthesized == 6


def test_finish_synthesizes_nothing_for_a_truncated_run() -> None:
    out = expand(
        RS,
        text("a", messageId="m1"),
        tool("{", toolCallId="c", toolCallName="f", subagentRunId="s1"),
    )
    assert out.types == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
    ]


def test_events_other_than_chunks_pass_untouched() -> None:
    events: list[Event] = [
        RS,
        {"type": "TEXT_MESSAGE_START", "messageId": "m"},
        {"type": "SOMETHING_NEW", "x": 1},
        RF,
    ]
    out = Expanded(events)
    assert out.events == events
    assert all(a is b for a, b in zip(out.events, events, strict=True))


# -- the first chunk ------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [text("x"), thought("x")], ids=["text", "reasoning"])
def test_a_first_chunk_without_message_id_is_fatal(chunk: Event) -> None:
    error = rejected(RS, chunk, RF)
    assert error.code == EXPAND_FIRST_CHUNK.id
    assert f"First {chunk['type']} must have a messageId" in str(error)
    assert error.event_index == 1


def test_a_first_tool_chunk_without_id_is_fatal() -> None:
    error = rejected(RS, tool("x", toolCallName="f"))
    assert "First TOOL_CALL_CHUNK must have a toolCallId" in str(error)


def test_a_first_tool_chunk_without_name_is_fatal() -> None:
    error = rejected(RS, tool("x", toolCallId="c1"))
    assert error.code == EXPAND_FIRST_CHUNK.id
    assert "First TOOL_CALL_CHUNK must have a toolCallName" in str(error)


def test_a_tool_chunk_naming_a_new_call_needs_a_name_even_mid_call() -> None:
    error = rejected(RS, tool("x", toolCallId="c1", toolCallName="f"), tool("y", toolCallId="c2"))
    assert "must have a toolCallName" in str(error)
    assert error.event_index == 2


def test_a_continuation_after_its_stream_closed_is_a_first_chunk() -> None:
    error = rejected(
        RS, text("a", messageId="m1"), {"type": "CUSTOM", "name": "n", "value": 1}, text("b")
    )
    assert error.code == EXPAND_FIRST_CHUNK.id
    assert error.event_index == 3


def test_another_kinds_open_stream_is_not_continued() -> None:
    error = rejected(RS, tool("{", toolCallId="c1", toolCallName="f"), text("a"))
    assert "First TEXT_MESSAGE_CHUNK must have a messageId" in str(error)


# -- continuation ----------------------------------------------------------------------


def test_a_conflicting_role_is_fatal() -> None:
    error = rejected(
        RS, text("a", messageId="m1", role="user"), text("b", messageId="m1", role="assistant")
    )
    assert error.code == EXPAND_CONFLICTING_REPEAT.id
    assert "does not match the open stream's role" in str(error)
    assert error.pointer == "/role"
    assert error.event_index == 2


def test_a_role_established_by_omission_conflicts_too() -> None:
    error = rejected(RS, text("a", messageId="m1"), text("b", role="user"))
    assert "does not match the open stream's role" in str(error)
    assert "by omission" in str(error)


@pytest.mark.parametrize(
    ("opener", "repeat"),
    [
        ({}, {"role": "assistant"}),
        ({"role": "user"}, {"role": "user", "messageId": "m1"}),
        ({"name": "ann"}, {"name": "ann"}),
    ],
)
def test_an_identical_repeat_is_fine(opener: Event, repeat: Event) -> None:
    out = expand(RS, text("a", messageId="m1", **opener), text("b", **repeat), RF)
    assert out.types.count("TEXT_MESSAGE_CONTENT") == 2
    assert out.types.count("TEXT_MESSAGE_START") == 1


@pytest.mark.parametrize(
    ("opener", "repeat", "field"),
    [
        ({"name": "ann"}, {"name": "bob"}, "name"),
        ({}, {"name": "bob"}, "name"),  # opened without a name: nothing could carry one
    ],
)
def test_a_conflicting_name_is_fatal(opener: Event, repeat: Event, field: str) -> None:
    error = rejected(RS, text("a", messageId="m1", **opener), text("b", **repeat))
    assert error.code == EXPAND_CONFLICTING_REPEAT.id
    assert f"does not match the open stream's {field}" in str(error)


def test_a_conflicting_tool_name_is_fatal() -> None:
    error = rejected(
        RS, tool("{", toolCallId="c1", toolCallName="search"), tool("}", toolCallName="delete")
    )
    assert "does not match the open stream's toolCallName" in str(error)
    assert error.pointer == "/toolCallName"


@pytest.mark.parametrize("opener", [{"parentMessageId": "m1"}, {}])
def test_a_conflicting_parent_message_is_fatal(opener: Event) -> None:
    error = rejected(
        RS, tool("{", toolCallId="c1", toolCallName="f", **opener), tool("}", parentMessageId="m2")
    )
    assert "does not match the open stream's parentMessageId" in str(error)


def test_repeating_tool_opener_fields_is_fine() -> None:
    out = expand(
        RS,
        tool("{", toolCallId="c1", toolCallName="f", parentMessageId="m"),
        tool("}", toolCallId="c1", toolCallName="f", parentMessageId="m"),
        RF,
    )
    assert out.types.count("TOOL_CALL_ARGS") == 2


def test_a_chunk_naming_another_id_opens_a_new_item_after_closing() -> None:
    out = expand(RS, text("a", messageId="m1"), text("b", messageId="m2"), RF)
    assert out.types == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert out.events[3]["messageId"] == "m1"
    assert out.indices == [0, 1, 1, 2, 2, 2, 3, 3]


def test_a_chunk_of_another_kind_closes_the_lanes_stream() -> None:
    out = expand(
        RS,
        text("a", messageId="m1"),
        thought("t", messageId="r1"),
        tool("{", toolCallId="c1", toolCallName="f"),
        RF,
    )
    assert out.types[1:] == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]


# -- closing a chunk stream -------------------------------------------------------------

CLOSERS: list[Event] = [
    {"type": "TEXT_MESSAGE_START", "messageId": "other"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x"},
    {"type": "TOOL_CALL_START", "toolCallId": "c9", "toolCallName": "f"},
    {"type": "TOOL_CALL_RESULT", "messageId": "t9", "toolCallId": "c9", "content": "ok"},
    {"type": "REASONING_START", "messageId": "span"},
    {"type": "REASONING_END", "messageId": "span"},
    {"type": "REASONING_MESSAGE_START", "messageId": "r9", "role": "reasoning"},
    {"type": "STEP_STARTED", "stepName": "s"},
    {"type": "STEP_FINISHED", "stepName": "s"},
    {"type": "STATE_SNAPSHOT", "snapshot": {}},
    {"type": "STATE_DELTA", "delta": []},
    {"type": "CUSTOM", "name": "n", "value": None},
]


@pytest.mark.parametrize("closer", CLOSERS, ids=[e["type"] for e in CLOSERS])
def test_an_event_in_the_lane_closes_the_stream(closer: Event) -> None:
    out = expand(RS, text("a", messageId="m1"), closer)
    assert out.events[-2:] == [{"type": "TEXT_MESSAGE_END", "messageId": "m1"}, closer]
    assert out.indices[-2:] == [2, 2]


ASIDE: list[Event] = [
    {"type": "RAW", "event": {"x": 1}},
    {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "plan", "content": {}},
    {"type": "ACTIVITY_DELTA", "messageId": "a1", "activityType": "plan", "patch": []},
    {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "message",
        "entityId": "m1",
        "encryptedValue": "zz",
    },
    {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "helper"},
]


@pytest.mark.parametrize("aside", ASIDE, ids=[e["type"] for e in ASIDE])
def test_four_events_and_subagent_started_stand_aside(aside: Event) -> None:
    out = expand(RS, text("a", messageId="m1"), aside, text("b"), RF)
    assert out.types == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        aside["type"],
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]


RUN_LEVEL: list[Event] = [
    RF,
    {"type": "RUN_ERROR", "message": "boom"},
    RS,
    {"type": "MESSAGES_SNAPSHOT", "messages": []},
]


@pytest.mark.parametrize("run_event", RUN_LEVEL, ids=[e["type"] for e in RUN_LEVEL])
def test_a_run_level_event_closes_every_lane_in_opening_order(run_event: Event) -> None:
    out = expand(
        RS,
        tool("{", toolCallId="c2", toolCallName="f", subagentRunId="s2"),
        text("a", messageId="m1"),
        thought("t", messageId="r1", subagentRunId="s1"),
        run_event,
    )
    assert out.events[-4:] == [
        {"type": "TOOL_CALL_END", "toolCallId": "c2", "subagentRunId": "s2"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "REASONING_MESSAGE_END", "messageId": "r1", "subagentRunId": "s1"},
        run_event,
    ]


@pytest.mark.parametrize("terminal", ["SUBAGENT_FINISHED", "SUBAGENT_ERROR"])
def test_a_subagents_terminal_event_closes_only_its_lane(terminal: str) -> None:
    end = {"type": terminal, "subagentRunId": "s1", "message": "x"}
    out = expand(
        RS,
        text("a", messageId="m1"),
        text("b", messageId="m2", subagentRunId="s1"),
        text("c", messageId="m3", subagentRunId="s2"),
        end,
        text("d"),  # still continues the parent's m1
    )
    assert out.events[-3:-1] == [
        {"type": "TEXT_MESSAGE_END", "messageId": "m2", "subagentRunId": "s1"},
        end,
    ]
    assert out.events[-1] == {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "d"}
    assert out.types.count("TEXT_MESSAGE_END") == 1


# -- lanes --------------------------------------------------------------------------------


def test_each_subagent_streams_in_its_own_lane() -> None:
    out = expand(
        RS,
        text("p", messageId="m1"),
        text("s", messageId="m2", subagentRunId="s1"),
        text("p2"),  # untagged, no id: the parent's stream
        text("s2", subagentRunId="s1"),  # tagged, no id: s1's stream
        {"type": "STEP_STARTED", "stepName": "x", "subagentRunId": "s1"},  # closes s1's only
        text("p3"),
    )
    contents = [
        (e["messageId"], e["delta"]) for e in out.events if e["type"] == "TEXT_MESSAGE_CONTENT"
    ]
    assert contents == [("m1", "p"), ("m2", "s"), ("m1", "p2"), ("m2", "s2"), ("m1", "p3")]
    assert [e for e in out.events if e["type"] == "TEXT_MESSAGE_END"] == [
        {"type": "TEXT_MESSAGE_END", "messageId": "m2", "subagentRunId": "s1"}
    ]


def test_an_untagged_chunk_without_id_continues_the_only_open_stream() -> None:
    out = expand(
        RS,
        text("a", messageId="m2", subagentRunId="s1"),
        tool("{", toolCallId="c1", toolCallName="f"),
        text("b"),
    )
    assert out.events[-1] == {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m2", "delta": "b"}
    assert "TOOL_CALL_END" not in out.types


def test_the_parents_stream_wins_over_a_subagents() -> None:
    out = expand(
        RS, text("a", messageId="m2", subagentRunId="s1"), text("b", messageId="m1"), text("c")
    )
    assert out.events[-1]["messageId"] == "m1"


def test_an_ambiguous_continuation_is_rejected() -> None:
    error = rejected(
        RS,
        text("a", messageId="m1", subagentRunId="s1"),
        text("b", messageId="m2", subagentRunId="s2"),
        text("c"),
    )
    assert error.code == EXPAND_AMBIGUOUS.id
    assert "'s1', 's2'" in str(error)
    assert error.event_index == 3


def test_an_ambiguity_among_many_lanes_names_a_few() -> None:
    opened = [text("a", messageId=f"m{n}", subagentRunId=f"s{n}") for n in range(50)]
    error = rejected(RS, *opened, text("c"))
    assert "'s0', 's1', 's2', 's3', 's4' and 45 more" in str(error)


def test_an_untagged_chunk_naming_a_subagents_item_continues_it() -> None:
    out = expand(
        RS,
        text("a", messageId="m1"),
        text("b", messageId="m2", subagentRunId="s1"),
        text("c", messageId="m2"),
        text("d"),
    )
    assert out.events[-2:] == [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m2", "delta": "c"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "d"},
    ]


def test_a_tagged_chunk_without_id_needs_an_open_stream_in_its_lane() -> None:
    error = rejected(RS, text("a", messageId="m1"), text("b", subagentRunId="s1"))
    assert error.code == EXPAND_FIRST_CHUNK.id
    assert "'s1'" in str(error)


def test_a_chunk_naming_an_item_under_another_owner_is_rejected() -> None:
    error = rejected(RS, text("a", messageId="m1"), text("b", messageId="m1", subagentRunId="s1"))
    assert error.code == EXPAND_OWNER_CONFLICT.id
    assert error.pointer == "/subagentRunId"


def test_an_untagged_explicit_continuation_belongs_to_its_items_owner() -> None:
    """A subagent's explicit message continued untagged does not close the parent's stream."""
    out = expand(
        RS,
        {"type": "TEXT_MESSAGE_START", "messageId": "x", "subagentRunId": "s1"},
        text("a", messageId="m1"),
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "x", "delta": "sub"},
        {"type": "TEXT_MESSAGE_END", "messageId": "x"},
        text("b"),
    )
    assert "TEXT_MESSAGE_END" in out.types  # the explicit one, passed through
    assert out.types.count("TEXT_MESSAGE_END") == 1
    assert out.events[-1] == {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "b"}


def test_an_explicit_event_naming_a_chunk_item_ends_the_shorthand() -> None:
    """Mixing the forms in one item: expansion ends the chunk stream, verify judges the rest."""
    explicit = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m2", "delta": "x"}
    out = expand(
        RS, text("a", messageId="m1"), text("b", messageId="m2", subagentRunId="s1"), explicit
    )
    assert out.events[-2:] == [
        {"type": "TEXT_MESSAGE_END", "messageId": "m2", "subagentRunId": "s1"},
        explicit,
    ]


# -- rejection mid-batch, malformed chunks ---------------------------------------------------


def test_a_rejection_mid_batch_keeps_what_was_produced() -> None:
    stage = Expand(StreamContext(Options()))
    events = [
        RS,
        text("a", messageId="m1"),
        {"type": "CUSTOM", "name": "n", "value": 1},
        text("b", messageId="m2", role="user"),
        text("c", role="system"),
    ]
    with pytest.raises(StreamRejected) as info:
        through_built_in([stage], Batch(events, [10, 11, 12, 13, 14]))
    accepted = info.value.kept
    assert accepted is not None
    assert [e["type"] for e in accepted.events] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "CUSTOM",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
    ]
    assert accepted.indices == [10, 11, 11, 12, 12, 13, 13]
    assert info.value.event_index == 14


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("messageId", 7),
        ("role", None),
        ("delta", ["a"]),
        ("subagentRunId", None),
        ("metadata", []),
        ("rawEvent", None),
        ("name", 1),
    ],
)
def test_a_malformed_chunk_is_rejected_not_repaired(field: str, value: Any) -> None:
    """Reachable when expansion runs before enforce (/spec/1.1/basic/processing)."""
    chunk = text("a", messageId="m1")
    chunk[field] = value
    error = rejected(RS, chunk)
    assert error.code == EXPAND_MALFORMED_CHUNK.id
    assert error.pointer == f"/{field}"


@pytest.mark.parametrize("field", ["rawEvent", "metadata", "role"])
def test_a_malformed_opener_closes_and_makes_nothing(field: str) -> None:
    stage = Expand(StreamContext(Options()))
    events = [RS, text("a", messageId="m1"), text("b", messageId="m2", **{field: None})]
    with pytest.raises(StreamRejected) as info:
        through_built_in([stage], Batch(events, [0, 1, 2]))
    assert info.value.code == EXPAND_MALFORMED_CHUNK.id
    accepted = info.value.kept
    assert accepted is not None
    assert [e["type"] for e in accepted.events] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
    ]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("messageId", None),
        ("messageId", ["m1"]),
        ("role", None),
        ("name", None),
        ("delta", 1),
        ("subagentRunId", None),
        ("metadata", "x"),
        ("rawEvent", None),
    ],
)
def test_a_malformed_continuation_is_rejected_not_repaired(field: str, value: Any) -> None:
    chunk = text("b")
    chunk[field] = value
    error = rejected(RS, text("a", messageId="m1", name="ann"), chunk)
    assert error.code == EXPAND_MALFORMED_CHUNK.id
    assert error.pointer == f"/{field}"
    assert error.event_index == 2


def test_hostile_shapes_never_crash_the_stage() -> None:
    out = expand(
        {"type": ["x"]},
        {"no": "type"},
        {"type": "TEXT_MESSAGE_START", "messageId": []},
        {"type": "STEP_STARTED", "subagentRunId": {}},
        text("a", messageId="m1"),
        {"type": "CUSTOM", "subagentRunId": 3},
        {"type": "SUBAGENT_FINISHED"},
    )
    assert out.types[-3:] == ["TEXT_MESSAGE_END", "CUSTOM", "SUBAGENT_FINISHED"]


# -- the corpus fixtures that use chunks, through the default pipeline -----------------------


@pytest.mark.parametrize(
    "path", corpus_paths(lambda path: "_CHUNK" in path.read_text(encoding="utf-8"))
)
def test_chunk_fixtures(path: Any) -> None:
    fixture = json.loads(path.read_text(encoding="utf-8"))
    expect = fixture["expect"]
    result = run(("\n".join(json.dumps(event) for event in fixture["stream"]) + "\n").encode())
    if expect["outcome"] == "failed":
        assert result.verdict.outcome is Outcome.REJECTED
        assert result.verdict.code is not None and result.verdict.code.startswith("expand.")
        assert expect["errorContains"] in (result.verdict.message or "")
    else:
        assert result.verdict.outcome is Outcome.COMPLETED, result.verdict.message
        assert not result.warnings


# -- the property: a triad stream re-spelled as chunks changes nothing ----------------------

OWNERS = (None, "sa-1", "sa-2")
_delta = st.text(alphabet='ab é{}"', max_size=4)
_metadata = st.one_of(
    st.none(), st.dictionaries(st.sampled_from("kl"), st.integers(0, 3), max_size=2)
)
_raw = st.one_of(st.none(), st.integers(0, 3))


def _tagged(event: Event, owner: str | None) -> Event:
    if owner is not None:
        event["subagentRunId"] = owner
    return event


def _extras(event: Event, metadata: Any, raw: Any) -> Event:
    if metadata is not None:
        event["metadata"] = metadata
    if raw is not None:
        event["rawEvent"] = raw
    return event


FAMILIES = {
    "text": ("TEXT_MESSAGE", "messageId", "TEXT_MESSAGE_CONTENT"),
    "tool": ("TOOL_CALL", "toolCallId", "TOOL_CALL_ARGS"),
    "reasoning": ("REASONING_MESSAGE", "messageId", "REASONING_MESSAGE_CONTENT"),
}


class _Respeller:
    """Builds a valid triad stream and its chunk spelling side by side."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.triad: list[Event] = []
        self.chunks: list[Event] = []
        self.open: dict[str | None, dict[str, Any]] = {}  # lane -> item, in opening order
        self.serial = 0
        self.run = 0
        self.announced: set[str] = set()
        self.finished: set[str] = set()
        self.messages: dict[str | None, list[str]] = {}

    def both(self, event: Event) -> None:
        self.triad.append(event)
        self.chunks.append(dict(event))

    def end(self, lane: str | None) -> None:
        item = self.open.pop(lane, None)
        if item is not None:
            family, id_key, _ = FAMILIES[item["kind"]]
            self.triad.append(_tagged({"type": f"{family}_END", id_key: item["id"]}, lane))

    def start_run(self) -> None:
        self.run += 1
        self.announced.clear()
        self.finished.clear()
        self.both({"type": "RUN_STARTED", "threadId": "t", "runId": f"r{self.run}"})
        for owner in OWNERS[1:]:
            if self.draw(st.booleans()):
                self.announced.add(owner)
                self.both({"type": "SUBAGENT_STARTED", "subagentRunId": owner, "name": owner})

    def finish_run(self) -> None:
        for owner in sorted(self.announced - self.finished):
            self.terminate(owner)
        for lane in list(self.open):
            self.end(lane)
        self.both({"type": "RUN_FINISHED", "threadId": "t", "runId": f"r{self.run}"})

    def terminate(self, owner: str) -> None:
        self.end(owner)
        self.finished.add(owner)
        self.both({"type": "SUBAGENT_FINISHED", "subagentRunId": owner})

    def lane(self) -> str | None:
        owner: str | None = self.draw(st.sampled_from(OWNERS))
        return None if owner in self.finished else owner

    def open_item(self) -> None:
        draw, lane = self.draw, self.lane()
        kind = draw(st.sampled_from(sorted(FAMILIES)))
        family, id_key, content_type = FAMILIES[kind]
        self.serial += 1
        item_id = f"{kind[0]}{self.serial}"
        self.end(lane)
        start: Event = {"type": f"{family}_START", id_key: item_id}
        fields: dict[str, Any] = {}
        if kind == "text":
            role = draw(st.sampled_from([None, "assistant", "user", "system", "developer"]))
            fields = {"role": role or "assistant", "name": draw(st.sampled_from([None, "ann"]))}
            if role is not None:
                start["role"] = role
            if fields["name"] is not None:
                start["name"] = fields["name"]
            self.messages.setdefault(lane, []).append(item_id)
        elif kind == "tool":
            parents = self.messages.get(lane, [])
            parent = draw(st.sampled_from([None, *parents[-2:]]))
            fields = {
                "toolCallName": draw(st.sampled_from(["search", "fetch"])),
                "parentMessageId": parent,
            }
            start["toolCallName"] = fields["toolCallName"]
            if parent is not None:
                start["parentMessageId"] = parent
        else:
            start["role"] = "reasoning"
        metadata, raw = draw(_metadata), draw(_raw)
        _extras(_tagged(start, lane), metadata, raw)
        self.triad.append(start)
        chunk = _extras(_tagged({"type": f"{family}_CHUNK", id_key: item_id}, lane), metadata, raw)
        chunk.update(
            {
                key: value
                for key, value in start.items()
                if key in ("role", "name", "toolCallName", "parentMessageId")
                and kind != "reasoning"
            }
        )
        if draw(st.booleans()):  # the first delta rides on the opening chunk
            delta = draw(_delta)
            chunk["delta"] = delta
            self.triad.append(
                _extras(
                    _tagged({"type": content_type, id_key: item_id, "delta": delta}, lane),
                    metadata,
                    raw,
                )
            )
        self.chunks.append(chunk)
        self.open[lane] = {"kind": kind, "id": item_id, "fields": fields}

    def content(self) -> None:
        draw = self.draw
        if not self.open:
            return
        lane = draw(st.sampled_from(list(self.open)))
        item = self.open[lane]
        family, id_key, content_type = FAMILIES[item["kind"]]
        delta, metadata, raw = draw(_delta), draw(_metadata), draw(_raw)
        tag = lane if lane is not None and draw(st.booleans()) else None
        self.triad.append(
            _extras(
                _tagged({"type": content_type, id_key: item["id"], "delta": delta}, tag),
                metadata,
                raw,
            )
        )
        chunk = _extras(_tagged({"type": f"{family}_CHUNK"}, tag), metadata, raw)
        if delta or (metadata is None and raw is None) or draw(st.booleans()):
            chunk["delta"] = delta
        if draw(st.booleans()) or not self._resolves_without_id(lane, tag):
            chunk[id_key] = item["id"]
        for key, value in item["fields"].items():
            if value is not None and draw(st.booleans()):
                chunk[key] = value
        self.chunks.append(chunk)

    def _resolves_without_id(self, lane: str | None, tag: str | None) -> bool:
        if tag is not None:
            return True
        kind = self.open[lane]["kind"]
        same_kind = [owner for owner, item in self.open.items() if item["kind"] == kind]
        return lane is None or (None not in same_kind and len(same_kind) == 1)

    def lane_event(self) -> None:
        lane = self.lane()
        self.end(lane)
        self.serial += 1
        event: Event = self.draw(
            st.sampled_from(
                [
                    {"type": "CUSTOM", "name": "c", "value": self.serial},
                    {"type": "STATE_SNAPSHOT", "snapshot": {"n": self.serial}},
                    {"type": "STEP_STARTED", "stepName": f"s{self.serial}"},
                ]
            )
        )
        self.both(_tagged(dict(event), lane))
        if event["type"] == "STEP_STARTED":
            self.both(_tagged({"type": "STEP_FINISHED", "stepName": event["stepName"]}, lane))

    def aside(self) -> None:
        self.serial += 1
        event: Event = self.draw(
            st.sampled_from(
                [
                    {"type": "RAW", "event": {"n": self.serial}},
                    {
                        "type": "ACTIVITY_SNAPSHOT",
                        "messageId": f"a{self.serial}",
                        "activityType": "plan",
                        "content": {"n": 1},
                    },
                ]
            )
        )
        self.both(_tagged(dict(event), self.lane()))

    def subagent_ends(self) -> None:
        active = sorted(self.announced - self.finished)
        if active:
            self.terminate(self.draw(st.sampled_from(active)))

    def snapshot(self) -> None:
        for lane in list(self.open):
            self.end(lane)
        self.both({"type": "MESSAGES_SNAPSHOT", "messages": []})


@st.composite
def respelled(draw: st.DrawFn) -> tuple[list[Event], list[Event]]:
    """A valid triad stream, and the same stream spelled in chunks."""
    speller = _Respeller(draw)
    for _ in range(draw(st.integers(1, 2))):
        speller.start_run()
        for _ in range(draw(st.integers(0, 14))):
            step = draw(
                st.sampled_from(
                    [
                        speller.open_item,
                        speller.open_item,
                        speller.content,
                        speller.content,
                        speller.content,
                        speller.lane_event,
                        speller.aside,
                        speller.subagent_ends,
                        speller.snapshot,
                    ]
                )
            )
            step()
        speller.finish_run()
    return speller.triad, speller.chunks


def _splits(draw: Callable[[st.SearchStrategy[list[int]]], list[int]], size: int) -> list[int]:
    return sorted(set(draw(st.lists(st.integers(1, max(1, size - 1)), max_size=4))))


@settings(deadline=None)
@given(respelled(), st.data())
def test_chunks_expand_to_the_triads_they_spell(
    streams: tuple[list[Event], list[Event]], data: st.DataObject
) -> None:
    triad, chunks = streams
    assert Expanded(triad).events == triad  # a triad stream passes untouched
    out = Expanded(chunks, _splits(data.draw, len(chunks)))
    assert out.events == triad
    assert out.counters.expanded == sum(e["type"].endswith("_CHUNK") for e in chunks)
    assert out.counters.synthesized == len(triad) - (len(chunks) - out.counters.expanded)


def _jsonl(events: list[Event]) -> bytes:
    return b"".join(json.dumps(event).encode() + b"\n" for event in events)


@settings(deadline=None)
@given(respelled(), st.integers(1, 200))
def test_through_the_pipeline_both_spellings_deliver_the_same(
    streams: tuple[list[Event], list[Event]], read_size: int
) -> None:
    triad, chunks = streams
    data = _jsonl(chunks)
    reads = [data[i : i + read_size] for i in range(0, len(data), read_size)]
    plain, chunked = run(_jsonl(triad)), run(reads, Pipeline())
    assert plain.verdict.outcome is Outcome.COMPLETED, plain.verdict.message
    assert chunked.verdict.outcome is Outcome.COMPLETED, chunked.verdict.message
    assert chunked.events == plain.events
    # The same diagnostics; their order across stages follows the reads (within one
    # batch a stage reports before the stages after it), so it is not compared.
    assert sorted(d.code for d in chunked.diagnostics) == sorted(d.code for d in plain.diagnostics)
    assert chunked.conversation.to_dict() == plain.conversation.to_dict()
    k = chunked.counters
    assert k.expanded == sum(e["type"].endswith("_CHUNK") for e in chunks)
    assert k.read + k.synthesized == k.delivered + k.dropped + k.expanded + k.discarded
