"""The two implementations of a run of built-in stages (``builtin.BuiltInRun``), and the
route a read takes through a stream's stages.

Users compose stages as the contract says, each a transformer over batches
(``Stage.process``). The engine runs each maximal run of built-in stages as one object
(:class:`Route`); a stage of the user's splits the run and sees batches, as always.

- :class:`StageRun` runs each stage's ``process`` in turn, by the engine's fault rule
  (``faults.through``).
- :class:`Chain`, the fused pass, takes a small read in one loop over its events, each
  carried through every stage of the chain by the stage's ``step`` while it is at hand —
  no batch, list or await per stage — and a large read as :class:`StageRun` does.

A built-in stage's ``step(event, kind, index)`` (``builtin.SteppedStage``) is what its
``process`` makes of a batch of that one event (``kind``: the event's ``type``, as
``Batch.types`` reads it):

- the event itself, unchanged in type: it goes on to the next step;
- ``None``: the stage dropped it;
- a :class:`Batch`: what it became (a chunk's events, a retyped event).

On a fault it raises what ``process`` would raise for that batch. Dispatch has no step:
when nothing of it waits (no handler, no sink) it ends the chain, fed the pass's output
once per read (``builtin.Tail``).

The fused pass delivers what the unfused one does, event for event, with the same
verdict, diagnostics (in event order rather than stage order within a read), counters
and Conversation; ``tests/test_chain.py`` holds it to that on random streams, and every
rule suite runs on both (``tests/conftest.py``'s ``built_in_run``). The one place they
could differ is a fault part way through a read: the unfused stages before the faulting
one had seen the whole read. :meth:`Chain._fault` gives them the rest of it, so that
what they report and count is the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from agui_pipeline._engine.builtin import BuiltInRun, Tail, has_step, is_tail, run_without_loop
from agui_pipeline._engine.faults import Ended, Fault, after_fault, through
from agui_pipeline.batch import Batch, Event
from agui_pipeline.errors import HandlerFailed, StreamRejected
from agui_pipeline.stage import Stage

Step = Callable[[Event, Any, int], Event | Batch | None]
"""A built-in stage's ``step`` (``builtin.SteppedStage``), bound once per stream."""

STEPPED_READS = 8
"""Reads of at most this many events go through a chain event by event; a larger one goes
through each stage's batch method in turn, still with no await between them. Measured
(``python -m benchmarks.instructions``, the whole pipeline): step by step, 64 KiB reads
cost 30,149 instructions an event against 19,361 stage by stage, and one-frame reads
143,631 against 178,050: a step costs more per event than a batch method's scans in C,
and less than its set-up per read. Below ``IntegerSearch.FEWEST_FRAMES``: a read parse
hands enforce to choose its frames from is large enough to go stage by stage."""


class _Stepped(Exception):
    """A fault or a bug in a step after the first stage of a chain: the stage's position
    in the chain (``at``), and what it was given."""

    def __init__(self, error: Exception, at: int, given: Batch) -> None:
        self.error = error
        self.at = at
        self.given = given


class StageRun:
    """A run of built-in stages, each stage's ``process`` in turn: the batch implementation
    of ``builtin.BuiltInRun``."""

    __slots__ = ("_built_in", "stages")

    def __init__(self, stages: list[Stage]) -> None:
        self.stages = stages
        """Every stage of the run in order; the last may be the tail."""
        self._built_in = frozenset(map(type, stages))

    @property
    def name(self) -> str:
        return "+".join(stage.name for stage in self.stages)

    def run(self, batch: Batch) -> Batch:
        """The read through every stage's batch method; a fault is :class:`Ended`."""
        return self._through(self.stages, batch)

    def _through(self, stages: list[Stage], batch: Batch) -> Batch:
        """``batch`` through ``stages`` (some of this run's), by the engine's fault rule."""
        return run_without_loop(through(stages, batch, self._built_in))


class Chain(StageRun):
    """A run of built-in stages as the fused pass (:meth:`run`): the fused implementation
    of ``builtin.BuiltInRun``."""

    __slots__ = ("_steps", "_tail")

    def __init__(self, stages: list[Stage]) -> None:
        super().__init__(stages)
        last = stages[-1]
        self._tail: Tail | None = last if is_tail(last) else None
        # Bound once per stream: what a step costs per event is its call, not a lookup.
        self._steps: tuple[Step, ...] = tuple(stage.step for stage in stages if has_step(stage))

    def run(self, batch: Batch) -> Batch:
        """The read through every stage of the chain; a fault is :class:`Ended`."""
        size = len(batch.events)
        if size > STEPPED_READS or (size > 1 and len(set(batch.indices)) < size):
            # A large read costs less stage by stage: each batch method's scans run in C
            # over the events it has no work for, and its set-up is paid once per many.
            # Several events of one frame (a stage of yours before the chain expanded it)
            # go stage by stage too: a fault on one of them discards the frame's events
            # whole (``faults.after_fault``), which a step, one event at a time, cannot.
            return self._through(self.stages, batch)
        # A live read is one frame, one event: its own path, without the loop's set-up.
        passed = self._stepped_one(batch) if size == 1 else self._stepped(batch)
        if self._tail is None:
            return passed
        try:
            return self._tail.deliver(passed)
        except (StreamRejected, HandlerFailed) as fault:
            raise Ended(fault, after_fault(fault, self.stages[-1], passed)) from None
        except Exception as error:  # a bug (a stage fed what enforce would refuse): named
            error.add_note(f"raised in the {self.stages[-1].name!r} stage")
            raise

    def _stepped(self, batch: Batch) -> Batch:
        """The read through every step, event by event: what the last step passed."""
        events, indices, steps = batch.events, batch.indices, self._steps
        out: list[Event] | None = None  # made only once a step drops or changes an event
        out_indices: list[int] = []
        unread = iter(events)
        step: Step | None = None
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
                if isinstance(made, Batch):  # else dropped (``None``)
                    self._carry(steps.index(step) + 1, made, out, out_indices)
        except _Stepped as stepped:  # in a step after the first, on what a step made
            position = len(events) - 1 - unread.__length_hint__()  # type: ignore[attr-defined]
            if out is None:
                out, out_indices = events[:position], indices[:position]
            self._carried_fault(stepped, batch, position, out, out_indices)
        except Exception as error:
            # Raised by a step of the loop itself: the loop's ``step`` is still the one that
            # raised, so the loop keeps no count of its steps (two stores an event per stage).
            at = 0 if step is None else steps.index(step)
            position = len(events) - 1 - unread.__length_hint__()  # type: ignore[attr-defined]
            if out is None:
                out, out_indices = events[:position], indices[:position]
            self._step_fault(error, at, batch, position, out, out_indices)
        # Nothing dropped or changed (the common read): the batch goes on as it came, its
        # types read once (the Conversation reads them again otherwise).
        return batch if out is None else Batch(out, out_indices)

    def _stepped_one(self, batch: Batch) -> Batch:
        """:meth:`_stepped` on a read of one event, a live read: the same steps, without
        the loop's set-up (an iterator, a zip) that a read of one event pays in full."""
        event, kind, index = batch.events[0], batch.types[0], batch.indices[0]
        steps = self._steps
        step: Step | None = None
        try:
            for step in steps:
                made = step(event, kind, index)
                if made is not event:  # dropped, or became other events: rarely
                    break
            else:
                return batch
            out: list[Event] = []
            out_indices: list[int] = []
            if isinstance(made, Batch):  # else dropped (``None``)
                self._carry(steps.index(step) + 1, made, out, out_indices)
            return Batch(out, out_indices)
        except _Stepped as stepped:
            self._carried_fault(stepped, batch, 0, [], [])
        except Exception as error:
            self._step_fault(error, 0 if step is None else steps.index(step), batch, 0, [], [])

    def _carried_fault(
        self,
        stepped: _Stepped,
        read: Batch,
        position: int,
        out: list[Event],
        out_indices: list[int],
    ) -> NoReturn:
        """A step after the first faulted (or failed) on what a step made of the read's event
        at ``position``; ``out``: what the pass had carried through before it."""
        error, at = stepped.error, stepped.at
        if not isinstance(error, StreamRejected | HandlerFailed):
            error.add_note(f"raised in the {self.stages[at].name!r} stage")
            raise error from None
        self._fault(error, at, stepped.given, read, position, out, out_indices)

    def _step_fault(
        self,
        error: Exception,
        at: int,
        read: Batch,
        position: int,
        out: list[Event],
        out_indices: list[int],
    ) -> NoReturn:
        """The step ``at`` faulted (or failed) on the read's event at ``position`` itself."""
        if not isinstance(error, StreamRejected | HandlerFailed):
            error.add_note(f"raised in the {self.stages[at].name!r} stage")
            raise error
        given = Batch([read.events[position]], [read.indices[position]])
        self._fault(error, at, given, read, position, out, out_indices)

    def _carry(self, at: int, made: Batch, out: list[Event], out_indices: list[int]) -> None:
        """What the step before ``at`` made of one event, through the steps from ``at``.

        One event (a retyped one, a chunk's content) goes on step by step; several (a
        chunk stream's start and content, or an end before the event) go through each
        stage's ``process`` together, so that a fault keeps of them what it would unfused.
        A stage's fault or bug is :class:`_Stepped`, with the stage's position.
        """
        steps = self._steps
        if len(made.events) == 1:
            event, kind, index = made.events[0], made.types[0], made.indices[0]
            for position in range(at, len(steps)):
                try:
                    again = steps[position](event, kind, index)
                except Exception as error:
                    raise _Stepped(error, position, made) from None
                if again is not event:
                    if isinstance(again, Batch):  # else dropped (``None``)
                        self._carry(position + 1, again, out, out_indices)
                    return
            out.append(event)
            out_indices.append(index)
            return
        for position in range(at, len(steps)):
            if not made.events:
                return
            try:
                made = run_without_loop(self.stages[position].process(made))
            except Exception as error:
                raise _Stepped(error, position, made) from None
        out += made.events
        out_indices += made.indices

    def _fault(
        self,
        fault: Fault,
        at: int,
        given: Batch,
        read: Batch,
        position: int,
        out: list[Event],
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
            reached = self._through(self.stages[:at], rest)
        except Ended as earlier:  # its own fault is later in the stream than ``fault``
            reached = earlier.delivered
        self.stages[at].ctx.counters.discarded += len(reached)
        try:
            carried = self._through(self.stages[at + 1 : len(self._steps)], kept)
        except Ended as later:  # a fault on what went on: earlier in the stream, it wins
            fault, carried = later.fault, later.delivered
        passed = Batch(out, out_indices) + carried
        if self._tail is not None:  # what the steps passed, the tail has yet to see
            try:
                passed = self._through(self.stages[-1:], passed)
            except Ended as later:
                fault, passed = later.fault, later.delivered
        raise Ended(fault, passed) from None


RunType = Callable[[list[Stage]], BuiltInRun]
"""An implementation of a run of built-in stages (``core.BUILT_IN_RUNS``): a class."""


class Route:
    """One stream's stages as the engine runs them: runs of built-in stages, each one object
    of ``run_type`` (``builtin.BuiltInRun``), and the stages between."""

    __slots__ = ("after", "built_in", "run_type", "segments", "stages")

    def __init__(
        self, stages: list[Stage], built_in: frozenset[type[Stage]], run_type: RunType
    ) -> None:
        self.stages = stages
        self.built_in = built_in
        """The built-in stages' types (``order.built_in_stages``), recorded once: a read
        asks which of its stages are the user's (``faults.through``)."""
        self.run_type = run_type
        self.segments: list[Stage | BuiltInRun] = []
        """The stages in order, each maximal run of built-in ones one object."""
        run: list[Stage] = []
        for stage in stages:
            if type(stage) in built_in and _runs(stage):
                run.append(stage)
                if is_tail(stage):  # nothing follows the tail in a run
                    self.segments.append(run_type(run))
                    run = []
                continue
            if run:
                self.segments.append(run_type(run))
                run = []
            self.segments.append(stage)
        if run:
            self.segments.append(run_type(run))
        self.after: list[list[Stage]] = []
        """For each segment, the stages after it."""
        done = 0
        for segment in self.segments:
            done += 1 if isinstance(segment, Stage) else len(segment.stages)
            self.after.append(stages[done:])


def _runs(stage: Stage) -> bool:
    """Whether a built-in stage can be part of a run: it has a step, or it is the tail
    (dispatch) and nothing of it waits."""
    return has_step(stage) or (is_tail(stage) and not stage.waits)
