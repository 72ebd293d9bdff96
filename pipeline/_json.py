"""Small helpers for decoded JSON values, shared by every module that handles them.

- :data:`MISSING`: "no value here", distinct from ``null`` (``None``);
- :func:`escape`, :func:`unescape`, :func:`join_pointer`: RFC 6901 JSON Pointer
  reference tokens, the way every diagnostic points into a document;
- :func:`describe` and :func:`shown`: a value named in a message, cut short,
  since a producer's value can be of any size;
- :func:`copy_json`: a deep copy of a JSON value, at any depth;
- :func:`read_document`: a JSON document's file, read no further than ``MAX_DOCUMENT``;
- :func:`load_document`: a JSON document decoded, refused when an object names a member twice.
- :func:`not_a_file`: what a path is when it is not a file that can be read to its end.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

MISSING: Any = object()
"""The absence of a value (``dict.get(key, MISSING)``), where ``None`` is JSON ``null``."""

MAX_DOCUMENT = 16 * 1024 * 1024
"""The largest capabilities declaration, agent resource or run input read from a file
(16 MiB, the relay's request cap): a larger file is refused before it is read whole."""


class DocumentTooLarge(OSError):
    """A document's file is over ``MAX_DOCUMENT``: refused, never read whole."""


class NotAFile(OSError):
    """A path that names a device, a socket or a directory, which are never read as a
    document or a recording: a device may never end, nor a directory be read."""


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def not_a_file(path: str | os.PathLike[str], mode: int | None = None) -> str | None:
    """What ``path`` is (``"a FIFO (named pipe)"``...) when it is not a regular file, else
    ``None``; ``mode`` is its ``st_mode`` when already known (``FileNotFoundError`` when it
    does not exist)."""
    mode = os.stat(path).st_mode if mode is None else mode
    return None if stat.S_ISREG(mode) else next((k for is_, k in _KINDS if is_(mode)), "no file")


def read_document(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a JSON document's file, refused past ``MAX_DOCUMENT`` bytes (a file that
    grows while read, or a pipe, is cut at the cap and refused too).

    A pipe (``--input <(jq ...)``) is read; it is opened without waiting for a writer, so a
    FIFO nobody writes to reads as empty rather than hanging the process. A device, a
    socket or a directory is refused (:class:`NotAFile`).
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    mode = os.fstat(descriptor).st_mode
    kind = not_a_file(path, mode)
    if kind is not None and not stat.S_ISFIFO(mode):
        os.close(descriptor)
        raise NotAFile(f"{os.fsdecode(path)} is {kind}, not a file")
    os.set_blocking(descriptor, True)  # from here read as any file: to its end
    with open(descriptor, "rb") as file:
        data = file.read(MAX_DOCUMENT + 1)
    if len(data) > MAX_DOCUMENT:
        size = os.stat(path).st_size
        said = f"{size:,} bytes" if size > MAX_DOCUMENT else f"more than {MAX_DOCUMENT:,} bytes"
        raise DocumentTooLarge(
            f"{os.fsdecode(path)} holds {said}, over the {MAX_DOCUMENT:,}-byte cap on a "
            "declaration, agent resource or run input (MAX_DOCUMENT)"
        )
    return data


class DuplicateMember(ValueError):
    """An object of a JSON document names one member twice: RFC 8259 §4 leaves what such an
    object means to the reader (orjson keeps the last value, other readers the first)."""

    def __init__(self, pointer: str, name: str) -> None:
        self.pointer = pointer
        self.reason = f"the member {shown(name)} appears twice in one object"
        super().__init__(f"{pointer}: {self.reason}")


def load_document(data: bytes) -> Any:
    """``data`` decoded as one JSON document, refused when an object in it names a member
    twice (:class:`DuplicateMember`, pointing at the first repeated member): a document a
    declaration is read from must mean one thing to every reader."""
    document = orjson.loads(data)
    if _STRING.sub(b"", data).count(b":") != _member_count(document):
        # Outside strings, a colon separates a member's name from its value, one per member
        # written: more of them than the decoded objects hold is a name written twice.
        repeated = _first_repeated_member(data)
        if repeated is not None:
            raise repeated
    return document


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],]', re.DOTALL)


def _member_count(value: Any) -> int:
    count, pending = 0, [value]
    while pending:
        item = pending.pop()
        if type(item) is dict:
            count += len(item)
            pending.extend(item.values())
        elif type(item) is list:
            pending.extend(item)
    return count


def _first_repeated_member(data: bytes) -> DuplicateMember | None:
    """The first member named twice in its object, found by walking the tokens of ``data``
    (already known to be JSON) without recursion, so any depth orjson takes is walked."""
    path: list[str | int] = []  # the tokens to the value being read, one per open container
    names: list[set[str] | None] = []  # each open object's member names (None: an array)
    naming = False  # the next string is a member's name
    for match in _TOKEN.finditer(data):
        token = match.group()
        if token == b"{":
            names.append(set())
            path.append("")
            naming = True
        elif token == b"[":
            names.append(None)
            path.append(0)
        elif token in (b"}", b"]"):
            names.pop()
            path.pop()
            naming = False
        elif token == b",":
            seen = names[-1]
            if seen is None:
                path[-1] = int(path[-1]) + 1
            else:
                naming = True
        elif naming:
            name: str = orjson.loads(token)
            seen = names[-1]
            assert seen is not None  # a name is read only inside an object
            path[-1] = name
            if name in seen:
                return DuplicateMember(join_pointer(path), name)
            seen.add(name)
            naming = False
    return None


def escape(token: str) -> str:
    """A member name as a JSON Pointer reference token: ``~`` is ``~0``, ``/`` is ``~1``."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """A JSON Pointer reference token back to the member name it spells (RFC 6901 §4)."""
    return token.replace("~1", "/").replace("~0", "~")


def join_pointer(tokens: Iterable[str | int]) -> str:
    """The JSON Pointer of a path of member names and array positions (``[]`` is ``""``)."""
    return "".join(f"/{escape(str(token))}" for token in tokens)


SHOWN_CHARACTERS = 60
"""The longest string a message quotes whole; a longer one is cut, with "…"."""


def shown(value: Any) -> str:
    """A value as a message quotes it, in JSON's spelling, never longer than a short line.

    A string is quoted as JSON (cut at :data:`SHOWN_CHARACTERS`), a number,
    ``true``, ``false`` and ``null`` as JSON writes them; an array or an object
    is named, not written out.
    """
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        if len(value) > SHOWN_CHARACTERS:
            value = value[:SHOWN_CHARACTERS] + "…"
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"  # made in Python: orjson reads 64-bit
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a Python {type(value).__name__}"


def describe(value: Any) -> str:
    """What was found, for an error message: ``number 5``, ``string "x"``, ``array``, ``null``.

    JSON's type names without an article, as in "expected string, received
    number 5" (the wording the conformance corpus matches); :data:`MISSING`
    reads as ``nothing (the field is absent)``, a value JSON cannot spell (made
    in Python) as its Python type.
    """
    if value is MISSING:
        return "nothing (the field is absent)"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {shown(value)}"
    if isinstance(value, int) and value.bit_length() > 64:
        return f"number ({shown(value)})"
    if isinstance(value, int | float):
        return f"number {shown(value)}"
    if isinstance(value, str):
        return f"string {shown(value)}"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return f"Python {type(value).__name__}"


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (any depth; an object's member order kept).

    One orjson round trip, several times faster than ``copy.deepcopy``; a
    value orjson cannot write (nested deeper than 255 levels, or holding
    something JSON cannot spell) is copied by a loop instead. A float JSON
    cannot spell (``nan``, ``inf``; never decoded, only made in Python) comes
    back as ``null``, as orjson writes it.
    """
    if type(value) is not dict and type(value) is not list:
        return value
    try:
        return orjson.loads(orjson.dumps(value))
    except (orjson.JSONEncodeError, orjson.JSONDecodeError, TypeError):
        return _copy_deep(value)


def _copy_deep(value: Any) -> Any:
    """Iterative deep copy of dicts and lists (no recursion limit); other values are shared."""
    copy: Any = {} if type(value) is dict else []
    pending = [(value, copy)]
    while pending:
        source, target = pending.pop()
        items = source.items() if type(source) is dict else enumerate(source)
        for key, item in items:
            kind = type(item)
            if kind is dict or kind is list:
                child: Any = {} if kind is dict else []
                pending.append((item, child))
                item = child
            if type(target) is dict:
                target[key] = item
            else:
                target.append(item)
    return copy


def walk(value: Any) -> Iterator[tuple[list[str | int], Any]]:
    """Every member name, array element and value under ``value``, with its path."""
    pending: list[tuple[list[str | int], Any]] = [([], value)]
    while pending:
        path, item = pending.pop()
        yield path, item
        if type(item) is dict:
            for key, child in reversed(item.items()):
                yield path, key  # a member name, at its object's pointer
                pending.append(([*path, key], child))
        elif type(item) is list:
            pending.extend(
                ([*path, position], child) for position, child in reversed(list(enumerate(item)))
            )
