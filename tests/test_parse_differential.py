"""The native framer against the Python reference: read for read, the same outcome.

The native core frames SSE and JSON lines (``native/src/framing.rs``) and hands the frames
to Python, which decodes them with orjson on both cores; the pure Python implementation
(``stages/parse.py``) is the reference. Both parse the same reads here — random streams,
valid and broken, random JSON, the JSON rules' edge cases (numbers, surrogates, duplicate
keys, what surrounds a frame, depth at the limits), and the corpus, cut into random reads —
and everything parse answers is compared exactly: each read's batch (events, as ``repr``
shows them, so that ``0``, ``-0.0`` and ``False`` differ; frame indices; types), a rejection
(code, message, event index, pointer, spec page, what was kept before it), the findings,
the counters and the bytes read. A disagreement is a bug in one of them.
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
from tests.cores import native_module, running, shown


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
            answers.append((shown(batch.events), batch.indices, batch.types))
        batch = parser.finish()
        answers.append(("finish", shown(batch.events), batch.indices, batch.types))
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
                None if kept is None else (shown(kept.events), kept.indices, kept.types),
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
    shown = [answer[0] for answer in outcome(core, reads, Options())[:-3] if answer[0] != "[]"]
    assert shown == [repr([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}])]


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


# -- JSON decoding ---------------------------------------------------------------------------

VALUES = [
    # numbers: 64-bit integers exact, longer ones doubles, past double range refused
    b"0",
    b"-0",
    b"-0.0",
    b"0.0",
    b"-0e0",
    b"-0E+3",
    b"-1e-400",
    b"1e-400",
    b"1E2",
    b"1e+2",
    b"2.5e-3",
    b"-12.75",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"-9223372036854775809",
    b"18446744073709551615",
    b"18446744073709551616",
    b"-18446744073709551616",
    b"12345678901234567890123",
    b"1" + b"0" * 308,
    b"1" + b"0" * 309,
    b"1e308",
    b"1.7976931348623157e308",
    b"1.8e308",
    b"-1e400",
    b"0.1",
    b"3.141592653589793238",
    b"01",
    b"1.",
    b".5",
    b"-",
    b"+1",
    b"1e",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    # strings: surrogates paired, lone, escaped; raw ones (not UTF-8); controls
    b'"\\ud83d\\ude00"',
    b'"\\ud800"',
    b'"\\udc00"',
    b'"\\ud800\\u0041"',
    b'"\\udc00\\ud800"',
    b'"\\ud83d"',
    b'"\\uD83D\\uDE00"',
    b'"\xf0\x9f\x98\x80"',
    b'"\xed\xa0\x80"',
    b'"\\u0000"',
    b'"a\tb"',
    b'"\\/\\b\\f\\n\\r\\t\\"\\\\"',
    b'"\\x41"',
    b'"\xc3"',
    b'"\xc3\xa9"',
    # literals, containers, duplicate keys
    b"true",
    b"false",
    b"null",
    b"tru",
    b"[]",
    b"{}",
    b"[1,]",
    b'{"a":1,}',
    b'{"a" 1}',
    b'{"a":1,"b":2,"a":3}',
    b'{"a":{"x":1},"a":[2]}',
    b'{"":0}',
    b"[1,[2,[3,[4]]]]",
]
"""Values placed in an event (and alone, as a frame), at the edges of the JSON rules."""

AROUND = [b"", b" ", b"\t", b"\r", b"  \t ", b"\x0b", b"\x0c", b"\xef\xbb\xbf", b"\xc2\xa0"]
"""What may come before or after a frame's JSON: JSON whitespace, other blanks, a BOM."""


def _frames_of(value: bytes) -> list[bytes]:
    return [
        b'{"type":"CUSTOM","name":"n","value":' + value + b"}",
        value,
        b'{"type":"RAW","event":{"v":[' + value + b"]}}",
    ]


@pytest.mark.parametrize("value", VALUES, ids=[repr(v)[2:40] for v in VALUES])
def test_json_edge_values_give_the_same_answers(value: bytes) -> None:
    native_module()
    for frame in _frames_of(value):
        for framing in ("sse", "jsonl"):
            data = streams.join_frames([b'{"type":"RUN_STARTED"}', frame], framing)
            assert_same([data])
            assert_same(_random_reads(data, len(frame)))
            assert_same([data[:-1]])  # the last JSON line without its newline (finish)


@pytest.mark.parametrize("before", AROUND)
@pytest.mark.parametrize("after", AROUND)
def test_what_surrounds_a_frame_gives_the_same_answers(before: bytes, after: bytes) -> None:
    native_module()
    frame = before + b'{"type":"RUN_STARTED","threadId":"t"}' + after
    for framing in ("sse", "jsonl"):
        data = streams.join_frames([b'{"type":"X"}', frame, b'{"type":"Y"}'], framing)
        assert_same([data], Options(framing=framing))


@pytest.mark.parametrize("max_depth", [1, 2, 3, 127, 128, 129, 1023, 1024, 1025, 2000])
def test_depth_at_each_side_of_the_limits_gives_the_same_answers(max_depth: int) -> None:
    """The stream's limit, and orjson's own (1,024 levels) when the stream's is higher."""
    native_module()
    options = Options(limits=Limits(max_depth=max_depth))
    for depth in {1, max_depth - 1, max_depth, max_depth + 1, 1024, 1025, 5000} - {0}:
        inner = b"[" * (depth - 1) + b"1" + b"]" * (depth - 1)
        frame = b'{"type":"RAW","event":' + inner + b"}" if depth > 1 else b'{"type":"RAW"}'
        for framing in ("sse", "jsonl"):
            assert_same([streams.join_frames([b'{"type":"A"}', frame], framing)], options)


def _json_literal(draw: st.DrawFn, value: Any) -> bytes:
    """``value`` written as JSON, with the spellings a producer may choose: escapes or raw
    UTF-8, whitespace, numbers in any form (``1e2``, ``-0``, ``100.0``)."""
    if isinstance(value, dict):
        gap = draw(st.sampled_from([b"", b" ", b"\n", b"\t "]))
        members = [
            _json_literal(draw, k) + b":" + gap + _json_literal(draw, v) for k, v in value.items()
        ]
        return b"{" + gap + (b"," + gap).join(members) + gap + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(_json_literal(draw, item) for item in value) + b"]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    if isinstance(value, bytes):  # a number literal drawn as text
        return value
    return json.dumps(value).encode()


NUMBER_LITERALS = st.from_regex(
    rb"\A-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?\Z"
)

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | NUMBER_LITERALS
    | st.text(max_size=8)
    | st.sampled_from(["\ud800", "\udfff", "\ud83d\ude00"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def json_frames(draw: st.DrawFn) -> list[bytes]:
    """Events holding random JSON, and random JSON alone as a frame, now and then broken."""
    frames = []
    for _ in range(draw(st.integers(1, 6))):
        value = draw(JSON_VALUES)
        if draw(st.booleans()):
            value = {"type": draw(st.sampled_from(["CUSTOM", "RAW", 7])), "value": value}
        literal = _json_literal(draw, value)
        if draw(st.integers(0, 9)) == 0:
            cut = draw(st.integers(0, len(literal)))
            literal = literal[:cut] + draw(st.sampled_from([b"", b"\xff", b",", b"]", b"\\"]))
        frames.append(literal)
    return frames


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    frames=json_frames(),
    framing=st.sampled_from(["sse", "jsonl"]),
    cuts=st.lists(st.integers(min_value=0, max_value=5_000), max_size=12),
    limits=LIMITS,
)
def test_random_json_in_random_reads_gives_the_same_answers(
    frames: list[bytes], framing: str, cuts: list[int], limits: Limits
) -> None:
    native_module()
    frames = [frame.replace(b"\n", b" ") for frame in frames]  # one line each
    data = streams.join_frames(frames, framing)
    assert_same(streams.split(data, cuts), Options(limits=limits))
