"""Deliver mode (``pipeline/_engine/deliver.py``): the native judge reads a stream whose events
go to application code while it is sure of it, and the Python stages take over where it stops.

Each test runs a stream on the native core, watching which path each read took, and holds
everything a consumer sees — events with their indices, verdict, diagnostics, counters, runs,
the Conversation, what the handlers were handed — to the pure core's answer
(``tests/test_core_differential.py`` compares the same over the corpus and random streams).
A test that says the judge delivered, or that the reference took over, checks that it did:
otherwise it would compare the reference with itself.
"""

from __future__ import annotations

import copy
import random
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import orjson
import pytest
from agui_pipeline import Incremental, Pipeline, Stage
from agui_pipeline._engine.chain import STEPPED_READS
from agui_pipeline._engine.deliver import JudgedSession, open_session
from agui_pipeline._engine.judging import input_for_judge
from agui_pipeline._engine.session import Session
from agui_pipeline.batch import Batch, empty_batch
from agui_pipeline.catalog import PARSE_INCOMPLETE_FRAME
from agui_pipeline.options import Limits
from agui_pipeline.stage import StreamContext
from agui_pipeline.stages.reconcile import Reconcile
from agui_pipeline.subscribers import JsonLinesSink
from agui_pipeline.testing.workload import DECLARATION, events
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import streams
from tests.cores import running, seen
from tests.test_core_differential import assert_same, bytewise, random_reads


def _sse(stream: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(event) + b"\n\n" for event in stream)


def _jsonl(stream: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(event) + b"\n" for event in stream)


def _paths(
    make: Callable[[], Pipeline], reads: list[bytes], run_input: Any = None
) -> tuple[list[bool], Any]:
    """The stream on the native core: for each batch delivered, whether the judge was still
    reading when it came out; and the session."""
    judged: list[bool] = []

    async def read() -> Any:
        async with make().open(list(reads), run_input=copy.deepcopy(run_input)) as stream:
            async for _batch in stream.batches():
                session = stream._session
                judged.append(isinstance(session, JudgedSession) and session.judging)
        return stream._session

    with running("native"):
        session = anyio.run(read)
    return judged, session


def _handled(make: Callable[[Callable[[Any], None]], Pipeline], reads: list[bytes]) -> Any:
    """What a ``"*"`` handler was handed, in order, on each core."""
    seen: dict[str, list[str]] = {}
    for core in ("native", "pure"):
        handed: list[str] = []

        async def read(handed: list[str] = handed) -> None:
            async with make(lambda event: handed.append(repr(event))).open(list(reads)) as s:
                async for _batch in s.batches():
                    pass

        with running(core):
            anyio.run(read)
        seen[core] = handed
    return seen


CLEAN = events(400, seed=3)
"""Runs the judge follows whole (the benchmark's workload)."""


def _with_unsure_at(at: int) -> list[dict[str, Any]]:
    """The clean runs with a message sent as one chunk event — which only the reference
    expands — before the first message that starts at or after event ``at``."""
    stream = [dict(event) for event in CLEAN]
    for index in range(at, len(stream)):
        if stream[index]["type"] == "TEXT_MESSAGE_START":
            chunk = {"type": "TEXT_MESSAGE_CHUNK", "messageId": f"chunked-{at}", "delta": "hi"}
            stream.insert(index, chunk)
            return stream
    raise AssertionError("the workload starts no message after the event asked for")


READS: list[tuple[str, Callable[[bytes], list[bytes]]]] = [
    ("whole", lambda data: [data]),
    ("64 KiB reads", lambda data: [data[i : i + 65_536] for i in range(0, len(data), 65_536)]),
    ("one event a read", lambda data: [frame + b"\n\n" for frame in data.split(b"\n\n") if frame]),
    ("random reads", lambda data: random_reads(data, 7)),
]


ENCODINGS = {
    "sse": _sse(CLEAN),
    "jsonl": _jsonl(CLEAN),
    "jsonl, the last line without its newline": _jsonl(CLEAN)[:-1],
    "sse after a byte order mark": b"\xef\xbb\xbf" + _sse(CLEAN),
}


@pytest.mark.parametrize("framing", list(ENCODINGS))
@pytest.mark.parametrize(("shape", "cut"), READS, ids=[shape for shape, _ in READS])
def test_a_stream_the_judge_follows_is_delivered_from_it_to_the_end(
    framing: str, shape: str, cut: Callable[[bytes], list[bytes]]
) -> None:
    data = ENCODINGS[framing]
    reads = cut(data)
    judged, session = _paths(Pipeline, reads)
    assert judged and all(judged), f"a batch came from the reference: {judged.count(False)}"
    assert session.front.judge is not None and session.front.judge.read == len(CLEAN)
    assert_same(Pipeline, reads, what=f"the workload as {framing}, {shape}")
    handled = _handled(lambda handler: Pipeline(handlers={"*": handler}), reads)
    assert handled["native"] == handled["pure"] and len(handled["native"]) == len(CLEAN)


_JUDGED_FLOATS = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda number: abs(number) < 2.0**63 and not (number == 0 and str(number)[0] == "-")
)
"""Floats the judge reads alike with orjson (``native/src/decode.rs`` leaves ``-0.0`` and those
of magnitude 2⁶³ or more to the reference)."""

_JUDGED_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | _JUDGED_FLOATS
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=70), inner, max_size=40)
    ),
    max_leaves=40,
)
"""JSON values of every kind the judge builds: member names past 64 characters and objects of
more than 32 members included (the two bounds of ``build.rs``'s table of names)."""


def _carrying(values: list[Any]) -> list[dict[str, Any]]:
    """One run whose ``CUSTOM`` events carry ``values``, and whose text message carries each
    as its metadata when it is an object."""
    run = {"threadId": "t", "runId": "r"}
    stream: list[dict[str, Any]] = [{"type": "RUN_STARTED", **run}]
    for at, value in enumerate(values):
        stream.append({"type": "CUSTOM", "name": f"value-{at}", "value": value})
        if type(value) is dict:
            stream.append(
                {"type": "TEXT_MESSAGE_START", "messageId": f"m{at}", "role": "assistant"}
            )
            stream.append({"type": "TEXT_MESSAGE_END", "messageId": f"m{at}", "metadata": value})
    return [*stream, {"type": "RUN_FINISHED", **run}]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_JUDGED_VALUES, min_size=1, max_size=8), st.sampled_from(READS))
def test_the_events_the_judge_builds_are_the_ones_orjson_builds(
    values: list[Any], reads: tuple[str, Callable[[bytes], list[bytes]]]
) -> None:
    """Deliver mode builds each event from the judge's own decoding (``native/src/build.rs``),
    not with orjson: every kind of value comes out as ``orjson.loads`` makes it — an integer
    as an ``int`` and never a ``bool``, a float correctly rounded, the members in order."""
    stream = _carrying(values)
    data = _sse(stream)
    cut = reads[1](data)
    judged, _session = _paths(Pipeline, cut)
    assert judged and all(judged), "the reference read what the judge should have built"
    handled = _handled(lambda handler: Pipeline(handlers={"*": handler}), cut)
    frames = [orjson.loads(frame.removeprefix(b"data: ")) for frame in data.split(b"\n\n")[:-1]]
    assert handled["native"] == [repr(event) for event in frames]
    assert handled["native"] == handled["pure"]


def test_the_judge_interns_the_schema_s_names_and_no_name_of_the_producer_s() -> None:
    """The judge builds each name once per stream and shares it among the events that repeat
    it, but interns only the schema's names (event types and members): on early Python 3.12
    releases an interned string is immortal, and a hostile stream's made-up names would then
    stay in memory for the life of the process."""
    made_up = f"made-up-{uuid.uuid4().hex}"
    reads = [_sse(_carrying([{made_up: 1}, {made_up: 2}]))]
    judged, _session = _paths(Pipeline, reads)
    assert judged and all(judged), "the reference read what the judge should have built"
    handed: list[Any] = []

    async def read() -> None:
        async with Pipeline(handlers={"*": handed.append}).open(list(reads)) as stream:
            async for _batch in stream.batches():
                pass

    with running("native"):
        anyio.run(read)
    first, second = (next(iter(e["value"])) for e in handed if e["type"] == "CUSTOM")
    assert first == made_up and first is second, "a name the stream repeats is built once"
    fresh = made_up[:4] + made_up[4:]  # an equal string, not the same object
    assert sys.intern(fresh) is not first, "a name the producer made up was interned"
    started = handed[0]
    for name in started:
        assert sys.intern("".join(name)) is name, f"the schema's {name!r} is not interned"
    assert sys.intern("".join(started["type"])) is started["type"]


def test_metadata_reads_the_events_the_judge_marks() -> None:
    """The judge names the events metadata must read (``Batch.marked``): those with a
    ``metadata`` member, and those that create an item whatever their members. A reasoning
    message's start is one: its merged metadata then survives a later ``MESSAGES_SNAPSHOT``
    without reasoning messages (``/spec/1.1/basic/metadata``, "Stored metadata"), read by the
    reference after a handover, as on the pure core."""
    run = {"threadId": "t", "runId": "r"}
    judged_part: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", **run},
        {"type": "REASONING_START", "messageId": "span"},
        {"type": "REASONING_MESSAGE_START", "messageId": "think", "role": "reasoning"},
        # More events than a read the engine carries event by event (``chain.STEPPED_READS``):
        # this read goes to metadata's batch method, which reads only what the judge marked.
        *[{"type": "REASONING_MESSAGE_CONTENT", "messageId": "think", "delta": "h"}]
        * STEPPED_READS,
        {"type": "REASONING_MESSAGE_END", "messageId": "think", "metadata": {"model": "m"}},
        {"type": "REASONING_END", "messageId": "span"},
    ]
    snapshot = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [{"id": "u", "role": "user", "content": "hi"}],
    }
    reads = [_sse(judged_part), _sse([snapshot, {"type": "RUN_FINISHED", **run}])]
    judged, _session = _paths(Pipeline, reads)
    assert judged == [True, False], "the judge did not pass the reasoning message alone"
    outcome = assert_same(Pipeline, reads, what="a reasoning message, then a snapshot")
    assert outcome["item metadata"] == repr(
        {"messages": {"think": {"model": "m"}}, "tool calls": {}}
    )


@pytest.mark.parametrize("at", [0, 1, 100, 190])
@pytest.mark.parametrize(("shape", "cut"), READS, ids=[shape for shape, _ in READS])
def test_the_reference_takes_over_where_the_judge_stops_being_sure(
    at: int, shape: str, cut: Callable[[bytes], list[bytes]]
) -> None:
    stream = _with_unsure_at(at)
    reads = cut(_sse(stream))
    judged, session = _paths(Pipeline, reads)
    assert isinstance(session, JudgedSession) and not session.judging
    assert False in judged, "the reference never took over"
    if len(reads) > 1 and at >= 100:
        assert judged[0], "the judge delivered nothing before it was unsure"
    assert judged == sorted(judged, reverse=True), "the judge delivered after the reference"
    outcome = assert_same(Pipeline, reads, what=f"a chunk at {at}, {shape}")
    assert outcome["verdict"]["outcome"] == "completed"
    handled = _handled(lambda handler: Pipeline(handlers={"*": handler}), reads)
    assert handled["native"] == handled["pure"]


def test_a_verdict_found_after_the_handover_is_the_reference_s() -> None:
    """A broken sequence late in a stream the judge followed until then: the rejection, its
    index and pointer, and the runs, counters and Conversation up to it, as the reference
    gives them."""
    stream = [dict(event) for event in CLEAN]
    ended = next(i for i, e in enumerate(stream) if i > 200 and e["type"] == "TEXT_MESSAGE_END")
    stream.insert(ended + 1, dict(stream[ended]))  # the same message ended twice
    reads = random_reads(_sse(stream), 3)
    judged, session = _paths(Pipeline, reads)
    assert judged[0] and not session.judging
    outcome = assert_same(Pipeline, reads, what="a message ended twice")
    assert outcome["verdict"]["outcome"] == "rejected"


@contextmanager
def _watching(after_each_read: Callable[[JudgedSession], None]) -> Iterator[None]:
    """Deliver mode's sessions, each handing itself to ``after_each_read`` after every read
    it is fed."""
    from agui_pipeline._engine import deliver

    class Watched(JudgedSession):
        __slots__ = ()

        async def feed(self, chunk: bytes | None) -> Any:
            batch = await super().feed(chunk)
            after_each_read(self)
            return batch

    original = deliver.JudgedSession
    deliver.JudgedSession = Watched  # type: ignore[misc]
    try:
        yield
    finally:
        deliver.JudgedSession = original  # type: ignore[misc]


@pytest.mark.parametrize("limit", [1, 4_096, 20_000])
def test_past_max_held_bytes_the_reference_takes_over_while_sure(limit: int) -> None:
    reads = random_reads(_sse(CLEAN), 11)
    held: list[int] = []

    def make() -> Pipeline:
        return Pipeline(limits=Limits(max_held_bytes=limit))

    with _watching(lambda session: held.append(session.front.held_bytes)):
        judged, session = _paths(make, reads)
    assert held, "the session watched was not the one the stream ran"
    assert isinstance(session, JudgedSession) and not session.judging
    assert max(held) <= limit, f"held {max(held)} bytes past the limit of {limit}"
    if limit > 1:
        assert judged[0] and not judged[-1], "the judge never delivered, or never handed over"
    assert_same(make, reads, what=f"the workload under max_held_bytes={limit}")


def test_a_handler_that_fails_ends_the_stream_as_it_does_on_the_reference() -> None:
    def make(fail_at: int) -> Callable[[Callable[[Any], None]], Pipeline]:
        def build(record: Callable[[Any], None]) -> Pipeline:
            count = [0]

            def handler(event: Any) -> None:
                count[0] += 1
                if count[0] == fail_at:
                    raise RuntimeError("the application's own bug")
                record(event)

            return Pipeline(handlers={"*": handler})

        return build

    reads = random_reads(_sse(CLEAN), 5)
    handled = _handled(make(123), reads)
    assert handled["native"] == handled["pure"] and len(handled["native"]) == 122

    def failing() -> Pipeline:
        def handler(event: Any) -> None:
            if event.get("messageId") == CLEAN[123].get("messageId"):
                raise RuntimeError("the application's own bug")

        return Pipeline(handlers={"*": handler})

    outcome = assert_same(failing, reads, what="a handler that fails")
    assert outcome["verdict"]["outcome"] == "handler-failed"


@pytest.mark.parametrize("framing", list(ENCODINGS))
def test_a_handler_that_fails_on_the_last_event_ends_the_stream_as_on_the_reference(
    framing: str,
) -> None:
    """The last event, which a JSON line without its newline delivers only at the end."""

    def failing() -> Pipeline:
        def handler(event: Any) -> None:
            if event["type"] == "RUN_FINISHED":
                raise RuntimeError("the application's own bug")

        return Pipeline(handlers={"*": handler})

    data = ENCODINGS[framing]
    _, session = _paths(failing, [data])
    assert isinstance(session, JudgedSession) and session.judging  # no handover
    outcome = assert_same(failing, [data], what=f"a handler failing at the end, {framing}")
    assert outcome["verdict"]["outcome"] == "handler-failed"
    assert outcome["counters"]["delivered"] == len(CLEAN) - 1


def test_the_sync_shell_delivers_from_the_judge_too() -> None:
    with running("native"):
        incremental = Incremental(Pipeline())
        delivered = []
        for read in random_reads(_sse(CLEAN), 2):
            delivered += incremental.feed(read)
        assert isinstance(incremental._session, JudgedSession) and incremental._session.judging
        result = incremental.close()
    assert result.verdict.completed and delivered == CLEAN


# -- a run input -------------------------------------------------------------------------------

INPUT: dict[str, Any] = {
    "threadId": "t",
    "runId": "r",
    "messages": [
        {"id": "h-1", "role": "user", "content": "hello"},
        {
            "id": "h-2",
            "role": "assistant",
            "toolCalls": [
                {"id": "hc-1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"id": "h-3", "role": "tool", "toolCallId": "hc-1", "content": "42"},
    ],
    "tools": [{"name": "other", "description": "", "parameters": {}}],
    "state": {"a": 1},
    "context": [],
    "forwardedProps": {},
}


def _run(*middle: dict[str, Any], thread: str = "t", run: str = "r") -> list[dict[str, Any]]:
    return [
        {"type": "RUN_STARTED", "threadId": thread, "runId": run},
        *middle,
        {"type": "RUN_FINISHED", "threadId": thread, "runId": run},
    ]


def _text(message_id: str = "m-1") -> list[dict[str, Any]]:
    return [
        {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": message_id},
    ]


def _call(name: str = "lookup", call_id: str = "c-1") -> list[dict[str, Any]]:
    return [
        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": '{"q": 1}'},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
    ]


def _result(call_id: str = "c-1", message_id: str = "tool-1") -> dict[str, Any]:
    return {
        "type": "TOOL_CALL_RESULT",
        "messageId": message_id,
        "toolCallId": call_id,
        "content": "done",
    }


_DELTA = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/b", "value": 2}]}
_NO_TOOLS = {key: value for key, value in INPUT.items() if key != "tools"}
_NO_STATE = {key: value for key, value in INPUT.items() if key != "state"}

ANSWERS: list[tuple[str, list[dict[str, Any]], dict[str, Any], bool]] = [
    ("a plain answer", _run(*_text()), INPUT, True),
    ("text, a call answered, a patch", _run(*_text(), *_call(), _result(), _DELTA), INPUT, True),
    ("a run on another thread", _run(*_text(), thread="t-2"), INPUT, False),
    ("another run than the one asked for", _run(*_text(), run="r-2"), INPUT, False),
    ("a call to a listed tool", _run(*_call("other"), _result()), INPUT, False),
    ("a call unanswered, tools listed", _run(*_call()), INPUT, False),
    ("a call unanswered, no tools listed", _run(*_call()), _NO_TOOLS, True),
    ("a history message id reused", _run(*_text("h-1")), INPUT, False),
    ("a result for a call in the history", _run(_result("hc-1")), INPUT, False),
    ("a patch on the input's state", _run(_DELTA), INPUT, True),
    ("a patch the input's state refuses", _run(_DELTA), {**INPUT, "state": []}, False),
    ("a patch, no state in the input", _run(_DELTA), _NO_STATE, True),
]


@pytest.mark.parametrize(
    ("what", "stream", "run_input", "to_the_end"), ANSWERS, ids=[a[0] for a in ANSWERS]
)
def test_a_stream_answering_a_run_input_is_judged_against_it(
    what: str, stream: list[dict[str, Any]], run_input: dict[str, Any], to_the_end: bool
) -> None:
    """Read event by event, and drained for its verdict alone (the judge then builds no
    event)."""
    data = _sse(stream)
    for reads in ([data], random_reads(data, 1), bytewise(data)):
        _, session = _paths(Pipeline, reads, run_input)
        assert isinstance(session, JudgedSession), what
        judge = session.front.judge
        assert session.judging is to_the_end, f"{what}: {judge and judge.unsure}"
        assert_same(Pipeline, reads, run_input, what=what)
        drained, _ = _drained(Pipeline, reads, run_input)
        assert _builds_nothing(drained), what
        assert drained.judging is to_the_end, f"{what}, drained"
        assert_same(Pipeline, reads, run_input, drained=True, what=f"{what}, drained")


def test_an_input_is_read_for_the_judge_as_its_rules_need() -> None:
    answering = input_for_judge(INPUT)
    assert answering is not None
    thread, run, tools, history, chars, state = answering
    assert (thread, run, tools, state) == ("t", "r", ["other"], '{"a":1}')
    assert sorted(history) == ["h-1", "h-2", "h-3", "hc-1", "hc-1"]
    assert chars == len(orjson.dumps(INPUT["messages"]))
    assert input_for_judge(_NO_TOOLS)[2] is None  # type: ignore[index]
    assert input_for_judge({**INPUT, "threadId": 7}) is None
    assert input_for_judge([INPUT]) is None


def test_deliver_mode_does_not_change_a_single_random_read() -> None:
    """One stream, cut at every byte in turn into two reads: the handover and the judge's
    holding meet every boundary of a frame and of a byte order mark."""
    stream = _with_unsure_at(30)[:60]
    data = b"\xef\xbb\xbf" + _sse(stream)
    cuts = [*random.Random(0).sample(range(len(data)), 40), 1, 2, 3]
    for cut in cuts:
        assert_same(Pipeline, [data[:cut], data[cut:]], what=f"cut at byte {cut}")
    assert_same(Pipeline, [*bytewise(data[:200]), data[200:]], what="one byte a read, then all")


def test_the_context_a_stage_sees_is_the_reference_s_after_a_handover() -> None:
    """The bytes, counters and runs the judge kept are counted again by the reference, not
    twice."""
    stream = _with_unsure_at(150)
    reads = random_reads(_sse(stream), 9)
    contexts: list[StreamContext] = []

    async def read() -> None:
        async with Pipeline().open(list(reads)) as stream:
            async for _batch in stream.batches():
                pass
        contexts.append(stream.context)

    with running("native"):
        anyio.run(read)
    ctx = contexts[0]
    assert ctx.bytes_read == sum(map(len, reads))
    assert ctx.counters.read == len(stream)
    assert len({id(run) for run in ctx.runs}) == len(ctx.runs)
    assert [run.run_id for run in ctx.runs] == [
        event["runId"] for event in CLEAN if event["type"] == "RUN_STARTED"
    ]


def _declared(**changed: Any) -> dict[str, Any]:
    """The workload's declaration with whole groups replaced."""
    return {**DECLARATION, **changed}


_FALSE = {"supported": False}
CALLING = events(1000, seed=3)
"""Runs the judge follows whole that call tools, stream state and reason: evidence for most
of what a declaration says."""
DECLARED: list[tuple[str, dict[str, Any], list[str]]] = [
    ("the workload's own", DECLARATION, ["reconcile.run-summary"]),
    (
        "everything it uses declared false",
        _declared(
            tools={**DECLARATION["tools"], "supported": False},
            state={"snapshots": False, "deltas": False},
            reasoning=_FALSE,
            transport={"streaming": False},
        ),
        ["reconcile.false-contradicted", "reconcile.transport"],
    ),
    (
        "no tool of its listed, none of the application's",
        _declared(tools={"supported": True, "clientProvided": False, "items": []}),
        ["reconcile.unlisted-tool"],
    ),
    ("an unusable declaration", {"tools": {"supported": "yes"}}, ["reconcile.declaration"]),
]
"""Declarations the workload is held to: what each makes reconcile say (a code's prefix)."""


@pytest.mark.parametrize(("what", "declaration", "said"), DECLARED, ids=[d[0] for d in DECLARED])
@pytest.mark.parametrize(("shape", "cut"), READS, ids=[shape for shape, _ in READS])
def test_a_declared_stream_is_held_to_its_declaration_on_the_judge_s_events(
    what: str, declaration: dict[str, Any], said: list[str], shape: str, cut: Callable[..., Any]
) -> None:
    """Reconcile runs on what the judge passes, in the route before metadata: the judge
    delivers to the end, and reconcile's findings are the reference's, word for word."""
    reads = cut(_sse(CALLING))

    def make() -> Pipeline:
        return Pipeline(capabilities=copy.deepcopy(declaration))

    judged, _ = _paths(make, reads)
    assert judged and all(judged), f"{what}: a batch came from the reference"
    outcome = assert_same(make, reads, what=f"the workload declared {what}, {shape}")
    said_here = "\n".join(outcome["diagnostics"])
    for prefix in said:
        assert prefix in said_here, f"{what}: reconcile did not say {prefix}"


@pytest.mark.parametrize("at", [1, 100, 190])
def test_a_declared_stream_handed_over_is_reconciled_once(at: int) -> None:
    """Reconcile saw the judge's events in the route; after the handover it reads on from
    there, and the replay does not show it the same events again."""
    reads = random_reads(_sse(_with_unsure_at(at)), 5)

    def make() -> Pipeline:
        return Pipeline(capabilities=_declared(state={"snapshots": False, "deltas": False}))

    judged, session = _paths(make, reads)
    assert judged[0] and not session.judging
    outcome = assert_same(make, reads, what=f"a declared stream, a chunk at {at}")
    summaries = [d for d in outcome["diagnostics"] if "reconcile.run-summary" in d]
    runs = sum(1 for event in CLEAN if event["type"] == "RUN_STARTED")
    assert len(summaries) == runs


def test_a_declared_stream_answering_a_run_input_is_judged_against_both() -> None:
    """The run input checked against the declaration before the first read, and the stream
    against both."""
    declaration = _declared(tools={"supported": True, "clientProvided": False, "items": []})
    for what, stream, run_input, to_the_end in ANSWERS[:2]:
        reads = random_reads(_sse(stream), 2)

        def make() -> Pipeline:
            return Pipeline(capabilities=copy.deepcopy(declaration))

        _, session = _paths(make, reads, run_input)
        assert session.judging is to_the_end, what
        outcome = assert_same(make, reads, run_input, what=f"declared, {what}")
        assert any("reconcile." in d for d in outcome["diagnostics"]), what


class _Yours(Stage):
    name = "yours"

    async def process(self, batch: Any) -> Any:
        return batch


class _Watching(Stage):
    """A stage of the user's after lint: it upper-cases each text delta, drops the steps, and
    says at the end how many events it was handed (one handed twice shows there)."""

    name = "watching"

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)
        self.seen = 0

    async def process(self, batch: Batch) -> Batch:
        self.seen += len(batch.events)
        kept: list[Any] = []
        indices: list[int] = []
        for event, index in zip(batch.events, batch.indices, strict=True):
            if event["type"] in ("STEP_STARTED", "STEP_FINISHED"):
                continue
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                event["delta"] = event["delta"].upper()
            kept.append(event)
            indices.append(index)
        return Batch(kept, indices)

    async def finish(self) -> Batch:
        self.ctx.report(PARSE_INCOMPLETE_FRAME, f"the watching stage was handed {self.seen}")
        return empty_batch()


PLACED: list[tuple[str, Callable[[], Pipeline]]] = [
    ("after lint", lambda: Pipeline().insert_after("lint", _Watching)),
    (
        "before dispatch, declared",
        lambda: Pipeline(capabilities=DECLARATION).insert_before("dispatch", _Watching),
    ),
]


@pytest.mark.parametrize(("where", "make"), PLACED, ids=[where for where, _ in PLACED])
@pytest.mark.parametrize(("shape", "cut"), READS, ids=[shape for shape, _ in READS])
def test_a_stage_of_yours_after_lint_is_handed_the_judge_s_events(
    where: str, make: Callable[[], Pipeline], shape: str, cut: Callable[[bytes], list[bytes]]
) -> None:
    reads = cut(_sse(CLEAN))
    judged, _ = _paths(make, reads)
    assert judged and all(judged), f"{where}: a batch came from the reference"
    outcome = assert_same(make, reads, what=f"a stage of yours {where}, {shape}")
    assert any(f"handed {len(CLEAN)}" in d for d in outcome["diagnostics"])


class _Labelling(Stage):
    """A stage of the user's after lint that gives each text message's end a ``metadata``
    member in place, and hands on the same batch without saying so (``Batch.changed``)."""

    name = "labelling"

    async def process(self, batch: Batch) -> Batch:
        for event in batch.events:
            if event["type"] == "TEXT_MESSAGE_END":
                event["metadata"] = {"labelled": True}
        return batch


@pytest.mark.parametrize(("shape", "cut"), READS, ids=[shape for shape, _ in READS])
def test_metadata_reads_what_a_stage_of_yours_changed_in_place(
    shape: str, cut: Callable[[bytes], list[bytes]]
) -> None:
    """What the judge marked for metadata is forgotten after a stage of the user's (the engine
    calls ``Batch.changed``), so an event it gave metadata is merged as on the pure core."""
    reads = cut(_sse(CLEAN))

    def make() -> Pipeline:
        return Pipeline().insert_after("lint", _Labelling)

    judged, _ = _paths(make, reads)
    assert judged and all(judged), "a batch came from the reference"
    outcome = assert_same(make, reads, what=f"metadata given in place, {shape}")
    assert "'labelled': True" in outcome["conversation"]


@pytest.mark.parametrize("at", [1, 100, 190])
def test_a_stage_of_yours_after_lint_is_not_handed_an_event_again_at_a_handover(at: int) -> None:
    reads = random_reads(_sse(_with_unsure_at(at)), 5)
    make = PLACED[1][1]
    judged, session = _paths(make, reads)
    assert judged[0] and not session.judging
    assert_same(make, reads, what=f"a stage of yours, a chunk at {at}")


@pytest.mark.parametrize(
    ("what", "make", "run_input"),
    [
        ("a JSON array document", lambda: Pipeline(framing="json"), None),
        ("a stage of yours first", lambda: Pipeline().insert_before("compat", _Yours), None),
        ("a stage of yours for compat", lambda: Pipeline().replace("compat", _Yours), None),
        ("a stage of yours for lint", lambda: Pipeline().replace("lint", _Yours), None),
        (
            "a stage of yours before enforce, for a peer that knows no subagents",
            lambda: Pipeline(middleware=[_Yours], peer_max_protocol_version="0.0.57"),
            None,
        ),
        ("a run input on no thread", Pipeline, {"runId": "r", "messages": []}),
        ("a run input whose state JSON cannot hold", Pipeline, {**INPUT, "state": {1j}}),
    ],
)
def test_what_deliver_mode_leaves_to_the_reference(
    what: str, make: Callable[[], Pipeline], run_input: Any
) -> None:
    pipeline = make()
    with running("native"):
        session = open_session(pipeline, pipeline.context(run_input))
        assert type(session) is Session, what
        for taken in (
            Pipeline(),
            Pipeline(handlers={"*": print}, conversation=False),
            Pipeline(capabilities=DECLARATION),
            Pipeline(peer_max_protocol_version="0.0.57"),
            Pipeline().insert_after("lint", _Yours),
            Pipeline().insert_before("dispatch", _Yours),
            Pipeline(middleware=[_Yours]),
            Pipeline(middleware=[_Yours], peer_max_protocol_version="0.0.58"),
            Pipeline().insert_before("lint", _Yours),
        ):
            assert isinstance(open_session(taken, taken.context()), JudgedSession)
            assert isinstance(open_session(taken, taken.context(INPUT)), JudgedSession)


@pytest.mark.parametrize(
    ("make", "upto"),
    [
        (Pipeline, "lint"),
        (lambda: Pipeline().insert_after("lint", _Yours), "lint"),
        (lambda: Pipeline(middleware=[_Yours]), "compat"),
        (lambda: Pipeline(capabilities=DECLARATION).insert_before("lint", _Yours), "compat"),
        (lambda: Pipeline().insert_after("enforce", _Yours), "compat"),
    ],
)
def test_the_judge_stands_in_up_to_the_first_stage_of_yours(
    make: Callable[[], Pipeline], upto: str
) -> None:
    """Up to lint where every stage of the user's comes after it; else for compat alone, and
    the stages after it run in Python (with a run input too: only lint's rules read it)."""
    pipeline = make()
    with running("native"):
        for run_input in (None, INPUT):
            session = open_session(pipeline, pipeline.context(run_input))
            assert isinstance(session, JudgedSession)
            assert session.front._upto.name == upto
            assert [stage.name for stage in session.front._front][-1] == upto


class _Translating(Stage):
    """Middleware that turns the producer's own ``ACME_PROGRESS`` events, which the protocol
    does not describe, into ``CUSTOM`` ones, and upper-cases each text delta in place."""

    name = "translating"

    async def process(self, batch: Batch) -> Batch:
        for event in batch.events:
            if event["type"] == "ACME_PROGRESS":
                event["type"] = "CUSTOM"
                event["name"] = "acme.progress"
            elif event["type"] == "TEXT_MESSAGE_CONTENT":
                event["delta"] = event["delta"].upper()
        return Batch(batch.events, batch.indices)


def _with_progress(stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``stream`` with an ``ACME_PROGRESS`` event of the producer's own after each step, and
    with documents compat reads but leaves as they are: the first run echoes its input, a
    snapshot of messages follows it, and the first tool result has content parts."""
    parts = [{"type": "text", "text": "see"}, {"type": "image", "source": _IMAGE}]
    messages = [{"id": "history-1", "role": "user", "content": parts}]
    made: list[dict[str, Any]] = []
    for event in stream:
        made.append(dict(event))
        if event["type"] == "STEP_STARTED":
            made.append({"type": "ACME_PROGRESS", "value": {"percent": len(made)}})
    started = next(at for at, event in enumerate(made) if event["type"] == "RUN_STARTED")
    made[started]["input"] = {**INPUT, "messages": messages, "forwardedProps": {}}
    made.insert(started + 1, {"type": "MESSAGES_SNAPSHOT", "messages": messages})
    result = next(event for event in made if event["type"] == "TOOL_CALL_RESULT")
    result["content"] = parts
    return made


_IMAGE = {"type": "url", "value": "https://example.com/a.png", "mimeType": "image/png"}
_BINARY = {"type": "binary", "mimeType": "image/png"}


MIDDLEWARE: list[tuple[str, Callable[[], Pipeline]]] = [
    ("middleware", lambda: Pipeline(middleware=[_Watching])),
    ("a translating middleware", lambda: Pipeline(middleware=[_Translating, _Watching])),
    (
        "before lint, declared",
        lambda: Pipeline(capabilities=DECLARATION).insert_before("lint", _Watching),
    ),
]


@pytest.mark.parametrize("framing", ["sse", "jsonl, the last line without its newline"])
@pytest.mark.parametrize(("where", "make"), MIDDLEWARE, ids=[where for where, _ in MIDDLEWARE])
@pytest.mark.parametrize(("shape", "cut"), READS, ids=[shape for shape, _ in READS])
def test_a_stage_of_yours_before_lint_is_handed_the_events_the_judge_passed_for_compat(
    framing: str,
    where: str,
    make: Callable[[], Pipeline],
    shape: str,
    cut: Callable[[bytes], list[bytes]],
) -> None:
    """The judge stands in for parse and compat; the stage of the user's, then enforce and
    every stage after it, run in Python on the events it built: a type the protocol does not
    describe among them, for the stage to translate."""
    stream = _with_progress(events(600, seed=3))  # the workload's first tool result at 354
    encode = _sse if framing == "sse" else lambda events: _jsonl(events)[:-1]
    reads = cut(encode(stream))
    judged, session = _paths(make, reads)
    assert judged and all(judged), f"{where}: a batch came from the reference"
    assert session.front._upto.name == "compat"
    outcome = assert_same(make, reads, what=f"a stage of yours {where}, {framing}, {shape}")
    # Before lint, after enforce: the producer's own type is dropped, with a warning, first.
    kept = [event for event in stream if event["type"] != "ACME_PROGRESS"]
    handed = len(kept) if where.startswith("before lint") else len(stream)
    assert any(f"handed {handed}" in d for d in outcome["diagnostics"])


def _with_compat_at(at: int, change: str) -> list[dict[str, Any]]:
    """The clean runs with something compat changes, and warns of, at event ``at``."""
    stream = [dict(event) for event in CLEAN]
    binary = {**_BINARY, "data": "AA=="}
    if change == "rawEvent":
        stream[at]["rawEvent"] = None
    elif change == "THINKING_*":
        stream.insert(at, {"type": "THINKING_START", "title": "pondering"})
        stream.insert(at + 1, {"type": "THINKING_END"})
    else:  # a legacy part, or a part's metadata sent as null, in a snapshot's message
        part: dict[str, Any] = {"type": "image", "source": _IMAGE, "metadata": None}
        if change == "a binary part":
            part = binary
        messages = [{"id": f"snapshot-{at}", "role": "user", "content": [part]}]
        stream.insert(at, {"type": "MESSAGES_SNAPSHOT", "messages": messages})
    return stream


@pytest.mark.parametrize("change", ["rawEvent", "THINKING_*", "a binary part", "a null metadata"])
@pytest.mark.parametrize("at", [10, 100, 190])
def test_a_stage_of_yours_before_lint_is_not_handed_an_event_again_at_a_handover(
    at: int, change: str
) -> None:
    """Where compat would change an event, the reference takes over: the reads held go
    through parse and compat again, and the stage is handed each event once."""
    stream = _with_compat_at(at, change)
    reads = random_reads(_sse(stream), 5)
    make = MIDDLEWARE[0][1]
    judged, session = _paths(make, reads)
    assert judged[0] and not session.judging
    outcome = assert_same(make, reads, what=f"middleware, {change} at {at}")
    assert any(f"handed {len(stream)}" in d for d in outcome["diagnostics"])
    assert any("compat." in d for d in outcome["diagnostics"])


@st.composite
def answered_input(draw: st.DrawFn, stream: list[dict[str, Any]]) -> dict[str, Any]:
    """A run input for ``stream``: its first run's thread and run (now and then another),
    a history whose ids are fresh or the stream's own, the application's tools (none, the
    stream's own names or others), and a state of any shape, or none."""
    started = next((e for e in stream if e.get("type") == "RUN_STARTED"), {})
    ids = sorted(
        {e[k] for e in stream for k in ("messageId", "toolCallId") if isinstance(e.get(k), str)}
    )
    names = sorted({e["toolCallName"] for e in stream if isinstance(e.get("toolCallName"), str)})
    history_ids = draw(st.lists(st.sampled_from([*ids, "fresh-1", "fresh-2"]), max_size=3))
    run_input: dict[str, Any] = {
        "threadId": draw(st.sampled_from([started.get("threadId", "t"), "another thread"])),
        "runId": draw(st.sampled_from([started.get("runId", "r"), "another run"])),
        "messages": [
            draw(
                st.sampled_from(
                    [
                        {"id": id_, "role": "user", "content": "hi"},
                        {"id": id_, "role": "tool", "toolCallId": id_, "content": "42"},
                        {
                            "id": f"a-{id_}",
                            "role": "assistant",
                            "toolCalls": [
                                {
                                    "id": id_,
                                    "type": "function",
                                    "function": {"name": "f", "arguments": "{}"},
                                }
                            ],
                        },
                    ]
                )
            )
            for id_ in history_ids
        ],
        "context": [],
        "forwardedProps": {},
    }
    tools = draw(st.sampled_from([None, [], names[:1], ["other"], names]))
    if tools is not None:
        run_input["tools"] = [{"name": n, "description": "", "parameters": {}} for n in tools]
    state: Any = draw(st.sampled_from([None, {}, {"a": 1}, [], "text"]))
    if state is not None:
        run_input["state"] = state
    return run_input


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_random_streams_answering_random_inputs_give_the_same_on_both_cores(
    data: st.DataObject,
) -> None:
    stream = data.draw(streams.valid_stream(max_runs=2, max_items=4))
    run_input = data.draw(answered_input(stream))
    body = _sse(stream)
    reads = data.draw(st.sampled_from([[body], random_reads(body, 4), bytewise(body)]))
    assert_same(Pipeline, reads, run_input, what=f"a stream answering {run_input}")


@st.composite
def declaration(draw: st.DrawFn, stream: list[dict[str, Any]]) -> dict[str, Any]:
    """A declaration for ``stream``: each observable group absent, or drawn field by field
    (true, false or absent), the tool and subagent lists from the stream's names and others."""
    names = sorted({e["toolCallName"] for e in stream if isinstance(e.get("toolCallName"), str)})
    flag = st.sampled_from([None, True, False])

    def group(*fields: str) -> dict[str, Any] | None:
        if draw(st.booleans()):
            return None
        drawn = {field: draw(flag) for field in fields}
        return {field: value for field, value in drawn.items() if value is not None}

    declared: dict[str, Any] = {
        "transport": group("streaming", "websocket"),
        "tools": group("supported", "parallelCalls", "clientProvided"),
        "state": group("snapshots", "deltas"),
        "reasoning": group("supported", "streaming", "encrypted"),
        "multiAgent": group("supported", "delegation"),
        "humanInTheLoop": group("supported", "interrupts", "approvals"),
    }
    if declared["tools"] is not None and draw(st.booleans()):
        listed = draw(st.sampled_from([[], names[:1], names, ["other"]]))
        declared["tools"]["items"] = [
            {"name": n, "description": "", "parameters": {}} for n in listed
        ]
    return {key: value for key, value in declared.items() if value is not None}


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_random_declared_streams_give_the_same_on_both_cores(data: st.DataObject) -> None:
    stream = data.draw(streams.valid_stream(max_runs=2, max_items=4))
    declared = data.draw(declaration(stream))
    run_input = data.draw(st.none() | answered_input(stream))
    body = _sse(stream)
    reads = data.draw(st.sampled_from([[body], random_reads(body, 4), bytewise(body)]))

    def make() -> Pipeline:
        return Pipeline(capabilities=copy.deepcopy(declared))

    assert_same(make, reads, run_input, what=f"a stream declared {declared}")


def test_for_a_peer_that_knows_no_subagents_compat_stays_in_python() -> None:
    """The 0.0.57 shim drops subagent events and strips their attribution: a stage of the
    user's before lint is then handed what the reference's compat passes, so the judge stands
    in for none of it."""
    delegated = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s", "name": "helper"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant", "subagentRunId": "s"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]

    def make() -> Pipeline:
        return Pipeline(middleware=[_Watching], peer_max_protocol_version="0.0.57")

    outcome = assert_same(make, [_sse(delegated)], what="an old peer's subagents")
    assert any("compat.peer-downgrade-dropped" in d for d in outcome["diagnostics"]), outcome


@pytest.mark.parametrize(
    "retired",
    [
        {"forwardedProps": None},
        {"tools": [{"name": "lookup", "description": "", "parameters": None}]},
        {"resume": [{"interruptId": "i-1", "status": "resolved", "payload": None}]},
        {"messages": [{"id": "u", "role": "user", "content": [{**_BINARY, "url": "https://a"}]}]},
    ],
    ids=["forwardedProps", "a tool's parameters", "a resume payload", "a binary part"],
)
def test_an_echoed_input_with_a_retired_shape_is_left_to_compat(retired: dict[str, Any]) -> None:
    """A run that echoes an input holding a retired shape: compat translates it, so a stage of
    the user's before lint is handed it from the reference."""
    stream = [dict(event) for event in CLEAN]
    stream[0]["input"] = {**INPUT, **retired}
    reads = random_reads(_sse(stream), 5)
    make = MIDDLEWARE[0][1]
    _, session = _paths(make, reads)
    assert isinstance(session, JudgedSession) and not session.judging
    outcome = assert_same(make, reads, what=f"an echoed input with {retired}")
    assert any("compat." in d for d in outcome["diagnostics"]), outcome["diagnostics"]


# -- a stream drained for its verdict alone ---------------------------------------------------


def _drained(make: Callable[[], Pipeline], reads: list[bytes], run_input: Any = None) -> Any:
    """The session of the stream drained for its verdict alone
    (``drain(conversation=False)``) on the native core, with the count of events read after
    each read it was fed."""
    counted: list[int] = []

    async def read() -> Any:
        stream = make().open(list(reads), run_input=copy.deepcopy(run_input))
        await stream.drain(conversation=False)
        return stream._session

    watched = _watching(lambda session: counted.append(session.context.counters.read))
    with watched, running("native"):
        return anyio.run(read), counted


def _builds_nothing(session: Any) -> bool:
    """Whether the session's judge builds no event but those a declaration's reconcile
    reads, and hands them to reconcile alone."""
    front = session.front if isinstance(session, JudgedSession) else None
    return (
        front is not None
        and not front._builds
        and all(type(stage) is Reconcile for stage in front.tail.stages)
    )


@pytest.mark.parametrize("framing", list(ENCODINGS))
@pytest.mark.parametrize(("shape", "cut"), READS, ids=[shape for shape, _ in READS])
def test_a_stream_drained_for_its_verdict_is_judged_without_building_an_event(
    framing: str, shape: str, cut: Callable[[bytes], list[bytes]]
) -> None:
    reads = cut(ENCODINGS[framing])
    session, counted = _drained(Pipeline, reads)
    assert _builds_nothing(session) and session.judging, "the judge did not judge to the end"
    assert session.front.judge.read == len(CLEAN)
    # The events are counted as they are read, as the idle window asks.
    assert counted == sorted(counted) and counted[-1] == len(CLEAN)
    if shape == "one event a read" and framing == "sse":
        assert counted[: len(CLEAN)] == list(range(1, len(CLEAN) + 1))
    outcome = assert_same(Pipeline, reads, drained=True, what=f"{framing}, {shape}, drained")
    assert outcome["counters"]["delivered"] == len(CLEAN) and outcome["conversation"] is None


@pytest.mark.parametrize("at", [0, 1, 100, 190])
@pytest.mark.parametrize(("shape", "cut"), READS, ids=[shape for shape, _ in READS])
def test_a_drained_stream_the_judge_is_unsure_of_is_read_by_the_reference_from_its_start(
    at: int, shape: str, cut: Callable[[bytes], list[bytes]]
) -> None:
    reads = cut(_sse(_with_unsure_at(at)))
    session, _ = _drained(Pipeline, reads)
    assert _builds_nothing(session) and not session.judging, "the reference never took over"
    outcome = assert_same(Pipeline, reads, drained=True, what=f"a chunk at {at}, {shape}")
    assert outcome["verdict"]["outcome"] == "completed"
    assert outcome["counters"]["read"] == len(CLEAN) + 1


def test_a_drained_stream_rejected_after_the_handover_is_judged_as_the_reference_judges_it() -> (
    None
):
    stream = [dict(event) for event in CLEAN]
    ended = next(i for i, e in enumerate(stream) if i > 200 and e["type"] == "TEXT_MESSAGE_END")
    stream.insert(ended + 1, dict(stream[ended]))  # the same message ended twice
    for reads in ([_sse(stream)], random_reads(_sse(stream), 3)):
        session, _ = _drained(Pipeline, reads)
        assert _builds_nothing(session) and not session.judging
        outcome = assert_same(Pipeline, reads, drained=True, what="a message ended twice")
        assert outcome["verdict"]["outcome"] == "rejected"
        assert outcome["verdict"]["event index"] == ended + 1


@pytest.mark.parametrize("limit", [1, 4_096, 20_000])
def test_a_drained_stream_past_max_held_bytes_is_the_reference_s(limit: int) -> None:
    reads = random_reads(_sse(CLEAN), 11)

    def make() -> Pipeline:
        return Pipeline(limits=Limits(max_held_bytes=limit))

    session, _ = _drained(make, reads)
    assert _builds_nothing(session) and not session.judging
    assert session.front.held_bytes == 0 and not session.front.held
    assert_same(make, reads, drained=True, what=f"drained under max_held_bytes={limit}")


def _ignored(line: bytes) -> None:
    """A sink's writer that keeps nothing."""


_DRAINS: list[tuple[str, Callable[[], Pipeline], bool, bool]] = [
    ("the default pipeline", Pipeline, False, False),
    ("the default pipeline, the Conversation kept", Pipeline, True, True),
    ("no Conversation built", lambda: Pipeline(conversation=False), True, False),
    ("a declaration", lambda: Pipeline(capabilities=DECLARATION), False, False),
    (
        "a declaration, the Conversation kept",
        lambda: Pipeline(capabilities=DECLARATION),
        True,
        True,
    ),
    ("a handler", lambda: Pipeline(handlers={"*": lambda event: None}), False, True),
    ("a sink", lambda: Pipeline(sinks=[JsonLinesSink(_ignored)]), False, True),
    ("a stage of yours after lint", lambda: Pipeline().insert_after("lint", _Yours), False, True),
    ("middleware", lambda: Pipeline(middleware=[_Yours]), False, True),
]


@pytest.mark.parametrize(
    ("what", "make", "kept", "builds"), _DRAINS, ids=[drain[0] for drain in _DRAINS]
)
def test_what_a_drain_for_the_verdict_leaves_to_deliver_mode(
    what: str, make: Callable[[], Pipeline], kept: bool, builds: bool
) -> None:
    """Where anything reads the events (or the caller keeps the Conversation), the judge
    builds them as deliver mode does; else it builds none."""
    reads = random_reads(_sse(CLEAN), 2)

    async def read() -> Any:
        stream = make().open(list(reads))
        await stream.drain(conversation=kept)
        return stream._session

    with running("native"):
        session = anyio.run(read)
    assert isinstance(session, JudgedSession) and session.judging, what
    assert _builds_nothing(session) is not builds, what
    assert_same(make, reads, drained=not kept, what=what)


@pytest.mark.parametrize(("what", "declaration", "said"), DECLARED, ids=[d[0] for d in DECLARED])
@pytest.mark.parametrize(("shape", "cut"), READS, ids=[shape for shape, _ in READS])
def test_a_declared_stream_drained_for_its_verdict_is_held_to_its_declaration(
    what: str, declaration: dict[str, Any], said: list[str], shape: str, cut: Callable[..., Any]
) -> None:
    """The judge builds only the events reconcile reads, where they stood, and reconcile's
    findings are the reference's, word for word: in SSE, and in JSON lines whose last line,
    a run's end reconcile reads, comes only with the stream's end."""
    for framing, encoded in (("sse", _sse(CALLING)), ("jsonl", _jsonl(CALLING)[:-1])):
        reads = cut(encoded)

        def make() -> Pipeline:
            return Pipeline(capabilities=copy.deepcopy(declaration))

        session, _ = _drained(make, reads)
        assert _builds_nothing(session) and session.judging, what
        assert [type(stage) for stage in session.front.tail.stages] == [Reconcile]
        outcome = assert_same(make, reads, drained=True, what=f"declared {what}, {shape}")
        said_here = "\n".join(outcome["diagnostics"])
        for prefix in said if framing == "sse" else []:  # JSON lines: no SSE to contradict
            assert prefix in said_here, f"{what}: reconcile did not say {prefix}"


@pytest.mark.parametrize("at", [0, 1, 100, 190])
@pytest.mark.parametrize("limit", [None, 8_192])
def test_a_declared_stream_drained_and_handed_over_is_reconciled_once(
    at: int, limit: int | None
) -> None:
    """At a handover (the judge unsure, or the reads held at the bound), reconcile has seen
    the events the judge built and reads on from there; the stages that saw none are fed
    the reads the judge passed."""
    reads = random_reads(_sse(_with_unsure_at(at)), 5)
    said: list[Any] = []

    def make() -> Pipeline:
        limits = Limits() if limit is None else Limits(max_held_bytes=limit)
        declaration = _declared(state={"snapshots": False, "deltas": False})
        return Pipeline(capabilities=declaration, limits=limits, on_diagnostic=said.append)

    session, _ = _drained(make, reads)
    assert _builds_nothing(session) and not session.judging
    heard, said[:] = list(said), []
    outcome = assert_same(make, reads, drained=True, what=f"declared, a chunk at {at}, drained")
    summaries = [d for d in outcome["diagnostics"] if "reconcile.run-summary" in d]
    assert len(summaries) == sum(1 for event in CLEAN if event["type"] == "RUN_STARTED")
    assert len(heard) == len(outcome["diagnostics"]), "on_diagnostic heard a finding twice"


async def _arriving(reads: list[bytes]) -> Any:
    """The reads as a live source delivers them (one that may stall, as stdin may)."""
    for read in reads:
        yield read


@pytest.mark.parametrize("conversation", [False, True], ids=["the verdict", "--conversation"])
def test_check_drains_a_live_stream_for_its_verdict_unless_it_shows_the_conversation(
    conversation: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check -`` (and an agent's URL, and the proxy's tap) drains the stream keeping the
    Conversation only for a report that shows it: otherwise the judge builds no event."""
    from agui_pipeline._checking.source import _drain
    from agui_pipeline._engine import stream as stream_module

    sessions: list[Session] = []

    def spied(*args: Any, **kwargs: Any) -> Session:
        sessions.append(session := open_session(*args, **kwargs))
        return session

    monkeypatch.setattr(stream_module, "open_session", spied)
    reads = random_reads(_sse(CLEAN), 4)
    results = {}
    for core in ("native", "pure"):
        with running(core):
            drained = _drain(Pipeline(), _arriving(reads), None, [], conversation=conversation)
        kept = drained.materialised
        results[core] = {**seen(drained), "conversation": kept and kept.to_dict()}
    assert isinstance(sessions[0], JudgedSession) and sessions[0].judging
    assert _builds_nothing(sessions[0]) is not conversation
    assert (results["pure"]["conversation"] is None) is not conversation
    assert results["native"] == results["pure"]


@pytest.mark.parametrize("declared", [False, True], ids=["undeclared", "declared"])
def test_a_drained_stream_that_stalls_is_ended_by_the_idle_window_as_on_the_reference(
    declared: bool,
) -> None:
    """The judge counts the events as it reads them, so the idle window restarts on each; a
    producer that goes quiet mid-run is ended by it, and the run left open makes the
    reference take over: the truncation, its place and the runs are the pure core's."""
    stream = list(CALLING[:150])  # a run still open at its last event
    reads = [frame + b"\n\n" for frame in _sse(stream).split(b"\n\n") if frame]

    async def stalled() -> Any:
        for read in reads:
            yield read
        await anyio.sleep_forever()

    def make() -> Pipeline:
        declaration = DECLARATION if declared else None
        return Pipeline(capabilities=declaration, idle_timeout=0.2)

    results = {}
    for core in ("native", "pure"):

        async def read() -> Any:
            stream = make().open(stalled())
            with anyio.fail_after(10):
                result = await stream.drain(conversation=False)
            return stream._session, result

        with running(core):
            session, results[core] = anyio.run(read)
        if core == "native":
            assert _builds_nothing(session) and not session.judging
    assert seen(results["native"]) == seen(results["pure"])
    pure = results["pure"]
    assert str(pure.verdict.outcome) == "truncated" and pure.counters.read == len(stream)
    assert "source.idle-timeout" in [d.code for d in pure.diagnostics]
