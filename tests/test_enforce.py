"""The enforce stage, rule by rule (``/spec/1.1/basic/processing``).

Each test runs ``Enforce`` alone on one batch, so it judges enforcement and
nothing else; the last ones check its place in the default pipeline and the
corpus fixtures that exercise it.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from typing import Any

import anyio
import pytest
from agui_pipeline import Batch, Options, Pipeline, Stage, StreamContext, StreamRejected, _cores
from agui_pipeline._engine.order import canonical_order
from agui_pipeline.events import EventType
from agui_pipeline.stages.enforce import Enforce

from tests.conftest import corpus_file, in_a_child, through_built_in

pytestmark = pytest.mark.usefixtures("built_in_run")  # every rule on every path (conftest)

RUN = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}


class Outcome:
    def __init__(
        self, events: list[dict[str, Any]], ctx: StreamContext, error: StreamRejected | None
    ) -> None:
        self.events = events
        self.ctx = ctx
        self.error = error
        self.warnings = [str(d) for d in ctx.diagnostics]


def enforce(*events: dict[str, Any]) -> Outcome:
    """Run one batch through a fresh ``Enforce`` as the engine runs it (on the path
    ``built_in_run`` chose); the rejection is returned, not raised."""
    ctx = StreamContext(Options())
    stage = Enforce(ctx)
    batch = Batch(list(events), list(range(len(events))))
    try:
        out = through_built_in([stage], batch)
    except StreamRejected as error:
        accepted = error.kept.events if error.kept is not None else []
        return Outcome(accepted, ctx, error)
    return Outcome(out.events, ctx, None)


def rejected(*events: dict[str, Any]) -> StreamRejected:
    outcome = enforce(*events)
    assert outcome.error is not None, f"not rejected; delivered {outcome.events}"
    return outcome.error


# --- clean events ------------------------------------------------------------------


def test_clean_batch_passes_untouched_and_quiet() -> None:
    events: list[dict[str, Any]] = [
        dict(RUN, protocolVersion="1.1", timestamp=1_767_225_600_000),
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "user", "name": "ann"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m", "subagentRunId": "s"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "success"}},
    ]
    before = copy.deepcopy(events)
    ctx = StreamContext(Options())
    batch = Batch(events, list(range(len(events))))
    out = through_built_in([Enforce(ctx)], batch)
    assert out is batch
    assert out.events == before
    assert ctx.diagnostics == []
    assert (ctx.counters.dropped, ctx.counters.stripped) == (0, 0)


def test_every_event_type_is_recognised() -> None:
    # The smallest valid event of each type passes without a word.
    minimal: dict[str, dict[str, Any]] = {
        "TEXT_MESSAGE_START": {"messageId": "m"},
        "TEXT_MESSAGE_CONTENT": {"messageId": "m", "delta": ""},
        "TEXT_MESSAGE_END": {"messageId": "m"},
        "TEXT_MESSAGE_CHUNK": {},
        "TOOL_CALL_START": {"toolCallId": "c", "toolCallName": "f"},
        "TOOL_CALL_ARGS": {"toolCallId": "c", "delta": "{"},
        "TOOL_CALL_END": {"toolCallId": "c"},
        "TOOL_CALL_CHUNK": {},
        "TOOL_CALL_RESULT": {"messageId": "m", "toolCallId": "c", "content": "ok"},
        "STATE_SNAPSHOT": {"snapshot": None},
        "STATE_DELTA": {"delta": []},
        "MESSAGES_SNAPSHOT": {"messages": []},
        "ACTIVITY_SNAPSHOT": {"messageId": "m", "activityType": "plan", "content": {}},
        "ACTIVITY_DELTA": {"messageId": "m", "activityType": "plan", "patch": []},
        "RAW": {"event": None},
        "CUSTOM": {"name": "x", "value": None},
        "RUN_STARTED": {"threadId": "t", "runId": "r"},
        "RUN_FINISHED": {"threadId": "t", "runId": "r"},
        "RUN_ERROR": {"message": "boom"},
        "STEP_STARTED": {"stepName": "s"},
        "STEP_FINISHED": {"stepName": "s"},
        "REASONING_START": {"messageId": "m"},
        "REASONING_MESSAGE_START": {"messageId": "m", "role": "reasoning"},
        "REASONING_MESSAGE_CONTENT": {"messageId": "m", "delta": "d"},
        "REASONING_MESSAGE_END": {"messageId": "m"},
        "REASONING_MESSAGE_CHUNK": {},
        "REASONING_END": {"messageId": "m"},
        "REASONING_ENCRYPTED_VALUE": {"subtype": "message", "entityId": "m", "encryptedValue": "x"},
        "SUBAGENT_STARTED": {"subagentRunId": "s", "name": "n"},
        "SUBAGENT_FINISHED": {"subagentRunId": "s"},
        "SUBAGENT_ERROR": {"subagentRunId": "s", "message": "m"},
    }
    assert set(minimal) == set(EventType)
    events = [{"type": name, **fields} for name, fields in minimal.items()]
    outcome = enforce(*copy.deepcopy(events))
    assert outcome.error is None
    assert outcome.events == events
    assert outcome.warnings == []


# --- unknown events are dropped ------------------------------------------------------


def test_unknown_event_type_is_dropped_with_a_warning_naming_it() -> None:
    outcome = enforce(RUN, {"type": "FUTURE_EVENT", "somethingNew": True}, RUN)
    assert outcome.error is None
    assert outcome.events == [RUN, RUN]
    assert len(outcome.warnings) == 1
    assert "FUTURE_EVENT" in outcome.warnings[0]
    assert outcome.ctx.diagnostics[0].code == "enforce.unknown-event"
    assert outcome.ctx.diagnostics[0].event_index == 1
    assert outcome.ctx.counters.dropped == 1


@pytest.mark.parametrize("kind", [None, 7, ["RUN_STARTED"], {"a": 1}])
def test_a_type_that_is_not_a_string_is_malformed(kind: Any) -> None:
    error = rejected({"type": kind})
    assert error.code == "enforce.malformed"
    assert error.pointer == "/type"


def test_an_event_without_a_type_is_malformed() -> None:
    error = rejected({"threadId": "t"})
    assert error.pointer == "/type"
    assert "absent" in str(error)


# --- unrecognised members are stripped -----------------------------------------------


def test_undescribed_property_is_stripped_with_its_pointer() -> None:
    event = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x", "futureProp": 1}
    outcome = enforce(event)
    assert outcome.events == [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}]
    assert len(outcome.warnings) == 1
    assert "/futureProp" in outcome.warnings[0]
    assert outcome.ctx.diagnostics[0].pointer == "/futureProp"
    assert outcome.ctx.counters.stripped == 1


@pytest.mark.parametrize(
    ("key", "token"), [("a/b~c", "a~1b~0c"), ("a/b", "a~1b"), ("~c", "~0c"), ("ab", "ab")]
)
def test_pointer_tokens_are_escaped(key: str, token: str) -> None:
    outcome = enforce({**RUN, key: 1})
    assert outcome.ctx.diagnostics[0].pointer == f"/{token}"


def test_a_huge_undescribed_key_is_named_abbreviated() -> None:
    key = "k" * 1_000_000
    outcome = enforce({**RUN, key: 1})
    assert outcome.events == [RUN]
    diagnostic = outcome.ctx.diagnostics[0]
    assert diagnostic.pointer == "/" + "k" * 200 + "…"
    assert len(diagnostic.message) < 1_000


@pytest.mark.parametrize("length", [199, 200, 201])
def test_a_member_name_is_abbreviated_past_200_characters(length: int) -> None:
    """Up to 200 characters a name is its own pointer token; from 201 on, its first 200
    and "…"."""
    key = "k" * length
    outcome = enforce({**RUN, key: 1})
    expected = key if length <= 200 else "k" * 200 + "…"
    assert outcome.ctx.diagnostics[0].pointer == f"/{expected}"


def test_undescribed_property_in_a_nested_document_is_stripped() -> None:
    started = {
        **RUN,
        "input": {
            "threadId": "t",
            "runId": "r",
            "messages": [{"id": "u", "role": "user", "content": "hi", "mood": "happy"}],
            "tools": [{"name": "f", "description": "d", "parameters": {"type": "object"}}],
            "future": [],
        },
    }
    outcome = enforce(started)
    assert outcome.error is None
    pointers = [d.pointer for d in outcome.ctx.diagnostics]
    assert pointers == ["/input/messages/0/mood", "/input/future"]
    assert outcome.events[0]["input"] == {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": "u", "role": "user", "content": "hi"}],
        "tools": [{"name": "f", "description": "d", "parameters": {"type": "object"}}],
    }
    assert outcome.ctx.counters.stripped == 2


def test_unknown_role_in_an_optional_position_is_stripped() -> None:
    # The conformance corpus pins the reference client's gap (fatal); the spec strips.
    outcome = enforce({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "narrator"})
    assert outcome.error is None
    assert outcome.events == [{"type": "TEXT_MESSAGE_START", "messageId": "m"}]
    assert "/role" in outcome.warnings[0]
    assert "narrator" in outcome.warnings[0]


def test_unknown_content_part_kind_is_dropped_from_its_list() -> None:
    result = {
        "type": "TOOL_CALL_RESULT",
        "messageId": "m",
        "toolCallId": "c",
        "content": [
            {"type": "hologram", "uri": "x"},
            {"type": "text", "text": "kept"},
        ],
    }
    outcome = enforce(result)
    assert outcome.events[0]["content"] == [{"type": "text", "text": "kept"}]
    assert [d.pointer for d in outcome.ctx.diagnostics] == ["/content/0"]
    assert "hologram" in outcome.warnings[0]


def test_unknown_source_kind_removes_the_part_that_requires_it() -> None:
    snapshot = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {
                "id": "u",
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image", "source": {"type": "hologram", "value": "x"}, "extra": 1},
                ],
            }
        ],
    }
    outcome = enforce(snapshot)
    assert outcome.events[0]["messages"][0]["content"] == [{"type": "text", "text": "look"}]
    # One removal, the part; not the undescribed member inside it as well.
    assert [d.pointer for d in outcome.ctx.diagnostics] == ["/messages/0/content/1"]
    assert "/messages/0/content/1/source/type" in outcome.warnings[0]
    assert outcome.ctx.counters.stripped == 1


def test_message_of_unknown_role_is_dropped_from_a_snapshot() -> None:
    snapshot = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {"id": "a", "role": "narrator", "content": "once upon a time"},
            {"id": "b", "role": "assistant", "content": "hello"},
        ],
    }
    outcome = enforce(snapshot)
    assert outcome.events[0]["messages"] == [{"id": "b", "role": "assistant", "content": "hello"}]
    assert [d.pointer for d in outcome.ctx.diagnostics] == ["/messages/0"]


def test_unknown_outcome_is_stripped_and_the_run_reads_as_success() -> None:
    finished = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    outcome = enforce({**finished, "outcome": {"type": "paused"}})
    assert outcome.events == [finished]
    assert outcome.ctx.diagnostics[0].pointer == "/outcome"
    assert "paused" in outcome.warnings[0]


def test_unknown_patch_op_is_dropped_and_the_rest_of_the_patch_kept() -> None:
    delta = {
        "type": "STATE_DELTA",
        "delta": [
            {"op": "increment", "path": "/count", "value": 1},
            {"op": "replace", "path": "/count", "value": 5},
        ],
    }
    outcome = enforce(delta)
    assert outcome.events[0]["delta"] == [{"op": "replace", "path": "/count", "value": 5}]
    assert "/delta/0" in outcome.warnings[0]


def test_unknown_value_in_a_required_position_of_the_event_drops_the_event() -> None:
    # /spec/1.1/events/reasoning, Error Handling: "in a required position removes
    # the event that carried it".
    event = {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "future-kind",
        "entityId": "m",
        "encryptedValue": "x",
    }
    outcome = enforce(RUN, event)
    assert outcome.error is None
    assert outcome.events == [RUN]
    assert outcome.ctx.diagnostics[0].code == "enforce.unrecognised-required"
    assert outcome.ctx.diagnostics[0].pointer == "/subtype"
    assert outcome.ctx.counters.dropped == 1
    assert outcome.ctx.counters.stripped == 0


def test_unknown_resume_status_drops_the_entry() -> None:
    started = {
        **RUN,
        "input": {
            "threadId": "t",
            "runId": "r",
            "messages": [],
            "resume": [
                {"interruptId": "i1", "status": "deferred"},
                {"interruptId": "i2", "status": "resolved", "payload": {"ok": True}},
            ],
        },
    }
    outcome = enforce(started)
    assert outcome.events[0]["input"]["resume"] == [
        {"interruptId": "i2", "status": "resolved", "payload": {"ok": True}}
    ]
    assert [d.pointer for d in outcome.ctx.diagnostics] == ["/input/resume/0"]


# --- open objects are data -------------------------------------------------------------


def test_open_objects_pass_untouched_and_quietly() -> None:
    events: list[dict[str, Any]] = [
        {
            "type": "TEXT_MESSAGE_START",
            "messageId": "m",
            "metadata": {"acme/trace": "t-7", "acme/parent": None, "nested": {"any": [1, None]}},
            "rawEvent": {"provider": {"whatever": None}},
        },
        {"type": "STATE_SNAPSHOT", "snapshot": {"a": None, "b": [{"c": {}}]}},
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "m",
            "activityType": "p",
            "content": {"x": None},
        },
        {"type": "CUSTOM", "name": "com.example.x", "value": None},
        {"type": "RAW", "event": [1, "two", None], "source": "openai"},
        {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "remove", "path": "/a", "value": "leftover", "comment": "RFC 6902 §4"},
                {"op": "add", "path": "", "value": None},
                {"op": "move", "from": "/b~0c", "path": "/d~1e"},
            ],
        },
        {
            **RUN,
            "input": {
                "threadId": "t",
                "runId": "r",
                "messages": [],
                "state": {"k": None},
                "forwardedProps": {"anything": [None]},
                "tools": [{"name": "f", "description": "d", "parameters": {"$defs": {}}}],
            },
        },
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "result": {"rows": [None]},
            "outcome": {
                "type": "interrupt",
                "interrupts": [
                    {
                        "id": "i",
                        "reason": "approval",
                        "responseSchema": {"type": "object", "x-vendor": None},
                        "metadata": {"k": None},
                    }
                ],
            },
        },
    ]
    before = copy.deepcopy(events)
    outcome = enforce(*events)
    assert outcome.error is None
    assert outcome.warnings == []
    assert outcome.events == before


def test_null_under_a_metadata_key_is_data() -> None:
    event = {"type": "TEXT_MESSAGE_END", "messageId": "m", "metadata": {"k": None}}
    outcome = enforce(copy.deepcopy(event))
    assert outcome.events == [event]
    assert outcome.warnings == []


# --- malformed known values reject the stream ---------------------------------------------


def test_wrong_type_on_a_described_field_is_fatal() -> None:
    error = rejected(RUN, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 42})
    assert error.code == "enforce.malformed"
    assert error.event_index == 1
    assert error.pointer == "/delta"
    assert "/delta" in error.detail
    assert "expected string, received number 42" in error.detail
    assert error.spec == "/spec/1.1/basic/processing"
    assert "schema.json#TextMessageContentEvent" in error.detail


def test_missing_required_field_is_fatal() -> None:
    error = rejected({"type": "SUBAGENT_STARTED", "subagentRunId": "s"})
    assert error.pointer == "/name"
    assert "required" in error.detail


@pytest.mark.parametrize(
    ("event", "pointer"),
    [
        ({**RUN, "timestamp": 2**53}, "/timestamp"),
        ({**RUN, "timestamp": -(2**53)}, "/timestamp"),
        ({**RUN, "timestamp": True}, "/timestamp"),
        ({**RUN, "timestamp": 1.5}, "/timestamp"),
        ({**RUN, "timestamp": "1767225600000"}, "/timestamp"),
        (
            {"type": "RUN_ERROR", "message": "x", "usage": [{"inputTokens": -1}]},
            "/usage/0/inputTokens",
        ),
    ],
)
def test_integer_out_of_range_or_not_an_integer_is_fatal(
    event: dict[str, Any], pointer: str
) -> None:
    assert rejected(event).pointer == pointer


def test_integral_number_counts_as_an_integer_and_is_not_coerced() -> None:
    # JSON Schema 2020-12 calls 5.0 an integer; it is delivered as it came.
    outcome = enforce({**RUN, "timestamp": 5.0})
    assert outcome.error is None
    assert type(outcome.events[0]["timestamp"]) is float


@pytest.mark.parametrize(
    ("event", "pointer"),
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
        ({**RUN, "rawEvent": None}, "/rawEvent"),
        ({**RUN, "metadata": None}, "/metadata"),
        ({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": None}, "/result"),
        ({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": None}, "/role"),
    ],
)
def test_null_standing_for_an_absent_optional_field_is_fatal(
    event: dict[str, Any], pointer: str
) -> None:
    error = rejected(event)
    assert error.code == "enforce.null-optional"
    assert error.pointer == pointer
    assert error.spec == "/spec/1.1/basic/index"


def test_null_in_a_required_payload_is_data() -> None:
    outcome = enforce({"type": "CUSTOM", "name": "x", "value": None})
    assert outcome.error is None and outcome.warnings == []


def test_outcome_of_the_wrong_shape_is_fatal_not_stripped() -> None:
    finished = {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "outcome": [{"type": "interrupt", "interrupts": [{"id": "i", "reason": "approval"}]}],
    }
    error = rejected(RUN, finished)
    assert error.pointer == "/outcome"
    assert "expected object, received array" in error.detail


@pytest.mark.parametrize(
    "outcome",
    [
        {"type": "interrupt"},
        {"type": "interrupt", "interrupts": []},
        {"type": 3},
        {"interrupts": []},
    ],
)
def test_malformed_known_outcome_is_fatal(outcome: dict[str, Any]) -> None:
    rejected({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": outcome})


@pytest.mark.parametrize("path", ["count", "/a~2", "/a~", 7])
def test_malformed_json_pointer_in_a_patch_is_fatal(path: Any) -> None:
    error = rejected({"type": "STATE_DELTA", "delta": [{"op": "remove", "path": path}]})
    assert error.pointer == "/delta/0/path"


def test_a_patch_that_is_not_an_array_is_fatal() -> None:
    assert rejected({"type": "STATE_DELTA", "delta": {"op": "add"}}).pointer == "/delta"


def test_a_pinned_value_other_than_its_const_is_fatal() -> None:
    error = rejected({"type": "REASONING_MESSAGE_START", "messageId": "m", "role": "assistant"})
    assert error.pointer == "/role"
    assert 'expected "reasoning"' in error.detail


def test_subtype_that_is_not_a_string_is_fatal() -> None:
    event = {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": 1,
        "entityId": "m",
        "encryptedValue": "x",
    }
    assert rejected(event).pointer == "/subtype"


def test_malformed_value_wins_over_unrecognised_whatever_the_key_order() -> None:
    # The part holds an unknown source (removable) and a malformed id (fatal).
    for part in (
        {"type": "image", "source": {"type": "hologram", "value": "x"}, "id": 5},
        {"type": "image", "id": 5, "source": {"type": "hologram", "value": "x"}},
    ):
        event = {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": [part]}
        assert rejected(event).pointer == "/content/0/id"


def test_malformed_value_in_a_nested_document_is_fatal() -> None:
    message = {"id": 1, "role": "user", "content": "hi"}
    started = {**RUN, "input": {"threadId": "t", "runId": "r", "messages": [message]}}
    assert rejected(started).pointer == "/input/messages/0/id"


def test_events_before_a_rejection_are_delivered_as_enforced() -> None:
    events: list[dict[str, Any]] = [
        RUN,
        {"type": "FUTURE_EVENT"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "extra": 1},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": None},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    ]
    outcome = enforce(*events)
    assert outcome.error is not None and outcome.error.event_index == 3
    assert outcome.events == [RUN, {"type": "TEXT_MESSAGE_START", "messageId": "m"}]


# --- place in the pipeline ------------------------------------------------------------------


def test_enforce_is_wired_in_canonical_order() -> None:
    names = Pipeline().stage_names
    assert "enforce" in names
    assert names == sorted(names, key=canonical_order().index)


def test_middleware_sees_material_before_enforce_strips_it() -> None:
    seen: list[dict[str, Any]] = []

    class Observer(Stage):
        name = "observer"

        async def process(self, batch: Batch) -> Batch:
            seen.extend(copy.deepcopy(batch.events))
            return batch

    stream = b'{"type":"RUN_STARTED","threadId":"t","runId":"r","futureProp":1}\n'
    pipeline = Pipeline(middleware=[Observer])
    assert pipeline.stage_names.index("observer") < pipeline.stage_names.index("enforce")
    result = anyio.run(pipeline.run, stream)
    assert seen[0]["futureProp"] == 1
    assert "futureProp" not in result.events[0]


# --- the corpus fixtures about enforcement -----------------------------------------------------

ENFORCE_FIXTURES = [
    "unknown-event-dropped",
    "unknown-property-stripped",
    "malformed-known-field-fatal",
    "open-metadata-preserved",
    "raw-and-custom-pass-through",
    "unknown-outcome-array-fatal",
    "state-delta-unknown-op-dropped",
    "reasoning-message-wrong-role-fatal",
    "subagent-started-missing-name-fatal",
    "state-null-snapshot-applies",
    "conformant-run-is-quiet",
]


@pytest.mark.parametrize("name", ENFORCE_FIXTURES)
def test_corpus_fixture_verdicts_hold_for_enforce(name: str) -> None:
    fixture = json.loads(corpus_file(name).read_text())
    expect = fixture["expect"]
    outcome = enforce(*fixture["stream"])
    if expect["outcome"] == "failed":
        assert outcome.error is not None
        # The corpus quotes the reference client's JSON-escaped message text.
        assert expect["errorContains"].replace('\\"', '"') in str(outcome.error)
        return
    assert outcome.error is None
    for text in expect.get("warnings", []):
        assert any(text in warning for warning in outcome.warnings), (text, outcome.warnings)
    if expect.get("noWarnings"):
        assert outcome.warnings == []
    if "eventTypes" in expect:
        assert [e["type"] for e in outcome.events] == expect["eventTypes"]
    for path in expect.get("eventAbsentPaths", []):
        position, key = path.split(".")
        assert key not in outcome.events[int(position)]


def test_corpus_admitted_gap_role_follows_the_spec_instead() -> None:
    # unknown-enum-value-role-fatal pins the reference client's gap (the run fails);
    # /spec/1.1/basic/processing strips the role with a warning naming /role.
    fixture = json.loads(corpus_file("unknown-enum-value-role-fatal").read_text())
    assert fixture["expect"]["outcome"] == "failed"
    outcome = enforce(*fixture["stream"])
    assert outcome.error is None
    assert len(outcome.events) == len(fixture["stream"])
    assert "role" not in outcome.events[1]
    assert any("/role" in warning for warning in outcome.warnings)


LAZY_PROBE = """
import json, sys
from agui_pipeline.stages import _codegen, enforce
from agui_pipeline import Pipeline
before = sorted(_codegen.generated)
tool = {"id": "c", "type": "function", "function": {"name": "f", "arguments": 5}}
snapshot = {"type": "MESSAGES_SNAPSHOT", "messages": [
    {"id": "m", "role": "assistant", "toolCalls": [tool]}]}
run = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
result = Pipeline().incremental()
result.feed(b"".join(b"data: " + json.dumps(e).encode() + b"\\n\\n" for e in (run, snapshot)))
verdict = result.close().verdict
print(json.dumps({"before": before, "after": sorted(_codegen.generated),
                  "code": verdict.code, "pointer": verdict.pointer}))
"""


def test_an_objects_check_is_compiled_when_first_needed_and_judges_that_first_value() -> None:
    """A fresh interpreter on the pure core (the native core's fast check compiles no
    Python): enforce compiles no object's check at import, only those a stream needs
    (start-up), and the first value through the nested checks is judged as every later
    one is."""
    done = subprocess.run(
        [sys.executable, "-c", in_a_child(LAZY_PROBE)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, _cores.PURE_SETTING: "1"},
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["before"] == ["scan", "scan (events known to be dicts)"]
    compiled = {label.removeprefix("clean ") for label in seen["after"]}
    assert {"RunStartedEvent", "MessagesSnapshotEvent", "AssistantMessage", "ToolCall"} <= (
        compiled
    )
    assert "ToolCallResultEvent" not in compiled and "UserMessage" not in compiled
    assert seen["code"] == "enforce.malformed"
    assert seen["pointer"] == "/messages/0/toolCalls/0/function/arguments"
