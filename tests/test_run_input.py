"""The outgoing boundary: ``prepare_input`` and the ``RunAgentInput`` model.

Rules from ``/spec/1.1/basic/processing`` ("Outgoing material"),
``/spec/1.1/basic/run-input``, ``/spec/1.1/basic/versioning`` and
``DEPRECATIONS.md``; the era fixtures' ``request`` expectations reproduced
directly.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

import orjson
import pytest
from agui_pipeline import InputRejected, PreparedInput, RunAgentInputModel, prepare_input
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from tests.conftest import corpus_file, spec_schema


@functools.cache
def _input_schema() -> Draft202012Validator:
    """``RunAgentInput`` in ``schema.json`` (a test without the spec artifacts skips)."""
    return Draft202012Validator({**spec_schema(), "$ref": "#/$defs/RunAgentInput"})


def base(**fields: Any) -> dict[str, Any]:
    return {"threadId": "t-1", "runId": "r-1", "messages": [], **fields}


def user(content: Any, **fields: Any) -> dict[str, Any]:
    return {"id": "u-1", "role": "user", "content": content, **fields}


def image(url: str = "https://example.com/a.png", **fields: Any) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "url", "value": url}, **fields}


def codes(prepared: PreparedInput) -> list[str]:
    return [d.code for d in prepared.diagnostics]


def warned(prepared: PreparedInput, text: str) -> bool:
    return any(text in str(d) for d in prepared.warnings)


def rejected(raw: dict[str, Any], **kwargs: Any) -> InputRejected:
    with pytest.raises(InputRejected) as caught:
        prepare_input(raw, **kwargs)
    return caught.value


# --- the era fixtures, input half ------------------------------------------------------


def _subset(expected: Any, actual: Any) -> bool:
    """The corpus's subset match: objects on the named keys, arrays of the same length."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and _subset(value, actual[key]) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(_subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


def _absent(body: dict[str, Any], dotted: str) -> bool:
    node: Any = body
    for step in dotted.split("."):
        if isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        elif isinstance(node, dict) and step in node:
            node = node[step]
        else:
            return True
    return False


ERA_FIXTURES = [
    "era-0-0-39-flattens-content",
    "era-0-0-47-upgrades-binary-content",
    "era-current-peer-keeps-modern-content",
    "era-pinned-peer-omits-protocol-version",
    "current-peer-declares-protocol-version",
]


@pytest.mark.parametrize("name", ERA_FIXTURES)
def test_era_fixture_request(name: str) -> None:
    fixture = json.loads(corpus_file(name).read_text())
    expect = fixture["expect"]
    peer = fixture.get("client", {}).get("maxProtocolVersion")
    run_started = fixture["stream"][0]
    raw = {
        "threadId": run_started["threadId"],
        "runId": run_started["runId"],
        "messages": [],
        **fixture.get("input", {}),
    }
    prepared = prepare_input(raw, peer_max_protocol_version=peer)
    assert _subset(expect.get("request", {}), prepared.body), prepared.body
    for path in expect.get("requestAbsentPaths", []):
        assert _absent(prepared.body, path), path
    for text in expect.get("warnings", []):
        assert warned(prepared, text), (text, prepared.diagnostics)
    if expect.get("noWarnings"):
        assert prepared.warnings == []


# --- declaring the version --------------------------------------------------------------


def test_a_current_peer_gets_the_declaration() -> None:
    assert prepare_input(base()).body["protocolVersion"] == "1.1"


@pytest.mark.parametrize("peer", ["1.0", "1.1", "1.2"])
def test_a_versioned_peer_gets_the_declaration(peer: str) -> None:
    assert prepare_input(base(), peer_max_protocol_version=peer).body["protocolVersion"] == "1.1"


@pytest.mark.parametrize("peer", ["0.0.39", "0.0.57", "0.0.99"])
def test_a_peer_before_versions_gets_none(peer: str) -> None:
    body = prepare_input(base(protocolVersion="1.1"), peer_max_protocol_version=peer).body
    assert "protocolVersion" not in body


def test_the_consumer_declares_its_own_version_not_the_callers() -> None:
    assert prepare_input(base(protocolVersion="1.0")).body["protocolVersion"] == "1.1"


def test_a_malformed_declaration_is_still_rejected() -> None:
    error = rejected(base(protocolVersion=1.1))
    assert error.pointer == "/protocolVersion"


@pytest.mark.parametrize("peer", ["v2", "1", "1.x", "", "0.1.2"])
def test_an_unusable_peer_setting_is_a_configuration_error(peer: str) -> None:
    with pytest.raises(ValueError, match="peer_max_protocol_version"):
        prepare_input(base(), peer_max_protocol_version=peer)


# --- a clean input ------------------------------------------------------------------------


FULL = base(
    parentRunId="r-0",
    state={"a": None, "b": [1, 2]},
    messages=[
        {"id": "s", "role": "system", "content": "be brief", "name": "sys"},
        {"id": "d", "role": "developer", "content": "dev"},
        user(
            [
                {"type": "text", "text": "look", "id": "p1", "metadata": {"k": None}},
                image(metadata="anything"),
                {"type": "audio", "source": {"type": "data", "value": "AAA=", "mimeType": "a/b"}},
                {"type": "video", "source": {"type": "file", "value": "f-1", "provider": "x"}},
                {"type": "document", "source": {"type": "url", "value": "u", "mimeType": "m"}},
            ],
            metadata={"trace": 1},
        ),
        {
            "id": "a",
            "role": "assistant",
            "content": "ok",
            "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
            "encryptedValue": "e",
            "subagentRunId": "s-1",
        },
        {
            "id": "tm",
            "role": "tool",
            "content": [{"type": "text", "text": "r"}],
            "toolCallId": "c1",
        },
        {"id": "rm", "role": "reasoning", "content": "hmm", "encryptedValueType": "x"},
    ],
    tools=[{"name": "f", "description": "d", "parameters": {"type": "object", "x-any": None}}],
    context=[{"description": "d", "value": "v"}],
    forwardedProps={"k": None},
    resume=[{"interruptId": "i", "status": "resolved", "payload": {"ok": 1}}],
)


def test_a_conformant_input_goes_out_unchanged_and_quietly() -> None:
    raw = copy.deepcopy(FULL)
    prepared = prepare_input(raw)
    assert prepared.diagnostics == []
    assert prepared.body == {**FULL, "protocolVersion": "1.1"}
    assert raw == FULL  # the caller's mapping is not touched
    assert _input_schema().is_valid(prepared.body)
    RunAgentInputModel.model_validate(prepared.body)


def test_the_body_is_a_copy() -> None:
    raw = base(state={"deep": [1]})
    prepared = prepare_input(raw)
    prepared.body["state"]["deep"].append(2)
    assert raw["state"] == {"deep": [1]}


# --- unrecognised material: removed with a warning --------------------------------------


@pytest.mark.parametrize(
    ("raw", "pointer"),
    [
        (base(futureField=1), "/futureField"),
        (base(messages=[user("hi", mood="happy")]), "/messages/0/mood"),
        (base(messages=[user([{"type": "text", "text": "x", "z": 1}])]), "/messages/0/content/0/z"),
        (
            base(
                messages=[
                    user([image(url="u") | {"source": {"type": "url", "value": "u", "q": 1}}])
                ]
            ),
            "/messages/0/content/0/source/q",
        ),
        (base(tools=[{"name": "f", "description": "d", "icon": "x"}]), "/tools/0/icon"),
        (base(context=[{"description": "d", "value": "v", "w": 0}]), "/context/0/w"),
        (base(resume=[{"interruptId": "i", "status": "resolved", "z": 0}]), "/resume/0/z"),
        (
            base(
                messages=[
                    {
                        "id": "a",
                        "role": "assistant",
                        "toolCalls": [
                            {
                                "id": "c",
                                "type": "function",
                                "function": {"name": "f", "arguments": "", "z": 1},
                            }
                        ],
                    }
                ]
            ),
            "/messages/0/toolCalls/0/function/z",
        ),
        (
            base(
                messages=[
                    {"id": "t", "role": "tool", "content": "x", "toolCallId": "c", "name": "n"}
                ]
            ),
            "/messages/0/name",
        ),
    ],
)
def test_an_unknown_property_is_stripped_with_its_pointer(
    raw: dict[str, Any], pointer: str
) -> None:
    prepared = prepare_input(raw)
    assert codes(prepared) == ["input.unrecognised"]
    assert prepared.diagnostics[0].pointer == pointer
    assert pointer in str(prepared.diagnostics[0])
    assert _absent(prepared.body, pointer.strip("/").replace("/", "."))
    assert _input_schema().is_valid(prepared.body)


@pytest.mark.parametrize(
    ("raw", "pointer", "kept"),
    [
        (
            base(messages=[user("a"), {"id": "x", "role": "critic", "content": "c"}]),
            "/messages/1",
            1,
        ),
        (
            base(
                messages=[user([{"type": "hologram", "uri": "h"}, {"type": "text", "text": "t"}])]
            ),
            "/messages/0/content/0",
            1,
        ),
        (
            base(messages=[user([image() | {"source": {"type": "ipfs", "value": "Qm"}}])]),
            "/messages/0/content/0",
            0,
        ),
        (
            base(
                messages=[
                    {
                        "id": "a",
                        "role": "assistant",
                        "toolCalls": [
                            {"id": "c", "type": "mcp", "function": {"name": "f", "arguments": ""}}
                        ],
                    }
                ]
            ),
            "/messages/0/toolCalls/0",
            0,
        ),
        (base(resume=[{"interruptId": "i", "status": "deferred"}]), "/resume/0", 0),
    ],
)
def test_an_unknown_union_member_takes_its_container(
    raw: dict[str, Any], pointer: str, kept: int
) -> None:
    prepared = prepare_input(raw)
    assert codes(prepared) == ["input.unrecognised"]
    assert prepared.diagnostics[0].pointer == pointer
    assert _input_schema().is_valid(prepared.body)
    listed = pointer.rsplit("/", 1)[0].strip("/").split("/")
    node: Any = prepared.body
    for step in listed:
        node = node[int(step)] if isinstance(node, list) else node[step]
    assert len(node) == kept


def test_activity_messages_never_travel_back() -> None:
    activity = {"id": "act", "role": "activity", "activityType": "plan", "content": {}}
    prepared = prepare_input(base(messages=[activity, user("hi")]))
    assert prepared.body["messages"] == [user("hi")]
    assert codes(prepared) == ["input.activity-removed"]
    assert prepared.warnings == []


# --- retired shapes: upgraded -------------------------------------------------------------


@pytest.mark.parametrize(
    ("legacy", "upgraded"),
    [
        (
            {"type": "binary", "mimeType": "image/png", "url": "u"},
            {"type": "image", "source": {"type": "url", "value": "u", "mimeType": "image/png"}},
        ),
        (
            {"type": "binary", "mimeType": "audio/wav", "data": "AAA="},
            {"type": "audio", "source": {"type": "data", "value": "AAA=", "mimeType": "audio/wav"}},
        ),
        (
            {"type": "binary", "mimeType": "video/mp4", "id": "file-9"},
            {
                "type": "video",
                "source": {"type": "file", "value": "file-9", "mimeType": "video/mp4"},
            },
        ),
        (
            {"type": "binary", "mimeType": "application/pdf", "url": "u"},
            {
                "type": "document",
                "source": {"type": "url", "value": "u", "mimeType": "application/pdf"},
            },
        ),
    ],
)
def test_a_binary_part_is_upgraded_quietly(
    legacy: dict[str, Any], upgraded: dict[str, Any]
) -> None:
    prepared = prepare_input(base(messages=[user([legacy])]))
    assert prepared.body["messages"][0]["content"] == [upgraded]
    assert codes(prepared) == ["input.retired-shape"]
    assert prepared.warnings == []


@pytest.mark.parametrize(("peer", "warns"), [("0.0.47", True), ("0.0.48", False), (None, False)])
def test_a_binary_upgrade_warns_for_a_peer_that_predates_media_parts(
    peer: str | None, warns: bool
) -> None:
    legacy = {"type": "binary", "mimeType": "image/png", "url": "u"}
    prepared = prepare_input(base(messages=[user([legacy])]), peer_max_protocol_version=peer)
    assert prepared.body["messages"][0]["content"][0]["type"] == "image"
    assert warned(prepared, "predates media parts") is warns


def test_a_binary_upgrade_that_loses_something_warns() -> None:
    legacy = {
        "type": "binary",
        "mimeType": "image/png",
        "data": "AAA=",
        "url": "u",
        "filename": "a.png",
    }
    prepared = prepare_input(base(messages=[user([legacy])]))
    assert prepared.body["messages"][0]["content"][0]["source"]["type"] == "data"
    assert warned(prepared, "'url', 'filename'")


def test_a_binary_part_naming_no_source_is_unrecognised() -> None:
    prepared = prepare_input(base(messages=[user([{"type": "binary", "mimeType": "image/png"}])]))
    assert prepared.body["messages"][0]["content"] == []
    assert codes(prepared) == ["input.unrecognised"]


@pytest.mark.parametrize(
    ("raw", "pointer"),
    [
        (base(forwardedProps=None), "/forwardedProps"),
        (
            base(tools=[{"name": "f", "description": "d", "parameters": None}]),
            "/tools/0/parameters",
        ),
        (
            base(resume=[{"interruptId": "i", "status": "cancelled", "payload": None}]),
            "/resume/0/payload",
        ),
        (base(messages=[user([image(metadata=None)])]), "/messages/0/content/0/metadata"),
        (
            base(
                messages=[
                    user(
                        [
                            {
                                "type": "document",
                                "source": {"type": "url", "value": "u"},
                                "metadata": None,
                            }
                        ]
                    )
                ]
            ),
            "/messages/0/content/0/metadata",
        ),
    ],
)
def test_a_listed_null_becomes_absent(raw: dict[str, Any], pointer: str) -> None:
    prepared = prepare_input(raw)
    assert codes(prepared) == ["input.retired-shape"]
    assert prepared.diagnostics[0].pointer == pointer
    assert _absent(prepared.body, pointer.strip("/").replace("/", "."))
    assert prepared.warnings == []


@pytest.mark.parametrize(
    ("raw", "pointer"),
    [
        (base(state=None), "/state"),
        (base(parentRunId=None), "/parentRunId"),
        (
            base(messages=[user([{"type": "text", "text": "x", "metadata": None}])]),
            "/messages/0/content/0/metadata",
        ),
        (base(messages=[user("x", metadata=None)]), "/messages/0/metadata"),
        (base(messages=[user("x", name=None)]), "/messages/0/name"),
        (base(tools=None), "/tools"),
    ],
)
def test_an_unlisted_null_is_malformed(raw: dict[str, Any], pointer: str) -> None:
    error = rejected(raw)
    assert error.code == "input.malformed"
    assert error.pointer == pointer
    assert "null" in str(error) and "/spec/1.1/basic/run-input" in str(error)


def test_a_null_under_a_metadata_key_is_data() -> None:
    raw = base(messages=[user("x", metadata={"k": None})], forwardedProps={"p": None})
    assert prepare_input(raw).body["messages"][0]["metadata"] == {"k": None}


# --- malformed known fields: fatal before anything is sent ----------------------------------


@pytest.mark.parametrize(
    ("raw", "pointer", "found"),
    [
        ({"runId": "r", "messages": []}, "/threadId", "nothing"),
        (base(threadId=7), "/threadId", "found number 7"),
        (base(messages={}), "/messages", "found object"),
        (base(messages=[{"id": "m", "content": "x"}]), "/messages/0/role", "nothing"),
        (base(messages=[user(5)]), "/messages/0/content", "found number 5"),
        (
            base(messages=[user([{"type": "text", "text": 5}])]),
            "/messages/0/content/0/text",
            "found number 5",
        ),
        (base(messages=[user([{"text": "x"}])]), "/messages/0/content/0/type", "nothing"),
        (
            base(messages=[user([image() | {"source": {"type": "data", "value": "A"}}])]),
            "/messages/0/content/0/source/mimeType",
            "nothing",
        ),
        (
            base(messages=[{"id": "a", "role": "assistant", "content": ["x"]}]),
            "/messages/0/content",
            "found array",
        ),
        (
            base(messages=[{"id": "t", "role": "tool", "content": "x"}]),
            "/messages/0/toolCallId",
            "nothing",
        ),
        (base(tools=[{"name": "f"}]), "/tools/0/description", "nothing"),
        (base(context=[{"description": "d", "value": 1}]), "/context/0/value", "found number 1"),
        (
            base(resume=[{"interruptId": 1, "status": "resolved"}]),
            "/resume/0/interruptId",
            "found number 1",
        ),
        (base(messages=[user("x", metadata=[])]), "/messages/0/metadata", "found array"),
        (base(messages=[user(True)]), "/messages/0/content", "found boolean true"),
    ],
)
def test_a_malformed_known_field_is_rejected(raw: dict[str, Any], pointer: str, found: str) -> None:
    error = rejected(raw)
    assert error.code == "input.malformed"
    assert error.pointer == pointer
    assert found in str(error)
    assert "nothing was sent" in str(error)


def test_the_pointer_is_into_the_input_as_passed() -> None:
    """Removals before validation do not shift the positions an error names."""
    activity = {"id": "act", "role": "activity", "activityType": "plan", "content": {}}
    bad_part = {"type": "text", "text": 5}
    raw = base(messages=[activity, user([{"type": "hologram"}, bad_part])])
    assert rejected(raw).pointer == "/messages/1/content/1/text"


def test_a_downgrade_does_not_repair_a_malformed_value() -> None:
    """A 0.0.39 peer would drop the non-text part; it is still judged first."""
    raw = base(
        messages=[user([{"type": "text", "text": "a"}, image() | {"source": {"type": "url"}}])]
    )
    assert rejected(raw, peer_max_protocol_version="0.0.39").pointer == (
        "/messages/0/content/1/source/value"
    )


@pytest.mark.parametrize(
    ("raw", "pointer"),
    [
        (base(state={1: "a"}), "/state"),
        (base(state={"when": object()}), "/state/when"),
        (base(forwardedProps=float("nan")), "/forwardedProps"),
    ],
)
def test_what_json_cannot_carry_is_rejected(raw: dict[str, Any], pointer: str) -> None:
    assert rejected(raw).pointer == pointer


def test_not_a_mapping_is_rejected() -> None:
    with pytest.raises(InputRejected):
        prepare_input(["not", "an", "object"])  # type: ignore[arg-type]


# --- the version-gated input shims ----------------------------------------------------------


def test_0_0_39_flattens_user_and_tool_content_and_says_what_it_drops() -> None:
    tool = {
        "id": "t",
        "role": "tool",
        "toolCallId": "c",
        "content": [{"type": "text", "text": "A"}, image(), {"type": "text", "text": "B"}],
    }
    raw = base(
        messages=[user([{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}]), tool]
    )
    prepared = prepare_input(raw, peer_max_protocol_version="0.0.39")
    assert [m["content"] for m in prepared.body["messages"]] == ["hi there", "AB"]
    assert [d.pointer for d in prepared.warnings] == ["/messages/0/content", "/messages/1/content"]
    assert "DROPS" not in str(prepared.warnings[0])
    assert warned(prepared, "DROPS non-text parts: image at /messages/1/content/1")


def test_0_0_39_leaves_string_content_alone() -> None:
    prepared = prepare_input(base(messages=[user("plain")]), peer_max_protocol_version="0.0.39")
    assert prepared.body["messages"] == [user("plain")]
    assert prepared.diagnostics == []


def test_0_0_39_is_not_applied_to_a_newer_peer() -> None:
    raw = base(messages=[user([image()])])
    for peer in ("0.0.40", "0.0.57", "1.0", None):
        assert prepare_input(raw, peer_max_protocol_version=peer).body["messages"] == [
            user([image()])
        ]


def test_0_0_57_strips_subagent_attribution_losslessly() -> None:
    raw = base(messages=[{"id": "a", "role": "assistant", "content": "x", "subagentRunId": "s"}])
    prepared = prepare_input(raw, peer_max_protocol_version="0.0.57")
    assert "subagentRunId" not in prepared.body["messages"][0]
    assert codes(prepared) == ["input.downgrade"]
    assert prepared.diagnostics[0].pointer == "/messages/0/subagentRunId"
    assert prepared.warnings == []
    kept = prepare_input(raw, peer_max_protocol_version="0.0.58").body
    assert kept["messages"][0]["subagentRunId"] == "s"


# --- the model agrees with the schema ----------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_keys = st.sampled_from(
    [
        "type",
        "text",
        "id",
        "role",
        "content",
        "source",
        "value",
        "mimeType",
        "metadata",
        "name",
        "status",
        "interruptId",
        "toolCallId",
        "payload",
        "description",
        "parameters",
        "zz",
    ]
)


def _mutate(draw: st.DrawFn, node: Any) -> Any:
    """Change one thing somewhere in ``node``: a key added, removed or nulled, a value replaced."""
    if isinstance(node, dict) and node and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(node)))
        return {**node, key: _mutate(draw, node[key])}
    if isinstance(node, list) and node and draw(st.booleans()):
        at = draw(st.integers(0, len(node) - 1))
        return [*node[:at], _mutate(draw, node[at]), *node[at + 1 :]]
    if isinstance(node, dict):
        action = draw(st.sampled_from(["add", "remove", "null", "replace"]))
        if action == "add":
            return {**node, draw(_keys): draw(_json)}
        if action == "remove" and node:
            key = draw(st.sampled_from(sorted(node)))
            return {k: v for k, v in node.items() if k != key}
        if action == "null" and node:
            return {**node, draw(st.sampled_from(sorted(node))): None}
    return draw(_json)


@st.composite
def mutated_inputs(draw: st.DrawFn) -> dict[str, Any]:
    document: dict[str, Any] = copy.deepcopy(FULL)
    for _ in range(draw(st.integers(1, 3))):
        document = _mutate(draw, document)
    return document


@settings(deadline=None)  # the shared machine's load, not the code, sets the pace
@given(mutated_inputs())
def test_the_boundary_agrees_with_the_schema(raw: dict[str, Any]) -> None:
    """Whatever is sent validates against schema.json; whatever the schema accepts is sent."""
    try:
        prepared = prepare_input(raw)
    except InputRejected as error:
        assert not _input_schema().is_valid(raw), error
        return
    assert _input_schema().is_valid(prepared.body), list(_input_schema().iter_errors(prepared.body))
    if _input_schema().is_valid(raw) and not any(
        m.get("role") == "activity" for m in raw["messages"] if isinstance(m, dict)
    ):
        assert prepared.body == {**raw, "protocolVersion": "1.1"}
        assert prepared.warnings == []


def test_a_model_instance_can_be_sent() -> None:
    model = RunAgentInputModel.model_validate(FULL)
    assert prepare_input(model).body == {**FULL, "protocolVersion": "1.1"}


def test_an_input_too_deep_to_encode_is_rejected_not_a_crash() -> None:
    state: Any = "leaf"
    for _ in range(5000):
        state = [state]
    error = rejected(base(state=state))
    assert error.pointer.startswith("/state/0/0/")
    assert "255" in str(error)
    shallow: Any = "leaf"
    for _ in range(200):
        shallow = [shallow]
    body = prepare_input(base(state=shallow)).body
    assert orjson.loads(orjson.dumps(body))["state"] == shallow
