"""Resuming an SSE response whose connection failed, with ``Last-Event-ID`` (opt-in).

The HTTP + SSE binding has no resumption (``/spec/1.1/basic/transports/http-sse``, No
resumption: ``Last-Event-ID`` is not used);
an agent that names its events with SSE ``id:`` fields and honours ``Last-Event-ID``
(the HTML standard's server-sent events) can offer it, and ``Retries(resume=True)`` asks
for it. The rule here never hands the decoder an event twice:

- Only whole frames go on to the decoder: the bytes of a frame still arriving are held
  back, so a connection that fails mid-frame leaves the decoder at a frame boundary, and
  the unfinished frame is dropped (the agent sends it again).
- The last event id is the last ``id:`` field of a frame passed on; ``after`` counts the
  events passed on since the frame that set it. The agent answers ``Last-Event-ID`` with
  what follows that id, so of the new response the first ``after`` events are ones
  already read, and skipped; a frame that repeats the last id itself is skipped too.

A stream whose last id is absent, too long (``MAX_EVENT_ID``) or no header value, or
whose body is compressed or not SSE, is not resumed: the drop's report says why.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Awaitable, Callable

import anyio
from agui_pipeline._engine.sources import SourceTimedOut
from agui_pipeline.catalog import TRANSPORT_CONNECTION_LOST, TRANSPORT_RESUMED
from agui_pipeline.delivery.redaction import redact_in
from agui_pipeline.errors import AguiPipelineError
from agui_pipeline.http.transport import ConnectionLost, TransportResponse
from agui_pipeline.stage import StreamContext

MAX_EVENT_ID = 1024
"""Longest SSE event id (bytes) a stream may be resumed from: an id is kept, and sent
back as a header, so a longer one turns resuming off for the stream rather than grow."""

_EOL = re.compile(rb"[\r\n]")
_BOM = b"\xef\xbb\xbf"
_HEADER_VALUE = re.compile(rb"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")
"""An id sent back as ``Last-Event-ID`` as it is: visible ASCII, spaces inside only."""

Reconnect = Callable[[str], Awaitable[TransportResponse]]
"""Sends the request again with ``Last-Event-ID``: an SSE response, uncompressed, or
:class:`~agui_pipeline.RequestFailed` (after the retries' tries)."""


def connection_lost(ctx: StreamContext, error: Exception, why: str = "") -> None:
    """Report a transport failure mid-body: the stream is judged as it stands. The error's
    text is the HTTP library's (the cause of a :class:`ConnectionLost`): any URL in it is
    redacted, and its length bounded. ``why`` says why the stream was not resumed."""
    if isinstance(error, ConnectionLost) and isinstance(error.__cause__, Exception):
        error = error.__cause__
    said = redact_in(str(error))  # the diagnostic cuts the message at MAX_MESSAGE
    ctx.report(
        TRANSPORT_CONNECTION_LOST(error_type=type(error).__name__, said=said, why=why),
        event_index=ctx.counters.read,
    )


class _Frames:
    """Splits SSE bytes into whole frames, noting each frame's ``id`` and whether it
    carries ``data`` (an event). Lines end in CRLF, LF or CR (the HTML standard)."""

    __slots__ = ("at_start", "data", "event_id", "frame_start", "pending", "scanned")

    def __init__(self) -> None:
        self.pending = bytearray()
        self.frame_start = self.scanned = 0
        self.at_start = True
        self.event_id: bytes | None = None
        self.data = False

    def restart(self) -> None:
        """A new response: the unfinished frame of the last one is dropped."""
        self.pending = bytearray()
        self.frame_start = self.scanned = 0
        self.at_start, self.event_id, self.data = True, None, False

    def feed(self, chunk: bytes, at_end: bool = False) -> list[tuple[bytes, bytes | None, bool]]:
        """The frames ``chunk`` completes: ``(bytes, id or None, carries data)`` each."""
        pending = self.pending
        pending += chunk
        if self.at_start:
            if len(pending) < len(_BOM) and _BOM.startswith(bytes(pending)) and not at_end:
                return []
            if pending.startswith(_BOM):
                del pending[: len(_BOM)]
            self.at_start = False
        frames = []
        at = self.scanned
        while (found := _EOL.search(pending, at)) is not None:
            end = found.start()
            if pending[end] == 13:  # CR: a CRLF may be split across reads
                if end + 1 == len(pending) and not at_end:
                    break
                stop = end + 2 if pending[end + 1 : end + 2] == b"\n" else end + 1
            else:
                stop = end + 1
            line = bytes(pending[at:end])
            at = stop
            if not line:
                frames.append((bytes(pending[self.frame_start : at]), self.event_id, self.data))
                self.frame_start, self.event_id, self.data = at, None, False
                continue
            name, _, value = line.partition(b":")
            if value.startswith(b" "):
                value = value[1:]
            if name == b"id" and b"\0" not in value:
                self.event_id = value
            elif name == b"data":
                self.data = True
        if self.frame_start:
            del pending[: self.frame_start]
            at -= self.frame_start
            self.frame_start = 0
        self.scanned = at
        return frames

    def held(self) -> bytes:
        """The unfinished frame's bytes, taken."""
        held = bytes(self.pending)
        self.restart()
        return held


class Resuming:
    """The body of a response, read so that a failed connection can be resumed."""

    def __init__(
        self,
        response: TransportResponse,
        ctx: StreamContext,
        reconnect: Reconnect,
        attempts: int,
        pause: Callable[[int], float],
        cannot: str | None,
    ) -> None:
        self._response = response
        self._first = response
        self._ctx = ctx
        self._reconnect = reconnect
        self._attempts = attempts
        self._pause = pause
        """Seconds to wait after this many reconnections in a row brought no event."""
        self._cannot = cannot
        """Why this response cannot be resumed (not SSE, compressed), or ``None``."""
        self._frames = _Frames()
        self._last_id: bytes | None = None
        self._after = 0
        self._unsendable: str | None = None
        """Why the last event id cannot be sent back, or ``None``."""
        self._most = ctx.limits.max_frame_bytes

    async def aclose(self) -> None:
        """Close the response opened last (the first is the agent's to close)."""
        if self._response is not self._first:
            await self._response.aclose()

    async def reads(self) -> AsyncGenerator[bytes]:
        """The body's whole frames, across as many connections as it takes."""
        tries = 0
        skip, guard = 0, False
        while True:
            try:
                async for chunk in self._response.body:
                    if self._cannot is not None:
                        yield chunk
                        continue
                    passed = bytearray()
                    for frame, event_id, data in self._frames.feed(chunk):
                        if guard and event_id is not None and event_id == self._last_id:
                            skip, guard = self._after, False  # the id's own frame, sent again
                            continue
                        if skip and data:
                            skip -= 1
                            continue
                        guard = guard and not data
                        passed += frame
                        self._passed(event_id, data)
                        tries = 0 if data else tries
                    if len(self._frames.pending) > self._most:  # let the decoder refuse it
                        self._cannot = "a frame grew past max_frame_bytes; "
                        passed += self._frames.held()
                    if passed:
                        yield bytes(passed)
                if self._cannot is None:
                    tail = b"".join(frame for frame, _, _ in self._frames.feed(b"", at_end=True))
                    if rest := tail + self._frames.held():
                        yield rest
                return
            except TimeoutError:
                raise SourceTimedOut from None
            except ConnectionLost as error:
                why = self._why_not()
                if why is None and tries >= self._attempts:
                    why = f"not resumed: {tries} reconnections in a row brought no event; "
                if why is not None:
                    if self._cannot is None and (held := self._frames.held()):
                        yield held  # the decoder judges the unfinished frame, as unresumed
                    connection_lost(self._ctx, error, why)
                    return
                last_id = (self._last_id or b"").decode("utf-8", "replace")
                if tries:  # the last reconnection brought no event: back off
                    await anyio.sleep(self._pause(tries))
                try:
                    fresh = await self._reconnect(last_id)
                except AguiPipelineError as failed:
                    connection_lost(self._ctx, error, f"resuming failed ({failed}); ")
                    return
                await self.aclose()
                self._response = fresh
                self._frames.restart()
                tries += 1
                skip, guard = self._after, True
                self._ctx.report(
                    TRANSPORT_RESUMED(
                        error_type=type(error.__cause__ or error).__name__,
                        last_id=last_id,
                        skipped=self._after,
                    ),
                    event_index=self._ctx.counters.read,
                )

    def _passed(self, event_id: bytes | None, data: bool) -> None:
        if event_id is not None:
            self._after = 0
            self._unsendable = None
            self._last_id = event_id or None  # an empty id clears it (the HTML standard)
            if len(event_id) > MAX_EVENT_ID:
                self._unsendable = f"the last event id is longer than {MAX_EVENT_ID} bytes; "
            elif event_id and not _HEADER_VALUE.fullmatch(event_id):
                self._unsendable = "the last event id is not a header value (visible ASCII); "
            if self._unsendable is not None:
                self._last_id = None
        elif data:
            self._after += 1

    def _why_not(self) -> str | None:
        if self._cannot is not None:
            return f"not resumed: {self._cannot}"
        if self._unsendable is not None:
            return f"not resumed: {self._unsendable}"
        if self._last_id is None:
            return "not resumed: the agent sent no event id; "
        return None
