"""Enforce's checks, compiled once from the event ``TypedDict``\\ s in
:mod:`agui_pipeline.events` (the project's one statement of structure), and the
batch scans generated from them; the stage itself is :mod:`.enforce`.

Each compiled node answers two questions: :meth:`_Node.clean` (is this value
exactly valid? — the fast path: for an object, straight-line code generated
once, one ``get`` and an inlined ``type(x) is str``-style test per member)
and :meth:`_Node.walk` (strip what is unrecognised, in place, or raise what
is malformed — only reached when ``clean`` said no). The nodes are built at
import; an object's generated check is compiled when it is first needed.
"""

from __future__ import annotations

import copy
import re
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from itertools import repeat
from operator import is_
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired, Required, Union

from agui_pipeline import events as schema
from agui_pipeline._json import MISSING, describe, escape, shown
from agui_pipeline._suggest import closest, did_you_mean
from agui_pipeline.batch import Event
from agui_pipeline.catalog import ENFORCE_MALFORMED, ENFORCE_NULL_OPTIONAL, Code
from agui_pipeline.stages._codegen import define, generated

if TYPE_CHECKING:
    from agui_pipeline._native import Checks

# --- what a walk raises ---------------------------------------------------------


class Malformed(Exception):
    """A described value the schema rejects: the stream is rejected."""

    def __init__(
        self, pointer: str, expected: str, received: str, code: Code = ENFORCE_MALFORMED
    ) -> None:
        self.pointer = pointer
        self.expected = expected
        self.received = received
        self.code = code
        self.definition: str | None = None
        """The schema definition holding the field (set by the nearest object)."""


class Unrecognised(Exception):
    """Unrecognised material: whoever holds it in an optional or list position removes it."""

    def __init__(self, pointer: str, why: str) -> None:
        self.pointer = pointer
        self.why = why


Removals = list[tuple[str, str]]
"""What a walk stripped, as (pointer removed, why), reported only if the event survives."""

_LONGEST_TOKEN = 200


def _token(key: str) -> str:
    """A member name as a JSON Pointer reference token (RFC 6901).

    A name longer than 200 characters is abbreviated with "…", so a hostile
    producer's megabyte key does not become a megabyte diagnostic.
    """
    if len(key) > _LONGEST_TOKEN:
        key = key[:_LONGEST_TOKEN] + "…"
    # Most names need no escaping, and two scans in C cost less than the call: the
    # slow path makes a token of every member (~1,700 instructions an event fewer).
    return escape(key) if "~" in key or "/" in key else key


# --- compiled nodes --------------------------------------------------------------

_OPAQUE = "opaque"
"""What an object's ``clean`` returns (truthy) for a clean value with a member present that
the check does not look into: see :meth:`_Object._generate_clean`."""


class _Node:
    expected: str = "a JSON value"
    """The value this node accepts, as error text names it."""
    nullable: bool = False
    """``null`` is a valid value here (a required JSON payload)."""

    def clean(self, value: Any) -> bool:
        """Whether ``value`` is exactly valid here: nothing to strip, nothing wrong."""
        raise NotImplementedError

    def walk(self, value: Any, at: str, removed: Removals) -> None:
        """Strip unrecognised material from ``value`` in place; raise what is malformed."""
        raise NotImplementedError

    def rejects(self, var: str, namespace: dict[str, Any]) -> str | None:
        """Python source true when ``var`` is not clean here (``None``: anything is).

        Inlined into an object's generated fast check; names it needs go into
        ``namespace``.
        """
        name = f"_check{len(namespace)}"
        namespace[name] = self.clean
        return f"not {name}({var})"

    def opaque(self, seen: frozenset[int] = frozenset()) -> bool:
        """Whether the check passes values it does not look into (open JSON), so that a
        double orjson made of an integer past 64 bits could pass (``seen``: the objects
        being asked already, for a schema that nests itself)."""
        return False

    def open_kinds(self) -> tuple[type, ...] | None:
        """The kinds of value (Python types, as orjson decodes JSON) that, clean here, may
        hold what the check did not look into: ``None`` for every kind, ``()`` for none.
        The big-integer search reads the bytes of the events holding such a value
        (``IntegerSearch`` in :mod:`.parse`)."""
        return None if self.opaque() else ()

    def opens(self, var: str) -> str | None:
        """Python source true when ``var``, clean here, may hold what the check did not look
        into (``None``: never, ``"True"``: always): :meth:`open_kinds` as a test."""
        kinds = self.open_kinds()
        if kinds is None:
            return "True"
        return " or ".join(f"type({var}) is {kind.__name__}" for kind in kinds) or None


class _Primitive(_Node):
    """A string or a boolean: the exact Python type orjson decodes it to."""

    def __init__(self, kind: type, expected: str) -> None:
        self.kind = kind
        self.expected = expected

    def clean(self, value: Any) -> bool:
        return type(value) is self.kind

    def walk(self, value: Any, at: str, removed: Removals) -> None:
        if type(value) is not self.kind:
            raise Malformed(at, self.expected, describe(value))

    def rejects(self, var: str, namespace: dict[str, Any]) -> str | None:
        return f"type({var}) is not {self.kind.__name__}"


class _OpenObject(_Primitive):
    """An object open by key: its members are data, never looked into."""

    def __init__(self) -> None:
        super().__init__(dict, "object")

    def opaque(self, seen: frozenset[int] = frozenset()) -> bool:
        return True


class _AnyJSON(_Node):
    """Any JSON value, carried opaquely; ``null`` only where the schema allows it."""

    def __init__(self, nullable: bool) -> None:
        self.nullable = nullable
        self.expected = "any JSON value" if nullable else "any JSON value except null"

    def clean(self, value: Any) -> bool:
        return self.nullable or value is not None

    def walk(self, value: Any, at: str, removed: Removals) -> None:
        if value is None and not self.nullable:
            raise Malformed(at, self.expected, "null")

    def rejects(self, var: str, namespace: dict[str, Any]) -> str | None:
        return None if self.nullable else f"{var} is None"

    def opaque(self, seen: frozenset[int] = frozenset()) -> bool:
        return True


class _Integer(_Node):
    """An integer within bounds. JSON Schema counts ``5.0`` as an integer; so does this."""

    def __init__(self, bounds: schema.Range) -> None:
        self.minimum = bounds.minimum
        self.maximum = bounds.maximum
        self.expected = f"an integer from {bounds.minimum} to {bounds.maximum}"

    def clean(self, value: Any) -> bool:
        return type(value) is int and self.minimum <= value <= self.maximum

    def walk(self, value: Any, at: str, removed: Removals) -> None:
        integral = type(value) is int or (type(value) is float and value.is_integer())
        if not integral or not self.minimum <= value <= self.maximum:
            raise Malformed(at, self.expected, describe(value))

    def rejects(self, var: str, namespace: dict[str, Any]) -> str | None:
        bits = self.maximum.bit_length()
        if self.minimum == -self.maximum and self.maximum == 2**bits - 1:
            # Bounds of ±(2**bits - 1), a timestamp's: one C call and a small-int compare
            # cost less than two comparisons of large integers.
            return f"type({var}) is not int or {var}.bit_length() > {bits}"
        return f"type({var}) is not int or not {self.minimum} <= {var} <= {self.maximum}"


class _Const(_Node):
    """A value the schema pins (``const``): any other is malformed."""

    def __init__(self, value: str) -> None:
        self.value = value
        self.expected = shown(value)

    def clean(self, value: Any) -> bool:
        return type(value) is str and value == self.value

    def walk(self, value: Any, at: str, removed: Removals) -> None:
        if not self.clean(value):
            raise Malformed(at, self.expected, describe(value))

    def rejects(self, var: str, namespace: dict[str, Any]) -> str | None:
        # Exactly a str, as `clean` and `walk` ask: a str subclass equal to the value would
        # pass `!=` alone, and the walk then reject what the fast check passed.
        return f"type({var}) is not str or {var} != {self.value!r}"


class _ClosedSet(_Node):
    """A closed set of strings (``enum``): another string is unrecognised, not malformed."""

    def __init__(self, values: tuple[str, ...]) -> None:
        self.values = frozenset(values)
        self.names = ", ".join(shown(v) for v in values)
        self.expected = f"one of {self.names}"

    def clean(self, value: Any) -> bool:
        return type(value) is str and value in self.values

    def walk(self, value: Any, at: str, removed: Removals) -> None:
        if type(value) is not str:
            raise Malformed(at, "a string, " + self.expected, describe(value))
        if value not in self.values:
            raise Unrecognised(at, f"unrecognised value {shown(value)} (known: {self.names})")

    def rejects(self, var: str, namespace: dict[str, Any]) -> str | None:
        name = f"_values{len(namespace)}"
        namespace[name] = self.values
        return f"type({var}) is not str or {var} not in {name}"


# RFC 6901: "" or "/"-prefixed reference tokens, "~" only as "~0" or "~1".
_BAD_TILDE = re.compile(r"~(?![01])")


class _JsonPointer(_Node):
    expected = 'a JSON Pointer (RFC 6901: "" or "/"-prefixed tokens, "~" only as ~0 or ~1)'

    def clean(self, value: Any) -> bool:
        return type(value) is str and (
            not value or (value[0] == "/" and ("~" not in value or not _BAD_TILDE.search(value)))
        )

    def walk(self, value: Any, at: str, removed: Removals) -> None:
        if not self.clean(value):
            raise Malformed(at, self.expected, describe(value))


class _List(_Node):
    """An array; an unrecognised element is dropped and the list survives."""

    def __init__(self, item: _Node, min_items: int = 0) -> None:
        self.item = item
        self.min_items = min_items
        self.expected = f"an array of {item.expected}"
        if min_items:
            self.expected += f", at least {min_items}"

    def clean(self, value: Any) -> bool:
        if type(value) is not list or len(value) < self.min_items:
            return False
        return all(map(self.item.clean, value))

    def opaque(self, seen: frozenset[int] = frozenset()) -> bool:
        return self.item.opaque(seen)

    def walk(self, value: Any, at: str, removed: Removals) -> None:
        if type(value) is not list or len(value) < self.min_items:
            raise Malformed(at, self.expected, describe(value))
        dropped: set[int] = set()
        for position, element in enumerate(value):
            here = f"{at}/{position}"
            mark = len(removed)
            try:
                self.item.walk(element, here, removed)
            except Unrecognised as unrecognised:
                del removed[mark:]
                removed.append((here, _because(here, unrecognised)))
                dropped.add(position)
        if dropped:
            value[:] = [element for i, element in enumerate(value) if i not in dropped]


def _because(removed_at: str, unrecognised: Unrecognised) -> str:
    if unrecognised.pointer == removed_at:
        return unrecognised.why
    return f"its required {unrecognised.pointer} holds an {unrecognised.why}"


class _Object(_Node):
    """A ``TypedDict``: closed unless marked open, members checked by their own nodes."""

    expected = "object"

    def __init__(self, name: str, is_open: bool, event: bool = False) -> None:
        self.name = name
        self.is_open = is_open
        self.event = event
        """An event: its ``clean`` says :data:`_OPAQUE` of what it does not look into."""
        self.fields: dict[str, _Node] = {}
        self.required: frozenset[str] = frozenset()
        self.required_order: tuple[str, ...] = ()
        self.skip: str | None = None

    def compile(self, fields: dict[str, _Node], required: frozenset[str], skip: str | None) -> None:
        """Fill in the members; ``skip`` is a discriminator its union has already matched."""
        self.fields = fields
        self.required = required
        self.required_order = tuple(key for key in fields if key in required)
        self.skip = skip

    def clean(self, value: Any) -> bool:
        return self.fast_check()(value)

    def fast_check(self) -> Callable[[Any], bool]:
        """The generated check (:meth:`_generate_clean`), made on first use: it then
        stands in for :meth:`clean` on this node, so only the first call comes here."""
        check: Callable[[Any], bool] | None = vars(self).get("clean")
        if check is None:
            check = self.clean = self._generate_clean()  # type: ignore[method-assign, assignment]
        return check

    def rejects(self, var: str, namespace: dict[str, Any]) -> str | None:
        name = f"_check{len(namespace)}"
        namespace[name] = _on_first_call(namespace, name, self.fast_check)
        return f"not {name}({var})"

    def opaque(self, seen: frozenset[int] = frozenset()) -> bool:
        if id(self) in seen:
            return False  # asked already, further up
        seen = seen | {id(self)}
        return self.is_open or any(node.opaque(seen) for node in self.fields.values())

    def _generate_clean(self) -> Callable[[Any], bool]:
        """The fast check as straight-line Python, generated once.

        The required members first, each read by subscript with its test
        inlined (``skip``, the discriminator, is known to match already; an
        absent one is a ``KeyError``, caught once); then ``n``, the members
        left over, and an ``in`` test per optional member only while some are
        left. Subscript and ``in`` are specialised bytecode, about twice as
        fast as a ``get`` call. A closed object is clean only if every leftover
        member was an optional one it describes. For ``TEXT_MESSAGE_CONTENT``::

            def clean(v):
                if type(v) is not dict: return False
                try:
                    x = v['messageId']
                    if type(x) is not str: return False
                    x = v['delta']
                    if type(x) is not str: return False
                except KeyError: return False
                n = len(v) - 3
                if not n: return True
                if 'timestamp' in v:
                    x = v['timestamp']
                    if type(x) is not int or x.bit_length() > 53: return False
                    n -= 1
                    if not n: return True
                ...
                return False

        An event with members the check does not look into (:meth:`_Node.opaque`)
        returns :data:`_OPAQUE`, not ``True``, when one of them is present
        (``r = _OPAQUE`` where ``opened`` goes in :meth:`clean_lines`, ``return r``
        for ``ok``): enforce's scan hands that event's bytes to the big-integer
        search.
        """
        namespace: dict[str, Any] = {"_OPAQUE": _OPAQUE}
        if not (self.event and self.opaque()):
            body = self.clean_lines(namespace, ok="return True", bad="return False")
        else:
            body = ["r = True"]
            body += self.clean_lines(
                namespace, ok="return r", bad="return False", opened="r = _OPAQUE"
            )
        lines = ["def clean(v):", *(f"    {line}" for line in body)]
        return typing.cast(Callable[[Any], bool], define(f"clean {self.name}", lines, namespace))

    def clean_lines(
        self,
        namespace: dict[str, Any],
        *,
        ok: str,
        bad: str,
        opened: str | None = None,
        known_dict: bool = False,
    ) -> list[str]:
        """The source of the fast check of ``v``: ``ok`` and ``bad`` are the statements that
        end it (``return True``/``return False`` in :meth:`clean`; see :func:`_generate_scan`);
        ``opened``, the statement run when a member the check does not look into is present
        (``None``: nothing is); ``known_dict``: ``v`` is known to be a dict, no need to ask."""

        def opening(condition: str | None) -> list[str]:
            if condition is None or opened is None:
                return []
            return [f"    {opened}" if condition == "True" else f"    if {condition}: {opened}"]

        lines = ["try:"] if known_dict else [f"if type(v) is not dict: {bad}", "try:"]
        for key in self.required_order:
            if key == self.skip:
                continue
            rejects = self.fields[key].rejects("x", namespace)
            lines.append(f"    x = v[{key!r}]")
            if rejects:
                lines.append(f"    if {rejects}: {bad}")
            lines += opening(self.fields[key].opens("x"))
        lines += [
            "    pass",
            f"except KeyError: {bad}",
            f"n = len(v) - {len(self.required)}",
            f"if not n: {ok}",
        ]
        for key, node in self.fields.items():
            if key in self.required:
                continue
            rejects = node.rejects("x", namespace)
            opens = node.opens("x") if opened else None
            lines.append(f"if {key!r} in v:")
            if rejects or opens not in (None, "True"):
                lines.append(f"    x = v[{key!r}]")
            if rejects:
                lines.append(f"    if {rejects}: {bad}")
            lines += [*opening(opens), "    n -= 1", f"    if not n: {ok}"]
        if self.is_open:  # the members left over are ones it does not describe, never judged
            lines += [opened, ok] if opened else [ok]
        else:
            lines.append(bad)
        return lines

    def walk(self, value: Any, at: str, removed: Removals) -> None:
        if type(value) is not dict:
            raise Malformed(at, "object", describe(value))
        try:
            self._walk_members(value, at, removed)
        except Malformed as malformed:
            if malformed.definition is None:
                malformed.definition = self.name
            raise

    def _walk_members(self, value: dict[str, Any], at: str, removed: Removals) -> None:
        for key in self.required_order:
            if key not in value:
                raise Malformed(
                    f"{at}/{_token(key)}",
                    f"{self.fields[key].expected} (a required field)",
                    _absent(key, value, self.fields),
                )
        carried: Unrecognised | None = None  # in a required field: the whole value goes
        for key in list(value):
            here = f"{at}/{_token(key)}"
            node = self.fields.get(key)
            if node is None:
                if not self.is_open:
                    del value[key]
                    why = f"a property schema.json#{self.name} does not describe"
                    removed.append((here, why + did_you_mean(key, self.fields)))
                continue
            member = value[key]
            if member is None and not node.nullable and key not in self.required:
                raise Malformed(
                    here,
                    f"{node.expected}, or no field at all (absent means absent)",
                    "null",
                    ENFORCE_NULL_OPTIONAL,
                )
            mark = len(removed)
            try:
                node.walk(member, here, removed)
            except Unrecognised as unrecognised:
                del removed[mark:]
                if key in self.required:
                    carried = carried or unrecognised
                else:
                    del value[key]
                    removed.append((here, _because(here, unrecognised)))
        if carried is not None:
            raise carried


def _absent(key: str, value: dict[str, Any], described: Iterable[str]) -> str:
    """What a required ``key`` absent from ``value`` is, with the member of ``value``
    the schema does not describe that most likely misspells it (the slow path only)."""
    near = next((n for n in value if n not in described and closest(n, (key,))), None)
    hint = "" if near is None else f"; {shown(near)} is there: did you mean {key}?"
    return f"{describe(MISSING)}{hint}"


class _Union(_Node):
    """A discriminated union of objects: the discriminator picks the member."""

    def __init__(self, key: str, members: dict[str, _Object]) -> None:
        self.key = key
        self.members = members
        self.names = ", ".join(shown(v) for v in members)
        self.expected = f"an object whose {key} is one of {self.names}"

    def clean(self, value: Any) -> bool:
        if type(value) is not dict:
            return False
        tag = value.get(self.key)
        if type(tag) is not str:
            return False
        member = self.members.get(tag)
        return member is not None and member.clean(value)

    def opaque(self, seen: frozenset[int] = frozenset()) -> bool:
        return any(member.opaque(seen) for member in self.members.values())

    def walk(self, value: Any, at: str, removed: Removals) -> None:
        if type(value) is not dict:
            raise Malformed(at, "object", describe(value))
        here = f"{at}/{_token(self.key)}"
        tag = value.get(self.key, MISSING)
        if type(tag) is not str:
            raise Malformed(here, f"one of {self.names} (a required string)", describe(tag))
        member = self.members.get(tag)
        if member is None:
            raise Unrecognised(here, f"unrecognised {self.key} {shown(tag)} (known: {self.names})")
        member.walk(value, at, removed)


class _Alternatives(_Node):
    """A value of one of several JSON types (``content``: a string or an array of parts)."""

    def __init__(self, by_kind: dict[type, _Node]) -> None:
        self.by_kind = by_kind
        self.expected = " or ".join(node.expected for node in by_kind.values())

    def clean(self, value: Any) -> bool:
        node = self.by_kind.get(type(value))
        return node is not None and node.clean(value)

    def opaque(self, seen: frozenset[int] = frozenset()) -> bool:
        return any(node.opaque(seen) for node in self.by_kind.values())

    def open_kinds(self) -> tuple[type, ...] | None:
        # Only the kinds that may hold open JSON: a tool result's string content never does.
        kinds = tuple(kind for kind, node in self.by_kind.items() if node.opaque())
        return None if kinds and len(kinds) == len(self.by_kind) else kinds

    def walk(self, value: Any, at: str, removed: Removals) -> None:
        node = self.by_kind.get(type(value))
        if node is None:
            raise Malformed(at, self.expected, describe(value))
        node.walk(value, at, removed)


# --- compiling pipeline.events ---------------------------------------------------------


def _on_first_call(
    slot: dict[str, Any], key: str, generate: Callable[[], Callable[[Any], bool]]
) -> Callable[[Any], bool]:
    """A stand-in for a generated check, held in ``slot[key]`` where the caller looks it
    up on every call (``CLEAN``, a generated function's globals): the first call
    generates the check, puts it there in the stand-in's place, and runs it.

    What it buys: an object's check is compiled only once a stream carries one — an
    event type, a message role, an outcome. ``check`` on a short file compiles about a
    third of the 67 checks, half of enforce's import; after a first call each check is
    called directly, as when all were generated at import.
    """

    def first(value: Any) -> bool:
        check = slot[key] = generate()
        return check(value)

    return first


_objects: dict[tuple[type, bool, str | None], _Object] = {}
_EVENT_SHAPES = frozenset(typing.get_args(schema.AnyEvent))


def _compile(hint: Any, *, is_open: bool = False) -> _Node:
    """The node checking values of the annotation ``hint`` (see :mod:`agui_pipeline.events`)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Required, NotRequired):
        return _compile(args[0], is_open=is_open)
    if origin is Annotated:
        base, *marks = args
        for mark in marks:
            if mark is schema.NON_NULL:
                return _AnyJSON(nullable=False)
            if mark is schema.JSON_POINTER:
                return _JsonPointer()
            if mark is schema.OPEN:
                return _compile(base, is_open=True)
            if isinstance(mark, schema.Range):
                return _Integer(mark)
            if isinstance(mark, schema.MinItems):
                return _List(_compile(typing.get_args(base)[0]), mark.count)
    elif hint is Any:
        return _AnyJSON(nullable=True)
    elif hint is str:
        return _Primitive(str, "string")
    elif hint is bool:
        return _Primitive(bool, "boolean")
    elif origin is Literal:
        return _Const(args[0]) if len(args) == 1 else _ClosedSet(args)
    elif origin is list:
        return _List(_compile(args[0]))
    elif origin is dict:
        return _OpenObject()
    elif typing.is_typeddict(hint):
        return _object(hint, is_open, None)
    elif origin in (Union, types.UnionType):
        if all(typing.is_typeddict(arg) for arg in args):
            return _union(args, is_open)
        return _Alternatives({_json_kind(arg): _compile(arg) for arg in args})
    raise TypeError(f"agui_pipeline.events uses an annotation enforce cannot check: {hint!r}")


def _json_kind(hint: Any) -> type:
    """The Python type orjson decodes a value of ``hint`` to."""
    return typing.get_origin(hint) or typing.cast(type, hint)


def _object(typed_dict: Any, is_open: bool, discriminator: str | None) -> _Object:
    key = (typed_dict, is_open, discriminator)
    node = _objects.get(key)
    if node is None:
        node = _objects[key] = _Object(
            typed_dict.__name__, is_open, event=typed_dict in _EVENT_SHAPES
        )
        hints = _hints(typed_dict, True)
        node.compile(
            {name: _compile(hint) for name, hint in hints.items()},
            typed_dict.__required_keys__,
            discriminator,
        )
    return node


def _union(members: tuple[Any, ...], is_open: bool) -> _Union:
    key = _discriminator(members)
    return _Union(
        key,
        {
            typing.get_args(_hints(member)[key])[0]: _object(member, is_open, key)
            for member in members
        },
    )


@cache
def _hints(typed_dict: Any, extras: bool = False) -> dict[str, Any]:
    """``typing.get_type_hints`` of a ``TypedDict``, resolved once: finding a union's
    discriminator asks every member for every candidate key (329 resolutions at import
    without this cache, 122 with it: about 3 ms of ``check``'s start-up)."""
    return typing.get_type_hints(typed_dict, include_extras=extras)


def _discriminator(members: tuple[Any, ...]) -> str:
    """The member key every member pins to its own one-value ``Literal``."""
    first, *_ = members
    for key in sorted(first.__required_keys__):
        pins = [_hints(member).get(key) for member in members]
        if all(typing.get_origin(p) is Literal and len(typing.get_args(p)) == 1 for p in pins):
            tags = [typing.get_args(pin)[0] for pin in pins]
            if len(set(tags)) == len(tags):
                return str(key)
    raise TypeError(f"no discriminator common to {members}")


EVENTS: _Union = typing.cast(_Union, _compile(schema.AnyEvent))
"""Every event type's compiled check, keyed by ``type``."""
assert set(EVENTS.members) == set(schema.EventType), "agui_pipeline.events lists 31 event types"

CLEAN: dict[str, Callable[[Any], bool]] = {}
"""Each event type's check by ``type`` (generated on first use: :func:`_on_first_call`)."""
CLEAN.update(
    (kind, _on_first_call(CLEAN, kind, node.fast_check)) for kind, node in EVENTS.members.items()
)

_INLINED = ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS")
"""The delta events, most of any stream: the batch scan checks them without a call."""


Scan = Callable[[list[Event], list[Any]], int]
CollectingScan = Callable[
    [list[Event], Iterator[Any], Callable[[int], object], Callable[[], int]], int
]


def _generate_scan(known_dicts: bool, collects: bool = False) -> Callable[..., int]:
    """The position of the first event of a batch that is not clean (its length if none).

    One generated loop over the events and their types (``Batch.types``): the
    delta types' checks written inline (``continue`` when clean, ``break``
    when not), every other type's check looked up and called. ``known_dicts``:
    the inline checks need not ask whether an event is a dict (``Batch.objects``).

    ``collects``: the scan big-integer search needs (``IntegerSearch`` in
    :mod:`.parse`), called with ``types`` as an iterator. Each event it passes
    with a member its check does not look into is told to ``opened`` as
    ``left()``, how many types are not yet read — where it is, with no counter
    kept per event (one cost 70 instructions an event).
    """
    namespace: dict[str, Any] = {"_clean": CLEAN, "_position": _position}
    opened = "opened(left())" if collects else None
    lines = [
        f"def scan(events, types{', opened, left' if collects else ''}):",
        "    for v, t in zip(events, types):",
    ]
    for position, kind in enumerate(_INLINED):
        lines.append(f"        {'elif' if position else 'if'} t == {kind!r}:")
        body = EVENTS.members[kind].clean_lines(
            namespace, ok="continue", bad="break", opened=opened, known_dict=known_dicts
        )
        lines += [f"            {line}" for line in body]
    lines += ["        else:", "            try:"]
    if collects:
        lines += [
            "                r = _clean[t](v)",
            "            except (KeyError, TypeError): break",  # an unknown or unhashable type
            "            if r is True: continue",
            "            if not r: break",
            f"            {opened}",  # clean, with a member present its check did not look into
        ]
    else:
        lines += [
            "                if _clean[t](v): continue",
            "            except (KeyError, TypeError): pass",  # an unknown or unhashable type
            "            break",
        ]
    lines += ["    else:", "        return len(events)", "    return _position(events, v)"]
    label = "scan (events known to be dicts)" if known_dicts else "scan"
    return define(label + (", collecting" if collects else ""), lines, namespace)


def _position(events: list[Event], event: Event) -> int:
    """Where ``event`` is in ``events``, by identity (a dict comparison could be costly)."""
    return list(map(is_, events, repeat(event))).index(True)


scan_any = typing.cast(Scan, _generate_scan(known_dicts=False))
scan_objects = typing.cast(Scan, _generate_scan(known_dicts=True))


@cache
def scan_collecting() -> CollectingScan:
    """The collecting scan, compiled on first use (a stream with a read of many frames)."""
    return typing.cast(CollectingScan, _generate_scan(known_dicts=True, collects=True))


def generate_all() -> None:
    """Compile every object's check now, not on first use (to read them all: ``_codegen``)."""
    for node in _objects.values():
        node.fast_check()
    scan_collecting()


def print_generated(prefixes: list[str]) -> None:
    """Print the source of every generated check (``python -m agui_pipeline.stages.enforce
    [PREFIX...]``: those whose label starts with a prefix)."""
    generate_all()
    for label, source in generated.items():
        if not prefixes or any(label.startswith(prefix) for prefix in prefixes):
            print(f"# {label}\n{source}\n")


NativePlan = tuple[list[tuple[Any, ...]], dict[str, int]]


@cache
def native_plan() -> NativePlan:
    """The compiled checks as rows the native core builds its own from (``checks.rs`` in
    ``native/``): one tuple per node, naming the nodes it holds by position, and each event
    type's node. The schema keeps one statement, :mod:`agui_pipeline.events`."""
    rows: list[tuple[Any, ...]] = []
    ids: dict[int, int] = {}

    def place(node: _Node) -> int:
        if id(node) not in ids:
            ids[id(node)] = len(rows)
            rows.append(())  # held until the node's own row is made (a schema may nest itself)
            rows[ids[id(node)]] = row(node)
        return ids[id(node)]

    def row(node: _Node) -> tuple[Any, ...]:
        if isinstance(node, _OpenObject):
            return ("open_object",)
        if isinstance(node, _Primitive):
            return ("str",) if node.kind is str else ("bool",)
        if isinstance(node, _AnyJSON):
            return ("any", node.nullable)
        if isinstance(node, _Integer):
            return ("integer", node.minimum, node.maximum)
        if isinstance(node, _Const):
            return ("const", node.value)
        if isinstance(node, _ClosedSet):
            return ("closed_set", sorted(node.values))
        if isinstance(node, _JsonPointer):
            return ("pointer",)
        if isinstance(node, _List):
            return ("list", place(node.item), node.min_items)
        if isinstance(node, _Union):
            return ("union", node.key, [(tag, place(m)) for tag, m in node.members.items()])
        if isinstance(node, _Alternatives):
            return ("alternatives", [(k.__name__, place(n)) for k, n in node.by_kind.items()])
        if isinstance(node, _Object):
            tells = node.event and node.opaque()
            fields = []
            for key, member in node.fields.items():
                kinds = member.open_kinds()
                opens = None if kinds is None else [kind.__name__ for kind in kinds]
                fields.append((key, place(member), key in node.required, opens))
            return ("object", node.is_open, tells, node.skip, fields)
        raise TypeError(f"no native row for {node!r}")

    events = {kind: place(node) for kind, node in EVENTS.members.items()}
    return rows, events


def would_deliver(event: Any) -> bool:
    """Whether enforce delivers ``event`` (perhaps stripped) rather than drop or reject it.

    For a stage after enforce that finds an event it cannot read: in a pipeline
    without enforce that is the producer's malformed event, to be judged as such;
    in any other case it is the stage's own bug, to surface as itself. Off the
    hot path: asked only once an exception is in hand.
    """
    kind = event.get("type") if type(event) is dict else None
    node = EVENTS.members.get(kind) if type(kind) is str else None
    if node is None:
        return False
    if node.clean(event):
        return True
    try:
        node.walk(copy.deepcopy(event), "", [])  # walk strips in place
    except (Malformed, Unrecognised):
        return False
    return True


@cache
def native_checks(native: ModuleType) -> Checks:
    """The native core's checks (``native/src/checks.rs``), built once per process from
    :func:`native_plan`: enforce's fast check, and every judge's (shared, not copied)."""
    checks: Checks = native.Checks(*native_plan())
    return checks
