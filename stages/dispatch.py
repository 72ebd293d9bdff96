"""dispatch — hand each delivered event to application code, in stream order.

The last stage (``/spec/1.1/basic/processing``: the application sees only
what the stages before it let through). Per event, in this order: the
Conversation (when ``Options.conversation`` is on), the handlers registered
for the event's type, the ``"*"`` handlers; per batch, after its handlers,
the sinks. Each is awaited in the reading task, so a slow subscriber slows
the read instead of filling a buffer.

A handler that raises ends the stream with :class:`~agui_pipeline.HandlerFailed`
carrying the event index — the consumer's own code failed, which is not a
verdict on the stream (``/spec/1.1/events/lifecycle``, Error Handling keeps
protocol failures apart). The events of the batch handled before the failing
one stay delivered. Cancellation is not an ``Exception`` and passes through.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from inspect import isawaitable
from typing import Any, ClassVar, NoReturn

from agui_pipeline.batch import Batch
from agui_pipeline.errors import HandlerFailed, StreamRejected
from agui_pipeline.events import AnyEvent
from agui_pipeline.model.conversation import Conversation
from agui_pipeline.stage import Stage, StreamContext, reject_after
from agui_pipeline.subscribers import EVERY, Handler, Handlers, delivered


class Dispatch(Stage):
    """Delivers each batch to the Conversation, the handlers and the sinks."""

    name: ClassVar[str] = "dispatch"

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)
        options = ctx.options
        self._conversation = Conversation(ctx) if options.conversation else None
        ctx.conversation = self._conversation
        table = dict(Handlers.of(options.handlers).by_type)
        self._every: tuple[Handler, ...] = table.pop(EVERY, ())
        # Each type's handlers then the "*" ones, joined once rather than per event.
        self._by_type: dict[str, tuple[Handler, ...]] = {
            event_type: handlers + self._every for event_type, handlers in table.items()
        }
        self._writers: tuple[Callable[[Sequence[AnyEvent]], Awaitable[None]], ...] = tuple(
            sink.write for sink in options.sinks
        )
        self._handled = bool(table or self._every)
        # One "*" handler and no other, the common case: a loop of its own (_handle_only).
        self._only = self._every[0] if not table and len(self._every) == 1 else None

    async def process(self, batch: Batch) -> Batch:
        try:
            if self._only is not None:
                await self._handle_only(self._only, batch)
            elif self._handled:
                await self._handle(batch)
            elif self._conversation is not None:
                self._conversation.apply(batch)
        except StreamRejected as rejection:
            # A limit the Conversation keeps (max_state_bytes): the events before
            # the breach are delivered, so the sinks pass them on too.
            delivered = batch.before(rejection.event_index)
            if self._writers and delivered.events:
                await self._write(delivered)
            raise reject_after(delivered, rejection) from None
        if self._writers:
            await self._write(batch)
        return batch

    @property
    def waits(self) -> bool:
        """Whether delivery may wait: a handler or a sink (either may be a coroutine)."""
        return self._handled or bool(self._writers)

    def deliver(self, batch: Batch) -> Batch:
        """:meth:`process` when nothing waits (no handler, no sink): the batch applied to the
        Conversation, if any. The engine's fused pass ends with it (``_engine/chain.py``)."""
        if self._conversation is not None:
            try:
                self._conversation.apply(batch)
            except StreamRejected as rejection:
                raise reject_after(batch.before(rejection.event_index), rejection) from None
        return batch

    async def _handle(self, batch: Batch) -> None:
        """Run the handlers event by event, keeping the Conversation exactly one step ahead.

        A handler sees the Conversation with its own event applied and no later
        one, so the Conversation is fed the run of events up to each handled event.
        """
        events, indices = batch.events, batch.indices
        by_type, every, conversation = self._by_type, self._every, self._conversation
        applied = 0
        for position, event in enumerate(events):
            handlers = by_type.get(event.get("type", ""), every)
            if not handlers:
                continue
            if conversation is not None:
                if applied == position:  # every event handled: one at a time, no batch
                    conversation.apply_event(event, indices[position])
                else:
                    conversation.apply(
                        Batch(events[applied : position + 1], indices[applied : position + 1])
                    )
                applied = position + 1
            try:
                for handler in handlers:
                    result = handler(event)
                    if result is not None and isawaitable(result):
                        await result
            except Exception as error:
                await self._fail(batch, position, error)
        if conversation is not None and applied < len(events):
            conversation.apply(Batch(events[applied:], indices[applied:]) if applied else batch)

    async def _handle_only(self, handler: Handler, batch: Batch) -> None:
        """:meth:`_handle` when ``handler``, a ``"*"`` one, is the only handler: no lookup by
        type, no loop over a tuple of handlers, and the Conversation applies each event
        alone. This loop runs once per delivered event, and costs about 1,000 instructions an
        event less than the general one (``docs/performance.md``, deliver mode)."""
        events, indices, conversation = batch.events, batch.indices, self._conversation
        for position, event in enumerate(events):
            if conversation is not None:
                conversation.apply_event(event, indices[position])
            try:
                result = handler(event)
                if result is not None and isawaitable(result):
                    await result
            except Exception as error:
                await self._fail(batch, position, error)

    async def _fail(self, batch: Batch, position: int, error: Exception) -> NoReturn:
        """A handler raised on the event at ``position``: the events before it are delivered
        (the sinks pass them on), and the stream ends with :class:`HandlerFailed`."""
        events, indices = batch.events, batch.indices
        failure = HandlerFailed(indices[position], str(events[position].get("type")), error)
        handled = Batch(events[:position], indices[:position])
        if self._writers and handled.events:
            await self._write(handled)
        raise reject_after(handled, failure) from error

    async def _write(self, batch: Batch) -> None:
        try:
            for write in self._writers:
                await write(delivered(batch.events))
        except Exception as error:
            first: Any = batch.events[0].get("type")
            failure = HandlerFailed(batch.indices[0], f"{first} (in a sink)", error)
            raise reject_after(Batch([], []), failure) from error
