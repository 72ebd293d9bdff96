"""The stage contract, as the engine keeps it for stages that are not built in: the chunk
form each asks for (``Stage.form``), and counters that balance whatever it does.

Both are the engine's so that a user's stage cannot get them wrong: a middleware that
needs the start/content/end form is handed it without the author placing an expansion,
and the accounting on the result holds without the author counting anything
(``Counters``). Built-in stages count for themselves and are not wrapped: nothing here
runs on a pipeline of built-in stages alone.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from agui_pipeline.batch import Batch
from agui_pipeline.errors import HandlerFailed, StreamRejected, UsageError
from agui_pipeline.stage import ChunkForm, Counters, Stage, StageFactory, StreamContext

EXPAND = "expand"
"""The name of the stage that expands chunks (``stages/expand.py``)."""


def declared_form(factory: StageFactory) -> ChunkForm | None:
    """The form a factory's stages ask for, when it can be read without building one: a
    :class:`Stage` class, or a ``functools.partial`` of one. ``None``: only a built stage says."""
    form = getattr(_unwrapped(factory), "form", None)
    return form if isinstance(form, ChunkForm) else None


def factory_name(factory: StageFactory) -> str:
    """What a factory's stages are called in the stage list: the class's ``name`` (through a
    ``functools.partial``), else the function's name."""
    unwrapped = _unwrapped(factory)
    return str(getattr(unwrapped, "name", None) or getattr(unwrapped, "__name__", "stage"))


def _unwrapped(factory: object) -> object:
    while isinstance(factory, functools.partial):
        factory = factory.func
    return factory


def check_forms(stages: Iterable[tuple[str, ChunkForm | None]]) -> None:
    """Refuse a stage that asks for chunks as sent (``AS_SENT``) placed where something
    before it expands them: expand, or a stage that asks for the expanded form."""
    expanded_by: str | None = None
    for name, form in stages:
        if form is ChunkForm.AS_SENT and expanded_by is not None:
            raise UsageError(
                f"the {name!r} stage asks for chunks as sent (ChunkForm.AS_SENT), but it sits "
                f"after {expanded_by}, which hands on the expanded form: place it before "
                f"{expanded_by} (middleware goes before enforce and expand), or give it "
                "ChunkForm.EITHER"
            )
        if name == EXPAND and expanded_by is None:
            expanded_by = "the 'expand' stage"
        elif form is ChunkForm.EXPANDED and expanded_by is None:
            expanded_by = f"the {name!r} stage (ChunkForm.EXPANDED: chunks are expanded for it)"


def arrange(ctx: StreamContext, stages: list[Stage], built_in: frozenset[type]) -> list[Stage]:
    """``stages`` as one stream runs them: an expansion before the first stage that asks for
    the expanded form (unless expand has already run), and the placement checked (a
    factory that is a plain function only says its stages' form once it has built one)."""
    check_forms((_name_of(stage, built_in), stage.form) for stage in stages)
    from agui_pipeline.stages.expand import Expand  # the stage modules import the contract

    arranged: list[Stage] = []
    expanded = False
    for stage in stages:
        if isinstance(stage, Expand):
            expanded = True
        elif stage.form is ChunkForm.EXPANDED and not expanded:
            # The spec's chaining helper: a chain may expand between its own stages
            # (``/spec/1.1/basic/processing``, "Where middleware sits").
            arranged.append(Expand(ctx))
            expanded = True
        arranged.append(stage)
    return arranged


def _name_of(stage: Stage, built_in: frozenset[type]) -> str:
    """A stage's name; only the built-in expand is called ``expand`` for the placement rule."""
    name = stage.name
    return f"{name} (yours)" if name == EXPAND and type(stage) not in built_in else name


# -- the counters ------------------------------------------------------------------------


def _in_flight(counters: Counters) -> int:
    """Events read or made and not yet accounted for: those in the batch being carried."""
    return (
        counters.read
        + counters.synthesized
        - counters.delivered
        - counters.dropped
        - counters.expanded
        - counters.discarded
    )


async def counted_process(stage: Stage, batch: Batch) -> Batch:
    """``stage.process(batch)`` for a stage that is not built in: what the batch knew of its
    events forgotten (the stage may have changed them in place), and the counters settled.

    On a fault, the engine discards the batch from the faulting event on
    (``faults.after_fault``); what the stage kept before it (``reject_after``) is what it
    returned, and it is settled against the events it was handed before the fault.
    """
    counters = stage.ctx.counters
    handed = len(batch.events)
    before = _in_flight(counters)
    try:
        out = await stage.process(batch)
    except (StreamRejected, HandlerFailed) as fault:
        if fault.kept is None:
            _settle(stage, before, 0, 0)  # the whole batch is discarded: nothing to settle
        else:
            _settle(stage, before, len(batch.before(fault.event_index)), len(fault.kept))
        raise
    out.changed()
    _settle(stage, before, handed, len(out.events))
    return out


async def counted_finish(stage: Stage) -> Batch:
    """``stage.finish()`` for a stage that is not built in: the events it adds at the end of
    the stream are synthesized, unless it counted them."""
    before = _in_flight(stage.ctx.counters)
    try:
        tail = await stage.finish()
    except (StreamRejected, HandlerFailed) as fault:
        _settle(stage, before, 0, 0 if fault.kept is None else len(fault.kept))
        raise
    _settle(stage, before, 0, len(tail.events))
    return tail


def _settle(stage: Stage, before: int, handed: int, returned: int) -> None:
    """Balance the counters after ``stage`` turned ``handed`` events into ``returned``.

    A stage that counted nothing has its change counted for it (fewer events:
    ``dropped``; more: ``synthesized``); one that counted what it did is left alone; one
    whose counting does not balance what it returned is a bug, named here rather than
    left as a result whose accounting does not add up.
    """
    counters = stage.ctx.counters
    counted = _in_flight(counters) - before
    change = returned - handed
    if counted == change:
        return
    if counted == 0:
        if change < 0:
            counters.dropped -= change
        else:
            counters.synthesized += change
        return
    raise UsageError(
        f"the {stage.name!r} stage returned {returned} events for the {handed} it was handed "
        f"({change:+}), but what it counted says {counted:+} (synthesized - dropped - "
        "expanded - discarded): leave the counters to the engine, or count exactly what the "
        "stage does, so that read + synthesized == delivered + dropped + expanded + discarded"
    )
