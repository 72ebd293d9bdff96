"""The async shell: one stream read as it arrives, under a clock for live sources."""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from contextlib import aclosing
from types import TracebackType
from typing import Any

from agui_pipeline._engine.core import StagePlan
from agui_pipeline._engine.deliver import open_session
from agui_pipeline._engine.result import RunResult, Verdict, result_of
from agui_pipeline._engine.session import Session
from agui_pipeline._engine.sources import (
    Source,
    SourceTimedOut,
    check_source,
    may_stall,
    open_reads,
)
from agui_pipeline.batch import Batch, Event
from agui_pipeline.catalog import SOURCE_IDLE_TIMEOUT, SOURCE_MAX_DURATION
from agui_pipeline.errors import UsageError
from agui_pipeline.events import AnyEvent
from agui_pipeline.options import Options
from agui_pipeline.stage import StreamContext
from agui_pipeline.subscribers import delivered

# anyio (and asyncio under it, with ssl, sockets, threads: about a fifth of `check FILE`'s
# start-up) is imported only by what waits: this shell's read loop, its clock and
# `run_sync` outside a loop. The sync shell (`Pipeline.incremental`), which `check` runs a
# file through, never imports it.


class EventStream:
    """One stream going through a pipeline, read as it arrives.

    Read it inside ``async with``, which closes the source however the block
    ends (a ``break``, an exception, a cancellation); the verdict is there once
    the stream has been read to its end::

        async with pipeline.open(source) as stream:
            async for event in stream:     # each delivered event, an AnyEvent
                ...
        print(stream.verdict.outcome)

    :meth:`batches` gives the lists as each read delivers them instead, and
    :meth:`drain` judges a stream without keeping its events (no ``async with``
    needed). Iterating outside ``async with`` raises
    :class:`~agui_pipeline.UsageError` before anything is opened, so an
    abandoned loop cannot leave a file or a connection open.
    """

    def __init__(
        self,
        pipeline: StagePlan,
        source: Source,
        ctx: StreamContext,
        *,
        opened_at: float | None = None,
        source_timeout: float | None = None,
    ) -> None:
        """``opened_at`` (``anyio.current_time()``) is when ``max_duration`` starts to
        count — an HTTP client passes when it sent the request; by default, the first
        read. ``source_timeout`` says the source bounds each read's wait itself, raising
        :class:`~agui_pipeline._engine.sources.SourceTimedOut` when one waits that long (an HTTP
        client's read timeout); the engine then adds no timer of its own while that
        bound is within the idle window.
        """
        check_source(source)
        self._opened_at = opened_at
        self._source_timeout = source_timeout
        self._pipeline = pipeline
        self._source = source
        self.context = ctx
        self._session: Session | None = None
        self._entered = False
        self._closed = False
        self._batches: AsyncGenerator[Batch, None] | None = None
        self._pending: Iterator[AnyEvent] = iter(())
        self._verdict_only = False
        """Whether the caller keeps neither the events nor the Conversation (:meth:`drain`)."""

    # -- reading ------------------------------------------------------------

    @property
    def ended(self) -> bool:
        """Whether the stream has been read to its end (and so has a :attr:`verdict`)."""
        return self._session is not None and self._session.verdict is not None

    @property
    def verdict(self) -> Verdict:
        """How the consumer judged the stream; :class:`~agui_pipeline.UsageError` before its end."""
        verdict = None if self._session is None else self._session.verdict
        if verdict is None:
            if self._closed:
                raise UsageError(
                    "the stream was closed before its end (the loop stopped early): "
                    "it has no verdict"
                )
            raise UsageError("the stream has not ended: read it to the end or use drain()")
        return verdict

    def batches(self) -> AsyncIterator[Batch]:
        """Delivered events, one batch per read (inside ``async with``, like iteration)."""
        if self._closed:
            raise UsageError("the stream was closed: a stream is read once, inside async with")
        if self._batches is None:
            if not self._entered:
                raise UsageError(
                    "read an EventStream inside `async with pipeline.open(source) as "
                    "stream:`, which closes the source when the block ends; or use "
                    "await pipeline.run(source) or await stream.drain()"
                )
            self._batches = self._run()
        return self._batches

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> AnyEvent:
        for event in self._pending:
            return event
        async for batch in self._batches or self.batches():
            # The delivered events, typed: subscribers.delivered() without a call per read.
            self._pending = iter(batch.events)  # type: ignore[arg-type]
            for event in self._pending:
                return event
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Close the source (a file, a connection, your iterator); reading stops here."""
        self._closed = True
        self._pending = iter(())
        if self._batches is not None:
            batches, self._batches = self._batches, None  # batches() now says it was closed
            await batches.aclose()

    async def drain(self, *, conversation: bool = True) -> RunResult:
        """Read the stream to its end keeping none of its events, and close it.

        For judging a stream rather than using it: the result has the verdict,
        the diagnostics, the accounting and the Conversation, and ``events`` is
        empty — so a stream of any length takes only the memory its open items
        (and the Conversation, unless it is turned off) need.

        ``conversation=False`` keeps the Conversation out of the result too (the
        pipeline's Conversation still bounds the stream by its limits, so the verdict
        is the one a drain with it gives), as does ``Pipeline(conversation=False)``.
        Then, where nothing else reads the events (the default stages, no handler or
        sink), the native core judges the stream without building them, but those a
        declaration's reconcile reads (``docs/performance.md``, "A stream read as it
        arrives").
        """
        verdict_only = not (conversation and self.context.options.conversation)
        self._verdict_only = verdict_only
        async with self:
            async for _batch in self.batches():
                pass
        result = self.result([])
        if verdict_only:
            result.materialised = None
        return result

    def result(self, events: list[Event]) -> RunResult:
        """The :class:`RunResult` of this stream once read to its end, with ``events`` delivered."""
        return result_of(self.context, self.verdict, delivered(events))

    async def __aenter__(self) -> EventStream:
        if self._closed:
            raise UsageError("the stream was closed: a stream is read once")
        self._entered = True
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- the engine ---------------------------------------------------------

    async def _run(self) -> AsyncGenerator[Batch, None]:
        ctx = self.context
        session = self._session = open_session(self._pipeline, ctx, verdict_only=self._verdict_only)
        feed = session.feed
        # Bytes in memory and files cannot stall: the clock only guards what can.
        clock = (
            _Clock.of(ctx.options, self._opened_at, self._source_timeout)
            if may_stall(self._source)
            else None
        )
        counters = ctx.counters
        try:
            async with aclosing(open_reads(self._source)) as chunks:
                read = chunks.__anext__
                while True:
                    try:
                        if clock is None:
                            chunk = await read()
                        elif clock.covered():
                            chunk = await read()  # the source's own read timeout bounds it
                        elif clock.lazy:
                            # No scope per read: the stream's one timer cancels this
                            # task if it fires while the read waits past the window.
                            clock.watch()
                            try:
                                chunk = await read()
                            except clock.cancelled:
                                if clock.expired():
                                    raise SourceTimedOut from None
                                raise
                            finally:
                                clock.reading = None
                        else:
                            # Trio's own scope, not anyio's or fail_after: no wrapper,
                            # no context-manager generator.
                            with clock.scope(deadline=clock.due()) as scope:
                                chunk = await read()
                            if scope.cancelled_caught:
                                raise SourceTimedOut
                    except StopAsyncIteration:
                        break
                    except SourceTimedOut:
                        _Clock.report(clock, ctx)
                        break
                    seen = counters.read
                    batch = await feed(chunk)
                    if clock is not None:
                        if counters.read != seen:
                            clock.waited = 0.0  # an event: the idle window starts again
                        else:
                            clock.stop()  # none: the read's time counts toward the window
                    if session.verdict is not None:
                        break  # a fault ended the stream
                    if batch.events:
                        yield batch
                if session.verdict is None:
                    batch = await feed(None)
            # The verdict is set and the source closed before the last events go out: a
            # consumer may stop reading right there.
            if batch.events:
                yield batch
        finally:
            if clock is not None:
                clock.close()


class _Clock:
    """When a live stream is given up: after ``idle_timeout`` seconds spent waiting on
    the source since its last event, or ``max_duration`` seconds after it was opened,
    whichever comes first.

    Idle counts from the last *event* decoded, not the last byte: a producer that sends
    keep-alive comments, or one byte a second, completes no frame and so cannot hold
    the stream open past the window. Only the time spent waiting for the source
    counts, so a consumer that is slow between reads is not taken for a stalled producer.

    The budget of a read is ``due()``: when it started, plus the window, less what the
    reads since the last event have already waited, and never past the deadline. It
    never moves earlier from one read to the next, so on asyncio (``lazy``) the stream
    keeps one timer, armed at the budget of the read that armed it: each read only
    notes when it started (:meth:`watch`), and the timer, when it fires, cancels the
    waiting read if its budget is spent, or is armed again at the later budget a read
    since has made. A cancel scope per read, and its timer, cost about 48,000
    instructions a read, as much as the rest of the engine's work on a one-event read
    (``python -m benchmarks.instructions --live``). Trio cancels a wait only through a
    scope around it — a task cannot be cancelled from outside as asyncio's can — so
    there a read still waits under a scope of its own whose deadline is its budget;
    trio's own scope, which costs less than anyio's wrapper of it.

    When the source bounds its own reads (``source_timeout``: an HTTP client's read
    timeout) no later than the budget, the engine adds nothing: the common case of a
    healthy stream read by ``HttpAgent`` (an event on every read, no ``max_duration``).
    """

    __slots__ = (
        "baseline",
        "cancelled",
        "end",
        "fired",
        "idle",
        "lazy",
        "loop",
        "now",
        "reading",
        "scope",
        "source_timeout",
        "started",
        "task_now",
        "timer",
        "waited",
    )

    def __init__(self, idle: float, end: float, source_timeout: float | None) -> None:
        self.idle = idle
        self.end = end
        self.source_timeout = source_timeout
        self.waited = 0.0
        self.started = 0.0
        # asyncio's loop, its current task and its cancellation; None under trio.
        self.loop, self.task_now, self.cancelled = _asyncio_parts()
        self.lazy = self.loop is not None
        self.now: Callable[[], float]
        self.scope: Any  # trio.CancelScope under trio
        if self.lazy:
            self.now, self.scope = self.loop.time, None
        else:
            self.scope, self.now = _trio_parts()
        self.timer: Any = None  # the asyncio.TimerHandle, while one is armed
        self.reading: Any = None  # the asyncio.Task waiting on a read, while it waits
        self.baseline = 0  # the task's pending cancellations when the read began
        self.fired = False  # the timer cancelled the read

    @classmethod
    def of(
        cls, options: Options, opened_at: float | None, source_timeout: float | None
    ) -> _Clock | None:
        idle, most = options.idle_timeout, options.max_duration
        if idle is None and most is None:
            return None
        import anyio

        opened = anyio.current_time() if opened_at is None else opened_at
        end = math.inf if most is None else opened + most
        return cls(math.inf if idle is None else idle, end, source_timeout)

    def covered(self) -> bool:
        """Whether the source's own read timeout fires within the budget left (and the
        read about to start is timed for :meth:`stop`)."""
        self.started = now = self.now()
        timeout = self.source_timeout
        return (
            timeout is not None and timeout <= self.idle - self.waited and now + timeout <= self.end
        )

    def due(self) -> float:
        """When the read that started last runs out of budget."""
        return min(self.started + self.idle - self.waited, self.end)

    # -- asyncio: one timer per stream ------------------------------------------------

    def watch(self) -> None:
        """A read is about to wait (after :meth:`covered` noted when): the timer may
        cancel the task from now until ``reading`` is cleared."""
        task = self.reading = self.task_now()
        if self.fired:  # a read the timer cancelled returned anyway: forget that cancel
            self.fired = False
            task.uncancel()
        self.baseline = task.cancelling()
        if self.timer is None:
            self.timer = self.loop.call_at(self.due(), self._fire)

    def _fire(self) -> None:
        self.timer = None
        task = self.reading
        if task is None:
            return  # between reads (the consumer is busy): the next read arms it again
        due = self.due()
        if self.now() < due:
            self.timer = self.loop.call_at(due, self._fire)  # a read since moved the budget
            return
        self.fired = True
        task.cancel()

    def expired(self) -> bool:
        """Whether the cancellation a read ended with is the timer's alone (asyncio's
        ``timeout`` tells its own the same way): another one goes on as it came."""
        if not self.fired:
            return False
        self.fired = False
        return bool(self.reading.uncancel() <= self.baseline)

    def close(self) -> None:
        """The stream is over: its timer goes."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def stop(self) -> None:
        """After a read that brought no event (a keep-alive comment, part of a frame) and
        its decoding: the time since it started counts toward the idle window. A read
        with an event sets ``waited`` to 0 instead, without reading the clock: once per
        read then, not twice."""
        self.waited += self.now() - self.started

    @staticmethod
    def report(clock: _Clock | None, ctx: StreamContext) -> None:
        """Say which fired: the deadline, or the idle window (also a source's own timeout)."""
        index = ctx.counters.read
        if clock is not None and clock.now() >= clock.end:
            ctx.report(
                SOURCE_MAX_DURATION(max_duration=ctx.options.max_duration),
                event_index=index,
            )
        else:
            idle = ctx.options.idle_timeout
            ctx.report(
                SOURCE_IDLE_TIMEOUT(idle=idle),
                event_index=index,
            )


def _asyncio_parts() -> tuple[Any, Any, Any]:
    """The running asyncio loop, ``asyncio.current_task`` and ``asyncio.CancelledError``;
    ``None`` each under another backend (trio)."""
    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None, None, None
    return loop, asyncio.current_task, asyncio.CancelledError


def _trio_parts() -> tuple[Any, Callable[[], float]]:
    """Trio's ``CancelScope`` and clock, used directly: anyio's look the backend up on
    every call and wrap trio's scope in one of their own. Imported here, when a stream
    under trio first waits, never at import (the CLI's import test holds that)."""
    import trio

    return trio.CancelScope, trio.current_time
