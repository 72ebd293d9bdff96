"""AgentCapabilities under /spec/1.1/basic/capabilities, and the schema's own judgement."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from agui_pipeline.declaration import Declaration
from agui_pipeline.errors import DeclarationUnusable
from agui_pipeline.model.capabilities import AgentCapabilities
from agui_pipeline.model.declared import check_run_input, model_of, read_declaration
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from tests.conftest import spec_schema


@functools.cache
def defs() -> dict[str, Any]:
    """The definitions in ``schema.json`` (a test without the spec artifacts skips)."""
    return dict(spec_schema()["$defs"])


@functools.cache
def validator() -> Draft202012Validator:
    return Draft202012Validator({"$ref": "#/$defs/AgentCapabilities", "$defs": defs()})


FULL: dict[str, Any] = {
    "identity": {
        "name": "Weather",
        "type": "langgraph",
        "description": "forecasts",
        "version": "1.2.0",
        "provider": "Acme",
        "documentationUrl": "https://example.com/docs",
        "metadata": {"region": "eu", "nested": {"x": [1, None]}, "nothing": None},
    },
    "transport": {
        "streaming": True,
        "websocket": False,
        "httpBinary": False,
        "pushNotifications": False,
        "resumable": False,
    },
    "tools": {
        "supported": True,
        "items": [
            {
                "name": "get_weather",
                "description": "weather for a city",
                "parameters": {"type": "object"},
                "metadata": {"ui": "card"},
            }
        ],
        "parallelCalls": True,
        "clientProvided": True,
    },
    "output": {"structuredOutput": True, "supportedMimeTypes": ["text/plain"]},
    "state": {"snapshots": True, "deltas": True, "memory": False, "persistentState": True},
    "multiAgent": {
        "supported": True,
        "delegation": True,
        "handoffs": False,
        "subagents": [{"name": "researcher", "description": "digs"}],
    },
    "reasoning": {"supported": True, "streaming": True, "encrypted": False},
    "multimodal": {
        "input": {"image": True, "audio": False, "video": False, "pdf": True, "file": False},
        "output": {"image": False, "audio": False},
    },
    "execution": {
        "codeExecution": False,
        "sandboxed": True,
        "maxIterations": 10,
        "maxExecutionTime": 60000,
    },
    "humanInTheLoop": {
        "supported": True,
        "approvals": True,
        "interventions": False,
        "feedback": False,
        "interrupts": True,
        "approveWithEdits": True,
    },
    "custom": {"anything": {"goes": [1, "two"]}, "nullish": None},
}


def test_the_full_example_is_schema_valid_and_round_trips() -> None:
    assert validator().is_valid(FULL)
    capabilities = AgentCapabilities.load(FULL)
    assert capabilities.to_json() == FULL
    assert capabilities.unrecognised() == []


def test_every_schema_group_and_field_is_modelled() -> None:
    def fields(model: type[Any]) -> set[str]:
        return set(model.model_fields)

    assert fields(AgentCapabilities) == set(defs()["AgentCapabilities"]["properties"])
    for group, ref in defs()["AgentCapabilities"]["properties"].items():
        if "$ref" not in ref:
            continue
        model = AgentCapabilities.model_fields[group].annotation
        target = defs()[ref["$ref"].rsplit("/", 1)[1]]
        (arg,) = [a for a in model.__args__ if a is not type(None)]  # type: ignore[union-attr]
        assert fields(arg) == set(target["properties"]), group


def test_omitted_means_undeclared_not_false() -> None:
    capabilities = AgentCapabilities.load({"reasoning": {"supported": True}})
    assert capabilities.reasoning is not None
    assert capabilities.reasoning.streaming is None
    assert capabilities.tools is None
    assert capabilities.to_json() == {"reasoning": {"supported": True}}


@pytest.mark.parametrize(
    ("document", "pointer"),
    [
        ({"reasoning": {"supported": "true"}}, "/reasoning/supported"),
        ({"reasoning": {"supported": None}}, "/reasoning/supported"),
        ({"tools": {"items": [{"name": "x"}]}}, "/tools/items/0/description"),
        ({"tools": {"items": [{"name": 1, "description": "d"}]}}, "/tools/items/0/name"),
        ({"execution": {"maxIterations": -1}}, "/execution/maxIterations"),
        ({"execution": {"maxIterations": True}}, "/execution/maxIterations"),
        ({"execution": {"maxIterations": 1.5}}, "/execution/maxIterations"),
        ({"execution": {"maxExecutionTime": 2**53}}, "/execution/maxExecutionTime"),
        (
            {"multiAgent": {"subagents": [{"description": "no name"}]}},
            "/multiAgent/subagents/0/name",
        ),
        ({"state": []}, "/state"),
        ({"identity": {"metadata": None}}, "/identity/metadata"),
        ({"custom": "text"}, "/custom"),
    ],
)
def test_a_malformed_known_field_makes_the_declaration_unusable(
    document: dict[str, Any], pointer: str
) -> None:
    assert not validator().is_valid(document)
    with pytest.raises(DeclarationUnusable) as caught:
        AgentCapabilities.load(document)
    assert caught.value.pointer == pointer
    declaration = read_declaration(document)
    assert declaration.capabilities is None
    (note,) = declaration.notes
    assert note.code.id == "reconcile.declaration-unusable"
    assert note.pointer == pointer
    assert pointer in note.message


def test_an_integral_number_is_an_integer_as_json_schema_says() -> None:
    assert validator().is_valid({"execution": {"maxIterations": 3.0}})
    capabilities = AgentCapabilities.load({"execution": {"maxIterations": 3.0}})
    assert capabilities.execution is not None
    assert capabilities.execution.maxIterations == 3


def test_unrecognised_members_are_kept_and_named_never_rejected() -> None:
    document = {
        "futureGroup": {"x": 1},
        "tools": {
            "supported": True,
            "futureFlag": True,
            "items": [{"name": "a", "description": "b", "futureMember": 2}],
        },
        "multiAgent": {"subAgents": [{"name": "old"}]},
    }
    declaration = read_declaration(document)
    capabilities = model_of(declaration)
    assert capabilities is not None
    assert capabilities is not None
    assert capabilities.unrecognised() == [
        "/tools/items/0/futureMember",
        "/tools/futureFlag",
        "/multiAgent/subAgents",
        "/futureGroup",
    ]
    assert capabilities.model_extra == {"futureGroup": {"x": 1}}
    assert capabilities.to_json()["tools"]["futureFlag"] is True
    # The retired key is not read as the list of subagents.
    assert capabilities.multiAgent is not None
    assert capabilities.multiAgent.subagents is None
    codes = {note.code.id for note in declaration.notes}
    assert codes == {"reconcile.declaration-unrecognised"}
    retired = [note for note in declaration.notes if note.pointer == "/multiAgent/subAgents"]
    assert "retired" in retired[0].message


def test_open_objects_are_preserved_whole() -> None:
    document = {
        "identity": {"metadata": {"a": {"b": [None, {"c": 1}]}, "ag-ui": 1}},
        "custom": {"x": None, "y": {"z": []}},
    }
    capabilities = AgentCapabilities.load(copy.deepcopy(document))
    assert capabilities.to_json() == document
    assert capabilities.unrecognised() == []


def test_sources_file_bytes_text_dict(tmp_path: Path) -> None:
    path = tmp_path / "capabilities.json"
    path.write_text(json.dumps(FULL))
    for source in (path, str(path), json.dumps(FULL).encode(), FULL):
        assert AgentCapabilities.load(source).to_json() == FULL
    unreadable = read_declaration(tmp_path / "missing.json")
    assert unreadable.capabilities is None
    assert "cannot be read" in unreadable.notes[0].message
    not_json = read_declaration(b"{nope")
    assert not_json.capabilities is None
    not_object = read_declaration(b"[]")
    assert not_object.capabilities is None and not_object.notes[0].pointer == ""


def test_check_run_input_warns_before_sending_only_on_explicit_false() -> None:
    image = {"type": "image", "source": {"type": "url", "value": "https://x/y.png"}}
    pdf = {
        "type": "document",
        "source": {"type": "data", "value": "AA==", "mimeType": "application/pdf"},
    }
    run_input = {
        "threadId": "t",
        "runId": "r",
        "messages": [
            {"id": "u1", "role": "user", "content": [{"type": "text", "text": "look"}, image, pdf]},
        ],
    }
    refused = {"multimodal": {"input": {"image": False, "pdf": False}}}
    found = check_run_input(read_declaration(refused), run_input)
    assert [(d.pointer, d.declared) for d in found] == [
        ("/messages/0/content/1", "/multimodal/input/image"),
        ("/messages/0/content/2", "/multimodal/input/pdf"),
    ]
    assert all(d.code == "reconcile.input-modality" for d in found)
    # Undeclared (omitted) or accepted modalities: nothing to say.
    assert (
        check_run_input(read_declaration({"multimodal": {"input": {"audio": False}}}), run_input)
        == []
    )
    assert check_run_input(read_declaration({"multimodal": {"input": {}}}), run_input) == []
    assert (
        check_run_input(read_declaration({"multimodal": {"input": {"image": True}}}), run_input)
        == []
    )


# -- the schema's own judgement ---------------------------------------------------------


def _known(definition: dict[str, Any]) -> dict[str, Any]:
    known: dict[str, Any] = definition.get("properties", {})
    return known


_OPEN = {"metadata", "custom", "parameters"}


def strip_unrecognised(value: Any, definition: dict[str, Any]) -> Any:
    """The document with every member the schema does not define removed (recursively),
    leaving open objects (metadata, custom, a tool's parameters) untouched."""
    if "$ref" in definition:
        definition = defs()[definition["$ref"].rsplit("/", 1)[1]]
    if isinstance(value, list) and "items" in definition:
        return [strip_unrecognised(item, definition["items"]) for item in value]
    if not isinstance(value, dict) or "properties" not in definition:
        return value
    known = _known(definition)
    return {
        key: (member if key in _OPEN else strip_unrecognised(member, known[key]))
        for key, member in value.items()
        if key in known
    }


_unknown_key = st.sampled_from(["future", "subAgents", "x-extra", "supported_"])
_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 2**60),
    st.text(max_size=4),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-5, max_value=1e20),
)
_anything = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)


def _value_for(definition: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Mostly values of the right shape, sometimes anything at all."""
    if "$ref" in definition:
        definition = defs()[definition["$ref"].rsplit("/", 1)[1]]
    right: st.SearchStrategy[Any]
    kind = definition.get("type")
    if kind == "boolean":
        right = st.booleans()
    elif kind == "string":
        right = st.text(max_size=5)
    elif kind == "integer":
        right = st.one_of(
            st.integers(-2, 2**54),
            st.sampled_from([0.0, 7.0, 2.5, -1, 2**53 - 1, 2**53, float(2**53), True]),
        )
    elif kind == "array":
        right = st.lists(st.deferred(lambda: _value_for(definition["items"])), max_size=3)
    elif kind == "object" and "properties" in definition:
        right = _object_for(definition)
    else:
        right = _anything
    return st.integers(0, 19).flatmap(lambda roll: _anything if roll == 0 else right)


def _object_for(definition: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    known = _known(definition)
    required = set(definition.get("required", ()))

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, member in known.items():
            if (key in required and draw(st.integers(0, 9)) > 0) or draw(st.booleans()):
                out[key] = draw(_value_for(member))
        if draw(st.integers(0, 4)) == 0:
            out[draw(_unknown_key)] = draw(_anything)
        return out

    return build()


declarations = st.deferred(lambda: st.one_of(_object_for(defs()["AgentCapabilities"]), _anything))
"""Random declarations: mostly shaped like the schema, with wrong types, nulls and
unrecognised members mixed in, and now and then not an object at all."""


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(declarations)
def test_usable_exactly_when_the_schema_accepts_it_bar_unrecognised_members(
    document: Any,
) -> None:
    if document is None:  # in Python, None is "no declaration", not the JSON null
        assert read_declaration(None) is Declaration.NONE
        assert not read_declaration(b"null").usable
        return
    expected = validator().is_valid(strip_unrecognised(document, defs()["AgentCapabilities"]))
    # A JSON string is sent as JSON: a Python str would be a file path.
    declaration = read_declaration(
        orjson.dumps(document) if isinstance(document, str) else document
    )
    assert declaration.usable == expected, (document, declaration.notes)
    if not expected:
        # The diagnostic names a field the schema itself faults (or, for a missing
        # required member, the member inside the object the schema faults).
        stripped = strip_unrecognised(document, defs()["AgentCapabilities"])
        faulted = {
            "".join(f"/{part}" for part in error.absolute_path)
            for error in validator().iter_errors(stripped)
        }
        (note,) = declaration.notes
        assert note.pointer in faulted or note.pointer.rsplit("/", 1)[0] in faulted, (
            note.pointer,
            faulted,
        )
    if declaration.capabilities is not None:
        # What was sent comes back (unrecognised members included), nothing invented.
        assert declaration.capabilities.to_json() == json.loads(json.dumps(document))


def test_check_run_input_refused_tools_resume_and_edits() -> None:
    run_input = {
        "threadId": "t",
        "runId": "r",
        "messages": [],
        "tools": [{"name": "confirm", "description": "ask"}],
        "resume": [
            {
                "interruptId": "i1",
                "status": "resolved",
                "payload": {"approved": True, "editedArgs": {"amount": 5}},
            }
        ],
    }
    refusing = {
        "tools": {"clientProvided": False},
        "humanInTheLoop": {"interrupts": False, "approveWithEdits": False},
    }
    found = check_run_input(read_declaration(refusing), run_input)
    assert [(d.code, d.pointer, d.declared) for d in found] == [
        ("reconcile.input-refused", "/tools", "/tools/clientProvided"),
        ("reconcile.input-refused", "/resume", "/humanInTheLoop/interrupts"),
        (
            "reconcile.input-refused",
            "/resume/0/payload/editedArgs",
            "/humanInTheLoop/approveWithEdits",
        ),
    ]
    for field in ("clientProvided", "interrupts", "approveWithEdits"):
        group = "tools" if field == "clientProvided" else "humanInTheLoop"
        omitted = copy.deepcopy(refusing)
        del omitted[group][field]
        remaining = {d.declared for d in check_run_input(read_declaration(omitted), run_input)}
        assert f"/{group}/{field}" not in remaining
        assert len(remaining) == 2
    # Nothing offered, nothing to say; an absent list is the same as an empty one.
    assert (
        check_run_input(
            read_declaration(refusing), {"threadId": "t", "runId": "r", "messages": [], "tools": []}
        )
        == []
    )
