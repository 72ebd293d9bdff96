"""The AG-UI 1.1 event types and the shapes they carry, as ``TypedDict``\\ s.

Written from ``schema.json`` (the structural truth, ``/spec/1.1/basic``,
"Schema") and the spec pages. At run time an event is the plain ``dict``
the decoder produced; these types are for static typing and documentation —
and they are the project's one statement of structure: the enforce stage
compiles its per-type checks from them (``stages/enforce.py``).
The pydantic models of the documents read rarely (``run_input``,
``capabilities``) spell the same shapes again for validation errors and a
typed public API; ``tests/test_schema_agreement.py`` checks they agree with
these, member by member.

How the schema is spelled here:

- ``Required``/``NotRequired`` follow the schema's ``required`` lists. An
  optional field is absent or holds a value of its type — never ``null``
  (``/spec/1.1/basic/index``, "Absent means absent").
- A one-value ``Literal`` is the schema's ``const`` (a discriminator, or a
  pinned value such as ``REASONING_MESSAGE_START.role``); a value other than
  it is malformed. A ``Literal`` of several values is a closed string set
  (the schema's ``enum``, such as :data:`TextMessageRole`): a string outside
  it is unrecognised material, not a malformed value
  (``/spec/1.1/basic/processing``).
- A union of ``TypedDict``\\ s is a discriminated union: the member is chosen
  by the one key every member pins with a ``Literal`` (``type``, ``role`` or
  ``op``); an unknown discriminator value is an unrecognised member.
- ``dict[str, Any]`` is an object open by key (metadata, activity content, a
  carried JSON Schema): any key, any value, ``null`` included, never judged.
- :data:`JSON` is any JSON value including ``null`` (a required payload such
  as ``CUSTOM.value``); :data:`NonNullJSON` is any JSON value but ``null``.
- ``Annotated`` markers carry what a ``TypedDict`` cannot say: integer
  bounds (:class:`Range`), a minimum list length (:class:`MinItems`), the JSON
  Pointer format (:data:`JSON_POINTER`), and objects that keep members they do
  not describe (:data:`OPEN`, the JSON Patch operations, RFC 6902 §4).
"""

# No ``from __future__ import annotations``: the TypedDicts are introspected at
# import, and Python 3.11 only sees ``NotRequired`` in evaluated annotations.

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal, NotRequired, TypeAlias, TypedDict


@dataclass(frozen=True, slots=True)
class Range:
    """Inclusive bounds of an integer (the schema's ``minimum``/``maximum``)."""

    minimum: int
    maximum: int


@dataclass(frozen=True, slots=True)
class MinItems:
    """The least number of elements a list may hold (the schema's ``minItems``)."""

    count: int


@dataclass(frozen=True, slots=True)
class Marker:
    """A constraint named by a word: see :data:`NON_NULL`, :data:`JSON_POINTER`, :data:`OPEN`."""

    name: str


NON_NULL = Marker("non-null")
"""Any JSON value except ``null`` (the schema's ``{"not": {"type": "null"}}``)."""
JSON_POINTER = Marker("json-pointer")
"""A string that is an RFC 6901 JSON Pointer: ``""`` or ``/``-prefixed tokens, ``~0``/``~1``."""
OPEN = Marker("open")
"""Objects that keep members they do not describe (RFC 6902 §4 for patch operations)."""

MAX_SAFE_INTEGER = 9_007_199_254_740_991
"""2**53 - 1: the range a JSON number survives a round trip in."""

JSON: TypeAlias = Any
"""Any JSON value, ``null`` included."""
NonNullJSON = Annotated[Any, NON_NULL]
Metadata: TypeAlias = dict[str, Any]
"""Open by key; a ``null`` under a key is data (``/spec/1.1/basic/metadata``)."""
OpenObject: TypeAlias = dict[str, Any]
"""An object whose members are data: activity content, a carried JSON Schema."""
JsonPointer = Annotated[str, JSON_POINTER]
Timestamp = Annotated[int, Range(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)]
TokenCount = Annotated[int, Range(0, MAX_SAFE_INTEGER)]


class EventType(StrEnum):
    """The 31 event types of AG-UI 1.1 (``/spec/1.1/basic/index``, "The events")."""

    TEXT_MESSAGE_START = "TEXT_MESSAGE_START"
    TEXT_MESSAGE_CONTENT = "TEXT_MESSAGE_CONTENT"
    TEXT_MESSAGE_END = "TEXT_MESSAGE_END"
    TEXT_MESSAGE_CHUNK = "TEXT_MESSAGE_CHUNK"
    TOOL_CALL_START = "TOOL_CALL_START"
    TOOL_CALL_ARGS = "TOOL_CALL_ARGS"
    TOOL_CALL_END = "TOOL_CALL_END"
    TOOL_CALL_CHUNK = "TOOL_CALL_CHUNK"
    TOOL_CALL_RESULT = "TOOL_CALL_RESULT"
    STATE_SNAPSHOT = "STATE_SNAPSHOT"
    STATE_DELTA = "STATE_DELTA"
    MESSAGES_SNAPSHOT = "MESSAGES_SNAPSHOT"
    ACTIVITY_SNAPSHOT = "ACTIVITY_SNAPSHOT"
    ACTIVITY_DELTA = "ACTIVITY_DELTA"
    RAW = "RAW"
    CUSTOM = "CUSTOM"
    RUN_STARTED = "RUN_STARTED"
    RUN_FINISHED = "RUN_FINISHED"
    RUN_ERROR = "RUN_ERROR"
    STEP_STARTED = "STEP_STARTED"
    STEP_FINISHED = "STEP_FINISHED"
    REASONING_START = "REASONING_START"
    REASONING_MESSAGE_START = "REASONING_MESSAGE_START"
    REASONING_MESSAGE_CONTENT = "REASONING_MESSAGE_CONTENT"
    REASONING_MESSAGE_END = "REASONING_MESSAGE_END"
    REASONING_MESSAGE_CHUNK = "REASONING_MESSAGE_CHUNK"
    REASONING_END = "REASONING_END"
    REASONING_ENCRYPTED_VALUE = "REASONING_ENCRYPTED_VALUE"
    SUBAGENT_STARTED = "SUBAGENT_STARTED"
    SUBAGENT_FINISHED = "SUBAGENT_FINISHED"
    SUBAGENT_ERROR = "SUBAGENT_ERROR"


TextMessageRole: TypeAlias = Literal["developer", "system", "assistant", "user"]
"""The roles a streamed text message may take (schema ``TextMessageRole``)."""
Role: TypeAlias = Literal[
    "developer", "system", "assistant", "user", "tool", "activity", "reasoning"
]
"""Every message role (schema ``Role``)."""
ReasoningEncryptedValueSubtype: TypeAlias = Literal["tool-call", "message"]
ResumeStatus: TypeAlias = Literal["resolved", "cancelled"]


# --- content parts (/spec/1.1/basic/run-input) --------------------------------


class DataSource(TypedDict):
    """Bytes carried inline, base64-encoded."""

    type: Literal["data"]
    value: str
    mimeType: str


class UrlSource(TypedDict):
    type: Literal["url"]
    value: str
    mimeType: NotRequired[str]


class FileSource(TypedDict):
    """A provider file handle."""

    type: Literal["file"]
    value: str
    provider: NotRequired[str]
    mimeType: NotRequired[str]


PartSource: TypeAlias = DataSource | UrlSource | FileSource


class TextPart(TypedDict):
    type: Literal["text"]
    id: NotRequired[str]
    text: str
    metadata: NotRequired[NonNullJSON]


class ImagePart(TypedDict):
    type: Literal["image"]
    id: NotRequired[str]
    source: PartSource
    metadata: NotRequired[NonNullJSON]


class AudioPart(TypedDict):
    type: Literal["audio"]
    id: NotRequired[str]
    source: PartSource
    metadata: NotRequired[NonNullJSON]


class VideoPart(TypedDict):
    type: Literal["video"]
    id: NotRequired[str]
    source: PartSource
    metadata: NotRequired[NonNullJSON]


class DocumentPart(TypedDict):
    type: Literal["document"]
    id: NotRequired[str]
    source: PartSource
    metadata: NotRequired[NonNullJSON]


ContentPart: TypeAlias = TextPart | ImagePart | AudioPart | VideoPart | DocumentPart
Content: TypeAlias = str | list[ContentPart]
"""A user or tool message's content: plain text, or parts."""


# --- messages (/spec/1.1/basic/run-input) -------------------------------------


class FunctionCall(TypedDict):
    name: str
    arguments: str
    """The arguments as the model produced them: a string, parsed by nobody here."""


class ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCall
    encryptedValue: NotRequired[str]
    encryptedValueType: NotRequired[str]
    metadata: NotRequired[Metadata]


class DeveloperMessage(TypedDict):
    id: str
    role: Literal["developer"]
    content: str
    name: NotRequired[str]
    encryptedValue: NotRequired[str]
    encryptedValueType: NotRequired[str]
    metadata: NotRequired[Metadata]
    subagentRunId: NotRequired[str]


class SystemMessage(TypedDict):
    id: str
    role: Literal["system"]
    content: str
    name: NotRequired[str]
    encryptedValue: NotRequired[str]
    encryptedValueType: NotRequired[str]
    metadata: NotRequired[Metadata]
    subagentRunId: NotRequired[str]


class AssistantMessage(TypedDict):
    id: str
    role: Literal["assistant"]
    content: NotRequired[str]
    toolCalls: NotRequired[list[ToolCall]]
    name: NotRequired[str]
    encryptedValue: NotRequired[str]
    encryptedValueType: NotRequired[str]
    metadata: NotRequired[Metadata]
    subagentRunId: NotRequired[str]


class UserMessage(TypedDict):
    id: str
    role: Literal["user"]
    content: Content
    name: NotRequired[str]
    encryptedValue: NotRequired[str]
    encryptedValueType: NotRequired[str]
    metadata: NotRequired[Metadata]
    subagentRunId: NotRequired[str]


class ToolMessage(TypedDict):
    id: str
    role: Literal["tool"]
    content: Content
    toolCallId: str
    error: NotRequired[str]
    encryptedValue: NotRequired[str]
    encryptedValueType: NotRequired[str]
    metadata: NotRequired[Metadata]
    subagentRunId: NotRequired[str]


class ActivityMessage(TypedDict):
    id: str
    role: Literal["activity"]
    activityType: str
    content: OpenObject
    metadata: NotRequired[Metadata]
    subagentRunId: NotRequired[str]


class ReasoningMessage(TypedDict):
    id: str
    role: Literal["reasoning"]
    content: str
    encryptedValue: NotRequired[str]
    encryptedValueType: NotRequired[str]
    metadata: NotRequired[Metadata]
    subagentRunId: NotRequired[str]


Message: TypeAlias = (
    DeveloperMessage
    | SystemMessage
    | AssistantMessage
    | UserMessage
    | ToolMessage
    | ActivityMessage
    | ReasoningMessage
)
"""A message of the conversation (schema.json's ``Message``): one shape per ``role``."""


# --- run input (/spec/1.1/basic/run-input) -----------------------------------


class Tool(TypedDict):
    name: str
    description: str
    parameters: NotRequired[NonNullJSON]
    """A JSON Schema for the arguments, carried opaquely."""
    metadata: NotRequired[Metadata]


class Context(TypedDict):
    description: str
    value: str


class ResumeEntry(TypedDict):
    """An answer to an interrupt (``/spec/1.1/basic/patterns/interrupt-resume``)."""

    interruptId: str
    status: ResumeStatus
    payload: NotRequired[NonNullJSON]
    metadata: NotRequired[Metadata]


class RunAgentInput(TypedDict):
    """A request to run an agent; echoed as ``RUN_STARTED.input``."""

    threadId: str
    runId: str
    messages: list[Message]
    protocolVersion: NotRequired[str]
    parentRunId: NotRequired[str]
    state: NotRequired[NonNullJSON]
    tools: NotRequired[list[Tool]]
    context: NotRequired[list[Context]]
    forwardedProps: NotRequired[NonNullJSON]
    resume: NotRequired[list[ResumeEntry]]


class SubagentInfo(TypedDict):
    """A subagent a parent agent can invoke (capabilities)."""

    name: str
    description: NotRequired[str]


# --- outcomes, interrupts, usage (/spec/1.1/events/lifecycle) -------------------


class Interrupt(TypedDict):
    id: str
    reason: str
    message: NotRequired[str]
    toolCallId: NotRequired[str]
    responseSchema: NotRequired[OpenObject]
    expiresAt: NotRequired[str]
    metadata: NotRequired[Metadata]
    subagentRunId: NotRequired[str]


class RunFinishedSuccessOutcome(TypedDict):
    type: Literal["success"]
    pendingToolCallIds: NotRequired[list[str]]


class RunFinishedInterruptOutcome(TypedDict):
    type: Literal["interrupt"]
    interrupts: Annotated[list[Interrupt], MinItems(1)]


class RunFinishedCancelledOutcome(TypedDict):
    type: Literal["cancelled"]


RunFinishedOutcome: TypeAlias = (
    RunFinishedSuccessOutcome | RunFinishedInterruptOutcome | RunFinishedCancelledOutcome
)


class SubagentFinishedSuccessOutcome(TypedDict):
    type: Literal["success"]


class SubagentFinishedSuspendedOutcome(TypedDict):
    type: Literal["suspended"]
    interruptIds: NotRequired[list[str]]


SubagentFinishedOutcome: TypeAlias = (
    SubagentFinishedSuccessOutcome | SubagentFinishedSuspendedOutcome
)


class TokenUsage(TypedDict, total=False):
    """Token accounting for one provider and model; every field optional."""

    provider: str
    model: str
    inputTokens: TokenCount
    outputTokens: TokenCount
    totalTokens: TokenCount
    reasoningTokens: TokenCount
    cachedInputTokens: TokenCount
    cacheWriteInputTokens: TokenCount


# --- JSON Patch (RFC 6902; /spec/1.1/basic/patterns/snapshots) ----------------


class AddOperation(TypedDict):
    op: Literal["add"]
    path: JsonPointer
    value: JSON


class RemoveOperation(TypedDict):
    op: Literal["remove"]
    path: JsonPointer


class ReplaceOperation(TypedDict):
    op: Literal["replace"]
    path: JsonPointer
    value: JSON


MoveOperation = TypedDict(
    "MoveOperation", {"op": Literal["move"], "from": JsonPointer, "path": JsonPointer}
)
CopyOperation = TypedDict(
    "CopyOperation", {"op": Literal["copy"], "from": JsonPointer, "path": JsonPointer}
)


class TestOperation(TypedDict):
    op: Literal["test"]
    path: JsonPointer
    value: JSON


JsonPatchOperation = Annotated[
    AddOperation
    | RemoveOperation
    | ReplaceOperation
    | MoveOperation
    | CopyOperation
    | TestOperation,
    OPEN,
]
"""One operation; members RFC 6902 does not define are kept, never stripped."""
JsonPatch: TypeAlias = list[JsonPatchOperation]


# --- events (/spec/1.1/events) ---------------------------------------------------


class BaseEvent(TypedDict):
    """The envelope every event shares (``/spec/1.1/basic/index``, "Events").

    ``type`` is declared by each event, narrowed to its own name.
    """

    timestamp: NotRequired[Timestamp]
    rawEvent: NotRequired[NonNullJSON]
    metadata: NotRequired[Metadata]


class AttributableEvent(BaseEvent):
    """An event that can belong to a subagent's work (``/spec/1.1/events/subagents``)."""

    subagentRunId: NotRequired[str]


class TextMessageStartEvent(AttributableEvent):
    type: Literal["TEXT_MESSAGE_START"]
    messageId: str
    role: NotRequired[TextMessageRole]
    """Absent means ``assistant``."""
    name: NotRequired[str]


class TextMessageContentEvent(AttributableEvent):
    type: Literal["TEXT_MESSAGE_CONTENT"]
    messageId: str
    delta: str


class TextMessageEndEvent(AttributableEvent):
    type: Literal["TEXT_MESSAGE_END"]
    messageId: str


class TextMessageChunkEvent(AttributableEvent):
    type: Literal["TEXT_MESSAGE_CHUNK"]
    messageId: NotRequired[str]
    role: NotRequired[TextMessageRole]
    delta: NotRequired[str]
    name: NotRequired[str]


class ToolCallStartEvent(AttributableEvent):
    type: Literal["TOOL_CALL_START"]
    toolCallId: str
    toolCallName: str
    parentMessageId: NotRequired[str]


class ToolCallArgsEvent(AttributableEvent):
    type: Literal["TOOL_CALL_ARGS"]
    toolCallId: str
    delta: str


class ToolCallEndEvent(AttributableEvent):
    type: Literal["TOOL_CALL_END"]
    toolCallId: str


class ToolCallChunkEvent(AttributableEvent):
    type: Literal["TOOL_CALL_CHUNK"]
    toolCallId: NotRequired[str]
    toolCallName: NotRequired[str]
    parentMessageId: NotRequired[str]
    delta: NotRequired[str]


class ToolCallResultEvent(AttributableEvent):
    type: Literal["TOOL_CALL_RESULT"]
    messageId: str
    toolCallId: str
    content: Content
    role: NotRequired[Literal["tool"]]


class StateSnapshotEvent(AttributableEvent):
    type: Literal["STATE_SNAPSHOT"]
    snapshot: JSON
    """Any JSON value, ``null`` included: the state is replaced by it."""


class StateDeltaEvent(AttributableEvent):
    type: Literal["STATE_DELTA"]
    delta: JsonPatch


class MessagesSnapshotEvent(BaseEvent):
    type: Literal["MESSAGES_SNAPSHOT"]
    messages: list[Message]


class ActivitySnapshotEvent(AttributableEvent):
    type: Literal["ACTIVITY_SNAPSHOT"]
    messageId: str
    activityType: str
    content: OpenObject
    replace: NotRequired[bool]
    """Absent means ``true``."""


class ActivityDeltaEvent(AttributableEvent):
    type: Literal["ACTIVITY_DELTA"]
    messageId: str
    activityType: str
    patch: JsonPatch


class RawEvent(AttributableEvent):
    type: Literal["RAW"]
    event: JSON
    source: NotRequired[str]


class CustomEvent(AttributableEvent):
    type: Literal["CUSTOM"]
    name: str
    value: JSON


class RunStartedEvent(BaseEvent):
    type: Literal["RUN_STARTED"]
    threadId: str
    runId: str
    protocolVersion: NotRequired[str]
    parentRunId: NotRequired[str]
    input: NotRequired[RunAgentInput]


class RunFinishedEvent(BaseEvent):
    type: Literal["RUN_FINISHED"]
    threadId: str
    runId: str
    result: NotRequired[NonNullJSON]
    outcome: NotRequired[RunFinishedOutcome]
    """Absent means success."""
    usage: NotRequired[list[TokenUsage]]


class RunErrorEvent(BaseEvent):
    type: Literal["RUN_ERROR"]
    message: str
    code: NotRequired[str]
    usage: NotRequired[list[TokenUsage]]


class StepStartedEvent(AttributableEvent):
    type: Literal["STEP_STARTED"]
    stepName: str


class StepFinishedEvent(AttributableEvent):
    type: Literal["STEP_FINISHED"]
    stepName: str


class ReasoningStartEvent(AttributableEvent):
    type: Literal["REASONING_START"]
    messageId: str


class ReasoningMessageStartEvent(AttributableEvent):
    type: Literal["REASONING_MESSAGE_START"]
    messageId: str
    role: Literal["reasoning"]


class ReasoningMessageContentEvent(AttributableEvent):
    type: Literal["REASONING_MESSAGE_CONTENT"]
    messageId: str
    delta: str


class ReasoningMessageEndEvent(AttributableEvent):
    type: Literal["REASONING_MESSAGE_END"]
    messageId: str


class ReasoningMessageChunkEvent(AttributableEvent):
    type: Literal["REASONING_MESSAGE_CHUNK"]
    messageId: NotRequired[str]
    delta: NotRequired[str]


class ReasoningEndEvent(AttributableEvent):
    type: Literal["REASONING_END"]
    messageId: str


class ReasoningEncryptedValueEvent(AttributableEvent):
    type: Literal["REASONING_ENCRYPTED_VALUE"]
    subtype: ReasoningEncryptedValueSubtype
    entityId: str
    encryptedValue: str
    encryptedValueType: NotRequired[str]


class SubagentStartedEvent(BaseEvent):
    type: Literal["SUBAGENT_STARTED"]
    subagentRunId: str
    name: str
    description: NotRequired[str]
    """What this subagent is for, for a consumer to display."""
    parentSubagentRunId: NotRequired[str]
    parentToolCallId: NotRequired[str]
    parentMessageId: NotRequired[str]


class SubagentFinishedEvent(BaseEvent):
    type: Literal["SUBAGENT_FINISHED"]
    subagentRunId: str
    result: NotRequired[NonNullJSON]
    outcome: NotRequired[SubagentFinishedOutcome]
    """Absent means success."""


class SubagentErrorEvent(BaseEvent):
    type: Literal["SUBAGENT_ERROR"]
    subagentRunId: str
    message: str
    code: NotRequired[str]


AnyEvent: TypeAlias = (
    TextMessageStartEvent
    | TextMessageContentEvent
    | TextMessageEndEvent
    | TextMessageChunkEvent
    | ToolCallStartEvent
    | ToolCallArgsEvent
    | ToolCallEndEvent
    | ToolCallChunkEvent
    | ToolCallResultEvent
    | StateSnapshotEvent
    | StateDeltaEvent
    | MessagesSnapshotEvent
    | ActivitySnapshotEvent
    | ActivityDeltaEvent
    | RawEvent
    | CustomEvent
    | RunStartedEvent
    | RunFinishedEvent
    | RunErrorEvent
    | StepStartedEvent
    | StepFinishedEvent
    | ReasoningStartEvent
    | ReasoningMessageStartEvent
    | ReasoningMessageContentEvent
    | ReasoningMessageEndEvent
    | ReasoningMessageChunkEvent
    | ReasoningEndEvent
    | ReasoningEncryptedValueEvent
    | SubagentStartedEvent
    | SubagentFinishedEvent
    | SubagentErrorEvent
)
"""Every event of AG-UI 1.1, discriminated by ``type``."""
