"""One stream's engine, sans I/O: bytes in, the events to deliver out.

A :class:`Session` owns what a stream's engine keeps between reads: the decoder, the
route through the stages, the verdict, and the index of the last event delivered. It has
one method, :meth:`Session.feed`, which takes a read (or ``None``, the end of the stream)
and answers with what that read delivers. It never reads a source, keeps a clock or
starts a loop: the shells do that around it (``stream.EventStream`` reading a source as
it arrives, ``incremental.Incremental`` fed by hand from synchronous code), as h11's
``Connection`` leaves the socket to its caller.

``feed`` is a coroutine because a stage of the user's may wait; no built-in stage ever
does, so the sync shell steps it without a loop (``builtin.run_without_loop``).
"""

from __future__ import annotations

from typing import Any

from agui_pipeline._engine.contract import counted_process
from agui_pipeline._engine.core import StagePlan, build
from agui_pipeline._engine.faults import Ended, Fault, after_fault, through
from agui_pipeline._engine.result import Outcome, Verdict
from agui_pipeline.batch import Batch, empty_batch
from agui_pipeline.errors import HandlerFailed, StreamRejected, StreamTruncated, UsageError
from agui_pipeline.stage import RunRecord, RunStatus, Stage, StreamContext


class Session:
    """One stream through a pipeline's stages, without I/O: :meth:`feed` it each read."""

    __slots__ = ("context", "decoder", "last_delivered", "route", "verdict")

    def __init__(self, plan: StagePlan, ctx: StreamContext) -> None:
        self.context = ctx
        self.decoder, self.route = build(plan, ctx)
        self.verdict: Verdict | None = None
        """How the stream was judged: set by the read that ended it (a fault, or the end)."""
        self.last_delivered = -1
        """The event index of the last event delivered."""

    async def feed(self, chunk: bytes | None) -> Batch:
        """What the read ``chunk`` delivers, through every stage; ``None``: the end of the
        stream, whose stages' ``finish`` run.

        A read that is not the end is the path every live read takes, often for one event:
        one call per run of built-in stages, one await per stage of the user's that has
        events to see, none once the batch is empty. A fault ends the stream
        (:meth:`_fault`). Fed after its end, a session refuses.
        """
        if self.verdict is not None:
            raise UsageError(f"the stream has ended ({self.verdict.outcome}): it reads no more")
        if chunk is None:
            return await self._end()
        try:
            batch = self.decoder.feed(chunk)
        except StreamRejected as fault:
            kept = after_fault(fault, None, empty_batch())
            return await self._fault(fault, kept, self.route.stages)
        except Exception as error:
            error.add_note(f"raised in the {self.decoder.name!r} stage (the decoder)")
            raise
        route = self.route  # after the read: a decoder may hand the stream to a longer route
        position = 0
        segments, run_type, built_in = route.segments, route.run_type, route.built_in
        try:
            for segment in segments:
                if not batch.events:
                    return batch  # nothing left to see: the stages after have no work
                if type(segment) is run_type:
                    batch = segment.run(batch)  # type: ignore[union-attr]
                elif type(segment) not in built_in:
                    batch = await counted_process(segment, batch)  # type: ignore[arg-type]
                else:
                    batch = await segment.process(batch)  # type: ignore[union-attr]
                position += 1
        except Ended as ended:  # a run applied the rule: what it let through goes on
            return await self._fault(ended.fault, ended.delivered, route.after[position])
        except (StreamRejected, HandlerFailed) as error:
            stage: Any = segments[position]  # ``batch`` is still what it was handed
            kept = after_fault(error, stage, batch)
            return await self._fault(error, kept, route.after[position])
        except Exception as error:
            if isinstance(segments[position], Stage):  # a run names its own stage
                error.add_note(f"raised in the {segments[position].name!r} stage")
            raise
        if batch.events:
            self.last_delivered = batch.indices[-1]
            self.context.counters.delivered += len(batch.events)
        return batch

    async def _end(self) -> Batch:
        """The end of the stream: what the decoder held, through every stage, each flushed."""
        try:
            batch = self.decoder.finish()
        except StreamRejected as fault:
            kept = after_fault(fault, None, empty_batch())
            return await self._fault(fault, kept, self.route.stages)
        except Exception as error:
            error.add_note(f"raised in the {self.decoder.name!r} stage (the decoder)")
            raise
        try:
            batch = await through(self.route.stages, batch, self.route.built_in, flush=True)
        except Ended as ended:
            return await self._fault(ended.fault, ended.delivered, [])
        if batch.events:
            self.last_delivered = batch.indices[-1]
            self.context.counters.delivered += len(batch.events)
        self.verdict = Verdict(Outcome.COMPLETED)
        return batch

    async def _fault(self, fault: Fault, kept: Batch, after: list[Stage]) -> Batch:
        """The stream ends on ``fault``: what went on past the stage that raised it
        (``kept``, by ``faults.after_fault``) goes through the stages ``after`` it, where a
        later fault, earlier in the stream, is the verdict instead (``faults.through``).
        That is delivered; a run whose end was discarded, not delivered, is open again."""
        try:
            kept = await through(after, kept, self.route.built_in)
        except Ended as later:
            fault, kept = later.fault, later.delivered
        if kept.events:
            self.last_delivered = kept.indices[-1]
            self.context.counters.delivered += len(kept.events)
        self.verdict = _verdict_of(fault)
        _reopen_discarded(self.context.runs, self.last_delivered)
        return kept


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
