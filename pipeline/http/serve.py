"""A recorded stream replayed as an HTTP + SSE agent endpoint (the ``serve`` extra).

``agui-pipeline serve FILE`` answers every ``POST`` with the recording, framed
as the binding says (``/spec/1.1/basic/transports/http-sse``): ``200``,
``Content-Type: text/event-stream``, one ``data:`` line per event. Options
make it misbehave the ways real connections do — frames split across writes,
pauses, keep-alive comments, a dropped connection, an error status, a wrong
content type — so a client's transport handling can be tested against a real
server on 127.0.0.1 instead of a mock.

The request half follows the binding too: a body over the size cap is
answered ``413`` (and an unauthenticated one is never read), a body that is
not JSON ``400``, and one the run-input rules refuse ``422`` with the code and
the pointer — all before any stream exists (``/spec/1.1/basic/run-input``,
Error Handling).

A replay can also play a conversation: ``turns`` answers the first request
with the first run, the second with the next, and so on, and ``echo_ids``
serves each turn under the request's identity (every run's ``threadId``, the
requested run's ``runId``, see ``_echo_ids``) — so an interrupt, then a resume
built with :func:`~agui_pipeline.resume_input`, can be tested end to end
against a real server.
"""

from __future__ import annotations

import hmac
import logging
import signal
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import anyio
import anyio.lowlevel
import orjson
import uvicorn
from agui_pipeline._json import MISSING
from agui_pipeline._proto import MEDIA_TYPE as PROTO_MEDIA_TYPE
from agui_pipeline._proto import admits as admits_proto
from agui_pipeline.batch import Event
from agui_pipeline.errors import StreamRejected
from agui_pipeline.model.run_input import InputRejected, prepare_input
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

KEEP_ALIVE = b": keep-alive\n\n"
Recorded = Mapping[str, Any]
"""An event as a replay serves it: a parsed dict or a typed event (``RunResult.events``)."""
MAX_BODY = 1024 * 1024
"""The largest request body a replay reads by default (1 MiB); larger is answered 413."""


def read_recording(data: bytes | Path) -> list[Event]:
    """The events of a recorded stream, in any framing parse accepts.

    Raises ``ValueError`` naming what parse refused or reported — a frame cut
    short, bytes that are not JSON, no event at all — so a recording is never
    served half-read by accident.
    """
    from agui_pipeline._engine.pipeline import Pipeline

    raw = data.read_bytes() if isinstance(data, Path) else data
    pipeline = Pipeline()
    ctx = pipeline.context()
    decoder = pipeline.decoder(ctx)
    try:
        batch = decoder.feed(raw) + decoder.finish()
    except StreamRejected as error:
        raise ValueError(f"the recording does not parse: {error}") from None
    if ctx.diagnostics:
        raise ValueError(f"the recording does not parse whole: {ctx.diagnostics[0]}")
    if not batch.events:
        raise ValueError("the recording holds no event")
    return batch.events


def read_conversation(path: Path) -> list[list[Event]]:
    """The runs of a conversation, one per turn: every file of a directory in name order,
    or a JSON file holding a list of runs (each a list of events)."""
    if path.is_dir():
        files = sorted(child for child in path.iterdir() if child.is_file())
        if not files:
            raise ValueError(f"{path} holds no recording")
        turns = []
        for file in files:
            try:
                turns.append(read_recording(file))
            except ValueError as error:
                raise ValueError(f"{file}: {error}") from None
        return turns
    raw = path.read_bytes()
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError:
        document = None
    if type(document) is list and document and all(type(run) is list for run in document):
        return [read_recording(orjson.dumps(run)) for run in document]
    return [read_recording(raw)]


@dataclass(slots=True)
class Replay:
    """How the recording is served; change a field between requests to change the next one.

    Frames are encoded once per recording (and kept): assign a new list to
    ``events`` or ``turns`` rather than changing one in place.
    """

    events: Sequence[Recorded]
    turns: Sequence[Sequence[Recorded]] = ()
    """A conversation: the n-th accepted request is answered with ``turns[n]`` (``events``
    is then unused), and a request past the last turn with 409."""
    echo_ids: bool = False
    """Serve the recording under the request's ids: every run's ``threadId`` becomes the
    request's, and the requested run — the last, not counting a run spawned by an earlier
    one — takes its ``runId`` on ``RUN_STARTED``, ``RUN_FINISHED``, an echoed ``input`` and
    any ``parentRunId`` naming it; earlier runs are replayed history and keep theirs."""
    max_body: int = MAX_BODY
    """Answer a request body larger than this many bytes with 413, unread."""
    split: int | None = None
    """Write each frame in pieces of at most this many bytes (1: every byte boundary)."""
    pause: float = 0.0
    """Seconds to wait between writes (between frames, and between pieces with ``split``)."""
    keepalive: float | None = None
    """During a pause between frames, send ``: keep-alive`` every this many seconds."""
    drop_after: int | None = None
    """Close the connection, without ending the response, after this many events."""
    status: int = 200
    """Answer every request with this status; anything but 200 sends no stream."""
    content_type: str = "text/event-stream"
    proto: bool = False
    """Answer in protobuf frames when the request's ``Accept`` admits the media type
    (``/spec/1.1/basic/transports/http-protobuf``, Negotiation); SSE otherwise."""
    token: str | None = None
    """Require ``Authorization: Bearer <token>``; anything else is answered 401."""
    requests: list[tuple[dict[str, str], Any]] = field(default_factory=list)
    """The headers and decoded body of each accepted request (the last 100)."""
    active: int = 0
    """Responses being streamed right now."""
    disconnects: int = 0
    """Streams that ended because the client went away."""
    played: int = 0
    """Turns of ``turns`` answered so far."""
    _encoded: dict[tuple[int, bool], tuple[Sequence[Recorded], list[bytes]]] = field(
        default_factory=dict, repr=False
    )

    @classmethod
    def conversation(cls, turns: Sequence[Sequence[Recorded]], **settings: Any) -> Replay:
        """A replay answering request after request with the next of ``turns``."""
        return cls(events=turns[0] if turns else [], turns=turns, **settings)

    def frames(self, binary: bool = False, events: Sequence[Recorded] | None = None) -> list[bytes]:
        """One frame per event, encoded the first time a recording is served and kept:
        a request costs writes, not encoding (200 clients no longer wait on the loop)."""
        events = self.events if events is None else events
        key = (id(events), binary)
        kept = self._encoded.get(key)
        if kept is not None and kept[0] is events:
            return kept[1]
        frames = _encode(events, binary)
        self._encoded[key] = (events, frames)
        return frames


class ReplayApp:
    """The ASGI application serving a :class:`Replay`."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self._app = Starlette(routes=[Route("/{path:path}", self._endpoint, methods=["POST"])])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    async def _endpoint(self, request: Request) -> Response:
        replay = self.replay
        if replay.token is not None and not _authorised(
            request.headers.get("authorization", ""), replay.token
        ):
            return JSONResponse(
                {"error": "expected Authorization: Bearer <token>"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        if replay.status != 200:
            return JSONResponse(
                {"error": f"this replay answers {replay.status}"}, status_code=replay.status
            )
        from agui_pipeline.http.relay import read_body  # the relay's reader, without httpx up front

        raw = await read_body(
            request.receive, replay.max_body, request.headers.get("content-length")
        )
        if raw is None:
            return JSONResponse(
                {"error": f"the body exceeds {replay.max_body} bytes"}, status_code=413
            )
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            return JSONResponse({"error": f"the body is not JSON: {error}"}, status_code=400)
        if type(body) is not dict:
            return JSONResponse({"error": "expected a RunAgentInput object"}, status_code=400)
        try:
            prepare_input(body)  # the run-input rules, as the agent would apply them
        except InputRejected as error:
            return JSONResponse(
                {"error": str(error), "code": error.code, "pointer": error.pointer},
                status_code=422,
            )
        events: Sequence[Recorded] = replay.events
        if replay.turns:
            if replay.played >= len(replay.turns):
                return JSONResponse(
                    {"error": f"all {len(replay.turns)} turns of the conversation were played"},
                    status_code=409,
                )
            events = replay.turns[replay.played]
            replay.played += 1
        replay.requests[:] = [*replay.requests[-99:], (dict(request.headers), body)]
        binary = replay.proto and admits_proto(request.headers.get("accept", ""))
        frames = replay.frames(binary, events)
        if replay.echo_ids:
            frames = _echo_ids(frames, events, body, binary)
        return _ReplayResponse(replay, frames, binary)


def _authorised(header: str, token: str) -> bool:
    """``Bearer <token>``, the scheme in any case (RFC 9110, 11.1), compared in constant time."""
    scheme, _, credentials = header.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        credentials.strip().encode(), token.encode()
    )


def _encode(events: Sequence[Recorded], binary: bool) -> list[bytes]:
    if binary:
        from agui_pipeline._proto.codec import encode_frames

        return [encode_frames([event]) for event in events]
    return [b"data: " + orjson.dumps(event) + b"\n\n" for event in events]


def _echo_ids(
    frames: list[bytes], events: Sequence[Recorded], body: dict[str, Any], binary: bool
) -> list[bytes]:
    """The frames with the recording's run identity replaced by the request's, as the
    requested run would carry it (``/spec/1.1/basic/run-input``, Identity): every
    ``threadId`` naming the recording's thread becomes the request's; the requested run
    takes the request's ``runId`` on its ``RUN_STARTED`` and ``RUN_FINISHED``, and so does
    every ``parentRunId`` naming it; an echoed ``RUN_STARTED.input`` follows the run it
    starts. The other runs are replayed history and keep their own runIds, as a replayed
    run does. Only the events that change are encoded again."""
    starts = [index for index, event in enumerate(events) if event.get("type") == "RUN_STARTED"]
    if not starts:
        return frames
    requested = _requested_run(events, starts)
    after = next((index for index in starts if index > requested), len(events))
    thread, run_id = events[starts[0]].get("threadId"), events[requested].get("runId")

    def echoed(member: Recorded, own_run: bool) -> dict[str, Any]:
        changed = {}
        if member.get("threadId", MISSING) == thread:
            changed["threadId"] = body["threadId"]
        if own_run and member.get("runId", MISSING) == run_id:
            changed["runId"] = body["runId"]
        if member.get("parentRunId", MISSING) == run_id:
            changed["parentRunId"] = body["runId"]
        return changed

    served = list(frames)
    for index, event in enumerate(events):
        kind = event.get("type")
        if kind not in _IDENTIFIED:
            continue
        own_run = requested <= index < after
        changed = echoed(event, own_run)
        recorded_input = event.get("input")
        if kind == "RUN_STARTED" and type(recorded_input) is dict:
            changed_input = echoed(recorded_input, own_run)
            if changed_input:
                changed["input"] = {**recorded_input, **changed_input}
        if changed:
            served[index] = _encode([{**event, **changed}], binary)[0]
    return served


_IDENTIFIED = frozenset({"RUN_STARTED", "RUN_FINISHED"})
"""The events the schema gives ``threadId`` / ``runId`` / ``parentRunId`` (``RUN_ERROR``
carries none)."""


def _requested_run(events: Sequence[Recorded], starts: list[int]) -> int:
    """The index of the requested run's ``RUN_STARTED``: the recording's last run, since the
    requested run is the exchange's last and runs before it replay history
    (``/spec/1.1/basic/run-input``) — not counting a run another run on the recording
    spawned (its ``parentRunId`` names an earlier run), which belongs to its parent's turn."""
    requested, seen = starts[0], set()
    for index in starts:
        parent = events[index].get("parentRunId")
        if parent is None or parent not in seen:
            requested = index
        seen.add(events[index].get("runId"))
    return requested


class _ReplayResponse(Response):
    """Streams the frames, and stops as soon as the client goes away."""

    def __init__(self, replay: Replay, frames: list[bytes], binary: bool = False) -> None:
        super().__init__()
        self.frames = frames
        content_type = PROTO_MEDIA_TYPE if binary else replay.content_type
        self.binary = binary
        # No Content-Length: the body is streamed, chunked, for as long as the replay runs.
        self.raw_headers = [
            (b"content-type", content_type.encode("latin-1")),
            (b"cache-control", b"no-cache"),
        ]
        self.replay = replay

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        replay = self.replay
        replay.active += 1
        completed = False
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            async with anyio.create_task_group() as group:

                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    replay.disconnects += 1
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                try:
                    completed = await _write_frames(replay, self.frames, send, self.binary)
                except OSError:  # the client went away between the watch and a write
                    replay.disconnects += 1
                group.cancel_scope.cancel()
            if completed:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            # Otherwise return without ending the body: the server closes the connection.
        finally:
            replay.active -= 1


async def _write_frames(replay: Replay, frames: list[bytes], send: Send, binary: bool) -> bool:
    """Write the frames as configured; False when the connection is to be dropped."""
    first = True
    for count, frame in enumerate(frames):
        if count == replay.drop_after:
            return False
        step = replay.split or len(frame)
        for start in range(0, len(frame), step):
            if first:
                first = False
            elif start == 0 and replay.keepalive is not None and not binary:  # SSE comments
                await _pause_with_keepalive(replay.pause, replay.keepalive, send)
            elif replay.pause:
                await anyio.sleep(replay.pause)
            piece = frame[start : start + step]
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            # A write that need not wait does not yield — and a write to a client already
            # gone never waits — so without this one response could run to its end before
            # any other client (or the watch for this one's disconnect) got a turn: 200
            # clients of a 20000-event recording waited up to 108 s for their first byte,
            # 0.55 s with it. It also lets each piece of a split frame leave as its own write.
            await anyio.lowlevel.checkpoint()
    return replay.drop_after is None or replay.drop_after > len(frames)


async def _pause_with_keepalive(pause: float, every: float, send: Send) -> None:
    deadline = time.monotonic() + pause
    while (left := deadline - time.monotonic()) > 0:
        await anyio.sleep(min(every, left))
        if deadline - time.monotonic() > 0:
            await send({"type": "http.response.body", "body": KEEP_ALIVE, "more_body": True})


class _QuietDrops(logging.Filter):
    """A deliberate ``drop_after`` is not a server error worth a log line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "without completing response" not in record.getMessage()


def _server(app: ASGIApp, log_level: str, lifespan: bool = False) -> uvicorn.Server:
    logging.getLogger("uvicorn.error").addFilter(_QuietDrops())
    config = uvicorn.Config(
        app,
        log_level=log_level,
        lifespan="on" if lifespan else "off",
        access_log=False,
        timeout_graceful_shutdown=5 if lifespan else None,
    )
    return uvicorn.Server(config)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def run_until_stopped(
    server: uvicorn.Server, sock: socket.socket, on_listening: Callable[[str], None] | None = None
) -> None:
    """Run ``server`` on ``sock`` in the foreground until SIGTERM or Ctrl-C, and return:
    that is the end a server is run for, so the command exits 0. ``on_listening`` gets the
    URL once a stop signal would be heard.

    uvicorn stops on either signal and, once shut down, raises it again for the handler
    in place before it started, so that a process with Python's defaults dies of it
    (143, or 130 after ``KeyboardInterrupt``). The handler in place here asks the server
    to stop, which covers a signal that comes before uvicorn's own handler is in place
    and takes the one raised again as said. A second Ctrl-C forces the stop before the
    requests in flight are done: that is an interruption (``KeyboardInterrupt``, 130).
    """
    url = url_of(sock)
    if threading.current_thread() is not threading.main_thread():
        if on_listening is not None:
            on_listening(url)
        server.run(sockets=[sock])  # no signals here: stopped by whoever started it
        return

    def stop(number: int, frame: object) -> None:
        server.should_exit = True

    previous = {number: signal.signal(number, stop) for number in STOP_SIGNALS}
    try:
        if on_listening is not None:
            on_listening(url)
        server.run(sockets=[sock])
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if server.force_exit:
        raise KeyboardInterrupt


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


class BackgroundServer:
    """An ASGI application served by uvicorn from a background thread, on a free port.

    Leaving it stops the server at once; with ``lifespan=True`` the app's startup and
    shutdown run, and leaving waits (up to 5 s) for the shutdown, so a :class:`Relay`
    closes its upstream's pool in its own loop.
    """

    def __init__(
        self, app: ASGIApp, host: str = "127.0.0.1", port: int = 0, *, lifespan: bool = False
    ) -> None:
        self._app = app
        self._lifespan = lifespan
        self._host, self._port = host, port
        self._uvicorn: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def __enter__(self) -> Self:
        sock = bind(self._host, self._port)
        self.url = url_of(sock)
        self._uvicorn = _server(self._app, "warning", self._lifespan)
        self._thread = threading.Thread(
            target=self._uvicorn.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._uvicorn.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server on {self.url} did not start")
            time.sleep(0.005)
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._uvicorn is not None and self._thread is not None
        self._uvicorn.should_exit = True
        self._uvicorn.force_exit = not self._lifespan
        self._thread.join(timeout=10)


class ReplayServer(BackgroundServer):
    """A :class:`Replay` served from a background thread, for tests and scripts::

    with ReplayServer(Replay(events, split=1)) as server:
        result = await HttpAgent(server.url).run(run_input)
    """

    def __init__(self, replay: Replay, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(ReplayApp(replay), host, port)
        self.replay = replay


def serve(
    replay: Replay,
    host: str = "127.0.0.1",
    port: int = 8000,
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Serve in the foreground until interrupted (what ``agui-pipeline serve`` runs).

    ``on_listening`` gets the URL once the socket is bound (``port=0`` picks a free one).
    """
    run_until_stopped(_server(ReplayApp(replay), "info"), bind(host, port), on_listening)
