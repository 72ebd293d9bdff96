"""parse — framing and JSON decoding: bytes in, event dicts out.

Turning bytes into events is the reader's whole job, and the only judgement
it makes: a frame whose bytes are not a JSON object is fatal, with the frame's
index. Whether the object is a recognisable event is enforce's question, so
every framing reaches the same verdict on the same event
(``/spec/1.1/basic/processing``, "Every transport answers the same way").

Framings, detected from the first non-blank byte unless forced:

- SSE (``/spec/1.1/basic/transports/http-sse``): ``data:`` lines, several
  joined with ``\\n``; other fields and ``:`` comments ignored; a blank line
  ends a frame. Producers must use LF; CR and CRLF are tolerated.
- JSON lines: one object per line.
- A JSON array document: read whole, then each element is a frame.
- Protobuf (``/spec/1.1/basic/transports/http-protobuf``): length-prefixed
  binary frames, never detected — chosen by ``framing="proto"`` or by the HTTP
  client from the response's ``Content-Type``; read by
  :mod:`agui_pipeline._proto.framing` (the ``proto`` extra).

Chunk boundaries may fall anywhere, including inside a multi-byte UTF-8
character: bytes are only decoded once a whole frame is in hand.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress, count, repeat
from operator import lt
from typing import Any, ClassVar

import orjson
from agui_pipeline._json import describe
from agui_pipeline._proto import TRANSPORT as PROTO_TRANSPORT
from agui_pipeline.catalog import (
    LIMIT_DEPTH,
    LIMIT_FRAME_SIZE,
    PARSE_INCOMPLETE_FRAME,
    PARSE_NOT_ARRAY,
    PARSE_NOT_JSON,
    PARSE_NOT_OBJECT,
    PARSE_UNKNOWN_FRAMING,
)
from agui_pipeline.errors import StreamRejected
from agui_pipeline.stage import (
    Batch,
    Decoder,
    Event,
    StreamContext,
    empty_batch,
    read_types,
    reject_after,
)

FRAMINGS = ("sse", "jsonl", "json", "proto")
_BLANK = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"
_loads = orjson.loads
_DecodeError = orjson.JSONDecodeError


class Parse(Decoder):
    """The default decoder: SSE, JSON lines or a JSON array document."""

    name: ClassVar[str] = "parse"

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)
        self.framing: str | None = ctx.options.framing
        if self.framing is not None and self.framing not in FRAMINGS:
            raise ValueError(f"framing must be one of {FRAMINGS}, not {self.framing!r}")
        self._buffer = bytearray()
        self._scanned = 0  # bytes of _buffer already searched for a frame boundary
        self._next_index = 0  # index of the next frame to be decoded
        self._skip_lf = False  # the previous chunk ended in CR: a leading LF is its CRLF pair
        self._started = False  # the BOM and the framing have been dealt with
        self._head = b""  # bytes held back until the framing can be told
        self._max_frame = ctx.limits.max_frame_bytes
        self._depth_bytes = 2 * ctx.limits.max_depth
        if self.framing is not None:
            ctx.transport = self.framing
        self._proto: Decoder | None = None
        if self.framing == "proto" or ctx.transport == PROTO_TRANSPORT:
            from agui_pipeline._proto.framing import ProtoFrames  # needs the proto extra

            self._proto = ProtoFrames(ctx)

    # -- public -------------------------------------------------------------

    def feed(self, chunk: bytes) -> Batch:
        if self._proto is not None:
            return self._proto.feed(chunk)
        if not self._started:
            chunk = self._start(chunk)
            if not chunk:
                return empty_batch()
        if self.framing == "sse":
            if b"\r" in chunk or self._skip_lf:
                chunk = self._normalise_newlines(chunk)
            return self._feed_delimited(chunk, b"\n\n", _sse_payloads)
        if self.framing == "jsonl":
            return self._feed_delimited(chunk, b"\n", _jsonl_payloads)
        return self._feed_document(chunk)

    def finish(self) -> Batch:
        if self._proto is not None:
            return self._proto.finish()
        if not self._started:
            rest = self._start(b"", at_end=True)
            if not rest:
                return empty_batch()
            self._buffer += rest
        rest = bytes(self._buffer)
        self._buffer.clear()
        if self.framing == "json":
            return self._decode_document(rest)
        if not rest.strip(_BLANK):
            return empty_batch()
        if self.framing == "jsonl":
            # The last line needs no newline: a JSON value ends where it ends.
            return self._decode([rest])
        if _sse_payloads(rest):
            # An SSE event is dispatched only at a blank line (the SSE grammar):
            # a stream cut before it lost that frame, and says so.
            self.ctx.report(
                PARSE_INCOMPLETE_FRAME,
                f"the stream ended inside an SSE event ({len(rest)} bytes with no blank line "
                "after them); the partial frame was not decoded",
                event_index=self._next_index,
            )
        return empty_batch()

    # -- detection ----------------------------------------------------------

    def _start(self, chunk: bytes, at_end: bool = False) -> bytes:
        """Strip a leading BOM and detect the framing; ``b""`` while undecided."""
        data = self._head + chunk
        if not at_end and len(data) < len(_BOM) and _BOM.startswith(data):
            self._head = data
            return b""
        if data.startswith(_BOM):
            data = data[len(_BOM) :]
        if self.framing is None:
            if not data.strip(_BLANK):
                self._head = data  # only blanks so far: wait for a telling byte
                return b""
            self._detect(data)
        self._head = b""
        self._started = True
        return data

    def _detect(self, data: bytes) -> None:
        first = data.lstrip(_BLANK)[:1]
        if first == b"{":
            self.framing = "jsonl"
        elif first == b"[":
            self.framing = "json"
        elif first == b":" or first.isalpha():
            self.framing = "sse"
        else:
            raise StreamRejected(
                PARSE_UNKNOWN_FRAMING,
                f"expected an SSE field (such as 'data:'), '{{' (JSON lines) or '[' "
                f"(a JSON array) as the first byte, found {first!r}",
                event_index=0,
            )
        self.ctx.transport = self.ctx.transport or self.framing

    # -- delimited framings (SSE, JSON lines) --------------------------------

    def _feed_delimited(
        self, chunk: bytes, boundary: bytes, payloads_of: Callable[[bytes], list[bytes]]
    ) -> Batch:
        buffer = self._buffer
        buffer += chunk
        end = buffer.rfind(boundary, max(0, self._scanned - len(boundary) + 1))
        if end < 0:
            self._scanned = len(buffer)
            if len(buffer) > self._max_frame:
                raise self._frame_too_large(len(buffer))
            return empty_batch()
        with memoryview(buffer) as view:  # one copy out (a bytearray slice would be a second)
            complete = bytes(view[:end])
        del buffer[: end + len(boundary)]
        self._scanned = len(buffer)
        if len(buffer) > self._max_frame:
            raise self._frame_too_large(len(buffer))
        return self._decode(payloads_of(complete))

    def _frame_too_large(self, size: int) -> StreamRejected:
        return StreamRejected(
            LIMIT_FRAME_SIZE,
            f"a frame of more than {size} bytes exceeds the limit max_frame_bytes="
            f"{self._max_frame}",
            event_index=self._next_index,
        )

    def _normalise_newlines(self, chunk: bytes) -> bytes:
        """CRLF and lone CR become LF; a CR at a chunk's end may pair with the next LF."""
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = chunk[-1:] == b"\r"
        return chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

    # -- JSON array document ---------------------------------------------------

    def _feed_document(self, chunk: bytes) -> Batch:
        self._buffer += chunk
        if len(self._buffer) > self.ctx.limits.max_document_bytes:
            raise StreamRejected(
                LIMIT_FRAME_SIZE,
                f"a JSON array document of more than {len(self._buffer)} bytes exceeds the "
                f"limit max_document_bytes={self.ctx.limits.max_document_bytes}",
                event_index=0,
            )
        return empty_batch()

    def _decode_document(self, data: bytes) -> Batch:
        try:
            document = _loads(data)
        except _DecodeError as exc:
            raise StreamRejected(
                PARSE_NOT_JSON,
                f"expected a JSON array of event objects; the document does not decode: {exc}",
                event_index=0,
            ) from None
        if type(document) is not list:
            raise StreamRejected(
                PARSE_NOT_ARRAY,
                f"expected a JSON array of event objects, found {describe(document)}",
                event_index=0,
            )
        if _depth(document) - 1 > self.ctx.limits.max_depth:
            self._reject_deep_elements(document)
        return self._accept(document)

    def _reject_deep_elements(self, document: list[Any]) -> None:
        for position, event in enumerate(document):
            problem = self._too_deep(event)
            if problem is not None:
                raise self._rejected_at(problem, document, position)

    # -- decoding ---------------------------------------------------------------

    def _decode(self, payloads: list[bytes]) -> Batch:
        try:
            events = list(map(_loads, payloads))
        except _DecodeError:
            events = self._decode_until_failure(payloads)
        # A value needs two bytes per level of nesting: frames shorter than that
        # cannot break the depth limit, and most frames are (one C-level pass).
        lengths = list(map(len, payloads))
        if lengths and max(lengths) > self._depth_bytes:
            self._check_sizes(payloads, lengths, events)
        return self._accept(events)

    def _check_sizes(self, payloads: list[bytes], lengths: list[int], events: list[Any]) -> None:
        """The per-frame limits, for the few frames long enough to matter."""
        if len(payloads) != len(events):  # blank frames were skipped while decoding
            payloads = [payload for payload in payloads if not payload.isspace()]
            lengths = list(map(len, payloads))
        limits = self.ctx.limits
        threshold = self._depth_bytes
        # The positions of the long frames, found in C (compress keeps those whose test is true;
        # operator.lt is a fast call, a bound ``threshold.__lt__`` is not).
        long_ones = list(compress(count(), map(lt, repeat(threshold), lengths)))
        for position in long_ones:
            payload = payloads[position]
            problem = None
            if len(payload) > limits.max_frame_bytes:
                problem = self._frame_too_large(len(payload))
            elif payload.count(b"[") + payload.count(b"{") > limits.max_depth:
                problem = self._too_deep(events[position])
            if problem is not None:
                raise self._rejected_at(problem, events, position)

    def _too_deep(self, event: Any) -> StreamRejected | None:
        depth, limit = _depth(event), self.ctx.limits.max_depth
        if depth <= limit:
            return None
        return StreamRejected(
            LIMIT_DEPTH, f"an event nested {depth} levels deep exceeds the limit max_depth={limit}"
        )

    def _rejected_at(
        self, problem: StreamRejected, events: list[Any], position: int
    ) -> StreamRejected:
        """``problem`` placed at frame ``position`` of ``events``, the frames before it kept."""
        problem.event_index = self._next_index + position
        return reject_after(self._accept(events[:position]), problem)

    def _decode_until_failure(self, payloads: list[bytes]) -> list[Any]:
        """Slow path: find the frame that failed, keeping the frames before it."""
        events: list[Any] = []
        for payload in payloads:
            if payload.isspace():
                continue  # a blank JSON line, or a data field of blanks
            try:
                events.append(_loads(payload))
            except _DecodeError as exc:
                excerpt = payload[:60].decode("utf-8", "replace")
                rejection = StreamRejected(
                    PARSE_NOT_JSON,
                    f"expected a JSON object in the frame; its bytes do not decode ({exc}): "
                    f"{excerpt!r}",
                )
                raise self._rejected_at(rejection, events, len(events)) from None
        return events

    def _accept(self, values: list[Any]) -> Batch:
        """Check every frame decoded to an object and number the frames."""
        start = self._next_index
        # Reading each frame's type (for Batch.types) also proves every frame is an
        # object: nothing else orjson makes can be indexed by a string.
        types = read_types(values)
        # No types: a frame with no type (enforce's to judge), or one not an object; one
        # pass in C tells which, the loop finds the culprit.
        if types is None and set(map(type, values)) - {dict}:
            for position, value in enumerate(values):
                if type(value) is not dict:
                    rejection = StreamRejected(
                        PARSE_NOT_OBJECT,
                        f"expected a JSON object (one event) in the frame, found {describe(value)}",
                    )
                    raise self._rejected_at(rejection, values, position)
        events: list[Event] = values
        self._next_index = start + len(events)
        self.ctx.counters.read += len(events)
        return Batch(events, list(range(start, self._next_index)), types, objects=True)


def _jsonl_payloads(region: bytes) -> list[bytes]:
    """The non-empty lines of ``region`` (whole lines, the newline after the last one cut)."""
    # Whitespace-only lines fail to decode and are skipped on the slow path.
    return list(filter(None, region.split(b"\n")))


def _sse_payloads(region: bytes) -> list[bytes]:
    """The ``data`` of each SSE event in ``region`` (whole events, the last blank line cut)."""
    # Fast path, all in C: when the region opens with "data: " and no newline is left
    # once it is split at "\n\ndata: ", every event is one "data: " line and nothing else.
    # (The newline test joins the pieces and lets memchr look: bytes.count(b"\n") is a
    # byte-at-a-time loop, several times slower.)
    if region[:6] == b"data: ":
        payloads = region.split(b"\n\ndata: ")
        payloads[0] = payloads[0][6:]
        if b"\n" not in b"".join(payloads):
            return payloads
    return _sse_block_payloads(region.split(b"\n\n"))


def _sse_block_payloads(blocks: list[bytes]) -> list[bytes]:
    """The ``data`` of each SSE event; a block holds no blank line inside."""
    payloads: list[bytes] = []
    append = payloads.append
    for block in blocks:
        # Fast path: the whole event is one "data: ..." line.
        if block[:5] == b"data:" and b"\n" not in block:
            append(block[6:] if block[5:6] == b" " else block[5:])
        elif block:
            data = _sse_event_data(block)
            if data is not None:
                append(data)
    return payloads


def _sse_event_data(block: bytes) -> bytes | None:
    """The SSE field grammar for one event (WHATWG HTML, "Interpreting an event stream")."""
    data: list[bytes] = []
    for line in block.split(b"\n"):
        if not line or line[:1] == b":":
            continue  # a leading blank (dispatches nothing) or a comment
        name, colon, value = line.partition(b":")
        if name != b"data":
            continue  # event:, id:, retry: and unknown fields carry nothing for AG-UI
        if colon and value[:1] == b" ":
            value = value[1:]
        data.append(value)
    if not data:
        return None
    return b"\n".join(data)


def _depth(value: Any) -> int:
    """Nesting depth of a decoded JSON value (iterative: no recursion on hostile input)."""
    deepest = 0
    pending = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if type(item) is dict:
            item = item.values()
        elif type(item) is not list:
            continue
        deepest = max(deepest, level)
        pending.extend((child, level + 1) for child in item)
    return deepest
