"""The producer-side tap: a real pydantic-ai AG-UI app, and an app of our own that misbehaves,
each wrapped, served on 127.0.0.1 and read by a real client."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from agui_pipeline import BackgroundServer
from agui_pipeline.http.tap import Tap, tap_extra
from agui_pipeline.subscribers import encode_sse
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

INPUT = {
    "threadId": "t-tap",
    "runId": "r-tap",
    "messages": [{"id": "u-1", "role": "user", "content": "Say hello."}],
}


async def scripted(_messages: list[ModelMessage], _info: AgentInfo) -> AsyncIterator[str]:
    """The model: four text deltas, always the same."""
    for piece in ["Hello", " from", " a", " script"]:
        yield piece


def pydantic_ai_app() -> Starlette:
    agent = Agent(FunctionModel(stream_function=scripted))

    async def endpoint(request: Request) -> Response:
        response: Response = await AGUIAdapter.dispatch_request(request, agent=agent)
        return response

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])])


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    handler = Records()
    logger = logging.getLogger("agui_pipeline.http.tap")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler.records
    logger.removeHandler(handler)


def post(url: str, body: Any = INPUT) -> httpx.Response:
    return httpx.post(url, json=body, headers={"Accept": "text/event-stream"}, timeout=20)


class Recorder:
    """ASGI middleware keeping every message the app sends, to compare with what arrives."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.sent: list[Message] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def record(message: Message) -> None:
            self.sent.append(message)
            await send(message)

        await self.app(scope, receive, record)


def test_a_pydantic_ai_app_is_checked_and_its_stream_passes_untouched(
    records: list[logging.LogRecord],
) -> None:
    app = Recorder(pydantic_ai_app())
    with BackgroundServer(Tap(app)) as tapped:
        through = post(tapped.url)
    assert through.status_code == 200 and app.sent[0]["status"] == 200
    sent = b"".join(m.get("body", b"") for m in app.sent if m["type"] == "http.response.body")
    assert through.content == sent and sent.count(b"data: ") == 8  # the app's bytes, all
    assert [r for r in records if "agui_severity" in tap_extra(r)] == []  # no diagnostic
    verdicts = [tap_extra(r) for r in records if "agui_outcome" in tap_extra(r)]
    assert verdicts == [
        {
            "agui_thread_id": "t-tap",
            "agui_run_id": "r-tap",
            "agui_path": "/",
            "agui_outcome": "completed",
            "agui_code": None,
        }
    ]


BROKEN: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t-tap", "runId": "r-tap", "rogue": True},
    {"type": "TEXT_MESSAGE_START", "messageId": "m-1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-2", "delta": "to nobody"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m-1"},
]
BROKEN_BYTES = encode_sse(BROKEN) + b": a comment the client must still get\n\n"


def misbehaving_app() -> Starlette:
    """Streams BROKEN_BYTES in 7-byte pieces: frames split anywhere, a broken sequence."""

    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(BROKEN_BYTES), 7):
            yield BROKEN_BYTES[start : start + 7]

    async def endpoint(request: Request) -> Response:
        await request.body()
        return StreamingResponse(pieces(), media_type="text/event-stream")

    return Starlette(routes=[Route("/run", endpoint, methods=["POST"])])


def test_a_broken_stream_is_reported_and_relayed_byte_for_byte(
    records: list[logging.LogRecord],
) -> None:
    with BackgroundServer(Tap(misbehaving_app())) as tapped:
        through = post(tapped.url + "run")
    assert through.content == BROKEN_BYTES  # nothing altered, reordered or withheld
    found = [tap_extra(r) for r in records]
    stripped = next(f for f in found if f.get("agui_pointer") == "/rogue")
    assert stripped["agui_event_index"] == 0 and stripped["agui_run_id"] == "r-tap"
    assert stripped["agui_path"] == "/run" and stripped["agui_severity"] == "warning"
    verdict = next(r for r in records if "agui_outcome" in tap_extra(r))
    assert verdict.levelno == logging.ERROR
    assert tap_extra(verdict)["agui_outcome"] == "rejected"
    assert str(tap_extra(verdict)["agui_code"]).startswith("verify.")
    assert "m-2" in verdict.getMessage()


def test_other_responses_are_not_checked(records: list[logging.LogRecord]) -> None:
    async def endpoint(request: Request) -> Response:
        return Response(b"not a stream", media_type="text/plain")

    app = Starlette(routes=[Route("/", endpoint, methods=["POST", "GET"])])
    with BackgroundServer(Tap(app)) as tapped:
        assert post(tapped.url).content == b"not a stream"
        assert httpx.get(tapped.url).content == b"not a stream"
    assert records == []
