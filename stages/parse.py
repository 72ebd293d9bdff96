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
  :mod:`agui_pipeline.stages._proto_frames` (the ``proto`` extra).

Chunk boundaries may fall anywhere, including inside a multi-byte UTF-8
character: bytes are only decoded once a whole frame is in hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from itertools import compress, count, repeat
from operator import lt
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

import orjson
from agui_pipeline import _cores
from agui_pipeline._json import describe, join_pointer, shown, walk
from agui_pipeline._proto import TRANSPORT as PROTO_TRANSPORT
from agui_pipeline.batch import Batch, Event, empty_batch, read_types
from agui_pipeline.catalog import (
    LIMIT_DEPTH,
    LIMIT_FRAME_SIZE,
    PARSE_INCOMPLETE_FRAME,
    PARSE_INTEGER_PRECISION,
    PARSE_NOT_ARRAY,
    PARSE_NOT_JSON,
    PARSE_NOT_OBJECT,
    PARSE_NUMBER_RANGE,
    PARSE_UNKNOWN_FRAMING,
    PARSE_UNPAIRED_SURROGATE,
)
from agui_pipeline.errors import StreamRejected
from agui_pipeline.stage import Decoder, StreamContext, reject_after

if TYPE_CHECKING:
    from agui_pipeline._native import Framer

FRAMINGS = ("sse", "jsonl", "json", "proto")
_BLANK = b" \t\r\n"
BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte order mark, stripped from the start of a stream (and by judge mode)."""
_loads = orjson.loads
_DecodeError = orjson.JSONDecodeError


def _not_utf8_at(payload: bytes) -> int | None:
    """The offset of the first byte of ``payload`` that is not UTF-8, if any (RFC 8259 §8.1:
    JSON text exchanged between systems is UTF-8)."""
    try:
        payload.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start
    return None


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
        self._head = bytearray()  # bytes held back until the framing can be told
        self._past_bom = False  # the first bytes have been checked for a BOM
        self._max_frame = ctx.limits.max_frame_bytes
        self._max_event = sse_event_bound(self._max_frame)
        self._held_lines = 0  # SSE: bytes of _buffer whose whole lines _held_data counts
        self._held_data: int | None = None  # and their payload's length (None: no data line)
        self._framer: Framer | None = None  # the native core's, once the framing is known
        # A value needs two bytes per level of nesting: a frame no longer than twice
        # max_depth, nor than max_frame_bytes, breaks no per-frame limit.
        self._long_frame = min(2 * ctx.limits.max_depth, self._max_frame)
        self._integers = IntegerSearch(ctx)
        """The search parse runs itself: every read when no enforce stage runs one, and
        the small reads when one does."""
        self.handover: IntegerSearch | None = None
        """Enforce's search, which parse hands each read's frames to: set by the engine
        when the stream has an enforce stage (``core.build``). ``None``: parse searches
        every read itself."""
        if self.framing is not None:
            ctx.transport = self.framing
        self._proto: Decoder | None = None
        if self.framing == "proto" or ctx.transport == PROTO_TRANSPORT:
            from agui_pipeline.stages._proto_frames import ProtoFrames  # needs the proto extra

            self._proto = ProtoFrames(ctx)

    # -- public -------------------------------------------------------------

    def feed(self, chunk: bytes) -> Batch:
        self.ctx.bytes_read += len(chunk)
        if self._proto is not None:
            return self._proto.feed(chunk)
        if not self._started:
            chunk = self._start(chunk)
            if not chunk:
                return empty_batch()
            self._framer = native_framer(self.framing, self._max_frame)
        framer = self._framer
        if (
            self.framing == "sse"
            and chunk[:6] == b"data: "
            and (framer.idle if framer is not None else not self._buffer and not self._skip_lf)
        ):
            one = self._one_event(chunk)
            if one is not None:
                return one
        if framer is not None:
            return self._feed_framed(framer, chunk)
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
        rest = bytes(self._buffer) if self._framer is None else self._framer.take_rest()
        self._buffer.clear()
        if self.framing == "json":
            return self._decode_document(rest)
        if not rest.strip(_BLANK):
            return empty_batch()
        if self.framing == "jsonl":
            # The last line needs no newline: a JSON value ends where it ends.
            return self._decode([rest], rest)
        if _sse_payloads(rest):
            # An SSE event is dispatched only at a blank line (the SSE grammar):
            # a stream cut before it lost that frame, and says so.
            self.ctx.report(
                PARSE_INCOMPLETE_FRAME(rest_count=len(rest)),
                event_index=self._next_index,
            )
        return empty_batch()

    # -- detection ----------------------------------------------------------

    def _start(self, chunk: bytes, at_end: bool = False) -> bytes:
        """Strip a leading BOM and detect the framing; ``b""`` while undecided.

        Blank bytes before the first frame say nothing in any framing, so whole
        blank lines are dropped as they come: only the blanks after the last line
        break wait (they could begin an SSE line or a JSON line), at most as many
        as an SSE event may hold (:func:`sse_event_bound`); once the framing is
        found they count as it counts them, so the verdict does not depend on
        where the reads were cut.
        """
        head = self._head
        head += chunk
        fresh: bytes | bytearray = chunk
        if not self._past_bom:
            if not at_end and len(head) < len(BOM) and BOM.startswith(head):
                return b""
            if head.startswith(BOM):
                del head[: len(BOM)]
            self._past_bom = True
            fresh = head
        if self.framing is None and not fresh.strip(_BLANK):
            line_end = max(fresh.rfind(b"\n"), fresh.rfind(b"\r"))
            if line_end >= 0:  # complete blank lines dispatch nothing: not held
                del head[: len(head) - len(fresh) + line_end + 1]
            if len(head) > self._max_event:  # SSE holds the most; the framing found judges
                raise self._frame_too_large(len(head), as_sent=True)
            return b""
        data = bytes(head)
        head.clear()
        if self.framing is None:
            self._detect(data)
        self._started = True
        return data

    def _detect(self, data: bytes) -> None:
        first = data.lstrip(_BLANK)[:1]
        self.framing = framing_of(first)
        if self.framing is None:
            raise StreamRejected(
                PARSE_UNKNOWN_FRAMING(first=first),
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
            if len(buffer) > self._max_frame:  # the held part can only be over past this
                overflow = self._held_overflow()
                if overflow is not None:
                    raise self._frame_too_large(*overflow)
            return empty_batch()
        with memoryview(buffer) as view:  # one copy out (a bytearray slice would be a second)
            complete = bytes(view[:end])
        del buffer[: end + len(boundary)]
        self._scanned = len(buffer)
        self._held_lines = 0
        if len(buffer) > self._max_frame:
            overflow = self._held_overflow()
            if overflow is not None:
                self._refuse_after(payloads_of(complete), complete, *overflow)
        return self._decode(payloads_of(complete), complete)

    def _held_overflow(self) -> tuple[int, bool] | None:
        """Whether the frame held past the last boundary is already over the limit: the size
        to report and whether it is an SSE event's size as sent; ``None`` while it may not be.

        What is measured is the frame's payload as far as it arrived: a JSON line's bytes, or
        an SSE event's whole ``data`` lines joined with LF and the value so far of a ``data:``
        line still arriving. It never shrinks as bytes arrive and ends as the payload the
        whole frame is measured by (:meth:`_decode`), so the verdict does not depend on where
        the reads were cut. An SSE event's lines that carry nothing (comments, other fields)
        are held too: past :func:`sse_event_bound` bytes as sent, whole or not, it is refused.
        Each line is counted once (``_held_lines``), so a frame trickling in stays linear.
        """
        buffer = self._buffer
        held = len(buffer)
        if self.framing != "sse":
            return held, False
        # As sent: without the LFs around its lines (sse_event_bound).
        sent = len(buffer.strip(b"\n")) if held > self._max_event else held
        if sent > self._max_event:
            return sent, True
        start = self._held_lines
        payload = self._held_data if start else None  # the whole lines counted so far
        last_line = buffer.rfind(b"\n", start)
        if last_line >= 0:
            with memoryview(buffer) as view:
                data = _sse_event_data(bytes(view[start:last_line]))
            if data is not None:
                payload = len(data) if payload is None else payload + 1 + len(data)
            start = self._held_lines = last_line + 1
            self._held_data = payload
        if buffer.startswith(b"data:", start):  # a data line still arriving
            value = held - start - 5 - (buffer[start + 5 : start + 6] == b" ")
            payload = value if payload is None else payload + 1 + value
        if payload is not None and payload > self._max_frame:
            return payload, False
        return None

    def _refuse_after(
        self, payloads: list[bytes], region: bytes, size: int, as_sent: bool, sized: bool = False
    ) -> NoReturn:
        """Decode and keep the whole frames of a read, then refuse the frame after them: as if
        the read had been cut just before it (an earlier frame's fault comes first)."""
        if not payloads:  # the frames were blank lines or comments: nothing to keep
            raise self._frame_too_large(size, as_sent)
        batch = self._decode(payloads, region, sized)
        raise reject_after(batch, self._frame_too_large(size, as_sent))

    def _feed_framed(self, framer: Framer, chunk: bytes) -> Batch:
        """``_feed_delimited`` with the native core's framer (:func:`native_framer`)."""
        framed = framer.feed(chunk)
        if framed is None:
            return empty_batch()
        if len(framed) == 4:  # the frame held after these is over the limit
            self._refuse_after(*framed)
        payloads, region = framed
        return self._decode(payloads, region)

    def _one_event(self, chunk: bytes) -> Batch | None:
        """A read that is one SSE event of one ``data: `` line, whole (a live read):
        its batch, or ``None`` for the general path to take it.

        What the general path does to such a read, without what it does for many frames
        (the buffer, the search for boundaries, the list of frames, the depth pass over
        their lengths): about 30,000 instructions a read. Anything else — a second line,
        a CR, a payload long enough for a per-frame limit to matter, one that is not an
        object with a ``type`` — goes the general way, which judges it.
        """
        enforce = self.handover
        if enforce is not None and enforce.FEWEST_FRAMES < 2:
            return None  # a read of one frame is handed over to enforce (``_decode``)
        end = len(chunk) - 2
        if chunk.find(b"\n", 6) != end or chunk[end:] != b"\n\n" or b"\r" in chunk:
            return None
        payload = chunk[6:end]
        if len(payload) > self._long_frame and (
            len(payload) > self._max_frame
            or payload.count(b"[") + payload.count(b"{") > self.ctx.limits.max_depth
        ):
            return None
        try:
            event = _loads(payload)
            kind = event["type"]
        except (_DecodeError, TypeError, KeyError):
            return None
        index = self._next_index
        self._next_index = index + 1
        self.ctx.counters.read += 1
        batch = Batch([event], [index], [kind], objects=True)
        if payload.translate(_DIGITS_AS_ZERO).find(_LONG_RUN) >= 0:
            self._integers.warn_of_runs(index, [payload])
        return batch

    def _frame_too_large(self, size: int, as_sent: bool = False) -> StreamRejected:
        form = "sse-event" if as_sent else ""
        return StreamRejected(
            LIMIT_FRAME_SIZE(form, size=size, limit=self._max_frame),
            event_index=self._next_index,
        )

    def _normalise_newlines(self, chunk: bytes) -> bytes:
        """CRLF and lone CR become LF; a CR at a chunk's end may pair with the next LF."""
        if not chunk:
            return chunk  # an empty read: a CR before it still waits for its LF
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = chunk[-1:] == b"\r"
        return chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

    # -- JSON array document ---------------------------------------------------

    def _feed_document(self, chunk: bytes) -> Batch:
        self._buffer += chunk
        if len(self._buffer) > self.ctx.limits.max_document_bytes:
            raise StreamRejected(
                LIMIT_FRAME_SIZE(
                    "document", size=len(self._buffer), limit=self.ctx.limits.max_document_bytes
                ),
                event_index=0,
            )
        return empty_batch()

    def _decode_document(self, data: bytes) -> Batch:
        try:
            document = _loads(data)
        except _DecodeError as exc:
            rejection = self._valid_json_refused(data, document=True)
            if rejection is not None:
                raise rejection from None
            raise StreamRejected(
                PARSE_NOT_JSON("document", msg=exc.msg, lineno=exc.lineno, colno=exc.colno),
                event_index=0,
            ) from None
        if type(document) is not list:
            raise StreamRejected(
                PARSE_NOT_ARRAY(document=describe(document)),
                event_index=0,
            )
        if _depth(document) - 1 > self.ctx.limits.max_depth:
            self._reject_deep_elements(document)
        batch = self._accept(document)
        if self._integers.sample.may_hold(data):
            frames = json.loads(data, parse_int=_int_or_infinity)  # exactly, this time
            self._integers.warn(self._next_index - len(batch), enumerate(frames))
        return batch

    def _reject_deep_elements(self, document: list[Any]) -> None:
        for position, event in enumerate(document):
            problem = self._too_deep(event)
            if problem is not None:
                raise self._rejected_at(problem, document, position)

    # -- decoding ---------------------------------------------------------------

    def _decode(self, payloads: list[bytes], region: bytes, sized: bool = False) -> Batch:
        """Decode the frames of ``region`` (the bytes their ``payloads`` were cut from).

        A frame over max_frame_bytes (its payload, blank or not; an SSE event as sent past
        :func:`sse_event_bound`) is refused before it is decoded, the frames before it kept;
        ``sized``: ``payloads`` are those frames, already measured.
        """
        # Most frames are too short to break a per-frame limit (one C-level pass).
        lengths = list(map(len, payloads))
        longest = max(lengths) if lengths else 0
        if not sized and (
            longest > self._max_frame or (len(region) > self._max_event and self.framing == "sse")
        ):
            self._refuse_long_frame(payloads, lengths, region)
        try:
            events = list(map(_loads, payloads))
        except _DecodeError:
            events = self._decode_until_failure(payloads)
        if longest > self._long_frame:
            self._check_depths(payloads, lengths, events)
        batch = self._accept(events)
        enforce = self.handover
        if enforce is None or len(payloads) < enforce.FEWEST_FRAMES:
            if self._integers.sample.may_hold(region):  # search_read, one call fewer
                frames = [payload for payload in payloads if not payload.isspace()]
                self._integers.warn_of_runs(self._next_index - len(events), frames)
        elif events:
            if len(payloads) != len(events):  # blank frames were skipped while decoding
                payloads = [payload for payload in payloads if not payload.isspace()]
            enforce.hold(batch, payloads, region)
        return batch

    def _refuse_long_frame(self, payloads: list[bytes], lengths: list[int], region: bytes) -> None:
        """Refuse the first frame over the limit, if any, once the frames before it are
        decoded: the same frame, at the same index, as the held part's check
        (:meth:`_held_overflow`) refuses when the reads cut it."""
        first = next((p for p, size in enumerate(lengths) if size > self._max_frame), None)
        if self.framing == "sse" and len(region) > self._max_event:
            position = 0  # payloads of the events before this one
            for block in region.split(b"\n\n"):
                if first is not None and position >= first:
                    break
                if len(block) > self._max_event and len(block.strip(b"\n")) > self._max_event:
                    sent = len(block.strip(b"\n"))
                    self._refuse_after(payloads[:position], region, sent, True, True)
                position += _sse_event_data(block) is not None
        if first is not None:
            self._refuse_after(payloads[:first], region, lengths[first], False, True)

    def _check_depths(self, payloads: list[bytes], lengths: list[int], events: list[Any]) -> None:
        """The depth limit, for the few frames long enough to break it."""
        if len(payloads) != len(events):  # blank frames were skipped while decoding
            payloads = [payload for payload in payloads if not payload.isspace()]
            lengths = list(map(len, payloads))
        max_depth = self.ctx.limits.max_depth
        threshold = self._long_frame
        # The positions of the long frames, found in C (compress keeps those whose test is true;
        # operator.lt is a fast call, a bound ``threshold.__lt__`` is not).
        long_ones = list(compress(count(), map(lt, repeat(threshold), lengths)))
        for position in long_ones:
            payload = payloads[position]
            if payload.count(b"[") + payload.count(b"{") > max_depth:
                problem = self._too_deep(events[position])
                if problem is not None:
                    raise self._rejected_at(problem, events, position)

    def _too_deep(self, event: Any) -> StreamRejected | None:
        depth, limit = _depth(event), self.ctx.limits.max_depth
        if depth <= limit:
            return None
        return StreamRejected(LIMIT_DEPTH(depth=depth, limit=limit))

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
                rejection = self._valid_json_refused(payload)
                if rejection is not None:
                    raise self._rejected_at(rejection, events, len(events)) from None
                excerpt = payload[:60].decode("utf-8", "replace")
                # The position counts in the frame, and says so: a report of a file
                # places the finding by the file's line and column (agui_pipeline.delivery.locate).
                why, at = exc.msg, exc.pos
                bad = _not_utf8_at(payload)
                if bad is not None:  # orjson places every UTF-8 error at 0
                    why, at = f"byte {payload[bad]:#04x} is not UTF-8", len(payload[:bad].decode())
                rejection = StreamRejected(
                    PARSE_NOT_JSON(why=why, column=at + 1, excerpt=excerpt),
                )
                raise self._rejected_at(rejection, events, len(events)) from None
        return events

    def _valid_json_refused(
        self, payload: bytes, *, document: bool = False
    ) -> StreamRejected | None:
        """The rule or limit a frame orjson refused breaks, if it is valid JSON.

        orjson refuses some valid JSON with one message for all: a number past
        double range, a lone surrogate escape, nesting past 1,024 levels. The
        standard library reads those, so it tells which (only on this failure
        path); bytes it cannot read either are not JSON, and return.
        """
        try:
            value = json.loads(
                payload.decode("utf-8"), parse_int=_int_or_infinity, parse_constant=_not_json
            )
        except RecursionError:
            # Deeper than the interpreter nests (~1,000 levels), so past max_depth.
            limit = self.ctx.limits.max_depth
            return StreamRejected(
                LIMIT_DEPTH("beyond-reader", limit=limit),
                event_index=0 if document else None,
            )
        except ValueError:
            return None  # not JSON (or not UTF-8): the caller says so
        frames: list[tuple[int | None, Any]] = [(None, value)]
        if document and type(value) is list:
            frames = list(enumerate(value))
        for position, frame in frames:
            problem = self._too_deep(frame) or _unreadable_value(frame)
            if problem is not None:
                if document:
                    problem.event_index = position or 0
                return problem
        return None  # valid JSON that orjson refused for a reason not foreseen: not-json

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
                        PARSE_NOT_OBJECT(value=describe(value)),
                    )
                    raise self._rejected_at(rejection, values, position)
        events: list[Event] = values
        self._next_index = start + len(events)
        self.ctx.counters.read += len(events)
        return Batch(events, list(range(start, self._next_index)), types, objects=True)


def native_framer(framing: str | None, max_frame: int) -> Framer | None:
    """The one place parse takes up the native core: its framer of SSE and JSON lines, the
    same frames, limit and state as ``_feed_delimited`` (``tests/test_parse_differential.py``);
    ``None`` for the pure Python core (``agui_pipeline._cores``) or a JSON array document."""
    if _cores.native is None or framing not in ("sse", "jsonl"):
        return None
    framer: Framer = _cores.native.Framer(framing, max_frame)
    return framer


def framing_of(first: bytes) -> str | None:
    """The framing a stream's first non-blank byte tells (``None``: none)."""
    if first == b"{":
        return "jsonl"
    if first == b"[":
        return "json"
    if first == b":" or first.isalpha():
        return "sse"
    return None


def sse_event_bound(max_frame: int) -> int:
    """The most bytes one SSE event may take as sent, whole or still arriving: what bounds
    the part of a stream held between reads. An event as sent is its lines, without the LFs
    around them (a blank line's LF before it, the LF after it that begins the next blank
    line), which fall on either side of a boundary depending on where the reads were cut.
    Four times the frame limit covers a payload sent one character per ``data: `` line;
    comments and other fields carry nothing and are only held, so they are bounded here,
    not by max_frame_bytes."""
    return 4 * max_frame + 64


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
    """Nesting depth of a decoded JSON value (iterative: no recursion on hostile input).

    Level by level, holding only references to the containers of one level: a
    stack of ``(child, level)`` pairs cost a tuple per value, more than the
    value itself for a frame of small arrays.
    """
    deepest = 0
    level: list[Any] = [value]
    while level:
        containers = [item for item in level if type(item) is dict or type(item) is list]
        if not containers:
            break
        deepest += 1
        level = []
        for container in containers:
            level.extend(container.values() if type(container) is dict else container)
    return deepest


_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_SHORTEST_LONG_INTEGER = 19
"""Digits of the shortest integer orjson cannot read exactly (``-9223372036854775809``)."""
_STRIDE = 3
_SAMPLED_RUN = b"0" * (_SHORTEST_LONG_INTEGER // _STRIDE)
_LONG_RUN = b"0" * _SHORTEST_LONG_INTEGER
_DIGIT_RUN = re.compile(rb"[0-9]{%d,}" % _SHORTEST_LONG_INTEGER)


class _LongIntegerSearch:
    """Whether a read may hold a run of 19 digits, the shortest integer past 64 bits.

    What it buys: most reads are cleared by looking at every third byte only.
    19 digits in a row cover at least six consecutive multiples of 3, so such a
    run shows as six digits in a row among the sampled bytes, while a
    millisecond timestamp (13 digits) covers at most five. What shows is then
    searched byte by byte, so the answer is exact. A stream whose numbers of 16
    to 18 digits (microsecond timestamps) show in the sample is searched byte by
    byte without it for the next reads, so it costs about what it did before.
    Measured (``python -m benchmarks.instructions --upto parse``): searching
    every byte cost 1,250 instructions an event; this costs about 690 on the
    workload, and about 50 more than searching every byte on the workload with
    microsecond timestamps. It searches what :class:`IntegerSearch` gives it:
    a whole read, or the frames enforce chose, joined. A run of 19 inside a
    string is a false alarm the caller sorts out frame by frame
    (:data:`_DIGIT_RUN`, then a second decode of those only).
    """

    __slots__ = ("unsampled",)

    _BACK_OFF = 16
    """Reads searched whole after the sample showed a run the whole search did not find."""

    def __init__(self) -> None:
        self.unsampled = 0

    def may_hold(self, region: bytes) -> bool:
        sampled = not self.unsampled
        if not sampled:
            self.unsampled -= 1
        elif region[::_STRIDE].translate(_DIGITS_AS_ZERO).find(_SAMPLED_RUN) < 0:
            return False  # six digits in a row among every third byte: none
        found = region.translate(_DIGITS_AS_ZERO).find(_LONG_RUN) >= 0
        if sampled and not found:
            self.unsampled = self._BACK_OFF  # the sample raised a false alarm
        return found


class IntegerSearch:
    """The search of one stream's frames for integers past 64 bits, and the warning.

    orjson reads an integer of up to 64 bits exactly and a longer one as the
    nearest double, silently. A frame that may hold one (a run of 19 digits) is
    read again by the standard library, exactly, and each such integer is warned
    of by frame and pointer (``parse.integer-precision``).

    What it buys: in a pipeline with enforce, parse searches none of its reads.
    Enforce's checks already look at every member of every event, and a double
    fails the check of every member that is not open JSON (strings, integers,
    booleans, closed sets). So an integer past 64 bits can only hide in an event
    the checks do not pass, or under a member they pass without looking inside
    (``metadata``, ``rawEvent``, ``CUSTOM.value``, a state, an activity, a
    patch, a tool result's parts). Parse hands its frames over (:meth:`hold`);
    enforce's batch scan notes where the events with such a member present are
    (``_generate_scan`` in ``stages/enforce.py``, with ``collects``); and only
    their frames, and every frame from the first event the checks do not pass,
    are searched (:meth:`search`). A text or tool delta without metadata costs
    nothing. Measured on the workload (``python -m benchmarks.instructions``): up
    to enforce, 11,467 instructions an event, against 12,032 when parse
    searched every read and 11,381 with no search at all, so the search costs
    86 instead of 651 (2 % of the events are chosen); the whole pipeline
    19,253 against 19,779. Walking the decoded open members for doubles
    instead costs more than searching their bytes (a Python step per value).

    When enforce chose more than a third of a read's frames, parse searches
    the next reads whole (:attr:`_WHOLE_READS`): with an open member in every
    event (the workload with a ``metadata`` or a nested ``rawEvent`` on each),
    that keeps the cost within 0.5 % of searching every read. Reads of few
    frames (a live stream's) parse still searches itself (:attr:`FEWEST_FRAMES`).

    Parse searches a whole read itself (:meth:`search_read`) when no enforce
    runs, and enforce does when a stage before it changed the batch (the events
    may then no longer say which frames matter).
    """

    __slots__ = ("_ctx", "_whole_reads", "held", "sample")

    FEWEST_FRAMES = 16
    """Reads of fewer frames parse searches itself, not handed over: handing a read over
    costs a few thousand instructions, more than searching a few frames (a live read
    carries one; measured with ``--live``, handing each over cost 4,700 an event more)."""

    _WHOLE_READS = 32
    """Reads parse searches whole after one where enforce chose more than a third of the
    frames: with open members in most events (a ``rawEvent`` on every event) the
    choice costs more than it spares, and such a stream costs what searching every read did."""

    def __init__(self, ctx: StreamContext) -> None:
        self._ctx = ctx
        self.held: tuple[Batch, int, list[bytes], bytes] | None = None
        """The batch parse handed over, its first event index, its frames and their read
        (read by enforce before it calls :meth:`take`: a call costs more than the test)."""
        self._whole_reads = 0
        self.sample = _LongIntegerSearch()

    def search_read(self, first: int, frames: list[bytes], region: bytes) -> None:
        """Search every frame of a read; ``region`` is the bytes they were cut from and
        ``first`` the event index of the first frame."""
        if self.sample.may_hold(region):
            self.warn_of_runs(first, frames)

    def warn_of_runs(self, first: int, frames: list[bytes]) -> None:
        """Read again the frames with a run of 19 digits, and warn of their long integers."""
        suspects = compress(count(), map(_DIGIT_RUN.search, frames))
        self.warn(first, ((p, _reread(frames[p])) for p in suspects))

    # -- parse's side -----------------------------------------------------------

    def hold(self, batch: Batch, frames: list[bytes], region: bytes) -> None:
        """The frames ``batch``'s events were decoded from, one each, for enforce."""
        if self.held is not None:  # enforce never saw those events: a stage held them back
            self.search_read(*self.held[1:])
            self.held = None
        if self._whole_reads:
            self._whole_reads -= 1
            self.search_read(batch.indices[0], frames, region)
        else:
            self.held = (batch, batch.indices[0], frames, region)

    # -- enforce's side -----------------------------------------------------------

    def take(self, batch: Batch) -> list[bytes] | None:
        """The frames of ``batch``'s events, when it is parse's batch as parse made it;
        ``None`` otherwise, once whatever parse handed over is searched whole."""
        held, self.held = self.held, None
        if held is None:
            return None
        if held[0] is batch and batch.objects:
            return held[2]
        self.search_read(*held[1:])
        return None

    def search(self, batch: Batch, frames: list[bytes], opened: list[int], start: int) -> None:
        """Search the frames enforce chose: those of the events its checks passed with a
        member they do not look into (``opened``, each as the count of events after it,
        once per such member), and every frame from ``start``, the first event they did not
        pass (``frames`` are all of ``batch``'s, from :meth:`take`)."""
        last = len(frames) - 1
        chosen = [last - after for after in opened]  # in order; an event twice for two members
        chosen += range(start, len(frames))
        if 3 * len(chosen) > len(frames):
            self._whole_reads = self._WHOLE_READS
        if chosen and self.sample.may_hold(b"\n".join([frames[p] for p in chosen])):
            suspects = dict.fromkeys(p for p in chosen if _DIGIT_RUN.search(frames[p]))
            self.warn(batch.indices[0], ((p, _reread(frames[p])) for p in suspects))

    def flush(self) -> None:
        """End of stream: search what was handed over and never taken."""
        held, self.held = self.held, None
        if held is not None:
            self.search_read(*held[1:])

    def warn(self, first: int, frames: Iterable[tuple[int, Any]]) -> None:
        """One warning per integer orjson turned into a double, by frame and pointer:
        ``frames`` are ``(position, frame read exactly)``, position counted from ``first``."""
        for position, frame in frames:
            for pointer, number in _long_integers(frame):
                self._ctx.report(
                    PARSE_INTEGER_PRECISION(number=number, pointer=pointer, nearest=float(number)),
                    event_index=first + position,
                    pointer=pointer,
                )


def _reread(payload: bytes) -> Any:
    """A frame decoded again with every integer exact."""
    return json.loads(payload, parse_int=_int_or_infinity)


_LONGEST_INTEGER = 320
"""Digits past which an integer literal is past double range anyway (read as infinity),
and below Python's limit on converting digits to ``int`` (4,300)."""


def _int_or_infinity(digits: str) -> int | float:
    return int(digits) if len(digits) <= _LONGEST_INTEGER else float(digits)


def _not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")  # the standard library's NaN and Infinity


def _unreadable_value(event: Any) -> StreamRejected | None:
    """The first value of valid JSON the pipeline cannot hold: a number past double
    range (infinity), or a string with a lone surrogate (no Unicode text)."""
    for path, item in walk(event):
        if type(item) is float and item in (_INFINITY, -_INFINITY):
            pointer = join_pointer(path)
            return StreamRejected(
                PARSE_NUMBER_RANGE(at=pointer or "/"),
                pointer=pointer,
            )
        if type(item) is str and not item.isascii():
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                pointer = join_pointer(path)
                return StreamRejected(
                    PARSE_UNPAIRED_SURROGATE(
                        at=pointer or "/",
                        string=shown(item.encode("utf-8", "backslashreplace").decode()),
                    ),
                    pointer=pointer,
                )
    return None


_INFINITY = float("inf")
_SMALLEST, _LARGEST = -(2**63), 2**64 - 1  # what orjson reads as an exact integer


def _long_integers(event: Any) -> Iterator[tuple[str, int]]:
    for path, item in walk(event):
        if type(item) is int and not _SMALLEST <= item <= _LARGEST:
            yield join_pointer(path), item
