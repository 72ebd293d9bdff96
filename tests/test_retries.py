"""``HttpAgent(retries=Retries(...))`` against real servers on 127.0.0.1: a ``503`` with
``Retry-After``, then a stream; a port nothing listens on; and the default, no retries."""

from __future__ import annotations

import socket
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import orjson
import pytest
from agui_pipeline import Outcome
from agui_pipeline.http.client import HttpStatusError, RequestFailed, Retries
from agui_pipeline.http.serve import BackgroundServer
from starlette.types import Receive, Scope, Send

from tests.conftest import http_agent
from tests.test_transport import INPUT, RUN

pytestmark = pytest.mark.anyio


class Overloaded:
    """Answers the first ``busy`` requests with ``status`` and ``Retry-After: retry_after``,
    then streams ``RUN``; counts every request and when it came."""

    def __init__(self, busy: int, status: int = 503, retry_after: str | None = "1") -> None:
        self.busy, self.status, self.retry_after = busy, status, retry_after
        self.requests: list[float] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        self.requests.append(time.monotonic())
        if len(self.requests) <= self.busy:
            headers = [(b"content-type", b"application/json")]
            if self.retry_after is not None:
                headers.append((b"retry-after", self.retry_after.encode()))
            await send({"type": "http.response.start", "status": self.status, "headers": headers})
            await send({"type": "http.response.body", "body": b'{"error": "busy"}'})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        body = b"".join(b"data: " + orjson.dumps(event) + b"\n\n" for event in RUN)
        await send({"type": "http.response.body", "body": body})


async def test_a_503_with_retry_after_is_waited_out_then_the_run_completes(
    transport: str,
) -> None:
    app = Overloaded(busy=1, retry_after="1")
    with BackgroundServer(app) as served:
        async with http_agent(served.url, transport, retries=Retries(backoff=0.01)) as agent:
            result = await agent.run(INPUT)
    assert result.verdict.outcome is Outcome.COMPLETED
    assert [event["type"] for event in result.events] == [event["type"] for event in RUN]
    assert len(app.requests) == 2
    assert app.requests[1] - app.requests[0] >= 0.9  # Retry-After, not the 10 ms backoff


async def test_retries_are_off_by_default(transport: str) -> None:
    app = Overloaded(busy=1)
    with BackgroundServer(app) as served:
        async with http_agent(served.url, transport) as agent:
            with pytest.raises(HttpStatusError) as failed:
                await agent.run(INPUT)
    assert failed.value.status == 503 and len(app.requests) == 1


async def test_retries_stop_after_the_attempts_and_not_on_other_statuses(transport: str) -> None:
    app = Overloaded(busy=5, retry_after="0")
    with BackgroundServer(app) as served:
        async with http_agent(served.url, transport, retries=Retries(attempts=3)) as agent:
            with pytest.raises(HttpStatusError):
                await agent.run(INPUT)
    assert len(app.requests) == 3
    refused = Overloaded(busy=5, status=500)
    with BackgroundServer(refused) as served:
        async with http_agent(served.url, transport, retries=Retries()) as agent:
            with pytest.raises(HttpStatusError):
                await agent.run(INPUT)
    assert len(refused.requests) == 1


async def test_a_connect_error_is_retried_with_backoff(transport: str) -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/"
        async with http_agent(url, transport, retries=Retries(attempts=3, backoff=0.2)) as agent:
            started = time.monotonic()
            with pytest.raises(RequestFailed) as failed:
                await agent.run(INPUT)
    assert failed.value.connecting
    assert time.monotonic() - started >= 0.2 + 0.4 - 0.05  # two waits, doubling


async def test_retry_after_reads_seconds_and_http_dates_and_is_capped() -> None:
    retries = Retries(attempts=5, backoff=1.0, max_wait=30.0)

    def busy(retry_after: str | None, status: int = 503) -> Any:
        error = HttpStatusError("http://127.0.0.1/", status, "application/json", "")
        error.retry_after = retry_after
        return error

    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=20), usegmt=True)
    assert retries.wait(1, busy("7")) == 7
    assert 18 <= (retries.wait(1, busy(soon)) or 0) <= 20
    assert retries.wait(1, busy("86400")) == 30.0  # capped
    assert retries.wait(3, busy(None)) == 4.0  # backoff doubles: 1, 2, 4
    assert retries.wait(1, busy("soon")) == 1.0  # unreadable: the backoff
    assert retries.wait(5, busy("1")) is None  # the attempts are spent
    assert retries.wait(1, busy("1", status=429)) is None
