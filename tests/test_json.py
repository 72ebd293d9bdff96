"""The shared JSON helpers: pointer tokens, values named in messages, deep copies."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agui_pipeline._json import (
    MISSING,
    SHOWN_CHARACTERS,
    copy_json,
    describe,
    escape,
    join_pointer,
    shown,
    unescape,
)
from hypothesis import given
from hypothesis import strategies as st

json_values = st.recursive(  # what orjson decodes: 64-bit integers, finite floats
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


@pytest.mark.parametrize(
    ("name", "token"),
    [("a", "a"), ("a/b", "a~1b"), ("~", "~0"), ("~1", "~01"), ("/~", "~1~0"), ("", "")],
)
def test_a_member_name_escapes_to_its_rfc6901_token_and_back(name: str, token: str) -> None:
    assert escape(name) == token
    assert unescape(token) == name


@given(st.text())
def test_unescape_undoes_escape(name: str) -> None:
    assert unescape(escape(name)) == name


def test_a_path_joins_into_a_pointer() -> None:
    assert join_pointer([]) == ""
    assert join_pointer(["messages", 0, "a/b", "~"]) == "/messages/0/a~1b/~0"


@pytest.mark.parametrize(
    ("value", "described"),
    [
        (MISSING, "nothing (the field is absent)"),
        (None, "null"),
        (True, "boolean true"),
        (False, "boolean false"),
        (42, "number 42"),
        (2.5, "number 2.5"),
        ("x", 'string "x"'),
        ('a"b', 'string "a\\"b"'),
        ([1], "array"),
        ({"a": 1}, "object"),
        ({1, 2}, "Python set"),
        (2**100, "number (an integer of 101 bits)"),
    ],
)
def test_a_found_value_is_described_by_its_json_type(value: Any, described: str) -> None:
    assert describe(value) == described


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        (None, "null"),
        (True, "true"),
        (7, "7"),
        ("été", '"été"'),
        ([1, 2], "an array"),
        ({}, "an object"),
    ],
)
def test_a_value_is_shown_in_json_spelling(value: Any, quoted: str) -> None:
    assert shown(value) == quoted


def test_a_long_string_is_cut_short() -> None:
    assert shown("x" * 1000) == json.dumps("x" * SHOWN_CHARACTERS + "…", ensure_ascii=False)


@given(json_values)
def test_a_message_never_grows_with_the_value(value: Any) -> None:
    # The longest: 60 characters, each escaped to six ("\u0000"), in quotes, after "string ".
    assert len(describe(value)) <= len("string ") + 6 * (SHOWN_CHARACTERS + 1) + 2
    assert len(shown(value)) <= 6 * (SHOWN_CHARACTERS + 1) + 2


@given(json_values)
def test_a_copy_is_equal_and_shares_no_container(value: Any) -> None:
    copied = copy_json(value)
    assert json.dumps(copied) == json.dumps(value)  # nan-safe equality, member order kept
    pending = [(value, copied)]
    while pending:
        original, copy = pending.pop()
        if type(original) in (dict, list):
            assert copy is not original
            items = original.values() if type(original) is dict else original
            copies = copy.values() if type(copy) is dict else copy
            pending.extend(zip(items, copies, strict=True))


def test_a_value_too_deep_for_orjson_is_still_copied() -> None:
    deep: Any = []
    node = deep
    for _ in range(5000):  # deeper than orjson and Python recursion allow
        node.append([])
        node = node[0]
    copied = copy_json(deep)
    assert copied is not deep
    assert copied[0] is not deep[0]


def test_a_value_json_cannot_spell_is_copied_and_shared() -> None:
    opaque = {1, 2}
    copied = copy_json({"a": [opaque], "b": {"c": 1}})
    assert copied == {"a": [opaque], "b": {"c": 1}}
    assert copied["a"][0] is opaque
