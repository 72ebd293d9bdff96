"""RFC 6902 JSON Patch, applied in place and atomically.

``/spec/1.1/basic/patterns/snapshots`` ("When a patch does not apply"): the
operations of a patch apply in order, and if any one fails the document is
left as it was. Copying the document before each patch would make a
``STATE_DELTA`` cost as much as the whole state, so instead each operation
records its inverse as it applies, and a failure replays the inverses
backwards. A patch then costs what its own operations touch.

Written here rather than taken from ``jsonpatch``: that library either
deep-copies the document per patch or, in place, leaves a partial result on
failure — neither fits.

Values a patch inserts are copied, so the state never aliases the event that
carried them (the delivered event must not change when the state does later).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from ._json import MISSING, copy_json, describe, join_pointer, unescape


class PatchBudget:
    """Bytes of JSON that patches may still insert into one document.

    :func:`apply_patch` charges every value it copies in (``add``, ``replace``,
    ``copy``) — so a tiny ``copy`` operation that duplicates a large subtree is
    charged what it really costs — and refunds nothing: removals only make the
    budget an upper bound, which the owner recounts when it runs out.
    """

    __slots__ = ("remaining",)

    def __init__(self, remaining: int) -> None:
        self.remaining = remaining


class PatchTooLarge(Exception):
    """A patch would insert more than its budget allows; the document was left as it was."""


class _Journal:
    """One patch in progress: the inverse of every step taken, and the budget it draws on."""

    __slots__ = ("budget", "steps")

    def __init__(self, budget: PatchBudget | None) -> None:
        self.steps: list[tuple[Any, ...]] = []
        self.budget = budget

    def append(self, step: tuple[Any, ...]) -> None:
        self.steps.append(step)

    def copy_in(self, value: Any) -> Any:
        """A copy of ``value`` to insert (the state never aliases an event), charged."""
        if self.budget is None:
            return copy_json(value)
        try:
            data = orjson.dumps(value)
        except (orjson.JSONEncodeError, TypeError):
            return copy_json(value)  # deeper than orjson writes: parse's max_depth bounds it
        self.budget.remaining -= len(data)
        if self.budget.remaining < 0:
            raise PatchTooLarge
        return orjson.loads(data) if type(value) is dict or type(value) is list else value


class PatchFailed(Exception):
    """A well-formed patch that does not apply; the document was left as it was.

    ``position`` is the index of the failing operation in the patch.
    """

    def __init__(self, position: int, reason: str) -> None:
        self.position = position
        self.reason = reason
        super().__init__(f"operation {position}: {reason}")


def apply_patch(document: Any, patch: Any, *, budget: PatchBudget | None = None) -> Any:
    """Apply ``patch`` to ``document`` in place and return the result.

    The result is a new object only when an operation replaces the root.
    Raises :class:`PatchFailed` with the document exactly as it was, except
    that a member a failed patch had removed from an object and the rollback
    put back now comes last among its object's members (JSON objects are
    unordered; every value is as it was). With a ``budget``, raises
    :class:`PatchTooLarge`, likewise with the document (and the budget) as they
    were, when the values it inserts would overdraw it.
    """
    if type(patch) is not list:
        raise PatchFailed(0, f"a patch is an array of operations, found {describe(patch)}")
    undo = _Journal(budget)
    before = None if budget is None else budget.remaining
    root = [document]  # the root's container, so every operation has a parent
    for position, operation in enumerate(patch):
        try:
            _apply(root, operation, undo)
        except (_Fail, PatchTooLarge) as fail:
            _rollback(root, undo)
            if budget is not None and before is not None:
                budget.remaining = before
            if isinstance(fail, PatchTooLarge):
                raise
            raise PatchFailed(position, f"{_summary(operation)}: {fail}") from None
    return root[0]


def json_equal(left: Any, right: Any) -> bool:
    """Equality as RFC 6902's ``test`` defines it: ``1 == 1.0``, but ``true != 1``."""
    pending = [(left, right)]
    while pending:
        a, b = pending.pop()
        ta, tb = type(a), type(b)
        if ta is dict:
            if tb is not dict or a.keys() != b.keys():
                return False
            pending.extend((a[key], b[key]) for key in a)
        elif ta is list:
            if tb is not list or len(a) != len(b):
                return False
            pending.extend(zip(a, b, strict=True))
        elif ta is bool or tb is bool:
            if ta is not tb or a != b:
                return False
        elif ta in (int, float) and tb in (int, float):
            if a != b:
                return False
        elif ta is not tb or a != b:
            return False
    return True


# -- operations ----------------------------------------------------------------


class _Fail(Exception):
    """Internal: why one operation does not apply."""


def _apply(root: list[Any], operation: Any, undo: _Journal) -> None:
    if type(operation) is not dict:
        raise _Fail(f"an operation is an object, found {describe(operation)}")
    apply = _OPERATIONS.get(operation.get("op"))
    if apply is None:
        raise _Fail(f"unknown op {operation.get('op')!r}")
    apply(root, operation, undo)


def _add(root: list[Any], operation: dict[str, Any], undo: _Journal) -> None:
    _insert(root, _tokens(_member(operation, "path")), undo.copy_in(_value(operation)), undo)


def _remove(root: list[Any], operation: dict[str, Any], undo: _Journal) -> None:
    tokens = _tokens(_member(operation, "path"))
    if not tokens:
        raise _Fail("cannot remove the whole document")
    _delete(root, tokens, undo)


def _replace(root: list[Any], operation: dict[str, Any], undo: _Journal) -> None:
    tokens = _tokens(_member(operation, "path"))
    value = undo.copy_in(_value(operation))
    parent, key = _locate(root, tokens)
    if type(parent) is list:
        index = _index(key, len(parent), end_allowed=False)
        undo.append(("set", parent, index, parent[index]))
        parent[index] = value
    elif key in parent:
        undo.append(("set", parent, key, parent[key]))
        parent[key] = value
    else:
        raise _Fail(f"{join_pointer(tokens)} does not exist")


def _move(root: list[Any], operation: dict[str, Any], undo: _Journal) -> None:
    source = _member(operation, "from")
    target = _member(operation, "path")
    source_tokens, target_tokens = _tokens(source), _tokens(target)
    if target_tokens[: len(source_tokens)] == source_tokens and target != source:
        raise _Fail(f"cannot move {source} into its own child {target}")
    value = _get(root, source_tokens)
    if target == source:
        return
    _delete(root, source_tokens, undo)
    _insert(root, target_tokens, value, undo)


def _copy(root: list[Any], operation: dict[str, Any], undo: _Journal) -> None:
    value = _get(root, _tokens(_member(operation, "from")))
    _insert(root, _tokens(_member(operation, "path")), undo.copy_in(value), undo)


def _test(root: list[Any], operation: dict[str, Any], undo: _Journal) -> None:
    tokens = _tokens(_member(operation, "path"))
    if not json_equal(_get(root, tokens), _value(operation)):
        raise _Fail(f"the value at {join_pointer(tokens)} is not the expected value")


_OPERATIONS: dict[Any, Callable[[list[Any], dict[str, Any], _Journal], None]] = {
    "add": _add,
    "remove": _remove,
    "replace": _replace,
    "move": _move,
    "copy": _copy,
    "test": _test,
}


# -- pointers and containers ------------------------------------------------------


def _insert(root: list[Any], tokens: list[str], value: Any, undo: _Journal) -> None:
    if not tokens:  # adding at the root replaces the document
        undo.append(("set", root, 0, root[0]))
        root[0] = value
        return
    parent, key = _locate(root, tokens)
    if type(parent) is list:
        index = _index(key, len(parent), end_allowed=True)
        parent.insert(index, value)
        undo.append(("del", parent, index))
    else:
        old = parent.get(key, MISSING)
        parent[key] = value
        undo.append(("del", parent, key) if old is MISSING else ("set", parent, key, old))


def _delete(root: list[Any], tokens: list[str], undo: _Journal) -> None:
    parent, key = _locate(root, tokens)
    if type(parent) is list:
        index = _index(key, len(parent), end_allowed=False)
        undo.append(("insert", parent, index, parent.pop(index)))
    elif key in parent:
        undo.append(("set", parent, key, parent.pop(key)))
    else:
        raise _Fail(f"{join_pointer(tokens)} does not exist")


def _locate(root: list[Any], tokens: list[str]) -> tuple[Any, Any]:
    """The container holding the target of ``tokens``, and the target's key in it."""
    if not tokens:
        return root, 0
    parent = _get(root, tokens[:-1])
    if type(parent) is not dict and type(parent) is not list:
        where = join_pointer(tokens[:-1]) or "the root"
        raise _Fail(f"{where} is {describe(parent)}, not a container")
    return parent, tokens[-1]


def _get(root: list[Any], tokens: list[str]) -> Any:
    node = root[0]
    for depth, token in enumerate(tokens):
        if type(node) is dict:
            node = node.get(token, MISSING)
            if node is MISSING:
                raise _Fail(f"{join_pointer(tokens[: depth + 1])} does not exist")
        elif type(node) is list:
            node = node[_index(token, len(node), end_allowed=False, tokens=tokens[: depth + 1])]
        else:
            where = join_pointer(tokens[:depth]) or "the root"
            raise _Fail(f"{where} is {describe(node)}, not a container")
    return node


def _index(token: Any, length: int, *, end_allowed: bool, tokens: list[str] | None = None) -> int:
    if type(token) is int:  # the root's slot in its holder
        return token
    if token == "-" and end_allowed:
        return length
    if not (token.isascii() and token.isdigit()) or (len(token) > 1 and token[0] == "0"):
        raise _Fail(f"{token!r} is not an array index")
    index = int(token)
    if index > length or (index == length and not end_allowed):
        where = f" at {join_pointer(tokens)}" if tokens else ""
        raise _Fail(f"index {index} is out of range for an array of {length}{where}")
    return index


def _tokens(pointer: Any) -> list[str]:
    """RFC 6901: ``""`` is the whole document; ``/a~1b/0`` is ``["a/b", "0"]``."""
    if type(pointer) is not str:
        raise _Fail(f"a JSON Pointer is a string, found {describe(pointer)}")
    if pointer == "":
        return []
    if pointer[0] != "/":
        raise _Fail(f"{pointer!r} is not a JSON Pointer (it must start with '/')")
    tokens = pointer[1:].split("/")
    if "~" in pointer:
        if any("~" in t.replace("~0", "").replace("~1", "") for t in tokens):
            raise _Fail(f"{pointer!r} has a '~' that is not '~0' or '~1'")
        tokens = [unescape(t) for t in tokens]
    return tokens


def _member(operation: dict[str, Any], name: str) -> Any:
    value = operation.get(name, MISSING)
    if value is MISSING:
        raise _Fail(f"the operation has no {name!r}")
    return value


def _value(operation: dict[str, Any]) -> Any:
    return _member(operation, "value")


def _rollback(root: list[Any], undo: _Journal) -> None:
    for step in reversed(undo.steps):
        action, container, key = step[0], step[1], step[2]
        if action == "set":
            container[key] = step[3]
        elif action == "del":
            del container[key]
        else:
            container.insert(key, step[3])


def _summary(operation: Any) -> str:
    if type(operation) is not dict:
        return "operation"
    op, path = operation.get("op"), operation.get("path")
    source = f" from {operation['from']}" if "from" in operation else ""
    return f"{op} {path!r}{source}" if type(path) is str else str(op)
