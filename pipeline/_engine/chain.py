"""The fused pass: each run of consecutive built-in stages goes through a read as one loop.

Users compose stages as the contract says, each a transformer over batches
(``Stage.process``). The engine runs them otherwise: each maximal run of built-in
stages is a :class:`Chain`, and a read goes through a chain in one loop over its
events, each carried through every stage of the chain by the stage's ``step`` while
it is at hand — no batch, list or await per stage. A stage of the user's splits the
chain and sees batches, as always (:class:`Route`).

A built-in stage's ``step(event, kind, index)`` is what its ``process`` makes of a
batch of that one event (``kind``: the event's ``type``, as ``Batch.types`` reads it):

- the event itself, unchanged in type: it goes on to the next step;
- ``None``: the stage dropped it;
- a :class:`Batch`: what it became (a chunk's events, a retyped event).

On a fault it raises what ``process`` would raise for that batch. Dispatch has no step:
when nothing of it waits (no handler, no sink) it ends the chain, fed the pass's output
once per read (``Dispatch.deliver``).

The fused pass delivers what the unfused one does, event for event, with the same
verdict, diagnostics (in event order rather than stage order within a read), counters
and Conversation; ``tests/test_chain.py`` holds it to that. The one place they could
differ is a fault part way through a read: the unfused stages before the faulting one
had seen the whole read. :meth:`Chain._fault` gives them the rest of it, so that what
they report and count is the same.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, NoReturn

from agui_pipeline._engine.faults import Fault, after_fault
from agui_pipeline.batch import Batch
from agui_pipeline.errors import HandlerFailed, StreamRejected
from agui_pipeline.stage import Stage

Step = Callable[[Any, Any, int], Any]
"""A built-in stage's ``step``: ``(event, kind, index)`` to the event, ``None`` or a Batch."""

FUSE = True
"""Whether shells fuse the built-in stages (the property test compares both ways)."""

STEPPED_READS = 8
"""Reads of at most this many events go through a chain event by event; a larger one goes
through each stage's batch method in turn, still with no await between them. Measured
(``python -m benchmarks.instructions``, the whole pipeline): step by step, 64 KiB reads
cost 30,149 instructions an event against 19,361 stage by stage, and one-frame reads
143,631 against 178,050: a step costs more per event than a batch method's scans in C,
and less than its set-up per read. Below ``IntegerSearch.FEWEST_FRAMES``: a read parse
hands enforce to choose its frames from is large enough to go stage by stage."""


class ChainFault(Exception):
    """A fault in a chain, with what of the read goes on to the stages after the chain."""

    def __init__(self, fault: Fault, delivered: Batch) -> None:
        self.fault = fault
        self.delivered = delivered


class _StepBug(Exception):
    """A stage's bug in a step after the first of a chain, with the stage's position."""

    def __init__(self, error: Exception, at: int) -> None:
        self.error = error
        self.at = at


class _StepFault(Exception):
    """A fault in a step after the first stage of a chain: where, and on what."""

    def __init__(self, fault: Fault, at: int, given: Batch) -> None:
        self.fault = fault
        self.at = at
        self.given = given


def _now(coroutine: Coroutine[Any, Any, Batch]) -> Batch:
    """A built-in stage's coroutine, which never waits, run to its end in one step."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        batch: Batch = done.value
        return batch
    raise AssertionError("a chained stage waited")  # pragma: no cover


class Chain:
    """Consecutive built-in stages, run as one pass per read (:meth:`run`)."""

    __slots__ = ("_steps", "_tail", "stages")

    def __init__(self, stages: list[Stage]) -> None:
        self.stages = stages
        """Every stage of the chain in order; the last may be the tail."""
        stepping = [stage for stage in stages if hasattr(stage, "step")]
        self._tail: Any = stages[-1] if len(stepping) < len(stages) else None
        # Bound once per stream: what a step costs per event is its call, not a lookup.
        self._steps: tuple[Step, ...] = tuple(stage.step for stage in stepping)

    @property
    def name(self) -> str:
        return "+".join(stage.name for stage in self.stages)

    def run(self, batch: Batch) -> Batch:
        """The read through every stage of the chain; a fault is a :class:`ChainFault`."""
        if len(batch.events) > STEPPED_READS:
            # A large read costs less stage by stage: each batch method's scans run in C
            # over the events it has no work for, and its set-up is paid once per many.
            return _through(self.stages, batch)
        passed = self._stepped(batch)
        if self._tail is None:
            return passed
        try:
            return self._tail.deliver(passed)  # type: ignore[no-any-return]
        except (StreamRejected, HandlerFailed) as fault:
            raise ChainFault(fault, after_fault(fault, self._tail, passed)) from None

    def _stepped(self, batch: Batch) -> Batch:
        """The read through every step, event by event: what the last step passed."""
        events, indices, steps = batch.events, batch.indices, self._steps
        out: list[Any] | None = None  # made only once a step drops or changes an event
        out_indices: list[int] = []
        unread = iter(events)
        try:
            for event, kind, index in zip(unread, batch.types, indices, strict=True):
                for step in steps:
                    made = step(event, kind, index)
                    if made is not event:  # dropped, or became other events: rarely
                        break
                else:
                    if out is not None:
                        out.append(event)
                        out_indices.append(index)
                    continue
                if out is None:
                    position = len(events) - 1 - unread.__length_hint__()  # type: ignore[attr-defined]
                    out, out_indices = events[:position], indices[:position]
                if made is not None:
                    self._carry(steps.index(step) + 1, made, out, out_indices)
        except (_StepFault, StreamRejected, HandlerFailed) as error:
            position = len(events) - 1 - unread.__length_hint__()  # type: ignore[attr-defined]
            if out is None:
                out, out_indices = events[:position], indices[:position]
            if isinstance(error, _StepFault):
                self._fault(error.fault, error.at, error.given, batch, position, out, out_indices)
            given = Batch([events[position]], [indices[position]])
            at = self._raised_in(error)
            self._fault(error, at, given, batch, position, out, out_indices)
        except _StepBug as bug:
            bug.error.add_note(f"raised in the {self.stages[bug.at].name!r} stage")
            raise bug.error from None
        except Exception as error:
            error.add_note(f"raised in the {self.stages[self._raised_in(error)].name!r} stage")
            raise
        # Nothing dropped or changed (the common read): the batch goes on as it came, its
        # types read once (the Conversation reads them again otherwise).
        return batch if out is None else Batch(out, out_indices)

    def _raised_in(self, error: Exception) -> int:
        """The position of the step that raised ``error`` in :meth:`run`'s loop: the stage
        of the frame the loop called. What it buys: the loop keeps no count of its steps
        (two stores an event per stage), a cost only a fault pays back."""
        frame = error.__traceback__.tb_next if error.__traceback__ is not None else None
        stage = None if frame is None else frame.tb_frame.f_locals.get("self")
        return next((at for at, known in enumerate(self.stages) if known is stage), 0)

    def _carry(self, at: int, made: Batch, out: list[Any], out_indices: list[int]) -> None:
        """What the step before ``at`` made of one event, through the steps from ``at``.

        One event (a retyped one, a chunk's content) goes on step by step; several (a
        chunk stream's start and content, or an end before the event) go through each
        stage's ``process`` together, so that a fault keeps of them what it would unfused.
        """
        steps = self._steps
        if len(made.events) == 1:
            event, kind, index = made.events[0], made.types[0], made.indices[0]
            for position in range(at, len(steps)):
                try:
                    again = steps[position](event, kind, index)
                except (StreamRejected, HandlerFailed) as fault:
                    raise _StepFault(fault, position, made) from None
                except Exception as error:
                    raise _StepBug(error, position) from None
                if again is not event:
                    if again is not None:
                        self._carry(position + 1, again, out, out_indices)
                    return
            out.append(event)
            out_indices.append(index)
            return
        for position in range(at, len(steps)):
            if not made.events:
                return
            try:
                made = _now(self.stages[position].process(made))
            except (StreamRejected, HandlerFailed) as fault:
                raise _StepFault(fault, position, made) from None
            except Exception as error:
                raise _StepBug(error, position) from None
        out += made.events
        out_indices += made.indices

    def _fault(
        self,
        fault: Fault,
        at: int,
        given: Batch,
        read: Batch,
        position: int,
        out: list[Any],
        out_indices: list[int],
    ) -> NoReturn:
        """The stage ``at`` faulted on ``given``, made of the read's event at ``position``:
        raise what the unfused stages would deliver, with the verdict they would reach.

        Unfused, every stage before ``at`` had seen the whole read, and what it passed
        after the fault reached the faulting stage only to be discarded: the rest of the
        read goes through those stages now (their reports and counts are the same), and
        what comes out is counted discarded. What the faulting stage kept goes on through
        the stages after it, behind what the pass had already carried through.
        """
        kept = after_fault(fault, self.stages[at], given)
        rest = Batch(read.events[position + 1 :], read.indices[position + 1 :])
        try:
            reached = _through(self.stages[:at], rest)
        except ChainFault as earlier:  # its own fault is later in the stream than ``fault``
            reached = earlier.delivered
        self.stages[at].ctx.counters.discarded += len(reached)
        try:
            carried = _through(self.stages[at + 1 : len(self._steps)], kept)
        except ChainFault as later:  # a fault on what went on: earlier in the stream, it wins
            fault, carried = later.fault, later.delivered
        passed = Batch(out, out_indices) + carried
        if self._tail is not None:  # what the steps passed, the tail has yet to see
            try:
                passed = _through([self._tail], passed)
            except ChainFault as later:
                fault, passed = later.fault, later.delivered
        raise ChainFault(fault, passed) from None


def _through(stages: list[Stage], batch: Batch) -> Batch:
    """``batch`` through each stage's ``process``; a fault's kept part goes on through the
    stages after it, and the last fault is raised with it (``core._through``, unflushed)."""
    fault: Fault | None = None
    for stage in stages:
        if not batch.events:
            continue
        given = batch
        try:
            batch = _now(stage.process(batch))
        except (StreamRejected, HandlerFailed) as error:
            fault = error
            batch = after_fault(error, stage, given)
        except Exception as error:
            error.add_note(f"raised in the {stage.name!r} stage")
            raise
    if fault is not None:
        raise ChainFault(fault, batch)
    return batch


class Route:
    """One stream's stages as the engine runs them: chains, and the stages between."""

    __slots__ = ("after", "segments", "stages")

    def __init__(self, stages: list[Stage], built_in: frozenset[type[Stage]]) -> None:
        self.stages = stages
        self.segments: list[Stage | Chain] = []
        """The stages in order, each run of built-in ones a chain when fused."""
        run: list[Stage] = []
        for stage in stages:
            if FUSE and type(stage) in built_in and _chainable(stage):
                run.append(stage)
                if not hasattr(stage, "step"):  # dispatch, the tail: nothing follows it
                    self.segments.append(Chain(run))
                    run = []
                continue
            if run:
                self.segments.append(Chain(run))
                run = []
            self.segments.append(stage)
        if run:
            self.segments.append(Chain(run))
        self.after: list[list[Stage]] = []
        """For each segment, the stages after it."""
        done = 0
        for segment in self.segments:
            done += len(segment.stages) if isinstance(segment, Chain) else 1
            self.after.append(stages[done:])


def _chainable(stage: Stage) -> bool:
    """A built-in stage with a step, or dispatch when nothing of it waits."""
    return hasattr(stage, "step") or not getattr(stage, "waits", True)
