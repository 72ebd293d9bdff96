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

from collections.abc import AsyncIterable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Unpack

from agui_pipeline._engine.contract import check_forms, declared_form, factory_name
from agui_pipeline._engine.incremental import Incremental, in_event_loop, run_in_loop
from agui_pipeline._engine.order import (
    canonical_order,
    default_decoder,
    default_stages,
    middleware_slot,
)
from agui_pipeline._engine.result import RunResult
from agui_pipeline._engine.sources import Source, check_source, iter_chunks_sync
from agui_pipeline._engine.stream import EventStream
from agui_pipeline._suggest import did_you_mean
from agui_pipeline.batch import Event
from agui_pipeline.declaration import Declaration
from agui_pipeline.errors import UsageError
from agui_pipeline.events import AnyEvent
from agui_pipeline.model.declared import read_declaration
from agui_pipeline.options import Options, Settings
from agui_pipeline.stage import DecoderFactory, StageFactory, StreamContext
from agui_pipeline.subscribers import Handlers


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
        **settings: Unpack[Settings],
    ) -> None:
        """Each setting is the :class:`~agui_pipeline.Options` field of that name, over
        ``options`` when given: ``Pipeline(idle_timeout=30, limits=Limits(max_depth=64))``.

        The settings are read here, once: the capabilities declaration is loaded,
        the handler registry closed, the sinks fixed.
        """
        self._options: Options = changed(options or Options(), settings)
        self.decoder: DecoderFactory = default_decoder()
        self._stages: list[tuple[str, StageFactory]] = list(default_stages())
        for factory in middleware:
            self._stages = self.insert_before(middleware_slot(), factory)._stages

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
            copy._check_forms()
        return copy

    def without(self, anchor: str) -> Pipeline:
        """A copy without the stage called ``anchor`` — for a specialised consumer only."""
        copy = self._copy()
        del copy._stages[self._position(anchor)]
        return copy

    def with_options(self, **settings: Unpack[Settings]) -> Pipeline:
        """A copy with the settings passed changed (the same names as ``Pipeline(...)``)."""
        copy = self._copy()
        copy._options = changed(self._options, settings)
        return copy

    def _position(self, anchor: str) -> int:
        for position, (name, _) in enumerate(self._stages):
            if name == anchor:
                return position
        if anchor == middleware_slot():
            # Enforcement not (yet) in the list: middleware goes before the
            # first stage that exists after the slot in the canonical order.
            order = canonical_order()
            for later in order[order.index(anchor) :]:
                for position, (name, _) in enumerate(self._stages):
                    if name == later:
                        return position
            return len(self._stages)
        raise KeyError(f"no stage named {anchor!r}; stages are {self.stage_names}")

    def _with_stages(self, position: int, factory: StageFactory, name: str | None) -> Pipeline:
        copy = self._copy()
        copy._stages.insert(position, (name or factory_name(factory), factory))
        copy._check_forms()
        return copy

    def _check_forms(self) -> None:
        """Refuse, here rather than on the first stream, a stage class asking for chunks as
        sent placed after expansion (:class:`~agui_pipeline.ChunkForm`)."""
        check_forms((name, declared_form(factory)) for name, factory in self._stages)

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
        return run_in_loop(partial(chosen.run, source, run_input=run_input))
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


def changed(options: Options, settings: Settings) -> Options:
    """``options`` with the settings that were passed, read once. A name that is no
    setting is refused, with the one meant."""
    unknown = sorted(set(settings) - set(Settings.__annotations__))
    if unknown:
        meant = did_you_mean(unknown[0], Settings.__annotations__)
        raise TypeError(f"Pipeline takes no setting {unknown[0]!r}{meant}")
    return settled(replace(options, **settings) if settings else options)


def settled(options: Options) -> Options:
    """What a pipeline keeps: the declaration read, the handlers and sinks frozen.

    Reading the declaration here (a file, JSON, a model) is once per pipeline,
    not once per stream; the handler registry is closed so that no copy of the
    pipeline, and no stream already running, sees a handler appear.
    """
    capabilities = options.capabilities
    if capabilities is not None and not isinstance(capabilities, Declaration):
        capabilities = read_declaration(capabilities)
    handlers = None if options.handlers is None else Handlers.of(options.handlers).closed()
    return replace(
        options, capabilities=capabilities, handlers=handlers, sinks=tuple(options.sinks)
    )
