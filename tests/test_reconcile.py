"""reconcile: producer diagnostics against the declaration, never a change to the stream.

/spec/1.1/basic/capabilities: declarations are informative; a consumer MUST NOT
reject a stream or fail a run over one, and an omitted field is undeclared.
Each finding has a stream that triggers it and the same stream under a
declaration that omits the field, which must say nothing.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from agui_pipeline import Pipeline, RunResult
from agui_pipeline.model.declared import read_declaration
from agui_pipeline.stages.reconcile import Reconcile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run
from tests.streams import encode, split, valid_stream
from tests.test_capabilities import FULL, declarations

pytestmark = pytest.mark.usefixtures("built_in_run")  # every rule on every path (conftest)

Event = dict[str, Any]
T = "thread-1"


def start(run_id: str = "r1", **extra: Any) -> Event:
    return {"type": "RUN_STARTED", "threadId": T, "runId": run_id, **extra}


def finish(run_id: str = "r1", **extra: Any) -> Event:
    return {"type": "RUN_FINISHED", "threadId": T, "runId": run_id, **extra}


def call(call_id: str, name: str, *, result: bool = True) -> list[Event]:
    events = [
        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
    ]
    if result:
        events.append(
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": f"res-{call_id}",
                "toolCallId": call_id,
                "content": "ok",
            }
        )
    return events


def reasoning(deltas: int = 2, encrypted: bool = False) -> list[Event]:
    events: list[Event] = [
        {"type": "REASONING_START", "messageId": "span-1"},
        {"type": "REASONING_MESSAGE_START", "messageId": "th-1", "role": "reasoning"},
    ]
    events += [{"type": "REASONING_MESSAGE_CONTENT", "messageId": "th-1", "delta": "hm"}] * deltas
    events.append({"type": "REASONING_MESSAGE_END", "messageId": "th-1"})
    if encrypted:
        events.append(
            {
                "type": "REASONING_ENCRYPTED_VALUE",
                "subtype": "message",
                "entityId": "th-1",
                "encryptedValue": "opaque",
            }
        )
    events.append({"type": "REASONING_END", "messageId": "span-1"})
    return events


def subagent(name: str) -> list[Event]:
    return [
        {"type": "SUBAGENT_STARTED", "subagentRunId": "sub-1", "name": name},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "sub-1"},
    ]


INTERRUPT = {
    "type": "interrupt",
    "interrupts": [{"id": "i-1", "reason": "approval", "toolCallId": "c1"}],
}


def stream(*middle: list[Event] | Event, end: Event | None = None) -> list[Event]:
    events = [start()]
    for piece in middle:
        events += piece if isinstance(piece, list) else [piece]
    events.append(end or finish())
    return events


def reconcile(
    events: list[Event], capabilities: Any, framing: str = "jsonl", **kwargs: Any
) -> RunResult:
    return run(encode(events, framing), Pipeline(capabilities=capabilities), **kwargs)


def findings(result: RunResult) -> list[tuple[str, str | None, int | None, str | None]]:
    """(code, declaration field, event index, pointer) of every reconcile warning."""
    return [
        (d.code, d.declared, d.event_index, d.pointer)
        for d in result.diagnostics
        if d.code.startswith("reconcile.") and d.severity == "warning"
    ]


def without(declaration: dict[str, Any], pointer: str) -> dict[str, Any]:
    """The declaration with the field at ``pointer`` omitted."""
    copied = copy.deepcopy(declaration)
    *parents, last = pointer.strip("/").split("/")
    node = copied
    for key in parents:
        node = node[key]
    del node[last]
    return copied


RUN_INPUT = {
    "threadId": T,
    "runId": "r1",
    "messages": [],
    "tools": [{"name": "confirm", "description": "ask the user"}],
}

CASES: list[tuple[str, list[Event], dict[str, Any], str, int, str, dict[str, Any]]] = [
    # name, stream, declaration, code, event index, pointer, run kwargs
    (
        "tools.supported",
        stream(call("c1", "search")),
        {"tools": {"supported": False}},
        "reconcile.false-contradicted",
        1,
        "/type",
        {},
    ),
    (
        "reasoning.supported",
        stream(reasoning(1)),
        {"reasoning": {"supported": False}},
        "reconcile.false-contradicted",
        1,
        "/type",
        {},
    ),
    (
        "reasoning.streaming",
        stream(reasoning(3)),
        {"reasoning": {"streaming": False}},
        "reconcile.false-contradicted",
        4,
        "/delta",
        {},
    ),
    (
        "reasoning.encrypted",
        stream(reasoning(1, encrypted=True)),
        {"reasoning": {"encrypted": False}},
        "reconcile.false-contradicted",
        5,
        "/encryptedValue",
        {},
    ),
    (
        "state.snapshots",
        stream({"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}}),
        {"state": {"snapshots": False}},
        "reconcile.false-contradicted",
        1,
        "/type",
        {},
    ),
    (
        "state.deltas",
        stream({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]}),
        {"state": {"deltas": False}},
        "reconcile.false-contradicted",
        1,
        "/type",
        {},
    ),
    (
        "multiAgent.supported",
        stream(subagent("helper")),
        {"multiAgent": {"supported": False}},
        "reconcile.false-contradicted",
        1,
        "/type",
        {},
    ),
    (
        "multiAgent.delegation",
        stream(subagent("helper")),
        {"multiAgent": {"delegation": False}},
        "reconcile.false-contradicted",
        1,
        "/type",
        {},
    ),
    (
        "humanInTheLoop.supported",
        stream(call("c1", "pay", result=False), end=finish(outcome=INTERRUPT)),
        {"humanInTheLoop": {"supported": False}},
        "reconcile.false-contradicted",
        4,
        "/outcome",
        {},
    ),
    (
        "humanInTheLoop.interrupts",
        stream(call("c1", "pay", result=False), end=finish(outcome=INTERRUPT)),
        {"humanInTheLoop": {"interrupts": False}},
        "reconcile.false-contradicted",
        4,
        "/outcome",
        {},
    ),
    (
        "humanInTheLoop.approvals",
        stream(call("c1", "pay", result=False), end=finish(outcome=INTERRUPT)),
        {"humanInTheLoop": {"approvals": False}},
        "reconcile.false-contradicted",
        4,
        "/outcome/interrupts/0/toolCallId",
        {},
    ),
    (
        "tools.items (run input known)",
        stream(call("c1", "search")),
        {"tools": {"items": [{"name": "lookup", "description": "d"}]}},
        "reconcile.unlisted-tool",
        1,
        "/toolCallName",
        {"run_input": RUN_INPUT},
    ),
    (
        "tools.items (clientProvided false)",
        stream(call("c1", "search")),
        {"tools": {"items": [{"name": "lookup", "description": "d"}], "clientProvided": False}},
        "reconcile.unlisted-tool",
        1,
        "/toolCallName",
        {},
    ),
    (
        "tools.clientProvided",
        stream(call("c1", "confirm", result=False)),
        {"tools": {"clientProvided": False}},
        "reconcile.client-tool",
        1,
        "/toolCallName",
        {"run_input": RUN_INPUT},
    ),
    (
        "tools.parallelCalls",
        stream(call("c1", "a", result=False), call("c2", "b")),
        {"tools": {"parallelCalls": False}},
        "reconcile.parallel-calls",
        4,
        "/toolCallId",
        {},
    ),
    (
        "multiAgent.subagents",
        stream(subagent("helper")),
        {"multiAgent": {"subagents": [{"name": "researcher"}]}},
        "reconcile.unlisted-subagent",
        1,
        "/name",
        {},
    ),
]


@pytest.mark.parametrize(
    ("events", "declaration", "code", "index", "pointer", "kwargs"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_each_finding_and_silence_when_the_field_is_omitted(
    events: list[Event],
    declaration: dict[str, Any],
    code: str,
    index: int,
    pointer: str,
    kwargs: dict[str, Any],
) -> None:
    result = reconcile(events, declaration, **kwargs)
    assert result.verdict.completed, result.verdict
    found = [f for f in findings(result) if f[0] == code]
    assert len(found) == 1, findings(result)
    (found_code, field, found_index, found_pointer) = found[0]
    assert (found_code, found_index, found_pointer) == (code, index, pointer)
    assert field is not None
    # The message names the declaration field, so a substring match finds it too.
    assert field in next(str(d) for d in result.diagnostics if d.code == code)
    # The same stream with the field omitted: undeclared, so nothing to say.
    assert findings(reconcile(events, without(declaration, field), **kwargs)) == []
    # And the events themselves are exactly those of a run with no declaration.
    plain = run(encode(events, "jsonl"), **kwargs)
    assert result.events == plain.events
    assert result.verdict == plain.verdict


def test_a_true_declaration_is_exercised_not_contradicted() -> None:
    events = stream(call("c1", "get_weather"), reasoning(2), subagent("researcher"))
    result = reconcile(events, FULL)
    assert findings(result) == []
    (summary,) = [d for d in result.diagnostics if d.code == "reconcile.run-summary"]
    assert (
        "exercised /tools/supported, /tools/items, /multiAgent/supported, "
        "/multiAgent/delegation, /multiAgent/subagents, /reasoning/supported, "
        "/reasoning/streaming;" in summary.message
    )


def test_unlisted_tool_needs_to_know_the_applications_tools() -> None:
    # Without the run input a tool outside tools.items may be one of the
    # application's: nothing can be said (unless clientProvided is false).
    declaration = {"tools": {"items": [{"name": "lookup", "description": "d"}]}}
    assert findings(reconcile(stream(call("c1", "search")), declaration)) == []
    # An application tool that is also known is not unlisted.
    result = reconcile(
        stream(call("c1", "confirm", result=False)), declaration, run_input=RUN_INPUT
    )
    assert findings(result) == []


def test_sequential_calls_are_not_parallel() -> None:
    events = stream(call("c1", "a"), call("c2", "b"))
    assert findings(reconcile(events, {"tools": {"parallelCalls": False}})) == []


def test_one_finding_per_run_per_field() -> None:
    first = stream(reasoning(1), reasoning(1))
    second = stream(reasoning(1))
    second[0]["runId"] = second[-1]["runId"] = "r2"
    found = findings(reconcile(first + second, {"reasoning": {"supported": False}}))
    assert [f[2] for f in found] == [1, len(first) + 1]


def test_transport_against_the_declaration() -> None:
    events = stream(call("c1", "a"))
    found = findings(reconcile(events, {"transport": {"streaming": False}}, framing="sse"))
    assert found == [("reconcile.transport", "/transport/streaming", None, None)]
    assert findings(reconcile(events, {"transport": {}}, framing="sse")) == []
    # A file of JSON lines is no transport binding: nothing to compare.
    assert findings(reconcile(events, {"transport": {"streaming": False}})) == []


def test_run_input_modalities_are_warned_about() -> None:
    run_input = {
        "threadId": T,
        "runId": "r1",
        "messages": [
            {
                "id": "u1",
                "role": "user",
                "content": [
                    {"type": "audio", "source": {"type": "url", "value": "https://x/a.mp3"}}
                ],
            }
        ],
    }
    declaration = {"multimodal": {"input": {"audio": False}}}
    found = findings(reconcile(stream(), declaration, run_input=run_input))
    assert found == [
        ("reconcile.input-modality", "/multimodal/input/audio", None, "/messages/0/content/0")
    ]
    assert findings(reconcile(stream(), {"multimodal": {"input": {}}}, run_input=run_input)) == []
    refused = {**RUN_INPUT, "resume": [{"interruptId": "i", "status": "resolved"}]}
    found = findings(
        reconcile(stream(), {"humanInTheLoop": {"interrupts": False}}, run_input=refused)
    )
    assert found == [("reconcile.input-refused", "/humanInTheLoop/interrupts", None, "/resume")]
    assert findings(reconcile(stream(), {"humanInTheLoop": {}}, run_input=refused)) == []


def test_the_run_summary() -> None:
    declaration = {
        "tools": {"supported": True},
        "state": {"deltas": True},
        "reasoning": {"supported": False},
    }
    result = reconcile(stream(call("c1", "a"), reasoning(1), subagent("x")), declaration)
    (summary,) = [d for d in result.diagnostics if d.code == "reconcile.run-summary"]
    assert summary.severity == "info"
    assert "exercised /tools/supported;" in summary.message
    assert "declared but not exercised (fine) /state/deltas;" in summary.message
    assert (
        "used without a declaration /multiAgent/supported, /multiAgent/delegation, "
        "/multiAgent/subagents" in summary.message
    )
    assert "declared false yet used /reasoning/supported" in summary.message


def test_no_declaration_no_diagnostics() -> None:
    events = stream(call("c1", "a"), reasoning(2), subagent("x"))
    result = run(encode(events, "jsonl"))
    assert not [d for d in result.diagnostics if d.code.startswith("reconcile.")]


def test_unusable_declaration_is_reported_and_otherwise_ignored() -> None:
    events = stream(reasoning(2))
    result = reconcile(events, {"reasoning": {"supported": "no"}})
    codes = [d.code for d in result.diagnostics if d.code.startswith("reconcile.")]
    assert codes == ["reconcile.declaration-unusable"]
    (note,) = [d for d in result.diagnostics if d.code == "reconcile.declaration-unusable"]
    assert note.declared == "/reasoning/supported"
    assert "/reasoning/supported" in note.message


def test_reconcile_is_wired_after_verify_and_before_metadata() -> None:
    names = Pipeline().stage_names
    assert "reconcile" in names
    for before in ("verify", "expand", "enforce"):
        if before in names:
            assert names.index(before) < names.index("reconcile")
    if "metadata" in names:
        assert names.index("reconcile") < names.index("metadata")
    assert Reconcile.name == "reconcile"


def test_malformed_events_never_crash_it() -> None:
    # Reconcile alone (no enforcement in front of it) meets garbage and passes it on.
    pipeline = Pipeline(capabilities=FULL)
    for name in pipeline.stage_names[1:]:
        if name != "reconcile":
            pipeline = pipeline.without(name)
    garbage: list[Event] = [
        {"type": ["list"]},
        {"no": "type"},
        {"type": "TOOL_CALL_START", "toolCallId": {}},
        {"type": "RUN_FINISHED", "outcome": {"type": "interrupt", "interrupts": 5}},
        {"type": "SUBAGENT_STARTED", "name": [1]},
        {"type": "RUN_STARTED", "input": []},
    ]
    result = run(encode(garbage, "jsonl"), pipeline)
    assert result.events == garbage


# -- the central promise ----------------------------------------------------------------


@st.composite
def rich_stream(draw: st.DrawFn) -> list[Event]:
    """A valid stream, sometimes with the material reconcile looks at spliced into its runs:
    a subagent, overlapping tool calls, encrypted reasoning, an interrupt outcome."""
    events = draw(valid_stream())
    extras = draw(
        st.lists(
            st.sampled_from(["subagent", "parallel", "encrypted", "interrupt"]),
            max_size=3,
            unique=True,
        )
    )
    last_finish = max(
        (i for i, e in enumerate(events) if e["type"] == "RUN_FINISHED"), default=None
    )
    if last_finish is None:
        return events
    insert: list[Event] = []
    if "subagent" in extras:
        insert += subagent(draw(st.sampled_from(["researcher", "helper"])))
    if "parallel" in extras:
        insert += call("px1", "a", result=False) + call("px2", "get_weather")
    if "encrypted" in extras:
        insert += reasoning(2, encrypted=True)
    events[last_finish:last_finish] = insert
    if "interrupt" in extras:
        events[last_finish + len(insert)]["outcome"] = {
            "type": "interrupt",
            "interrupts": [{"id": "i", "reason": "r"}],
        }
    return events


def _observable(conversation: Any) -> Any:
    if conversation is None:
        return None
    return {
        name: copy.deepcopy(getattr(conversation, name, None)) for name in ("messages", "state")
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=rich_stream(),
    declaration=st.one_of(st.just(FULL), declarations),
    framing=st.sampled_from(["sse", "jsonl"]),
    with_input=st.booleans(),
    cuts=st.lists(st.integers(0, 10_000), max_size=4),
)
def test_a_declaration_changes_nothing_but_diagnostics(
    events: list[Event], declaration: Any, framing: str, with_input: bool, cuts: list[int]
) -> None:
    body = split(encode(events, framing), cuts)  # reads, so batches, cut anywhere
    if isinstance(declaration, str):  # a JSON string is sent as JSON: a str is a file path
        declaration = orjson.dumps(declaration)
    kwargs: dict[str, Any] = {"run_input": RUN_INPUT} if with_input else {}
    plain = run(body, Pipeline(), **kwargs)
    declared = run(body, Pipeline(capabilities=declaration), **kwargs)
    assert declared.events == plain.events
    assert declared.verdict == plain.verdict
    assert declared.counters == plain.counters
    assert _observable(declared.conversation) == _observable(plain.conversation)
    extra = [d for d in declared.diagnostics if d not in plain.diagnostics]
    assert all(d.code.startswith("reconcile.") for d in extra)
    assert all(d.severity != "error" for d in extra)
    if declaration is not None and not read_declaration(declaration).usable:
        assert [d.code for d in extra] == ["reconcile.declaration-unusable"]


def test_events_are_not_copied_or_mutated() -> None:
    events = stream(call("c1", "a", result=False), call("c2", "b"), reasoning(2))
    before = orjson.dumps(events)
    result = reconcile(events, FULL)
    assert orjson.dumps(result.events) == before


def test_calls_of_different_owners_do_not_overlap() -> None:
    parent = call("c1", "a", result=False)
    child = [
        {**e, "subagentRunId": "sub-1"} if e["type"].startswith("TOOL_CALL") else e
        for e in call("c2", "b")
    ]
    events = stream(
        {"type": "SUBAGENT_STARTED", "subagentRunId": "sub-1", "name": "x"},
        parent,
        child,
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "sub-1"},
    )
    result = reconcile(events, {"tools": {"parallelCalls": False}})
    assert result.verdict.completed, result.verdict
    assert findings(result) == []


def test_unlisted_names_are_bounded_per_run() -> None:
    from agui_pipeline.stages.reconcile import MAX_NAMES

    pieces: list[Event] = []
    for n in range(MAX_NAMES + 50):
        pieces += [
            {"type": "SUBAGENT_STARTED", "subagentRunId": f"s{n}", "name": f"n{n}"},
            {"type": "SUBAGENT_FINISHED", "subagentRunId": f"s{n}"},
        ]
    result = reconcile(stream(pieces), {"multiAgent": {"subagents": []}})
    assert result.verdict.completed
    assert len(findings(result)) == MAX_NAMES


@pytest.mark.parametrize("names", [4, 5, 6])
@pytest.mark.parametrize("kind", ["tool", "subagent"])
def test_the_name_cap_is_exact_for_tools_and_subagents(
    kind: str, names: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a cap of 5, 4 and 5 unlisted names are each reported, a 6th is not; a name
    said twice is reported once. Tools and subagents share the one cap."""
    from agui_pipeline.stages import reconcile as stage

    monkeypatch.setattr(stage, "MAX_NAMES", 5)
    pieces: list[list[Event] | Event] = []
    for n in [*range(names), 0]:
        if kind == "tool":
            pieces.append(call(f"c{n}-{len(pieces)}", f"n{n}"))
        else:
            started = {"type": "SUBAGENT_STARTED", "subagentRunId": f"s{len(pieces)}"}
            pieces.append(
                [
                    {**started, "name": f"n{n}"},
                    {"type": "SUBAGENT_FINISHED", "subagentRunId": started["subagentRunId"]},
                ]
            )
    declaration = (
        {"tools": {"items": [], "clientProvided": False}}
        if kind == "tool"
        else {"multiAgent": {"subagents": []}}
    )
    result = reconcile(stream(*pieces), declaration)
    assert result.verdict.completed, result.verdict
    assert len(findings(result)) == min(names, 5)


def test_a_run_starting_mid_batch_is_judged_whole() -> None:
    # Run 1's reasoning is seen in the first read; run 2 starts in the middle of the
    # second read and must be judged from its first event, like any run.
    first = stream(reasoning(1))
    second = stream(reasoning(1))
    second[0]["runId"] = second[-1]["runId"] = "r2"
    reads = [encode(first[:-1], "jsonl"), encode([first[-1], *second], "jsonl")]
    result = run(reads, Pipeline(capabilities={"reasoning": {"supported": False}}))
    assert [f[2] for f in findings(result)] == [1, len(first) + 1]


def test_messages_do_not_grow_with_producer_values() -> None:
    name = "x" * 100_000
    result = reconcile(stream(call("c1", name)), {"tools": {"items": [], "clientProvided": False}})
    (finding,) = [d for d in result.diagnostics if d.code == "reconcile.unlisted-tool"]
    assert len(finding.message) < 400


def test_one_summary_per_run_even_with_a_late_run_error() -> None:
    late = {"type": "RUN_ERROR", "message": "surfaced after the close"}
    result = reconcile([*stream(), late], {"state": {"deltas": True}})
    assert result.verdict.completed, result.verdict
    summaries = [d for d in result.diagnostics if d.code == "reconcile.run-summary"]
    assert [d.event_index for d in summaries] == [1]
    failed_first = reconcile([late], {"state": {"deltas": True}})
    summaries = [d for d in failed_first.diagnostics if d.code == "reconcile.run-summary"]
    assert len(summaries) == 1 and "(failed)" in summaries[0].message


@pytest.mark.parametrize(
    ("transport", "field"),
    [
        ("http+sse", "/transport/streaming"),
        ("sse", "/transport/streaming"),
        ("http+protobuf", "/transport/httpBinary"),
        ("http+binary", "/transport/httpBinary"),
        ("HTTP+Proto", "/transport/httpBinary"),
        ("websocket", "/transport/websocket"),
        ("jsonl", None),
        ("json", None),
        (None, None),
    ],
)
def test_transport_names(transport: str | None, field: str | None) -> None:
    from agui_pipeline.stages.reconcile import transport_field

    assert transport_field(transport) == field
