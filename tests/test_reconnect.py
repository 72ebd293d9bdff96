"""``Retries(resume=True)``: a stream whose connection fails mid-body is resumed with
``Last-Event-ID``, against real servers on 127.0.0.1 that drop the connection mid-frame.

The HTTP + SSE binding defines no resumption (``/spec/1.1/basic/transports/http-sse``),
so it is opt-in; where the agent names its events (SSE ``id:``) and honours
``Last-Event-ID``, the run completes with each event read once — never replayed.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from agui_pipeline import BackgroundServer, Outcome, Retries
from agui_pipeline.http.reconnect import MAX_EVENT_ID, _Frames
from starlette.types import Receive, Scope, Send

from tests.conftest import http_agent
from tests.test_transport import INPUT, RUN

pytestmark = pytest.mark.anyio


class Resumable:
    """Streams ``RUN`` with an ``id:`` on the events ``ids`` names (``None``: none), as
    the HTML standard's server-sent events resume: from the event after the request's
    ``Last-Event-ID`` (``inclusive``: from that event itself, sent again). The first
    response is cut after ``drop_after`` events and half the next frame, the connection
    closed without ending the response."""

    def __init__(
        self,
        drop_after: int,
        ids: dict[int, str] | None = None,
        *,
        inclusive: bool = False,
        drops: int = 1,
        again: int | None = None,
    ) -> None:
        self.drop_after, self.inclusive, self.drops = drop_after, inclusive, drops
        self.again = drop_after if again is None else again
        """Where a response after the first is cut."""
        self.ids = {n: f"e{n}" for n in range(len(RUN))} if ids is None else ids
        self.last_event_ids: list[str | None] = []

    def frame(self, n: int) -> bytes:
        named = f"id: {self.ids[n]}\n".encode() if n in self.ids else b""
        return named + b"data: " + orjson.dumps(RUN[n]) + b"\n\n"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        given = dict(scope["headers"]).get(b"last-event-id")
        self.last_event_ids.append(given and given.decode())
        start = 0
        if given is not None:
            named = [n for n, name in self.ids.items() if name == given.decode()]
            start = named[0] + (0 if self.inclusive else 1) if named else 0
        sse = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": sse})
        dropping = len(self.last_event_ids) <= self.drops
        cut = self.drop_after if len(self.last_event_ids) == 1 else self.again
        for n in range(start, len(RUN)):
            frame = self.frame(n)
            if dropping and n - start == cut:
                half = frame[: len(frame) // 2]
                await send({"type": "http.response.body", "body": half, "more_body": True})
                return  # the connection closes with the response unfinished
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


def sized(length: int) -> dict[int, str]:
    """An id of ``length`` bytes for each event."""
    return {n: str(n).rjust(length, "i") for n in range(len(RUN))}


def codes(result: Any) -> list[str]:
    return [diagnostic.code for diagnostic in result.diagnostics]


async def run(app: Resumable, transport: str, retries: Retries | None) -> Any:
    with BackgroundServer(app) as served:
        async with http_agent(served.url, transport, retries=retries) as agent:
            return await agent.run(INPUT)


RESUME = Retries(backoff=0.01, resume=True)


async def test_a_dropped_stream_resumes_from_the_last_event_id(transport: str) -> None:
    app = Resumable(drop_after=3)
    result = await run(app, transport, RESUME)
    assert result.verdict.outcome is Outcome.COMPLETED
    assert result.events == RUN  # the half frame dropped, sent again whole, read once
    assert app.last_event_ids == [None, "e2"]
    assert "transport.resumed" in codes(result)
    assert "transport.connection-lost" not in codes(result)


async def test_events_read_after_the_last_id_are_not_replayed(transport: str) -> None:
    app = Resumable(drop_after=4, ids={0: "a", 1: "b"})  # events 2 and 3 carry no id
    result = await run(app, transport, RESUME)
    assert app.last_event_ids == [None, "b"]  # the agent sends 2, 3, 4, 5 again
    assert result.verdict.outcome is Outcome.COMPLETED
    assert result.events == RUN


async def test_an_agent_that_sends_the_last_id_again_is_not_replayed(transport: str) -> None:
    app = Resumable(drop_after=3, inclusive=True)
    result = await run(app, transport, RESUME)
    assert result.events == RUN
    assert result.verdict.outcome is Outcome.COMPLETED


async def test_every_drop_resumes_until_the_run_ends(transport: str) -> None:
    app = Resumable(drop_after=2, drops=2)
    result = await run(app, transport, RESUME)
    assert app.last_event_ids == [None, "e1", "e3"]
    assert result.events == RUN
    assert codes(result).count("transport.resumed") == 2


async def test_without_event_ids_there_is_no_resuming(transport: str) -> None:
    app = Resumable(drop_after=3, ids={})
    result = await run(app, transport, RESUME)
    assert app.last_event_ids == [None]
    assert result.verdict.outcome is Outcome.TRUNCATED
    assert result.events == RUN[:3]
    lost = [d for d in result.diagnostics if d.code == "transport.connection-lost"]
    assert "no event id" in lost[0].message


async def test_an_event_id_past_the_bound_turns_resuming_off(transport: str) -> None:
    app = Resumable(drop_after=3, ids=sized(MAX_EVENT_ID + 1))
    result = await run(app, transport, RESUME)
    assert app.last_event_ids == [None]
    assert result.verdict.outcome is Outcome.TRUNCATED
    lost = [d for d in result.diagnostics if d.code == "transport.connection-lost"]
    assert f"longer than {MAX_EVENT_ID} bytes" in lost[0].message
    bounded = Resumable(drop_after=3, ids=sized(MAX_EVENT_ID))
    assert (await run(bounded, transport, RESUME)).events == RUN  # at the bound: resumed


async def test_reconnections_that_bring_no_event_end_at_the_attempts(transport: str) -> None:
    app = Resumable(drop_after=3, drops=99, again=0)
    result = await run(app, transport, Retries(attempts=2, backoff=0.01, resume=True))
    assert app.last_event_ids == [None, "e2", "e2"]
    assert result.verdict.outcome is Outcome.TRUNCATED and result.events == RUN[:3]
    lost = [d for d in result.diagnostics if d.code == "transport.connection-lost"]
    assert "2 reconnections in a row brought no event" in lost[0].message


async def test_an_id_that_is_no_header_value_is_not_resumed_from(transport: str) -> None:
    app = Resumable(drop_after=3, ids={n: f"é{n}" for n in range(len(RUN))})
    result = await run(app, transport, RESUME)
    assert app.last_event_ids == [None] and result.events == RUN[:3]
    lost = [d for d in result.diagnostics if d.code == "transport.connection-lost"]
    assert "not a header value" in lost[0].message


@pytest.mark.parametrize("retries", [None, Retries(backoff=0.01)])
async def test_resuming_is_off_by_default(transport: str, retries: Retries | None) -> None:
    app = Resumable(drop_after=3)
    result = await run(app, transport, retries)
    assert app.last_event_ids == [None]
    assert result.verdict.outcome is Outcome.TRUNCATED
    assert result.events == RUN[:3]
    assert "transport.connection-lost" in codes(result)


def test_frames_are_found_at_every_split_and_every_line_ending() -> None:
    stream = b"\xef\xbb\xbfid: a\r\ndata: 1\r\n\r\n: note\rdata: 2\r\rid\nid: b\0\ndata: 3\n\n"
    expected = [(b"a", True), (None, True), (b"", True)]
    for cut in range(len(stream) + 1):
        frames = _Frames()
        found = frames.feed(stream[:cut]) + frames.feed(stream[cut:])
        assert [(event_id, data) for _, event_id, data in found] == expected, cut
        assert b"".join(frame for frame, _, _ in found) == stream[3:]
