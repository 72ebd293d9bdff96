"""The engine: stage order, batches, verdicts, asyncio and trio, cancellation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

import anyio
import orjson
import pytest
from agui_pipeline import (
    Batch,
    Outcome,
    Pipeline,
    Stage,
    StreamContext,
    StreamRejected,
    UsageError,
    run_sync,
)
from agui_pipeline._engine.order import canonical_order, middleware_slot
from agui_pipeline.catalog import PARSE_NOT_JSON
from agui_pipeline.stage import reject_after

pytestmark = pytest.mark.anyio

EVENTS = [{"type": "A", "n": n} for n in range(6)]


def frames(events: list[dict[str, Any]]) -> list[bytes]:
    return [b"data: " + orjson.dumps(e) + b"\n\n" for e in events]


def bare(*stages: Any) -> Pipeline:
    """A pipeline with only parse and the given stages: the engine under test, nothing else."""
    pipeline = Pipeline()
    for name in pipeline.stage_names[1:]:
        pipeline = pipeline.without(name)
    for stage in stages:
        pipeline = (
            pipeline.insert_after(pipeline.stage_names[-1], stage)
            if len(pipeline.stage_names) > 1
            else pipeline.insert_before("enforce", stage)
        )
    return pipeline


class Recorder(Stage):
    """Records every batch it sees; passes it on."""

    name: ClassVar[str] = "recorder"
    seen: ClassVar[list[list[int]]] = []

    async def process(self, batch: Batch) -> Batch:
        Recorder.seen.append(list(batch.indices))
        return batch


def rejecting_at(index: int, name: str) -> type[Stage]:
    class RejectAt(Stage):
        async def process(self, batch: Batch) -> Batch:
            for position, event in enumerate(batch.events):
                if event.get("n") == index:
                    at = batch.indices[position]
                    rejection = self.ctx.reject(PARSE_NOT_JSON, f"{name} rejects", event_index=at)
                    raise reject_after(batch.before(at), rejection)  # it only checks
            return batch

    RejectAt.name = name
    return RejectAt


async def test_delivers_events_in_order_under_each_backend() -> None:
    async with bare().open(b"".join(frames(EVENTS))) as stream:
        seen = [event async for event in stream]
    assert seen == EVENTS
    assert stream.verdict.outcome is Outcome.COMPLETED


async def test_a_batch_is_what_one_read_delivered() -> None:
    Recorder.seen = []
    chunks = frames(EVENTS)
    result = await bare(Recorder).run([chunks[0] + chunks[1], chunks[2], b"".join(chunks[3:])])
    assert Recorder.seen == [[0, 1], [2], [3, 4, 5]]
    assert result.events == EVENTS
    assert result.counters.read == result.counters.delivered == 6


async def test_rejection_delivers_what_came_before_it_through_later_stages() -> None:
    Recorder.seen = []
    pipeline = bare(rejecting_at(3, "early"), Recorder)
    result = await pipeline.run(b"".join(frames(EVENTS)))
    assert result.verdict.outcome is Outcome.REJECTED
    assert result.verdict.event_index == 3
    assert result.verdict.code == "parse.not-json"
    assert result.events == EVENTS[:3]
    assert Recorder.seen == [[0, 1, 2]]


async def test_a_later_stage_finding_an_earlier_fault_wins() -> None:
    pipeline = bare(rejecting_at(4, "first"), rejecting_at(1, "second"))
    result = await pipeline.run(b"".join(frames(EVENTS)))
    assert result.verdict.event_index == 1
    assert "second rejects" in str(result.verdict.message)
    assert result.events == EVENTS[:1]


async def test_parse_rejection_delivers_earlier_frames() -> None:
    data = b"".join(frames(EVENTS[:2])) + b"data: {nope\n\n" + b"".join(frames(EVENTS[2:]))
    result = await bare().run(data)
    assert result.verdict.outcome is Outcome.REJECTED
    assert result.verdict.event_index == 2
    assert result.events == EVENTS[:2]
    with pytest.raises(StreamRejected):
        result.raise_for_verdict()


async def test_reading_stops_when_the_consumer_stops() -> None:
    pulled = 0
    closed = anyio.Event()

    async def source() -> AsyncIterator[bytes]:
        nonlocal pulled
        try:
            for chunk in frames(EVENTS):
                pulled += 1
                yield chunk
        finally:
            closed.set()

    async with bare().open(source()) as stream:
        async for _event in stream:
            break
    assert pulled == 1
    assert closed.is_set()


async def test_a_stream_read_again_after_it_was_closed_says_so() -> None:
    async with bare().open(b"".join(frames(EVENTS))) as stream:
        async for _event in stream:
            break
    with pytest.raises(UsageError, match="was closed"):
        await stream.__anext__()
    with pytest.raises(UsageError, match="was closed"):
        stream.batches()


async def test_cancellation_closes_the_source_and_leaves_no_task() -> None:
    tasks_before = _tasks()
    closed = anyio.Event()
    delivered: list[Any] = []

    async def stalled() -> AsyncIterator[bytes]:
        try:
            yield frames(EVENTS)[0]
            yield b'data: {"type": "half a fr'  # then nothing more, ever
            await anyio.sleep_forever()
        finally:
            closed.set()

    with anyio.move_on_after(0.2) as scope:
        async with bare().open(stalled()) as stream:
            async for event in stream:
                delivered.append(event)
    assert scope.cancelled_caught
    assert closed.is_set()
    assert delivered == EVENTS[:1]
    assert not stream.ended  # never judged: the consumer abandoned it
    with pytest.raises(UsageError, match="closed before its end"):
        stream.verdict  # noqa: B018
    assert _tasks() == tasks_before


def _tasks() -> set[object]:
    """The tasks alive now, on either backend."""
    import sniffio

    if sniffio.current_async_library() == "asyncio":
        import asyncio

        return set(asyncio.all_tasks())
    import trio

    root = trio.lowlevel.current_root_task()
    assert root is not None
    found: set[object] = set()
    pending = [root]
    while pending:
        task = pending.pop()
        found.add(task)
        for nursery in task.child_nurseries:
            pending.extend(nursery.child_tasks)
    return found


async def test_idle_timeout_ends_a_stalled_stream() -> None:
    async def stalled() -> AsyncIterator[bytes]:
        yield b"".join(frames(EVENTS[:2]))
        await anyio.sleep_forever()
        yield b""  # pragma: no cover

    with anyio.fail_after(5):
        result = await bare().with_options(idle_timeout=0.1).run(stalled())
    assert result.events == EVENTS[:2]
    assert [d.code for d in result.diagnostics] == ["source.idle-timeout"]


def test_middleware_goes_before_enforce_by_name() -> None:
    class Mine(Stage):
        name = "mine"

    names = Pipeline(middleware=[Mine]).stage_names
    assert names[0] == "parse"
    position = names.index("mine")
    for later in canonical_order()[canonical_order().index("enforce") :]:
        if later in names:
            assert position < names.index(later), later
    for earlier in canonical_order()[: canonical_order().index("enforce")]:
        if earlier in names:
            assert names.index(earlier) < position, earlier
    # The default pipeline is the canonical order.
    assert Pipeline().stage_names == [n for n in canonical_order() if n in Pipeline().stage_names]


def test_one_table_gives_the_order_the_names_and_the_middleware_slot() -> None:
    """``/spec/1.1/basic/processing``: compatibility, middleware, enforcement, expansion,
    verification, then (this project's) reconcile, lint, metadata, and the application."""
    order = ("parse", "compat", "enforce", "expand", "verify", "reconcile", "lint", "metadata")
    assert canonical_order() == (*order, "dispatch")
    assert middleware_slot() == "enforce"
    assert tuple(Pipeline().stage_names) == canonical_order()


def test_stage_list_edits_return_copies() -> None:
    class Mine(Stage):
        name = "mine"

    base = bare(Recorder)
    added = base.insert_before("recorder", Mine)
    assert added.stage_names == ["parse", "mine", "recorder"]
    assert base.stage_names == ["parse", "recorder"]
    assert added.insert_after("mine", Mine, name="again").stage_names == [
        "parse",
        "mine",
        "again",
        "recorder",
    ]
    assert added.without("mine").stage_names == ["parse", "recorder"]
    assert added.replace("mine", Recorder).stage_names == ["parse", "mine", "recorder"]
    with pytest.raises(KeyError, match="no stage named 'nope'"):
        base.insert_before("nope", Mine)


def test_run_sync_from_plain_code() -> None:
    result = run_sync(b"".join(frames(EVENTS)), bare())
    assert result.events == EVENTS


def test_diagnostics_beyond_the_limit_are_counted_not_stored() -> None:
    from agui_pipeline import Limits, Options
    from agui_pipeline.catalog import PARSE_INCOMPLETE_FRAME

    ctx = StreamContext(Options(limits=Limits(max_diagnostics=3)))
    for _ in range(10):
        ctx.report(PARSE_INCOMPLETE_FRAME, "x")
    assert len(ctx.diagnostics) == 4  # three, then one saying the rest are counted
    assert ctx.diagnostics[-1].code == "limit.diagnostics"
    assert ctx.suppressed == {"parse.incomplete-frame": 7}


async def test_drain_judges_a_stream_keeping_no_events() -> None:
    result = await bare().open(b"".join(frames(EVENTS))).drain()
    assert result.events == []
    assert result.counters.delivered == len(EVENTS)
    assert result.verdict.outcome is Outcome.COMPLETED
    rejected = await bare(rejecting_at(2, "late")).open(b"".join(frames(EVENTS))).drain()
    assert rejected.verdict.event_index == 2
    assert rejected.counters.delivered == 2
