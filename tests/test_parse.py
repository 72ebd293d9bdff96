"""The parse stage: every framing, arbitrary chunk boundaries, CR/CRLF, bad frames."""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from agui_pipeline import Options, Pipeline, StreamContext, StreamRejected, run_sync
from agui_pipeline._engine import chain
from agui_pipeline.batch import Batch
from agui_pipeline.options import Limits
from agui_pipeline.stage import Stage
from agui_pipeline.stages import parse as parse_module
from agui_pipeline.stages.parse import Parse, _LongIntegerSearch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import streams
from tests.cores import CORES, running
from tests.test_enforce_schema_property import events as schema_events


@pytest.fixture(autouse=True, scope="module", params=CORES)
def core(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test here runs over the pure Python framer and the native one (module-scoped:
    hypothesis refuses a function-scoped fixture under @given)."""
    with running(request.param):
        yield request.param


EVENTS: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t-1", "runId": "r-1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m-1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "Grüße, "},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "世界 🌍\nline two"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m-1"},
    {"type": "RUN_FINISHED", "threadId": "t-1", "runId": "r-1"},
]


def sse(events: list[dict[str, Any]]) -> bytes:
    return streams.encode(events, "sse")


def jsonl(events: list[dict[str, Any]]) -> bytes:
    return streams.encode(events, "jsonl")


def array(events: list[dict[str, Any]]) -> bytes:
    """Pretty-printed, unlike ``encode``: the document spans many lines and reads."""
    return json.dumps(events, indent=2, ensure_ascii=False).encode()


def feed_all(parser: Parse, chunks: list[bytes], events: list[Any], indices: list[int]) -> None:
    """Every chunk, then the end, through ``parser``, appending what it delivers to ``events``
    and ``indices`` (kept as far as it got when it raises)."""
    for chunk in chunks:
        batch = parser.feed(chunk)
        events += batch.events
        indices += batch.indices
    batch = parser.finish()
    events += batch.events
    indices += batch.indices


def decode(chunks: list[bytes], **options: Any) -> tuple[list[dict[str, Any]], Parse]:
    parser = Parse(StreamContext(Options(**options)))
    events: list[dict[str, Any]] = []
    indices: list[int] = []
    feed_all(parser, chunks, events, indices)
    assert indices == list(range(len(events)))
    return events, parser


@pytest.mark.parametrize(("encode", "framing"), [(sse, "sse"), (jsonl, "jsonl"), (array, "json")])
def test_each_framing_is_detected_and_decoded(encode: Any, framing: str) -> None:
    events, parser = decode([encode(EVENTS)])
    assert events == EVENTS
    assert parser.framing == framing
    assert parser.ctx.transport == framing


@settings(max_examples=300, deadline=None)
@given(
    encode=st.sampled_from([sse, jsonl, array]),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=40),
)
def test_any_chunk_boundaries_give_the_same_events(encode: Any, cuts: list[int]) -> None:
    data = encode(EVENTS)
    events, _ = decode(streams.split(data, cuts))
    assert events == EVENTS


def test_every_single_byte_boundary() -> None:
    """Including inside the multi-byte UTF-8 characters of the deltas."""
    data = sse(EVENTS)
    for cut in range(len(data) + 1):
        events, _ = decode([data[:cut], data[cut:]])
        assert events == EVENTS, cut
    events, _ = decode([data[i : i + 1] for i in range(len(data))])
    assert events == EVENTS


@pytest.mark.parametrize("newline", [b"\r\n", b"\r"])
@settings(max_examples=100, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=20))
def test_cr_and_crlf_line_endings_are_tolerated(newline: bytes, cuts: list[int]) -> None:
    # Multi-line data, so a CRLF pair split across chunks must not read as a blank line.
    data = b"".join(
        b"data: " + orjson.dumps(e).replace(b'",', b'",\ndata: ') + b"\n\n" for e in EVENTS
    ).replace(b"\n", newline)
    events, _ = decode(streams.split(data, cuts))
    assert events == EVENTS


def test_sse_grammar_multiline_data_comments_and_other_fields() -> None:
    stream = (
        b": keep-alive\n\n"
        b"event: agui\nid: 7\nretry: 1000\n"
        b'data: {"type":"RUN_STARTED",\n'
        b'data:"threadId":"t-1",\n'
        b'data:  "runId":"r-1"}\n\n'
        b": another comment\n"
        b"\n\n\n"
        b'data:{"type":"RUN_FINISHED","threadId":"t-1","runId":"r-1"}\n'
        b"unknownfield\n\n"
    )
    events, _ = decode([stream])
    assert events == [EVENTS[0], EVENTS[-1]]


def test_sse_without_a_space_after_the_colon() -> None:
    events, _ = decode([b'data:{"type":"X"}\n\n'])
    assert events == [{"type": "X"}]


def test_leading_bom_and_blank_lines_are_skipped() -> None:
    for encode in (sse, jsonl, array):
        data = b"\xef\xbb\xbf\n \n" + encode(EVENTS)
        events, _ = decode([data[:2], data[2:]])
        assert events == EVENTS


def test_jsonl_last_line_needs_no_newline_and_blank_lines_are_skipped() -> None:
    data = jsonl(EVENTS[:2]) + b"\n   \r\n" + orjson.dumps(EVENTS[2])
    events, _ = decode([data])
    assert events == EVENTS[:3]


def test_forced_framing_is_used() -> None:
    events, parser = decode([jsonl(EVENTS)], framing="jsonl")
    assert events == EVENTS
    assert parser.framing == "jsonl"
    # Forced SSE reads JSON lines as field lines with no data: nothing is decoded.
    assert decode([jsonl(EVENTS)], framing="sse")[0] == []
    with pytest.raises(ValueError, match="framing"):
        Parse(StreamContext(Options(framing="xml")))


@pytest.mark.parametrize(
    ("frame", "code", "found"),
    [
        (b"not json", "parse.not-json", "do not decode"),
        (b"[1, 2]", "parse.not-object", "found array"),
        (b'"text"', "parse.not-object", 'found string "text"'),
        (b"null", "parse.not-object", "null"),
        (b'{"type": "RUN_STARTED"', "parse.not-json", "do not decode"),
    ],
)
def test_a_frame_that_is_not_a_json_object_is_fatal_with_its_index(
    frame: bytes, code: str, found: str
) -> None:
    good = sse(EVENTS[:2])
    parser = Parse(StreamContext(Options()))
    with pytest.raises(StreamRejected) as raised:
        parser.feed(good + b"data: " + frame + b"\n\n" + sse(EVENTS[2:]))
    error = raised.value
    assert error.code == code
    assert error.event_index == 2
    assert found in str(error)
    assert "/spec/1.1/basic/transports" in str(error)
    # The frames before the bad one are kept for delivery.
    assert isinstance(error.kept, Batch)
    assert error.kept.events == EVENTS[:2]
    assert error.kept.indices == [0, 1]


def test_jsonl_bad_line_index_counts_earlier_batches() -> None:
    parser = Parse(StreamContext(Options()))
    assert len(parser.feed(jsonl(EVENTS[:3]))) == 3
    with pytest.raises(StreamRejected) as raised:
        parser.feed(b'{"type":"X"}\n{oops}\n')
    assert raised.value.event_index == 4
    assert raised.value.kept is not None
    assert raised.value.kept.indices == [3]


def test_array_document_must_be_an_array_of_objects() -> None:
    with pytest.raises(StreamRejected) as raised:
        decode([b'{"type": "X"}'], framing="json")
    assert raised.value.code == "parse.not-array"
    with pytest.raises(StreamRejected) as raised:
        decode([b'[{"type": "X"}, 5]'])
    assert raised.value.code == "parse.not-object"
    assert raised.value.event_index == 1


def test_unknown_first_byte_is_fatal() -> None:
    with pytest.raises(StreamRejected) as raised:
        decode([b"<html>"])
    assert raised.value.code == "parse.unknown-framing"


def test_empty_stream_yields_no_events() -> None:
    assert decode([b"", b"  \n"])[0] == []


def test_sse_stream_cut_inside_an_event_warns() -> None:
    events, parser = decode([sse(EVENTS[:1]) + b'data: {"type":"RUN_FINISHED"}\n'])
    assert events == EVENTS[:1]
    (warning,) = parser.ctx.diagnostics
    assert warning.code == "parse.incomplete-frame"
    assert warning.event_index == 1


def test_frame_larger_than_the_limit_is_rejected_before_it_is_whole() -> None:
    parser = Parse(StreamContext(Options(limits=Limits(max_frame_bytes=1000))))
    parser.feed(b'data: {"type":"TEXT_MESSAGE_CONTENT","delta":"')
    with pytest.raises(StreamRejected) as raised:
        for _ in range(100):
            parser.feed(b"x" * 100)
    assert raised.value.code == "limit.frame-bytes"
    assert "max_frame_bytes=1000" in str(raised.value)


def test_large_frame_in_small_chunks_decodes() -> None:
    big = {"type": "RAW", "event": "x" * 2_000_000}
    data = sse([big])
    pieces = [data[i : i + 512] for i in range(0, len(data), 512)]
    events, _ = decode(pieces)
    assert events == [big]


@pytest.mark.parametrize("encode", [sse, jsonl, array])
def test_nesting_deeper_than_the_limit_is_rejected_at_its_frame(encode: Any) -> None:
    deep: Any = "leaf"
    for level in range(20):
        deep = [deep] if level % 2 else {"k": deep}
    # The event object is one more level: 21 in all.
    events = [*EVENTS[:2], {"type": "CUSTOM", "name": "n", "value": deep}, *EVENTS[2:]]
    parser = Parse(StreamContext(Options(limits=Limits(max_depth=20))))
    with pytest.raises(StreamRejected) as raised:
        parser.feed(encode(events))
        parser.finish()
    assert raised.value.code == "limit.depth"
    assert raised.value.event_index == 2
    assert "21 levels" in str(raised.value) and "max_depth=20" in str(raised.value)
    assert "(event 2)" in str(raised.value)
    assert raised.value.kept is not None
    assert raised.value.kept.events == EVENTS[:2]
    assert decode([encode(events)], limits=Limits(max_depth=21))[0] == events


def test_a_whole_frame_larger_than_the_limit_in_one_read_is_rejected() -> None:
    big = {"type": "RAW", "event": "x" * 5000}
    parser = Parse(StreamContext(Options(limits=Limits(max_frame_bytes=1000))))
    with pytest.raises(StreamRejected) as raised:
        parser.feed(sse([EVENTS[0], big, EVENTS[1]]))
    assert raised.value.code == "limit.frame-bytes"
    assert raised.value.event_index == 1
    assert "(event 1)" in str(raised.value)


def _frame_of(size: int) -> bytes:
    """An event's JSON of exactly ``size`` bytes."""
    head = b'{"type":"RAW","event":"'
    return head + b"x" * (size - len(head) - 2) + b'"}'


@pytest.mark.parametrize("size", [99, 100, 101])
@pytest.mark.parametrize("framing", ["sse", "jsonl"])
def test_a_frame_at_the_limit_passes_and_one_byte_past_it_is_rejected(
    size: int, framing: str
) -> None:
    """max_frame_bytes holds for a frame shorter than twice max_depth too (a frame whole in
    one read was once only measured when it could break the depth limit): alone in a read
    (SSE's one-event path), among others in a read, and as the last JSON line (held, then
    decoded at the end)."""
    limits = Limits(max_frame_bytes=100)  # below 2 x max_depth (256)
    frame = _frame_of(size)
    first = b'{"type":"RUN_STARTED"}'
    reads_of = {
        "alone": [streams.join_frames([first], framing), streams.join_frames([frame], framing)],
        "among others": [streams.join_frames([first, frame, first], framing)],
    }
    if framing == "jsonl":
        reads_of["last"] = [streams.join_frames([first], framing), frame]
    for reads in reads_of.values():
        parser = Parse(StreamContext(Options(framing=framing, limits=limits)))
        if size <= 100:
            assert decode(reads, framing=framing, limits=limits)[0][1] == json.loads(frame)
            continue
        with pytest.raises(StreamRejected) as raised:
            for read in reads:
                parser.feed(read)
            parser.finish()
        assert raised.value.code == "limit.frame-bytes"
        assert raised.value.event_index == 1
        assert "max_frame_bytes=100" in str(raised.value)


def test_an_object_document_is_named_as_json_names_it() -> None:
    with pytest.raises(StreamRejected) as raised:
        decode([b'{"type": "X"}'], framing="json")
    assert "found object" in str(raised.value)


# -- valid JSON refused: the refusal names the limit or rule it hit (issue 13, item 14) ----

START = b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'


def _refusal(frame: bytes, framing: str) -> StreamRejected:
    """The rejection of ``frame`` as the second frame of a stream in ``framing``."""
    if framing == "sse":
        data = START + b"data: " + frame + b"\n\n"
    elif framing == "jsonl":
        data = START[6:-1] + frame + b"\n"
    else:
        data = b"[" + START[6:-2] + b",\n" + frame + b"]"
    with pytest.raises(StreamRejected) as caught:
        decode([data])
    return caught.value


VALID_BUT_REFUSED = [
    (b'{"type":"CUSTOM","name":"n","value":1e999999}', "parse.number-range", "/value"),
    (b'{"type":"CUSTOM","name":"n","value":-1e400}', "parse.number-range", "/value"),
    (b'{"type":"CUSTOM","name":"n","value":["\\ud800"]}', "parse.unpaired-surrogate", "/value/0"),
    (b'{"type":"CUSTOM","name":"n","value":{"\\udc00x":1}}', "parse.unpaired-surrogate", "/value"),
]


@pytest.mark.parametrize("framing", ["sse", "jsonl", "json"])
@pytest.mark.parametrize(("frame", "code", "pointer"), VALID_BUT_REFUSED)
def test_valid_json_refused_names_the_rule_and_the_pointer(
    frame: bytes, code: str, pointer: str, framing: str
) -> None:
    json.loads(frame)  # it is valid JSON
    rejection = _refusal(frame, framing)
    assert rejection.code == code
    assert rejection.pointer == pointer
    assert rejection.event_index == 1
    assert "do not decode" not in str(rejection)


@pytest.mark.parametrize("framing", ["sse", "jsonl", "json"])
@pytest.mark.parametrize("depth", [1_030, 5_000, 200_000])
def test_nesting_past_what_the_decoder_reads_is_the_depth_limit(framing: str, depth: int) -> None:
    frame = b'{"type":"CUSTOM","name":"n","value":' + b"[" * depth + b"]" * depth + b"}"
    rejection = _refusal(frame, framing)
    assert rejection.code == "limit.depth"
    assert "max_depth=128" in str(rejection)
    # A document too deep for the standard library to read names no element: the document
    # is event 0. How deep it reads depends on the interpreter (3.13 reads these 5,000
    # levels, 3.11 stops near 1,000); one it reads names the element, event 1.
    try:
        json.loads(b"[" + frame + b"]")
        readable = True
    except RecursionError:
        readable = False
    assert rejection.event_index == (0 if framing == "json" and not readable else 1)


@pytest.mark.parametrize("framing", ["sse", "jsonl", "json"])
def test_bytes_that_are_not_json_are_still_not_json(framing: str) -> None:
    for frame in (b"{'type': 'CUSTOM'}", b'{"type":NaN}', b'{"type":Infinity}', b'{"a":1,}'):
        assert _refusal(frame, framing).code == "parse.not-json", frame


# -- integers beyond 64 bits: delivered as the nearest double, each one warned of (item 13) -----


@pytest.mark.parametrize("framing", ["sse", "jsonl", "json"])
def test_an_integer_beyond_64_bits_is_warned_of_by_pointer(framing: str) -> None:
    big = 123456789012345678901234567890
    events: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "CUSTOM", "name": "n", "value": {"a": [1, -big], "b": 2**64 - 1, "c": -(2**63)}},
        {"type": "CUSTOM", "name": "digits in a string", "value": "12345678901234567890123"},
        {"type": "STATE_SNAPSHOT", "snapshot": {"x~y": big, "n": 18446744073709551616}},
    ]
    data = _framed(events, framing)
    ctx = StreamContext(Options())
    parser = Parse(ctx)
    decoded = list(parser.feed(data).events) + list(parser.finish().events)
    assert decoded[1]["value"] == {"a": [1, float(-big)], "b": 2**64 - 1, "c": -(2**63)}
    assert decoded[2]["value"] == "12345678901234567890123"
    assert decoded[3]["snapshot"] == {"x~y": float(big), "n": float(2**64)}
    found = [(d.code, d.event_index, d.pointer) for d in ctx.diagnostics]
    assert found == [
        ("parse.integer-precision", 1, "/value/a/1"),
        ("parse.integer-precision", 3, "/snapshot/x~0y"),
        ("parse.integer-precision", 3, "/snapshot/n"),
    ]
    assert str(-big) in ctx.diagnostics[0].message


@pytest.mark.parametrize("length", range(1, 26))
def test_the_sampled_search_finds_every_run_of_19_digits_and_no_timestamp(length: int) -> None:
    # Every third byte is looked at first: a run of 19 or more digits must show at every
    # alignment (then the whole search finds it), a run of 15 or fewer (a millisecond
    # timestamp has 13) at none (no false alarm, so no back-off).
    for offset in range(6):
        region = b'{"a":"' + b"x" * offset + b'","n":' + b"7" * length + b"}"
        search = _LongIntegerSearch()
        assert search.may_hold(region) is (length >= 19), (length, offset)
        if length <= 15:
            assert search.unsampled == 0, (length, offset)


def test_a_stream_whose_numbers_fool_the_sample_is_searched_whole_for_a_while() -> None:
    # Microsecond timestamps (16 digits) show in the sample one time in three: after such
    # a false alarm the next reads are searched byte by byte, then the sample is tried again.
    search = _LongIntegerSearch()
    fooling = b'{"ts":' + b"1" * 16 + b"}"  # the run starts at a multiple of 3
    assert not search.may_hold(fooling)
    assert search.unsampled == 16
    long_one = b'{"n":' + b"1" * 19 + b"}"
    assert search.may_hold(long_one)  # searched whole, found
    for _ in range(15):
        assert not search.may_hold(b'{"n":1}')
    assert search.unsampled == 0
    assert search.may_hold(long_one)  # sampled again, found


_BIG = 123456789012345678901234567890
_PLACES: list[tuple[dict[str, Any], str]] = [
    ({"type": "CUSTOM", "name": "n", "value": _BIG}, "/value"),
    ({"type": "RAW", "event": {"n": [_BIG]}}, "/event/n/0"),
    ({"type": "STATE_SNAPSHOT", "snapshot": {"a": _BIG}}, "/snapshot/a"),
    (
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": _BIG}]},
        "/delta/0/value",
    ),
    (
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "a",
            "activityType": "x",
            "content": {"n": _BIG},
        },
        "/content/n",
    ),
    (
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "a",
            "activityType": "x",
            "patch": [{"op": "add", "path": "/n", "value": _BIG}],
        },
        "/patch/0/value",
    ),
    (
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{"id": "u", "role": "user", "content": "hi", "metadata": {"n": _BIG}}],
        },
        "/messages/0/metadata/n",
    ),
    (
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "t",
            "toolCallId": "c",
            "content": [{"type": "text", "text": "x", "metadata": _BIG}],
        },
        "/content/0/metadata",
    ),
    (
        {
            "type": "RUN_STARTED",
            "threadId": "t-1",
            "runId": "r-2",
            "input": {"threadId": "t-1", "runId": "r-2", "messages": [], "state": [_BIG]},
        },
        "/input/state/0",
    ),
    ({"type": "RUN_FINISHED", "threadId": "t-1", "runId": "r-1", "result": _BIG}, "/result"),
    ({"type": "SUBAGENT_FINISHED", "subagentRunId": "s", "result": {"n": _BIG}}, "/result/n"),
    (
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "x", "metadata": {"n": _BIG}},
        "/metadata/n",
    ),
    (
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "x", "rawEvent": {"n": _BIG}},
        "/rawEvent/n",
    ),
    (
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "x", "timestamp": -_BIG},
        "/timestamp",
    ),
    ({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "x", "extra": _BIG}, "/extra"),
    ({"type": "VENDOR_EVENT", "n": _BIG}, "/n"),
    ({"type": "CUSTOM", "name": "n", "value": -9223372036854775809}, "/value"),  # 19 digits
    ({"type": "CUSTOM", "name": "n", "value": 18446744073709551616}, "/value"),  # 2**64
]


@pytest.mark.parametrize("framing", ["sse", "jsonl", "json"])
@pytest.mark.parametrize(("hostile", "pointer"), _PLACES, ids=[p for _, p in _PLACES])
def test_an_integer_beyond_64_bits_is_never_delivered_silently(
    framing: str, hostile: dict[str, Any], pointer: str
) -> None:
    # Wherever the integer sits, among many ordinary events and at each alignment of
    # its bytes, the pipeline warns of it by frame and pointer; where enforce would not
    # deliver it as it stands (a timestamp out of range, a member no schema describes,
    # an unknown type) that answer comes too.
    filler = [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "w"}] * 700
    head = [*EVENTS[:2], *filler]
    for shift in range(3):
        events = [*head, hostile, *filler, *EVENTS[2:]]
        frames = [json.dumps(event).encode() for event in events]
        position = len(head)
        frames[position] = frames[position].replace(b'"type"', b" " * shift + b'"type"', 1)
        data = streams.join_frames(frames, framing)
        result = run_sync(data)
        warned = [
            (d.event_index, d.pointer)
            for d in result.diagnostics
            if d.code == "parse.integer-precision"
        ]
        assert warned == [(position, pointer)], shift
        codes = {d.code for d in result.diagnostics}
        if pointer == "/timestamp":
            assert (result.verdict.code, result.verdict.pointer) == ("enforce.malformed", pointer)
        elif pointer == "/extra":
            assert "enforce.stripped" in codes
            assert all("extra" not in event for event in result.events)
        elif hostile["type"] == "VENDOR_EVENT":
            assert "enforce.unknown-event" in codes
            assert result.counters.dropped == 1


# -- which frames are searched: enforce's checks choose them (IntegerSearch) ----------------------


def _framed(events: list[dict[str, Any]], framing: str) -> bytes:
    """``events`` written by the standard library (orjson cannot write integers past 64 bits)."""
    return streams.join_frames([json.dumps(event).encode() for event in events], framing)


def _warned(result: Any) -> list[tuple[int | None, str | None]]:
    return [
        (d.event_index, d.pointer)
        for d in result.diagnostics
        if d.code == "parse.integer-precision"
    ]


@pytest.fixture
def every_read_handed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parse hands even a read of one frame to enforce (it searches reads of fewer than
    ``IntegerSearch.FEWEST_FRAMES`` itself), and enforce takes every read with its batch
    method (the fused pass takes reads of up to ``chain.STEPPED_READS`` events step by
    step, and its step searches what was handed over whole): the tests of the hand-over
    use short streams."""
    monkeypatch.setattr(parse_module.IntegerSearch, "FEWEST_FRAMES", 1)
    monkeypatch.setattr(chain, "STEPPED_READS", 0)


def _spy_on_rereads(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The frames parse reads again, exactly, from here on in the test."""
    reread: list[bytes] = []
    original = parse_module._reread

    def spy(frame: bytes) -> Any:
        reread.append(frame)
        return original(frame)

    monkeypatch.setattr(parse_module, "_reread", spy)
    return reread


_DIGITS = "12345678901234567890123"  # 23 digits, in strings: never an integer


@pytest.mark.usefixtures("every_read_handed_over", "python_stages")
def test_enforce_chooses_the_frames_searched_and_parse_alone_searches_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each frame below holds a run of 23 digits, in a string. With enforce, only the
    # frames of events with an open member present are read again (false alarms: no
    # warning); a text delta and a tool result's string content are never searched.
    # Without enforce, parse searches every read and reads all four again.
    reread = _spy_on_rereads(monkeypatch)
    events = [
        EVENTS[0],
        EVENTS[1],
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": _DIGITS},
        {"type": "TEXT_MESSAGE_END", "messageId": "m-1", "metadata": {"id": _DIGITS, "n": 1}},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "t"},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {"type": "TOOL_CALL_RESULT", "messageId": "t", "toolCallId": "c", "content": _DIGITS},
        {"type": "CUSTOM", "name": "n", "value": {"ids": [_DIGITS]}},
        EVENTS[-1],
    ]
    for framing in ("sse", "jsonl"):
        reread.clear()
        result = run_sync(_framed(events, framing))
        assert result.verdict.completed, result.verdict
        assert _warned(result) == []
        assert [orjson.loads(frame)["type"] for frame in reread] == [
            "TEXT_MESSAGE_END",
            "CUSTOM",
        ], framing
        reread.clear()
        result = run_sync(_framed(events, framing), Pipeline().without("enforce"))
        assert _warned(result) == []
        assert len(reread) == 4, framing


@pytest.mark.usefixtures("every_read_handed_over", "python_stages")
def test_a_stream_of_open_members_is_searched_read_by_read_for_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # When enforce chose most frames of a read, choosing costs more than searching every
    # byte: the next reads are searched whole by parse (a plain delta's digits are then
    # read again), and after IntegerSearch._WHOLE_READS of them enforce chooses again.
    reread = _spy_on_rereads(monkeypatch)
    opened = {"type": "CUSTOM", "name": "n", "value": {"a": [1]}}
    digits = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": _DIGITS}
    whole = parse_module.IntegerSearch._WHOLE_READS
    reads = [_framed([EVENTS[0], EVENTS[1], opened, opened], "sse")]
    reads += [_framed([digits], "sse") for _ in range(whole + 2)]
    reads += [_framed(EVENTS[-2:], "sse")]
    result = run_sync(reads)
    assert result.verdict.completed, result.verdict
    assert len(reread) == whole, "the reads after the first searched whole, then chosen again"


@pytest.mark.usefixtures("python_stages")
def test_a_read_of_few_frames_is_searched_by_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    # One frame per read, as a live stream arrives: handing each read over would cost more
    # than searching it, so parse does (a plain delta's digits are read again); in a read
    # of many frames, enforce chooses (they are not).
    reread = _spy_on_rereads(monkeypatch)
    digits = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": _DIGITS}
    filler = [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "w"}] * 20
    events = [*EVENTS[:2], *filler, digits, *EVENTS[2:]]
    one_by_one = [_framed([event], "sse") for event in events]
    assert run_sync(one_by_one).verdict.completed
    assert len(reread) == 1
    reread.clear()
    assert run_sync(_framed(events, "sse")).verdict.completed
    assert reread == []


@pytest.mark.usefixtures("every_read_handed_over", "python_stages")
def test_an_event_with_two_open_members_is_searched_once() -> None:
    # Both members hold more than scalars, and the second delta also has a member no schema
    # describes (its check fails after its open member): one warning per integer still.
    events = [
        EVENTS[0],
        EVENTS[1],
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "m-1",
            "delta": "a",
            "rawEvent": {"n": [_BIG]},
            "metadata": {"m": {"k": 1}},
        },
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "m-1",
            "delta": "b",
            "metadata": {"m": [-_BIG]},
            "extra": 1,
        },
        *EVENTS[2:],
    ]
    for framing in ("sse", "jsonl"):
        result = run_sync(_framed(events, framing))
        assert _warned(result) == [(2, "/rawEvent/n/0"), (3, "/metadata/m/0")], framing


@pytest.mark.usefixtures("every_read_handed_over", "python_stages")
def test_every_frame_after_the_first_the_checks_do_not_pass_is_searched() -> None:
    # The scan stops at the unknown event; the ones after it in the batch were not looked
    # at for open members, so their bytes are all searched.
    events = [
        EVENTS[0],
        {"type": "VENDOR_EVENT"},
        {"type": "CUSTOM", "name": "n", "value": {"n": _BIG}},
        {"type": "STATE_SNAPSHOT", "snapshot": {"a": [_BIG]}},
        *EVENTS[1:],
    ]
    for framing in ("sse", "jsonl"):
        result = run_sync(_framed(events, framing))
        assert _warned(result) == [(2, "/value/n"), (3, "/snapshot/a/0")], framing


@pytest.mark.usefixtures("every_read_handed_over", "python_stages")
def test_blank_lines_do_not_shift_which_frame_is_searched() -> None:
    # Blank JSON lines are skipped while decoding: the frames handed to enforce must still
    # be those of its events, one each.
    events = [EVENTS[0], {"type": "CUSTOM", "name": "n", "value": {"n": _BIG}}, *EVENTS[1:]]
    lines = [json.dumps(event).encode() for event in events]
    data = b"\n".join([lines[0], b"   ", b"\t", lines[1], *lines[2:]]) + b"\n"
    result = run_sync(data)
    assert _warned(result) == [(1, "/value/n")]


class _DropCustom(Stage):
    """Middleware that removes ``CUSTOM`` events: enforce gets a batch parse did not make."""

    async def process(self, batch: Batch) -> Batch:
        kept = [at for at, event in enumerate(batch.events) if event.get("type") != "CUSTOM"]
        return Batch([batch.events[at] for at in kept], [batch.indices[at] for at in kept])


class _OneReadLate(Stage):
    """Middleware that passes each read's events on with the next read's."""

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)
        self._late = Batch([], [])

    async def process(self, batch: Batch) -> Batch:
        late, self._late = self._late, batch
        return late

    async def finish(self) -> Batch:
        return self._late


class _DropAll(Stage):
    """Middleware that passes nothing on: enforce never sees a batch."""

    async def process(self, batch: Batch) -> Batch:
        return Batch([], [])


@pytest.mark.usefixtures("every_read_handed_over", "python_stages")
@pytest.mark.parametrize("framing", ["sse", "jsonl"])
def test_a_stage_before_enforce_does_not_hide_an_integer(framing: str) -> None:
    # Whatever a middleware does to the events parse decoded — drops some, holds them
    # back a read, drops them all — every integer past 64 bits parse read is warned of,
    # by the frame it was read from, as when parse searched every read itself.
    events = [
        EVENTS[0],
        {"type": "CUSTOM", "name": "n", "value": _BIG},
        {"type": "STATE_SNAPSHOT", "snapshot": {"a": _BIG}},
        *EVENTS[1:4],
        {"type": "STATE_SNAPSHOT", "snapshot": {"b": [-_BIG]}},
        *EVENTS[4:],
    ]
    data = _framed(events, framing)
    cut = data.index(b"Gr")  # two reads: the second holds the last snapshot
    expected = [(1, "/value"), (2, "/snapshot/a"), (6, "/snapshot/b/0")]
    for middleware in (_DropCustom, _OneReadLate, _DropAll):
        result = run_sync([data[:cut], data[cut:]], Pipeline(middleware=[middleware]))
        assert _warned(result) == expected, middleware.__name__


def test_without_enforce_parse_warns_of_every_integer() -> None:
    for framing in ("sse", "jsonl", "json"):
        for hostile, pointer in _PLACES:
            events = [EVENTS[0], hostile, *EVENTS[1:]]
            result = run_sync(_framed(events, framing), Pipeline().without("enforce"))
            assert _warned(result) == [(1, pointer)], (framing, pointer)


_BEYOND_64_BITS = st.one_of(st.integers(2**64, 10**40), st.integers(-(10**40), -(2**63) - 1))
_UP_TO_ENFORCE = functools.reduce(
    Pipeline.without,
    ["expand", "verify", "reconcile", "lint", "metadata", "dispatch"],
    Pipeline(idle_timeout=5),
)


def _value_paths(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """The path of every member and element under ``value``."""
    found: list[tuple[str | int, ...]] = []
    children = (
        value.items() if type(value) is dict else enumerate(value) if type(value) is list else ()
    )
    for key, child in children:
        found += [(*path, key), *_value_paths(child, (*path, key))]
    return found


def _object_paths(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """The path of every object at or under ``value``."""
    return [
        p for p in [path, *_value_paths(value, path)] if type(_at(value, p[len(path) :])) is dict
    ]


def _at(value: Any, path: tuple[str | int, ...]) -> Any:
    for token in path:
        value = value[token]
    return value


def _integers_past_64_bits(value: Any, pointer: str = "") -> list[str]:
    if type(value) is int and not -(2**63) <= value <= 2**64 - 1:
        return [pointer]
    if type(value) is dict:
        tokens = ((str(k).replace("~", "~0").replace("/", "~1"), v) for k, v in value.items())
        return [p for token, v in tokens for p in _integers_past_64_bits(v, f"{pointer}/{token}")]
    if type(value) is list:
        return [p for i, v in enumerate(value) for p in _integers_past_64_bits(v, f"{pointer}/{i}")]
    return []


@pytest.mark.usefixtures("every_read_handed_over", "python_stages")
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), framing=st.sampled_from(["sse", "jsonl", "json"]))
def test_an_integer_past_64_bits_anywhere_in_any_event_is_warned_of(
    data: st.DataObject, framing: str
) -> None:
    # Events drawn from schema.json, then integers past 64 bits put anywhere in them: in
    # place of any member or element (typed or open), or as a new member of any object.
    # However enforce then judges each event, every such integer is warned of, by frame
    # and pointer, and no other.
    sent = data.draw(st.lists(schema_events, min_size=1, max_size=5))
    for event in sent:
        for _ in range(data.draw(st.integers(0, 2))):
            big = data.draw(_BEYOND_64_BITS)
            if data.draw(st.booleans()):
                paths = _value_paths(event)
                if paths:
                    path = data.draw(st.sampled_from(paths))
                    _at(event, path[:-1])[path[-1]] = big
            else:
                path = data.draw(st.sampled_from(_object_paths(event)))
                _at(event, path)[data.draw(st.text(max_size=4))] = big
    separators = data.draw(st.sampled_from([(",", ":"), (", ", ": ")]))
    frames = [
        b" " * data.draw(st.integers(0, 2)) + json.dumps(event, separators=separators).encode()
        for event in sent
    ]
    if framing == "json":
        stream = b"[" + b",".join(frames) + b"]"
    elif framing == "sse":
        stream = b"".join(b"data:" + frame + b"\n\n" for frame in frames)
    else:
        stream = b"".join(frame + b"\n" for frame in frames)
    result = run_sync(stream, _UP_TO_ENFORCE)
    expected = [(i, p) for i, event in enumerate(sent) for p in _integers_past_64_bits(event)]
    assert sorted(_warned(result), key=str) == sorted(expected, key=str)


# -- blank bytes before the first frame (item 6) ------------------------------------------------


def test_blank_bytes_before_the_first_frame_are_not_held() -> None:
    parser = Parse(StreamContext(Options()))
    blanks = b" \r\n\t" * 16_384  # 64 KiB, ending in a tab after the last line break
    for _ in range(64):
        assert not parser.feed(blanks).events
        assert parser._head == b"\t"  # only the blanks after the last line break wait
    batch = parser.feed(b"\n" + START)
    assert [e["type"] for e in batch.events] == ["RUN_STARTED"]


def test_a_blank_prefix_longer_than_a_frame_without_a_line_break_is_the_frame_limit() -> None:
    parser = Parse(StreamContext(Options(limits=Limits(max_frame_bytes=100_000))))
    with pytest.raises(StreamRejected) as caught:
        for _ in range(10):
            parser.feed(b" " * 65_536)
    assert caught.value.code == "limit.frame-bytes"
    assert "max_frame_bytes=100000" in str(caught.value)


def test_a_long_blank_prefix_is_read_in_linear_time() -> None:
    """100 MB of blank lines before the first frame: once linear, well under a second
    (before: the prefix was re-copied on every read, 18 s)."""
    import time

    parser = Parse(StreamContext(Options()))
    blanks = b"\n" * 65_536
    started = time.process_time()
    for _ in range(1_600):
        parser.feed(blanks)
    assert [e["type"] for e in parser.feed(START).events] == ["RUN_STARTED"]
    assert time.process_time() - started < 2.0


# -- the short path: a read that is one whole `data: ` line (a live read) ----------------

_ONE_FRAME_READS = [
    b'data: {"type":"RUN_STARTED","threadId":"t-1","runId":"r-1"}\n\n',
    b'data:{"type":"TEXT_MESSAGE_START","messageId":"m-1","role":"assistant"}\n\n',
    b'data:  {"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"two spaces"}\n\n',
    b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"x",'
    b'"metadata":{"n":123456789012345678901234}}\n\n',
    b": a comment\n\n",
    b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"crlf"}\r\n\r\n',
    b'id: 7\ndata: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"with id"}\n\n',
    b"data:  \n\n",
    b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"' + b"w" * 400 + b'"}\n\n',
    b'data: {"messageId":"m-1","delta":"no type"}\n\n',
    b'data: {"type":"TEXT_MESSAGE_END","messageId":"m-1"}\n\ndata: {"type":"RUN_FINISHED",'
    b'"threadId":"t-1","runId":"r-1"}\n\n',
]
_FATAL_READS = [
    [b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1",\n\n'],
    [b'data: {"type":"CUSTOM","name":"deep","value":' + b"[" * 200 + b"]" * 200 + b"}\n\n"],
    [b"data: [1]\n\n"],
    [b'data: {"type":"TEXT_MESSAGE_CONTENT",', b'data: {"type":"RUN_FINISHED"}\n\n'],
]


def _outcome(reads: list[bytes]) -> tuple[Any, ...]:
    result = run_sync(reads, Pipeline())
    found = [(d.event_index, d.code, d.pointer, d.message) for d in result.diagnostics]
    verdict = result.verdict
    return verdict.outcome, verdict.code, verdict.event_index, verdict.message, result.events, found


@pytest.mark.parametrize(
    "reads",
    [_ONE_FRAME_READS[:cut] for cut in range(len(_ONE_FRAME_READS) + 1)]
    + [_ONE_FRAME_READS[:4] + fatal for fatal in _FATAL_READS],
)
def test_the_short_path_judges_a_read_as_the_general_path_does(
    reads: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every read below is one frame: those that are one whole `data: ` line take parse's
    # short path, the rest (no space, a CR, another field, blanks, a long frame, no type,
    # not JSON, two frames) the general one. Cut after any of them, the stream is judged
    # as the general path alone judges the same reads, to the diagnostic; so is one that
    # ends with a fatal read (not JSON, too deep, not an object, cut by the next read).
    short = _outcome(reads)
    monkeypatch.setattr(Parse, "_one_event", lambda self, chunk: None)
    assert short == _outcome(reads)


def test_a_whole_data_line_in_a_read_skips_the_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    buffered: list[bytes] = []  # reads the general path took, on either core
    delimited, framed = Parse._feed_delimited, Parse._feed_framed

    def spy_delimited(self: Parse, chunk: bytes, *rest: Any) -> Batch:
        buffered.append(chunk)
        return delimited(self, chunk, *rest)

    def spy_framed(self: Parse, framer: Any, chunk: bytes) -> Batch:
        buffered.append(chunk)
        return framed(self, framer, chunk)

    monkeypatch.setattr(Parse, "_feed_delimited", spy_delimited)
    monkeypatch.setattr(Parse, "_feed_framed", spy_framed)
    reads = [sse([event]) for event in EVENTS]
    events, _ = decode([b"\n", *reads])
    assert events == EVENTS
    assert buffered == [], "a read of one whole data line goes round the buffer"
    events, _ = decode([b"data:" + reads[0][6:], *reads[1:]])  # no space: the general path
    assert events == EVENTS
    assert len(buffered) == 1


# -- the frame limit does not depend on where the reads were cut ---------------------------------

_LIMIT = 100


def _delivered(reads: list[bytes], framing: str | None, limit: int = _LIMIT) -> tuple[Any, ...]:
    """What parse delivers from ``reads`` (events, their indices), its rejection (code and event
    index) and its findings: everything a verdict depends on."""
    parser = Parse(StreamContext(Options(framing=framing, limits=Limits(max_frame_bytes=limit))))
    events: list[Any] = []
    indices: list[int] = []
    refused: tuple[str, int | None] | None = None
    try:
        feed_all(parser, reads, events, indices)
    except StreamRejected as rejection:
        refused = (rejection.code, rejection.event_index)
        if rejection.kept is not None:
            events += rejection.kept.events
            indices += rejection.kept.indices
    found = [(d.code, d.event_index) for d in parser.ctx.diagnostics]
    return events, indices, refused, found


def _every_way(data: bytes) -> dict[str, list[bytes]]:
    """``data`` whole, in one-byte reads, and in random reads (1 to 40 bytes)."""
    ways = {"whole": [data], "one byte": [data[i : i + 1] for i in range(len(data))]}
    for seed in range(4):
        draw, reads, start = random.Random(seed), [], 0
        while start < len(data):
            size = draw.randint(1, 40)
            reads.append(data[start : start + size])
            start += size
        ways[f"random {seed}"] = reads
    return ways


def _payload_of(size: int, lines: int = 1) -> list[bytes]:
    """An event's JSON of exactly ``size`` bytes once its ``lines`` are joined with LF."""
    head, tail = b'{"type":"RAW",', b'"event":"'
    filler = size - len(head) - len(tail) - 2 - (lines - 1) - max(0, lines - 2)
    last = tail + b"x" * filler + b'"}'
    parts = [head + last] if lines == 1 else [head] + [b" "] * (lines - 2) + [last]
    assert len(b"\n".join(parts)) == size
    return parts


def _sse_event(parts: list[bytes], extra: bool) -> bytes:
    lines = [b"data: " + part for part in parts]
    if extra:  # fields that carry nothing: a comment, an event name, an id
        lines = [b": a comment", b"event: agui", *lines, b"id: 7"]
    return b"\n".join(lines) + b"\n\n"


_FIRST = {"type": "RUN_STARTED"}
_LAST = {"type": "RUN_FINISHED"}


def _streams_around(frame: bytes, framing: str) -> dict[str, bytes]:
    """``frame`` after a small one and before another; and as the stream's end, cut off before
    its boundary (an SSE event then never completes; a last JSON line needs no newline)."""
    first, last = streams.encode([_FIRST], framing), streams.encode([_LAST], framing)
    boundary = b"\n\n" if framing == "sse" else b"\n"
    return {"between": first + frame + last, "cut off": first + frame.removesuffix(boundary)}


_SHAPES = {
    "sse, one data line": lambda size: _sse_event(_payload_of(size), extra=False),
    "sse, three data lines": lambda size: _sse_event(_payload_of(size, 3), extra=False),
    "sse, fields and a comment": lambda size: _sse_event(_payload_of(size, 2), extra=True),
    "jsonl": lambda size: b"".join(_payload_of(size)) + b"\n",
}


@pytest.mark.parametrize("size", [_LIMIT - 1, _LIMIT, _LIMIT + 1])
@pytest.mark.parametrize("shape", list(_SHAPES))
def test_the_frame_limit_judges_a_frame_alike_however_the_reads_cut_it(
    shape: str, size: int
) -> None:
    """A frame's payload (what the JSON decoder is handed: an SSE event's data lines joined with
    LF, or a JSON line) is what max_frame_bytes measures, whole or still arriving: at the limit
    it passes, one byte past it the stream is refused at its index, the frames before it
    delivered, whether the frame came whole, byte by byte or in random reads."""
    framing = "jsonl" if shape == "jsonl" else "sse"
    frame = _SHAPES[shape](size)
    for name, data in _streams_around(frame, framing).items():
        whole = _delivered([data], framing)
        events, indices, refused, _ = whole
        if size <= _LIMIT and name == "between":
            assert refused is None and len(events) == 3, whole
        elif size <= _LIMIT:  # SSE warns of the cut-off event; a last JSON line is decoded
            assert refused is None and len(events) == (1 if framing == "sse" else 2), whole
        else:
            assert refused == ("limit.frame-bytes", 1), whole
            assert (events, indices) == ([_FIRST], [0]), whole
        for way, reads in _every_way(data).items():
            assert _delivered(reads, framing) == whole, f"{name}, {way}"


@pytest.mark.parametrize("framing", ["sse", "jsonl"])
def test_complete_frames_before_an_oversize_tail_in_the_same_read_are_delivered(
    framing: str,
) -> None:
    """A read ending in the start of a frame already past the limit: the frames it completes
    are decoded and delivered first, and the rejection names the oversize frame's index."""
    events = [_FIRST, {"type": "STEP_STARTED", "stepName": "s"}, _LAST]
    complete = streams.encode(events, framing)
    tail = b"data: " + b"x" * 300 if framing == "sse" else b"y" * 300
    parser = Parse(StreamContext(Options(limits=Limits(max_frame_bytes=_LIMIT))))
    with pytest.raises(StreamRejected) as raised:
        parser.feed(complete + tail)
    assert raised.value.code == "limit.frame-bytes"
    assert raised.value.event_index == 3
    assert raised.value.kept is not None
    assert raised.value.kept.events == events
    assert raised.value.kept.indices == [0, 1, 2]
    # A whole frame over the limit among them is still the one refused.
    big = {"type": "RAW", "event": "x" * 200}
    parser = Parse(StreamContext(Options(limits=Limits(max_frame_bytes=_LIMIT))))
    with pytest.raises(StreamRejected) as raised:
        parser.feed(streams.encode([_FIRST, big, _LAST], framing) + tail)
    assert (raised.value.code, raised.value.event_index) == ("limit.frame-bytes", 1)
    assert raised.value.kept is not None and raised.value.kept.events == [_FIRST]


@pytest.mark.parametrize(
    "endless",
    [
        b"data: " + b"x" * 64,  # one data line that never ends
        b"data: x\n" * 8,  # data lines, one character each
        b"data:\n" * 8,  # empty data lines: one LF of payload each
        b": " + b"c" * 64,  # a comment that never ends
        b"event: " + b"e" * 64,  # a field that carries nothing
        b": c\n" * 16,  # comment lines
    ],
    ids=["data", "short data lines", "empty data lines", "comment", "field", "comment lines"],
)
def test_an_endless_sse_event_is_cut_off_within_four_times_the_limit(endless: bytes) -> None:
    """Whatever an endless event is made of, parse holds at most 4 x max_frame_bytes + 64 of it
    (plus one read) before refusing it."""
    parser = Parse(StreamContext(Options(framing="sse", limits=Limits(max_frame_bytes=_LIMIT))))
    fed = 0
    with pytest.raises(StreamRejected) as raised:
        for _ in range(10_000):
            parser.feed(endless)
            fed += len(endless)
    assert raised.value.code == "limit.frame-bytes"
    assert fed <= 4 * _LIMIT + 64


def test_a_blank_payload_past_the_limit_is_refused_whole_as_in_pieces() -> None:
    """A JSON line of blanks is skipped, not decoded, but it is a payload: past the limit it
    is refused whether it came in one read or held across several."""
    data = streams.encode([_FIRST], "jsonl") + b" " * (_LIMIT + 1) + b"\n"
    whole = _delivered([data], "jsonl")
    assert whole[2] == ("limit.frame-bytes", 1)
    for way, reads in _every_way(data).items():
        assert _delivered(reads, "jsonl") == whole, way


@pytest.mark.parametrize("framing", ["sse", "jsonl"])
@pytest.mark.parametrize("blanks", [_LIMIT + 1, 4 * _LIMIT + 64, 4 * _LIMIT + 65])
def test_blanks_before_the_first_frame_are_judged_alike_however_the_reads_cut_them(
    framing: str, blanks: int
) -> None:
    """Blanks with no line break before the first frame, while the framing is not yet known:
    held up to an SSE event's bound, then counted as the framing found counts them (an SSE
    line of blanks and a field is no payload; a JSON line's blanks are)."""
    frame = streams.encode([_FIRST], framing)
    data = b" " * blanks + frame + streams.encode([_LAST], framing)
    whole = _delivered([data], None)
    for way, reads in _every_way(data).items():
        assert _delivered(reads, None) == whole, way
    refused = framing == "jsonl" or blanks + len(frame) - 2 > 4 * _LIMIT + 64
    assert (whole[2] is not None) is refused, whole


@pytest.mark.parametrize("before", [b"", b"data: {}\n\n\n"], ids=["first", "after a blank line"])
@pytest.mark.parametrize("extra", [0, 1])
def test_an_sse_event_at_its_bound_as_sent_is_judged_alike_however_the_reads_cut_it(
    extra: int, before: bytes
) -> None:
    """An event of 4 x max_frame_bytes + 64 bytes as sent (a small payload and a long comment)
    passes in any reads, the LFs around its lines not counted (a third LF after a boundary, the
    LF after its last line: either side of a boundary, depending on the reads); one byte more
    is refused, in any reads."""
    head = b'data: {"type":"RUN_STARTED"}\n: '
    event = head + b"c" * (4 * _LIMIT + 64 - len(head) + extra)
    data = before + event + b"\n\n" + streams.encode([_LAST], "sse")
    whole = _delivered([data], "sse")
    at = 1 if before else 0
    assert whole[2] == (("limit.frame-bytes", at) if extra else None), whole
    for way, reads in _every_way(data).items():
        assert _delivered(reads, "sse") == whole, way
