"""The engine: a :class:`Pipeline` of stages, and what one stream through it yields.

The flow (``ARCHITECTURE.md``; ``/spec/1.1/basic/processing``, "Where
middleware sits")::

    parse → compat → middleware → enforce → expand → verify
          → reconcile → metadata → dispatch

Everything runs in the caller's task: one read, then each stage in turn on
that batch, then delivery. There are no background tasks, so cancellation
(a cancel scope, a closed connection) simply propagates and nothing is left
behind; backpressure is natural, because the next read happens only when the
consumer asks for more.
"""

from __future__ import annotations

import math
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterator,
    Sequence,
)
from contextlib import aclosing
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from types import TracebackType
from typing import Any

from .catalog import SOURCE_IDLE_TIMEOUT, SOURCE_MAX_DURATION
from .conversation import Conversation
from .declaration import CapabilitiesSource, Declaration
from .errors import Diagnostic, HandlerFailed, StreamRejected, StreamTruncated, UsageError
from .events import AnyEvent
from .options import UNSET, Limits, Options, Unset, changed
from .sources import (
    Source,
    SourceTimedOut,
    check_source,
    iter_chunks_sync,
    may_stall,
    open_reads,
)
from .stage import (
    Batch,
    Counters,
    Decoder,
    DecoderFactory,
    Event,
    RunRecord,
    RunStatus,
    Stage,
    StageFactory,
    StreamContext,
    empty_batch,
)
from .subscribers import HandlerMap, Handlers, Sink, delivered

# anyio (and asyncio under it, with ssl, sockets, threads: about a fifth of `check FILE`'s
# start-up) is imported only by what waits: the async shell's read loop, its clock and
# `run_sync` outside a loop. The sync shell (`Pipeline.incremental`), which `check` runs a
# file through, never imports it.


class Outcome(StrEnum):
    """How the consumer judged the stream."""

    COMPLETED = "completed"
    """Consumed to the end; every run on it closed (a ``RUN_ERROR`` is a closed, failed run)."""
    REJECTED = "rejected"
    """A malformed known value or a broken sequence ended it."""
    TRUNCATED = "truncated"
    """It ended while a run was open: that run has no outcome."""
    HANDLER_FAILED = "handler-failed"
    """Application code raised while handling a delivered event."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The consumer's verdict on one stream, with the error that ended it, if any."""

    outcome: Outcome
    error: StreamRejected | HandlerFailed | None = None

    @property
    def completed(self) -> bool:
        return self.outcome is Outcome.COMPLETED

    @property
    def code(self) -> str | None:
        """The catalog code of the error (``dispatch.handler-failed`` for a handler's)."""
        return None if self.error is None else self.error.code

    @property
    def message(self) -> str | None:
        return None if self.error is None else str(self.error)

    @property
    def pointer(self) -> str | None:
        return self.error.pointer if isinstance(self.error, StreamRejected) else None

    @property
    def event_index(self) -> int | None:
        return None if self.error is None else self.error.event_index

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": str(self.outcome),
            "code": self.code,
            "message": self.message,
            "pointer": self.pointer,
            "eventIndex": self.event_index,
        }


@dataclass(slots=True)
class RunResult:
    """Everything one stream produced: what was delivered, what was said, the verdict."""

    events: list[AnyEvent]
    verdict: Verdict
    diagnostics: list[Diagnostic]
    counters: Counters
    transport: str | None = None
    suppressed: dict[str, int] = field(default_factory=dict)
    """Diagnostics over the ``max_diagnostics`` limit, counted by code."""
    runs: list[RunRecord] = field(default_factory=list)
    """The runs on the stream in order, with how each ended (kept by verify): all of them
    up to ``Limits.max_run_records``, past that the first half of that many and the latest
    half (:attr:`run_counts` counts every run)."""
    run_counts: dict[str, int] = field(default_factory=dict)
    """Every run on the stream by :class:`RunStatus` value, listed in :attr:`runs` or not."""
    materialised: Conversation | None = field(default=None, repr=False)
    """The Conversation, or ``None`` when the pipeline builds none (see :attr:`conversation`)."""

    @property
    def conversation(self) -> Conversation:
        """The materialised Conversation: messages, state, pending interrupts.

        Raises :class:`~agui_pipeline.UsageError` when the pipeline builds none
        (``Pipeline(conversation=False)``, or no dispatch stage); the
        ``materialised`` field is the same value, ``None`` in those cases.
        """
        if self.materialised is None:
            raise UsageError(
                "this result has no Conversation: the pipeline was made with "
                "conversation=False, or without the dispatch stage that builds it"
            )
        return self.materialised

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]

    def raise_for_verdict(self) -> None:
        """Raise the error that ended the stream, if it did not complete."""
        if self.verdict.error is not None:
            raise self.verdict.error


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
        pipeline: Pipeline,
        source: Source,
        ctx: StreamContext,
        *,
        opened_at: float | None = None,
        source_timeout: float | None = None,
    ) -> None:
        """``opened_at`` (``anyio.current_time()``) is when ``max_duration`` starts to
        count — an HTTP client passes when it sent the request; by default, the first
        read. ``source_timeout`` says the source bounds each read's wait itself, raising
        :class:`~agui_pipeline.sources.SourceTimedOut` when one waits that long (an HTTP
        client's read timeout); the engine then adds no timer of its own while that
        bound is within the idle window.
        """
        check_source(source)
        self._opened_at = opened_at
        self._source_timeout = source_timeout
        self._pipeline = pipeline
        self._source = source
        self.context = ctx
        self._verdict: Verdict | None = None
        self._entered = False
        self._closed = False
        self._batches: AsyncGenerator[Batch, None] | None = None
        self._pending: Iterator[AnyEvent] = iter(())

    # -- reading ------------------------------------------------------------

    @property
    def ended(self) -> bool:
        """Whether the stream has been read to its end (and so has a :attr:`verdict`)."""
        return self._verdict is not None

    @property
    def verdict(self) -> Verdict:
        """How the consumer judged the stream; :class:`~agui_pipeline.UsageError` before its end."""
        if self._verdict is None:
            if self._closed:
                raise UsageError(
                    "the stream was closed before its end (the loop stopped early): "
                    "it has no verdict"
                )
            raise UsageError("the stream has not ended: read it to the end or use drain()")
        return self._verdict

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

    async def drain(self) -> RunResult:
        """Read the stream to its end keeping none of its events, and close it.

        For judging a stream rather than using it: the result has the verdict,
        the diagnostics, the accounting and the Conversation, and ``events`` is
        empty — so a stream of any length takes only the memory its open items
        (and the Conversation, unless it is turned off) need.
        """
        async with self:
            async for _batch in self.batches():
                pass
        return self.result([])

    def result(self, events: list[Event]) -> RunResult:
        """The :class:`RunResult` of this stream once read to its end, with ``events`` delivered."""
        ctx = self.context
        return RunResult(
            events=delivered(events),
            verdict=self.verdict,
            diagnostics=ctx.diagnostics,
            counters=ctx.counters,
            transport=ctx.transport,
            suppressed=ctx.suppressed,
            runs=ctx.runs,
            run_counts=ctx.run_counts(),
            materialised=ctx.conversation,
        )

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
        import anyio  # here, not at the top: see the imports

        ctx = self.context
        decoder = self._pipeline.decoder(ctx)
        stages = [factory(ctx) for factory in self._pipeline.stage_factories]
        built_in = _built_in_stages()
        foreign = any(type(stage) not in built_in for stage in stages)
        # Bytes in memory and files cannot stall: the clock only guards what can.
        clock = (
            _Clock.of(ctx.options, self._opened_at, self._source_timeout)
            if may_stall(self._source)
            else None
        )
        counters = ctx.counters
        through = -1  # the event index of the last event delivered
        try:
            async with aclosing(open_reads(self._source)) as chunks:
                read = chunks.__anext__
                while True:
                    try:
                        if clock is None:
                            chunk = await read()
                        elif clock.covered():
                            chunk = await read()  # the source's own read timeout bounds it
                        else:
                            # A bare scope, not fail_after: no context-manager generator.
                            with anyio.CancelScope(deadline=clock.deadline()) as scope:
                                chunk = await read()
                            if scope.cancelled_caught:
                                raise SourceTimedOut
                    except StopAsyncIteration:
                        break
                    except SourceTimedOut:
                        _Clock.report(clock, ctx)
                        break
                    seen = counters.read
                    batch = await _read(decoder, stages, chunk, foreign=foreign)
                    if clock is not None:
                        if counters.read != seen:
                            clock.waited = 0.0  # an event: the idle window starts again
                        else:
                            clock.stop()  # none: the read's time counts toward the window
                    if batch.events:
                        counters.delivered += len(batch.events)
                        through = batch.indices[-1]
                        yield batch
                batch = await _read(decoder, stages, None)
                if batch.events:
                    counters.delivered += len(batch.events)
                    yield batch
        except _Ended as ended:
            # Set before the last yield: a consumer may stop reading right there.
            self._verdict = _verdict_of(ended.fault)
            if ended.delivered.events:
                through = ended.delivered.indices[-1]
            _reopen_discarded(ctx.runs, through)
            if ended.delivered.events:
                counters.delivered += len(ended.delivered.events)
                yield ended.delivered
            return
        self._verdict = Verdict(Outcome.COMPLETED)


class _Clock:
    """When a live stream is given up: after ``idle_timeout`` seconds spent waiting on
    the source since its last event, or ``max_duration`` seconds after it was opened,
    whichever comes first.

    Idle counts from the last *event* decoded, not the last byte: a producer that sends
    keep-alive comments, or one byte a second, completes no frame and so cannot hold
    the stream open past the window. Only the time spent waiting for the source
    counts, so a consumer that is slow between reads is not taken for a stalled producer.

    A read waits under a cancel scope whose deadline is the budget left — unless the
    source bounds its own reads (``source_timeout``: an HTTP client's read timeout) no
    later than that budget, which is the common case of a healthy stream (an event on
    every read, no ``max_duration``). A cancel scope per read costs about 8 µs, as much
    as the rest of the engine's work on a one-event read (``benchmarks/bench_live.py``).
    """

    __slots__ = ("end", "idle", "now", "source_timeout", "started", "waited")

    def __init__(self, idle: float, end: float, source_timeout: float | None) -> None:
        self.idle = idle
        self.end = end
        self.source_timeout = source_timeout
        self.waited = 0.0
        self.started = 0.0
        self.now = _time_source()

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

    def deadline(self) -> float:
        """The deadline of the read about to wait (timed for :meth:`stop`)."""
        self.started = now = self.now()
        return min(now + self.idle - self.waited, self.end)

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
                SOURCE_MAX_DURATION,
                f"the stream was still open after {ctx.options.max_duration:g} s "
                "(max_duration); it was ended there and is judged as it stands",
                event_index=index,
            )
        else:
            idle = ctx.options.idle_timeout
            ctx.report(
                SOURCE_IDLE_TIMEOUT,
                f"no event for {idle:g} s (idle_timeout: keep-alive comments and "
                "partial frames do not count); the stream was ended there and is judged "
                "as it stands",
                event_index=index,
            )


def _time_source() -> Callable[[], float]:
    """The running loop's clock, the one cancel scope deadlines are on.

    ``anyio.current_time`` looks the backend up on every call (~1 µs); the asyncio
    loop's own ``time`` is the same clock without that. Other backends go through anyio.
    """
    import asyncio

    import anyio

    try:
        return asyncio.get_running_loop().time
    except RuntimeError:
        return anyio.current_time


# How one read travels: ``_read`` decodes it and runs the batch through every stage in
# one loop (the end of the stream, through ``_through``, which also flushes each stage).
# When a step faults, ``_after_fault`` says what of its batch goes on, and ``_through``
# carries that through the stages after it before ending the stream with ``_Ended`` —
# caught once, in ``EventStream._run``.

Fault = StreamRejected | HandlerFailed


class _Ended(Exception):
    """Internal: the stream ended early; carries what to deliver before the verdict."""

    def __init__(self, fault: Fault, delivered: Batch) -> None:
        self.fault = fault
        self.delivered = delivered


def _verdict_of(fault: Fault) -> Verdict:
    if isinstance(fault, StreamTruncated):
        return Verdict(Outcome.TRUNCATED, fault)
    if isinstance(fault, StreamRejected):
        return Verdict(Outcome.REJECTED, fault)
    return Verdict(Outcome.HANDLER_FAILED, fault)


def _reopen_discarded(runs: list[RunRecord], through: int) -> None:
    """Runs whose terminal event was discarded, not delivered (it came after the event
    ``through``), are ``open`` again: the consumer never saw them end — unless the
    discarded event was a late ``RUN_ERROR`` after a ``RUN_FINISHED`` that was delivered,
    and then the run ended as that finish says."""
    for run in reversed(runs):
        if run.ended_at is None:
            continue
        if run.ended_at <= through:
            break
        finish, run.superseded, run.error = run.superseded, None, None
        if finish is not None and finish[1] <= through:
            run.status, run.ended_at = finish
        else:
            run.status, run.outcome, run.ended_at = RunStatus.OPEN, None, None


async def _read(
    decoder: Decoder, stages: list[Stage], chunk: bytes | None, *, foreign: bool = True
) -> Batch:
    """One read decoded and run through every stage; ``None``: the end of the stream.

    A read that is not the end is the path every live read takes, often for one
    event, so it runs here in this one coroutine: one await per stage that has events
    to see, none once the batch is empty, no per-stage bookkeeping — and, when the
    caller has seen that every stage is built in (``foreign=False``), no asking each
    stage whether it is. A fault hands the rest to ``_through``'s general loop, which
    applies the rule; the end goes there too.
    """
    try:
        batch = decoder.feed(chunk) if chunk is not None else decoder.finish()
    except StreamRejected as fault:
        raise _Ended(
            fault, await _through(stages, _after_fault(fault, None, empty_batch()))
        ) from None
    except Exception as error:
        error.add_note(f"raised in the {decoder.name!r} stage (the decoder)")
        raise
    if chunk is None:
        return await _through(stages, batch, flush=True)
    built_in = _built_in_stages()
    position = 0
    try:
        for stage in stages:
            if not batch.events:
                return batch  # nothing left to see: the stages after have no work
            batch = await stage.process(batch)
            if foreign and type(stage) not in built_in:
                batch.changed()
            position += 1
    except (StreamRejected, HandlerFailed) as error:
        stage = stages[position]  # ``batch`` is still what it was handed
        kept = _after_fault(error, stage, batch)
        try:
            rest = await _through(stages[position + 1 :], kept)
        except _Ended:
            raise  # a later stage faulted on what went on: that fault is the verdict
        raise _Ended(error, rest) from None
    except Exception as error:
        error.add_note(f"raised in the {stages[position].name!r} stage")
        raise
    return batch


async def _through(stages: list[Stage], batch: Batch, *, flush: bool = False) -> Batch:
    """``batch`` through every stage in turn; with ``flush`` (the end of the stream), each
    stage's :meth:`~Stage.finish` right after it has seen the batch, its tail going on.

    After a fault, what the faulting stage kept (``_after_fault``) still goes through
    the stages after it, unflushed: a later stage may find an earlier fault there, and
    then that one is the verdict. A stage's other exceptions propagate, noted with its
    name. After a stage that is not built in, what the batch knew of its events
    (``Batch.types``, ``Batch.objects``) is forgotten: it may have changed them in place.
    """
    fault: Fault | None = None
    built_in = _built_in_stages()
    for stage in stages:
        given, finishing = batch, False
        try:
            if batch.events:
                batch = await stage.process(batch)
                if type(stage) not in built_in:
                    batch.changed()
            if flush:
                finishing = True
                tail = await stage.finish()
                if tail.events:
                    batch = batch + tail
        except (StreamRejected, HandlerFailed) as error:
            fault, flush = error, False
            batch = _after_fault(error, stage, batch if finishing else given, at_finish=finishing)
        except Exception as error:
            error.add_note(f"raised in the {stage.name!r} stage")
            raise
    if fault is not None:
        raise _Ended(fault, batch)
    return batch


def _after_fault(
    fault: Fault, step: Stage | None, given: Batch, *, at_finish: bool = False
) -> Batch:
    """The engine's fault-delivery rule: what of a faulting step's batch goes on downstream.

    ``step`` is the stage (``None``: the decoder); ``given`` is what it had been
    handed — or, at ``finish()`` (``at_finish``), what it had already passed.
    ``fault.kept`` is set only by :func:`~agui_pipeline.stage.reject_after`. What
    goes on is delivered once the stages after ``step`` have passed it (``_through``):

    ===  ===============================================  ==========================================
    row  the fault                                        what goes on to the stages after
    ===  ===============================================  ==========================================
    1    parse rejects a frame                            the events decoded before it (``kept``);
                                                          nothing of the read if parse did not say
    2    a stage rejects mid-batch with ``reject_after``  ``kept``: what it kept before the fault
                                                          (verify: the batch before the fault)
    3    a stage rejects without ``kept``                 nothing of the batch: fail closed (a
                                                          redaction it made cannot leak)
    4    a stage's ``finish()`` rejects (truncation)      everything it passed, then ``kept`` if any
    5    dispatch: a handler or sink raises               the events handled before it (``kept``)
    6    a later stage faults on what went on             that fault is the verdict (it is earlier
                                                          in the stream); this rule applies to it
    7    a stage raises anything else (a bug)             nothing: it propagates as itself, noted
                                                          with the stage's name; no verdict
    ===  ===============================================  ==========================================

    Rows 6 and 7 are ``_through``'s. The events from the fault on count as
    ``discarded``, as do all of a batch that fails closed.
    """
    kept = fault.kept
    fault.kept = None  # said once: the fault travels on as the verdict
    if step is None:  # row 1: the decoder counts what it read
        return kept or empty_batch()
    if at_finish:  # row 4
        return given if kept is None else given + kept
    counters = step.ctx.counters
    if kept is None:  # row 3
        counters.discarded += len(given)
        return empty_batch()
    counters.discarded += len(given) - len(given.before(fault.event_index))
    return kept  # rows 2 and 5


def _default_stages() -> list[tuple[str, StageFactory]]:
    """The spec's processing model after parse, in ``CANONICAL_ORDER``."""
    # Imported here: the stage modules import the engine's building blocks.
    from .stages.compat import Compat
    from .stages.dispatch import Dispatch
    from .stages.enforce import Enforce
    from .stages.expand import Expand
    from .stages.lint import Lint
    from .stages.metadata import Metadata
    from .stages.reconcile import Reconcile
    from .stages.verify import Verify

    factories: list[type[Stage]] = [
        Compat,
        Enforce,
        Expand,
        Verify,
        Reconcile,
        Lint,
        Metadata,
        Dispatch,
    ]
    return [(factory.name, factory) for factory in factories]


@cache
def _built_in_stages() -> frozenset[type[Stage]]:
    """The stages known never to change events in place without saying so (``Batch.changed``)."""
    return frozenset(factory for _, factory in _default_stages() if isinstance(factory, type))


def _default_decoder() -> DecoderFactory:
    from .stages.parse import Parse

    return Parse


class Pipeline:
    """An ordered list of stages; each call to :meth:`run` or :meth:`open` is one stream.

    The default pipeline is the spec's processing model. Middleware — your
    own stages — runs after the compatibility boundary and before
    enforcement, so it sees material enforcement would strip::

        pipeline = Pipeline(middleware=[MyTranslator])
        result = await pipeline.run(Path("run.sse"))

    A ``Pipeline`` is immutable and can run many streams at once; the methods
    that change the stage list or the settings return a new one, and a copy
    shares nothing that can change (its :class:`~agui_pipeline.Options` is frozen).
    """

    def __init__(
        self,
        *,
        middleware: Sequence[StageFactory] = (),
        options: Options | None = None,
        limits: Limits | Unset = UNSET,
        framing: str | Unset | None = UNSET,
        idle_timeout: float | Unset | None = UNSET,
        max_duration: float | Unset | None = UNSET,
        peer_max_protocol_version: str | Unset | None = UNSET,
        on_diagnostic: Callable[[Diagnostic], None] | Unset | None = UNSET,
        handlers: Handlers | HandlerMap | Unset | None = UNSET,
        sinks: Sequence[Sink] | Unset = UNSET,
        conversation: bool | Unset = UNSET,
        capabilities: Declaration | CapabilitiesSource | Unset | None = UNSET,
    ) -> None:
        """Each setting is the :class:`~agui_pipeline.Options` field of that name, over
        ``options`` when given: ``Pipeline(idle_timeout=30, limits=Limits(max_depth=64))``.

        The settings are read here, once: the capabilities declaration is loaded,
        the handler registry closed, the sinks fixed.
        """
        self._options: Options = changed(
            options or Options(),
            {
                "limits": limits,
                "framing": framing,
                "idle_timeout": idle_timeout,
                "max_duration": max_duration,
                "peer_max_protocol_version": peer_max_protocol_version,
                "on_diagnostic": on_diagnostic,
                "handlers": handlers,
                "sinks": sinks,
                "conversation": conversation,
                "capabilities": capabilities,
            },
        )
        self.decoder: DecoderFactory = _default_decoder()
        self._stages: list[tuple[str, StageFactory]] = _default_stages()
        for factory in middleware:
            self._stages = self.insert_before(MIDDLEWARE_SLOT, factory)._stages

    @property
    def options(self) -> Options:
        """The settings, frozen and read once (change them with :meth:`with_options`)."""
        return self._options

    # -- the stage list -------------------------------------------------------

    @property
    def stage_names(self) -> list[str]:
        """``["parse", "compat", ...]``, in order."""
        return [getattr(self.decoder, "name", "parse")] + [name for name, _ in self._stages]

    @property
    def stage_factories(self) -> list[StageFactory]:
        return [factory for _, factory in self._stages]

    def insert_before(
        self, anchor: str, factory: StageFactory, *, name: str | None = None
    ) -> Pipeline:
        """A copy with ``factory`` inserted before the stage called ``anchor``."""
        return self._with_stages(self._position(anchor), factory, name)

    def insert_after(
        self, anchor: str, factory: StageFactory, *, name: str | None = None
    ) -> Pipeline:
        """A copy with ``factory`` inserted after the stage called ``anchor``."""
        return self._with_stages(self._position(anchor) + 1, factory, name)

    def replace(self, anchor: str, factory: StageFactory) -> Pipeline:
        """A copy with the stage called ``anchor`` replaced (``"parse"`` replaces the decoder)."""
        copy = self._copy()
        if anchor == "parse":
            copy.decoder = factory  # type: ignore[assignment]
        else:
            position = self._position(anchor)
            copy._stages[position] = (anchor, factory)
        return copy

    def without(self, anchor: str) -> Pipeline:
        """A copy without the stage called ``anchor`` — for a specialised consumer only."""
        copy = self._copy()
        del copy._stages[self._position(anchor)]
        return copy

    def with_options(
        self,
        *,
        limits: Limits | Unset = UNSET,
        framing: str | Unset | None = UNSET,
        idle_timeout: float | Unset | None = UNSET,
        max_duration: float | Unset | None = UNSET,
        peer_max_protocol_version: str | Unset | None = UNSET,
        on_diagnostic: Callable[[Diagnostic], None] | Unset | None = UNSET,
        handlers: Handlers | HandlerMap | Unset | None = UNSET,
        sinks: Sequence[Sink] | Unset = UNSET,
        conversation: bool | Unset = UNSET,
        capabilities: Declaration | CapabilitiesSource | Unset | None = UNSET,
    ) -> Pipeline:
        """A copy with the settings passed changed (the same names as ``Pipeline(...)``)."""
        copy = self._copy()
        copy._options = changed(
            self._options,
            {
                "limits": limits,
                "framing": framing,
                "idle_timeout": idle_timeout,
                "max_duration": max_duration,
                "peer_max_protocol_version": peer_max_protocol_version,
                "on_diagnostic": on_diagnostic,
                "handlers": handlers,
                "sinks": sinks,
                "conversation": conversation,
                "capabilities": capabilities,
            },
        )
        return copy

    def _position(self, anchor: str) -> int:
        for position, (name, _) in enumerate(self._stages):
            if name == anchor:
                return position
        if anchor == MIDDLEWARE_SLOT:
            # Enforcement not (yet) in the list: middleware goes before the
            # first stage that exists after the slot in the canonical order.
            for later in CANONICAL_ORDER[CANONICAL_ORDER.index(MIDDLEWARE_SLOT) :]:
                for position, (name, _) in enumerate(self._stages):
                    if name == later:
                        return position
            return len(self._stages)
        raise KeyError(f"no stage named {anchor!r}; stages are {self.stage_names}")

    def _with_stages(self, position: int, factory: StageFactory, name: str | None) -> Pipeline:
        copy = self._copy()
        stage_name = str(
            name or getattr(factory, "name", None) or getattr(factory, "__name__", "stage")
        )
        copy._stages.insert(position, (stage_name, factory))
        return copy

    def _copy(self) -> Pipeline:
        copy = object.__new__(Pipeline)
        copy._options = self._options
        copy.decoder = self.decoder
        copy._stages = list(self._stages)
        return copy

    # -- running ------------------------------------------------------------------

    def context(self, run_input: dict[str, Any] | None = None) -> StreamContext:
        """A fresh per-stream context (the stages are built from it)."""
        return StreamContext(self.options, run_input)

    def open(self, source: Source, *, run_input: dict[str, Any] | None = None) -> EventStream:
        """One stream, read inside ``async with pipeline.open(source) as stream:``.

        Nothing is opened until the stream is read; a value no reader takes
        raises ``TypeError`` here.
        """
        return EventStream(self, source, self.context(run_input))

    def incremental(self, *, run_input: dict[str, Any] | None = None) -> Incremental:
        """One stream fed by hand from synchronous code: ``feed(bytes)`` returns the
        events delivered, ``close()`` the result (:class:`~agui_pipeline.Incremental`).
        Needs no event loop, and works inside a running one."""
        return Incremental(self, run_input=run_input)

    async def run(self, source: Source, *, run_input: dict[str, Any] | None = None) -> RunResult:
        """Read a whole stream and return the delivered events, diagnostics and verdict.

        ``source`` is a path (``Path`` or ``str``), ``"-"`` for stdin, the stream's
        bytes, or an iterable of chunks (see :data:`~agui_pipeline.Source`).
        """
        events: list[Event] = []
        async with self.open(source, run_input=run_input) as stream:
            async for batch in stream.batches():
                events += batch.events
        return stream.result(events)


MIDDLEWARE_SLOT = "enforce"
"""Middleware is inserted before this stage (``/spec/1.1/basic/processing``)."""

CANONICAL_ORDER = [
    "parse",
    "compat",
    "enforce",
    "expand",
    "verify",
    "reconcile",
    "lint",
    "metadata",
    "dispatch",
]


def run_sync(
    source: Source, pipeline: Pipeline | None = None, *, run_input: dict[str, Any] | None = None
) -> RunResult:
    """Run one stream to the end from synchronous code.

    Outside an event loop it starts one (so async handlers and sinks may wait).
    Inside a running loop — a Jupyter cell, an async framework's sync view — it
    reads the source through the sync shell (:meth:`Pipeline.incremental`)
    instead, blocking the caller as sync code does; there an async iterable
    source, or a handler that waits, raises saying to ``await pipeline.run(...)``.
    """
    chosen = pipeline or Pipeline()
    if not in_event_loop():
        import anyio

        return anyio.run(lambda: chosen.run(source, run_input=run_input))
    check_source(source)
    stream = chosen.incremental(run_input=run_input)
    events: list[AnyEvent] = []
    try:
        for chunk in iter_chunks_sync(source):
            events += stream.feed(chunk)
            if stream.ended:
                break
    except TypeError as error:
        if isinstance(source, AsyncIterable):
            raise UsageError(
                "run_sync() was called inside a running event loop with an async iterable "
                "source, which it cannot read without waiting: use "
                "`await pipeline.run(source)` there"
            ) from error
        raise
    result = stream.close()
    result.events[:0] = events
    return result


# The sync shell builds on this module's engine, so it is imported once this module is
# whole (``Pipeline.incremental`` and ``run_sync`` use it).
from .incremental import Incremental, in_event_loop  # noqa: E402

__all__ = [
    "EventStream",
    "Outcome",
    "Pipeline",
    "RunResult",
    "Verdict",
    "run_sync",
]
