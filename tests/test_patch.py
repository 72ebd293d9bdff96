"""JSON Patch (RFC 6902), in place and atomic (/spec/1.1/basic/patterns/snapshots)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from agui_pipeline.model.patch import (
    Allowance,
    PatchBudget,
    PatchFailed,
    PatchRefused,
    apply_patch,
    json_equal,
    size,
)
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
        ({"op": ["add"], "path": "/x", "value": 1}, "op is a string, found array"),
        ({"op": {"add": 1}, "path": "/x", "value": 1}, "op is a string, found object"),
        ({"op": None, "path": "/x", "value": 1}, "op is a string, found null"),
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


# -- budgets: size, depth and work (what a hostile producer's patch may cost) -------------


def budget(remaining: int = 10**9, work: int = 10**9, depth: int = 128) -> PatchBudget:
    return PatchBudget(remaining, Allowance(work), depth)


_plain_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**64 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(st.characters(min_codepoint=32, max_codepoint=126, exclude_characters='"\\')),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.text(st.characters(min_codepoint=97, max_codepoint=122), max_size=4),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=20,
)


@given(value=_plain_json)
def test_size_is_at_least_the_json_it_would_write(value: Any) -> None:
    """For ASCII without escapes the estimate never undercounts what orjson writes."""
    assert size(value, 10**9) >= len(orjson.dumps(value))


def test_size_measures_any_depth_and_stops_at_its_cap() -> None:
    deep: Any = 0
    for _ in range(100_000):  # orjson refuses past 255; a recursive walk past ~1,000
        deep = [deep]
    assert size(deep, 10**9) >= 200_000
    assert size(["x" * 100] * 1_000_000, 1_000) > 1_000  # stops early: a cap, not a count


def test_an_index_of_endless_digits_is_out_of_range_not_a_crash() -> None:
    document = {"a": [1, 2]}
    with pytest.raises(PatchFailed, match="out of range"):
        apply_patch(document, [{"op": "add", "path": "/a/1" + "0" * 5_000, "value": 1}])
    with pytest.raises(PatchFailed, match="out of range"):
        apply_patch(document, [{"op": "remove", "path": "/a/9" + "9" * 5_000}])
    assert document == {"a": [1, 2]}


def test_a_copy_is_charged_its_size_at_any_depth() -> None:
    deep: Any = "leaf"
    for _ in range(1_000):
        deep = {"d": deep}
    document = {"deep": deep, "copies": []}
    spent = budget(remaining=100_000, depth=10_000)
    apply_patch(document, [{"op": "copy", "from": "/deep", "path": "/copies/-"}], budget=spent)
    assert spent.remaining < 100_000 - 50_000  # 55 a level: 7 characters, 48 for a dict
    with pytest.raises(PatchRefused) as refused:
        apply_patch(document, [{"op": "copy", "from": "/deep", "path": "/copies/-"}], budget=spent)
    assert refused.value.limit == "size"
    assert len(document["copies"]) == 1


def test_a_patch_may_not_nest_the_document_past_max_depth() -> None:
    document: dict[str, Any] = {"a": {"b": {}}}
    limits = budget(depth=4)
    apply_patch(document, [{"op": "add", "path": "/a/b/c", "value": [1]}], budget=limits)
    for operation in (
        {"op": "add", "path": "/a/b/c", "value": [[1]]},
        {"op": "copy", "from": "/a", "path": "/a/b/x"},
        {"op": "move", "from": "/a/b/c", "path": "/a/b/c2/deeper"},
    ):
        document.setdefault("a", {}).setdefault("b", {}).setdefault("c2", {})
        before = copy.deepcopy(document)
        with pytest.raises(PatchRefused) as refused:
            apply_patch(
                document,
                [{"op": "test", "path": "/a", "value": before["a"]}, operation],
                budget=limits,
            )
        assert refused.value.limit == "depth"
        assert refused.value.position == 1
        assert document == before


def test_work_beyond_the_allowance_is_refused_and_rolled_back() -> None:
    """Inserting at the head of an array moves every element; copies are work too."""
    document = {"a": list(range(100_000)), "log": []}
    few = budget(work=0)
    patch = [{"op": "add", "path": "/log/-", "value": 1}, {"op": "add", "path": "/a/0", "value": 0}]
    with pytest.raises(PatchRefused) as refused:
        apply_patch(document, patch, budget=few)
    assert (refused.value.limit, refused.value.position) == ("work", 1)
    assert document["log"] == [] and len(document["a"]) == 100_000
    # Appends and short arrays cost nothing beyond what each operation adds.
    apply_patch(
        document, [{"op": "add", "path": "/log/-", "value": i} for i in range(100)], budget=few
    )
    assert document["log"] == list(range(100))
