"""The sync shell (``Pipeline.incremental``, ``run_sync``): the same stages without an
event loop — from a plain thread, inside a running asyncio loop, inside trio."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator
from typing import Any

import orjson
import pytest
import trio
from agui_pipeline import Incremental, Outcome, Pipeline, RunResult, UsageError, run_sync
from agui_pipeline.testing.conformance import Fixture, check_fixture, run_fixture

RUN = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Hel"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "lo"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]
BODY = b"".join(b"data: " + orjson.dumps(event) + b"\n\n" for event in RUN)


def fed_in_pieces(stream: Incremental, size: int) -> list[Any]:
    events: list[Any] = []
    for start in range(0, len(BODY), size):
        events += stream.feed(BODY[start : start + size])
    return events


def check_whole_run() -> None:
    """Everything the sync shell promises, in whatever context calls it."""
    stream = Pipeline().incremental()
    events = fed_in_pieces(stream, 7)  # frames cut anywhere
    assert not stream.ended
    result = stream.close()
    assert events == RUN
    assert result.events == []
    assert result.verdict.outcome is Outcome.COMPLETED
    assert result.conversation.messages[0]["content"] == "Hello"
    assert run_sync(BODY).events == RUN


def test_from_a_plain_thread() -> None:
    failures: list[BaseException] = []

    def work() -> None:
        try:
            check_whole_run()
        except BaseException as error:  # handed back to the test's thread
            failures.append(error)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(timeout=30)
    assert failures == []


def test_inside_a_running_asyncio_loop() -> None:
    async def main() -> None:
        check_whole_run()

    asyncio.run(main())


def test_inside_trio() -> None:
    async def main() -> None:
        check_whole_run()

    trio.run(main)


def test_each_feed_returns_the_events_its_bytes_completed() -> None:
    stream = Pipeline().incremental()
    first_frame = BODY.index(b"\n\n") + 2
    assert stream.feed(BODY[: first_frame - 1]) == []  # not a whole frame yet
    assert stream.feed(BODY[first_frame - 1 : first_frame]) == RUN[:1]


def test_a_truncated_run_is_judged_at_close() -> None:
    stream = Pipeline().incremental()
    stream.feed(BODY[: BODY.index(b"TEXT_MESSAGE_END") - 8])
    result = stream.close()
    assert result.verdict.outcome is Outcome.TRUNCATED
    assert stream.ended


def test_a_rejection_ends_the_stream_with_what_came_before() -> None:
    stream = Pipeline().incremental()
    bad = b'data: {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 5}\n\n'
    cut = BODY.rindex(b"data:", 0, BODY.index(b"TEXT_MESSAGE_CONTENT"))
    events = stream.feed(BODY[:cut] + bad + BODY[cut:])
    assert events == RUN[:2]
    assert stream.ended
    assert stream.verdict.outcome is Outcome.REJECTED
    with pytest.raises(UsageError, match="has ended"):
        stream.feed(b"data: {}\n\n")
    assert stream.close().verdict.outcome is Outcome.REJECTED


def test_runs_are_judged_as_the_async_shell_judges_them() -> None:
    """A handler fails on RUN_FINISHED: verify saw the run end, but the end was not
    delivered, so in both shells the run is open again — and counted so."""

    def fail(event: Any) -> None:
        raise LookupError("the UI went away")

    pipeline = Pipeline(handlers={"RUN_FINISHED": fail})
    stream = pipeline.incremental()
    stream.feed(BODY)
    fed = stream.close()
    ran = run_sync(BODY, pipeline)  # outside a loop: the async shell
    assert fed.verdict.outcome is ran.verdict.outcome is Outcome.HANDLER_FAILED
    assert [run.status for run in fed.runs] == [run.status for run in ran.runs] == ["open"]
    assert fed.run_counts == ran.run_counts == {"open": 1}


def test_the_verdict_before_the_end_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="has not ended"):
        _ = Pipeline().incremental().verdict


def test_a_sync_handler_and_a_handler_that_never_waits_both_run() -> None:
    seen: list[str] = []

    async def never_waits(event: Any) -> None:
        seen.append("async " + event["type"])

    pipeline = Pipeline(handlers={"RUN_STARTED": lambda e: seen.append(e["type"])})
    assert run_sync(BODY, pipeline).verdict.completed
    assert seen == ["RUN_STARTED"]
    assert run_sync(BODY, Pipeline(handlers={"RUN_FINISHED": never_waits})).verdict.completed
    assert seen == ["RUN_STARTED", "async RUN_FINISHED"]


def test_a_handler_that_waits_is_refused_with_the_async_api_named() -> None:
    async def waits(event: Any) -> None:
        await asyncio.sleep(0)

    stream = Pipeline(handlers={"RUN_STARTED": waits}).incremental()
    with pytest.raises(UsageError, match=r"await pipeline\.run"):
        stream.feed(BODY)


def test_run_sync_in_a_running_loop_refuses_an_async_source_plainly() -> None:
    async def chunks() -> AsyncGenerator[bytes]:
        yield BODY

    async def main() -> None:
        source = chunks()
        with pytest.raises(UsageError, match=r"await pipeline\.run"):
            run_sync(source)
        await source.aclose()

    asyncio.run(main())


def test_run_sync_reads_a_file_inside_a_running_loop(tmp_path: Any) -> None:
    path = tmp_path / "run.sse"
    path.write_bytes(BODY)

    async def main() -> None:
        assert run_sync(path).events == RUN
        with pytest.raises(FileNotFoundError, match="no such file"):
            run_sync(str(tmp_path / "absent.sse"))

    asyncio.run(main())


def test_a_result_handed_back_from_a_loop_is_never_written_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``run_sync`` (and the conformance runner, ``check -``) start a loop and hand back a
    result that may hold a whole stream. On CPython 3.11 and 3.12, asyncio's runner writes
    out the repr of its main task as it closes, result and all: the answer must not be that
    task's result (``incremental.run_in_loop``)."""
    written: list[str] = []

    def watched(self: RunResult) -> str:
        written.append("RunResult")
        return "RunResult(...)"

    monkeypatch.setattr(RunResult, "__repr__", watched)
    assert run_sync(BODY).events == RUN
    expect = {"outcome": "completed", "runError": False}  # read from the events: replayed
    replay = run_fixture(Fixture("f", list(RUN), expect))
    assert check_fixture(replay).passed
    assert written == [], f"the result was written out {len(written)} times"
