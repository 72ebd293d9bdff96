"""The per-read machinery both shells share: how one read travels through the stages, and
what a fault lets through.

``_read`` decodes a read and runs the batch through every stage in one loop (the end
of the stream goes through ``_through``, which also flushes each stage). When a step
faults, ``_after_fault`` says what of its batch goes on, and ``_through`` carries that
through the stages after it before ending the stream with ``_Ended`` — caught once, by
the shell (``EventStream._run``, ``Incremental._step``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, Protocol

from agui_pipeline._engine.contract import arrange, counted_finish, counted_process
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


def build(plan: StagePlan, ctx: StreamContext) -> tuple[Decoder, list[Stage]]:
    """Fresh stages for one stream, with the expansion their chunk forms ask for."""
    stages = [factory(ctx) for factory in plan.stage_factories]
    return plan.decoder(ctx), arrange(ctx, stages, built_in_stages())


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
    built_in = built_in_stages()
    position = 0
    try:
        for stage in stages:
            if not batch.events:
                return batch  # nothing left to see: the stages after have no work
            if foreign and type(stage) not in built_in:
                batch = await counted_process(stage, batch)
            else:
                batch = await stage.process(batch)
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


def default_stages() -> list[tuple[str, StageFactory]]:
    """The spec's processing model after parse, in ``CANONICAL_ORDER``."""
    # Imported here: the stage modules import the engine's building blocks.
    from agui_pipeline.stages.compat import Compat
    from agui_pipeline.stages.dispatch import Dispatch
    from agui_pipeline.stages.enforce import Enforce
    from agui_pipeline.stages.expand import Expand
    from agui_pipeline.stages.lint import Lint
    from agui_pipeline.stages.metadata import Metadata
    from agui_pipeline.stages.reconcile import Reconcile
    from agui_pipeline.stages.verify import Verify

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
def built_in_stages() -> frozenset[type[Stage]]:
    """The stages known never to change events in place without saying so (``Batch.changed``)."""
    return frozenset(factory for _, factory in default_stages() if isinstance(factory, type))


def default_decoder() -> DecoderFactory:
    from agui_pipeline.stages.parse import Parse

    return Parse
