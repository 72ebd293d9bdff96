"""Hostile and broken input: the default pipeline never crashes, never hangs,
and never loses what was valid before a fault.

The only outcomes allowed are a verdict — completed, rejected or truncated —
with the project's own codes. Any other exception escaping ``run`` is a bug.
Run a bigger profile by hand with ``HYPOTHESIS_PROFILE=fuzz pytest tests/test_fuzz.py``.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from agui_pipeline import Limits, Outcome, Pipeline, RunResult
from agui_pipeline.catalog import ALL
from agui_pipeline.model.patch import size
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.streams import Event, encode, join_frames, split, valid_stream

PIPELINE = Pipeline(idle_timeout=5)
FRAMINGS = st.sampled_from(["sse", "jsonl", "json"])
SETTINGS = settings(
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def run(chunks: list[bytes]) -> tuple[RunResult, list[int]]:
    """Run the default pipeline; also return the source frame index of each delivered event."""

    async def go() -> tuple[RunResult, list[int]]:
        indices: list[int] = []
        events: list[Event] = []
        with anyio.fail_after(30):  # a hang is a failure, not a stuck test run
            async with PIPELINE.open(chunks) as stream:
                async for batch in stream.batches():
                    events += batch.events
                    indices += batch.indices
        return stream.result(events), indices

    return anyio.run(go)


def assert_a_verdict(result: RunResult) -> None:
    assert result.verdict.outcome in (Outcome.COMPLETED, Outcome.REJECTED, Outcome.TRUNCATED)
    if result.verdict.code is not None:
        assert result.verdict.code in ALL, result.verdict.code
    for diagnostic in result.diagnostics:
        assert diagnostic.code in ALL, diagnostic.code
    # Accounting: every event read or made is delivered, dropped, expanded or discarded.
    c = result.counters
    assert c.read + c.synthesized == c.delivered + c.dropped + c.expanded + c.discarded, c
    assert c.delivered == len(result.events)


@SETTINGS
@given(data=st.binary(max_size=600), cuts=st.lists(st.integers(0, 700), max_size=6))
def test_random_bytes(data: bytes, cuts: list[int]) -> None:
    result, _ = run(split(data, cuts))
    assert_a_verdict(result)


@SETTINGS
@given(
    prefix=st.sampled_from([b"data: ", b"", b"[", b"data: {", b'{"type":']),
    body=st.binary(max_size=300),
)
def test_random_bytes_after_a_plausible_start(prefix: bytes, body: bytes) -> None:
    result, _ = run([prefix + body + b"\n\n"])
    assert_a_verdict(result)


@SETTINGS
@given(events=valid_stream(), framing=FRAMINGS, cuts=st.lists(st.integers(0, 10**6), max_size=8))
def test_a_valid_stream_completes_whatever_the_chunk_boundaries(
    events: list[Event], framing: str, cuts: list[int]
) -> None:
    whole, _ = run([encode(events, framing)])
    pieces, _ = run(split(encode(events, framing), cuts))
    assert whole.verdict.outcome is Outcome.COMPLETED, whole.verdict.message
    assert [d for d in whole.diagnostics if d.severity != "info"] == []
    assert pieces.events == whole.events
    assert pieces.verdict.outcome is Outcome.COMPLETED


@SETTINGS
@given(events=valid_stream(), framing=FRAMINGS, cut=st.integers(0, 10**6))
def test_a_truncated_stream_delivers_a_prefix_and_never_completes_early(
    events: list[Event], framing: str, cut: int
) -> None:
    data = encode(events, framing)
    cut %= len(data)
    clean, _ = run([data])
    broken, _ = run([data[:cut]])
    assert_a_verdict(broken)
    assert broken.events == clean.events[: len(broken.events)]
    if broken.verdict.outcome is Outcome.COMPLETED:
        # Only a cut just after a run's terminal event may complete: a cut
        # anywhere else leaves a run open (truncated) or a frame broken.
        assert broken.events, "a stream with no events has no run to complete"
        assert broken.events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")


@SETTINGS
@given(
    a=valid_stream(),
    b=valid_stream(),
    framing=FRAMINGS,
    i=st.integers(0, 10**6),
    j=st.integers(0, 10**6),
)
def test_splices_of_two_streams(
    a: list[Event], b: list[Event], framing: str, i: int, j: int
) -> None:
    left, right = encode(a, framing), encode(b, framing)
    result, _ = run([left[: i % len(left)] + right[j % len(right) :]])
    assert_a_verdict(result)


def _mutations() -> st.SearchStrategy[Any]:
    number = st.integers(-(2**63), 2**64 - 1)  # what JSON encoders here can write
    junk = st.one_of(
        st.none(),
        st.booleans(),
        number,
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=5),
        st.lists(number, max_size=2),
        st.dictionaries(st.text(max_size=3), number, max_size=2),
    )
    return st.one_of(
        st.tuples(st.just("set"), st.text(max_size=12), junk),
        st.tuples(st.just("delete"), st.just(None), st.just(None)),
        st.tuples(
            st.just("type"),
            st.sampled_from(
                [
                    "RUN_STARTED",
                    "RUN_FINISHED",
                    "TEXT_MESSAGE_END",
                    "TOOL_CALL_END",
                    "STEP_FINISHED",
                    "TEXT_MESSAGE_CHUNK",
                    "TOOL_CALL_CHUNK",
                    "SUBAGENT_FINISHED",
                    "FUTURE_EVENT",
                    "",
                ]
            ),
            st.just(None),
        ),
        st.tuples(st.just("duplicate"), st.just(None), st.just(None)),
        st.tuples(st.just("drop"), st.just(None), st.just(None)),
    )


@SETTINGS
@given(
    events=valid_stream(),
    framing=FRAMINGS,
    position=st.integers(0, 10**6),
    mutation=_mutations(),
    data=st.data(),
)
def test_one_mutated_event(
    events: list[Event],
    framing: str,
    position: int,
    mutation: tuple[str, Any, Any],
    data: st.DataObject,
) -> None:
    position %= len(events)
    mutated = copy.deepcopy(events)
    kind, key, value = mutation
    target = mutated[position]
    if kind == "set":
        key = key or data.draw(st.sampled_from(sorted(target)))
        target[key] = value
    elif kind == "delete":
        target.pop(data.draw(st.sampled_from(sorted(target))))
    elif kind == "type":
        target["type"] = key
    elif kind == "duplicate":
        mutated.insert(position, copy.deepcopy(target))
    else:
        del mutated[position]
    assume(mutated != events)

    clean, clean_indices = run([encode(events, framing)])
    broken, broken_indices = run([encode(mutated, framing)])
    assert_a_verdict(broken)

    # The frames before the fault are the same bytes in both streams: what came
    # from them is delivered, and delivered exactly as without the fault.
    def before_fault(events: Sequence[Any], indices: list[int]) -> list[Any]:
        return [event for event, index in zip(events, indices, strict=True) if index < position]

    assert before_fault(broken.events, broken_indices) == before_fault(clean.events, clean_indices)


def test_deep_nesting_is_an_answer_not_a_crash() -> None:
    for depth in (100, 1_000, 10_000, 100_000):
        value = "[" * depth + "]" * depth
        frame = (
            b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
            b'data: {"type":"STATE_SNAPSHOT","snapshot":' + value.encode() + b"}\n\n"
        )
        result, _ = run([frame])
        assert_a_verdict(result)


def test_huge_numbers_and_odd_unicode() -> None:
    frames = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    data = b"data: " + orjson.dumps(frames[0]) + b"\n\n"
    data += b'data: {"type":"STATE_SNAPSHOT","snapshot":{"n":1' + b"0" * 400 + b"}}\n\n"
    data += b'data: {"type":"STATE_SNAPSHOT","snapshot":{"s":"\\ud800"}}\n\n'
    data += b"data: " + orjson.dumps(frames[1]) + b"\n\n"
    result, _ = run([data])
    assert_a_verdict(result)


# -- the shapes of issue 13: blank prefixes, frames and documents at their limits, integers
# past 64 bits, numbers and strings orjson refuses -------------------------------------------

BLANKS = st.binary(max_size=3_000).map(lambda raw: bytes(b" \t\r\n"[byte % 4] for byte in raw))


@SETTINGS
@given(
    events=valid_stream(),
    framing=FRAMINGS,
    blanks=BLANKS,
    bom=st.booleans(),
    cuts=st.lists(st.integers(0, 10**4), max_size=8),
)
def test_a_blank_prefix_changes_nothing(
    events: list[Event], framing: str, blanks: bytes, bom: bool, cuts: list[int]
) -> None:
    clean, _ = run([encode(events, framing)])
    data = (b"\xef\xbb\xbf" if bom else b"") + blanks + encode(events, framing)
    if framing == "sse":
        data = (b"\xef\xbb\xbf" if bom else b"") + blanks + b"\n" + encode(events, framing)
    prefixed, _ = run(split(data, cuts))
    assert prefixed.verdict.outcome is Outcome.COMPLETED, prefixed.verdict.message
    assert prefixed.events == clean.events


SMALL_LIMITS = Pipeline(limits=Limits(max_frame_bytes=4_096, max_document_bytes=8_192))


@SETTINGS
@given(
    framing=FRAMINGS,
    size=st.integers(1, 20_000) | st.integers(4_040, 4_100),  # around the frame limit too
    unit=st.sampled_from([b"[],", b"{},", b'"x",', b"0,", b'{"a":[{}]},']),
    cuts=st.lists(st.integers(0, 30_000), max_size=6),
)
def test_frames_and_documents_around_their_limits(
    framing: str, size: int, unit: bytes, cuts: list[int]
) -> None:
    start = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
    value = b'{"type":"CUSTOM","name":"x","value":[' + unit * (size // len(unit)) + b"0]}"
    if framing == "json":
        data = b"[" + orjson.dumps(start) + b"," + value + b"]"
    elif framing == "sse":
        data = encode([start], "sse") + b"data: " + value + b"\n\n"
    else:
        data = encode([start], "jsonl") + value + b"\n"

    result = anyio.run(SMALL_LIMITS.run, split(data, cuts))
    assert_a_verdict(result)
    limit = 8_192 if framing == "json" else 4_096
    # A frame is measured by its payload, whole or cut: exactly at the limit it passes.
    if len(value) > limit or (framing == "json" and len(data) > limit):
        assert result.verdict.code == "limit.frame-bytes", (len(value), result.verdict)
    elif result.verdict.code is not None:
        assert result.verdict.code.startswith(("verify.", "enforce.")), result.verdict


BEYOND_64_BITS = st.one_of(st.integers(2**64, 10**80), st.integers(-(10**80), -(2**63) - 1))


@SETTINGS
@given(
    numbers=st.lists(st.one_of(BEYOND_64_BITS, st.integers(-(2**63), 2**64 - 1)), max_size=6),
    framing=FRAMINGS,
)
def test_integers_past_64_bits_become_doubles_with_a_warning_each(
    numbers: list[int], framing: str
) -> None:
    import json

    frames = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "CUSTOM", "name": "n", "value": numbers},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    data = join_frames([json.dumps(frame).encode() for frame in frames], framing)
    result, _ = run([data])
    assert result.verdict.outcome is Outcome.COMPLETED, result.verdict.message
    delivered: dict[str, Any] = dict(result.events[1])
    assert delivered["value"] == [n if -(2**63) <= n <= 2**64 - 1 else float(n) for n in numbers]
    warned = [d.pointer for d in result.diagnostics if d.code == "parse.integer-precision"]
    expected = [f"/value/{i}" for i, n in enumerate(numbers) if not -(2**63) <= n <= 2**64 - 1]
    assert warned == expected


@SETTINGS
@given(
    refused=st.sampled_from(
        [
            (b"1e999999", "parse.number-range"),
            (b"-1e400", "parse.number-range"),
            (b'"\\ud800"', "parse.unpaired-surrogate"),
            (b'"a\\udfff"', "parse.unpaired-surrogate"),
            (b"[" * 1_100 + b"]" * 1_100, "limit.depth"),
        ]
    ),
    framing=FRAMINGS,
)
def test_valid_json_refused_names_its_reason(refused: tuple[bytes, str], framing: str) -> None:
    value, code = refused
    start = b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}'
    frame = b'{"type":"CUSTOM","name":"n","value":' + value + b"}"
    if framing == "json":
        data = b"[" + start + b"," + frame + b"]"
    elif framing == "sse":
        data = b"data: " + start + b"\n\ndata: " + frame + b"\n\n"
    else:
        data = start + b"\n" + frame + b"\n"
    result, _ = run([data])
    assert result.verdict.code == code, result.verdict


# -- hostile patches and snapshots (issue 13): bombs, deep paths, huge indices -------------

SMALL = Limits(
    max_state_bytes=20_000, max_activity_bytes=20_000, max_patch_work=200_000, max_depth=24
)
"""Limits small enough that every generated stream can reach them within a few events."""
SMALL_PIPELINE = Pipeline(idle_timeout=5, limits=SMALL)

_hostile_paths = st.one_of(
    st.sampled_from(["", "/a", "/a/-", "/a/0", "/b", "/a/a", "/b/-"]),
    st.integers(0, 30).map(lambda depth: "/a/1" + "/d" * depth),  # deep paths
    st.integers(4_300, 6_000).map(lambda digits: "/a/1" + "0" * digits),  # huge indices
    st.integers(0, 30).map(lambda digits: "/a/" + "9" * digits),
)
_hostile_operations = st.one_of(
    st.builds(lambda f, p: {"op": "copy", "from": f, "path": p}, _hostile_paths, _hostile_paths),
    st.builds(lambda f, p: {"op": "move", "from": f, "path": p}, _hostile_paths, _hostile_paths),
    st.builds(
        lambda p, n: {"op": "add", "path": p, "value": [["x" * 10] * n]},
        _hostile_paths,
        st.integers(0, 50),
    ),
    st.builds(
        lambda p, n: {"op": "add", "path": p, "value": _chain(n)},
        _hostile_paths,
        st.integers(0, 18),
    ),
    st.builds(lambda p: {"op": "remove", "path": p}, _hostile_paths),
)


def _chain(depth: int) -> Any:
    """``{"d": {"d": ... {}}}``, ``depth`` levels."""
    value: Any = {}
    for _ in range(depth - 1):
        value = {"d": value}
    return value


def _hostile_stream(patches: list[list[Any]], activity: bool) -> bytes:
    start = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
    events: list[Event] = [start]
    seed = {"a": ["seed" * 10, _chain(18)], "b": []}
    if activity:
        events.append(
            {"type": "ACTIVITY_SNAPSHOT", "messageId": "m", "activityType": "x", "content": seed}
        )
        events += [
            {"type": "ACTIVITY_DELTA", "messageId": "m", "activityType": "x", "patch": patch}
            for patch in patches
        ]
    else:
        events.append({"type": "STATE_SNAPSHOT", "snapshot": seed})
        events += [{"type": "STATE_DELTA", "delta": patch} for patch in patches]
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    return encode(events, "sse")


@SETTINGS
@given(
    patches=st.lists(st.lists(_hostile_operations, min_size=1, max_size=2), max_size=40),
    activity=st.booleans(),
)
def test_hostile_patches_stay_within_their_limits(patches: list[list[Any]], activity: bool) -> None:
    """Patch bombs (copies of a document into itself), deep paths, huge indices: a
    verdict, quickly; a rejection names a limit; the documents held stay in bounds."""

    async def go() -> RunResult:
        with anyio.fail_after(30):
            return await SMALL_PIPELINE.run(_hostile_stream(patches, activity))

    result = anyio.run(go)
    assert_a_verdict(result)
    assert result.verdict.outcome is not Outcome.TRUNCATED
    if result.verdict.outcome is Outcome.REJECTED:
        assert result.verdict.code in (
            "limit.state-bytes",
            "limit.activity-bytes",
            "limit.patch-work",
            "limit.depth",
        ), result.verdict.message
    conversation = result.conversation
    assert size(conversation.state, 10**9) <= SMALL.max_state_bytes * 17 // 16
    activities = [m["content"] for m in conversation.messages if m["role"] == "activity"]
    assert sum(size(c, 10**9) for c in activities) <= SMALL.max_activity_bytes * 17 // 16
    for document in (conversation.state, *activities):
        assert _depth(document) <= SMALL.max_depth


def _depth(value: Any) -> int:
    deepest, pending = 0, [(value, 0)]
    while pending:
        node, depth = pending.pop()
        if type(node) is dict or type(node) is list:
            deepest = max(deepest, depth + 1)
            pending += [
                (child, depth + 1) for child in (node.values() if type(node) is dict else node)
            ]
    return deepest


@SETTINGS
@given(
    held=st.lists(st.sampled_from(["activity", "reasoning", "assistant", "user"]), max_size=30),
    snapshots=st.lists(
        st.lists(
            st.tuples(st.integers(0, 40), st.sampled_from(["activity", "assistant", "user"])),
            max_size=6,
        ),
        max_size=30,
    ),
)
def test_many_snapshots_reconcile_as_the_spec_says(
    held: list[str], snapshots: list[list[tuple[int, str]]]
) -> None:
    """Many MESSAGES_SNAPSHOTs over many held messages: each replaces by id in place,
    appends the new, drops the omitted except activity and reasoning messages of a role
    it does not carry — checked against a plain list model of that rule."""
    events: list[Event] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    model: list[tuple[str, str]] = []
    for number, role in enumerate(held):
        message_id = f"m{number}"
        if role == "activity":
            events.append(
                {
                    "type": "ACTIVITY_SNAPSHOT",
                    "messageId": message_id,
                    "activityType": "x",
                    "content": {"n": number},
                }
            )
        elif role == "reasoning":
            events += [
                {"type": "REASONING_START", "messageId": f"s{number}"},
                {"type": "REASONING_MESSAGE_START", "messageId": message_id, "role": "reasoning"},
                {"type": "REASONING_MESSAGE_END", "messageId": message_id},
                {"type": "REASONING_END", "messageId": f"s{number}"},
            ]
        else:
            events += [
                {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": role},
                {"type": "TEXT_MESSAGE_END", "messageId": message_id},
            ]
        model.append((message_id, role))
    for snapshot in snapshots:
        messages: dict[str, dict[str, Any]] = {}
        for number, role in snapshot:
            message: dict[str, Any] = {"id": f"m{number}", "role": role, "content": "restated"}
            if role == "activity":
                message |= {"activityType": "x", "content": {"restated": number}}
            messages[message["id"]] = message
        events.append({"type": "MESSAGES_SNAPSHOT", "messages": list(messages.values())})
        roles = {m["role"] for m in messages.values()}
        kept = [
            (i, messages[i]["role"] if i in messages else r)
            for i, r in model
            if i in messages or (r in ("activity", "reasoning") and r not in roles)
        ]
        model = kept + [(i, m["role"]) for i, m in messages.items() if i not in dict(model)]
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    result, _ = run([encode(events, "sse")])
    assert result.verdict.completed, result.verdict.message
    assert [(m["id"], m["role"]) for m in result.conversation.messages] == model


# -- coverage-guided fuzzing of the patch and protobuf paths (atheris, the slow tier) -----

FUZZ_SECONDS = 30
"""How long each target runs (libFuzzer's -max_total_time)."""


def _fuzz_seeds(target: str) -> list[bytes]:
    """The minimized inputs of issue 34, and a valid input or two to mutate from."""
    from agui_pipeline._proto.codec import encode_frames

    from tests.test_proto import empty_entries

    if target == "patch":
        return [
            b'[{"op":["add"],"path":"/x","value":1}]',  # an op that is no string
            b'[{"op":{"add":1},"path":"/x","value":1}]',
            b'[{"op":"move","from":"/a","path":"/a/b/x"}]',
            b'[{"op":"copy","from":"/a","path":"/z"},{"op":"test","path":"/z/b/0","value":1}]',
            b'[{"op":"add","path":"/a/b/-","value":[[[[[]]]]]}]',
        ]
    return [
        empty_entries("messages_snapshot", 998),  # at max_frame_entries (the targets' 1,000)
        empty_entries("messages_snapshot", 999),  # one past it
        empty_entries("state_delta", 999),
        encode_frames(
            [
                {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/x", "value": 1}]},
                {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
            ]
        ),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("target", ["patch", "proto"])
def test_coverage_guided_fuzzing_finds_no_crash(target: str, tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for number, seed in enumerate(_fuzz_seeds(target)):
        (corpus / f"seed-{number}").write_bytes(seed)
    done = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("fuzz_targets.py")),
            target,
            f"-max_total_time={FUZZ_SECONDS}",
            "-rss_limit_mb=1024",
            "-timeout=10",
            f"-artifact_prefix={tmp_path}/",
            str(corpus),
        ],
        capture_output=True,
        text=True,
        timeout=FUZZ_SECONDS + 120,
        cwd=tmp_path,
    )
    found = sorted(path.name for path in tmp_path.iterdir() if path.name != "corpus")
    assert done.returncode == 0 and not found, (found, done.stderr[-3000:])
