"""The pytest plugin, used as an agent developer would: its fixtures here, and in a file of
its own run by pytester (how a failure reads)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from agui_pipeline import Relay, RunResult, resume_input
from agui_pipeline.testing.pytest_plugin import assert_clean

pytest_plugins = ("pytester",)

RUN: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]
INPUT = {"threadId": "t", "runId": "r", "messages": []}
Run = Callable[..., RunResult]


def test_a_served_recording_read_through_the_pipeline_is_clean(
    agui_replay: Callable[..., Any], agui_run: Run
) -> None:
    server = agui_replay(RUN)
    result = agui_run(server.url, INPUT)
    assert_clean(result)
    assert result.events == RUN and server.replay.requests[0][1]["threadId"] == "t"


def test_an_asgi_app_is_served_for_the_call(agui_replay: Callable[..., Any], agui_run: Run) -> None:
    upstream = agui_replay(RUN)
    assert_clean(agui_run(Relay(upstream.url), INPUT))


def test_turns_play_in_order(agui_replay: Callable[..., Any], agui_run: Run) -> None:
    interrupt = {"type": "interrupt", "interrupts": [{"id": "i", "reason": "ok?"}]}
    asked = [*RUN[:-1], {**RUN[-1], "outcome": interrupt}]
    # The second turn streams new material: a message of its own (the first one is history).
    answer = [{**event, "messageId": "m-2"} if "messageId" in event else event for event in RUN]
    server = agui_replay([asked, answer], echo_ids=True)
    first = agui_run(server.url, INPUT)
    second = agui_run(server.url, resume_input(INPUT, first, {"i": True}, run_id="r-2"))
    assert_clean(first)
    assert_clean(second)
    assert second.events[0] == {**RUN[0], "runId": "r-2"}


def test_assert_clean_fails_with_the_diagnostics(
    agui_replay: Callable[..., Any], agui_run: Run
) -> None:
    server = agui_replay([{**RUN[0], "rogue": 1}, *RUN[1:]])
    result = agui_run(server.url, INPUT)
    assert_clean(result, level="error")  # a stripped member is a warning, not an error
    with pytest.raises(pytest.fail.Exception, match=r"(?s)level 'warning'.*/rogue"):
        assert_clean(result)


def test_a_truncated_stream_is_not_clean(agui_replay: Callable[..., Any], agui_run: Run) -> None:
    server = agui_replay(RUN, drop_after=2)
    with pytest.raises(pytest.fail.Exception, match="truncated"):
        assert_clean(agui_run(server.url, INPUT), level="error")


def test_the_plugin_loads_from_its_entry_point_in_a_users_test_file(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_agent="""
        from agui_pipeline.testing.pytest_plugin import assert_clean

        RUN = [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "ghost", "delta": "x"},
        ]

        def test_my_agent(agui_replay, agui_run):
            server = agui_replay(RUN)
            assert_clean(agui_run(server.url, {"threadId": "t", "runId": "r", "messages": []}))
        """
    )
    outcome = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    outcome.assert_outcomes(failed=1)
    outcome.stdout.fnmatch_lines(["*not clean at level 'warning'*", "*rejected*ghost*"])
