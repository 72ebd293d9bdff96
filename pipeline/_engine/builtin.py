"""The seam between the engine and the built-in stages: what it asks of a run of them.

The engine hands each maximal run of consecutive built-in stages to one object, a
:class:`BuiltInRun`, and asks it one thing per read: the read through every stage of the
run (:meth:`BuiltInRun.run`). Which implementation answers is the engine's choice
(``core.BUILT_IN_RUNS``): each stage's ``process`` in turn (``chain.StageRun``), or the
fused pass that carries a small read event by event through each stage's ``step``
(``chain.Chain``). Both answer the same, event for event, verdict for verdict: every rule
suite runs on each (the ``built_in_run`` fixture in ``tests/conftest.py``).

What the fused pass asks of a stage is declared here and held by mypy (:func:`roles`):
a :class:`SteppedStage` steps one event, and the :class:`Tail` (dispatch, when nothing of
it waits) takes the pass's output once per read.
"""

from __future__ import annotations

from collections.abc import Coroutine
from functools import cache
from typing import Any, Protocol, TypeGuard, TypeVar

from agui_pipeline.batch import Batch, Event
from agui_pipeline.errors import UsageError
from agui_pipeline.stage import Stage

T = TypeVar("T")


class SteppedStage(Protocol):
    """A built-in stage the fused pass carries events through one at a time."""

    def step(self, event: Event, kind: Any, index: int) -> Event | Batch | None:
        """What the stage's ``process`` makes of a batch of this one event (``kind``: its
        ``type``, as ``Batch.types`` reads it, ``index``: its frame's): the event itself,
        unchanged in type, to go on; ``None``, dropped; or a :class:`Batch`, what it became.
        On a fault it raises what ``process`` would raise for that batch."""
        ...


class Tail(Protocol):
    """The stage that ends a run of built-in stages: dispatch, when nothing of it waits."""

    @property
    def waits(self) -> bool:
        """Whether delivery may wait (a handler or a sink): then it is not part of a run."""
        ...

    def deliver(self, batch: Batch) -> Batch:
        """What ``process`` does with ``batch``, without a coroutine: it never waits."""
        ...


class BuiltInRun(Protocol):
    """Consecutive built-in stages, run as one object, whichever implementation runs them."""

    stages: list[Stage]
    """The stages of the run in order (the end of the stream goes through each one's
    ``finish``, as through every stage)."""

    @property
    def name(self) -> str: ...

    def run(self, batch: Batch) -> Batch:
        """``batch`` through every stage of the run: what the last one passed. A fault ends
        the stream: :class:`~agui_pipeline._engine.faults.Ended`, with what of the read goes
        on past the run (the rule of ``faults.after_fault``)."""
        ...


@cache
def roles() -> tuple[frozenset[type], type]:
    """The built-in stages that step, and the tail: a declaration mypy holds each class to."""
    # Imported here: the stage modules sit above the engine.
    from agui_pipeline.stages.compat import Compat
    from agui_pipeline.stages.dispatch import Dispatch
    from agui_pipeline.stages.enforce import Enforce
    from agui_pipeline.stages.expand import Expand
    from agui_pipeline.stages.lint import Lint
    from agui_pipeline.stages.metadata import Metadata
    from agui_pipeline.stages.reconcile import Reconcile
    from agui_pipeline.stages.verify import Verify

    stepped: tuple[type[SteppedStage], ...] = (
        Compat,
        Enforce,
        Expand,
        Verify,
        Reconcile,
        Lint,
        Metadata,
    )
    tail: type[Tail] = Dispatch
    return frozenset(stepped), tail


def has_step(stage: Stage) -> TypeGuard[SteppedStage]:
    """Whether ``stage`` is a built-in stage with a step."""
    return type(stage) in roles()[0]


def is_tail(stage: Stage) -> TypeGuard[Tail]:
    """Whether ``stage`` is the tail (dispatch), whether or not anything of it waits."""
    return type(stage) is roles()[1]


def run_without_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never waits to its end, by stepping it once.

    The one way the engine runs a stage's coroutine without a loop: a built-in stage's
    never waits, and the sync shell runs a whole read so. Raises
    :class:`~agui_pipeline.UsageError` if it does wait — an ``async`` handler, sink or
    stage awaiting I/O — since there is no loop to wait in.
    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        value: T = done.value
        return value
    coroutine.close()
    raise UsageError(
        "a handler, sink or stage awaited something that waits (I/O, a sleep, a lock): "
        "the sync shell has no event loop to wait in. Use the async API — "
        "`async with pipeline.open(source) as stream` or `await pipeline.run(source)` — "
        "or make the handler synchronous"
    )
