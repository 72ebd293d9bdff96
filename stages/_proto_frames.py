"""The HTTP + Protobuf framing, the parse stage's reader for ``application/vnd.ag-ui.event+proto``.

``/spec/1.1/basic/transports/http-protobuf`` ("Framing"): each frame is a
4-byte unsigned big-endian length and then exactly that many bytes of one
encoded event; frames abut, and may be split across chunks or packed several
to a chunk. What each kind of bad frame is:

- a body that ends mid-frame: a truncated run — a warning, the partial frame
  discarded, the stream judged as it stands;
- a frame that does not decode as one event: fatal, with the frame's index —
  a known field whose bytes are not its type (a wrong wire type) included;
- an Event with no arm this build knows — an arm it predates, or none at all
  (an empty frame, which ``@ag-ui/proto`` 1.0.0 writes for an event type it
  lacks): dropped with a warning, as enforce drops an unknown type on SSE
  (``/spec/1.1/basic/processing``: it has no type string to hand on);
- a NaN or infinite double: fatal, ``parse.number-range`` with its pointer,
  the verdict SSE gives ``1e999`` (JSON has no such number);
- a length over ``limits.max_frame_bytes``: fatal before its bytes are
  buffered, so a hostile length cannot exhaust memory.

Events leave as the JSON dicts the SSE path yields (:mod:`agui_pipeline._proto.codec`); judging
them is for the later stages, as on every transport.
"""

from __future__ import annotations

from math import isnan
from typing import ClassVar

from agui_pipeline._proto.codec import (
    DecodeError,
    FrameInvalid,
    NonFinite,
    TooManyEntries,
    UnknownArm,
    decode,
)
from agui_pipeline.batch import Batch, Event, empty_batch
from agui_pipeline.catalog import (
    LIMIT_FRAME_ENTRIES,
    LIMIT_FRAME_SIZE,
    PARSE_NUMBER_RANGE,
    PARSE_PROTO_FRAME,
    PARSE_PROTO_INCOMPLETE_FRAME,
    PARSE_PROTO_UNKNOWN_ARM,
    Message,
)
from agui_pipeline.errors import StreamRejected
from agui_pipeline.stage import Decoder, StreamContext, reject_after

HEADER = 4
"""Bytes of a frame's length header."""


class ProtoFrames(Decoder):
    """Length-prefixed protobuf frames in, event dicts out."""

    name: ClassVar[str] = "parse"

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)
        self._buffer = bytearray()
        self._next_frame = 0  # index of the next frame to be read
        self._max_frame = ctx.limits.max_frame_bytes
        self._max_entries = ctx.limits.max_frame_entries
        ctx.transport = ctx.transport or "proto"

    def feed(self, chunk: bytes) -> Batch:
        buffer = self._buffer
        buffer += chunk
        events: list[Event] = []
        indices: list[int] = []
        start, size = 0, len(buffer)
        while size - start >= HEADER:
            length = int.from_bytes(buffer[start : start + HEADER], "big")
            if length > self._max_frame:
                raise self._fail(
                    LIMIT_FRAME_SIZE("proto", size=length, limit=self._max_frame),
                    events,
                    indices,
                )
            end = start + HEADER + length
            if end > size:
                break  # the rest of this frame is in a later chunk
            self._read(bytes(buffer[start + HEADER : end]), events, indices)
            start = end
        del buffer[:start]  # once per chunk: cost per frame does not grow with the chunk
        return self._batch(events, indices)

    def finish(self) -> Batch:
        if self._buffer:
            held = len(self._buffer)
            self._buffer.clear()
            self.ctx.report(
                PARSE_PROTO_INCOMPLETE_FRAME(next_frame=self._next_frame, held=held),
                event_index=self._next_frame,
            )
        return empty_batch()

    def _read(self, payload: bytes, events: list[Event], indices: list[int]) -> None:
        index = self._next_frame
        self._next_frame += 1
        try:
            event = decode(payload, lambda path: self._dropped_part(index, path), self._max_entries)
        except TooManyEntries as error:
            raise self._fail(
                LIMIT_FRAME_ENTRIES(
                    index=index, size=len(payload), entries=error, limit=error.limit
                ),
                events,
                indices,
                at=index,
            ) from None
        except UnknownArm as unknown:
            self.ctx.report(_no_known_arm(index, unknown), event_index=index)
            return
        except NonFinite as error:
            raise self._fail(
                _non_finite(error),
                events,
                indices,
                at=index,
                pointer=error.pointer,
            ) from None
        except (DecodeError, FrameInvalid, RecursionError) as error:
            raise self._fail(
                PARSE_PROTO_FRAME(index=index, size=len(payload), detail=error)
                if isinstance(error, FrameInvalid)
                else PARSE_PROTO_FRAME("not-event", index=index, size=len(payload), error=error),
                events,
                indices,
                at=index,
            ) from None
        events.append(event)
        indices.append(index)

    def _dropped_part(self, index: int, path: str) -> None:
        self.ctx.report(
            PARSE_PROTO_UNKNOWN_ARM(path=path),
            event_index=index,
            pointer=path,
        )

    def _fail(
        self,
        message: Message,
        events: list[Event],
        indices: list[int],
        at: int | None = None,
        pointer: str | None = None,
    ) -> StreamRejected:
        """A rejection at frame ``at`` (default: the next), the events before it kept."""
        rejection = StreamRejected(
            message, event_index=self._next_frame if at is None else at, pointer=pointer
        )
        return reject_after(self._batch(events, indices), rejection)

    def _batch(self, events: list[Event], indices: list[int]) -> Batch:
        self.ctx.counters.read += len(events)
        return Batch(events, indices, [event["type"] for event in events], objects=True)


def _no_known_arm(index: int, unknown: UnknownArm) -> Message:
    if not unknown.numbers:
        return PARSE_PROTO_UNKNOWN_ARM("empty-frame", index=index)
    form = "envelope-arms" if len(unknown.numbers) > 1 else "envelope-arm"
    return PARSE_PROTO_UNKNOWN_ARM(form, index=index, arms=", ".join(map(str, unknown.numbers)))


def _non_finite(error: NonFinite) -> Message:
    """SSE's verdict on a number past double range (``stages.parse``), for a double."""
    where = error.pointer or "/"
    if isnan(error.number):
        return PARSE_NUMBER_RANGE("proto-nan", at=where)
    found = "Infinity" if error.number > 0 else "-Infinity"
    return PARSE_NUMBER_RANGE("proto-infinite", at=where, found=found)
