"""The HTTP + Protobuf binding (``/spec/1.1/basic/transports/http-protobuf``).

The wire schema against its sources, the framing at every byte boundary and on
each kind of bad frame, the decoded events against the SSE path's, negotiation
against a real server on 127.0.0.1, and the corpus through the reference
package (``@ag-ui/proto`` 1.0.0, run by node; skipped with its reason without it).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from agui_pipeline import Outcome, Pipeline, ProtoSink, RunResult
from agui_pipeline._proto import MEDIA_TYPE, admits, agui_pb2, generate
from agui_pipeline._proto.codec import decode, encode, encode_frames
from agui_pipeline.cli import main as cli_main
from agui_pipeline.http.client import HttpAgent
from agui_pipeline.http.serve import Replay, ReplayServer
from agui_pipeline.subscribers import encode_sse
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import SpecArtifacts, child_prints, spec_artifacts

HERE = Path(__file__).resolve().parent
REFERENCE_DIR = HERE / ".npm"
REFERENCE_PACKAGE = "@ag-ui/proto@1.0.0"

RUN: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t-proto", "runId": "r-1", "timestamp": 1700000000000},
    {
        "type": "STATE_SNAPSHOT",
        "snapshot": {"plan": {"steps": ["a", "b"], "done": False, "score": 2.5, "n": 3}},
        "metadata": {"trace": {"id": "x-1"}},
        "rawEvent": ["provider", {"kind": None}],
    },
    {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/plan/steps/-", "value": "c"}]},
    {"type": "TEXT_MESSAGE_START", "messageId": "m-1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "Grüße, "},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "world ✓"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m-1"},
    {"type": "CUSTOM", "name": "progress", "value": {"percent": 50}},
    {"type": "RUN_FINISHED", "threadId": "t-proto", "runId": "r-1", "result": {"ok": True}},
]
INPUT: dict[str, Any] = {"threadId": "t-proto", "runId": "r-1", "messages": []}


def run(data: bytes | list[bytes], **settings: Any) -> RunResult:
    chunks = [data] if isinstance(data, bytes) else data

    async def source() -> Any:
        for chunk in chunks:
            yield chunk

    pipeline = Pipeline(framing="proto", **settings)
    return anyio.run(lambda: pipeline.run(source()))


def codes(result: RunResult) -> list[str]:
    return [diagnostic.code for diagnostic in result.diagnostics]


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


# -- the wire schema ------------------------------------------------------------


def needs_reference() -> SpecArtifacts:
    """schema.json and proto-freeze.txt (AGUI_SPEC_DIR; absent, the test skips)."""
    return spec_artifacts()


def test_committed_proto_is_what_the_generator_writes() -> None:
    spec = needs_reference()
    generated = generate.generate(spec.schema_path, spec.proto_freeze)
    committed = generate.PROTO_PATH.read_text(encoding="utf-8")
    assert committed == generated, (
        "agui.proto drifted from schema.json + proto-freeze.txt: run "
        "python -m agui_pipeline._proto.generate --compile"
    )


def test_compiled_module_has_every_frozen_number() -> None:
    """agui_pb2.py was compiled from the committed .proto: each frozen slot, its number."""
    spec = needs_reference()
    reserved = {
        (line.split()[0], int(line.split()[2].rstrip(";")))
        for line in _reserved_lines(generate.PROTO_PATH.read_text(encoding="utf-8"))
    }
    for slot in generate.read_freeze(spec.proto_freeze.read_text(encoding="utf-8")):
        if (slot.message, slot.number) in reserved:
            continue
        if slot.message in agui_pb2.DESCRIPTOR.enum_types_by_name:
            enum = agui_pb2.DESCRIPTOR.enum_types_by_name[slot.message]
            assert enum.values_by_name[slot.name].number == slot.number
            continue
        outer, _, inner = slot.message.partition(".")
        message = agui_pb2.DESCRIPTOR.message_types_by_name[outer]
        if inner:
            message = message.nested_types_by_name[inner]
        assert message.fields_by_name[slot.name].number == slot.number, slot


def _reserved_lines(text: str) -> list[str]:
    """``Message reserved N;`` for each reserved number (none today; kept honest if any)."""
    found, current = [], ""
    for line in text.splitlines():
        if line.startswith(("message ", "enum ")):
            current = line.split()[1]
        elif line.strip().startswith("reserved "):
            found.append(f"{current} {line.strip()}")
    return found


def test_open_payloads_follow_the_reference_wire() -> None:
    """Objects open by key travel as Struct, any JSON value as Value (``@ag-ui/proto``)."""
    fields = agui_pb2.DESCRIPTOR.message_types_by_name
    metadata = fields["BaseEvent"].fields_by_name["metadata"].message_type
    assert metadata is not None and metadata.full_name == "google.protobuf.Struct"
    for message, field in [
        ("BaseEvent", "raw_event"),
        ("StateSnapshotEvent", "snapshot"),
        ("CustomEvent", "value"),
        ("JsonPatchOperation", "value"),
        ("Interrupt", "metadata"),
    ]:
        kind = fields[message].fields_by_name[field].message_type
        assert kind is not None and kind.full_name == "google.protobuf.Value", (message, field)


# -- framing ----------------------------------------------------------------------


def test_every_byte_boundary_yields_the_same_events() -> None:
    body = encode_frames(RUN)
    whole = run(body)
    assert whole.verdict.outcome is Outcome.COMPLETED and whole.events == RUN
    for cut in range(1, len(body)):
        result = run([body[:cut], body[cut:]])
        assert result.events == RUN, cut
        assert codes(result) == codes(whole), cut
    one_byte_each = run([body[i : i + 1] for i in range(len(body))])
    assert one_byte_each.events == RUN


def test_several_frames_in_one_chunk_keep_their_indices() -> None:
    pipeline = Pipeline(framing="proto")
    from agui_pipeline.stages.parse import Parse

    decoder = Parse(pipeline.context())
    batch = decoder.feed(encode_frames(RUN[:3]) + encode_frames(RUN[3:5])[:-1])
    assert batch.events == RUN[:4] and batch.indices == [0, 1, 2, 3]
    rest = decoder.feed(encode_frames(RUN[4:5])[-1:]) + decoder.finish()
    assert rest.events == [RUN[4]] and rest.indices == [4]


def test_a_body_ending_mid_frame_is_a_truncated_run() -> None:
    body = encode_frames(RUN)
    result = run(body[:-3])
    assert result.verdict.outcome is Outcome.TRUNCATED
    assert result.events == RUN[:-1]
    assert "parse.proto-incomplete-frame" in codes(result)
    header_only = run(encode_frames(RUN[:1]) + b"\x00\x00")
    assert header_only.verdict.outcome is Outcome.TRUNCATED
    assert "parse.proto-incomplete-frame" in codes(header_only)


def test_a_frame_that_does_not_decode_is_fatal_with_its_index() -> None:
    body = encode_frames(RUN[:2]) + frame(b"\xff\xff\xff") + encode_frames(RUN[2:])
    result = run(body)
    verdict = result.verdict
    assert verdict.outcome is Outcome.REJECTED
    assert verdict.code == "parse.proto-frame"
    assert verdict.event_index == 2
    assert verdict.error is not None and verdict.error.spec == (
        "/spec/1.1/basic/transports/http-protobuf"
    )
    assert "frame 2" in str(verdict.message) and "do not decode" in str(verdict.message)
    assert result.events == RUN[:2]  # the frames before it are delivered


def test_a_mismatched_type_is_fatal() -> None:
    envelope = agui_pb2.Event()
    envelope.run_started.base_event.type = agui_pb2.RUN_FINISHED
    mismatched = run(frame(envelope.SerializeToString()))
    assert mismatched.verdict.code == "parse.proto-frame"
    assert "base_event.type is RUN_FINISHED" in str(mismatched.verdict.message)


def field(number: int, wire_type: int, payload: bytes) -> bytes:
    """One field's bytes: its tag, then ``payload`` (a length prefix added for wire type 2)."""
    tag = bytes(varint(number << 3 | wire_type))
    return tag + (bytes(varint(len(payload))) + payload if wire_type == 2 else payload)


def varint(value: int) -> bytearray:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return out


def arm(number: int, body: bytes) -> bytes:
    """An envelope holding ``body`` in arm ``number``."""
    return field(number, 2, body)


def base(event_type: int) -> bytes:
    """A ``base_event`` (field 1 of every event message) declaring ``event_type``."""
    return field(1, 2, field(1, 0, bytes(varint(event_type))))


CUSTOM_ARM = agui_pb2.Event.DESCRIPTOR.fields_by_name["custom"].number
CONTENT_ARM = agui_pb2.Event.DESCRIPTOR.fields_by_name["text_message_content"].number
SNAPSHOT_ARM = agui_pb2.Event.DESCRIPTOR.fields_by_name["state_snapshot"].number

WRONG_WIRE_TYPES = [
    pytest.param(field(1, 0, b"\x01"), "text_message_start", id="an envelope arm as a varint"),
    pytest.param(
        arm(
            CONTENT_ARM,
            base(agui_pb2.TEXT_MESSAGE_CONTENT) + field(2, 2, b"m") + field(3, 0, b"\x05"),
        ),
        "text_message_content.delta",
        id="a string as a varint",
    ),
    pytest.param(
        arm(CONTENT_ARM, field(1, 5, b"\x00\x00\x00\x00") + field(2, 2, b"m")),
        "text_message_content.base_event",
        id="a message as a fixed32",
    ),
    pytest.param(
        arm(
            CUSTOM_ARM,
            base(agui_pb2.CUSTOM) + field(2, 2, b"n") + field(3, 2, field(2, 0, b"\x05")),
        ),
        "custom.value.number_value",
        id="a Value's double as a varint",
    ),
    pytest.param(
        arm(
            SNAPSHOT_ARM,
            base(agui_pb2.STATE_SNAPSHOT)
            + field(
                2,
                2,
                field(5, 2, field(1, 2, field(1, 0, b"\x05") + field(2, 2, field(4, 0, b"\x01")))),
            ),
        ),
        "state_snapshot.snapshot.struct_value.fields",
        id="a Struct entry whose key is a varint",
    ),
]


@pytest.mark.parametrize(("payload", "where"), WRONG_WIRE_TYPES)
def test_a_known_field_with_the_wrong_wire_type_is_fatal(payload: bytes, where: str) -> None:
    """Bytes that do not decode as the field protobuf's parser keeps as unknown, silently:
    they are not the message the schema names, so the frame is malformed (the spec's
    Wire schema: fatal), never an arm or a field this build predates."""
    result = run(encode_frames(RUN[:2]) + frame(payload) + encode_frames(RUN[2:]))
    verdict = result.verdict
    assert verdict.outcome is Outcome.REJECTED, codes(result)
    assert verdict.code == "parse.proto-frame" and verdict.event_index == 2
    assert verdict.error is not None and verdict.error.spec == (
        "/spec/1.1/basic/transports/http-protobuf"
    )
    assert f"expected {where}" in str(verdict.message), verdict.message
    assert "parse.proto-unknown-arm" not in codes(result)
    assert result.events == RUN[:2]


def test_check_fails_on_a_known_arm_with_the_wrong_wire_type(tmp_path: Path) -> None:
    path = tmp_path / "run.bin"
    path.write_bytes(encode_frames(RUN[:1]) + frame(field(1, 0, b"\x01")) + encode_frames(RUN[1:]))
    assert cli_main(["check", "--framing", "proto", str(path)]) != 0


def test_a_hostile_length_is_refused_before_it_is_buffered() -> None:
    result = run([b"\xff\xff\xff\xf0", b"\x00" * 64])
    assert result.verdict.code == "limit.frame-bytes"


def test_nesting_past_the_decoders_depth_is_fatal_not_a_crash() -> None:
    """upb stops at 100 message levels, about 50 levels of JSON inside a Value: a narrowing."""
    deep: Any = "x"
    for _ in range(60):
        deep = [deep]
    result = run(encode_frames([*RUN[:1], {"type": "CUSTOM", "name": "n", "value": deep}]))
    assert result.verdict.code == "parse.proto-frame" and result.verdict.event_index == 1
    assert "MaxDepth" in str(result.verdict.message)


@given(
    payloads=st.lists(st.binary(max_size=40), max_size=4),
    tail=st.binary(max_size=8),
    cut=st.integers(0, 200),
)
def test_hostile_frames_get_a_verdict_never_an_exception(
    payloads: list[bytes], tail: bytes, cut: int
) -> None:
    """Well-framed garbage (so the bytes reach the decoder), then perhaps a partial frame."""
    body = encode_frames(RUN[:1]) + b"".join(map(frame, payloads)) + tail
    result = run([body[:cut], body[cut:]])
    assert result.verdict.outcome in (Outcome.COMPLETED, Outcome.REJECTED, Outcome.TRUNCATED)


@given(
    which=st.integers(0, len(RUN) - 1),
    changes=st.lists(
        st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=3
    ),
)
def test_a_valid_frame_with_bytes_changed_gets_a_verdict_never_an_exception(
    which: int, changes: list[tuple[int, int]]
) -> None:
    """Garbage that still parses as protobuf (wrong wire types, odd doubles, unknown arms)
    reaches the slow paths that judge it: each gives a verdict."""
    payload = bytearray(encode(RUN[which]))
    for position, byte in changes:
        payload[position % len(payload)] = byte
    result = run(encode_frames(RUN[:1]) + frame(bytes(payload)))
    assert result.verdict.outcome in (Outcome.COMPLETED, Outcome.REJECTED, Outcome.TRUNCATED)


def test_an_unknown_envelope_arm_is_dropped_with_a_warning() -> None:
    future = b"\xc2\x02\x02\x08\x01"  # field 40, length-delimited: an arm this build predates
    body = encode_frames(RUN[:1]) + frame(future) + encode_frames(RUN[1:])
    result = run(body)
    assert result.verdict.outcome is Outcome.COMPLETED
    assert result.events == RUN
    warning = next(d for d in result.diagnostics if d.code == "parse.proto-unknown-arm")
    assert warning.event_index == 1 and "arm 40" in warning.message


def test_an_empty_frame_is_an_event_with_no_arm_dropped_with_a_warning() -> None:
    """``@ag-ui/proto`` 1.0.0 writes an empty frame for an event type it lacks: an Event
    with no arm this build knows, dropped with a warning like any other (processing.mdx)."""
    body = encode_frames(RUN[:1]) + frame(b"") + encode_frames(RUN[1:])
    result = run(body)
    assert result.verdict.outcome is Outcome.COMPLETED
    assert result.events == RUN
    [warning] = [d for d in result.diagnostics if d.code == "parse.proto-unknown-arm"]
    assert warning.event_index == 1 and "empty" in warning.message
    assert warning.spec == "/spec/1.1/basic/transports/http-protobuf"


def test_a_content_part_of_an_unknown_arm_is_dropped_with_a_warning() -> None:
    envelope = agui_pb2.Event()
    snapshot = envelope.messages_snapshot
    snapshot.base_event.type = agui_pb2.MESSAGES_SNAPSHOT
    message = snapshot.messages.add(id="u", role="user")
    message.content_parts.add().text.text = "hi"
    message.content_parts.add()  # no arm this build knows: a later part kind
    result = run(encode_frames(RUN[:1]) + frame(envelope.SerializeToString()))
    assert result.events[1:] == [
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{"id": "u", "role": "user", "content": [{"type": "text", "text": "hi"}]}],
        }
    ]
    warning = next(d for d in result.diagnostics if d.code == "parse.proto-unknown-arm")
    assert warning.pointer == "/messages/0/content/1"


def test_a_field_the_wire_schema_predates_is_skipped_silently() -> None:
    start = agui_pb2.Event.FromString(encode(RUN[3])).text_message_start.SerializeToString()
    start += b"\x92\x03\x03new"  # field 50 of TextMessageStartEvent: unknown to this build
    later = b"\x0a" + bytes([len(start)]) + start + b"\xa2\x06\x03new"  # and envelope field 100
    body = encode_frames(RUN[:3]) + frame(later) + encode_frames(RUN[4:])
    result = run(body)
    assert result.events == RUN and result.verdict.outcome is Outcome.COMPLETED
    assert codes(result) == codes(run(encode_frames(RUN)))  # nothing said about it


NON_FINITE_PLACES: list[tuple[dict[str, Any], str]] = [
    ({"type": "CUSTOM", "name": "n", "value": "X"}, "/value"),
    (
        {"type": "STATE_SNAPSHOT", "snapshot": {"plan": {"score": [1, "X"]}}},
        "/snapshot/plan/score/1",
    ),
    (
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": "X"}]},
        "/delta/0/value",
    ),
    ({"type": "CUSTOM", "name": "n", "value": 1, "metadata": {"cost": "X"}}, "/metadata/cost"),
    ({"type": "RAW", "event": {"n": 1}, "rawEvent": "X"}, "/rawEvent"),
]


def placed(value: Any, number: Any) -> Any:
    """``value`` with each ``"X"`` in it replaced by ``number``."""
    if value == "X":
        return number
    if isinstance(value, dict):
        return {key: placed(item, number) for key, item in value.items()}
    if isinstance(value, list):
        return [placed(item, number) for item in value]
    return value


def sse_of(events: list[dict[str, Any]], literal: bytes) -> bytes:
    """The events as SSE, each ``"X"`` spelled as the JSON number ``literal``."""
    return b"".join(
        b"data: " + json.dumps(event).encode().replace(b'"X"', literal) + b"\n\n"
        for event in events
    )


@pytest.mark.parametrize(("event", "pointer"), NON_FINITE_PLACES)
@pytest.mark.parametrize("number", [float("inf"), float("-inf")])
def test_an_infinite_double_is_judged_as_the_same_number_is_on_sse(
    event: dict[str, Any], pointer: str, number: float
) -> None:
    """A double past range is what ``1e999`` reads as on SSE: the same verdict, code, frame
    and pointer there and here (processing.mdx, Every transport answers the same way)."""
    events = [*RUN[:1], placed(event, number), *RUN[1:]]
    literal = b"1e999" if number > 0 else b"-1e999"
    via_sse = anyio.run(Pipeline().run, [sse_of([*RUN[:1], event, *RUN[1:]], literal)])
    via_proto = run(encode_frames(events))
    for verdict in (via_sse.verdict, via_proto.verdict):
        assert verdict.outcome is Outcome.REJECTED
        assert (verdict.code, verdict.event_index, verdict.pointer) == (
            "parse.number-range",
            1,
            pointer,
        ), verdict.message
    assert via_proto.events == via_sse.events == RUN[:1]


@pytest.mark.parametrize(("event", "pointer"), NON_FINITE_PLACES)
def test_a_nan_double_is_rejected_with_its_pointer(event: dict[str, Any], pointer: str) -> None:
    """JSON has no NaN (RFC 8259 §6): SSE can only spell it as a token that is not JSON
    (parse.not-json). A protobuf double can hold one, so the verdict is the same, with the
    pointer the binary wire can give: the number has no value to deliver."""
    result = run(encode_frames([*RUN[:1], placed(event, float("nan")), *RUN[1:]]))
    verdict = result.verdict
    assert verdict.outcome is Outcome.REJECTED
    assert (verdict.code, verdict.event_index, verdict.pointer) == (
        "parse.number-range",
        1,
        pointer,
    ), verdict.message
    assert "NaN" in str(verdict.message) and result.events == RUN[:1]


def test_a_non_finite_double_the_event_does_not_carry_is_no_rejection() -> None:
    """A user message's content is its parts: an ``activity_content`` beside them is not
    decoded into the event, so a NaN inside it is nothing the application could get."""
    envelope = agui_pb2.Event()
    snapshot = envelope.messages_snapshot
    snapshot.base_event.type = agui_pb2.MESSAGES_SNAPSHOT
    message = snapshot.messages.add(id="u", role="user")
    message.content_parts.add().text.text = "hi"
    message.activity_content.update({"ignored": float("nan")})
    snapshot_frame = frame(envelope.SerializeToString())
    result = run(encode_frames(RUN[:1]) + snapshot_frame + encode_frames(RUN[-1:]))
    assert result.verdict.outcome is Outcome.COMPLETED, result.verdict.message
    assert result.events[1]["messages"] == [  # type: ignore[typeddict-item]
        {"id": "u", "role": "user", "content": [{"type": "text", "text": "hi"}]}
    ]


def test_an_unrecognised_outcome_is_stripped_by_enforce_not_rejected() -> None:
    finished = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "nap"}}
    assert decode(encode(finished)) == finished  # survives decoding
    result = run(encode_frames([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, finished]))
    assert result.verdict.outcome is Outcome.COMPLETED
    assert "enforce.stripped" in codes(result)
    assert "outcome" not in result.events[-1]


def test_outcomes_and_messages_regain_their_json_shapes() -> None:
    events: list[dict[str, Any]] = [
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {"type": "interrupt", "interrupts": [{"id": "i-1", "reason": "approval"}]},
        },
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {"id": "u", "role": "user", "content": [{"type": "text", "text": "hi"}]},
                {
                    "id": "a",
                    "role": "assistant",
                    "content": "ok",
                    "toolCalls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                {"id": "act", "role": "activity", "activityType": "s", "content": {"q": 1}},
                {
                    "id": "img",
                    "role": "user",
                    "content": [
                        {"type": "image", "source": {"type": "url", "value": "https://x/y.png"}}
                    ],
                },
            ],
        },
        {"type": "STATE_DELTA", "delta": [{"op": "move", "from": "/a", "path": "/b"}]},
    ]
    for event in events:
        assert decode(encode(event)) == event


def test_decoded_events_are_the_dicts_the_sse_path_yields() -> None:
    sse = anyio.run(Pipeline().run, encode_sse(RUN))
    proto = run(encode_frames(RUN))
    assert proto.events == sse.events
    # Same types too (3 stays an int, 2.5 a float); key order is the map's (the spec says so).
    snapshots: list[Any] = [r.events[1]["snapshot"] for r in (proto, sse)]  # type: ignore[typeddict-item]
    plan_types = [{k: type(v) for k, v in snapshot["plan"].items()} for snapshot in snapshots]
    assert plan_types[0] == plan_types[1]
    assert codes(proto) == codes(sse)
    assert proto.transport == "proto"


def test_proto_sink_writes_frames_the_decoder_reads() -> None:
    written: list[bytes] = []
    result = anyio.run(Pipeline(sinks=[ProtoSink(written.append)]).run, encode_sse(RUN))
    assert result.verdict.outcome is Outcome.COMPLETED
    assert run(b"".join(written)).events == RUN


def test_check_reads_a_protobuf_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.bin"
    path.write_bytes(encode_frames(RUN))
    assert cli_main(["check", "--framing", "proto", str(path)]) == 0
    path.write_bytes(encode_frames(RUN)[:-2])
    assert cli_main(["check", "--framing", "proto", str(path)]) != 0
    assert "proto-incomplete-frame" in capsys.readouterr().out


# -- negotiation --------------------------------------------------------------------


def test_accept_admission() -> None:
    assert admits(f"{MEDIA_TYPE}, text/event-stream")
    assert admits("*/*") and admits("application/*")  # a wildcard admits it too
    assert not admits("text/event-stream")
    assert not admits(f"{MEDIA_TYPE};q=0, text/event-stream")
    assert admits(f"text/event-stream;q=1, {MEDIA_TYPE};q=0.1")  # qualities are not compared


@pytest.mark.anyio
async def test_binary_client_reads_protobuf_from_a_server_that_speaks_it() -> None:
    with ReplayServer(Replay(RUN, proto=True, split=3)) as server:
        async with HttpAgent(server.url, binary=True) as agent:
            result = await agent.run(INPUT)
        accept = server.replay.requests[-1][0]["accept"]
    assert result.transport == "http+proto"
    assert result.events == RUN and result.verdict.outcome is Outcome.COMPLETED
    assert accept == f"{MEDIA_TYPE}, text/event-stream" and "*" not in accept


@pytest.mark.anyio
async def test_binary_client_reads_sse_from_a_server_that_does_not() -> None:
    with ReplayServer(Replay(RUN)) as server:
        async with HttpAgent(server.url, binary=True) as agent:
            result = await agent.run(INPUT)
    assert result.transport == "http+sse"
    assert result.events == RUN and result.verdict.outcome is Outcome.COMPLETED


@pytest.mark.anyio
async def test_a_proto_server_answers_sse_to_a_client_that_did_not_ask() -> None:
    with ReplayServer(Replay(RUN, proto=True)) as server:
        async with HttpAgent(server.url) as agent:
            result = await agent.run(INPUT)
        accept = server.replay.requests[-1][0]["accept"]
    assert accept == "text/event-stream"
    assert result.transport == "http+sse" and result.events == RUN


def test_check_asks_an_agent_for_protobuf(capsys: pytest.CaptureFixture[str]) -> None:
    # Served under the ids check asks for, as a producer answers (lint.run-identity).
    with ReplayServer(Replay(RUN, proto=True, echo_ids=True)) as server:
        assert cli_main(["check", "--framing", "proto", server.url]) == 0
        assert "(http+proto)" in capsys.readouterr().out
        assert cli_main(["check", server.url]) == 0
        assert "(http+sse)" in capsys.readouterr().out


# -- the reference package ----------------------------------------------------------


def reference_available() -> str | None:
    """Why the reference package cannot run here, or ``None`` (installing it on first use)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node/npm not found: the @ag-ui/proto cross-check is skipped"
    if not (REFERENCE_DIR / "node_modules" / "@ag-ui" / "proto").is_dir():
        REFERENCE_DIR.mkdir(exist_ok=True)
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent", REFERENCE_PACKAGE],
            cwd=REFERENCE_DIR,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            return f"npm install {REFERENCE_PACKAGE} failed: {done.stderr.strip()[-300:]}"
    return None


def reference(mode: str, items: list[Any]) -> list[dict[str, Any]]:
    done = subprocess.run(
        ["node", str(HERE / "proto_reference.mjs"), str(REFERENCE_DIR), mode],
        input=json.dumps(items),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answer: list[dict[str, Any]] = json.loads(done.stdout)
    return answer


def corpus_streams() -> list[tuple[str, list[Any]]]:
    return [
        (path.stem, json.loads(path.read_text(encoding="utf-8"))["stream"])
        for path in spec_artifacts().fixtures()
    ]


def test_corpus_round_trips_through_the_reference_package() -> None:
    reason = reference_available()
    if reason is not None:
        pytest.skip(reason)
    # The corpus, and this file's run: it carries what the corpus does not (a timestamp,
    # metadata, rawEvent, numbers of both kinds in open JSON).
    streams = [*corpus_streams(), ("open-payloads", RUN)]
    events = [event for _, stream in streams for event in stream]
    # What the binary wire carries unchanged is the reference's say, not this codec's: an
    # event its own encode-then-decode gives back as it was (the spec's narrowing aside —
    # unmodelled members, types with no arm, values the wire types cannot hold).
    frames = [answer.get("frame") for answer in reference("encode", events)]
    back = reference("decode", [f for f in frames if f is not None])
    carried: dict[int, bytes] = {}
    decoded = iter(back)
    for position, (event, encoded) in enumerate(zip(events, frames, strict=True)):
        if encoded is not None and next(decoded).get("event") == event:
            carried[position] = base64.b64decode(encoded)
    assert len(carried) > 200, "the reference carries most of the corpus unchanged"
    # Their frames, our decoder: the events, verdict and diagnostics the SSE path yields.
    position, compared = 0, 0
    for name, stream in streams:
        span = range(position, position + len(stream))
        position += len(stream)
        if not all(index in carried for index in span):
            continue
        compared += 1
        via_proto = run(b"".join(frame(carried[index]) for index in span))
        via_sse = anyio.run(Pipeline().run, encode_sse(stream))
        assert via_proto.events == via_sse.events, name
        assert via_proto.verdict.outcome is via_sse.verdict.outcome, name
        assert codes(via_proto) == codes(via_sse), name
    assert compared > 30
    # Our frames, their decoder: every carried event back as it was.
    ours = [base64.b64encode(encode(events[index])).decode() for index in carried]
    theirs = [answer.get("event") for answer in reference("decode", ours)]
    assert theirs == [events[index] for index in carried]


def reference_frames(events: list[dict[str, Any]]) -> list[bytes]:
    """The reference encoder's frame of each event (the test skips without node)."""
    reason = reference_available()
    if reason is not None:
        pytest.skip(reason)
    answers = reference("encode", events)
    assert all("frame" in answer for answer in answers), answers
    return [base64.b64decode(answer["frame"]) for answer in answers]


def test_the_reference_encoders_frame_for_a_type_it_lacks_is_dropped_as_on_sse() -> None:
    """``@ag-ui/proto`` writes an empty frame for an event type it has no arm for; that
    event is dropped with a warning, as enforce drops the unknown type off SSE."""
    future = {"type": "REASONING_SUMMARY", "messageId": "m-9", "summary": "thought"}
    events = [*RUN[:3], future, *RUN[3:]]
    frames = reference_frames(events)
    assert frames[3] == b""
    via_proto = run(b"".join(map(frame, frames)))
    via_sse = anyio.run(Pipeline().run, encode_sse(events))
    assert via_proto.verdict.outcome is via_sse.verdict.outcome is Outcome.COMPLETED
    assert via_proto.events == via_sse.events == RUN
    said = {(d.code, d.event_index) for d in via_proto.diagnostics if d.code not in codes(via_sse)}
    assert said == {("parse.proto-unknown-arm", 3)}
    assert ("enforce.unknown-event", 3) in {(d.code, d.event_index) for d in via_sse.diagnostics}


@pytest.mark.parametrize(("event", "pointer"), NON_FINITE_PLACES)
def test_the_reference_encoders_non_finite_doubles_are_judged_as_on_sse(
    event: dict[str, Any], pointer: str
) -> None:
    """The reference encoder writes NaN and ±Infinity into a double as they are; each is
    rejected at its pointer, and an infinity exactly as ``1e999`` is on SSE."""
    spellings = ["NaN", "Infinity", "-Infinity"]
    frames = reference_frames(
        [*RUN[:1], *(placed(event, {"$double": spelled}) for spelled in spellings)]
    )
    for spelled, encoded in zip(spellings, frames[1:], strict=True):
        result = run(frame(frames[0]) + frame(encoded))
        verdict = result.verdict
        assert (verdict.code, verdict.event_index, verdict.pointer) == (
            "parse.number-range",
            1,
            pointer,
        ), (spelled, verdict.message)
        if spelled != "NaN":
            literal = b"1e999" if spelled == "Infinity" else b"-1e999"
            via_sse = anyio.run(Pipeline().run, [sse_of([*RUN[:1], event], literal)]).verdict
            assert (via_sse.code, via_sse.event_index, via_sse.pointer) == (
                verdict.code,
                verdict.event_index,
                verdict.pointer,
            )


def test_the_reference_decoder_sorts_envelopes_as_this_one_does() -> None:
    """Where the reference decoder reads the envelope itself, it agrees: a known arm of the
    wrong wire type is broken, an arm it predates is an unknown event. (It reads a wrong
    wire type below the envelope as an absent field, and refuses the empty frame its own
    encoder writes: there this reader follows the spec, not the package.)"""
    reason = reference_available()
    if reason is not None:
        pytest.skip(reason)
    wrong_arm, future = field(1, 0, b"\x01"), arm(40, field(1, 0, b"\x01"))
    answers = reference("decode", [base64.b64encode(f).decode() for f in (wrong_arm, future)])
    assert [answer.get("error") for answer in answers] == ["Invalid event", "Unknown event type"]
    assert run(frame(wrong_arm)).verdict.code == "parse.proto-frame"
    assert codes(run(frame(future))) == ["parse.proto-unknown-arm"]


# -- entries per frame: memory bounded by the bytes given --------------------------------


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        low, number = number & 0x7F, number >> 7
        out.append(low | (0x80 if number else 0))
        if not number:
            return bytes(out)


def empty_entries(arm: str, count: int) -> bytes:
    """One frame of the ``arm`` event (``messages_snapshot``, ``state_delta``) whose
    repeated field 2 holds ``count`` empty messages: 2 bytes each on the wire, hundreds in
    memory once parsed. The arm and its ``base_event`` are two messages more."""
    number = agui_pb2.Event.DESCRIPTOR.fields_by_name[arm].number
    kind = agui_pb2.EventType.Value(arm.upper())
    body = b"\n\x02\x08" + bytes([kind]) + b"\x12\x00" * count
    envelope = bytes([number << 3 | 2]) + _varint(len(body)) + body
    return len(envelope).to_bytes(4, "big") + envelope


@pytest.mark.parametrize("arm", ["messages_snapshot", "state_delta"])
@pytest.mark.parametrize(("entries", "refused"), [(999, False), (1_000, False), (1_001, True)])
def test_a_frame_of_more_messages_than_max_frame_entries_is_refused_before_it_is_parsed(
    arm: str, entries: int, refused: bool
) -> None:
    # issue 34: 8 MB of empty messages took 2.45 GB; the frame is counted on the wire first.
    from agui_pipeline import Limits, run_sync

    pipeline = Pipeline(framing="proto", limits=Limits(max_frame_entries=1_000))
    result = run_sync(empty_entries(arm, entries - 2), pipeline)
    error = result.verdict.error
    if not refused:
        assert error is None or error.code != "limit.frame-entries"
        return
    assert error is not None and error.code == "limit.frame-entries"
    assert "holds more than 1,000 messages, over the limit max_frame_entries=1000" in str(error)
    assert error.event_index == 0


def test_a_full_frame_of_empty_messages_is_refused_in_bounded_memory() -> None:
    """In a child, whose peak is its own (``tests/peak.py``): in this process, a worker that
    peaked higher before would hide any growth."""
    script = textwrap.dedent(
        """
        from agui_pipeline import Pipeline, run_sync
        from tests.peak import peak_kib
        from tests.test_proto import empty_entries
        before = peak_kib()
        result = run_sync(empty_entries("messages_snapshot", 4_000_000), Pipeline(framing="proto"))
        error = result.verdict.error
        print(error.code if error is not None else None, peak_kib() - before)
        """
    )
    code, grown = child_prints(script, timeout=300).split()
    assert code == "limit.frame-entries"
    assert int(grown) < 200 * 1024, f"{grown} KiB"
