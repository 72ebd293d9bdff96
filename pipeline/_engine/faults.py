"""The engine's fault-delivery rule: what of a faulting step's batch goes on downstream,
and the one exception that ends a stream early (:class:`Ended`).

Both the stage-by-stage path (``session``) and the fused pass (``chain``) apply it.
"""

from __future__ import annotations

from collections.abc import Collection

from agui_pipeline._engine.contract import counted_finish, counted_process
from agui_pipeline.batch import Batch, empty_batch
from agui_pipeline.errors import HandlerFailed, StreamRejected
from agui_pipeline.stage import Stage

Fault = StreamRejected | HandlerFailed


class Ended(Exception):
    """Internal: a fault ends the stream; ``delivered`` is what of the read goes on past the
    stages that raised it (past every stage, once the session catches it).

    A run of built-in stages raises it with what it let through; the session carries that
    through the stages after the run, and a fault there wins (it is earlier in the stream).
    It is caught once, by ``session.Session.feed``, which delivers what came out and sets
    the verdict; no shell sees it.
    """

    def __init__(self, fault: Fault, delivered: Batch) -> None:
        self.fault = fault
        self.delivered = delivered


def after_fault(
    fault: Fault, step: Stage | None, given: Batch, *, at_finish: bool = False
) -> Batch:
    """The engine's fault-delivery rule: what of a faulting step's batch goes on downstream.

    ``step`` is the stage (``None``: the decoder); ``given`` is what it had been
    handed — or, at ``finish()`` (``at_finish``), what it had already passed.
    ``fault.kept`` is set only by :func:`~agui_pipeline.stage.reject_after`. What
    goes on is delivered once the stages after ``step`` have passed it (:func:`through`):

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

    Rows 6 and 7 are :func:`through`'s. The events from the fault on count as
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


async def through(
    stages: list[Stage], batch: Batch, built_in: Collection[type[Stage]], *, flush: bool = False
) -> Batch:
    """``batch`` through every stage in turn; with ``flush`` (the end of the stream), each
    stage's :meth:`~Stage.finish` right after it has seen the batch, its tail going on.

    After a fault, what the faulting stage kept (:func:`after_fault`) still goes through
    the stages after it, unflushed: a later stage may find an earlier fault there, and
    then that one is the verdict (row 6); the last fault is raised as :class:`Ended`
    with what came out. A stage's other exceptions propagate, noted with its name (row
    7). A stage whose type is not in ``built_in`` runs under the contract's bookkeeping
    (``contract.counted_process``, ``contract.counted_finish``). The stages of a run of
    built-in ones never wait, so a run steps this coroutine without a loop.
    """
    fault: Fault | None = None
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
        raise Ended(fault, batch)
    return batch
