"""A recorded stream replayed as an HTTP + SSE agent endpoint (the ``serve`` extra).

``agui-pipeline serve FILE`` answers every ``POST`` with the recording, framed
as the binding says (``/spec/1.1/basic/transports/http-sse``): ``200``,
``Content-Type: text/event-stream``, one ``data:`` line per event. Options
make it misbehave the ways real connections do — frames split across writes,
pauses, keep-alive comments, a dropped connection, an error status, a wrong
content type — so a client's transport handling can be tested against a real
server on 127.0.0.1 instead of a mock.

The request half follows the binding too: a body that is not a JSON object,
or lacks ``threadId``, ``runId`` or ``messages``, is refused with an error
status before any stream exists (``/spec/1.1/basic/run-input``, Error Handling).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import anyio
import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ._proto import MEDIA_TYPE as PROTO_MEDIA_TYPE
from ._proto import admits as admits_proto
from .errors import StreamRejected
from .stage import Event

KEEP_ALIVE = b": keep-alive\n\n"
REQUIRED_INPUT = ("threadId", "runId", "messages")
"""The members ``RunAgentInput`` requires (``schema.json#RunAgentInput``)."""


def read_recording(data: bytes | Path) -> list[Event]:
    """The events of a recorded stream, in any framing parse accepts.

    Raises ``ValueError`` naming the frame parse refused, so a recording is
    never served half-read by accident.
    """
    from .engine import Pipeline  # the pipeline's own decoder: pipeline/ imports no stage

    raw = data.read_bytes() if isinstance(data, Path) else data
    pipeline = Pipeline()
    decoder = pipeline.decoder(pipeline.context())
    try:
        batch = decoder.feed(raw) + decoder.finish()
    except StreamRejected as error:
        raise ValueError(f"the recording does not parse: {error}") from None
    return batch.events


@dataclass(slots=True)
class Replay:
    """How the recording is served; change a field between requests to change the next one."""

    events: Sequence[Event]
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

    def frames(self, binary: bool = False) -> list[bytes]:
        if binary:
            from ._proto.codec import encode_frames

            return [encode_frames([event]) for event in self.events]
        return [b"data: " + orjson.dumps(event) + b"\n\n" for event in self.events]


class ReplayApp:
    """The ASGI application serving a :class:`Replay`."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self._app = Starlette(routes=[Route("/{path:path}", self._endpoint, methods=["POST"])])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    async def _endpoint(self, request: Request) -> Response:
        replay = self.replay
        if replay.token is not None and request.headers.get("authorization") != (
            f"Bearer {replay.token}"
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
        try:
            body = orjson.loads(await request.body())
        except orjson.JSONDecodeError as error:
            return JSONResponse({"error": f"the body is not JSON: {error}"}, status_code=400)
        if type(body) is not dict:
            return JSONResponse({"error": "expected a RunAgentInput object"}, status_code=400)
        missing = [name for name in REQUIRED_INPUT if name not in body]
        if missing:
            return JSONResponse(
                {"error": f"the RunAgentInput lacks {', '.join(missing)}"}, status_code=422
            )
        replay.requests[:] = [*replay.requests[-99:], (dict(request.headers), body)]
        binary = replay.proto and admits_proto(request.headers.get("accept", ""))
        return _ReplayResponse(replay, binary)


class _ReplayResponse(Response):
    """Streams the frames, and stops as soon as the client goes away."""

    def __init__(self, replay: Replay, binary: bool = False) -> None:
        super().__init__()
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
                    completed = await _write_frames(replay, send, self.binary)
                except OSError:  # the client went away between the watch and a write
                    replay.disconnects += 1
                group.cancel_scope.cancel()
            if completed:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            # Otherwise return without ending the body: the server closes the connection.
        finally:
            replay.active -= 1


async def _write_frames(replay: Replay, send: Send, binary: bool) -> bool:
    """Write the frames as configured; False when the connection is to be dropped."""
    first = True
    frames = replay.frames(binary)
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
            if replay.split:
                await anyio.sleep(0)  # let each piece leave as its own write
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


def _server(app: ASGIApp, log_level: str) -> uvicorn.Server:
    logging.getLogger("uvicorn.error").addFilter(_QuietDrops())
    config = uvicorn.Config(app, log_level=log_level, lifespan="off", access_log=False)
    return uvicorn.Server(config)


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
    """An ASGI application served by uvicorn from a background thread, on a free port."""

    def __init__(self, app: ASGIApp, host: str = "127.0.0.1", port: int = 0) -> None:
        self._app = app
        self._host, self._port = host, port
        self._uvicorn: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def __enter__(self) -> Self:
        sock = bind(self._host, self._port)
        self.url = url_of(sock)
        self._uvicorn = _server(self._app, "warning")
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
        self._uvicorn.should_exit = self._uvicorn.force_exit = True
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
    sock = bind(host, port)
    if on_listening is not None:
        on_listening(url_of(sock))
    _server(ReplayApp(replay), "info").run(sockets=[sock])
