"""``Batch.types`` and ``Batch.objects``: what is known of a batch's events, shared.

Both are only right while no event changes in place. These tests change
events in place the ways a stream can — the compatibility boundary translating
a retired event, a user's middleware rewriting a type or swapping an event —
and check that the stages after see the change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import orjson
from agui_pipeline import Pipeline, StreamRejected
from agui_pipeline.batch import Batch
from agui_pipeline.stage import Stage

from tests.conftest import run

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
END = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def jsonl(*events: Mapping[str, object]) -> bytes:
    return b"".join(orjson.dumps(event) + b"\n" for event in events)


def test_types_are_each_events_type_and_read_once() -> None:
    batch = Batch([{"type": "A"}, {"no": "type"}, {"type": 3}], [0, 1, 2])
    assert batch.types == ["A", None, 3]
    assert batch.types is batch.types
    batch.events[0]["type"] = "B"
    batch.changed()
    assert batch.types == ["B", None, 3]


def test_a_translated_retired_event_is_seen_by_its_new_type_downstream() -> None:
    # THINKING_START becomes REASONING_START in place: reconcile must see a
    # reasoning event, contradicting reasoning.supported: false.
    stream = jsonl(START, {"type": "THINKING_START"}, {"type": "THINKING_END"}, END)
    result = run(stream, Pipeline(capabilities={"reasoning": {"supported": False}}))
    assert result.verdict.completed
    codes = [d.code for d in result.diagnostics]
    assert "reconcile.false-contradicted" in codes, codes


class ContentToChunk(Stage):
    """Middleware rewriting a message's content events into chunks, in place."""

    name: ClassVar[str] = "content-to-chunk"

    async def process(self, batch: Batch) -> Batch:
        for event in batch.events:
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                event["type"] = "TEXT_MESSAGE_CHUNK"
        return batch  # the same batch, its types changed without saying so


def test_middleware_that_retypes_in_place_is_seen_by_expansion() -> None:
    content = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"}
    result = run(jsonl(START, content, END), Pipeline(middleware=[ContentToChunk]))
    assert result.verdict.completed, result.verdict
    assert [event["type"] for event in result.events] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]


class Subclassing(Stage):
    """Middleware swapping an event, in place, for a dict subclass (not a plain object)."""

    name: ClassVar[str] = "subclassing"

    async def process(self, batch: Batch) -> Batch:
        batch.events[2] = type("Tagged", (dict,), {})(batch.events[2])
        return batch


def test_parse_knows_its_events_are_objects_and_a_change_forgets_it() -> None:
    from agui_pipeline.options import Options
    from agui_pipeline.stage import StreamContext
    from agui_pipeline.stages.parse import Parse

    batch = Parse(StreamContext(Options())).feed(jsonl(START, END))
    assert batch.objects and batch.types == ["RUN_STARTED", "RUN_FINISHED"]
    batch.changed()
    assert not batch.objects
    assert not Batch([{"type": "A"}], [0]).objects


def test_an_event_swapped_in_place_by_middleware_is_judged_again() -> None:
    content = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"}
    opened = {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
    result = run(jsonl(START, opened, content, END), Pipeline(middleware=[Subclassing]))
    assert not result.verdict.completed
    assert isinstance(result.verdict.error, StreamRejected)
    assert result.verdict.error.code == "enforce.malformed"
    assert result.verdict.error.event_index == 2


def test_by_type_reads_a_complete_table_and_falls_back_for_a_type_it_lacks() -> None:
    """A ``type_table`` read by ``itemgetter`` gives what a lookup per event gives, for a
    batch of one, of many, and with a type no table knows (the ``map`` fallback)."""
    from agui_pipeline.batch import type_table

    entries = {"TEXT_MESSAGE_START": "start", "RUN_FINISHED": "finish"}
    table = type_table(entries)
    assert set(table) >= {"TOOL_CALL_ARGS", "SUBAGENT_ERROR"} and table["TOOL_CALL_ARGS"] is None
    for types in (
        ["TEXT_MESSAGE_START"],
        ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "RUN_FINISHED"],
        ["TEXT_MESSAGE_CONTENT", "NOT_A_TYPE", "RUN_FINISHED"],
        [],
    ):
        batch = Batch([{"type": kind} for kind in types], list(range(len(types))))
        assert list(batch.by_type(table)) == [entries.get(kind) for kind in types]
        assert list(batch.by_type(table, 1)) == [entries.get(kind) for kind in types[1:]]
