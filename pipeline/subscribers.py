"""What dispatch hands delivered events to: handlers and sinks.

Handlers are configuration, registered once and read by the dispatch stage
when each stream starts, so one :class:`~agui_pipeline.Pipeline` can run many
streams with the same handlers. A sink re-encodes what was delivered — SSE
frames as the HTTP binding writes them, or JSON lines — onto a byte stream
or a file, which is what lets a pipeline sit in a gateway between an agent
and a browser.

Both are typed with the event ``TypedDict``\\ s of :mod:`agui_pipeline.events`:
a handler registered for ``"TEXT_MESSAGE_CONTENT"`` may take a
``TextMessageContentEvent``, a ``"*"`` handler an ``AnyEvent``, a sink a
sequence of ``AnyEvent``. At run time an event is the plain ``dict`` the decoder
made; by the time it is delivered, enforce has checked it against its type.

Everything here is awaited in the reading task: a slow handler or sink slows
the read, and nothing is buffered on its behalf.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeAlias, TypeVar, cast, get_args, overload

import orjson
from agui_pipeline._suggest import did_you_mean
from agui_pipeline.errors import UsageError
from agui_pipeline.events import (
    ActivityDeltaEvent,
    ActivitySnapshotEvent,
    AnyEvent,
    CustomEvent,
    EventType,
    MessagesSnapshotEvent,
    RawEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEndEvent,
    ReasoningMessageChunkEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

Event = dict[str, Any]
"""An event at run time (the same as :data:`agui_pipeline.Event`)."""
E = TypeVar("E")
EventHandler: TypeAlias = Callable[[E], Awaitable[None] | None]
"""A sync or async callable taking one delivered event of type ``E``."""
Register: TypeAlias = Callable[[EventHandler[E]], EventHandler[E]]
"""What :meth:`Handlers.on` returns: a decorator registering a handler of ``E``."""
Handler: TypeAlias = Callable[[Any], Awaitable[None] | None]
"""A handler of any event, as the registry holds it."""
HandlerMap: TypeAlias = Mapping[str, Handler | Sequence[Handler]]
EVERY = "*"
"""The event type to register under for a handler that sees every event."""

H = TypeVar("H", bound=Handler)

HandledType: TypeAlias = Literal[
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "TEXT_MESSAGE_CHUNK",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "TOOL_CALL_CHUNK",
    "TOOL_CALL_RESULT",
    "STATE_SNAPSHOT",
    "STATE_DELTA",
    "MESSAGES_SNAPSHOT",
    "ACTIVITY_SNAPSHOT",
    "ACTIVITY_DELTA",
    "RAW",
    "CUSTOM",
    "RUN_STARTED",
    "RUN_FINISHED",
    "RUN_ERROR",
    "STEP_STARTED",
    "STEP_FINISHED",
    "REASONING_START",
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_CONTENT",
    "REASONING_MESSAGE_END",
    "REASONING_MESSAGE_CHUNK",
    "REASONING_END",
    "REASONING_ENCRYPTED_VALUE",
    "SUBAGENT_STARTED",
    "SUBAGENT_FINISHED",
    "SUBAGENT_ERROR",
    "*",
]
"""What a handler can be registered for, by name: an AG-UI 1.1 event type, or ``"*"``."""

_HANDLED = frozenset(get_args(HandledType))


def delivered(events: list[Event]) -> list[AnyEvent]:
    """Delivered events under their static type (nothing is copied or checked here).

    Enforce has checked each one against its ``TypedDict`` — unknown members
    stripped, malformed values rejected — before dispatch delivers it.
    """
    return cast("list[AnyEvent]", events)


class Handlers:
    """A registry of handlers by event type; ``"*"`` sees every event.

    ::

        handlers = Handlers()

        @handlers.on("TEXT_MESSAGE_CONTENT")
        async def show(event: TextMessageContentEvent) -> None: ...

        pipeline = Pipeline(handlers=handlers)   # or handlers={"RUN_ERROR": alert}

    For each delivered event, its type's handlers run first, in registration
    order, then the ``"*"`` handlers. Register before passing the registry to a
    pipeline: from then on it is closed (:meth:`add` raises
    :class:`~agui_pipeline.UsageError`), so no stream and no copy of the
    pipeline ever sees a handler appear.
    """

    def __init__(self, mapping: HandlerMap | None = None) -> None:
        self.by_type: dict[str, tuple[Handler, ...]] = {}
        self._closed = False
        for event_type, handlers in (mapping or {}).items():
            for handler in [handlers] if callable(handlers) else handlers:
                self.add(event_type, handler)

    @classmethod
    def of(cls, value: Handlers | HandlerMap | None) -> Handlers:
        """The registry for an ``Options.handlers`` value (a registry or a mapping)."""
        return value if isinstance(value, Handlers) else cls(value)

    def closed(self) -> Handlers:
        """This registry, closed to further registration (a pipeline closes what it takes)."""
        self._closed = True
        return self

    def add(self, event_type: str, handler: Handler) -> None:
        """Register ``handler`` for ``event_type`` (``"*"``: every event)."""
        if self._closed:
            raise UsageError(
                f"cannot register a handler for {event_type}: this registry is in use by a "
                "Pipeline; register every handler before passing it as Pipeline(handlers=...)"
            )
        if not callable(handler):
            raise TypeError(f"a handler must be callable, not {type(handler).__name__}")
        if event_type not in _HANDLED:
            raise UsageError(
                f"cannot register a handler for {event_type!r}: no AG-UI 1.1 event has that "
                f"type{did_you_mean(str(event_type), _HANDLED, loosely=True)}, and an event "
                "of a type the protocol does not describe is dropped before delivery "
                "(/spec/1.1/basic/processing), so the handler would never be called"
            )
        self.by_type[event_type] = (*self.by_type.get(event_type, ()), handler)

    # One overload per event type, so that a handler typed with its event's
    # TypedDict passes a type checker, and one typed with another does not.
    @overload
    def on(
        self, event_type: Literal["TEXT_MESSAGE_START", EventType.TEXT_MESSAGE_START]
    ) -> Register[TextMessageStartEvent]: ...
    @overload
    def on(
        self, event_type: Literal["TEXT_MESSAGE_CONTENT", EventType.TEXT_MESSAGE_CONTENT]
    ) -> Register[TextMessageContentEvent]: ...
    @overload
    def on(
        self, event_type: Literal["TEXT_MESSAGE_END", EventType.TEXT_MESSAGE_END]
    ) -> Register[TextMessageEndEvent]: ...
    @overload
    def on(
        self, event_type: Literal["TEXT_MESSAGE_CHUNK", EventType.TEXT_MESSAGE_CHUNK]
    ) -> Register[TextMessageChunkEvent]: ...
    @overload
    def on(
        self, event_type: Literal["TOOL_CALL_START", EventType.TOOL_CALL_START]
    ) -> Register[ToolCallStartEvent]: ...
    @overload
    def on(
        self, event_type: Literal["TOOL_CALL_ARGS", EventType.TOOL_CALL_ARGS]
    ) -> Register[ToolCallArgsEvent]: ...
    @overload
    def on(
        self, event_type: Literal["TOOL_CALL_END", EventType.TOOL_CALL_END]
    ) -> Register[ToolCallEndEvent]: ...
    @overload
    def on(
        self, event_type: Literal["TOOL_CALL_CHUNK", EventType.TOOL_CALL_CHUNK]
    ) -> Register[ToolCallChunkEvent]: ...
    @overload
    def on(
        self, event_type: Literal["TOOL_CALL_RESULT", EventType.TOOL_CALL_RESULT]
    ) -> Register[ToolCallResultEvent]: ...
    @overload
    def on(
        self, event_type: Literal["STATE_SNAPSHOT", EventType.STATE_SNAPSHOT]
    ) -> Register[StateSnapshotEvent]: ...
    @overload
    def on(
        self, event_type: Literal["STATE_DELTA", EventType.STATE_DELTA]
    ) -> Register[StateDeltaEvent]: ...
    @overload
    def on(
        self, event_type: Literal["MESSAGES_SNAPSHOT", EventType.MESSAGES_SNAPSHOT]
    ) -> Register[MessagesSnapshotEvent]: ...
    @overload
    def on(
        self, event_type: Literal["ACTIVITY_SNAPSHOT", EventType.ACTIVITY_SNAPSHOT]
    ) -> Register[ActivitySnapshotEvent]: ...
    @overload
    def on(
        self, event_type: Literal["ACTIVITY_DELTA", EventType.ACTIVITY_DELTA]
    ) -> Register[ActivityDeltaEvent]: ...
    @overload
    def on(self, event_type: Literal["RAW", EventType.RAW]) -> Register[RawEvent]: ...
    @overload
    def on(self, event_type: Literal["CUSTOM", EventType.CUSTOM]) -> Register[CustomEvent]: ...
    @overload
    def on(
        self, event_type: Literal["RUN_STARTED", EventType.RUN_STARTED]
    ) -> Register[RunStartedEvent]: ...
    @overload
    def on(
        self, event_type: Literal["RUN_FINISHED", EventType.RUN_FINISHED]
    ) -> Register[RunFinishedEvent]: ...
    @overload
    def on(
        self, event_type: Literal["RUN_ERROR", EventType.RUN_ERROR]
    ) -> Register[RunErrorEvent]: ...
    @overload
    def on(
        self, event_type: Literal["STEP_STARTED", EventType.STEP_STARTED]
    ) -> Register[StepStartedEvent]: ...
    @overload
    def on(
        self, event_type: Literal["STEP_FINISHED", EventType.STEP_FINISHED]
    ) -> Register[StepFinishedEvent]: ...
    @overload
    def on(
        self, event_type: Literal["REASONING_START", EventType.REASONING_START]
    ) -> Register[ReasoningStartEvent]: ...
    @overload
    def on(
        self, event_type: Literal["REASONING_MESSAGE_START", EventType.REASONING_MESSAGE_START]
    ) -> Register[ReasoningMessageStartEvent]: ...
    @overload
    def on(
        self, event_type: Literal["REASONING_MESSAGE_CONTENT", EventType.REASONING_MESSAGE_CONTENT]
    ) -> Register[ReasoningMessageContentEvent]: ...
    @overload
    def on(
        self, event_type: Literal["REASONING_MESSAGE_END", EventType.REASONING_MESSAGE_END]
    ) -> Register[ReasoningMessageEndEvent]: ...
    @overload
    def on(
        self, event_type: Literal["REASONING_MESSAGE_CHUNK", EventType.REASONING_MESSAGE_CHUNK]
    ) -> Register[ReasoningMessageChunkEvent]: ...
    @overload
    def on(
        self, event_type: Literal["REASONING_END", EventType.REASONING_END]
    ) -> Register[ReasoningEndEvent]: ...
    @overload
    def on(
        self, event_type: Literal["REASONING_ENCRYPTED_VALUE", EventType.REASONING_ENCRYPTED_VALUE]
    ) -> Register[ReasoningEncryptedValueEvent]: ...
    @overload
    def on(
        self, event_type: Literal["SUBAGENT_STARTED", EventType.SUBAGENT_STARTED]
    ) -> Register[SubagentStartedEvent]: ...
    @overload
    def on(
        self, event_type: Literal["SUBAGENT_FINISHED", EventType.SUBAGENT_FINISHED]
    ) -> Register[SubagentFinishedEvent]: ...
    @overload
    def on(
        self, event_type: Literal["SUBAGENT_ERROR", EventType.SUBAGENT_ERROR]
    ) -> Register[SubagentErrorEvent]: ...
    @overload
    def on(self, event_type: Literal["*"]) -> Register[AnyEvent]: ...
    @overload
    def on(self, event_type: EventType) -> Register[Any]: ...
    @overload
    def on(self, event_type: HandledType, handler: H) -> H: ...
    @overload
    def on(self, event_type: EventType, handler: H) -> H: ...

    def on(self, event_type: str, handler: H | None = None) -> H | Callable[[H], H]:
        """Register ``handler`` for ``event_type`` (``"*"``: every event); usable as a decorator.

        A name that is no event type is refused, by a type checker (the overloads take
        only the protocol's names) and at run time (:class:`~agui_pipeline.UsageError`,
        with the name it most likely misspells); :meth:`add` takes any ``str``.
        """
        if handler is not None:
            self.add(event_type, handler)
            return handler

        def register(function: H) -> H:
            self.add(event_type, function)
            return function

        return register


# -- sinks ---------------------------------------------------------------------


class Sink(Protocol):
    """Receives each delivered batch, in stream order."""

    async def write(self, events: Sequence[AnyEvent]) -> None: ...


def encode_sse(events: Iterable[Mapping[str, Any]]) -> bytes:
    """Frames as the HTTP binding writes them: one ``data:`` line per event, a blank line after.

    ``/spec/1.1/basic/transports/http-sse``: each SSE event's data is exactly
    one protocol event as a JSON object, framed with LF. Compact JSON has no
    raw newline, so one ``data:`` line always holds the whole event.
    """
    return b"".join([b"data: " + orjson.dumps(event) + b"\n\n" for event in events])


def encode_json_lines(events: Iterable[Mapping[str, Any]]) -> bytes:
    """One compact JSON object per line."""
    return b"".join([orjson.dumps(event) + b"\n" for event in events])


def encode_proto(events: Iterable[Mapping[str, Any]]) -> bytes:
    """Frames as the HTTP + Protobuf binding writes them (needs the ``proto`` extra).

    ``/spec/1.1/basic/transports/http-protobuf``: a 4-byte big-endian length,
    then one encoded event; a member the wire schema does not model is not sent.
    """
    from agui_pipeline._proto.codec import encode_frames

    return encode_frames(events)


Target = Any
"""Where a sink writes: an object with an async ``send(bytes)`` (an anyio byte
stream), an object with ``write(bytes)`` (a binary file, sync or async), or a
callable taking the bytes (sync or async)."""


class EncodingSink:
    """Re-encodes each delivered batch and writes it to a target in one write."""

    def __init__(
        self, target: Target, encode: Callable[[Iterable[Mapping[str, Any]]], bytes]
    ) -> None:
        self._encode = encode
        write = getattr(target, "send", None) or getattr(target, "write", None) or target
        if not callable(write):
            raise TypeError(
                "a sink target needs send(), write() or to be callable; "
                f"got {type(target).__name__}"
            )
        self._write: Callable[[bytes], Any] = write

    async def write(self, events: Sequence[AnyEvent]) -> None:
        result = self._write(self._encode(events))
        if inspect.isawaitable(result):
            await result


class SseSink(EncodingSink):
    """Writes delivered events as SSE frames (``text/event-stream``), e.g. to a browser."""

    def __init__(self, target: Target) -> None:
        super().__init__(target, encode_sse)


class ProtoSink(EncodingSink):
    """Writes delivered events as protobuf frames (``application/vnd.ag-ui.event+proto``)."""

    def __init__(self, target: Target) -> None:
        super().__init__(target, encode_proto)


class JsonLinesSink(EncodingSink):
    """Writes delivered events as JSON lines, e.g. to a log file."""

    def __init__(self, target: Target) -> None:
        super().__init__(target, encode_json_lines)
