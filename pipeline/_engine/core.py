"""How a stream's stages are built and which implementation runs the built-in ones.

:func:`build` makes one stream's decoder and its :class:`~chain.Route`: each run of
built-in stages one object (``builtin.BuiltInRun``, of the implementation
:data:`BUILT_IN_RUN` names), each of the user's stages on its own. What a read does along
the route is the session's (``session.Session.feed``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from agui_pipeline._engine.chain import Chain, Route, RunType, StageRun
from agui_pipeline._engine.contract import arrange
from agui_pipeline._engine.order import built_in_stages
from agui_pipeline.stage import Decoder, DecoderFactory, Stage, StageFactory, StreamContext


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
