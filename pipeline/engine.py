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
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cache
from typing import Any

import anyio

from .catalog import SOURCE_IDLE_TIMEOUT
from .errors import Diagnostic, HandlerFailed, StreamRejected, StreamTruncated
from .sources import Source, iter_chunks, may_stall
from .stage import (
    Batch,
    Counters,
    DecoderFactory,
    Event,
    Options,
    RunRecord,
    Stage,
    StageFactory,
    StreamContext,
    empty_batch,
)


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
        if isinstance(self.error, StreamRejected):
            return self.error.code
        return None if self.error is None else "dispatch.handler-failed"

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

    events: list[Event]
    verdict: Verdict
    diagnostics: list[Diagnostic]
    counters: Counters
    conversation: Any = None
    """The materialised conversation, when the pipeline has a stage that builds one."""
    transport: str | None = None
    suppressed: dict[str, int] = field(default_factory=dict)
    """Diagnostics over the ``max_diagnostics`` limit, counted by code."""
    runs: list[RunRecord] = field(default_factory=list)
    """The runs on the stream in order, with how each ended (kept by verify)."""

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]

    def raise_for_verdict(self) -> None:
        """Raise the error that ended the stream, if it did not complete."""
        if self.verdict.error is not None:
            raise self.verdict.error


class EventStream:
    """One stream going through a pipeline, read as it arrives.

    Iterate it for delivered events (``async for event in stream``), or
    :meth:`batches` for the lists as each read delivers them. Use it as an
    async context manager so the source is closed even if you stop early::

        async with pipeline.open(source) as stream:
            async for event in stream:
                ...
        print(stream.verdict)
    """

    def __init__(self, pipeline: Pipeline, source: Source, ctx: StreamContext) -> None:
        self._pipeline = pipeline
        self._source = source
        self.context = ctx
        self.verdict: Verdict | None = None
        """Set once the stream has ended (``None`` while it is still being read)."""
        self._batches: AsyncGenerator[Batch, None] | None = None
        self._pending: Iterator[Event] = iter(())

    # -- reading ------------------------------------------------------------

    def batches(self) -> AsyncIterator[Batch]:
        """Delivered events, one batch per read."""
        if self._batches is None:
            self._batches = self._run()
        return self._batches

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        for event in self._pending:
            return event
        async for batch in self.batches():
            self._pending = iter(batch.events)
            for event in self._pending:
                return event
        raise StopAsyncIteration

    async def aclose(self) -> None:
        if self._batches is not None:
            await self._batches.aclose()

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
        assert self.verdict is not None, "the stream has not been read to its end"
        return RunResult(
            events=events,
            verdict=self.verdict,
            diagnostics=ctx.diagnostics,
            counters=ctx.counters,
            conversation=ctx.conversation,
            transport=ctx.transport,
            suppressed=ctx.suppressed,
            runs=ctx.runs,
        )

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- the engine ---------------------------------------------------------

    async def _run(self) -> AsyncGenerator[Batch, None]:
        ctx = self.context
        decoder = self._pipeline.decoder(ctx)
        stages = [factory(ctx) for factory in self._pipeline.stage_factories]
        idle = ctx.options.idle_timeout
        idle = math.inf if idle is None else idle
        # Bytes in memory and files cannot stall, and a cancel scope per read costs
        # more than the read (~10 µs): the idle window only guards what can.
        unbounded = idle == math.inf or not may_stall(self._source)
        counters = ctx.counters
        try:
            async with aclosing(iter_chunks(self._source)) as chunks:
                while True:
                    try:
                        if unbounded:
                            chunk = await chunks.__anext__()
                        else:
                            with anyio.fail_after(idle):
                                chunk = await chunks.__anext__()
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        ctx.report(
                            SOURCE_IDLE_TIMEOUT,
                            f"no bytes for {idle:g} s (idle_timeout); the stream was ended "
                            "there and is judged as it stands",
                            event_index=counters.read,
                        )
                        break
                    batch = await _through(stages, 0, await _decode(stages, decoder.feed, chunk))
                    if batch.events:
                        counters.delivered += len(batch.events)
                        yield batch
                batch = await _finish(stages, await _decode(stages, decoder.finish))
                if batch.events:
                    counters.delivered += len(batch.events)
                    yield batch
        except _Ended as ended:
            # Set before the last yield: a consumer may stop reading right there.
            self.verdict = _verdict_of(ended.error)
            if ended.delivered.events:
                counters.delivered += len(ended.delivered.events)
                yield ended.delivered
            return
        self.verdict = Verdict(Outcome.COMPLETED)


class _Ended(Exception):
    """Internal: the stream ended early; carries what to deliver before the verdict."""

    def __init__(self, error: StreamRejected | HandlerFailed, delivered: Batch) -> None:
        self.error = error
        self.delivered = delivered


def _verdict_of(error: StreamRejected | HandlerFailed) -> Verdict:
    if isinstance(error, StreamTruncated):
        return Verdict(Outcome.TRUNCATED, error)
    if isinstance(error, StreamRejected):
        return Verdict(Outcome.REJECTED, error)
    return Verdict(Outcome.HANDLER_FAILED, error)


async def _through(stages: list[Stage], start: int, batch: Batch) -> Batch:
    """Run ``batch`` through ``stages[start:]``.

    When a stage ends the stream, what it had already accepted from the batch
    still goes through the stages after it — a stage further on may find an
    earlier fault, and then that one is the verdict.
    """
    position = start
    try:
        # One loop, one await per stage: this runs once per read, often for one event.
        for position in range(start, len(stages)):
            if not batch.events:
                return batch
            batch = await _process(stages[position], batch)
    except (StreamRejected, HandlerFailed) as error:
        # ``batch`` is still what the failing stage was given.
        raise await _stage_ended(stages, position, batch, error) from None
    return batch


async def _step(stages: list[Stage], position: int, batch: Batch) -> Batch:
    """One stage on one batch (at end of stream, between flushes)."""
    try:
        return await _process(stages[position], batch)
    except (StreamRejected, HandlerFailed) as error:
        raise await _stage_ended(stages, position, batch, error) from None


async def _process(stage: Stage, batch: Batch) -> Batch:
    """``stage`` on ``batch``; after a stage of yours, what the batch knew of its events
    (``Batch.types``, ``Batch.objects``) is forgotten: it may have changed them in place."""
    batch = await stage.process(batch)
    if type(stage) not in _built_in_stages():
        batch.changed()
    return batch


async def _stage_ended(
    stages: list[Stage], position: int, batch: Batch, error: StreamRejected | HandlerFailed
) -> _Ended:
    kept = batch.before(error.event_index)
    # The batch's events from the fault on were taken in and go no further.
    stages[position].ctx.counters.discarded += len(batch) - len(kept)
    accepted = kept if error.accepted is None else error.accepted
    return await _ended(stages, position, accepted, error)


async def _decode(stages: list[Stage], decode: Callable[..., Batch], *chunk: bytes) -> Batch:
    """Decode one read (or the end of the stream) into a batch."""
    try:
        return decode(*chunk)
    except StreamRejected as error:
        raise await _ended(stages, -1, error.accepted or empty_batch(), error) from None


async def _finish(stages: list[Stage], batch: Batch) -> Batch:
    """End of stream: flush each stage in order, each one's tail going on downstream."""
    for position, stage in enumerate(stages):
        if batch.events:
            batch = await _step(stages, position, batch)
        try:
            tail = await stage.finish()
        except (StreamRejected, HandlerFailed) as error:
            # Raised at end of stream (a truncated run, say): everything the
            # stage passed stays delivered.
            if error.accepted is not None:
                batch = batch + error.accepted
            raise await _ended(stages, position, batch, error) from None
        if tail.events:
            batch = batch + tail
    return batch


async def _ended(
    stages: list[Stage], position: int, accepted: Batch, error: StreamRejected | HandlerFailed
) -> _Ended:
    """The stream ends at ``stages[position]``: deliver ``accepted`` through the rest."""
    error.accepted = None
    return _Ended(error, await _through(stages, position + 1, accepted))


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
    that change the stage list return a new one.
    """

    def __init__(
        self,
        *,
        middleware: Sequence[StageFactory] = (),
        options: Options | None = None,
        **settings: Any,
    ) -> None:
        """``settings`` are :class:`~agui_pipeline.stage.Options` fields, e.g.
        ``Pipeline(idle_timeout=30, limits=Limits(max_frame_bytes=1 << 20))``."""
        self.options = replace(options, **settings) if options else Options(**settings)
        self.decoder: DecoderFactory = _default_decoder()
        self._stages: list[tuple[str, StageFactory]] = _default_stages()
        for factory in middleware:
            self._stages = self.insert_before(MIDDLEWARE_SLOT, factory)._stages

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

    def with_options(self, **changes: Any) -> Pipeline:
        """A copy with some :class:`~agui_pipeline.stage.Options` changed."""
        copy = self._copy()
        copy.options = replace(self.options, **changes)
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
        copy.options = self.options
        copy.decoder = self.decoder
        copy._stages = list(self._stages)
        return copy

    # -- running ------------------------------------------------------------------

    def context(self, run_input: dict[str, Any] | None = None) -> StreamContext:
        """A fresh per-stream context (the stages are built from it)."""
        return StreamContext(self.options, run_input)

    def open(self, source: Source, *, run_input: dict[str, Any] | None = None) -> EventStream:
        """Start one stream; iterate the result for delivered events."""
        return EventStream(self, source, self.context(run_input))

    async def run(self, source: Source, *, run_input: dict[str, Any] | None = None) -> RunResult:
        """Read a whole stream and return the delivered events, diagnostics and verdict."""
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


def run_sync(source: Source, pipeline: Pipeline | None = None, **kwargs: Any) -> RunResult:
    """Run one stream to the end from synchronous code (starts an event loop)."""
    chosen = pipeline or Pipeline()
    return anyio.run(lambda: chosen.run(source, **kwargs))


__all__ = [
    "EventStream",
    "Outcome",
    "Pipeline",
    "RunResult",
    "Verdict",
    "empty_batch",
    "run_sync",
]
