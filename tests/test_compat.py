"""The compatibility boundary (stages/compat.py) and version negotiation.

Every row of ``DEPRECATIONS.md`` that concerns events, the 0.0.57 stream
shim, ``RUN_STARTED.protocolVersion`` against the version this consumer speaks,
and the corpus's era and version fixtures reproduced through a ``Pipeline``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import pytest
from agui_pipeline import (
    Batch,
    Diagnostic,
    Options,
    Pipeline,
    RunResult,
    StreamContext,
    prepare_input,
)
from agui_pipeline.batch import Event
from agui_pipeline.stages.compat import Compat
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import corpus_file, run, through_built_in
from tests.streams import encode, valid_stream

pytestmark = pytest.mark.usefixtures("built_in_run")  # every rule on every path (conftest)


def through(events: list[Event], peer: str | None = None) -> tuple[list[Event], StreamContext]:
    """Run ``events`` through the compat stage alone, as one read (on the path
    ``built_in_run`` chose)."""
    ctx = StreamContext(Options(peer_max_protocol_version=peer))
    stage = Compat(ctx)
    batch = Batch(copy.deepcopy(events), list(range(len(events))))
    out = through_built_in([stage], batch)
    return out.events, ctx


def one(event: Event, peer: str | None = None) -> tuple[Event, StreamContext]:
    events, ctx = through([event], peer)
    assert len(events) == 1
    return events[0], ctx


def codes(ctx: StreamContext) -> list[str]:
    return [d.code for d in ctx.diagnostics]


def test_compat_runs_first_after_parse() -> None:
    names = Pipeline().stage_names
    assert names[:2] == ["parse", "compat"]
    if "enforce" in names:
        assert names.index("compat") < names.index("enforce")


def test_middleware_runs_after_compat() -> None:
    class Mine(Compat):
        name = "mine"

    names = Pipeline(middleware=[Mine]).stage_names
    assert names.index("compat") < names.index("mine")


# --- THINKING_* → REASONING_* -------------------------------------------------------------

RETIRED_EVENTS = [
    ("THINKING_START", "REASONING_START"),
    ("THINKING_END", "REASONING_END"),
    ("THINKING_TEXT_MESSAGE_START", "REASONING_MESSAGE_START"),
    ("THINKING_TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"),
    ("THINKING_TEXT_MESSAGE_END", "REASONING_MESSAGE_END"),
]


@pytest.mark.parametrize(("retired", "replacement"), RETIRED_EVENTS)
def test_a_retired_thinking_event_is_translated_with_a_warning(
    retired: str, replacement: str
) -> None:
    event, ctx = one({"type": retired, "delta": "x", "timestamp": 5})
    assert event["type"] == replacement
    assert type(event["messageId"]) is str
    assert event["timestamp"] == 5
    (warning,) = ctx.diagnostics
    assert warning.code == "compat.retired-event"
    assert warning.severity == "warning"
    assert warning.pointer == ""
    assert retired in str(warning) and replacement in str(warning)


def test_thinking_ids_tie_a_span_and_a_message_together() -> None:
    events, _ = through(
        [
            {"type": "THINKING_START"},
            {"type": "THINKING_TEXT_MESSAGE_START"},
            {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "a"},
            {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "b"},
            {"type": "THINKING_TEXT_MESSAGE_END"},
            {"type": "THINKING_TEXT_MESSAGE_START"},
            {"type": "THINKING_TEXT_MESSAGE_END"},
            {"type": "THINKING_END"},
        ]
    )
    ids = [event["messageId"] for event in events]
    span, first, second = ids[0], ids[1], ids[5]
    assert ids == [span, first, first, first, first, second, second, span]
    assert len({span, first, second}) == 3
    assert events[1]["role"] == "reasoning"


def test_a_producer_messageid_on_a_thinking_event_is_kept() -> None:
    events, _ = through(
        [
            {"type": "THINKING_TEXT_MESSAGE_START", "messageId": "mine"},
            {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "a"},
        ]
    )
    assert [event["messageId"] for event in events] == ["mine", "mine"]


def test_an_orphaned_thinking_fragment_names_nothing_open() -> None:
    """The boundary does not invent the message a fragment continues: verify rejects it."""
    events, _ = through(
        [
            {"type": "THINKING_TEXT_MESSAGE_START"},
            {"type": "THINKING_TEXT_MESSAGE_END"},
            {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "late"},
        ]
    )
    assert events[2]["messageId"] != events[0]["messageId"]


def test_a_thinking_span_title_has_no_replacement_and_the_warning_says_so() -> None:
    event, ctx = one({"type": "THINKING_START", "title": "Working"})
    assert "title" not in event
    assert '"Working" was dropped' in str(ctx.diagnostics[0])


# --- whole-field nulls: the DEPRECATIONS.md list, and only that list ------------------------

NULL_ROWS = (
    [
        (
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c",
                "toolCallName": "f",
                "parentMessageId": None,
            },
            "/parentMessageId",
        ),
        ({"type": "TOOL_CALL_CHUNK", "parentMessageId": None}, "/parentMessageId"),
        ({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": None}, "/outcome"),
        (
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "", "rawEvent": None},
            "/rawEvent",
        ),
        ({"type": "CUSTOM", "name": "n", "value": 1, "rawEvent": None}, "/rawEvent"),
        ({"type": "SOMETHING_NEW", "rawEvent": None}, "/rawEvent"),
        ({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": None}, "/result"),
        ({"type": "SUBAGENT_FINISHED", "subagentRunId": "s", "result": None}, "/result"),
        (
            {
                "type": "RUN_STARTED",
                "threadId": "t",
                "runId": "r",
                "input": {
                    "threadId": "t",
                    "runId": "r",
                    "messages": [],
                    "resume": [{"interruptId": "i", "status": "resolved", "payload": None}],
                },
            },
            "/input/resume/0/payload",
        ),
        (
            {
                "type": "RUN_STARTED",
                "threadId": "t",
                "runId": "r",
                "input": {
                    "threadId": "t",
                    "runId": "r",
                    "messages": [],
                    "tools": [{"name": "f", "description": "d", "parameters": None}],
                },
            },
            "/input/tools/0/parameters",
        ),
        (
            {
                "type": "RUN_STARTED",
                "threadId": "t",
                "runId": "r",
                "input": {"threadId": "t", "runId": "r", "messages": [], "forwardedProps": None},
            },
            "/input/forwardedProps",
        ),
    ]
    + [
        (
            {
                "type": "MESSAGES_SNAPSHOT",
                "messages": [
                    {
                        "id": "u",
                        "role": "user",
                        "content": [
                            {
                                "type": kind,
                                "source": {"type": "url", "value": "u"},
                                "metadata": None,
                            }
                        ],
                    }
                ],
            },
            "/messages/0/content/0/metadata",
        )
        for kind in ("image", "audio", "video", "document")
    ]
    + [
        (
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": "m",
                "toolCallId": "c",
                "content": [
                    {"type": "text", "text": "t"},
                    {"type": "image", "source": {"type": "url", "value": "u"}, "metadata": None},
                ],
            },
            "/content/1/metadata",
        ),
        (
            {
                "type": "RUN_STARTED",
                "threadId": "t",
                "runId": "r",
                "input": {
                    "threadId": "t",
                    "runId": "r",
                    "messages": [
                        {
                            "id": "u",
                            "role": "user",
                            "content": [
                                {
                                    "type": "audio",
                                    "source": {"type": "url", "value": "u"},
                                    "metadata": None,
                                }
                            ],
                        }
                    ],
                },
            },
            "/input/messages/0/content/0/metadata",
        ),
    ]
)


def _at(document: Any, pointer: str) -> Any:
    node = document
    for token in pointer.strip("/").split("/"):
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


@pytest.mark.parametrize(("event", "pointer"), NULL_ROWS)
def test_a_listed_null_becomes_an_absent_field(event: Event, pointer: str) -> None:
    translated, ctx = one(event)
    holder, field = pointer.rsplit("/", 1)
    assert field not in (_at(translated, holder) if holder else translated)
    (warning,) = ctx.diagnostics
    assert warning.code == "compat.retired-null"
    assert warning.severity == "warning"
    assert warning.pointer == pointer
    assert pointer in str(warning) and f"'{field}: null'" in str(warning)


NOT_LISTED = [
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant", "metadata": None},
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "parentRunId": None},
    {"type": "CUSTOM", "name": "n", "value": None},
    {"type": "STATE_SNAPSHOT", "snapshot": None},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "", "metadata": {"k": None}},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "", "parentMessageId": None},
    {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f", "result": None},
    {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {
                "id": "u",
                "role": "user",
                "metadata": None,
                "content": [{"type": "text", "text": "t", "metadata": None}],
            }
        ],
    },
    {
        "type": "RUN_STARTED",
        "threadId": "t",
        "runId": "r",
        "input": {"threadId": "t", "runId": "r", "messages": [], "state": None},
    },
    {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "outcome": {"type": "success"},
        "rawEvent": {"x": None},
    },
]


@pytest.mark.parametrize("event", NOT_LISTED)
def test_a_null_not_on_the_list_is_left_for_enforcement(event: Event) -> None:
    translated, ctx = one(event)
    assert translated == event
    assert ctx.diagnostics == []


# --- binary content parts → media parts --------------------------------------------------------

BINARY = {"type": "binary", "mimeType": "image/png", "url": "https://example.com/a.png"}
IMAGE = {
    "type": "image",
    "source": {"type": "url", "value": "https://example.com/a.png", "mimeType": "image/png"},
}


@pytest.mark.parametrize(
    ("event", "pointer"),
    [
        (
            {
                "type": "MESSAGES_SNAPSHOT",
                "messages": [
                    {"id": "u", "role": "user", "content": [{"type": "text", "text": "t"}, BINARY]}
                ],
            },
            "/messages/0/content/1",
        ),
        (
            {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": [BINARY]},
            "/content/0",
        ),
        (
            {
                "type": "RUN_STARTED",
                "threadId": "t",
                "runId": "r",
                "input": {
                    "threadId": "t",
                    "runId": "r",
                    "messages": [{"id": "u", "role": "user", "content": [BINARY]}],
                },
            },
            "/input/messages/0/content/0",
        ),
    ],
)
def test_a_binary_part_becomes_a_media_part(event: Event, pointer: str) -> None:
    translated, ctx = one(event)
    assert _at(translated, pointer) == IMAGE
    (warning,) = ctx.diagnostics
    assert warning.code == "compat.retired-binary-part"
    assert warning.pointer == pointer
    assert "binary" in str(warning) and "image part" in str(warning) and pointer in str(warning)


@pytest.mark.parametrize(
    ("legacy", "kind", "source"),
    [
        ({"mimeType": "audio/ogg", "data": "AAA="}, "audio", {"type": "data", "value": "AAA="}),
        ({"mimeType": "video/mp4", "id": "file-1"}, "video", {"type": "file", "value": "file-1"}),
        ({"mimeType": "text/csv", "url": "u"}, "document", {"type": "url", "value": "u"}),
    ],
)
def test_the_mime_type_chooses_the_media_part(
    legacy: dict[str, Any], kind: str, source: dict[str, Any]
) -> None:
    event = {
        "type": "TOOL_CALL_RESULT",
        "messageId": "m",
        "toolCallId": "c",
        "content": [{"type": "binary", **legacy}],
    }
    translated, _ = one(event)
    assert translated["content"] == [
        {"type": kind, "source": {**source, "mimeType": legacy["mimeType"]}}
    ]


def test_a_binary_part_that_cannot_be_translated_is_left_for_enforcement() -> None:
    event = {
        "type": "TOOL_CALL_RESULT",
        "messageId": "m",
        "toolCallId": "c",
        "content": [{"type": "binary", "url": "u"}, {"type": "binary", "mimeType": "a/b"}],
    }
    translated, ctx = one(event)
    assert translated == event
    assert ctx.diagnostics == []


def test_a_lossy_binary_translation_names_what_it_could_not_carry() -> None:
    legacy = {**BINARY, "data": "AAA=", "filename": "a.png", "future": 1}
    event = {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": [legacy]}
    translated, ctx = one(event)
    part = translated["content"][0]
    assert part["source"]["type"] == "data"
    assert part["future"] == 1  # undescribed material stays for enforcement to strip
    assert "'url', 'filename'" in str(ctx.diagnostics[0])


# --- version negotiation ---------------------------------------------------------------------


def run_started(**fields: Any) -> Event:
    return {"type": "RUN_STARTED", "threadId": "t", "runId": "r", **fields}


@pytest.mark.parametrize("declared", ["1.2", "1.10", "2.0", "10.0"])
def test_a_newer_producer_proceeds_with_a_warning(declared: str) -> None:
    event, ctx = one(run_started(protocolVersion=declared))
    assert event["protocolVersion"] == declared
    (warning,) = ctx.diagnostics
    assert warning.code == "compat.version-newer"
    assert warning.pointer == "/protocolVersion"
    assert declared in str(warning) and "1.1" in str(warning)


@pytest.mark.parametrize("declared", ["v2", "1", "1.x", "1.1.0", "", " 1.1", "01.1", "1.-1"])
def test_an_uninterpretable_declaration_is_handled_like_a_newer_one(declared: str) -> None:
    _, ctx = one(run_started(protocolVersion=declared))
    (warning,) = ctx.diagnostics
    assert warning.code == "compat.version-uninterpretable"
    assert warning.severity == "warning"
    assert json.dumps(declared) in str(warning)


@pytest.mark.parametrize("declared", ["1.1", "1.0", "0.9", "0.0.57", None])
def test_the_same_an_older_or_no_declaration_is_quiet(declared: str | None) -> None:
    event = run_started() if declared is None else run_started(protocolVersion=declared)
    _, ctx = one(event)
    assert ctx.diagnostics == []


def test_a_huge_declaration_or_title_is_cut_short_in_the_warning() -> None:
    _, ctx = through(
        [
            run_started(protocolVersion="9" * 1_000_000),
            {"type": "THINKING_START", "title": "x" * 10**6},
        ]
    )
    assert len(ctx.diagnostics) == 2
    assert all(len(str(d)) < 1_000 for d in ctx.diagnostics)


def test_a_deeply_nested_title_is_named_not_printed() -> None:
    nested = b"[" * 1000 + b"]" * 1000
    event = orjson.loads(b'{"type": "THINKING_START", "title": ' + nested + b"}")
    ctx = StreamContext(Options())
    through_built_in([Compat(ctx)], Batch([event], [0]))
    assert "an array" in str(ctx.diagnostics[0])


@pytest.mark.parametrize("declared", ["1." + "9" * 5000, "9" * 5000 + ".1", "0.0." + "7" * 5000])
def test_a_version_with_endless_digits_is_uninterpretable_not_a_crash(declared: str) -> None:
    _, ctx = one(run_started(protocolVersion=declared))
    assert codes(ctx) == ["compat.version-uninterpretable"]


def test_a_declaration_that_is_not_a_string_is_enforcements_business() -> None:
    _, ctx = one(run_started(protocolVersion=1.2))
    assert ctx.diagnostics == []


def test_each_run_declares_its_own_version() -> None:
    events = [
        run_started(protocolVersion="1.1"),
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
        run_started(runId="r2", protocolVersion="1.3"),
    ]
    _, ctx = through(events)
    assert [(d.code, d.event_index) for d in ctx.diagnostics] == [("compat.version-newer", 2)]


# --- the 0.0.57 stream shim: no subagents ----------------------------------------------------

SUBAGENT_STREAM: list[Event] = [
    run_started(
        input={
            "threadId": "t",
            "runId": "r",
            "messages": [{"id": "a0", "role": "assistant", "content": "x", "subagentRunId": "s0"}],
        }
    ),
    {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "researcher"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant", "subagentRunId": "s1"},
    {"type": "SUBAGENT_ERROR", "subagentRunId": "s2", "message": "no"},
    {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [{"id": "m", "role": "assistant", "content": "", "subagentRunId": "s1"}],
    },
    {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1"},
    {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "outcome": {
            "type": "interrupt",
            "interrupts": [{"id": "i", "reason": "r", "subagentRunId": "s1"}],
        },
    },
]


@pytest.mark.parametrize("peer", ["0.0.57", "0.0.45", "0.0.39"])
def test_an_old_peer_loses_subagent_events_and_attribution(peer: str) -> None:
    events, ctx = through(SUBAGENT_STREAM, peer)
    assert [e["type"] for e in events] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]
    assert "subagentRunId" not in json.dumps(events)
    assert ctx.counters.dropped == 3
    assert ctx.counters.stripped == 4
    dropped = [d for d in ctx.diagnostics if d.code == "compat.peer-downgrade-dropped"]
    assert [(d.event_index, d.severity) for d in dropped] == [
        (1, "warning"),
        (3, "warning"),
        (5, "warning"),
    ]
    assert "SUBAGENT_STARTED dropped" in str(dropped[0]) and peer in str(dropped[0])
    stripped = [d for d in ctx.diagnostics if d.code == "compat.peer-downgrade-stripped"]
    assert [(d.severity, d.pointer) for d in stripped] == [
        ("info", "/input/messages/0/subagentRunId")
    ]


@pytest.mark.parametrize("peer", [None, "0.0.58", "1.0", "1.1"])
def test_a_newer_peer_keeps_subagents(peer: str | None) -> None:
    events, ctx = through(SUBAGENT_STREAM, peer)
    assert events == SUBAGENT_STREAM
    assert ctx.diagnostics == []
    assert ctx.counters.dropped == ctx.counters.stripped == 0


def test_the_shims_run_after_the_always_on_boundary() -> None:
    """A retired null on a dropped event still reads as translated, then the event goes."""
    stream = [{"type": "SUBAGENT_FINISHED", "subagentRunId": "s", "result": None}]
    events, ctx = through(stream, "0.0.57")
    assert events == []
    assert codes(ctx) == ["compat.retired-null", "compat.peer-downgrade-dropped"]


@pytest.mark.parametrize("peer", ["v2", "1", "latest", "1.1.0"])
def test_an_unusable_peer_setting_is_a_configuration_error(peer: str) -> None:
    with pytest.raises(ValueError, match="peer_max_protocol_version"):
        Compat(StreamContext(Options(peer_max_protocol_version=peer)))


# --- a hostile producer cannot crash it --------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["type", "content", "messages", "input", "source", "metadata", "x"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=10,
)
_types = (
    st.sampled_from(
        [
            "THINKING_START",
            "THINKING_END",
            "THINKING_TEXT_MESSAGE_START",
            "THINKING_TEXT_MESSAGE_CONTENT",
            "THINKING_TEXT_MESSAGE_END",
            "RUN_STARTED",
            "RUN_FINISHED",
            "MESSAGES_SNAPSHOT",
            "TOOL_CALL_RESULT",
            "TOOL_CALL_START",
            "SUBAGENT_STARTED",
            "SUBAGENT_FINISHED",
        ]
    )
    | _json
)
_fields = st.dictionaries(
    st.sampled_from(
        [
            "messageId",
            "protocolVersion",
            "input",
            "messages",
            "content",
            "outcome",
            "result",
            "rawEvent",
            "parentMessageId",
            "subagentRunId",
            "title",
            "role",
        ]
    ),
    _json,
    max_size=5,
)


@settings(deadline=None)  # the shared machine's load, not the code, sets the pace
@given(st.lists(st.tuples(_types, _fields), max_size=6), st.sampled_from([None, "0.0.39"]))
def test_any_shape_passes_without_an_exception(
    shapes: list[tuple[Any, dict[str, Any]]], peer: str | None
) -> None:
    events = [{"type": kind, **fields} for kind, fields in shapes]
    through(events, peer)


# --- the corpus's era and version fixtures, stream half -----------------------------------------


def _fixture(name: str) -> tuple[dict[str, Any], RunResult, list[Diagnostic]]:
    """Both halves, as a client runs a fixture: the input prepared, then the stream read."""
    fixture = json.loads(corpus_file(name).read_text())
    peer = fixture.get("client", {}).get("maxProtocolVersion")
    first = fixture["stream"][0]
    raw = {"threadId": first["threadId"], "runId": first["runId"], "messages": []}
    prepared = prepare_input({**raw, **fixture.get("input", {})}, peer_max_protocol_version=peer)
    stream = b"".join(orjson.dumps(event) + b"\n" for event in fixture["stream"])
    result = run(stream, Pipeline(peer_max_protocol_version=peer), run_input=prepared.body)
    return fixture["expect"], result, result.warnings + prepared.warnings


@pytest.mark.parametrize(
    "name",
    [
        "era-0-0-39-flattens-content",
        "era-0-0-45-thinking-translated",
        "era-0-0-47-upgrades-binary-content",
        "era-current-peer-keeps-modern-content",
        "era-pinned-peer-omits-protocol-version",
        "current-peer-declares-protocol-version",
        "producer-declares-newer-version-warns",
        "producer-declares-same-version-quiet",
    ],
)
def test_fixture_stream_half(name: str) -> None:
    expect, result, warnings = _fixture(name)
    assert result.verdict.outcome == expect["outcome"], result.verdict
    if "eventTypes" in expect:
        assert [e["type"] for e in result.events] == expect["eventTypes"]
    for text in expect.get("warnings", []):
        assert any(text in str(w) for w in warnings), (text, warnings)
    if expect.get("noWarnings"):
        assert warnings == []


def test_era_0_0_45_delivers_well_formed_reasoning() -> None:
    _, result, _ = _fixture("era-0-0-45-thinking-translated")
    reasoning: list[Any] = [e for e in result.events if e["type"].startswith("REASONING")]
    assert [e["type"] for e in reasoning] == [
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
    ]
    assert reasoning[2]["delta"] == "Let me check."
    assert reasoning[1]["messageId"] == reasoning[2]["messageId"] == reasoning[3]["messageId"]
    assert reasoning[0]["messageId"] == reasoning[4]["messageId"]


def test_the_current_peer_fixture_loses_its_subagents_when_pinned_to_0_0_57() -> None:
    fixture = json.loads(corpus_file("era-current-peer-keeps-modern-content").read_text())
    stream = b"".join(orjson.dumps(event) + b"\n" for event in fixture["stream"])
    result = run(stream, Pipeline(peer_max_protocol_version="0.0.57"))
    assert [e["type"] for e in result.events] == ["RUN_STARTED", "RUN_FINISHED"]
    assert result.counters.dropped == 2
    assert any("SUBAGENT_STARTED" in str(w) for w in result.warnings)


# --- properties over valid streams -----------------------------------------------------------


@settings(deadline=None)  # the shared machine's load, not the code, sets the pace
@given(valid_stream())
def test_a_current_stream_passes_untouched_and_quietly(stream: list[Event]) -> None:
    events, ctx = through(stream)
    assert events == stream
    assert ctx.diagnostics == []


_RETIRED_SPELLING = {current: retired for retired, current in RETIRED_EVENTS}
_NULLABLE = {
    "TOOL_CALL_START": ("parentMessageId", "rawEvent"),
    "RUN_FINISHED": ("outcome", "result", "rawEvent"),
    "TEXT_MESSAGE_CONTENT": ("rawEvent",),
    "RUN_STARTED": ("rawEvent",),
}


@st.composite
def retired_spelling(draw: st.DrawFn) -> tuple[list[Event], list[Event], int]:
    """A valid stream, the same stream as an older producer spelled it, and how many
    retired shapes that spelling holds."""
    modern = draw(valid_stream())
    thinking = draw(st.booleans())  # all reasoning retired or none: ids must still pair up
    legacy: list[Event] = []
    retired = 0
    for event in copy.deepcopy(modern):
        kind = event["type"]
        if thinking and kind in _RETIRED_SPELLING:
            event = {k: v for k, v in event.items() if k not in ("messageId", "role")}
            event["type"] = _RETIRED_SPELLING[kind]
            retired += 1
        nullable = [f for f in _NULLABLE.get(kind, ()) if f not in event]
        if nullable:
            for field in draw(st.lists(st.sampled_from(nullable), unique=True)):
                event[field] = None
                retired += 1
        legacy.append(event)
    return modern, legacy, retired


def _reasoning_ids_by_order(events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Reasoning ids renamed by first appearance: the boundary assigns its own."""
    names: dict[str, str] = {}
    out = []
    for event in events:
        if event["type"].startswith("REASONING") and "messageId" in event:
            event = {**event, "messageId": names.setdefault(event["messageId"], f"r{len(names)}")}
        out.append(event)
    return out


@settings(deadline=None)  # the shared machine's load, not the code, sets the pace
@given(retired_spelling())
def test_a_retired_spelling_delivers_what_the_current_one_does(
    case: tuple[list[Event], list[Event], int],
) -> None:
    modern, legacy, retired = case
    current = run(encode(modern, "jsonl"))
    old = run(encode(legacy, "jsonl"))
    assert old.verdict.outcome == current.verdict.outcome
    assert _reasoning_ids_by_order(old.events) == _reasoning_ids_by_order(current.events)
    translated = [d for d in old.warnings if d.code.startswith("compat.retired-")]
    assert len(translated) == retired
    others = [d.code for d in old.warnings if not d.code.startswith("compat.retired-")]
    assert others == [d.code for d in current.warnings]
