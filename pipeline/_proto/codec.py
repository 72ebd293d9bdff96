"""One AG-UI event between its JSON shape and its protobuf wire form (``agui.proto``).

``/spec/1.1/basic/transports/http-protobuf`` ("The wire schema"): a decoded
event enters the pipeline exactly as one parsed from SSE would, so decoding
rebuilds the JSON shapes the wire projects away — the common members out of
``base_event``, ``content`` out of ``content_parts``/``activity_content``, an
outcome object out of its discriminator and lifted members, patch ``op`` names
out of the enum — and maps ``Struct``/``Value`` to plain JSON values. Nothing is
judged here: an unrecognised outcome or role rides on for enforcement to strip.

What the binary wire inherently narrows (the spec's words): a member the wire
schema does not model is not encoded, and a number inside an open JSON value
travels as a double, so ``3`` and ``3.0`` are told apart only on the JSON wire
(an integral double decodes as an ``int``, as a JSON reader would give it).

Decoding refuses what is no event, since protobuf's parser passes it silently:
a known field whose bytes do not parse as its type (a wrong wire type) is kept
as an unknown field, and a double may be NaN or infinite, which JSON has no
number for (:class:`FrameInvalid`, :class:`NonFinite`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from math import isfinite
from typing import Any

from agui_pipeline._json import join_pointer, walk

try:
    from agui_pipeline._proto import agui_pb2
    from google.protobuf.descriptor import Descriptor, FieldDescriptor
    from google.protobuf.descriptor_pb2 import FieldDescriptorProto
    from google.protobuf.message import DecodeError, Message
    from google.protobuf.struct_pb2 import Struct, Value
    from google.protobuf.unknown_fields import UnknownFieldSet
except ImportError as missing:  # the runtime is the optional ``proto`` extra
    raise ImportError(
        "the HTTP + Protobuf binding needs the protobuf runtime: pip install 'agui-pipeline[proto]'"
    ) from missing

__all__ = [
    "DecodeError",
    "FrameInvalid",
    "NonFinite",
    "TooManyEntries",
    "UnknownArm",
    "decode",
    "encode",
    "encode_frames",
]

_ENVELOPE = agui_pb2.Event
_ENVELOPE_KIND: Any = _ENVELOPE.DESCRIPTOR  # upb's Descriptor, typed apart from the Python one
_EVENT_TYPE = agui_pb2.EventType
_PATCH_OP = agui_pb2.JsonPatchOperationType
_ARMS = {field.name for field in _ENVELOPE.DESCRIPTOR.oneofs_by_name["event"].fields}
_TYPE_NAMES = {value.number: value.name for value in _EVENT_TYPE.DESCRIPTOR.values}
_ARM_TYPES = {arm: (arm.upper(), _EVENT_TYPE.Value(arm.upper())) for arm in _ARMS}
"""Each envelope arm's event type, by name and by number (looked up once, not per frame:
``EnumTypeWrapper.values()`` builds a list on every call)."""
_STRUCT = Struct.DESCRIPTOR
_VALUE = Value.DESCRIPTOR
_MAX_SAFE = 2**53
_PARTS_ROLES = {"user", "tool"}
_MAP_ROLES = {"activity"}
_KNOWN_ROLES = {"developer", "system", "assistant", "user", "tool", "activity", "reasoning"}
_REQUIRED_LISTS = {
    "MessagesSnapshotEvent": ("messages",),
    "RunAgentInput": ("messages",),
    "StateDeltaEvent": ("delta",),
    "ActivityDeltaEvent": ("patch",),
}
"""Repeated fields the schema requires: present (perhaps empty) on every decoded event."""


class FrameInvalid(ValueError):
    """The frame's bytes are not one event (fatal, like bytes that do not decode at all)."""


class UnknownArm(Exception):
    """The envelope holds no arm this build knows: no type to hand on.

    ``numbers`` are the envelope's fields, each an arm this build's wire schema
    predates; none for an empty frame (``@ag-ui/proto`` 1.0.0 writes one for an
    event type it lacks).
    """

    def __init__(self, numbers: list[int]) -> None:
        self.numbers = numbers
        super().__init__(f"envelope fields {numbers}")


class NonFinite(ValueError):
    """A double JSON has no number for (NaN, ±Infinity), at ``pointer`` in the event."""

    def __init__(self, number: float, pointer: str) -> None:
        self.number = number
        self.pointer = pointer
        super().__init__(f"{number} at {pointer or '/'}")


class _NonFiniteSeen(Exception):
    """Raised where a NaN or infinite double is met: :func:`decode` then looks again,
    for its pointer (:func:`_without_non_finite`)."""


# -- decoding -------------------------------------------------------------------


def decode(
    data: bytes, dropped: Callable[[str], None] | None = None, max_entries: int | None = None
) -> dict[str, Any]:
    """The JSON event of one frame's bytes.

    Raises ``DecodeError`` for bytes that are not a message, :class:`FrameInvalid`
    for a message that is not one event, :class:`NonFinite` for a NaN or infinite
    double, :class:`UnknownArm` for an Event with no arm this build knows,
    :class:`TooManyEntries` for a frame of more than ``max_entries`` messages.
    ``dropped`` hears the path of a content part whose arm this build does not
    know (it has no name to hand on to enforcement).
    """
    if max_entries is not None and len(data) > 2 * max_entries:
        # Each message takes at least 2 bytes on the wire: a shorter frame cannot exceed.
        _count_entries(data, _ENVELOPE_KIND, max_entries)
    envelope = _ENVELOPE.FromString(data)
    # Known fields the parser could not read are kept as unknown fields; so are a later
    # schema's fields, which are skipped silently. Dropping the unknown ones changes the
    # size only when there were some, and only then are they looked at (rare).
    size = envelope.ByteSize()
    envelope.DiscardUnknownFields()
    if envelope.ByteSize() != size:
        _refuse_misread_fields(_ENVELOPE.FromString(data))
    arm = envelope.WhichOneof("event")
    if arm is None:
        fields = _unknown_fields(_ENVELOPE.FromString(data))  # the ones dropped above
        raise UnknownArm(sorted({field.field_number for field in fields}))
    try:
        return _event(envelope, arm, dropped or _ignore)
    except _NonFiniteSeen:  # raised before ``dropped`` heard anything
        return _without_non_finite(envelope, arm, dropped or _ignore)


class TooManyEntries(ValueError):
    """A frame holds more messages than its limit: decoding it would take memory out of
    all proportion to its bytes (an empty message: 2 bytes, about 600 decoded)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit:,} messages")
        self.limit = limit


def _count_entries(data: bytes, descriptor: Descriptor, limit: int) -> None:
    """Count the messages in ``data`` read as ``descriptor`` from the wire, before the
    parser builds them: every nested message and repeated entry, however empty. Raises
    :class:`TooManyEntries` past ``limit``; bytes that are not a message are left for the
    parser to refuse."""
    entries = 0
    pending = [(0, len(data), descriptor)]
    while pending:
        position, end, kind = pending.pop()
        fields = kind.fields_by_number
        while position < end:
            key, position = _varint(data, position)
            wire_type = key & 7
            if wire_type == 0:
                _, position = _varint(data, position)
            elif wire_type == 1:
                position += 8
            elif wire_type == 5:
                position += 4
            elif wire_type == 2:
                length, position = _varint(data, position)
                field = fields.get(key >> 3)
                if field is not None and field.message_type is not None:
                    entries += 1
                    if entries > limit:
                        raise TooManyEntries(limit)
                    pending.append((position, min(position + length, end), field.message_type))
                position += length
            else:
                return  # groups, or not a message: the parser says what it makes of it


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while position < len(data):
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
    return value, position


def _event(envelope: Message, arm: str, dropped: Callable[[str], None]) -> dict[str, Any]:
    body = getattr(envelope, arm)
    event_type, expected = _ARM_TYPES[arm]
    event: dict[str, Any] = {"type": event_type}
    if body.HasField("base_event"):
        declared = 0  # proto3 does not send the default, TEXT_MESSAGE_START
        for field, value in body.base_event.ListFields():  # one call for the four members
            name = field.name
            if name == "type":
                declared = value
            elif name == "timestamp":
                event["timestamp"] = value
            elif name == "raw_event":
                event["rawEvent"] = _value(value)
            else:
                event["metadata"] = _struct(value)
        if declared != expected:
            raise FrameInvalid(
                f"the envelope arm {arm!r} holds an event whose base_event.type is "
                f"{_TYPE_NAMES.get(declared, declared)}"
            )
    event.update(_message(body, skip="base_event"))
    _restore(event, dropped)
    return event


def _ignore(path: str) -> None:
    pass


# -- what protobuf's parser lets through ----------------------------------------

_WIRE_TYPES = {
    FieldDescriptor.TYPE_DOUBLE: 1,
    FieldDescriptor.TYPE_FIXED64: 1,
    FieldDescriptor.TYPE_SFIXED64: 1,
    FieldDescriptor.TYPE_FLOAT: 5,
    FieldDescriptor.TYPE_FIXED32: 5,
    FieldDescriptor.TYPE_SFIXED32: 5,
    FieldDescriptor.TYPE_STRING: 2,
    FieldDescriptor.TYPE_BYTES: 2,
    FieldDescriptor.TYPE_MESSAGE: 2,
    FieldDescriptor.TYPE_GROUP: 3,
}
"""Each field type's wire type; the rest (integers, bool, enums) are varints (0)."""
_WIRE_NAMES = ("varint", "64-bit", "length-delimited", "group start", "group end", "32-bit")


def _refuse_misread_fields(message: Message, path: str = "") -> None:
    """Raise :class:`FrameInvalid` for the first field of ``message`` (at any depth) the
    parser kept as unknown although the schema knows its number: its bytes are not that
    field (a wrong wire type, or a map entry that does not parse)."""
    descriptor: Any = message.DESCRIPTOR
    for unknown in _unknown_fields(message):
        field = descriptor.fields_by_number.get(unknown.field_number)
        if field is not None:
            raise FrameInvalid(_misread(field, unknown.wire_type, path + field.name))
    for where, submessage in _submessages(message):
        _refuse_misread_fields(submessage, f"{path}{where}.")


def _unknown_fields(message: Message) -> list[Any]:
    """The fields of ``message`` (not below it) the parser kept unread: each has
    ``field_number`` and ``wire_type``."""
    fields = UnknownFieldSet(message)
    return [fields[position] for position in range(len(fields))]


def _submessages(message: Message) -> Iterator[tuple[str, Message]]:
    """Each message a field of ``message`` holds, with its path from ``message``
    (``name``, ``name[2]``, ``name['key']``)."""
    for field, value in message.ListFields():
        kind = field.message_type
        if kind is None:
            continue
        if kind.GetOptions().map_entry:
            if kind.fields_by_name["value"].message_type is not None:
                yield from ((f"{field.name}[{key!r}]", value[key]) for key in value)
        elif field.is_repeated:
            yield from ((f"{field.name}[{position}]", item) for position, item in enumerate(value))
        else:
            yield field.name, value


def _misread(field: FieldDescriptor, wire_type: int, path: str) -> str:
    if field.message_type is not None:
        entry = field.message_type.GetOptions().map_entry
        kind = "map entry" if entry else field.message_type.full_name
    elif field.enum_type is not None:
        kind = field.enum_type.full_name
    else:
        kind = FieldDescriptorProto.Type.Name(FieldDescriptorProto.Type.ValueType(field.type))
        kind = kind.removeprefix("TYPE_").lower()
    expected = _WIRE_TYPES.get(field.type, 0)
    found = (
        f"wire type {wire_type} ({_WIRE_NAMES[wire_type]})"
        if wire_type != expected
        else "bytes of that wire type that do not parse as it"
    )
    return (
        f"expected {path} (field {field.number}, {kind}) as wire type {expected} "
        f"({_WIRE_NAMES[expected]}); found {found}"
    )


def _without_non_finite(
    envelope: Message, arm: str, dropped: Callable[[str], None]
) -> dict[str, Any]:
    """The event of an envelope holding a NaN or infinite double, if the event does not
    carry one; otherwise :class:`NonFinite` for the first, with its pointer in the event's
    JSON terms. Each such double is marked with a string no producer sends and the event
    decoded again: a mark that sat in what the event does not carry (an
    ``activity_content`` beside a user message's parts) is gone with it."""
    mark = f"non-finite {secrets.token_hex(16)} "
    numbers: list[float] = []
    _mark_non_finite(envelope, mark, numbers)
    event = _event(envelope, arm, dropped)
    for path, item in walk(event):
        if type(item) is str and item.startswith(mark):
            raise NonFinite(numbers[int(item[len(mark) :])], join_pointer(path))
    return event


def _mark_non_finite(message: Message, mark: str, numbers: list[float]) -> None:
    if message.DESCRIPTOR is _VALUE and message.WhichOneof("kind") == "number_value":
        number = message.number_value  # type: ignore[attr-defined]
        if not isfinite(number):
            message.string_value = f"{mark}{len(numbers)}"  # type: ignore[attr-defined]
            numbers.append(number)
        return
    for _, submessage in _submessages(message):
        _mark_non_finite(submessage, mark, numbers)


def _message(message: Message, skip: str | None = None) -> dict[str, Any]:
    descriptor: Any = message.DESCRIPTOR
    out: dict[str, Any] = {}
    for field, value in message.ListFields():
        name, json_name, convert = _READINGS.get(field) or _reading(field)
        if name == skip:
            continue
        out[json_name] = value if convert is None else convert(value)
    for name, default in _defaults(descriptor):
        out.setdefault(name, default)
    return out


_READINGS: dict[FieldDescriptor, tuple[str, str, Callable[[Any], Any] | None]] = {}


def _reading(field: FieldDescriptor) -> tuple[str, str, Callable[[Any], Any] | None]:
    """A field's name, its JSON name and how its value becomes JSON (``None``: as it is),
    looked up once per field: reading a descriptor's attribute costs a call each time."""
    kind = field.message_type
    convert: Callable[[Any], Any] | None = None
    if field.is_repeated:
        if kind is not None:
            convert = partial(_convert_all, kind)
        elif field.enum_type is not None:
            convert = partial(_enums, field)
        else:
            convert = list
    elif kind is not None:
        convert = partial(_convert, kind)
    elif field.enum_type is not None:
        convert = partial(_enum, field)
    reading = _READINGS[field] = (field.name, field.json_name, convert)
    return reading


def _convert_all(kind: Descriptor, items: Iterable[Any]) -> list[Any]:
    return [_convert(kind, item) for item in items]


def _enums(field: FieldDescriptor, numbers: Iterable[int]) -> list[str]:
    return [_enum(field, number) for number in numbers]


def _convert(kind: Descriptor, value: Any) -> Any:
    if kind is _STRUCT:
        return _struct(value)
    if kind is _VALUE:
        return _value(value)
    return _message(value)


def _enum(field: FieldDescriptor, number: int) -> str:
    """A patch ``op`` by its JSON name; a number this build does not know, as its digits."""
    enum = field.enum_type
    known = enum.values_by_number.get(number) if enum is not None else None
    return known.name.lower() if known is not None else str(number)


def _struct(struct: Struct) -> dict[str, Any]:
    return {key: _value(item) for key, item in struct.fields.items()}


def _value(value: Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value
    if kind == "number_value":
        number = value.number_value
        # JSON does not tell 3 from 3.0, and a JSON reader gives 3: so does this one.
        if number.is_integer() and -_MAX_SAFE <= number <= _MAX_SAFE:
            return int(number)
        if not isfinite(number):
            raise _NonFiniteSeen  # JSON has no such number (RFC 8259 §6)
        return number
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return _struct(value.struct_value)
    if kind == "list_value":
        return [_value(item) for item in value.list_value.values]
    return None  # null_value, or a Value with no kind set


_DEFAULTS_BY_MESSAGE: dict[Descriptor, list[tuple[str, Any]]] = {}


def _defaults(descriptor: Descriptor) -> list[tuple[str, Any]]:
    """Members every decoded message has: implicit-presence scalars, required lists.

    Proto3 does not send a scalar equal to its default, but the schema requires
    those members (the generator makes every optional one ``optional``).
    """
    cached = _DEFAULTS_BY_MESSAGE.get(descriptor)
    if cached is None:
        cached = [
            (field.json_name, _enum(field, 0) if field.enum_type else field.default_value)
            for field in descriptor.fields
            if not field.is_repeated
            and not field.has_presence
            and field.message_type is None
            and field.name != "outcome"  # the discriminator: "" means absent
        ]
        cached += [(name, []) for name in _REQUIRED_LISTS.get(descriptor.name, ())]
        _DEFAULTS_BY_MESSAGE[descriptor] = cached
    return cached


def _restore(event: dict[str, Any], dropped: Callable[[str], None]) -> None:
    """The JSON shapes the wire projected away (see the module docstring)."""
    kind = event["type"]
    if kind == "MESSAGES_SNAPSHOT":
        for position, message in enumerate(event["messages"]):
            _restore_message(message, f"/messages/{position}", dropped)
    elif kind == "RUN_STARTED" and "input" in event:
        for position, message in enumerate(event["input"].get("messages", ())):
            _restore_message(message, f"/input/messages/{position}", dropped)
    elif kind == "TOOL_CALL_RESULT":
        parts = event.pop("contentParts", [])
        if "content" not in event:
            event["content"] = _parts(parts, "/content", dropped)
    elif kind == "RUN_FINISHED":
        _restore_outcome(event, ("pendingToolCallIds", "interrupts"), {"interrupt": "interrupts"})
    elif kind == "SUBAGENT_FINISHED":
        _restore_outcome(event, ("interruptIds",), {})


def _restore_outcome(
    event: dict[str, Any], lifted: tuple[str, ...], always: dict[str, str]
) -> None:
    """``outcome: "interrupt"`` and ``interrupts: [...]`` back into one outcome object.

    An outcome this build does not know keeps its name and members: enforce strips it.
    """
    name = event.pop("outcome", "")
    if not name:
        return  # absent means success; lifted members without one stay for enforce
    outcome: dict[str, Any] = {"type": name}
    for member in lifted:
        if member in event:
            outcome[member] = event.pop(member)
    if name in always:
        outcome.setdefault(always[name], [])
    event["outcome"] = outcome


def _restore_message(message: dict[str, Any], at: str, dropped: Callable[[str], None]) -> None:
    parts = message.pop("contentParts", None)
    activity = message.pop("activityContent", None)
    role = message.get("role", "")
    known = role in _KNOWN_ROLES
    uses_parts = role in _PARTS_ROLES if known else bool(parts)
    uses_map = role in _MAP_ROLES if known else activity is not None and not uses_parts
    if uses_parts and "content" not in message:
        message["content"] = _parts(parts or [], f"{at}/content", dropped)
    elif uses_map and activity is not None:
        message["content"] = activity


def _parts(parts: list[dict[str, Any]], at: str, dropped: Callable[[str], None]) -> list[Any]:
    """``{"image": {...}}`` content parts as ``{"type": "image", ...}``; an unknown arm dropped."""
    restored = []
    for position, part in enumerate(parts):
        if not part:
            dropped(f"{at}/{position}")
            continue
        (name, body), *_ = part.items()
        if "source" in body:
            source = body["source"]
            if not source:
                dropped(f"{at}/{position}/source")
                continue
            (source_name, source_body), *_ = source.items()
            body["source"] = {"type": source_name, **source_body}
        restored.append({"type": name, **body})
    return restored


# -- encoding -------------------------------------------------------------------


def encode(event: Mapping[str, Any]) -> bytes:
    """The wire bytes of one JSON event (no length prefix).

    Members the wire schema does not model are not encoded (the binding's
    narrowing). Raises ``ValueError`` for an event type the wire has no arm for.
    """
    kind = event.get("type")
    if not isinstance(kind, str) or kind.lower() not in _ARMS:
        raise ValueError(f"the protobuf wire has no arm for the event type {kind!r}")
    arm = kind.lower()
    envelope = _ENVELOPE()
    body = getattr(envelope, arm)
    base = body.base_event
    base.type = _EVENT_TYPE.Value(kind)
    members = dict(event)
    del members["type"]
    if "timestamp" in members:
        base.timestamp = members.pop("timestamp")
    if "rawEvent" in members:
        _set_value(base.raw_event, members.pop("rawEvent"))
    if isinstance(members.get("metadata"), dict):
        base.metadata.update(members.pop("metadata"))
    _project(kind, members)
    try:
        _fill(body, members)
    except (TypeError, ValueError, AttributeError) as error:
        raise ValueError(f"the {kind} event has no protobuf wire form: {error}") from None
    return envelope.SerializeToString()


def encode_frames(events: Iterable[Mapping[str, Any]]) -> bytes:
    """Events as the binding's body: each one a 4-byte big-endian length, then its bytes."""
    out = bytearray()
    for event in events:
        data = encode(event)
        out += len(data).to_bytes(4, "big")
        out += data
    return bytes(out)


def _project(kind: str, members: dict[str, Any]) -> None:
    """The JSON shapes onto the wire's (the inverse of :func:`_restore`)."""
    if kind == "MESSAGES_SNAPSHOT":
        members["messages"] = [_project_message(m) for m in members.get("messages", ())]
    elif kind == "RUN_STARTED" and isinstance(members.get("input"), dict):
        run_input = dict(members["input"])
        run_input["messages"] = [_project_message(m) for m in run_input.get("messages", ())]
        members["input"] = run_input
    elif kind == "TOOL_CALL_RESULT" and isinstance(members.get("content"), list):
        members["contentParts"] = _project_parts(members.pop("content"))
    elif kind in ("RUN_FINISHED", "SUBAGENT_FINISHED") and isinstance(members.get("outcome"), dict):
        outcome = dict(members.pop("outcome"))
        members["outcome"] = outcome.pop("type", "")
        members.update(outcome)


def _project_message(message: Any) -> Any:
    if not isinstance(message, dict):
        return message
    message = dict(message)
    content = message.get("content")
    if isinstance(content, list):
        message["contentParts"] = _project_parts(message.pop("content"))
    elif isinstance(content, dict):
        message["activityContent"] = message.pop("content")
    return message


def _project_parts(parts: list[Any]) -> list[dict[str, Any]]:
    projected = []
    for part in parts:
        body = {key: value for key, value in part.items() if key != "type"}
        source = body.get("source")
        if isinstance(source, dict):
            body["source"] = {source.get("type"): {k: v for k, v in source.items() if k != "type"}}
        projected.append({part.get("type"): body})
    return projected


def _fill(message: Message, members: Mapping[str, Any]) -> None:
    fields = message.DESCRIPTOR.fields_by_camelcase_name
    for key, value in members.items():
        field = fields.get(key)
        kind = field.message_type if field is not None else None
        if field is None or (value is None and kind is not _VALUE):
            continue  # not on the wire: the binding's narrowing
        if kind is None and not field.is_repeated:
            if field.enum_type is not None:
                value = _PATCH_OP.Value(str(value).upper())
            setattr(message, field.name, value)
            continue
        target: Any = getattr(message, field.name)
        if kind is _STRUCT:
            target.update(value)
        elif kind is _VALUE:
            _set_value(target, value)
        elif kind is None:
            target.extend(value)
        elif field.is_repeated:
            for item in value:
                _fill(target.add(), item)
        else:
            _fill(target, value)


def _set_value(target: Value, value: Any) -> None:
    if value is None:
        target.null_value = 0  # type: ignore[assignment]
    elif value is True or value is False:
        target.bool_value = value
    elif isinstance(value, int | float):
        target.number_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, dict):
        target.struct_value.update(value)
    else:
        target.list_value.extend(value)
