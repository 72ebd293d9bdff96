"""The per-read machinery both shells share: how one read travels through the stages, and
what a fault lets through.

``_read`` decodes a read and runs the batch through the stream's :class:`Route`: each
run of built-in stages as one object (``builtin.BuiltInRun``, of the implementation
:data:`BUILT_IN_RUN` names), each of the user's stages in turn (the end of the stream
goes through ``faults.through``, stage by stage, which also flushes each stage). When a
stage faults, ``faults.after_fault`` says what of its batch goes on, and
``faults.through`` carries that through the stages after it before ending the stream
with ``faults.Ended`` — caught once, by the shell (``EventStream._run``,
``Incremental._step``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from agui_pipeline._engine.chain import Chain, Route, RunType, StageRun
from agui_pipeline._engine.contract import arrange, counted_process
from agui_pipeline._engine.faults import Ended, Fault, after_fault, through
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


BUILT_IN_RUNS: dict[str, RunType] = {"batch": StageRun, "fused": Chain}
"""The implementations of a run of built-in stages, by name (``builtin.BuiltInRun``): each
stage's batch method in turn, or the fused pass. They answer alike; every rule suite runs
on each (``tests/conftest.py``'s ``built_in_run``)."""

BUILT_IN_RUN = "fused"
"""The implementation the engine runs (a key of :data:`BUILT_IN_RUNS`)."""


def build(plan: StagePlan, ctx: StreamContext) -> tuple[Decoder, Route]:
    """Fresh stages for one stream, with the expansion their chunk forms ask for, and the
    route a read takes through them."""
    stages = [factory(ctx) for factory in plan.stage_factories]
    built_in = built_in_stages()
    route = Route(arrange(ctx, stages, built_in), built_in, BUILT_IN_RUNS[BUILT_IN_RUN])
    decoder = plan.decoder(ctx)
    _hand_frames_over(decoder, route.stages)
    return decoder, route


def _hand_frames_over(decoder: Decoder, stages: list[Stage]) -> None:
    """Parse hands its reads' frames to enforce, whose checks choose which of them to search
    for integers past 64 bits (``IntegerSearch`` in ``stages/parse.py``): wired here, in
    private, so that no stage of the user's is handed it. Every enforce stage shares the
    first one's search: one search per stream."""
    from agui_pipeline.stages.enforce import Enforce
    from agui_pipeline.stages.parse import Parse

    if not isinstance(decoder, Parse):
        return
    enforcing = [stage for stage in stages if isinstance(stage, Enforce)]
    if enforcing:
        decoder.handover = enforcing[0].integers
        for stage in enforcing[1:]:
            stage.integers = decoder.handover


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
    event: one call per run of built-in stages, one await per stage of the user's
    that has events to see, none once the batch is empty. A fault hands the rest to
    ``faults.through``'s general loop, which applies the rule; the end goes there too.
    """
    stages, built_in = route.stages, route.built_in
    try:
        batch = decoder.feed(chunk) if chunk is not None else decoder.finish()
    except StreamRejected as fault:
        kept = after_fault(fault, None, empty_batch())
        raise Ended(fault, await through(stages, kept, built_in)) from None
    except Exception as error:
        error.add_note(f"raised in the {decoder.name!r} stage (the decoder)")
        raise
    if chunk is None:
        return await through(stages, batch, built_in, flush=True)
    position = 0
    segments, run_type = route.segments, route.run_type
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
        raise Ended(
            ended.fault, await through(route.after[position], ended.delivered, built_in)
        ) from None
    except (StreamRejected, HandlerFailed) as error:
        stage: Any = segments[position]  # ``batch`` is still what it was handed
        kept = after_fault(error, stage, batch)
        raise Ended(error, await through(route.after[position], kept, built_in)) from None
    except Exception as error:
        if isinstance(segments[position], Stage):  # a run names its own stage
            error.add_note(f"raised in the {segments[position].name!r} stage")
        raise
    return batch
