"""The fused pass changes nothing: random streams, valid and broken, cut into random reads,
give the same result through the fused stages (``_engine/chain.py``) as through each
stage's batch method — the same events and frame indices, verdict, diagnostics, counters,
runs and Conversation.

Diagnostics are compared as a multiset: within one read the fused pass reports in event
order, the unfused one in stage order.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

import anyio
import orjson
import pytest
from agui_pipeline import Pipeline, RunResult, Stage, StreamContext
from agui_pipeline._engine import chain, core
from agui_pipeline.batch import Batch
from agui_pipeline.testing.workload import DECLARATION
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.streams import Event, split, valid_stream


class Observer(Stage):
    """A user's stage that changes nothing: it splits the chain of built-in stages."""

    name = "observer"

    async def process(self, batch: Batch) -> Batch:
        return batch


class Renamer(Stage):
    """A user's stage that changes events in place before enforce (as a translator does)."""

    name = "renamer"

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)

    async def process(self, batch: Batch) -> Batch:
        for event in batch.events:
            if event.get("type") == "CUSTOM_TEXT":
                event["type"] = "TEXT_MESSAGE_CONTENT"
        return batch


def _seen(_: Any) -> None:
    """A handler: dispatch then waits, and is not part of the chain."""


PIPELINES = {
    "default": Pipeline(idle_timeout=5),
    "declared": Pipeline(capabilities=DECLARATION, idle_timeout=5),
    "split after expand": Pipeline(idle_timeout=5).insert_after("expand", Observer),
    "a translator first": Pipeline(capabilities=DECLARATION, idle_timeout=5, middleware=[Renamer]),
    "without enforce": Pipeline(idle_timeout=5).without("enforce"),
    "with a handler": Pipeline(idle_timeout=5, handlers={"*": _seen}),
    "an old peer": Pipeline(idle_timeout=5, peer_max_protocol_version="0.0.57"),
}

RUN_INPUT = {
    "threadId": "thread-1",
    "runId": "run-0",
    "messages": [{"id": "m-history", "role": "user", "content": "hi"}],
    "tools": [{"name": "lookup", "description": "", "parameters": {}}],
    "state": {},
    "context": [],
    "forwardedProps": {},
}

_member = st.sampled_from(["messageId", "toolCallId", "delta", "runId", "type", "role", "extra"])
_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.text(max_size=4),
    st.sampled_from(["m-1", "call-2", "run-0", "sub-1"]),
    st.lists(st.integers(0, 3), max_size=2),
)
_inserted = st.sampled_from(
    [
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m-chunk", "delta": "x"},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "y"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c-chunk", "toolCallName": "lookup"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c-chunk", "delta": "{}"},
        {"type": "REASONING_MESSAGE_CHUNK", "messageId": "r-chunk", "delta": "z"},
        {"type": "THINKING_START"},
        {"type": "THINKING_TEXT_MESSAGE_START"},
        {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "t"},
        {"type": "THINKING_TEXT_MESSAGE_END"},
        {"type": "THINKING_END"},
        {"type": "FUTURE_EVENT", "x": 1},
        {"type": "CUSTOM_TEXT", "messageId": "m-1", "delta": "!"},
        {"type": "CUSTOM", "name": "n", "value": 12345678901234567890123},
        {"type": "STEP_STARTED", "stepName": "s", "subagentRunId": "sub-1"},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "sub-1", "name": "helper"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "sub-1"},
        {"type": "RUN_STARTED", "threadId": "thread-1", "runId": "run-0", "input": RUN_INPUT},
        {"type": "RUN_FINISHED", "threadId": "thread-1", "runId": "run-0", "result": None},
        {"type": "TOOL_CALL_RESULT", "messageId": "tm", "toolCallId": "call-2", "content": "r"},
        {"type": "MESSAGES_SNAPSHOT", "messages": []},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]},
    ]
)
_change = st.one_of(
    st.tuples(st.just("set"), _member, _value),
    st.tuples(st.just("delete"), _member, st.none()),
    st.tuples(st.just("insert"), st.none(), _inserted),
    st.tuples(st.just("raw null"), st.none(), st.none()),
    st.tuples(st.just("tag"), st.none(), st.sampled_from(["sub-1", "sub-2"])),
    st.tuples(st.just("drop"), st.none(), st.none()),
)


@st.composite
def streams(draw: st.DrawFn) -> list[Event]:
    """A valid stream with up to four changes at random places: most are broken somehow."""
    events = copy.deepcopy(draw(valid_stream()))
    for kind, key, value in draw(st.lists(_change, max_size=4)):
        position = draw(st.integers(0, len(events)))
        if kind == "insert":
            events.insert(position, copy.deepcopy(value))
            continue
        if position == len(events):
            continue
        target = events[position]
        if kind == "set":
            target[key] = value
        elif kind == "delete":
            target.pop(key, None)
        elif kind == "raw null":
            target["rawEvent"] = None
        elif kind == "tag":
            target["subagentRunId"] = value
        else:
            del events[position]
    return events


def _reads(body: bytes, draw: Callable[[st.SearchStrategy[Any]], Any]) -> list[bytes]:
    """Cut at random, or one frame a read (a live stream's shape)."""
    if draw(st.booleans()):
        return [frame + b"\n\n" for frame in body.split(b"\n\n")[:-1]]
    return split(body, draw(st.lists(st.integers(0, len(body)), max_size=6)))


def _encode(events: list[Event]) -> bytes:
    frames = []
    for event in events:
        try:
            frames.append(orjson.dumps(event))
        except TypeError:  # an integer past 64 bits: the standard library writes it
            import json

            frames.append(json.dumps(event).encode())
    return b"".join(b"data: " + frame + b"\n\n" for frame in frames)


@contextmanager
def _fused(on: bool, stepped: int) -> Iterator[None]:
    saved = core.BUILT_IN_RUN, chain.STEPPED_READS
    core.BUILT_IN_RUN, chain.STEPPED_READS = ("fused" if on else "batch"), stepped
    try:
        yield
    finally:
        core.BUILT_IN_RUN, chain.STEPPED_READS = saved


def _run(
    pipeline: Pipeline, reads: list[bytes], run_input: Any, fused: bool, stepped: int = 0
) -> Any:
    async def go() -> tuple[RunResult, list[int]]:
        indices: list[int] = []
        events: list[Event] = []
        async with pipeline.open(reads, run_input=run_input) as stream:
            async for batch in stream.batches():
                events += batch.events
                indices += batch.indices
        return stream.result(events), indices

    with _fused(fused, stepped):
        result, indices = anyio.run(go)
    verdict = result.verdict
    return {
        "events": result.events,
        "indices": indices,
        "verdict": (verdict.outcome, verdict.code, verdict.event_index, str(verdict.error)),
        "diagnostics": sorted(
            (d.code, str(d.severity), d.message, d.event_index or -1, d.pointer or "")
            for d in result.diagnostics
        ),
        "counters": asdict(result.counters),
        "runs": [run.to_dict() for run in result.runs],
        "conversation": (None if result.materialised is None else result.materialised.to_dict()),
    }


def _outcome(
    pipeline: Pipeline, reads: list[bytes], run_input: Any, fused: bool, stepped: int = 0
) -> Any:
    """:func:`_run`'s result, or the bug a stage raised: a stage fed values enforce would
    have refused (lint in the pipeline without enforce) raises the same exception, noted
    with the same stage, fused or not. Its text is Python's, and may differ: a join over one
    event's deltas says "sequence item 0" where the batch's join over the read's says 1."""
    try:
        return _run(pipeline, reads, run_input, fused, stepped)
    except Exception as bug:
        return {"raised": (type(bug), getattr(bug, "__notes__", []))}


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    events=streams(),
    name=st.sampled_from(sorted(PIPELINES)),
    with_input=st.booleans(),
    stepped=st.sampled_from([chain.STEPPED_READS, 10**9]),
    data=st.data(),
)
def test_fused_and_unfused_give_the_same_result(
    events: list[Event], name: str, with_input: bool, stepped: int, data: st.DataObject
) -> None:
    """``stepped``: the largest read the chain takes event by event (every read, or its
    default); the unfused run takes each stage's batch method whatever the read."""
    reads = _reads(_encode(events), data.draw)
    run_input = copy.deepcopy(RUN_INPUT) if with_input else None
    fused = _outcome(PIPELINES[name], copy.deepcopy(reads), run_input, True, stepped)
    unfused = _outcome(PIPELINES[name], copy.deepcopy(reads), copy.deepcopy(run_input), False)
    assert fused.keys() == unfused.keys(), (fused.get("raised"), unfused.get("raised"))
    for part, value in fused.items():
        assert value == unfused[part], part


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_the_built_in_stages_are_chained(name: str) -> None:
    """The property compares something: each pipeline above runs a fused chain, and a
    user's stage or a waiting dispatch stands outside it."""
    from agui_pipeline._engine.core import build

    pipeline = PIPELINES[name]
    _, route = build(pipeline, pipeline.context())
    chains = [segment for segment in route.segments if isinstance(segment, chain.Chain)]
    assert chains
    outside = [segment.name for segment in route.segments if not isinstance(segment, chain.Chain)]
    expected = {
        "split after expand": ["observer"],
        "a translator first": ["renamer"],
        "with a handler": ["dispatch"],
    }.get(name, [])
    assert outside == expected


@pytest.mark.parametrize("reads", ["one", "all"], ids=["one frame a read", "one read"])
def test_a_bug_in_a_chained_stage_names_the_stage(
    reads: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stage's own exception surfaces as itself, noted with the stage's name, whether
    the chain took the read step by step or stage by stage."""
    from agui_pipeline.stages.reconcile import Reconcile

    def broken(self: Reconcile, *_: Any) -> Any:
        raise RuntimeError("reconcile's bug")

    monkeypatch.setattr(Reconcile, "step", broken)
    monkeypatch.setattr(Reconcile, "process", broken)
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}] * 10
    body = _encode(events)
    chunks = _reads(body, lambda _: reads == "one") if reads == "one" else [body]
    with pytest.raises(RuntimeError) as raised:
        _run(PIPELINES["declared"], chunks, None, fused=True, stepped=chain.STEPPED_READS)
    assert "raised in the 'reconcile' stage" in (raised.value.__notes__ or [])


def test_a_fault_on_one_of_a_frames_events_discards_them_all_fused_too() -> None:
    """Expand, split from verify by a stage of yours, turns the thinking event's frame into
    the chunk message's end and the event itself; verify rejects the event, and the end,
    of the same frame, is discarded with it (a random draw found the fused pass kept it)."""
    events: list[Event] = [
        {"type": "RUN_STARTED", "threadId": "thread-1", "runId": "run-0"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m-chunk", "delta": "x"},
        {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "t"},
        {"type": "RUN_ERROR", "message": ""},
    ]
    reads = [frame + b"\n\n" for frame in _encode(events).split(b"\n\n")[:-1]]
    pipeline = PIPELINES["split after expand"]
    fused = _outcome(pipeline, copy.deepcopy(reads), None, True, chain.STEPPED_READS)
    unfused = _outcome(pipeline, copy.deepcopy(reads), None, False)
    assert fused == unfused
    assert [event["type"] for event in fused["events"]][-1] == "TEXT_MESSAGE_CONTENT"
