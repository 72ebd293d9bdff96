"""The per-read machinery both shells share: how one read travels through the stages, and
what a fault lets through.

``_read`` decodes a read and runs the batch through the stream's :class:`Route`: each
run of built-in stages as one fused pass (``chain.py``), each of the user's stages in
turn (the end of the stream goes through ``_through``, stage by stage, which also
flushes each stage). When a step faults, ``faults.after_fault`` says what of its batch
goes on, and ``_through`` carries that through the stages after it before ending the
stream with ``_Ended`` — caught once, by the shell (``EventStream._run``,
``Incremental._step``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from agui_pipeline._engine.chain import Chain, ChainFault, Route
from agui_pipeline._engine.contract import arrange, counted_finish, counted_process
from agui_pipeline._engine.faults import Fault, after_fault
from agui_pipeline._engine.order import built_in_stages
from agui_pipeline._engine.result import Outcome, Verdict
from agui_pipeline.batch import Batch, empty_batch
from agui_pipeline.errors import HandlerFailed, StreamRejected, StreamTruncated
from agui_pipeline.stage import (
    Decoder,
    DecoderFactory,
    RunRecord,
    RunStatus,
    Stage,
    StageFactory,
    StreamContext,
)


class StagePlan(Protocol):
    """What a shell needs of a pipeline to run one stream (a :class:`Pipeline` is one)."""

    @property
    def decoder(self) -> DecoderFactory: ...

    @property
    def stage_factories(self) -> Sequence[StageFactory]: ...

    def context(self, run_input: dict[str, Any] | None = None) -> StreamContext: ...


def build(plan: StagePlan, ctx: StreamContext) -> tuple[Decoder, Route]:
    """Fresh stages for one stream, with the expansion their chunk forms ask for, and the
    route a read takes through them."""
    stages = [factory(ctx) for factory in plan.stage_factories]
    built_in = built_in_stages()
    return plan.decoder(ctx), Route(arrange(ctx, stages, built_in), built_in)


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


async def _read(decoder: Decoder, route: Route, chunk: bytes | None) -> Batch:
    """One read decoded and run along the route; ``None``: the end of the stream.

    A read that is not the end is the path every live read takes, often for one
    event: one call per chain of built-in stages, one await per stage of the user's
    that has events to see, none once the batch is empty. A fault hands the rest to
    ``_through``'s general loop, which applies the rule; the end goes there too.
    """
    stages = route.stages
    try:
        batch = decoder.feed(chunk) if chunk is not None else decoder.finish()
    except StreamRejected as fault:
        raise _Ended(
            fault, await _through(stages, after_fault(fault, None, empty_batch()))
        ) from None
    except Exception as error:
        error.add_note(f"raised in the {decoder.name!r} stage (the decoder)")
        raise
    if chunk is None:
        return await _through(stages, batch, flush=True)
    built_in = built_in_stages()
    position = 0
    segments = route.segments
    try:
        for segment in segments:
            if not batch.events:
                return batch  # nothing left to see: the stages after have no work
            if type(segment) is Chain:
                batch = segment.run(batch)
            elif type(segment) not in built_in:
                batch = await counted_process(segment, batch)  # type: ignore[arg-type]
            else:
                batch = await segment.process(batch)  # type: ignore[union-attr]
            position += 1
    except ChainFault as fault:  # the chain applied the rule: what it kept goes on
        raise _Ended(fault.fault, await _through(route.after[position], fault.delivered)) from None
    except (StreamRejected, HandlerFailed) as error:
        stage: Any = segments[position]  # ``batch`` is still what it was handed
        kept = after_fault(error, stage, batch)
        raise _Ended(error, await _through(route.after[position], kept)) from None
    except Exception as error:
        if type(segments[position]) is not Chain:  # a chain names its own stage
            error.add_note(f"raised in the {segments[position].name!r} stage")
        raise
    return batch


async def _through(stages: list[Stage], batch: Batch, *, flush: bool = False) -> Batch:
    """``batch`` through every stage in turn; with ``flush`` (the end of the stream), each
    stage's :meth:`~Stage.finish` right after it has seen the batch, its tail going on.

    After a fault, what the faulting stage kept (``_after_fault``) still goes through
    the stages after it, unflushed: a later stage may find an earlier fault there, and
    then that one is the verdict. A stage's other exceptions propagate, noted with its
    name. A stage that is not built in runs under the contract's bookkeeping
    (``contract.counted_process``, ``contract.counted_finish``).
    """
    fault: Fault | None = None
    built_in = built_in_stages()
    for stage in stages:
        given, finishing = batch, False
        foreign = type(stage) not in built_in
        try:
            if batch.events:
                batch = await (counted_process(stage, batch) if foreign else stage.process(batch))
            if flush:
                finishing = True
                tail = await (counted_finish(stage) if foreign else stage.finish())
                if tail.events:
                    batch = batch + tail
        except (StreamRejected, HandlerFailed) as error:
            fault, flush = error, False
            batch = after_fault(error, stage, batch if finishing else given, at_finish=finishing)
        except Exception as error:
            error.add_note(f"raised in the {stage.name!r} stage")
            raise
    if fault is not None:
        raise _Ended(fault, batch)
    return batch
