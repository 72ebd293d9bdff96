"""``Batch.types``: the events' types, read once per batch and shared by the stages.

The list is only right while no event's ``type`` changes in place. These tests
change types in place the two ways a stream can — the compatibility boundary
translating a retired event, and a user's middleware rewriting one — and check
that the stages after see the new type.
"""

from __future__ import annotations

from typing import ClassVar

import orjson

from pipeline import Pipeline
from pipeline.stage import Batch, Stage
from tests.conftest import run

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
END = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def jsonl(*events: dict[str, object]) -> bytes:
    return b"".join(orjson.dumps(event) + b"\n" for event in events)


def test_types_are_each_events_type_and_read_once() -> None:
    batch = Batch([{"type": "A"}, {"no": "type"}, {"type": 3}], [0, 1, 2])
    assert batch.types == ["A", None, 3]
    assert batch.types is batch.types
    batch.events[0]["type"] = "B"
    batch.retyped()
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
        "RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
