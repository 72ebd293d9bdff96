"""Retired shapes inside messages and run inputs, upgraded to their replacements.

``DEPRECATIONS.md`` lists the shapes the protocol once described and no
longer does; ``/spec/1.1/basic/versioning`` ("Retired shapes") says a consumer
translates them rather than dropping them. Two kinds live inside documents
(messages, content parts, a ``RunAgentInput``) rather than on events:

- the legacy ``{"type": "binary"}`` content part, which becomes the media part
  (``image``, ``audio``, ``video``, ``document``) its ``mimeType`` names, with
  a ``source`` holding its bytes, URL or file handle;
- a whole optional field sent as ``null`` — on this list only: ``metadata`` on
  a media part, ``parameters`` on a tool, ``payload`` on a resume entry,
  ``forwardedProps`` on the input. The field becomes absent.

Both halves of the compatibility boundary use this module: the stage for
documents nested in events (``RUN_STARTED.input``, snapshot messages, tool
results) and the outgoing boundary for the input the consumer sends. Each
passes a :data:`Note` that turns a translation into its own diagnostic. The
walk only looks at values of the expected types; anything else is left for
enforcement to judge, since a translation must never repair a malformed value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MEDIA_KINDS = frozenset({"image", "audio", "video", "document"})
_BINARY_KEYS = frozenset({"type", "mimeType", "data", "url", "id", "filename"})
_SOURCE_ORDER = (("data", "data"), ("url", "url"), ("id", "file"))
"""Which legacy field becomes the source, in order of preference: the bytes
themselves, then a fetchable URL, then a provider file handle (the legacy
``id``)."""

Note = Callable[[str, str, dict[str, str], bool], None]
"""``note(kind, pointer, fields, lossy)``: ``kind`` is ``"null"`` or ``"binary"``; ``fields``
fill the message of the code the caller reports it under (``catalog/boundary.py`` words both
kinds); ``lossy`` is true when the translation could not carry everything across."""


def upgrade_input(document: Any, base: str, note: Note) -> None:
    """Upgrade the retired shapes in a ``RunAgentInput``-shaped dict, in place."""
    if type(document) is not dict:
        return
    _null(document, "forwardedProps", base, "on the run input", note)
    tools = document.get("tools")
    if type(tools) is list:
        for position, tool in enumerate(tools):
            if type(tool) is dict:
                _null(tool, "parameters", f"{base}/tools/{position}", "on a tool", note)
    resume = document.get("resume")
    if type(resume) is list:
        for position, entry in enumerate(resume):
            if type(entry) is dict:
                _null(entry, "payload", f"{base}/resume/{position}", "on a resume entry", note)
    upgrade_messages(document.get("messages"), f"{base}/messages", note)


def upgrade_messages(messages: Any, base: str, note: Note) -> None:
    """Upgrade the content parts of each message in a list, in place."""
    if type(messages) is not list:
        return
    for position, message in enumerate(messages):
        if type(message) is dict:
            content = message.get("content")
            if type(content) is list:
                upgrade_parts(content, f"{base}/{position}/content", note)


def upgrade_parts(parts: list[Any], base: str, note: Note) -> None:
    """Upgrade a list of content parts in place (``base`` is the list's pointer)."""
    for position, part in enumerate(parts):
        if type(part) is not dict:
            continue
        kind = part.get("type")
        if type(kind) is not str:
            continue
        pointer = f"{base}/{position}"
        if kind == "binary":
            upgraded = _upgrade_binary(part, pointer, note)
            if upgraded is not None:
                parts[position] = upgraded
        elif kind in MEDIA_KINDS:
            _null(part, "metadata", pointer, f"on {_a(kind)} part", note)


def _null(holder: dict[str, Any], field: str, base: str, where: str, note: Note) -> None:
    if field in holder and holder[field] is None:
        del holder[field]
        pointer = f"{base}/{field}"
        note("null", pointer, {"field": field, "where": where, "pointer": pointer}, False)


def media_kind(mime_type: str) -> str:
    """The media part a MIME type belongs in; anything not image, audio or video is a document."""
    family = mime_type.partition("/")[0].lower()
    return family if family in ("image", "audio", "video") else "document"


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _upgrade_binary(part: dict[str, Any], pointer: str, note: Note) -> dict[str, Any] | None:
    """The media part a legacy binary part stands for, or ``None`` if it names no source.

    A binary part without a string ``mimeType`` or without any string source
    field is left as it is: it is then an unrecognised content part, which
    enforcement strips with its own warning.
    """
    mime_type = part.get("mimeType")
    if type(mime_type) is not str:
        return None
    present = [(field, kind) for field, kind in _SOURCE_ORDER if type(part.get(field)) is str]
    if not present:
        return None
    field, source_kind = present[0]
    kind = media_kind(mime_type)
    upgraded: dict[str, Any] = {
        "type": kind,
        "source": {"type": source_kind, "value": part[field], "mimeType": mime_type},
    }
    # Material the legacy shape did not describe rides along, for enforcement to judge.
    upgraded.update((key, value) for key, value in part.items() if key not in _BINARY_KEYS)
    lost = [other for other, _ in present[1:]]
    if "filename" in part:
        lost.append("filename")
    fields = {"pointer": pointer, "media": _a(kind), "source": source_kind, "field": field}
    if lost:
        fields["lost"] = ", ".join(repr(name) for name in lost)
    note("binary", pointer, fields, bool(lost))
    return upgraded
