"""The stage contract as the engine keeps it for a user's stage (``_engine/contract.py``): the
chunk form it asks for, and counters that balance whatever it does."""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import orjson
import pytest
from agui_pipeline import Batch, ChunkForm, Counters, Outcome, Pipeline, Stage, UsageError
from agui_pipeline.batch import Event
from agui_pipeline.catalog import PARSE_NOT_JSON
from agui_pipeline.stage import StreamContext, reject_after

from tests.conftest import run

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
END = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
CHUNKED = [
    START,
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "Hel"},
    {"type": "TEXT_MESSAGE_CHUNK", "delta": "lo"},
    {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "toolCallName": "f", "delta": '{"a":'},
    {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "delta": "1}"},
    END,
]


def sse(*events: Event) -> bytes:
    return b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)


def balanced(counters: Counters) -> bool:
    return counters.read + counters.synthesized == (
        counters.delivered + counters.dropped + counters.expanded + counters.discarded
    )


class Seen(Stage):
    """Records the types it is handed; its form is set by the subclasses below."""

    name: ClassVar[str] = "seen"
    types: ClassVar[list[str]] = []

    async def process(self, batch: Batch) -> Batch:
        Seen.types += [event["type"] for event in batch.events]
        return batch


class SeesExpanded(Seen):
    name: ClassVar[str] = "sees-expanded"
    form: ClassVar[ChunkForm] = ChunkForm.EXPANDED


class SeesAsSent(Seen):
    name: ClassVar[str] = "sees-as-sent"
    form: ClassVar[ChunkForm] = ChunkForm.AS_SENT


@pytest.fixture(autouse=True)
def _forget() -> None:
    Seen.types = []


# -- the chunk form ------------------------------------------------------------------------


def test_a_middleware_that_asks_for_the_expanded_form_never_sees_a_chunk() -> None:
    result = run(sse(*CHUNKED), Pipeline(middleware=[SeesExpanded]))
    assert result.verdict.outcome is Outcome.COMPLETED
    assert not [kind for kind in Seen.types if kind.endswith("_CHUNK")]
    assert Seen.types[1:4] == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT"]
    # What the application receives is what the canonical order delivers.
    assert result.events == run(sse(*CHUNKED)).events
    assert result.counters.expanded == 4 and balanced(result.counters)


def test_a_middleware_of_either_form_sees_the_chunks_as_sent() -> None:
    run(sse(*CHUNKED), Pipeline(middleware=[Seen]))
    assert Seen.types == [event["type"] for event in CHUNKED]


def test_the_form_of_a_stage_built_by_a_plain_function_is_read_from_the_stage() -> None:
    def factory(ctx: StreamContext) -> Stage:
        return SeesExpanded(ctx)

    run(sse(*CHUNKED), Pipeline(middleware=[factory]))
    assert "TEXT_MESSAGE_CHUNK" not in Seen.types and "TEXT_MESSAGE_START" in Seen.types


def test_one_expansion_serves_every_later_stage_and_the_one_before_sees_chunks() -> None:
    first: list[str] = []

    class Before(Stage):
        name: ClassVar[str] = "before"
        form: ClassVar[ChunkForm] = ChunkForm.AS_SENT

        async def process(self, batch: Batch) -> Batch:
            first.extend(event["type"] for event in batch.events)
            return batch

    pipeline = Pipeline(middleware=[Before, SeesExpanded, SeesExpanded])
    ctx = pipeline.context()
    from agui_pipeline._engine.core import build

    _, route = build(pipeline, ctx)
    assert [stage.name for stage in route.stages][:6] == [
        "compat", "before", "expand", "sees-expanded", "sees-expanded", "enforce",
    ]  # fmt: skip
    run(sse(*CHUNKED), pipeline)
    assert "TOOL_CALL_CHUNK" in first
    assert "TOOL_CALL_CHUNK" not in Seen.types


def test_an_early_expansion_still_rejects_a_malformed_chunk() -> None:
    """``/spec/1.1/basic/processing``: whichever stage meets a malformed chunk first rejects it."""
    bad = {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": 5}
    result = run(sse(START, bad, END), Pipeline(middleware=[SeesExpanded]))
    assert result.verdict.outcome is Outcome.REJECTED
    assert result.verdict.code == "expand.malformed-chunk"


@pytest.mark.parametrize(
    "build",
    [
        lambda: Pipeline(middleware=[SeesExpanded, SeesAsSent]),
        lambda: Pipeline().insert_after("expand", SeesAsSent),
        lambda: Pipeline().insert_after("verify", functools.partial(SeesAsSent)),
    ],
    ids=["after-an-expanded-middleware", "after-expand", "a-partial-after-verify"],
)
def test_a_stage_asking_for_chunks_after_expansion_is_refused_when_placed(build: Any) -> None:
    with pytest.raises(UsageError, match="'sees-as-sent' stage asks for chunks as sent"):
        build()


def test_a_function_factory_placed_wrong_is_refused_on_the_first_stream() -> None:
    def factory(ctx: StreamContext) -> Stage:
        return SeesAsSent(ctx)

    pipeline = Pipeline().insert_after("expand", factory)  # nothing to read until built
    with pytest.raises(UsageError, match="sits after the 'expand' stage"):
        run(sse(*CHUNKED), pipeline)


# -- the counters --------------------------------------------------------------------------


class DropCustom(Stage):
    name: ClassVar[str] = "drop-custom"

    async def process(self, batch: Batch) -> Batch:
        keep = [i for i, event in enumerate(batch.events) if event["type"] != "CUSTOM"]
        return Batch([batch.events[i] for i in keep], [batch.indices[i] for i in keep])


class Duplicate(Stage):
    """Sends every CUSTOM twice, and a CUSTOM of its own at the end of the stream."""

    name: ClassVar[str] = "duplicate"

    async def process(self, batch: Batch) -> Batch:
        events: list[Event] = []
        indices: list[int] = []
        for event, index in zip(batch.events, batch.indices, strict=True):
            copies = 2 if event["type"] == "CUSTOM" else 1
            events += [event] * copies
            indices += [index] * copies
        return Batch(events, indices)

    async def finish(self) -> Batch:
        return Batch([{"type": "CUSTOM", "name": "bye", "value": None}], [99])


class MiscountedDrop(DropCustom):
    name: ClassVar[str] = "miscounted"

    async def process(self, batch: Batch) -> Batch:
        self.ctx.counters.dropped += 2 * len(batch.events)
        return await super().process(batch)


class RejectsAfterDropping(DropCustom):
    """Drops CUSTOM, then rejects a RUN_FINISHED, saying what it kept."""

    name: ClassVar[str] = "rejects"

    async def process(self, batch: Batch) -> Batch:
        kept = await super().process(batch)
        for event, index in zip(batch.events, batch.indices, strict=True):
            if event["type"] == "RUN_FINISHED":
                fault = self.ctx.reject(PARSE_NOT_JSON, "no", event_index=index)
                raise reject_after(kept.before(index), fault)
        return kept


CUSTOM = {"type": "CUSTOM", "name": "x", "value": 1}


def test_events_a_user_stage_removes_are_counted_dropped() -> None:
    result = run(sse(START, CUSTOM, CUSTOM, END), Pipeline(middleware=[DropCustom]))
    assert result.counters.dropped == 2
    assert result.counters.delivered == 2 and balanced(result.counters)


def test_events_a_user_stage_adds_are_counted_synthesized_at_finish_too() -> None:
    pipeline = Pipeline().insert_after("dispatch", Duplicate)  # after dispatch: a batch tail
    result = run([sse(START, CUSTOM), sse(END)], pipeline)
    assert result.counters.synthesized == 2  # the copy, and the event at the end
    assert len(result.events) == 5 and balanced(result.counters)


def test_what_a_user_stage_keeps_before_its_rejection_is_counted() -> None:
    pipeline = Pipeline(middleware=[RejectsAfterDropping])
    result = run(sse(START, CUSTOM, END, CUSTOM), pipeline)
    assert result.verdict.outcome is Outcome.REJECTED
    assert result.events == [START]
    counters = result.counters
    assert (counters.dropped, counters.discarded) == (1, 2) and balanced(counters)


def test_a_stage_whose_counting_does_not_balance_is_named() -> None:
    with pytest.raises(UsageError, match="the 'miscounted' stage returned 1 events for the 2"):
        run(sse(START, CUSTOM), Pipeline(middleware=[MiscountedDrop]))


def test_a_stage_that_counts_exactly_what_it_does_is_left_alone() -> None:
    class CountsItself(DropCustom):
        name: ClassVar[str] = "counts-itself"

        async def process(self, batch: Batch) -> Batch:
            kept = await super().process(batch)
            self.ctx.counters.dropped += len(batch) - len(kept)
            return kept

    result = run(sse(START, CUSTOM, END), Pipeline(middleware=[CountsItself]))
    assert result.counters.dropped == 1 and balanced(result.counters)
