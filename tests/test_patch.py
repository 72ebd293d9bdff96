"""JSON Patch (RFC 6902), in place and atomic (/spec/1.1/basic/patterns/snapshots)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from agui_pipeline.patch import PatchFailed, apply_patch, json_equal
from hypothesis import given
from hypothesis import strategies as st

DOC: dict[str, Any] = {"a": {"b": [1, 2, 3], "c": "x"}, "d": None, "e~f": 1, "g/h": 2}


def patched(document: Any, *operations: dict[str, Any]) -> Any:
    return apply_patch(copy.deepcopy(document), list(operations))


@pytest.mark.parametrize(
    ("operation", "expected"),
    [
        ({"op": "add", "path": "/x", "value": 1}, {**DOC, "x": 1}),
        ({"op": "add", "path": "/a/b/1", "value": 9}, {**DOC, "a": {"b": [1, 9, 2, 3], "c": "x"}}),
        ({"op": "add", "path": "/a/b/-", "value": 4}, {**DOC, "a": {"b": [1, 2, 3, 4], "c": "x"}}),
        ({"op": "add", "path": "/a/b/3", "value": 4}, {**DOC, "a": {"b": [1, 2, 3, 4], "c": "x"}}),
        ({"op": "add", "path": "", "value": [1]}, [1]),
        ({"op": "add", "path": "/d", "value": 0}, {**DOC, "d": 0}),
        ({"op": "remove", "path": "/a/b/0"}, {**DOC, "a": {"b": [2, 3], "c": "x"}}),
        ({"op": "remove", "path": "/e~0f"}, {k: v for k, v in DOC.items() if k != "e~f"}),
        ({"op": "remove", "path": "/g~1h"}, {k: v for k, v in DOC.items() if k != "g/h"}),
        (
            {"op": "replace", "path": "/a/c", "value": {"y": 1}},
            {**DOC, "a": {"b": [1, 2, 3], "c": {"y": 1}}},
        ),
        ({"op": "replace", "path": "", "value": False}, False),
        ({"op": "move", "from": "/a/c", "path": "/c"}, {**DOC, "a": {"b": [1, 2, 3]}, "c": "x"}),
        (
            {"op": "move", "from": "/a/b/0", "path": "/a/b/2"},
            {**DOC, "a": {"b": [2, 3, 1], "c": "x"}},
        ),
        ({"op": "copy", "from": "/a/b", "path": "/b"}, {**DOC, "b": [1, 2, 3]}),
        ({"op": "test", "path": "/a/b", "value": [1, 2.0, 3]}, DOC),
        ({"op": "test", "path": "/d", "value": None}, DOC),
        # RFC 6902 section 4: members an operation does not define are ignored.
        (
            {"op": "remove", "path": "/d", "value": "leftover"},
            {k: v for k, v in DOC.items() if k != "d"},
        ),
    ],
)
def test_each_operation_applies_as_rfc_6902_says(operation: dict[str, Any], expected: Any) -> None:
    assert patched(DOC, operation) == expected


@pytest.mark.parametrize(
    ("operation", "reason"),
    [
        ({"op": "add", "path": "/nope/x", "value": 1}, "/nope does not exist"),
        ({"op": "add", "path": "/a/b/5", "value": 1}, "out of range"),
        ({"op": "add", "path": "/a/b/01", "value": 1}, "not an array index"),
        ({"op": "add", "path": "/a/c/x", "value": 1}, "not a container"),
        ({"op": "add", "path": "a", "value": 1}, "must start with '/'"),
        ({"op": "add", "path": "/a~2", "value": 1}, "'~'"),
        ({"op": "remove", "path": "/zz"}, "/zz does not exist"),
        ({"op": "remove", "path": "/a/b/3"}, "out of range"),
        ({"op": "remove", "path": ""}, "whole document"),
        ({"op": "replace", "path": "/zz", "value": 1}, "does not exist"),
        ({"op": "replace", "path": "/a/b/-", "value": 1}, "not an array index"),
        ({"op": "move", "from": "/a", "path": "/a/b/x"}, "own child"),
        ({"op": "move", "from": "/zz", "path": "/y"}, "does not exist"),
        ({"op": "copy", "from": "/zz", "path": "/y"}, "does not exist"),
        ({"op": "test", "path": "/e~0f", "value": True}, "not the expected value"),
        ({"op": "test", "path": "/a/b", "value": [1, 2]}, "not the expected value"),
        ({"op": "increment", "path": "/e~0f"}, "unknown op"),
        ({"op": "add", "path": "/x"}, "no 'value'"),
    ],
)
def test_an_operation_that_does_not_apply_fails_and_says_why(
    operation: dict[str, Any], reason: str
) -> None:
    document = copy.deepcopy(DOC)
    with pytest.raises(PatchFailed) as failure:
        apply_patch(document, [operation])
    assert reason in str(failure.value)
    assert document == DOC


def test_a_failing_patch_undoes_every_operation_before_it() -> None:
    document = copy.deepcopy(DOC)
    inner = document["a"]
    patch = [
        {"op": "add", "path": "/a/b/0", "value": 0},
        {"op": "remove", "path": "/a/b/3"},
        {"op": "replace", "path": "/a/c", "value": "y"},
        {"op": "move", "from": "/d", "path": "/a/d"},
        {"op": "copy", "from": "/a", "path": "/copy"},
        {"op": "add", "path": "", "value": "replaced root"},
        {"op": "add", "path": "/x", "value": 1},  # the root is a string now: fails
    ]
    with pytest.raises(PatchFailed) as failure:
        apply_patch(document, patch)
    assert failure.value.position == 6
    assert document == DOC
    assert document["a"] is inner  # restored in place, not rebuilt


def test_array_order_is_restored_exactly() -> None:
    document = {"list": ["a", "b", "c", "d"]}
    with pytest.raises(PatchFailed):
        apply_patch(
            document,
            [
                {"op": "remove", "path": "/list/1"},
                {"op": "add", "path": "/list/0", "value": "z"},
                {"op": "move", "from": "/list/3", "path": "/list/0"},
                {"op": "test", "path": "/list/0", "value": "never"},
            ],
        )
    assert document == {"list": ["a", "b", "c", "d"]}


def test_values_a_patch_inserts_are_copies() -> None:
    value = {"nested": [1]}
    document = apply_patch({}, [{"op": "add", "path": "/v", "value": value}])
    apply_patch(document, [{"op": "add", "path": "/v/nested/-", "value": 2}])
    assert value == {"nested": [1]}


def test_json_equality_tells_booleans_from_numbers() -> None:
    assert json_equal({"a": [1, 2.0]}, {"a": [1.0, 2]})
    assert not json_equal(True, 1)
    assert not json_equal([0], [False])
    assert not json_equal({"a": None}, {"b": None})
    assert not json_equal("1", 1)


_keys = st.sampled_from(["a", "b", "c"])
_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["x", "y"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=3)),
    max_leaves=8,
)
_paths = st.lists(st.sampled_from(["a", "b", "0", "1", "-"]), max_size=3).map(
    lambda tokens: "".join("/" + t for t in tokens)
)
_operations = st.one_of(
    st.builds(lambda p, v: {"op": "add", "path": p, "value": v}, _paths, _json),
    st.builds(lambda p: {"op": "remove", "path": p}, _paths),
    st.builds(lambda p, v: {"op": "replace", "path": p, "value": v}, _paths, _json),
    st.builds(lambda f, p: {"op": "move", "from": f, "path": p}, _paths, _paths),
    st.builds(lambda f, p: {"op": "copy", "from": f, "path": p}, _paths, _paths),
    st.builds(lambda p, v: {"op": "test", "path": p, "value": v}, _paths, _json),
)


@given(document=_json, patch=st.lists(_operations, max_size=5))
def test_a_patch_applies_whole_or_not_at_all(document: Any, patch: list[dict[str, Any]]) -> None:
    before = copy.deepcopy(document)
    working = copy.deepcopy(document)
    try:
        result = apply_patch(working, patch)
    except PatchFailed as failure:
        assert json_equal(working, before)
        # The operations before the failing one do apply on their own.
        apply_patch(copy.deepcopy(document), patch[: failure.position])
        return
    # Applied one operation at a time, the same result.
    stepwise = copy.deepcopy(document)
    for operation in patch:
        stepwise = apply_patch(stepwise, [operation])
    assert json_equal(result, stepwise)
