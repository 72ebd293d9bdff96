"""Deliver mode: the native judge reads a stream whose events go to application code.

The pipeline's cost is mostly the Python objects it builds per event and the stages that walk
them. While the native judge (``native/src/judge.rs``) is sure of a stream — it frames,
decodes and follows each read, and no stage from parse to lint would say anything of it or
change an event — the events those stages would pass are exactly the frames as sent. So each
such read's frames are built once, by the judge from its own decoding (``native/src/build.rs``:
the objects ``orjson.loads`` would build), and only the stages after lint (metadata and
dispatch: the Conversation, the handlers, the sinks) run in Python on them.

The session runs it as its decoder (:class:`JudgedFront`) on a route of the stages after
lint: metadata and dispatch, any stage of the user's placed after lint, and reconcile first
when the agent declared its capabilities. Reconcile never changes an event and no stage
before it reads what it found, and the events the judge passes are those reconcile would see
after expand and verify: so it holds the stream to the declaration on the judge's events
exactly as on the reference's, in its own words either way. A stage of the user's after lint
is handed what lint would hand it, read by read.

The judge may become unsure at any read (a chunk, a retired shape, a warning to give, a
fault). Then the reference takes over where it stands: the reads the judge passed are fed
again through parse and the stages up to lint it stood in for, whose output is dropped (the
stages of the route have seen those events already), so that every stage holds what it would
have held; and the session's decoder and route become the reference's, for that read and every
read after. A handover costs the reads held on top of what the reference would have cost,
once. What the judge passed is the reference's by construction, and ``tests/test_deliver.py``
holds the two to the same events, verdicts, diagnostics and Conversation.

The reads are held for that, up to ``Limits.max_held_bytes``: the read that would pass it is
the reference's, handed over while the judge is still sure, so the memory a stream holds is
bounded and its cost per event never grows with its length.

Deliver mode runs where the judge can stand in (``judging.stands_in``: the default decoder
and stages, the user's only after lint, any peer version compat reads, SSE or JSON lines),
with any declaration, handlers or sinks, and with a run input the judge can take
(``judging.input_for_judge``: what ``HttpAgent`` and the conformance runner send); the
session (``open_session``) chooses it per stream.

A stage of the user's before lint (the middleware slot is before enforce) reads what the
judge's rules stand in for, so there the judge stands in for parse and compat alone
(``judging.FRONT_JUDGED``): it passes the events compat would leave as sent, and the route is
the user's stage, enforce and every stage after it, in Python. The same handover holds: the
reads it passed go through parse and compat again, and verify, in the route, has recorded
the runs itself. A run input is then the route's to read, not the judge's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agui_pipeline import _cores
from agui_pipeline._engine.chain import Route, StageRun
from agui_pipeline._engine.judging import (
    LAST_JUDGED,
    JudgeInput,
    input_for_judge,
    judged_framing,
    new_judge,
    reads_no_event,
    record_runs,
    stands_in,
)
from agui_pipeline._engine.session import Session
from agui_pipeline._proto import TRANSPORT as PROTO_TRANSPORT
from agui_pipeline.batch import Batch, Event, empty_batch
from agui_pipeline.stage import Decoder, RunRecord, Stage, StreamContext
from agui_pipeline.stages.parse import BOM
from agui_pipeline.stages.reconcile import EVIDENCE_TYPES, Reconcile

if TYPE_CHECKING:
    from agui_pipeline._engine.core import StagePlan
    from agui_pipeline._native import Judge


def open_session(plan: StagePlan, ctx: StreamContext, *, verdict_only: bool = False) -> Session:
    """The session for one stream: in deliver mode where the judge can stand in for parse and
    some of the stages after it, else the reference's.

    ``verdict_only``: the caller keeps neither the events nor the Conversation
    (``EventStream.drain(conversation=False)``). Where nothing after lint reads the events
    either (:func:`~agui_pipeline._engine.judging.reads_no_event`) but a declaration's
    reconcile, the judge builds none but those reconcile reads: judge mode on a stream read
    as it arrives."""
    if _cores.native is not None and delivers(plan, ctx):
        upto = stands_in(plan, ctx.options)
        assert upto is not None
        builds = not (verdict_only and upto is LAST_JUDGED and reads_no_event(plan, ctx.options))
        if ctx.run_input is None or upto is not LAST_JUDGED:  # only lint's rules read it
            return JudgedSession(plan, ctx, upto, None, builds)
        answering = input_for_judge(ctx.run_input)
        if answering is not None:
            return JudgedSession(plan, ctx, upto, answering, builds)
    return Session(plan, ctx)


def delivers(plan: StagePlan, ctx: StreamContext) -> bool:
    """Whether deliver mode can run ``plan`` on this stream (see the module's docstring): a
    run input besides, when the judge standing in up to lint can take it
    (:func:`input_for_judge`)."""
    return stands_in(plan, ctx.options) is not None and ctx.transport != PROTO_TRANSPORT


class JudgedSession(Session):
    """A :class:`Session` whose decoder is the native judge (:class:`JudgedFront`) while it
    is sure of the stream, on a route of the stages after ``upto`` alone; the reference's
    decoder and route once it hands over."""

    __slots__ = ("front",)

    def __init__(
        self,
        plan: StagePlan,
        ctx: StreamContext,
        upto: type[Stage],
        answering: JudgeInput | None,
        builds: bool = True,
    ) -> None:
        super().__init__(plan, ctx)  # the reference's stages, ready to take over
        self.front = JudgedFront(self, upto, answering, builds)
        """The judge's decoder, kept after a handover (for tests and curiosity)."""
        self.decoder, self.route = self.front, self.front.tail

    @property
    def judging(self) -> bool:
        """Whether the judge still reads the stream (no handover yet)."""
        return self.decoder is self.front


class JudgedFront(Decoder):
    """The decoder of a stream in deliver mode: each read to the native judge, the events it
    passed built from its decoding; where it is unsure, the reference takes over."""

    def __init__(
        self, session: Session, upto: type[Stage], answering: JudgeInput | None, builds: bool
    ) -> None:
        super().__init__(session.context)
        self._session = session
        self._parse = session.decoder
        self._route = route = session.route
        self._upto = upto
        """The last stage the judge stands in for: lint, or compat alone
        (``judging.stands_in``)."""
        stages = route.stages
        cut = next(at for at, stage in enumerate(stages) if type(stage) is upto) + 1
        front, tail = stages[:cut], stages[cut:]
        declared = upto is LAST_JUDGED and session.context.options.capabilities is not None
        if declared:
            reconcile = next(stage for stage in front if type(stage) is Reconcile)
            front.remove(reconcile)
            tail.insert(0, reconcile)
        self._front = front
        """Parse's stages up to ``upto`` but a declaration's reconcile: what the judge stands
        in for."""
        self._builds = builds
        """Whether the judge builds the events it passes. If not (the verdict alone is
        wanted, :func:`open_session`), it builds only those a declaration's reconcile reads,
        and reconcile alone runs on them."""
        self._only = EVIDENCE_TYPES if declared and not builds else None
        """The types of the events a judge that builds no event builds all the same: those
        reconcile reads, where there is a declaration."""
        seen = tail if builds else tail[:1] if declared else []
        self._unseen = tail[len(seen) :]
        """The stages after ``upto`` a judge that builds no event hands nothing to (metadata,
        dispatch): at a handover, the reads it passed go through them too."""
        self.tail = Route(seen, route.built_in, route.run_type)
        """What runs on the events the judge passes: the stages after ``upto`` (reconcile
        first when the judge stands in up to lint and there is a declaration to hold the
        stream to), the same stage objects the reference's route holds; reconcile alone, or
        nothing, where the judge builds no event."""
        self.judge: Judge | None = None
        self.held: list[bytes] = []
        """The reads fed so far, for the reference to take over from."""
        self.held_bytes = 0
        self._answering = answering
        """The run input the stream answers, as the judge takes it."""
        self._run: RunRecord | None = None

    def feed(self, chunk: bytes) -> Batch:
        ctx = self.ctx
        if self.held_bytes + len(chunk) > ctx.limits.max_held_bytes:
            return self._hand_over(chunk)  # while sure: holding more would cost memory
        self.held.append(chunk)
        self.held_bytes += len(chunk)
        ctx.bytes_read += len(chunk)
        judge = self.judge
        if judge is not None:
            events = judge.feed(chunk)
        else:
            head = b"".join(self.held)
            framing = judged_framing(head, ctx.options.framing)
            if framing == "":
                return empty_batch()  # a byte order mark may still be arriving
            if framing is None:  # a JSON array document, or a blank first: not the judge's
                return self._hand_over(self._unhold())
            ctx.transport = ctx.transport or framing  # as parse names it
            self.judge = judge = new_judge(
                framing,
                ctx.limits,
                delivers=self._builds,
                input=self._answering,
                only=self._only,
                upto=self._upto,
            )
            events = judge.feed(head.removeprefix(BOM))
        if events is None and judge.unsure is not None:
            return self._hand_over(self._unhold())
        if judge.noted:
            self._run = record_runs(ctx, judge.take_runs(), self._run)
        if events is None:  # no frame judged, or the judge builds none
            ctx.counters.read = judge.read  # as parse counts them: the idle window reads it
            return empty_batch()
        return self._batch(judge, events)

    def finish(self) -> Batch:
        judge = self.judge
        if judge is None or not judge.finish():
            self._hand_over(None)
            return self._parse.finish()
        if judge.noted:
            self._run = record_runs(self.ctx, judge.take_runs(), self._run)
        events = judge.take_ended()  # a JSON line the stream ends without a newline
        batch = empty_batch() if events is None else self._batch(judge, events)
        if not self._builds:  # every event read is one the pipeline would have delivered;
            counters = self.ctx.counters  # the session adds this batch's as it delivers it
            counters.read, counters.delivered = judge.read, judge.read - len(batch.events)
        return batch

    def _batch(self, judge: Judge, events: list[Event]) -> Batch:
        """The events ``judge`` passed and built, each one frame. A read of several handed on
        to metadata says which ones it must read (``Batch.marked``); a live read of one event
        does not ask: metadata's test of one event costs less than the asking. A judge that
        builds only reconcile's events says where each stood among those it passed."""
        counters = self.ctx.counters
        start = counters.read
        if not self._builds:
            at = judge.take_marked()
            counters.read = judge.read
            return Batch(events, [start + position for position in at], objects=True)
        counters.read = end = start + len(events)
        if end == start + 1:  # a live read: its one type read here, not by ``Batch.types``
            return Batch(events, [start], [events[0]["type"]], objects=True)
        indices = list(range(start, end))
        if self._upto is not LAST_JUDGED:  # enforce and the stages after it remake the batch
            return Batch(events, indices, objects=True)
        return Batch(events, indices, objects=True, marked=judge.take_marked())

    def _unhold(self) -> bytes:
        """The last read, which the judge did not pass: the reference's to read."""
        last = self.held.pop()
        self.held_bytes -= len(last)
        return last

    def _hand_over(self, chunk: bytes | None) -> Batch:
        """The reference takes over: the reads held go through parse and the stages the
        judge stood in for, their events dropped — the route's stages have seen them — so
        that every stage holds what it would have held; then the session's decoder and route
        are the reference's, and ``chunk`` its first read. Where the judge built no event
        (the verdict alone), the stages after it that saw none (metadata, dispatch) are fed
        them too, and they count as delivered, as the session counts what it delivers."""
        ctx = self.ctx
        ctx.counters.read = 0  # what the judge counted, the reference counts again
        ctx.bytes_read = 0
        if self._upto is LAST_JUDGED:  # else verify, in the route, recorded them as itself
            ctx.runs.clear()
            ctx.runs_unlisted.clear()
        if not self._builds:  # the session counted the events reconcile saw as delivered
            ctx.counters.delivered = 0
        front, parse = StageRun(self._front + self._unseen), self._parse
        held, self.held, self.held_bytes = self.held, [], 0
        session = self._session
        try:
            for read in held:
                batch = parse.feed(read)
                if batch.events:
                    passed = front.run(batch)
                    if not self._builds and passed.events:  # delivered now: none was
                        ctx.counters.delivered += len(passed.events)
                        session.last_delivered = passed.indices[-1]
        except Exception as error:
            raise RuntimeError(
                "internal error: the reference rejected frames the native judge passed "
                "(a disagreement between the two: set AGUI_PIPELINE_PURE=1, and report it)"
            ) from error
        session.decoder, session.route = parse, self._route
        return empty_batch() if chunk is None else parse.feed(chunk)
