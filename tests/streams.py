"""Hypothesis strategies for valid AG-UI 1.1 event streams, and their encodings.

A generated stream is legal by construction: every run opens and closes, every
message, tool call, reasoning span and step is opened, continued and closed in
order, every event is schema-valid. Tests mutate it to make it otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from hypothesis import strategies as st

Event = dict[str, Any]

_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=0, max_size=12
)
_name = st.text(alphabet="abcdefghij_", min_size=1, max_size=8)
_json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), _text)
_json = st.recursive(
    _json_scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_name, inner, max_size=3)),
    max_leaves=6,
)
_metadata = st.dictionaries(_name, _json, max_size=2)


@st.composite
def _maybe_metadata(draw: st.DrawFn, event: Event) -> Event:
    if draw(st.booleans()) and draw(st.booleans()):
        event["metadata"] = draw(_metadata)
    return event


@st.composite
def text_message(draw: st.DrawFn, ids: Callable[[str], str]) -> list[Event]:
    message_id = ids("m")
    events: list[Event] = [
        draw(
            _maybe_metadata(
                {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"}
            )
        )
    ]
    for delta in draw(st.lists(_text, min_size=0, max_size=5)):
        events.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": delta})
    events.append({"type": "TEXT_MESSAGE_END", "messageId": message_id})
    return events


@st.composite
def tool_call(draw: st.DrawFn, ids: Callable[[str], str]) -> list[Event]:
    call_id = ids("call")
    events: list[Event] = [
        draw(
            _maybe_metadata(
                {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": draw(_name)}
            )
        )
    ]
    # The argument text is a JSON document (the convention; lint reports text that is not),
    # cut into deltas at drawn places.
    arguments = orjson.dumps(draw(st.dictionaries(_name, _json, max_size=3))).decode()
    cuts = sorted(draw(st.lists(st.integers(0, len(arguments)), max_size=3)))
    for start, end in zip([0, *cuts], [*cuts, len(arguments)], strict=True):
        events.append(
            {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": arguments[start:end]}
        )
    events.append({"type": "TOOL_CALL_END", "toolCallId": call_id})
    if draw(st.booleans()):
        events.append(
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": ids("result"),
                "toolCallId": call_id,
                "content": draw(_text),
                "role": "tool",
            }
        )
    return events


@st.composite
def reasoning(draw: st.DrawFn, ids: Callable[[str], str]) -> list[Event]:
    span = ids("reasoning")
    events: list[Event] = [{"type": "REASONING_START", "messageId": span}]
    if draw(st.booleans()):
        message_id = ids("thought")
        events.append(
            {"type": "REASONING_MESSAGE_START", "messageId": message_id, "role": "reasoning"}
        )
        for delta in draw(st.lists(_text, max_size=3)):
            events.append(
                {"type": "REASONING_MESSAGE_CONTENT", "messageId": message_id, "delta": delta}
            )
        events.append({"type": "REASONING_MESSAGE_END", "messageId": message_id})
    events.append({"type": "REASONING_END", "messageId": span})
    return events


@st.composite
def state_events(draw: st.DrawFn, ids: Callable[[str], str]) -> list[Event]:
    snapshot = draw(st.dictionaries(_name, _json, max_size=3))
    events: list[Event] = [{"type": "STATE_SNAPSHOT", "snapshot": snapshot}]
    for key, value in draw(st.lists(st.tuples(_name, _json), max_size=3)):
        events.append(
            {"type": "STATE_DELTA", "delta": [{"op": "add", "path": f"/{key}", "value": value}]}
        )
    return events


@st.composite
def passthrough(draw: st.DrawFn, ids: Callable[[str], str]) -> list[Event]:
    if draw(st.booleans()):
        return [{"type": "CUSTOM", "name": draw(_name), "value": draw(_json)}]
    return [{"type": "RAW", "event": draw(_json)}]


@st.composite
def step(draw: st.DrawFn, ids: Callable[[str], str]) -> list[Event]:
    name = ids("step")
    inner = draw(st.lists(st.sampled_from([text_message, tool_call]), max_size=2))
    events: list[Event] = [{"type": "STEP_STARTED", "stepName": name}]
    for item in inner:
        events += draw(item(ids))
    events.append({"type": "STEP_FINISHED", "stepName": name})
    return events


ITEMS = [text_message, tool_call, reasoning, state_events, passthrough, step]


@st.composite
def valid_stream(draw: st.DrawFn, max_runs: int = 3, max_items: int = 6) -> list[Event]:
    """One thread, one to ``max_runs`` runs in sequence, each closed."""
    counter = iter(range(1_000_000))

    def ids(prefix: str) -> str:
        return f"{prefix}-{next(counter)}"

    thread = "thread-1"
    events: list[Event] = []
    for _ in range(draw(st.integers(1, max_runs))):
        run_id = ids("run")
        events.append({"type": "RUN_STARTED", "threadId": thread, "runId": run_id})
        for item in draw(st.lists(st.sampled_from(ITEMS), max_size=max_items)):
            events += draw(item(ids))
        if draw(st.integers(0, 5)) == 0:
            events.append({"type": "RUN_ERROR", "message": draw(_text)})
        else:
            events.append({"type": "RUN_FINISHED", "threadId": thread, "runId": run_id})
    return events


def encode(events: list[Event], framing: str) -> bytes:
    return join_frames([orjson.dumps(e) for e in events], framing)


def join_frames(frames: list[bytes], framing: str) -> bytes:
    """Frames already written as JSON, framed as ``framing`` ("sse", "jsonl" or "json", a
    document holding them in an array): for JSON written by hand or by the standard library
    (orjson cannot write integers past 64 bits)."""
    if framing == "sse":
        return b"".join(b"data: " + frame + b"\n\n" for frame in frames)
    if framing == "jsonl":
        return b"".join(frame + b"\n" for frame in frames)
    return b"[" + b",".join(frames) + b"]"


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at the given offsets (taken modulo its length)."""
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    pieces, start = [], 0
    for point in [*points, len(data)]:
        pieces.append(data[start:point])
        start = point
    return pieces
