"""The whole pipeline on the native core against the pure Python reference: the same reads,
the same result.

``tests/test_parse_differential.py`` holds parse's two cores equal; this tier holds the whole
default pipeline equal, so that whatever a native stage does differently shows where the
application sees it, whichever stage it surfaces in. Each input runs once per core
(``tests/cores.py``), split into the same reads, and everything a consumer can observe is
compared: the delivered events (as ``repr`` writes them, so ``0``, ``-0.0`` and ``False``
differ) with their frame indices, the verdict, every diagnostic, the counters, the runs and
the Conversation. A disagreement fails with a diff of the parts that differ, and is a bug in
one core.

The inputs: the conformance corpus (``AGUI_SPEC_DIR``), the streams in ``examples/`` and
``tests/walkthrough/`` (with the capabilities declaration or run input beside them), and
random streams, valid and broken, as SSE, JSON lines and a JSON array, in random reads (one
byte a read, empty reads among them), some under small limits. The corpus and the random
streams also go through a pipeline with a middleware stage, around which the native run is
split. Every input runs on both implementations of a run of built-in stages
(``built_in_run``). Where deliver mode applies (``pipeline/_engine/deliver.py``), the native
run is deliver mode's — the judge's events until it is unsure, the reference's after — and
``tests/test_deliver.py`` checks that both paths are taken.
"""

from __future__ import annotations

import copy
import difflib
import pprint
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import anyio
import orjson
import pytest
from agui_pipeline import Batch, Pipeline, Stage, _cores
from agui_pipeline.errors import InputRejected
from agui_pipeline.options import Limits
from agui_pipeline.testing.conformance import load_fixture
from agui_pipeline.testing.workload import DECLARATION
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import streams
from tests.conftest import ROOT, corpus_paths
from tests.cores import native_module, running, shown
from tests.test_parse_differential import broken_stream

pytestmark = pytest.mark.usefixtures("built_in_run")  # batch and fused (conftest)

PipelineFactory = Callable[[], Pipeline]


class Unchanged(Stage):
    """A user's middleware that hands each batch on as it came: the native run is split
    around it (the judge stands in for parse and compat alone, ``judging.stands_in``)."""

    name = "unchanged"

    async def process(self, batch: Batch) -> Batch:
        return batch


# -- one run, everything it shows --------------------------------------------------------------


class _Watched:
    """The native module, noting each name a stage takes from it: a native run that never
    touched the native core would compare the reference with itself."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module
        self.taken: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        self.taken.add(name)
        return getattr(self._module, name)


@contextmanager
def _on(core: str) -> Iterator[set[str]]:
    """Stages created inside run on ``core``; yields the names taken from the native module."""
    with running(core):
        if core == "pure":
            yield set()
            return
        watched = _Watched(native_module())
        _cores.native = cast(ModuleType, watched)  # running() restores it
        yield watched.taken


def outcome(
    core: str,
    make: PipelineFactory,
    reads: list[bytes],
    run_input: Any = None,
    *,
    drained: bool = False,
) -> tuple[dict[str, Any], set[str]]:
    """Everything one stream shows on ``core``, by part; and the native names it took.

    ``drained``: read by ``drain(conversation=False)``, for the verdict alone, which the
    native core may judge without building an event: the result is all there is to see."""

    async def read() -> dict[str, Any]:
        pipeline = make()
        delivered: list[Any] = []
        indices: list[int] = []
        stream = pipeline.open(list(reads), run_input=copy.deepcopy(run_input))
        if drained:
            result = await stream.drain(conversation=False)
        else:
            async with stream:
                async for batch in stream.batches():
                    delivered += batch.events
                    indices += batch.indices
            result = stream.result(delivered)
        verdict = result.verdict
        conversation = result.materialised
        merged = None if drained else stream.context.item_metadata  # the Conversation's
        return {
            "events": [
                f"{index}: {shown(event)}" for index, event in zip(indices, delivered, strict=True)
            ],
            "verdict": {
                "type": type(verdict.error).__name__,
                "outcome": str(verdict.outcome),
                "code": verdict.code,
                "message": verdict.message,
                "pointer": verdict.pointer,
                "event index": verdict.event_index,
            },
            "diagnostics": [shown(d.to_dict()) for d in result.diagnostics],
            "suppressed": result.suppressed,
            "counters": asdict(result.counters),
            "transport": result.transport,
            "runs": [shown(run.to_dict()) for run in result.runs],
            "run counts": result.run_counts,
            "conversation": None if conversation is None else shown(conversation.to_dict()),
            "item metadata": None
            if merged is None
            else shown({"messages": merged.messages, "tool calls": merged.tool_calls}),
        }

    with _on(core) as taken:
        try:
            return anyio.run(read), taken
        except Exception as bug:  # a stage's bug, or the native core's InternalError
            return {"raised": f"{type(bug).__name__}: {bug} {getattr(bug, '__notes__', [])}"}, taken


def _described(reads: list[bytes]) -> str:
    sizes = [len(read) for read in reads]
    shown = sizes if len(sizes) <= 40 else [*sizes[:20], "...", *sizes[-20:]]
    return f"{len(reads)} reads of {sum(sizes)} bytes, sized {shown}"


def disagreement(native: dict[str, Any], pure: dict[str, Any]) -> str:
    """Each part the cores disagree on, as a diff from the pure core's to the native core's."""
    lines = []
    for part in sorted(native.keys() | pure.keys()):
        theirs, ours = native.get(part, "(absent)"), pure.get(part, "(absent)")
        if theirs == ours:
            continue
        diff = difflib.unified_diff(
            pprint.pformat(ours, width=100).splitlines(),
            pprint.pformat(theirs, width=100).splitlines(),
            "pure",
            "native",
            lineterm="",
            n=2,
        )
        lines += [f"--- {part}:", *list(diff)[2:]]
    return "\n".join(lines)


def assert_same(
    make: PipelineFactory,
    reads: list[bytes],
    run_input: Any = None,
    *,
    framed_natively: bool = False,
    drained: bool = False,
    what: str = "",
) -> dict[str, Any]:
    """The stream gives the same on both cores; the pure core's outcome.

    ``framed_natively``: the input is SSE or JSON lines whose first frame parse reads, so the
    native run must have taken the native core up. ``drained``: read for its verdict alone
    (:func:`outcome`)."""
    native, taken = outcome("native", make, reads, run_input, drained=drained)
    pure, _ = outcome("pure", make, reads, run_input, drained=drained)
    if native != pure:
        pytest.fail(
            f"the cores disagree on {what or 'a stream'} ({_described(reads)}):\n"
            f"{disagreement(native, pure)}",
            pytrace=False,
        )
    if framed_natively:
        assert taken, f"the native run of {what} never took the native core up"
    return pure


# -- reads -------------------------------------------------------------------------------------


def sse_over_lines(events: list[Any]) -> bytes:
    """SSE with each event's JSON spread over several ``data`` lines (the lines join with a
    newline): where a lost or doubled line end splits or merges an event."""
    blocks = []
    for event in events:
        lines = orjson.dumps(event, option=orjson.OPT_INDENT_2).splitlines()
        blocks.append(b"".join(b"data: " + line + b"\n" for line in lines) + b"\n")
    return b"".join(blocks)


def random_reads(data: bytes, seed: int) -> list[bytes]:
    """``data`` in reads of 0 to 300 bytes, as a socket may hand them over (an empty read
    now and then)."""
    draw = random.Random(seed)
    reads, start = [], 0
    while start < len(data):
        size = draw.choice([0, 1, 2, draw.randint(1, 300)])
        reads.append(data[start : start + size])
        start += size
    return reads


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def bytewise_with_empty_reads(data: bytes) -> list[bytes]:
    """One byte a read with an empty read after each: a CR ending one read must still pair
    with the LF of the next non-empty one."""
    return [piece for byte in bytewise(data) for piece in (byte, b"")]


def read_shapes(data: bytes) -> list[tuple[str, list[bytes]]]:
    """The reads each file input is tried in."""
    return [
        ("whole", [data]),
        ("one byte a read", bytewise(data)),
        ("one byte and one empty read", bytewise_with_empty_reads(data)),
        *[(f"random reads {seed}", random_reads(data, seed)) for seed in range(3)],
    ]


# -- the conformance corpus ----------------------------------------------------------------------


@pytest.mark.parametrize("path", corpus_paths())
def test_the_corpus_gives_the_same_on_both_cores(path: Path) -> None:
    """Each fixture as the conformance runner replays it (its run input through the outgoing
    boundary, its peer's version), as SSE and as JSON lines, in each shape of reads."""
    from agui_pipeline.model.run_input import prepare_input

    fixture = load_fixture(path)
    version = fixture.peer_max_protocol_version
    try:
        run_input: Any = prepare_input(fixture.raw_input(), peer_max_protocol_version=version).body
    except InputRejected:
        run_input = None
    frames = [orjson.dumps(event) for event in fixture.stream]
    encodings = [
        ("sse", streams.join_frames(frames, "sse")),
        ("sse over data lines, CRLF", sse_over_lines(fixture.stream).replace(b"\n", b"\r\n")),
        ("jsonl", streams.join_frames(frames, "jsonl")),
        ("jsonl, CR", streams.join_frames(frames, "jsonl").replace(b"\n", b"\r")),
    ]
    for framing, data in encodings:
        for shape, reads in read_shapes(data):
            assert_same(
                lambda: Pipeline(peer_max_protocol_version=version),
                reads,
                run_input,
                framed_natively=bool(frames),
                what=f"{path.stem} as {framing}, {shape}",
            )
        # Read for the verdict alone: the judge builds no event.
        assert_same(
            lambda: Pipeline(peer_max_protocol_version=version),
            random_reads(data, 5),
            run_input,
            framed_natively=bool(frames),
            drained=True,
            what=f"{path.stem} as {framing}, drained for its verdict, random reads",
        )
        # A middleware stage: the judge stands in for parse and compat alone.
        assert_same(
            lambda: Pipeline(peer_max_protocol_version=version, middleware=[Unchanged]),
            random_reads(data, 11),
            run_input,
            framed_natively=bool(frames),
            what=f"{path.stem} as {framing} through a middleware stage, random reads",
        )


# -- the streams shipped with the project --------------------------------------------------------

SHIPPED = sorted(
    [
        *(ROOT / "examples").rglob("*.sse"),
        *(ROOT / "examples").rglob("*.bin"),
        *(ROOT / "tests" / "walkthrough").glob("*.sse"),
        *(ROOT / "tests" / "walkthrough").glob("*.jsonl"),
    ]
)
"""Every stream in ``examples/`` and ``tests/walkthrough/`` (no recorded capture is kept as
a file elsewhere under ``tests/``: the tests that record one write it to a temporary folder)."""

WALKTHROUGH_DECLARATION = ROOT / "tests" / "walkthrough" / "hitl.capabilities.json"


def _beside(path: Path, suffix: str) -> Path | None:
    found = path.with_name(path.name.split(".")[0] + suffix)
    return found if found.is_file() else None


def _pipelines_for(path: Path) -> list[tuple[str, PipelineFactory]]:
    """The default pipeline; with the declaration beside the stream (or the walkthrough's);
    and without a Conversation."""
    declaration = _beside(path, ".capabilities.json")
    if declaration is None and path.parent.name == "walkthrough":
        declaration = WALKTHROUGH_DECLARATION
    made: list[tuple[str, PipelineFactory]] = [
        ("default", Pipeline),
        ("no conversation", lambda: Pipeline(conversation=False)),
    ]
    if declaration is not None:
        made.append((declaration.name, lambda: Pipeline(capabilities=declaration)))
    return made


@pytest.mark.parametrize("path", SHIPPED, ids=[str(p.relative_to(ROOT)) for p in SHIPPED])
def test_the_shipped_streams_give_the_same_on_both_cores(path: Path) -> None:
    data = path.read_bytes()
    named = _beside(path, ".input.json")
    run_input = None if named is None else orjson.loads(named.read_bytes())
    for name, make in _pipelines_for(path):
        for shape, reads in read_shapes(data):
            assert_same(
                make,
                reads,
                run_input,
                framed_natively=path.suffix != ".bin",
                what=f"{path.name} through the {name} pipeline, {shape}",
            )
        assert_same(
            make,
            random_reads(data, 5),
            run_input,
            framed_natively=path.suffix != ".bin",
            drained=True,
            what=f"{path.name} through the {name} pipeline, drained for its verdict",
        )


SMALL_LIMITS = [
    Limits(max_frame_bytes=40),
    Limits(max_frame_bytes=120),
    Limits(max_depth=2),
    Limits(max_depth=3),
    Limits(max_diagnostics=1),
    Limits(max_open_items=1),
    Limits(max_text_chars=8),
    Limits(max_conversation_chars=30),
    Limits(max_items=3),
    Limits(max_state_bytes=16),
]
"""Limits small enough that the shipped streams reach each of them."""


def _changed(limits: Limits) -> str:
    """The limits set away from their defaults, as a test id."""
    return ",".join(
        f"{name}={value}"
        for name, value in asdict(limits).items()
        if value != getattr(Limits(), name)
    )


def _reached(pure: dict[str, Any]) -> bool:
    """A limit's code was reported, as a diagnostic or as the verdict."""
    said = [*pure.get("diagnostics", []), repr(pure.get("verdict", {}).get("code"))]
    return any("'limit." in shown for shown in said)


@pytest.mark.parametrize("limits", SMALL_LIMITS, ids=[_changed(lim) for lim in SMALL_LIMITS])
def test_small_limits_are_hit_alike_on_both_cores(limits: Limits) -> None:
    """Every shipped stream under one small limit: each of these limits is hit by at least
    one of them (else it would compare nothing)."""
    hit = False
    for path in SHIPPED:
        data = path.read_bytes()
        for shape, reads in [("whole", [data]), ("random reads", random_reads(data, 7))]:
            pure = assert_same(
                lambda: Pipeline(limits=limits),
                reads,
                framed_natively=path.suffix != ".bin",
                what=f"{path.name} under {_changed(limits)}, {shape}",
            )
            hit = hit or _reached(pure)
        assert_same(
            lambda: Pipeline(limits=limits),
            random_reads(data, 3),
            framed_natively=path.suffix != ".bin",
            drained=True,
            what=f"{path.name} under {_changed(limits)}, drained for its verdict",
        )
    assert hit, f"no shipped stream reaches {limits}"


WEATHER = ROOT / "examples" / "weather.sse"


@pytest.mark.parametrize("over", [-1, 0, 1], ids=["one byte short", "at the limit", "one past"])
@pytest.mark.parametrize("framing", ["sse", "sse over lines", "jsonl"])
def test_the_frame_limit_gives_one_verdict_however_the_reads_are_cut(
    framing: str, over: int
) -> None:
    """max_frame_bytes set to the largest payload of a stream, one byte either side: the same
    verdict at the same event, the same events delivered and the same findings on both cores,
    whether the stream comes whole, a byte a read or in random reads (the size a rejection
    names may differ: a frame still arriving is refused at the size it had reached)."""
    lines = WEATHER.read_bytes().split(b"\n")
    events = [orjson.loads(line[6:]) for line in lines if line[:6] == b"data: "]
    frames = [orjson.dumps(event) for event in events]
    data = {
        "sse": streams.join_frames(frames, "sse"),
        "sse over lines": sse_over_lines(events),
        "jsonl": streams.join_frames(frames, "jsonl"),
    }[framing]
    largest = max(map(len, frames)) if framing != "sse over lines" else _largest_over_lines(events)
    limits = Limits(max_frame_bytes=largest - over)
    seen = []
    for shape, reads in read_shapes(data):
        pure = assert_same(
            lambda: Pipeline(limits=limits),
            reads,
            framed_natively=True,
            what=f"{framing}, max_frame_bytes={largest - over}, {shape}",
        )
        verdict = {key: value for key, value in pure["verdict"].items() if key != "message"}
        seen.append((shape, verdict, pure["events"], pure["counters"]))
    for shape, *judged in seen[1:]:
        assert tuple(judged) == seen[0][1:], f"{shape} judged otherwise than whole"
    code = seen[0][1]["code"]
    assert (code == "limit.frame-bytes") is (over == 1), seen[0][1]


def _largest_over_lines(events: list[Any]) -> int:
    """The longest payload of ``sse_over_lines(events)``: the indented JSON, lines joined."""
    return max(len(orjson.dumps(event, option=orjson.OPT_INDENT_2)) for event in events)


# -- random streams ------------------------------------------------------------------------------


def _swap(events: list[Any], at: int) -> None:
    if at + 1 < len(events):
        events[at], events[at + 1] = events[at + 1], events[at]


MUTATIONS: dict[str, Callable[[list[Any], int], None]] = {
    "drop": lambda events, at: events.pop(at),
    "duplicate": lambda events, at: events.insert(at, copy.deepcopy(events[at])),
    "swap": _swap,
}


@st.composite
def random_input(draw: st.DrawFn) -> tuple[str, bytes, bool]:
    """A valid stream, or one with an event dropped, duplicated or moved, framed as SSE, JSON
    lines or a JSON array, now and then with a byte corrupted or its end cut off. Its name,
    its bytes, and whether the native core must frame it."""
    events = copy.deepcopy(draw(streams.valid_stream(max_runs=2, max_items=4)))
    name = "valid"
    for kind in draw(st.lists(st.sampled_from(sorted(MUTATIONS)), max_size=2)):
        MUTATIONS[kind](events, draw(st.integers(0, len(events) - 1)))
        name += f", {kind}"
    framing = draw(st.sampled_from(["sse", "sse", "sse over data lines", "jsonl", "jsonl", "json"]))
    data = (
        sse_over_lines(events)
        if framing == "sse over data lines"
        else streams.encode(events, framing)
    )
    name += f", as {framing}"
    if framing.startswith("sse") and draw(st.booleans()):  # what SSE allows around the data
        extra = draw(st.sampled_from([b": keep-alive\n", b"event: agui\n", b"id: 7\n", b"retry\n"]))
        data = data.replace(b"data: ", extra + b"data:", draw(st.integers(1, 3)))
        name += f", with {extra!r}"
    if framing != "json":  # orjson writes no newline inside a frame
        newline = draw(st.sampled_from([b"\n", b"\n", b"\r\n", b"\r"]))
        data = data.replace(b"\n", newline)
        name += f", lines ending {newline!r}"
    framed = framing != "json" and bool(events)
    damage = draw(st.sampled_from(["", "", "corrupt", "truncate"]))
    if damage and data:
        at = draw(st.integers(0, len(data) - 1))
        if damage == "corrupt":
            byte = draw(st.sampled_from([b"\n", b"\r", b"\xff", b"{", b'"', b"x", b"\x00"]))
            data = data[:at] + byte + data[at + 1 :]
        else:
            data = data[:at]
        framed = framed and at > 0  # the framing itself may be what broke
        name += f", {damage} at byte {at}"
    return name, data, framed and damage == ""


@st.composite
def reads_of(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """``data`` cut at random places, one byte a read, or whole; empty reads slipped in."""
    shape = draw(st.sampled_from(["cut", "cut", "bytes", "bytes and empty", "whole"]))
    if shape == "bytes":
        reads = bytewise(data)
    elif shape == "bytes and empty":
        reads = bytewise_with_empty_reads(data)
    elif shape == "whole":
        reads = [data]
    else:
        reads = streams.split(data, draw(st.lists(st.integers(0, len(data)), max_size=12)))
    for at in draw(st.lists(st.integers(0, len(reads)), max_size=3)):
        reads.insert(at, b"")
    return reads


PIPELINES: dict[str, PipelineFactory] = {
    "default": Pipeline,
    "declared": lambda: Pipeline(capabilities=DECLARATION),
    "no conversation": lambda: Pipeline(conversation=False),
    "a handler": lambda: Pipeline(handlers={"*": lambda event: None}),
    "an old peer": lambda: Pipeline(peer_max_protocol_version="0.0.57"),
    "middleware": lambda: Pipeline(middleware=[Unchanged]),
    "middleware, declared": lambda: Pipeline(capabilities=DECLARATION, middleware=[Unchanged]),
    "middleware, an old peer": lambda: Pipeline(
        peer_max_protocol_version="0.0.57", middleware=[Unchanged]
    ),
}

LIMITS = st.sampled_from(
    [
        Limits(),
        Limits(),
        Limits(),
        Limits(max_depth=4),
        Limits(max_patch_work=64),
        Limits(max_run_records=1),
        *SMALL_LIMITS,
    ]
)


@st.composite
def framing_pieces(draw: st.DrawFn) -> tuple[str, bytes, bool]:
    """Bytes made of what framing cares about (``tests/test_parse_differential.py``): fields,
    blank lines, every line end, JSON that is not an event, a BOM, invalid UTF-8."""
    return "pieces", draw(broken_stream()), False


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    drawn=st.one_of(random_input(), random_input(), framing_pieces()),
    pipeline=st.sampled_from(sorted(PIPELINES)),
    limits=LIMITS,
    drained=st.booleans(),
    data=st.data(),
)
def test_random_streams_give_the_same_on_both_cores(
    drawn: tuple[str, bytes, bool],
    pipeline: str,
    limits: Limits,
    drained: bool,
    data: st.DataObject,
) -> None:
    name, body, framed = drawn
    reads = data.draw(reads_of(body))
    make = PIPELINES[pipeline]
    limited = _changed(limits) or "no limit set"
    read = "drained for its verdict" if drained else "read event by event"
    assert_same(
        lambda: make().with_options(limits=limits),
        reads,
        framed_natively=framed,
        drained=drained,
        what=f"a {name} stream through the {pipeline} pipeline, {limited}, {read}",
    )
