"""A pytest plugin for agent developers: is my agent's stream conformant?

Registered through the ``pytest11`` entry point, so installing the package
(with the ``serve`` extra) is enough. It gives:

- ``agui_replay``: serve a recording, or a list of turns, on 127.0.0.1 for the test;
- ``agui_run``: POST a run input to an ASGI app or a URL and read the answer
  through the default pipeline (an app is served on 127.0.0.1 for the call);
- :func:`assert_clean`: fail, listing the diagnostics, unless the stream
  completed with nothing at or above a severity.

::

    from agui_pipeline.testing.pytest_plugin import assert_clean

    def test_my_agent_is_conformant(agui_run):
        assert_clean(agui_run(my_agent_app, {"threadId": "t", "runId": "r", "messages": []}))

The fixtures are synchronous (each call runs its own event loop): use them from
plain ``def`` tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from agui_pipeline._engine.incremental import run_in_loop
from agui_pipeline._engine.pipeline import Pipeline
from agui_pipeline._engine.result import RunResult
from agui_pipeline.batch import Event
from agui_pipeline.catalog import Severity

if TYPE_CHECKING:  # the serve extra is imported only when a fixture is used
    from starlette.types import ASGIApp

_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}

Recording = Sequence[Event] | Sequence[Sequence[Event]] | Path | bytes
"""Events, a list of turns (lists of events), or a recording file or its bytes."""


def assert_clean(result: RunResult, level: str = "warning") -> None:
    """Fail unless the stream completed with no diagnostic at ``level`` or above.

    ``level`` is ``"error"``, ``"warning"`` (the default) or ``"info"``. The
    failure lists the verdict and every diagnostic that counts, with its code,
    event index, pointer and spec page.
    """
    threshold = _RANK[Severity(level)]
    counted = [d for d in result.diagnostics if _RANK[d.severity] >= threshold]
    if result.verdict.completed and not counted:
        return
    lines = [f"the stream is not clean at level {level!r}:"]
    if not result.verdict.completed:
        lines.append(f"  {result.verdict.outcome}: {result.verdict.message}")
    lines += [f"  {d.severity}: {d}" for d in counted]
    pytest.fail("\n".join(lines), pytrace=False)


def _replay_of(recording: Recording, settings: Mapping[str, Any]) -> Any:
    from agui_pipeline.http.serve import Replay, read_conversation, read_recording

    if isinstance(recording, Path):
        turns: Sequence[Sequence[Event]] = read_conversation(recording)
    elif isinstance(recording, bytes):
        turns = [read_recording(recording)]
    elif recording and all(isinstance(turn, list | tuple) for turn in recording):
        turns = recording  # type: ignore[assignment]  # a list of turns, checked just above
    else:
        turns = [recording]  # type: ignore[list-item]  # a list of events
    if len(turns) == 1:
        return Replay(turns[0], **settings)
    return Replay.conversation(turns, **settings)


@pytest.fixture
def agui_replay() -> Iterator[Callable[..., Any]]:
    """``agui_replay(recording, **replay_settings)`` serves it and returns the running
    :class:`~agui_pipeline.ReplayServer` (``.url``, ``.replay.requests``); stopped after
    the test. The settings are :class:`~agui_pipeline.Replay`'s (``echo_ids=True``…)."""
    from agui_pipeline.http.serve import ReplayServer

    with ExitStack() as servers:

        def start(recording: Recording, **settings: Any) -> Any:
            return servers.enter_context(ReplayServer(_replay_of(recording, settings)))

        yield start


@pytest.fixture
def agui_run() -> Iterator[Callable[..., RunResult]]:
    """``agui_run(target, run_input, *, pipeline=None, headers=None)``: the
    :class:`~agui_pipeline.RunResult` of POSTing ``run_input`` to ``target`` — a URL, or
    an ASGI app, served on 127.0.0.1 for the test."""
    from agui_pipeline.http.client import HttpAgent
    from agui_pipeline.http.serve import BackgroundServer

    with ExitStack() as servers:
        urls: dict[int, str] = {}

        def run(
            target: str | ASGIApp,
            run_input: Mapping[str, Any],
            *,
            pipeline: Pipeline | None = None,
            headers: Mapping[str, str] | None = None,
        ) -> RunResult:
            if isinstance(target, str):
                url = target
            else:
                if id(target) not in urls:
                    urls[id(target)] = servers.enter_context(BackgroundServer(target)).url
                url = urls[id(target)]

            async def main() -> RunResult:
                async with HttpAgent(url, pipeline=pipeline, headers=headers) as agent:
                    return await agent.run(run_input)

            return run_in_loop(main)

        yield run
