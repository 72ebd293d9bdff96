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

from agui_pipeline._json import MISSING, copy_json, describe, join_pointer, shown, unescape


class Allowance:
    """Work that patches may still do beyond reading their own operations.

    What one operation costs need not be what it says: a 40-byte ``copy`` can
    duplicate a subtree of megabytes, and an ``add`` at the head of an array
    moves every element after it. Those are charged here — a value copied or
    walked by its :func:`size`, an array element moved as 1 — so the work a
    stream makes the consumer do stays in proportion to what it sends: the
    allowance starts at ``Limits.max_patch_work`` and each operation applied
    adds :data:`WORK_PER_OPERATION`. One allowance serves every patched
    document of a stream (the state and the activities).
    """

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left

    def spend(self, cost: int) -> None:
        self.left -= cost
        if self.left < 0:
            raise PatchRefused("work")


WORK_PER_OPERATION = 4096
"""What each operation applied adds to its stream's :class:`Allowance`: enough for the
appends, small edits and short copies of an ordinary stream never to run out."""


class PatchBudget:
    """What patches may still insert into the documents it covers, in :func:`size` units.

    :func:`apply_patch` charges every value it puts in (``add``, ``replace``,
    ``copy``), measured structurally at any depth — so a tiny ``copy`` that
    duplicates a large subtree is charged what it really costs — and refunds
    nothing: removals only make the budget an upper bound, which the owner
    recounts (with :func:`size`, its work charged) when it runs out. It also
    holds the documents to ``max_depth`` levels of nesting, so a patch cannot
    build a document deeper than any event could carry.
    """

    __slots__ = ("allowance", "max_depth", "remaining")

    def __init__(self, remaining: int, allowance: Allowance, max_depth: int) -> None:
        self.remaining = remaining
        self.allowance = allowance
        self.max_depth = max_depth


class PatchRefused(Exception):
    """A patch would break its budget; the document and the budget were left as they were.

    ``limit`` says which: ``"size"`` (it would insert more than the budget has),
    ``"depth"`` (it would nest the document deeper than ``max_depth``) or
    ``"work"`` (its operations would cost more than the :class:`Allowance` has
    left). ``position`` is the operation's index in the patch.
    """

    def __init__(self, limit: str, detail: str = "") -> None:
        self.limit = limit
        self.detail = detail
        self.position = 0
        super().__init__(f"{limit}: {detail}" if detail else limit)


VALUE_OVERHEAD = 16
"""What :func:`size` adds per value to its JSON text: a value in memory costs more than
its text (an empty list takes 56 bytes, ``[]`` 2), and with this the memory a document
takes stays within about four times its size, whatever its shape."""


def size(value: Any, cap: int) -> int:
    """The size of a JSON value: its JSON text plus :data:`VALUE_OVERHEAD` per value
    (twice that more per object), estimated from its structure, at any depth.

    A string counts its characters and quotes, a number its most digits, a
    container its brackets and, per member, its key, quotes, colon and comma.
    Never serialises the value (which fails past 255 levels); stops counting
    once past ``cap`` — the walk costs at most that much — and then returns
    a number above ``cap``.
    """
    return _walk(value, cap, None)[0]


def _walk(value: Any, cap: int, max_depth: int | None) -> tuple[int, int]:
    """``(size, depth)`` of ``value``; stops once the size passes ``cap`` or the depth
    passes ``max_depth`` (the figures then only say so)."""
    kind = type(value)
    if kind is not dict and kind is not list:
        return _scalar(value) + VALUE_OVERHEAD, 0
    total, deepest = VALUE_OVERHEAD, 1
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        container, depth = pending.pop()
        if type(container) is dict:
            # A dict's table: 184 bytes in memory with one member, hence twice more.
            total += 2 + 2 * VALUE_OVERHEAD + sum(map(len, container))
            total += len(container) * (4 + VALUE_OVERHEAD)
            members: Any = container.values()
        else:
            total += 2 + len(container) * (1 + VALUE_OVERHEAD)
            members = container
        for member in members:
            kind = type(member)
            if kind is str:
                total += len(member) + 2
            elif kind is dict or kind is list:
                pending.append((member, depth + 1))
                if depth >= deepest:
                    deepest = depth + 1
            elif kind is int:
                total += member.bit_length() // 3 + 2  # at least its decimal digits and a sign
            else:
                total += 24 if kind is float else 5  # a double's longest; true, false, null
        if total > cap or (max_depth is not None and deepest > max_depth):
            break
    return total, deepest


def _scalar(value: Any) -> int:
    kind = type(value)
    if kind is str:
        return len(value) + 2
    if kind is int:
        return int(value.bit_length()) // 3 + 2  # at least its decimal digits and a sign
    if kind is float:
        return 24  # the longest a double is written
    return 5  # true, false, null


class _Journal:
    """One patch in progress: the inverse of every step taken, and the budget it draws on."""

    __slots__ = ("budget", "steps")

    def __init__(self, budget: PatchBudget | None) -> None:
        self.steps: list[tuple[Any, ...]] = []
        self.budget = budget

    def append(self, step: tuple[Any, ...]) -> None:
        self.steps.append(step)

    def put(self, value: Any, tokens: list[str], *, copied: bool) -> Any:
        """``value`` to insert at ``tokens``, copied (the state never aliases an event),
        charged to the budget; ``copied``: it comes from the document (a ``copy``), so
        walking and copying it is work the operation did not carry."""
        budget = self.budget
        if budget is None:
            return copy_json(value)
        if not copied and type(value) is not dict and type(value) is not list:
            # The commonest case, a scalar from the event: no walk, nothing to copy.
            if len(tokens) > budget.max_depth:
                raise PatchRefused("depth", f"{join_pointer(tokens)} is past it")
            budget.remaining -= _scalar(value) + VALUE_OVERHEAD
            if budget.remaining < 0:
                raise PatchRefused("size")
            return value
        room = budget.max_depth - len(tokens)
        weight, depth = _walk(value, budget.remaining, room)
        if copied:
            budget.allowance.spend(weight)
        if depth > room:
            raise PatchRefused(
                "depth", f"{join_pointer(tokens) or 'the root'} would be {depth} levels deep"
            )
        budget.remaining -= weight
        if budget.remaining < 0:
            raise PatchRefused("size")
        return copy_json(value)

    def moved(self, value: Any, source: list[str], target: list[str]) -> None:
        """A value moved deeper: its depth is checked (walking it is work)."""
        budget = self.budget
        if budget is None or len(target) <= len(source):
            return
        room = budget.max_depth - len(target)
        weight, depth = _walk(value, 2**62, room)
        budget.allowance.spend(weight)
        if depth > room:
            raise PatchRefused("depth", f"{join_pointer(target)} would be {depth} levels deep")

    def shift(self, moved: int) -> None:
        """An array insert or removal that moves ``moved`` elements."""
        # A short shift is left uncharged (it is within what every operation adds):
        # most patches touch small arrays, and this skips the bookkeeping for them.
        if self.budget is not None and moved > 64:
            self.budget.allowance.spend(moved)


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
    :class:`PatchRefused`, likewise with the document (and the size budget) as
    they were, when an operation would overdraw it; each operation applied adds
    :data:`WORK_PER_OPERATION` to the budget's allowance.
    """
    if type(patch) is not list:
        raise PatchFailed(0, f"a patch is an array of operations, found {describe(patch)}")
    undo = _Journal(budget)
    before = None if budget is None else budget.remaining
    root = [document]  # the root's container, so every operation has a parent
    for position, operation in enumerate(patch):
        try:
            if budget is not None:
                budget.allowance.left += WORK_PER_OPERATION
            _apply(root, operation, undo)
        except (_Fail, PatchRefused) as fail:
            _rollback(root, undo)
            if budget is not None and before is not None:
                budget.remaining = before
            if isinstance(fail, PatchRefused):
                fail.position = position
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
    op = operation.get("op")
    if type(op) is not str:  # RFC 6902 §4: "op" is a string naming the operation
        raise _Fail(f"an operation's op is a string, found {describe(op)}")
    apply = _OPERATIONS.get(op)
    if apply is None:
        raise _Fail(f"unknown op {shown(op)}")
    apply(root, operation, undo)


def _add(root: list[Any], operation: dict[str, Any], undo: _Journal) -> None:
    tokens = _tokens(_member(operation, "path"))
    _insert(root, tokens, undo.put(_value(operation), tokens, copied=False), undo)


def _remove(root: list[Any], operation: dict[str, Any], undo: _Journal) -> None:
    tokens = _tokens(_member(operation, "path"))
    if not tokens:
        raise _Fail("cannot remove the whole document")
    _delete(root, tokens, undo)


def _replace(root: list[Any], operation: dict[str, Any], undo: _Journal) -> None:
    tokens = _tokens(_member(operation, "path"))
    value = undo.put(_value(operation), tokens, copied=False)
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
    undo.moved(value, source_tokens, target_tokens)
    _delete(root, source_tokens, undo)
    _insert(root, target_tokens, value, undo)


def _copy(root: list[Any], operation: dict[str, Any], undo: _Journal) -> None:
    value = _get(root, _tokens(_member(operation, "from")))
    tokens = _tokens(_member(operation, "path"))
    _insert(root, tokens, undo.put(value, tokens, copied=True), undo)


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
        undo.shift(len(parent) - index)
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
        undo.shift(len(parent) - index)
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
    if len(token) > len(str(length)):  # before int(): it refuses more than 4,300 digits
        where = f" at {join_pointer(tokens)}" if tokens else ""
        raise _Fail(f"index {shown(token)} is out of range for an array of {length}{where}")
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
    source = f" from {shown(operation['from'])}" if "from" in operation else ""
    return f"{shown(op)} {shown(path)}{source}" if type(path) is str else shown(op)
