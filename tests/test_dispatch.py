"""dispatch: handlers by type and for every event, sinks, backpressure, handler failure."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from agui_pipeline import AnyEvent, EventType, HandlerFailed, Outcome, Pipeline
from agui_pipeline.batch import Event
from agui_pipeline.errors import StreamRejected
from agui_pipeline.events import TextMessageContentEvent
from agui_pipeline.subscribers import (
    Handlers,
    JsonLinesSink,
    SseSink,
    encode_json_lines,
    encode_sse,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run
from tests.streams import encode, split, valid_stream

RUN: list[Event] = [
    {"type": "RUN_STARTED", "threadId": "t-d", "runId": "r-1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m-1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "Hello, "},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "world."},
    {"type": "TEXT_MESSAGE_END", "messageId": "m-1"},
    {"type": "RUN_FINISHED", "threadId": "t-d", "runId": "r-1"},
]
STREAM = encode_sse(RUN)


def test_typed_handlers_then_every_event_handlers_in_stream_order() -> None:
    calls: list[tuple[str, str]] = []
    handlers = Handlers()

    @handlers.on("TEXT_MESSAGE_CONTENT")
    def content(event: TextMessageContentEvent) -> None:
        calls.append(("content", event["delta"]))

    @handlers.on(EventType.TEXT_MESSAGE_CONTENT)
    async def content_async(event: TextMessageContentEvent) -> None:
        await anyio.sleep(0)
        calls.append(("content-async", event["delta"]))

    @handlers.on("*")
    def every(event: AnyEvent) -> None:
        calls.append(("every", event["type"]))

    result = run(STREAM, Pipeline(handlers=handlers))
    assert result.verdict.outcome is Outcome.COMPLETED
    assert calls == [
        ("every", "RUN_STARTED"),
        ("every", "TEXT_MESSAGE_START"),
        ("content", "Hello, "),
        ("content-async", "Hello, "),
        ("every", "TEXT_MESSAGE_CONTENT"),
        ("content", "world."),
        ("content-async", "world."),
        ("every", "TEXT_MESSAGE_CONTENT"),
        ("every", "TEXT_MESSAGE_END"),
        ("every", "RUN_FINISHED"),
    ]


def test_a_mapping_registers_handlers_too() -> None:
    seen: list[str] = []
    pipeline = Pipeline(handlers={"RUN_STARTED": seen.append, "RUN_FINISHED": [seen.append]})
    run(STREAM, pipeline)
    assert [event["type"] for event in seen] == ["RUN_STARTED", "RUN_FINISHED"]  # type: ignore[index]


def test_one_pipeline_runs_many_streams_with_the_same_handlers() -> None:
    seen: list[str] = []
    pipeline = Pipeline(handlers={"RUN_STARTED": lambda event: seen.append(event["threadId"])})

    async def both() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(pipeline.run, STREAM)
            group.start_soon(pipeline.run, STREAM.replace(b"t-d", b"t-e"))

    anyio.run(both)
    assert sorted(seen) == ["t-d", "t-e"]


def test_a_handler_that_raises_stops_the_run_with_the_event_index() -> None:
    handled: list[Event] = []

    def boom(event: Event) -> None:
        if event.get("delta") == "world.":
            raise ValueError("no thanks")
        handled.append(event)

    result = run(STREAM, Pipeline(handlers={"*": boom}))
    verdict = result.verdict
    assert verdict.outcome is Outcome.HANDLER_FAILED
    assert verdict.code == "dispatch.handler-failed"  # not a protocol rejection
    assert isinstance(verdict.error, HandlerFailed)
    assert not isinstance(verdict.error, StreamRejected)
    assert verdict.event_index == 3
    assert isinstance(verdict.error.__cause__, ValueError)
    assert "TEXT_MESSAGE_CONTENT" in str(verdict.error) and "no thanks" in str(verdict.error)
    assert result.events == RUN[:3] == handled  # what was handled stays delivered


def test_handler_failure_in_a_later_read_keeps_earlier_batches() -> None:
    def boom(event: Event) -> None:
        raise RuntimeError("late")

    chunks = [encode_sse(RUN[:4]), encode_sse(RUN[4:])]
    result = run(chunks, Pipeline(handlers={"TEXT_MESSAGE_END": boom}))
    assert result.verdict.outcome is Outcome.HANDLER_FAILED
    assert result.verdict.event_index == 4
    assert result.events == RUN[:4]


@pytest.mark.anyio
async def test_cancellation_in_a_handler_is_not_a_handler_failure() -> None:
    async def forever(event: Event) -> None:
        await anyio.sleep_forever()

    with anyio.move_on_after(0.05) as scope:
        await Pipeline(handlers={"RUN_STARTED": forever}).run(STREAM)
    assert scope.cancelled_caught


@pytest.mark.anyio
async def test_a_slow_handler_slows_the_read() -> None:
    """Backpressure: the next chunk is read only after the handlers of the last one ran."""
    log: list[str] = []

    async def source() -> AsyncIterator[bytes]:
        for position, event in enumerate(RUN):
            log.append(f"read {position}")
            yield encode_sse([event])

    async def slow(event: Event) -> None:
        await anyio.sleep(0.001)
        log.append(f"handled {event['type']}")

    await Pipeline(handlers={"*": slow}).run(source())
    expected: list[str] = []
    for position, event in enumerate(RUN):
        expected += [f"read {position}", f"handled {event['type']}"]
    assert log == expected


def test_sinks_re_encode_what_was_delivered() -> None:
    sse, lines = io.BytesIO(), io.BytesIO()
    written: list[bytes] = []

    async def collect(data: bytes) -> None:
        written.append(data)

    pipeline = Pipeline(sinks=[SseSink(sse), JsonLinesSink(lines), SseSink(collect)])
    # Unknown material is stripped by enforce before the sink sees it.
    stream = STREAM.replace(b'"runId":"r-1"}', b'"runId":"r-1","futureProp":1}', 1)
    result = run(stream, pipeline)
    assert result.verdict.outcome is Outcome.COMPLETED
    assert sse.getvalue() == STREAM == b"".join(written)
    assert lines.getvalue() == encode_json_lines(RUN)
    assert run(sse.getvalue()).events == RUN  # the re-encoded stream reads back the same


def test_sse_sink_writes_to_an_anyio_byte_stream() -> None:
    async def main() -> bytes:
        send, receive = anyio.create_memory_object_stream[bytes](100)
        async with receive:
            async with send:
                await Pipeline(sinks=[SseSink(send)]).run(STREAM)
            return b"".join([chunk async for chunk in receive])

    assert anyio.run(main) == STREAM


def test_a_failing_sink_is_a_handler_failure() -> None:
    class Closed:
        def write(self, data: bytes) -> None:
            raise BrokenPipeError("the browser went away")

    result = run(STREAM, Pipeline(sinks=[SseSink(Closed())]))
    assert result.verdict.outcome is Outcome.HANDLER_FAILED
    assert result.verdict.event_index == 0
    assert "sink" in str(result.verdict.error)


def test_handlers_reject_what_is_not_callable() -> None:
    with pytest.raises(TypeError):
        Handlers({"RUN_STARTED": [42]})  # type: ignore[list-item]


def test_the_default_pipeline_ends_with_dispatch() -> None:
    assert Pipeline().stage_names[-1] == "dispatch"


def test_no_handlers_delivers_the_same_events() -> None:
    bare: Any = run(STREAM)
    assert bare.events == RUN and bare.verdict.outcome is Outcome.COMPLETED


@pytest.mark.anyio
async def test_a_handler_sees_the_conversation_up_to_its_own_event() -> None:
    """The Conversation is the first subscriber, fed exactly as far as the event handled."""
    seen: list[str] = []
    context: list[Any] = []

    def content(event: Event) -> None:
        seen.append(context[0].conversation.messages[-1]["content"])

    async with Pipeline(handlers={"TEXT_MESSAGE_CONTENT": content}).open(STREAM) as stream:
        context.append(stream.context)
        async for _ in stream:
            pass
    assert seen == ["Hello, ", "Hello, world."]  # both deltas arrived in one read
    assert stream.result([]).conversation.messages[-1]["content"] == "Hello, world."


@pytest.mark.anyio
@pytest.mark.parametrize("names", [("second",), ("first", "second")])
async def test_every_event_handlers_take_turns_with_the_conversation_one_step_ahead(
    names: tuple[str, ...],
) -> None:
    """Only ``"*"`` handlers — one (dispatch's own loop for it) or two (the general loop):
    each sees every event, in the order they were registered, a coroutine awaited before the
    next call, and the Conversation with that event applied and no later one."""
    calls: list[tuple[str, str, int]] = []
    context: list[Any] = []

    def applied() -> int:
        """How many messages the Conversation holds, and how much text the last one has."""
        messages = context[0].conversation.messages
        return len(messages) * 100 + len(messages[-1]["content"] if messages else "")

    def first(event: Event) -> None:
        calls.append(("first", str(event["type"]), applied()))

    async def second(event: Event) -> None:
        await anyio.lowlevel.checkpoint()
        calls.append(("second", str(event["type"]), applied()))

    handlers = {"first": first, "second": second}
    async with Pipeline(handlers={"*": [handlers[name] for name in names]}).open(STREAM) as stream:
        context.append(stream.context)
        async for _ in stream:
            pass
    seen = [0, 100, 107, 113, 113, 113]  # the message from its start, its text as it grows
    assert calls == [
        (name, str(event["type"]), held)
        for event, held in zip(RUN, seen, strict=True)
        for name in names
    ]


def test_the_conversation_can_be_turned_off() -> None:
    assert run(STREAM, Pipeline(conversation=False)).materialised is None
    assert run(STREAM).conversation.messages[-1]["content"] == "Hello, world."


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # the machine sets the pace
@given(
    stream=valid_stream(),
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
    fail_at=st.one_of(st.none(), st.integers(0, 200)),
)
def test_handlers_and_sinks_see_exactly_what_is_delivered(
    stream: list[Event], cuts: list[int], fail_at: int | None
) -> None:
    """However the bytes are cut into reads and wherever a handler fails: handlers and
    sinks see exactly the delivered events, in order, and the Conversation built while
    handlers run is the one built without them."""
    data = encode(stream, "sse")
    baseline = run(data)
    assert baseline.verdict.outcome is Outcome.COMPLETED
    handled: list[Event] = []
    written: list[bytes] = []
    failing = None if fail_at is None or fail_at >= len(baseline.events) else fail_at

    def record(event: Event) -> None:
        if len(handled) == failing:
            raise RuntimeError("handler failure")
        handled.append(event)

    pipeline = Pipeline(handlers={"*": record}, sinks=[JsonLinesSink(written.append)])
    result = run(split(data, cuts), pipeline)
    expected = baseline.events if failing is None else baseline.events[:failing]
    assert result.events == handled == expected
    assert b"".join(written) == encode_json_lines(expected)
    if failing is None:
        assert result.verdict.outcome is Outcome.COMPLETED
        assert result.conversation.to_dict() == baseline.conversation.to_dict()
    else:
        assert result.verdict.outcome is Outcome.HANDLER_FAILED
        assert result.verdict.event_index == failing
