"""The run input: the ``RunAgentInput`` model and the outgoing boundary.

``/spec/1.1/basic/run-input`` describes the one message that travels from the
consumer to the agent; ``/spec/1.1/basic/processing`` ("Outgoing material")
puts the same boundary on it that events get: immediately before sending,
unrecognised material is removed with a warning, and a malformed known field
is fatal before anything is sent. :func:`prepare_input` is that boundary; the
HTTP client and the conformance runner both send what it returns.

In order, on a copy of the caller's mapping:

1. retired shapes upgraded (``DEPRECATIONS.md``): legacy ``binary`` parts into
   media parts, the listed whole-field ``null`` s removed — severity ``info``,
   since nothing is lost; a binary upgrade warns when it cannot carry
   everything, or when the peer (at or below 0.0.47) predates media parts;
2. activity messages removed (they "never travel back to the producer");
3. unrecognised material stripped, by the processing model's rules: an
   unknown property goes; an unknown union member (a role, a content part
   kind, a source kind, a tool call type, a resume status) takes the value
   containing it — inside a list, the element;
4. what is left validated by :class:`RunAgentInputModel` (strict, closed, no
   coercion, no ``null`` for an absent field): a failure raises
   :class:`~agui_pipeline.errors.InputRejected` with a pointer into the input as
   the caller passed it;
5. the shims for an older peer (``peer_max_protocol_version``;
   ``/spec/1.1/basic/versioning``, "Downgrading"): at or below 0.0.57 the
   messages lose ``subagentRunId`` (lossless); at or below 0.0.39 user and
   tool content flattens to its text parts concatenated in order, which warns
   and says when it DROPS non-text parts;
6. ``protocolVersion`` declared as the version this consumer speaks — or
   omitted toward a peer that predates the field (below 1.0).

The strip tables come from the models' own field lists, so the two cannot
drift apart: whatever survives step 3 is exactly what the model describes.

The models spell again the shapes :mod:`agui_pipeline.events` states as
``TypedDict``\\ s (the one statement of structure, which enforce compiles):
each ``Input<Name>`` mirrors ``events.<Name>``, and ``RunAgentInput`` mirrors
``events.RunAgentInput``. A typed public model has to write its fields out;
``tests/test_schema_agreement.py`` holds every model to its ``TypedDict``,
member by member, so the two spellings stay one schema.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from agui_pipeline._json import MISSING, describe, escape
from agui_pipeline.catalog import (
    INPUT_ACTIVITY_REMOVED,
    INPUT_DOWNGRADE,
    INPUT_DOWNGRADE_LOSSY,
    INPUT_MALFORMED,
    INPUT_RETIRED_SHAPE,
    INPUT_UNRECOGNISED,
    Message,
    Severity,
)
from agui_pipeline.errors import Diagnostic, InputRejected
from agui_pipeline.model.retired import MEDIA_KINDS, upgrade_input
from agui_pipeline.model.versions import (
    GATE_CONTENT_PARTS,
    GATE_MEDIA_PARTS,
    GATE_SUBAGENTS,
    PROTOCOL_VERSION,
    VERSIONED_SINCE,
    at_or_below,
    peer_version,
)
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    Tag,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

# --- the model (schema.json#RunAgentInput and what it contains) ---------------------


class _Closed(BaseModel):
    """A protocol object: closed, strict, and an absent field is never ``null``.

    ``/spec/1.1/basic`` ("Absent means absent"): a whole optional field with no
    value is omitted. No field of the input accepts ``null``, so one is refused
    wherever it stands in for a field.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _absent_means_absent(cls, value: Any) -> Any:
        if type(value) is dict:
            for key, member in value.items():
                if member is None and key in cls.model_fields:
                    raise PydanticCustomError(
                        "absent_means_absent",
                        "a field with no value is omitted, not null",
                        {"field": key},
                    )
        return value


_JsonObject = dict[str, JsonValue]
"""An object open by key: metadata, activity content."""


class InputTextPart(_Closed):
    type: Literal["text"]
    text: str
    id: str | None = None
    metadata: JsonValue = None


class InputDataSource(_Closed):
    type: Literal["data"]
    value: str
    mimeType: str


class InputUrlSource(_Closed):
    type: Literal["url"]
    value: str
    mimeType: str | None = None


class InputFileSource(_Closed):
    type: Literal["file"]
    value: str
    provider: str | None = None
    mimeType: str | None = None


InputPartSource = Annotated[
    InputDataSource | InputUrlSource | InputFileSource, Field(discriminator="type")
]


class _MediaPart(_Closed):
    source: InputPartSource
    id: str | None = None
    metadata: JsonValue = None


class InputImagePart(_MediaPart):
    type: Literal["image"]


class InputAudioPart(_MediaPart):
    type: Literal["audio"]


class InputVideoPart(_MediaPart):
    type: Literal["video"]


class InputDocumentPart(_MediaPart):
    type: Literal["document"]


InputContentPart = Annotated[
    InputTextPart | InputImagePart | InputAudioPart | InputVideoPart | InputDocumentPart,
    Field(discriminator="type"),
]


def _content_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return "string"
    return "parts" if isinstance(value, list) else None


InputContent = Annotated[
    Annotated[str, Tag("string")] | Annotated[list[InputContentPart], Tag("parts")],
    Discriminator(
        _content_kind,
        custom_error_type="content_type",
        custom_error_message="expected a string or a list of content parts",
    ),
]


class InputFunctionCall(_Closed):
    name: str
    arguments: str


class InputToolCall(_Closed):
    id: str
    type: Literal["function"]
    function: InputFunctionCall
    encryptedValue: str | None = None
    encryptedValueType: str | None = None
    metadata: _JsonObject | None = None


class _Message(_Closed):
    id: str
    subagentRunId: str | None = None
    metadata: _JsonObject | None = None


class _Encrypted(_Message):
    encryptedValue: str | None = None
    encryptedValueType: str | None = None


class InputDeveloperMessage(_Encrypted):
    role: Literal["developer"]
    content: str
    name: str | None = None


class InputSystemMessage(_Encrypted):
    role: Literal["system"]
    content: str
    name: str | None = None


class InputAssistantMessage(_Encrypted):
    role: Literal["assistant"]
    content: str | None = None
    name: str | None = None
    toolCalls: list[InputToolCall] | None = None


class InputUserMessage(_Encrypted):
    role: Literal["user"]
    content: InputContent
    name: str | None = None


class InputToolMessage(_Encrypted):
    role: Literal["tool"]
    content: InputContent
    toolCallId: str
    error: str | None = None


class InputActivityMessage(_Message):
    role: Literal["activity"]
    activityType: str
    content: _JsonObject


class InputReasoningMessage(_Encrypted):
    role: Literal["reasoning"]
    content: str


InputMessage = Annotated[
    InputDeveloperMessage
    | InputSystemMessage
    | InputAssistantMessage
    | InputUserMessage
    | InputToolMessage
    | InputActivityMessage
    | InputReasoningMessage,
    Field(discriminator="role"),
]


class InputTool(_Closed):
    name: str
    description: str
    parameters: JsonValue = None
    """A JSON Schema for the arguments, carried opaquely."""
    metadata: _JsonObject | None = None


class InputContext(_Closed):
    description: str
    value: str


class InputResumeEntry(_Closed):
    interruptId: str
    status: Literal["resolved", "cancelled"]
    payload: JsonValue = None
    metadata: _JsonObject | None = None


class RunAgentInputModel(_Closed):
    """``schema.json#RunAgentInput``: what the consumer sends to start a run.

    Field names are the wire names. An absent optional field reads as
    ``None``; open values (``state``, ``forwardedProps``, ``metadata``, tool
    ``parameters``, resume ``payload``) are kept as the JSON they are.
    """

    threadId: str
    runId: str
    messages: list[InputMessage]
    protocolVersion: str | None = None
    parentRunId: str | None = None
    state: JsonValue = None
    tools: list[InputTool] | None = None
    context: list[InputContext] | None = None
    forwardedProps: JsonValue = None
    resume: list[InputResumeEntry] | None = None


# --- tables for the strip pass, from the models ------------------------------------------


def _fields(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(model.model_fields)


def _tag(model: type[BaseModel], discriminator: str) -> str:
    (tag,) = model.model_fields[discriminator].annotation.__args__  # type: ignore[union-attr]
    return str(tag)


_MESSAGE_FIELDS = {
    _tag(model, "role"): _fields(model)
    for model in (
        InputDeveloperMessage,
        InputSystemMessage,
        InputAssistantMessage,
        InputUserMessage,
        InputToolMessage,
        InputActivityMessage,
        InputReasoningMessage,
    )
}
_PART_FIELDS = {
    _tag(model, "type"): _fields(model)
    for model in (InputTextPart, InputImagePart, InputAudioPart, InputVideoPart, InputDocumentPart)
}
_SOURCE_FIELDS = {
    _tag(model, "type"): _fields(model)
    for model in (InputDataSource, InputUrlSource, InputFileSource)
}
_INPUT_FIELDS = _fields(RunAgentInputModel)
_TOOL_FIELDS = _fields(InputTool)
_CONTEXT_FIELDS = _fields(InputContext)
_TOOL_CALL_FIELDS = _fields(InputToolCall)
_FUNCTION_FIELDS = _fields(InputFunctionCall)
_RESUME_FIELDS = _fields(InputResumeEntry)
_TOOL_CALL_TYPE = _tag(InputToolCall, "type")
_RESUME_STATUSES = frozenset(InputResumeEntry.model_fields["status"].annotation.__args__)  # type: ignore[union-attr]


# --- the outgoing boundary ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PreparedInput:
    """What :func:`prepare_input` made of the caller's input."""

    body: dict[str, Any]
    """The ``RunAgentInput`` to put on the wire, exactly."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    """What was removed, upgraded or downgraded on the way, with pointers into the input."""

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == Severity.WARNING]


def prepare_input(
    raw: Mapping[str, Any] | RunAgentInputModel, *, peer_max_protocol_version: str | None = None
) -> PreparedInput:
    """The outgoing boundary: the body to send for ``raw``, or :class:`InputRejected`.

    ``raw`` is a JSON-shaped mapping (not modified) or a :class:`RunAgentInputModel`.
    ``peer_max_protocol_version`` selects the shims for a peer known to be
    older (``"0.0.39"``, ``"0.0.57"``, ``"1.0"``); ``None`` treats the peer
    as current.
    """
    if isinstance(raw, RunAgentInputModel):
        raw = raw.model_dump(exclude_unset=True)
    return _Boundary(peer_version(peer_max_protocol_version)).prepare(raw)


class _Boundary:
    def __init__(self, peer: tuple[int, ...] | None) -> None:
        self.peer = peer
        self.diagnostics: list[Diagnostic] = []
        self._origins: dict[int, list[int]] = {}
        """id(list after removals) → the original position of each element that stayed."""

    def prepare(self, raw: Mapping[str, Any]) -> PreparedInput:
        if not isinstance(raw, Mapping):
            raise InputRejected(
                INPUT_MALFORMED("not-object", raw=describe(raw)),
                pointer="",
            )
        body: dict[str, Any] = _copy_input(raw, "")
        upgrade_input(body, "", self._retired)
        self._input(body)
        self._validate(body)
        if at_or_below(self.peer, GATE_SUBAGENTS):
            self._without_subagents(body)
        if at_or_below(self.peer, GATE_CONTENT_PARTS):
            self._flatten_content(body)
        if self.peer is not None and self.peer < VERSIONED_SINCE:
            body.pop("protocolVersion", None)
        else:
            body["protocolVersion"] = PROTOCOL_VERSION
        return PreparedInput(body, self.diagnostics)

    def _report(self, message: Message, pointer: str, severity: Severity | None = None) -> None:
        code = message.code
        self.diagnostics.append(
            Diagnostic(code.id, severity or code.severity, message.text, None, pointer, code.spec)
        )

    def _retired(self, kind: str, pointer: str, fields: dict[str, str], lossy: bool) -> None:
        # DEPRECATIONS.md: the upgrade is silent for a modern peer; it warns where it
        # loses content, or strands it with a peer that predates media parts.
        form = ""
        if kind == "binary":
            form = "binary-lossy" if lossy else "binary"
            if at_or_below(self.peer, GATE_MEDIA_PARTS):
                form += "-old-peer"
                lossy = True
        severity = Severity.WARNING if lossy else None
        self._report(INPUT_RETIRED_SHAPE(form, **fields), pointer, severity)

    # -- stripping unrecognised material --------------------------------------------

    def _strip(self, holder: dict[str, Any], known: frozenset[str], base: str) -> None:
        for key in [key for key in holder if key not in known]:
            del holder[key]
            self._report(
                INPUT_UNRECOGNISED(base=base, key=escape(key)),
                f"{base}/{escape(key)}",
            )

    def _drop(self, pointer: str, what: str) -> None:
        self._report(
            INPUT_UNRECOGNISED("described", what=what, pointer=pointer),
            pointer,
        )

    def _each(
        self,
        holder: dict[str, Any],
        key: str,
        base: str,
        keep: Callable[[dict[str, Any], str], bool],
    ) -> None:
        """Filter the list ``holder[key]`` through ``keep``, remembering where each element was."""
        items = holder.get(key)
        if type(items) is not list:
            return
        kept: list[Any] = []
        origins: list[int] = []
        for position, item in enumerate(items):
            if type(item) is not dict or keep(item, f"{base}/{key}/{position}"):
                kept.append(item)
                origins.append(position)
        holder[key] = kept
        self._origins[id(kept)] = origins

    def _input(self, body: dict[str, Any]) -> None:
        self._strip(body, _INPUT_FIELDS, "")
        self._each(body, "messages", "", self._message)
        self._each(body, "tools", "", self._known(_TOOL_FIELDS))
        self._each(body, "context", "", self._known(_CONTEXT_FIELDS))
        self._each(body, "resume", "", self._resume_entry)

    def _known(self, fields: frozenset[str]) -> Callable[[dict[str, Any], str], bool]:
        def keep(item: dict[str, Any], pointer: str) -> bool:
            self._strip(item, fields, pointer)
            return True

        return keep

    def _message(self, message: dict[str, Any], pointer: str) -> bool:
        role = message.get("role")
        if type(role) is not str:
            return True  # missing or malformed: the model says so
        if role == "activity":
            self._report(
                INPUT_ACTIVITY_REMOVED(pointer=pointer),
                pointer,
            )
            return False
        fields = _MESSAGE_FIELDS.get(role)
        if fields is None:
            self._drop(pointer, f"message with unrecognised role {role!r}")
            return False
        self._strip(message, fields, pointer)
        if type(message.get("content")) is list and role in ("user", "tool"):
            self._each(message, "content", pointer, self._part)
        self._each(message, "toolCalls", pointer, self._tool_call)
        return True

    def _part(self, part: dict[str, Any], pointer: str) -> bool:
        kind = part.get("type")
        if type(kind) is not str:
            return True
        fields = _PART_FIELDS.get(kind)
        if fields is None:
            self._drop(pointer, f"content part of unrecognised kind {kind!r}")
            return False
        self._strip(part, fields, pointer)
        source = part.get("source")
        if kind in MEDIA_KINDS and type(source) is dict:
            source_kind = source.get("type")
            if type(source_kind) is str:
                source_fields = _SOURCE_FIELDS.get(source_kind)
                if source_fields is None:
                    # The source is required: the part containing it goes.
                    self._drop(
                        pointer,
                        f"{kind} part whose source is of unrecognised kind {source_kind!r} "
                        f"(at {pointer}/source/type)",
                    )
                    return False
                self._strip(source, source_fields, f"{pointer}/source")
        return True

    def _tool_call(self, call: dict[str, Any], pointer: str) -> bool:
        kind = call.get("type")
        if type(kind) is str and kind != _TOOL_CALL_TYPE:
            self._drop(pointer, f"tool call of unrecognised type {kind!r}")
            return False
        self._strip(call, _TOOL_CALL_FIELDS, pointer)
        function = call.get("function")
        if type(function) is dict:
            self._strip(function, _FUNCTION_FIELDS, f"{pointer}/function")
        return True

    def _resume_entry(self, entry: dict[str, Any], pointer: str) -> bool:
        status = entry.get("status")
        if type(status) is str and status not in _RESUME_STATUSES:
            self._drop(pointer, f"resume entry with unrecognised status {status!r}")
            return False
        self._strip(entry, _RESUME_FIELDS, pointer)
        return True

    # -- malformed known fields ------------------------------------------------------

    def _validate(self, body: dict[str, Any]) -> None:
        try:
            RunAgentInputModel.model_validate(body)
        except ValidationError as invalid:
            error = invalid.errors(include_url=False)[0]
            path = list(error["loc"])
            if error["type"] == "absent_means_absent":
                path.append(error["ctx"]["field"])
            elif error["type"] == "union_tag_not_found":
                path.append(str(error["ctx"]["discriminator"]).strip("'"))
            pointer, found = self._locate(body, path)
            raise InputRejected(
                INPUT_MALFORMED(
                    "schema", at=pointer or "/", msg=error["msg"], found=describe(found)
                ),
                pointer=pointer,
            ) from None

    def _locate(self, body: Any, path: list[Any]) -> tuple[str, Any]:
        """A pydantic error location as a JSON Pointer into the caller's input.

        The location also names union branches (a message's role, a part's
        type, the content form); those are not members of the document and
        are skipped. List positions are mapped back to where each element was
        before removals.
        """
        node = body
        tokens: list[str] = []
        entered = True  # just stepped into ``node``
        for position, step in enumerate(path):
            last = position == len(path) - 1
            if type(node) is dict:
                if entered and step in (node.get("role"), node.get("type")) and not last:
                    entered = False
                    continue  # the discriminator's tag, not a member
                if step in node:
                    tokens.append(escape(str(step)))
                    node, entered = node[step], True
                    continue
            elif type(node) is list and type(step) is int and 0 <= step < len(node):
                origins = self._origins.get(id(node))
                tokens.append(str(origins[step] if origins else step))
                node, entered = node[step], True
                continue
            if last and type(step) is str and type(node) is dict:
                tokens.append(escape(step))  # a missing member
                node = MISSING
            entered = False
        pointer = "".join(f"/{token}" for token in tokens)
        return pointer, node

    # -- shims for an older peer ----------------------------------------------------------

    def _messages(self, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        messages = body.get("messages", [])
        origins = self._origins.get(id(messages)) or list(range(len(messages)))
        return [(f"/messages/{origins[i]}", m) for i, m in enumerate(messages)]

    def _without_subagents(self, body: dict[str, Any]) -> None:
        stripped = [
            pointer
            for pointer, message in self._messages(body)
            if message.pop("subagentRunId", None) is not None
        ]
        if stripped:
            self._report(
                INPUT_DOWNGRADE(
                    count=len(stripped),
                    pointers=", ".join(p + "/subagentRunId" for p in stripped),
                ),
                f"{stripped[0]}/subagentRunId",
            )

    def _flatten_content(self, body: dict[str, Any]) -> None:
        for pointer, message in self._messages(body):
            parts = message.get("content")
            if message.get("role") not in ("user", "tool") or type(parts) is not list:
                continue
            origins = self._origins.get(id(parts)) or list(range(len(parts)))
            dropped = [
                f"{part['type']} at {pointer}/content/{origins[i]}"
                for i, part in enumerate(parts)
                if part["type"] != "text"
            ]
            message["content"] = "".join(part["text"] for part in parts if part["type"] == "text")
            detail = (
                f"DROPS non-text parts: {', '.join(dropped)}"
                if dropped
                else "the parts' boundaries, ids and metadata are not carried"
            )
            self._report(
                INPUT_DOWNGRADE_LOSSY(pointer=pointer, detail=detail),
                f"{pointer}/content",
            )


MAX_DEPTH = 255
"""Deepest nesting the input may have: orjson, which encodes it, stops there."""


def _copy_input(value: Any, pointer: str, depth: int = 0) -> Any:
    """A deep copy of the caller's input, refusing what JSON cannot carry (malformed input).

    Not :func:`~agui_pipeline._json.copy_json`: this one checks as it copies
    and names the offending member's pointer.
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
    elif depth >= MAX_DEPTH:
        raise InputRejected(
            INPUT_MALFORMED("too-deep", max_depth=MAX_DEPTH, pointer=pointer),
            pointer=pointer,
        )
    elif isinstance(value, Mapping):
        copy: dict[str, Any] = {}
        for key, member in value.items():
            if not isinstance(key, str):
                raise InputRejected(
                    INPUT_MALFORMED("key", at=pointer or "/", key=key),
                    pointer=pointer,
                )
            copy[key] = _copy_input(member, f"{pointer}/{escape(key)}", depth + 1)
        return copy
    elif isinstance(value, list | tuple):
        return [_copy_input(member, f"{pointer}/{i}", depth + 1) for i, member in enumerate(value)]
    raise InputRejected(
        INPUT_MALFORMED(at=pointer or "/", value=describe(value)),
        pointer=pointer,
    )


__all__ = [
    "InputAssistantMessage",
    "InputAudioPart",
    "InputContext",
    "InputDataSource",
    "InputDeveloperMessage",
    "InputDocumentPart",
    "InputFileSource",
    "InputFunctionCall",
    "InputImagePart",
    "InputReasoningMessage",
    "InputRejected",
    "InputResumeEntry",
    "InputSystemMessage",
    "InputTextPart",
    "InputTool",
    "InputToolCall",
    "InputToolMessage",
    "InputUrlSource",
    "InputUserMessage",
    "InputVideoPart",
    "PreparedInput",
    "RunAgentInputModel",
    "prepare_input",
]
