"""What dispatch hands delivered events to: handlers and sinks.

Handlers are configuration, registered once and read by the dispatch stage
when each stream starts, so one :class:`~agui_pipeline.Pipeline` can run many
streams with the same handlers. A sink re-encodes what was delivered — SSE
frames as the HTTP binding writes them, or JSON lines — onto a byte stream
or a file, which is what lets a pipeline sit in a gateway between an agent
and a browser.

Everything here is awaited in the reading task: a slow handler or sink slows
the read, and nothing is buffered on its behalf.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, overload

import orjson

Event = dict[str, Any]
Handler = Callable[[Event], Awaitable[None] | None]
"""A sync or async callable taking one delivered event."""
HandlerMap = Mapping[str, Handler | Sequence[Handler]]
EVERY = "*"
"""The event type to register under for a handler that sees every event."""

H = TypeVar("H", bound=Handler)


class Handlers:
    """A registry of handlers by event type; ``"*"`` sees every event.

    ::

        handlers = Handlers()

        @handlers.on("TEXT_MESSAGE_CONTENT")
        async def show(event): ...

        pipeline = Pipeline(handlers=handlers)   # or handlers={"RUN_ERROR": alert}

    For each delivered event, its type's handlers run first, in registration
    order, then the ``"*"`` handlers. Register before running: each stream
    reads the registry as it starts.
    """

    def __init__(self, mapping: HandlerMap | None = None) -> None:
        self.by_type: dict[str, tuple[Handler, ...]] = {}
        for event_type, handlers in (mapping or {}).items():
            for handler in [handlers] if callable(handlers) else handlers:
                self.add(event_type, handler)

    @classmethod
    def of(cls, value: Handlers | HandlerMap | None) -> Handlers:
        """The registry for an ``Options.handlers`` value (a registry or a mapping)."""
        return value if isinstance(value, Handlers) else cls(value)

    def add(self, event_type: str, handler: Handler) -> None:
        if not callable(handler):
            raise TypeError(f"a handler must be callable, not {type(handler).__name__}")
        self.by_type[event_type] = (*self.by_type.get(event_type, ()), handler)

    @overload
    def on(self, event_type: str) -> Callable[[H], H]: ...
    @overload
    def on(self, event_type: str, handler: H) -> H: ...

    def on(self, event_type: str, handler: H | None = None) -> H | Callable[[H], H]:
        """Register ``handler`` for ``event_type`` (``"*"``: every event); usable as a decorator."""
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

    async def write(self, events: Sequence[Event]) -> None: ...


def encode_sse(events: Iterable[Event]) -> bytes:
    """Frames as the HTTP binding writes them: one ``data:`` line per event, a blank line after.

    ``/spec/1.1/basic/transports/http-sse``: each SSE event's data is exactly
    one protocol event as a JSON object, framed with LF. Compact JSON has no
    raw newline, so one ``data:`` line always holds the whole event.
    """
    return b"".join([b"data: " + orjson.dumps(event) + b"\n\n" for event in events])


def encode_json_lines(events: Iterable[Event]) -> bytes:
    """One compact JSON object per line."""
    return b"".join([orjson.dumps(event) + b"\n" for event in events])


def encode_proto(events: Iterable[Event]) -> bytes:
    """Frames as the HTTP + Protobuf binding writes them (needs the ``proto`` extra).

    ``/spec/1.1/basic/transports/http-protobuf``: a 4-byte big-endian length,
    then one encoded event; a member the wire schema does not model is not sent.
    """
    from ._proto.codec import encode_frames

    return encode_frames(events)


Target = Any
"""Where a sink writes: an object with an async ``send(bytes)`` (an anyio byte
stream), an object with ``write(bytes)`` (a binary file, sync or async), or a
callable taking the bytes (sync or async)."""


class EncodingSink:
    """Re-encodes each delivered batch and writes it to a target in one write."""

    def __init__(self, target: Target, encode: Callable[[Iterable[Event]], bytes]) -> None:
        self._encode = encode
        write = getattr(target, "send", None) or getattr(target, "write", None) or target
        if not callable(write):
            raise TypeError(
                "a sink target needs send(), write() or to be callable; "
                f"got {type(target).__name__}"
            )
        self._write: Callable[[bytes], Any] = write

    async def write(self, events: Sequence[Event]) -> None:
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
