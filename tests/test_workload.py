"""The benchmark workload stays schema-valid and legally sequenced: figures measure real streams."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import orjson
import pytest
from agui_pipeline import Pipeline
from jsonschema import Draft202012Validator

from benchmarks.workload import (
    DECLARATION,
    MIN_EVENTS,
    encode_jsonl,
    encode_sse,
    events,
    iter_sse_chunks,
)
from tests.conftest import run, spec_schema


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return spec_schema()


@pytest.fixture(scope="module")
def validator(schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(schema)


def test_every_event_is_schema_valid(schema: dict[str, Any]) -> None:
    """Each event against its own type's definition (the whole ``Event`` oneOf is slow)."""
    by_type = {}
    for name, definition in schema["$defs"].items():
        const = definition.get("properties", {}).get("type", {}).get("const")
        if name.endswith("Event") and const:
            by_type[const] = Draft202012Validator({**schema, "$ref": f"#/$defs/{name}"})
    for index, event in enumerate(events(20_000, seed=3)):
        errors = [e.message for e in by_type[event["type"]].iter_errors(event)]
        assert not errors, f"event {index} {event}: {errors}"


def test_events_are_valid_against_the_whole_schema(validator: Draft202012Validator) -> None:
    for index, event in enumerate(events(1_000, seed=4)):
        errors = [e.message for e in validator.iter_errors(event)]
        assert not errors, f"event {index} {event}: {errors}"


def test_schema_check_can_fail(validator: Draft202012Validator) -> None:
    event = events(MIN_EVENTS)[2]
    event["unknownMember"] = 1
    assert not validator.is_valid(event)


@pytest.mark.parametrize("n", [0, MIN_EVENTS, 6, 7, 219, 1_000, 12_345])
def test_exact_length_and_deterministic(n: int) -> None:
    stream = events(n, seed=1)
    assert len(stream) == n
    assert stream == events(n, seed=1)
    assert n < 1_000 or stream != events(n, seed=2)


def test_too_short_is_refused() -> None:
    with pytest.raises(ValueError):
        events(MIN_EVENTS - 1)


def test_token_deltas_dominate_and_every_kind_occurs() -> None:
    kinds = Counter(event["type"] for event in events(20_000))
    assert kinds["TEXT_MESSAGE_CONTENT"] > 0.5 * sum(kinds.values())
    for kind in (
        "RUN_STARTED",
        "RUN_FINISHED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "REASONING_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "STATE_SNAPSHOT",
        "STATE_DELTA",
    ):
        assert kinds[kind], kind
    assert kinds["RUN_STARTED"] >= 5


def _apply(state: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    """Enough of RFC 6902 for the workload's patches; raises when one does not apply."""
    for op in ops:
        *parents, last = op["path"].split("/")[1:]
        target = state
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if isinstance(target, list):
            if op["op"] == "add" and last == "-":
                target.append(op["value"])
            elif op["op"] == "remove":
                del target[int(last)]
            else:
                assert int(last) < len(target)
                target[int(last)] = op["value"]
        elif op["op"] == "remove":
            del target[last]
        else:
            assert op["op"] == "add" or last in target
            target[last] = op["value"]


def test_sequences_are_legal() -> None:
    """The lifecycle, streaming and tool-call rules the workload promises, checked directly."""
    run = None
    open_steps: set[str] = set()
    open_items: set[tuple[str, str]] = set()
    ended_calls: set[str] = set()
    state: dict[str, Any] = {}
    for index, event in enumerate(events(30_000, seed=5)):
        kind = event["type"]
        where = f"event {index}: {event}"
        if kind == "RUN_STARTED":
            assert run is None, where
            run = event["runId"]
            continue
        assert run is not None, where
        if kind == "RUN_FINISHED":
            assert event["runId"] == run and not open_steps and not open_items, where
            run = None
        elif kind == "STEP_STARTED":
            assert event["stepName"] not in open_steps, where
            open_steps.add(event["stepName"])
        elif kind == "STEP_FINISHED":
            open_steps.remove(event["stepName"])
        elif kind == "STATE_SNAPSHOT":
            state = json.loads(json.dumps(event["snapshot"]))
        elif kind == "STATE_DELTA":
            _apply(state, event["delta"])
        elif kind == "TOOL_CALL_RESULT":
            assert event["toolCallId"] in ended_calls, where
        else:
            family, _, phase = kind.rpartition("_")
            key = event.get("messageId") or event["toolCallId"]
            if phase == "START":
                assert (family, key) not in open_items, where
                open_items.add((family, key))
            else:  # CONTENT, ARGS or END of the item its START opened
                assert (family, key) in open_items, where
                if phase == "END":
                    open_items.remove((family, key))
                    if family == "TOOL_CALL":
                        ended_calls.add(key)
    assert run is None


def test_encodings_round_trip() -> None:
    stream = events(500)
    assert [orjson.loads(line) for line in encode_jsonl(stream).splitlines()] == stream
    frames = encode_sse(stream).split(b"\n\n")
    assert frames[-1] == b""
    assert [orjson.loads(frame.removeprefix(b"data: ")) for frame in frames[:-1]] == stream


def test_streamed_chunks_are_the_same_bytes() -> None:
    assert b"".join(iter_sse_chunks(3_000, seed=2, size=1000)) == encode_sse(events(3_000, seed=2))
    assert all(len(chunk) == 1000 for chunk in list(iter_sse_chunks(3_000, size=1000))[:-1])


def test_declaration_is_schema_valid_and_read_as_usable(schema: dict[str, Any]) -> None:
    declaration = Draft202012Validator({**schema, "$ref": "#/$defs/AgentCapabilities"})
    assert not [e.message for e in declaration.iter_errors(DECLARATION)]
    result = run(encode_sse(events(3_000)), Pipeline(capabilities=DECLARATION))
    assert result.verdict.completed, result.verdict
    assert not result.warnings, result.warnings[:3]
