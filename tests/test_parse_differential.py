"""The native framer against the Python reference: read for read, the same outcome.

The native core frames SSE and JSON lines (``native/src/framing.rs``); the pure Python
implementation (``stages/parse.py``) is the reference. Both parse the same reads here —
random streams, valid and broken, and the corpus, cut into random reads — and everything
parse answers is compared exactly: each read's batch (events, frame indices, types), a
rejection (code, message, event index, pointer, spec page, what was kept before it), the
findings, the counters and the bytes read. A disagreement is a bug in one of them.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from agui_pipeline import Options, StreamContext, StreamRejected
from agui_pipeline.options import Limits
from agui_pipeline.stages.parse import Parse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import streams
from tests.conftest import ROOT, spec_artifacts
from tests.cores import native_module, running


def outcome(core: str, reads: list[bytes], options: Options) -> list[Any]:
    """Everything parse answers to ``reads`` on ``core``, in order."""
    with running(core):  # the framer is chosen at the first read
        return _outcome(core, reads, options)


def _outcome(core: str, reads: list[bytes], options: Options) -> list[Any]:
    parser = Parse(StreamContext(options))
    answers: list[Any] = []
    framed = False  # a read delivered frames: the framing was known by then
    try:
        for read in reads:
            batch = parser.feed(read)
            framed = framed or bool(batch.events)
            answers.append((batch.events, batch.indices, batch.types))
        batch = parser.finish()
        answers.append(("finish", batch.events, batch.indices, batch.types))
    except StreamRejected as rejection:
        kept = rejection.kept
        answers.append(
            (
                "rejected",
                rejection.code,
                rejection.detail,
                rejection.event_index,
                rejection.pointer,
                rejection.spec,
                None if kept is None else (kept.events, kept.indices, kept.types),
            )
        )
    ctx = parser.ctx
    answers.append(([d.to_dict() for d in ctx.diagnostics], ctx.counters, ctx.bytes_read))
    answers.append((parser.framing, ctx.transport))
    if parser.framing in ("sse", "jsonl") and framed:
        assert (parser._framer is not None) is (core == "native"), f"not framed by {core}"
    return answers


def assert_same(reads: list[bytes], options: Options | None = None) -> None:
    options = options or Options()
    assert outcome("native", reads, options) == outcome("pure", reads, options)


@pytest.mark.parametrize("core", ["pure", "native"])
def test_an_empty_read_between_cr_and_lf_keeps_them_one_line_end(core: str) -> None:
    """A CR ending one read and the LF starting a later one are one CRLF, even with an empty
    read between them (found by the framer's fuzz target, ``native/fuzz``: the empty read
    forgot the CR, and the LF became a blank line that split the event in two)."""
    if core == "native":
        native_module()
    data = b'data: {"type":"RUN_STARTED",\r\ndata: "threadId":"t","runId":"r"}\r\n\r\n'
    cut = data.index(b"\n")
    reads = [data[:cut], b"", data[cut:]]
    whole = outcome(core, [data], Options())
    assert outcome(core, reads, Options())[-2:] == whole[-2:]
    events = [event for answer in outcome(core, reads, Options())[:-3] for event in answer[0]]
    assert events == [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]


# -- random streams ------------------------------------------------------------------------

PIECES = [
    b"data: ",
    b"data:",
    b"data",
    b"\n",
    b"\n\n",
    b"\r",
    b"\r\n",
    b": a comment",
    b"event: x",
    b"id: 7",
    b"retry",
    b" ",
    b"\t",
    b"\xef\xbb\xbf",
    b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}',
    b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"\xc3\xa9 \\n"}',
    b'{"a":[1,{"b":null}]}',
    b'{"n":12345678901234567890123}',
    b'{"s":"\\ud800"}',
    b'{"f":1e400}',
    b"[[[[[[[[[[[[1]]]]]]]]]]]]",
    b"[1]",
    b"3",
    b"{",
    b"}",
    b"\xff",
    b"x",
]


@st.composite
def broken_stream(draw: st.DrawFn) -> bytes:
    """Bytes made of the pieces framing cares about: fields, blank lines, every newline,
    events, JSON that is not an object or not JSON, a BOM, invalid UTF-8."""
    return b"".join(draw(st.lists(st.sampled_from(PIECES), max_size=60)))


@st.composite
def valid_stream(draw: st.DrawFn) -> bytes:
    """A valid stream as JSON lines, or as SSE with each event's JSON over several ``data``
    lines among comments and other fields, with LF, CRLF or CR line ends."""
    events = draw(streams.valid_stream())
    if draw(st.booleans()):
        return streams.encode(events, "jsonl")
    blocks = []
    for event in events:
        lines = [b"data: " + line.encode() for line in json.dumps(event, indent=1).splitlines()]
        extra = draw(st.sampled_from([b": keep-alive", b"event: agui", b"id: 3", b"data"]))
        lines.insert(draw(st.integers(0, len(lines))), extra)
        blocks.append(b"\n".join(lines) + b"\n\n")
    return b"".join(blocks).replace(b"\n", draw(st.sampled_from([b"\n", b"\r\n", b"\r"])))


LIMITS = st.sampled_from(
    [Limits(), Limits(max_frame_bytes=40), Limits(max_frame_bytes=200), Limits(max_depth=4)]
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.one_of(broken_stream(), valid_stream()),
    cuts=st.lists(st.integers(min_value=0, max_value=20_000), max_size=30),
    framing=st.sampled_from([None, None, "sse", "jsonl"]),
    limits=LIMITS,
)
def test_random_streams_in_random_reads_give_the_same_answers(
    data: bytes, cuts: list[int], framing: str | None, limits: Limits
) -> None:
    native_module()
    assert_same(streams.split(data, cuts), Options(framing=framing, limits=limits))


# -- the corpus ------------------------------------------------------------------------------


def _random_reads(data: bytes, seed: int) -> list[bytes]:
    """``data`` in reads of 1 to 300 bytes, as a socket may hand them over."""
    draw = random.Random(seed)
    reads, start = [], 0
    while start < len(data):
        size = draw.randint(1, 300)
        reads.append(data[start : start + size])
        start += size
    return reads


def _corpus() -> list[tuple[str, bytes]]:
    found = [(path.name, path.read_bytes()) for path in sorted((ROOT / "examples").glob("*.sse"))]
    return found


@pytest.mark.parametrize(("name", "data"), _corpus(), ids=[name for name, _ in _corpus()])
def test_the_examples_give_the_same_answers(name: str, data: bytes) -> None:
    native_module()
    for seed in range(5):
        assert_same(_random_reads(data, seed))
    assert_same([data])


@pytest.mark.spec
def test_the_conformance_streams_give_the_same_answers_in_every_framing() -> None:
    native_module()
    fixtures = sorted(spec_artifacts().corpus.glob("*.json"))
    assert fixtures
    for path in fixtures:
        stream = json.loads(path.read_bytes())["stream"]
        frames = [json.dumps(event).encode() for event in stream]
        for framing in ("sse", "jsonl"):
            data = streams.join_frames(frames, framing)
            for seed in range(3):
                assert_same(_random_reads(data, seed))
            assert_same([data])
