"""The sync shell: one stream fed by hand, no event loop, over the same stages.

The stages are async by contract (``Stage.process`` is a coroutine), but none of
the built-in ones ever waits: each is plain code per batch. So a coroutine
that runs them can be stepped once, by hand, and finishes without a loop —
which works from a worker thread, a Flask or Django view, and inside a running
asyncio or trio loop alike (nothing here touches a loop)::

    stream = Pipeline().incremental()
    for chunk in response.iter_bytes():        # any source of bytes
        for event in stream.feed(chunk):        # the events this read delivered
            ...
    result = stream.close()                     # the verdict, diagnostics, Conversation

What cannot work without a loop is something that really waits: an ``async``
handler or sink that awaits I/O, or middleware that does. The sync shell
refuses it the moment it waits, with :class:`~agui_pipeline.UsageError`
naming the async API to use instead; an ``async def`` handler that never
awaits anything that suspends runs fine.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from agui_pipeline._engine.builtin import run_without_loop
from agui_pipeline._engine.core import StagePlan
from agui_pipeline._engine.deliver import open_session
from agui_pipeline._engine.result import RunResult, Verdict, result_of
from agui_pipeline.errors import UsageError
from agui_pipeline.events import AnyEvent
from agui_pipeline.subscribers import delivered

T = TypeVar("T")


class Incremental:
    """One stream through a pipeline, fed bytes from synchronous code.

    :meth:`feed` takes the next bytes as they arrive (any split: half a frame,
    many frames) and returns the events delivered for them; :meth:`close` ends
    the stream and returns its :class:`~agui_pipeline.RunResult`. When a fault
    ends the stream early (a rejection, a handler that raised), the
    :meth:`feed` that met it returns what was delivered before it, :attr:`ended`
    turns true, and feeding more raises :class:`~agui_pipeline.UsageError`.
    The fault-delivery rule is the engine's own (``_engine/faults.after_fault``).
    """

    def __init__(self, pipeline: StagePlan, *, run_input: dict[str, Any] | None = None) -> None:
        self.context = pipeline.context(run_input)
        self._session = open_session(pipeline, self.context)
        self._closing: list[AnyEvent] = []

    @property
    def ended(self) -> bool:
        """Whether the stream has ended (closed, or ended early by a fault)."""
        return self._session.verdict is not None

    @property
    def verdict(self) -> Verdict:
        """How the stream was judged; :class:`~agui_pipeline.UsageError` before its end."""
        verdict = self._session.verdict
        if verdict is None:
            raise UsageError("the stream has not ended: call close() at the end of its bytes")
        return verdict

    def feed(self, data: bytes | bytearray | memoryview) -> list[AnyEvent]:
        """Decode and process the next bytes; the events they delivered, in order."""
        verdict = self._session.verdict
        if verdict is not None:
            raise UsageError(
                f"the stream has ended ({verdict.outcome}): it reads nothing more; "
                "see .verdict, or close() for the result"
            )
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"feed() takes bytes, not {type(data).__name__}")
        return self._step(bytes(data))

    def close(self) -> RunResult:
        """End the stream (its open runs are judged) and return the result.

        ``events`` on the result holds the events delivered by the end itself
        (usually none: every earlier event was returned by :meth:`feed`).
        """
        if self._session.verdict is None:
            self._closing = self._step(None)
        return result_of(self.context, self.verdict, self._closing)

    def _step(self, chunk: bytes | None) -> list[AnyEvent]:
        return delivered(run_without_loop(self._session.feed(chunk)).events)


def in_event_loop() -> bool:
    """Whether this thread is running an asyncio or trio event loop right now.

    Each is asked only if imported: a loop cannot run without its module, and so the
    sync shell never imports asyncio itself.
    """
    asyncio: Any = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            return True
    trio: Any = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            return False
        return True
    return False


def run_in_loop(function: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``anyio.run(function, *args)``, from synchronous code, with ``function``'s answer
    handed back past the loop's main task rather than as its result.

    As asyncio's runner closes (CPython 3.11 and 3.12), it puts back the SIGINT handler,
    and ``signal.signal`` words a ``ValueError`` out of the repr of the handler it replaces:
    a partial holding the main task, whose repr holds the task's result. A stream's
    ``RunResult`` would be written out whole, twice, for nothing: 20,000 events cost more
    that way than their run (``Pipeline.run_sync``: 0.14 s against 0.03 s)."""
    import anyio  # only what starts a loop imports it: the sync shell never does

    answer: list[T] = []

    async def main() -> None:
        answer.append(await function(*args))

    anyio.run(main)
    return answer[0]


__all__ = ["Incremental"]
