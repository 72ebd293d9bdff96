"""Untrusted text made inert before it reaches a terminal, a log line or a report.

A producer's ``RUN_ERROR.message``, a member name it sent, a client's ``runId``,
a file name: any of them may carry control characters. Written raw to a terminal,
C0 and C1 controls (``ESC``, the one-byte CSI U+009B, BEL…) clear the screen, set
the window title or forge colours, a newline forges a log line, and the bidi
overrides and isolates (U+202A–U+202E, U+2066–U+2069) reorder what a reader sees.
:func:`inert` writes each of them as a visible escape instead; everything else,
any script included, is left as it is.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
"""C0 controls, DEL, C1 controls, the bidi marks, embeddings, overrides and isolates, and
the line and paragraph separators (a new line to some readers)."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def inert(text: str) -> str:
    """``text`` with every control character and bidi override written as an escape
    (``\\x1b``, ``\\u202e``): safe on a terminal, and one line in a log."""
    if _UNSAFE.search(text) is None:  # the common case: one scan, no copy
        return text
    return _UNSAFE.sub(_escape, text)


_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
"""What JSON leaves raw in a string but a terminal acts on (JSON escapes the C0 controls)."""


def inert_json(document: str) -> str:
    """A JSON text with the characters JSON leaves raw but a terminal acts on written as
    ``\\uXXXX`` escapes: the same JSON value, inert on a terminal."""
    if _UNSAFE_IN_JSON.search(document) is None:
        return document
    return _UNSAFE_IN_JSON.sub(lambda found: f"\\u{ord(found.group()):04x}", document)


def quoted(value: object) -> str:
    """A client-supplied value in a log line: in double quotes, made inert, so that it
    cannot end the line or pass for the line's own words (``None`` stays ``None``)."""
    if value is None:
        return "None"
    return '"' + inert(str(value)).replace('"', '\\"') + '"'


def printable_name(name: str) -> str:
    """A file name as the command line gave it, writable in any report: bytes that were
    not UTF-8 (surrogate-escaped by Python) shown as ``\\xNN``, never an encoding error."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name
