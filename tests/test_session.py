"""The engine without I/O (``_engine/session.py``): a read in, what it delivers out, and
the stream's verdict, last event delivered and runs kept by the session alone."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from agui_pipeline import Outcome, Pipeline, UsageError
from agui_pipeline._engine.builtin import run_without_loop
from agui_pipeline._engine.session import Session
from agui_pipeline.batch import Batch

RUN = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]
FRAMES = [b"data: " + orjson.dumps(event) + b"\n\n" for event in RUN]


def session_of(pipeline: Pipeline) -> Session:
    return Session(pipeline, pipeline.context())


def fed(session: Session, chunk: bytes | None) -> Batch:
    return run_without_loop(session.feed(chunk))


def test_a_read_in_what_it_delivers_out() -> None:
    session = session_of(Pipeline())
    assert fed(session, FRAMES[0][:9]).events == []  # half a frame: nothing yet
    assert session.last_delivered == -1
    assert fed(session, FRAMES[0][9:] + FRAMES[1]).events == RUN[:2]
    assert session.last_delivered == 1
    assert fed(session, b"".join(FRAMES[2:])).events == RUN[2:]
    assert session.verdict is None  # the stream has not ended
    assert fed(session, None).events == []
    assert session.verdict is not None and session.verdict.outcome is Outcome.COMPLETED
    assert session.context.counters.delivered == len(RUN)
    assert session.last_delivered == len(RUN) - 1
    with pytest.raises(UsageError, match="has ended"):
        fed(session, FRAMES[0])


def test_a_fault_ends_the_stream_with_what_went_before_it() -> None:
    """A handler fails on RUN_FINISHED: the events before it are delivered, the verdict is
    the session's, and the run whose end was not delivered is open again."""

    def fail(event: Any) -> None:
        raise LookupError("the UI went away")

    session = session_of(Pipeline(handlers={"RUN_FINISHED": fail}))
    assert fed(session, b"".join(FRAMES)).events == RUN[:-1]
    assert session.verdict is not None
    assert session.verdict.outcome is Outcome.HANDLER_FAILED
    assert session.last_delivered == len(RUN) - 2
    assert session.context.counters.delivered == len(RUN) - 1
    assert [str(run.status) for run in session.context.runs] == ["open"]
    with pytest.raises(UsageError, match="has ended"):
        fed(session, None)


def test_the_end_judges_a_run_left_open() -> None:
    session = session_of(Pipeline())
    fed(session, b"".join(FRAMES[:-1]))
    assert fed(session, None).events == []
    assert session.verdict is not None and session.verdict.outcome is Outcome.TRUNCATED
