"""Enforce against the official schema: a differential property test.

Events are generated from ``schema.json`` itself — not from the
``TypedDict``\\ s enforce is compiled from — then left valid or given one
mutation: an undescribed key, an unknown union member, an unknown value of a
closed string set, an unknown event type (unrecognised material); or a value
of the wrong type, a removed required field, a ``null`` optional field, an
out-of-range integer, a broken JSON Pointer, another string where the schema
pins one (malformed, unless the schema happens to accept the result).
``jsonschema`` (Draft 2020-12) is the oracle:

- the event validates → enforce delivers it unchanged, with no warning;
- it fails only because of unrecognised material → enforce delivers it with
  exactly that material removed (the field, the list element, or the value
  holding it in a required position, up to the event) with a warning naming
  the path, and what it delivers validates;
- it is malformed → enforce rejects it, pointing at or inside the mutated value.

It runs five times the hypothesis profile's examples (500 under the test command, 5,000 in
CI); ``ENFORCE_PROPERTY_EXAMPLES`` sets the number for a longer run.
"""

from __future__ import annotations

import copy
import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import anyio
import jsonschema
import pytest
from agui_pipeline import Batch, Options, StreamContext, StreamRejected
from agui_pipeline.stages import _checks
from agui_pipeline.stages._checks import _OPAQUE, CLEAN
from agui_pipeline.stages.enforce import Enforce
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.conftest import spec_schema
from tests.cores import native_module

if TYPE_CHECKING:
    from agui_pipeline._native import Checks


@functools.cache
def defs() -> dict[str, Any]:
    """The definitions in ``schema.json`` (a test without the spec artifacts skips)."""
    return dict(spec_schema()["$defs"])


EXAMPLES = int(os.environ.get("ENFORCE_PROPERTY_EXAMPLES", 5 * settings().max_examples))

Path = tuple[str | int, ...]


def pointer(path: Path) -> str:
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in path)


# --- reading the schema ---------------------------------------------------------------


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    """A definition with ``$ref`` followed and ``allOf`` parts merged into one object."""
    if "$ref" in schema:
        target = resolve(defs()[schema["$ref"].rsplit("/", 1)[1]])
        rest = {k: v for k, v in schema.items() if k not in ("$ref", "description")}
        return {**target, **rest}
    if "allOf" in schema:
        properties: dict[str, Any] = {}
        required: set[str] = set()
        for part in [*map(resolve, schema["allOf"]), schema]:
            properties.update(part.get("properties", {}))
            required |= set(part.get("required", []))
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        return {**merged, "properties": properties, "required": sorted(required)}
    return schema


_validators: dict[int, jsonschema.Draft202012Validator] = {}


def valid_for(value: Any, schema: dict[str, Any]) -> bool:
    validator = _validators.get(id(schema))
    if validator is None:
        validator = jsonschema.Draft202012Validator({"$defs": defs(), **schema})
        _validators[id(schema)] = validator
    return bool(validator.is_valid(value))


def discriminator(schema: dict[str, Any]) -> str | None:
    """The key every branch of a ``oneOf`` of objects pins with a ``const``."""
    branches = [resolve(b) for b in schema.get("oneOf", [])]
    if not branches or any(b.get("type") != "object" for b in branches):
        return None
    for key in branches[0].get("properties", {}):
        if all("const" in b.get("properties", {}).get(key, {}) for b in branches):
            return str(key)
    return None


# --- generating valid values from the schema -------------------------------------------

SAFE = 2**53 - 1
json_leaf = st.none() | st.booleans() | st.integers(-SAFE, SAFE) | st.text(max_size=8)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
non_null_json = (
    st.booleans()
    | st.integers(-SAFE, SAFE)
    | st.text(max_size=8)
    | st.lists(json_value, max_size=3)
    | st.dictionaries(st.text(max_size=6), json_value, max_size=3)
)
pointer_token = st.text(max_size=4).map(lambda t: t.replace("~", "~0").replace("/", "~1"))
json_pointer = st.lists(pointer_token, max_size=3).map(lambda ts: "".join("/" + t for t in ts))


def values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Valid instances of ``schema``."""
    schema = resolve(schema)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "oneOf" in schema:
        return st.one_of([values(b) for b in schema["oneOf"]])
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties")
        if properties is None:  # open by key
            return st.dictionaries(st.text(max_size=6), json_value, max_size=3)
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {k: values(v) for k, v in properties.items() if k in required},
            optional={k: values(v) for k, v in properties.items() if k not in required},
        )
    if kind == "array":
        return st.lists(values(schema["items"]), min_size=schema.get("minItems", 0), max_size=2)
    if kind == "string":
        return json_pointer if "pattern" in schema else st.text(max_size=8)
    if kind == "integer":
        return st.integers(schema.get("minimum", -SAFE), schema.get("maximum", SAFE))
    if kind == "boolean":
        return st.booleans()
    return non_null_json if "not" in schema else json_value


@functools.cache
def event_schemas() -> dict[str, dict[str, Any]]:
    """Each event type's branch of the ``Event`` union."""
    return {resolve(ref)["properties"]["type"]["const"]: ref for ref in defs()["Event"]["oneOf"]}


def event_valid(event: dict[str, Any]) -> bool:
    """Valid against ``schema.json`` (the ``Event`` union).

    The branches of ``Event`` pin distinct ``type`` constants, so an event is
    valid for the union exactly when it is valid for the branch its ``type``
    names; validating that branch alone is the same verdict, much faster.
    """
    kind = event.get("type")
    schemas = event_schemas()
    return type(kind) is str and kind in schemas and valid_for(event, schemas[kind])


events = st.deferred(
    lambda: st.one_of([values(schema) for _, schema in sorted(event_schemas().items())])
)


# --- where a mutation can go -----------------------------------------------------------


@dataclass
class Position:
    path: Path
    schema: dict[str, Any]
    """Resolved; for a union value, the union itself."""
    required: bool
    anchor: Path | None
    """What goes when unrecognised material sits here: the nearest optional field or
    list element at or above this position; ``None`` is the event itself."""
    pinned: bool
    """A discriminator or closed-set value: another string there is unrecognised."""


def positions(
    value: Any,
    schema: dict[str, Any],
    path: Path,
    required: bool,
    anchor: Path | None,
    pinned: bool = False,
) -> list[Position]:
    schema = resolve(schema)
    found = [Position(path, schema, required, anchor, pinned or "enum" in schema)]
    if "oneOf" in schema:
        branch = branch_of(schema, value)
        key = discriminator(schema)
        inner = positions(value, branch, path, required, anchor)
        for position in inner[1:]:
            if key is not None and position.path == (*path, key):
                position.pinned = True
        return found + inner[1:]
    if schema.get("type") == "object" and "properties" in schema:
        needed = set(schema.get("required", []))
        for key, member in value.items():
            if key in schema["properties"]:
                here = (*path, key)
                found += positions(
                    member,
                    schema["properties"][key],
                    here,
                    key in needed,
                    anchor if key in needed else here,
                )
    elif schema.get("type") == "array":
        for index, element in enumerate(value):
            here = (*path, index)
            found += positions(element, schema["items"], here, True, here)
    return found


def get(document: Any, path: Path) -> Any:
    for token in path:
        document = document[token]
    return document


def put(document: Any, path: Path, value: Any) -> None:
    get(document, path[:-1])[path[-1]] = value


def remove(document: Any, path: Path) -> None:
    del get(document, path[:-1])[path[-1]]


WRONG: list[Any] = [None, True, 0, -1, 2**53, 5.0, 1.5, "", "s", "~x", [], [1], {}]
"""Replacement values; the schema decides which are wrong where."""


def near_misses(spot: Position) -> list[Any]:
    """Values just outside what the schema allows at ``spot``: bounds, patterns, constants."""
    schema = spot.schema
    if schema.get("type") == "integer":
        return [schema.get("minimum", -SAFE) - 1, schema.get("maximum", SAFE) + 1, 0.5, False]
    if "pattern" in schema:
        return ["path", "/a~2", "~", "a/b"]
    if "const" in schema and not spot.pinned:
        return [schema["const"] + "x", schema["const"].upper(), ""]
    return []


@dataclass
class Case:
    original: dict[str, Any]
    event: dict[str, Any]
    kind: str  # "none", "unrecognised" or "malformed"
    at: Path = ()
    anchor: Path | None = None


@st.composite
def cases(draw: st.DrawFn) -> Case:
    original = draw(events)
    event = copy.deepcopy(original)
    spots = positions(event, event_schemas()[event["type"]], (), True, None)
    spots[0].pinned = True  # the event itself; its "type" is the discriminator of Event
    for spot in spots:
        spot.pinned = spot.pinned or spot.path == ("type",)
    objects = [p for p in spots if p.schema.get("type") == "object" or "oneOf" in p.schema]
    objects = [p for p in objects if type(get(event, p.path)) is dict]
    where = {
        "add-key": objects,
        "unknown-member": [p for p in spots if discriminator(p.schema) is not None],
        "unknown-value": [p for p in spots if "enum" in p.schema],
        "wrong-value": spots[1:],
        # Integers, pointers and pinned values are few among the spots: seek them out.
        "near-miss": [p for p in spots if near_misses(p)],
        "drop-required": [p for p in objects if present_required(p, event)],
        "null-optional": [p for p in spots if not p.required],
    }
    mutation = draw(
        st.sampled_from([*(m for m, found in where.items() if found), "unknown-type", "none"])
    )
    if mutation == "none":
        return Case(original, event, "none")
    if mutation == "unknown-type":
        event["type"] = "FUTURE_" + draw(st.sampled_from(["EVENT", "THING", "TEXT_MESSAGE_START"]))
        return Case(original, event, "unrecognised", ("type",), None)
    spot = draw(st.sampled_from(where[mutation]))
    target = get(event, spot.path)
    if mutation == "add-key":
        key = "x-future-" + draw(st.text("abc", max_size=3))
        target[key] = draw(json_value)
        return Case(original, event, "unrecognised", (*spot.path, key), (*spot.path, key))
    if mutation == "unknown-member":
        tag = discriminator(spot.schema)
        assert tag is not None
        extra = draw(st.dictionaries(st.sampled_from(["value", "id", "data"]), json_value))
        put(event, spot.path, {**extra, tag: "future-" + draw(st.text("xyz", max_size=3))})
        return Case(original, event, "unrecognised", (*spot.path, tag), spot.anchor)
    if mutation == "unknown-value":
        put(event, spot.path, "future-" + draw(st.text("xyz", max_size=3)))
        return Case(original, event, "unrecognised", spot.path, spot.anchor)
    if mutation == "wrong-value":
        choices = [w for w in WRONG if not (spot.pinned and type(w) is str)]
        put(event, spot.path, copy.deepcopy(draw(st.sampled_from(choices))))
        return Case(original, event, "malformed", spot.path)
    if mutation == "near-miss":
        put(event, spot.path, draw(st.sampled_from(near_misses(spot))))
        return Case(original, event, "malformed", spot.path)
    if mutation == "drop-required":
        key = draw(st.sampled_from(present_required(spot, event)))
        del target[key]
        return Case(original, event, "malformed", (*spot.path, key))
    put(event, spot.path, None)
    return Case(original, event, "malformed", spot.path)


def present_required(spot: Position, event: dict[str, Any]) -> list[str]:
    target = get(event, spot.path)
    return sorted(set(required_of(spot.schema, target)) & set(target))


def required_of(schema: dict[str, Any], value: dict[str, Any]) -> list[str]:
    if "oneOf" in schema:
        schema = resolve(branch_of(schema, value))
    return list(schema.get("required", []))


def branch_of(union: dict[str, Any], value: Any) -> dict[str, Any]:
    """The ``oneOf`` branch a valid ``value`` is an instance of."""
    key = discriminator(union)
    if key is not None:
        return next(
            b for b in union["oneOf"] if resolve(b)["properties"][key]["const"] == value[key]
        )
    return next(b for b in union["oneOf"] if valid_for(value, b))


# --- the property -------------------------------------------------------------------------


def run_enforce(event: dict[str, Any]) -> tuple[list[dict[str, Any]], StreamContext, Any]:
    ctx = StreamContext(Options())
    try:
        out = anyio.run(Enforce(ctx).process, Batch([event], [0]))
    except StreamRejected as error:
        return [], ctx, error
    return out.events, ctx, None


def expected_after_removal(case: Case, sent: dict[str, Any]) -> dict[str, Any] | None:
    if case.anchor is None:
        return None  # the event itself goes
    expected = copy.deepcopy(sent)
    remove(expected, case.anchor)
    return expected


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(cases())
def test_enforce_agrees_with_the_schema(case: Case) -> None:
    assert event_valid(case.original), "the generator made an invalid event"
    sent = copy.deepcopy(case.event)
    delivered, ctx, error = run_enforce(case.event)
    warnings = [str(d) for d in ctx.diagnostics]

    verdict = "rejected" if error else "dropped" if not delivered else "delivered"
    event(f"{case.kind} mutation, valid={event_valid(sent)}, {verdict}")
    if event_valid(sent):
        assert error is None, f"a valid event was rejected: {error}"
        assert delivered == [sent], "a valid event was changed"
        assert warnings == [], f"a valid event drew warnings: {warnings}"
        return

    if case.kind == "malformed":
        assert error is not None, f"malformed, yet delivered as {delivered} ({warnings})"
        assert error.pointer is not None and error.pointer.startswith(pointer(case.at)), (
            error.pointer,
            pointer(case.at),
        )
        return

    assert case.kind == "unrecognised"
    assert error is None, f"unrecognised material rejected the stream: {error}"
    expected = expected_after_removal(case, sent)
    if expected is None:
        assert delivered == []
        assert ctx.counters.dropped == 1
        named = sent["type"] if case.at == ("type",) else pointer(case.at)
        assert any(named in w for w in warnings), (named, warnings)
        return
    assert delivered == [expected]
    assert event_valid(delivered[0]), "the stripped event does not validate"
    assert [d.pointer for d in ctx.diagnostics] == [pointer(case.anchor or ())]
    assert pointer(case.anchor or ()) in warnings[0]
    assert ctx.counters.stripped == 1


# --- the native fast check against the reference's ------------------------------------------


def native_checks() -> Checks:
    return _checks.native_checks(native_module())


@given(cases())
def test_the_native_fast_check_answers_as_the_reference(case: Case) -> None:
    """The native core's fast check (``native/src/checks.rs``) passes exactly the events the
    reference's generated check passes, and says of the same ones that they hold a member it
    did not look into (the events parse's integer search then reads). It never sees an
    event the reference's walk would change: what it does not pass, the walk judges."""
    native = native_checks()
    event: Any = case.event
    kind = event.get("type")
    try:  # True, False, or _OPAQUE: clean with a member it did not look into
        reference = cast(object, CLEAN[kind](event))
    except (KeyError, TypeError):
        reference = False
    assert native.clean(event, kind) is bool(reference)
    start, opened = native.scan([event], [kind])
    assert (start, opened) == (
        (1, [0]) if reference == _OPAQUE else (1, []) if reference else (0, [])
    )


class _Text(str):
    pass


class _Object(dict[str, Any]):
    pass


def _deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"type": "text", "text": "x", "more": [value]}
    return value


ODD_EVENTS = {
    "a str subclass where a string goes": {"type": "STEP_STARTED", "stepName": _Text("s")},
    "a str subclass where a value is pinned": {
        "type": "TEXT_MESSAGE_START",
        "messageId": "m",
        "role": _Text("assistant"),
    },
    "a dict subclass for the event": _Object(type="STEP_STARTED", stepName="s"),
    "a boolean where an integer goes": {"type": "STEP_STARTED", "stepName": "s", "timestamp": True},
    "an integer past 64 bits": {"type": "STEP_STARTED", "stepName": "s", "timestamp": 2**70},
    "the largest timestamp": {"type": "STEP_STARTED", "stepName": "s", "timestamp": 2**53 - 1},
    "one past it": {"type": "STEP_STARTED", "stepName": "s", "timestamp": 2**53},
    "a float timestamp": {"type": "STEP_STARTED", "stepName": "s", "timestamp": 5.0},
    "a key that is not a string": {"type": "STEP_STARTED", "stepName": "s", 7: "x"},
    "a string with a lone surrogate": {"type": "STEP_STARTED", "stepName": "\ud800"},
    "a lone surrogate in a closed set": {
        "type": "TEXT_MESSAGE_START",
        "messageId": "m",
        "role": "\ud800",
    },
    "open JSON nested deep": {"type": "CUSTOM", "name": "n", "value": _deep(5_000)},
    "a state delta with a broken pointer": {
        "type": "STATE_DELTA",
        "delta": [{"op": "add", "path": "a~2", "value": 1}],
    },
    "a state delta with a good one": {
        "type": "STATE_DELTA",
        "delta": [{"op": "add", "path": "/a~0/~1", "value": 1}],
    },
}


@pytest.mark.parametrize("name", ODD_EVENTS)
def test_the_native_fast_check_answers_as_the_reference_on_what_a_middleware_may_hand_it(
    name: str,
) -> None:
    """Values no decoder makes but a middleware before enforce can: subclasses, booleans,
    non-string keys, lone surrogates, nesting past any parser's limit."""
    event: Any = ODD_EVENTS[name]
    kind = event["type"]
    reference = cast(object, CLEAN[kind](event))
    assert native_checks().clean(event, kind) is bool(reference)
    assert native_checks().scan([event], [kind]) == (
        (1, [0]) if reference == _OPAQUE else (1, []) if reference else (0, [])
    )


@pytest.mark.parametrize(
    ("rows", "refusal"),
    [
        ([("list", 0, 0)], "holds itself"),
        ([("list", 1, 0), ("list", 0, 0)], "holds itself"),
        ([("list", 5, 0)], "no node 5"),
        ([("union", "type", [("A", 1)]), ("str",)], "not an object"),
        ([("no such node",)], "no node"),
    ],
)
def test_the_native_core_refuses_a_plan_it_could_not_check_with(
    rows: list[tuple[Any, ...]], refusal: str
) -> None:
    """A plan that nests itself would let a value drive the native checks' recursion past
    any stack; one that names a node it lacks would index out of it. Both are refused when
    the checks are built, never met while checking."""
    with pytest.raises(ValueError, match=refusal):
        native_module().Checks(rows, {})
