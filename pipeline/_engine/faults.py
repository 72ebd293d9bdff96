"""The engine's fault-delivery rule: what of a faulting step's batch goes on downstream.

Both the stage-by-stage path (``core``) and the fused pass (``chain``) apply it.
"""

from __future__ import annotations

from agui_pipeline.batch import Batch, empty_batch
from agui_pipeline.errors import HandlerFailed, StreamRejected
from agui_pipeline.stage import Stage

Fault = StreamRejected | HandlerFailed


def after_fault(
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

    Rows 6 and 7 are ``core._through``'s (and ``chain._through``'s). The events from the
    fault on count as ``discarded``, as do all of a batch that fails closed.
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
