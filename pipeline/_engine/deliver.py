"""Deliver mode: the native judge reads a stream whose events go to application code.

The pipeline's cost is mostly the Python objects it builds per event and the stages that walk
them. While the native judge (``native/src/judge.rs``) is sure of a stream — it frames,
decodes and follows each read, and no stage from parse to lint would say anything of it or
change an event — the events those stages would pass are exactly the frames as sent. So each
such read's frames are built once, by orjson from the payloads the judge kept, and only
metadata and dispatch (the Conversation, the handlers, the sinks) run in Python on them.

The judge may become unsure at any read (a chunk, a retired shape, a warning to give, a
fault). Then the reference takes over where it stands: the reads the judge passed are fed
again through parse and the stages up to lint, whose output is dropped (metadata and dispatch
have seen those events already), so that every stage holds what it would have held; and that
read, and every read after, takes the session's own path. A handover costs the reads held
on top of what the reference would have cost, once. What the judge passed is the reference's
by construction, and ``tests/test_deliver.py`` holds the two to the same events, verdicts,
diagnostics and Conversation.

The reads are held for that, up to ``Limits.max_held_bytes``: the read that would pass it is
the reference's, handed over while the judge is still sure, so the memory a stream holds is
bounded and its cost per event never grows with its length.

Deliver mode runs where judge mode would (``judge.judges``: the default decoder and stages,
no declaration, no peer version, SSE or JSON lines), with any handlers or sinks, and with a
run input the judge can take (:func:`input_for_judge`: what ``HttpAgent`` and the conformance
runner send); the session (``open_session``) chooses it per stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
from agui_pipeline import _cores
from agui_pipeline._engine.chain import Route, StageRun
from agui_pipeline._engine.faults import Ended, through
from agui_pipeline._engine.judging import JudgeInput, input_for_judge, new_judge, record_runs
from agui_pipeline._engine.order import default_decoder, default_stages
from agui_pipeline._engine.result import Outcome, Verdict
from agui_pipeline._engine.session import Session
from agui_pipeline._proto import TRANSPORT as PROTO_TRANSPORT
from agui_pipeline.batch import Batch, empty_batch
from agui_pipeline.errors import UsageError
from agui_pipeline.stage import RunRecord, StreamContext
from agui_pipeline.stages.parse import BOM, framing_of

if TYPE_CHECKING:
    from agui_pipeline._engine.core import StagePlan
    from agui_pipeline._native import Judge


def open_session(plan: StagePlan, ctx: StreamContext) -> Session:
    """The session for one stream: in deliver mode where the judge can stand in for the
    stages up to lint, else the reference's."""
    if _cores.native is not None and delivers(plan, ctx):
        if ctx.run_input is None:
            return JudgedSession(plan, ctx, None)
        answering = input_for_judge(ctx.run_input)
        if answering is not None:
            return JudgedSession(plan, ctx, answering)
    return Session(plan, ctx)


def delivers(plan: StagePlan, ctx: StreamContext) -> bool:
    """Whether deliver mode can run ``plan`` on this stream (see the module's docstring): a
    run input besides, when the judge can take it (:func:`input_for_judge`)."""
    options = ctx.options
    return (
        plan.decoder is default_decoder()
        and list(plan.stage_factories) == [stage for _, stage in default_stages()]
        and options.framing in (None, "sse", "jsonl")
        and options.capabilities is None
        and options.peer_max_protocol_version is None
        and ctx.transport != PROTO_TRANSPORT
    )


class JudgedSession(Session):
    """A :class:`Session` whose reads the native judge reads while it is sure of them."""

    __slots__ = (
        "_answering",
        "_front",
        "_held",
        "_held_bytes",
        "_judge",
        "_judging",
        "_run",
        "_tail",
    )

    def __init__(self, plan: StagePlan, ctx: StreamContext, answering: JudgeInput | None) -> None:
        super().__init__(plan, ctx)  # the reference's stages, ready to take over
        stages = self.route.stages
        *front, metadata, dispatch = stages
        self._front = front
        """Parse's stages up to lint: what the judge stands in for."""
        self._tail = Route([metadata, dispatch], self.route.built_in, self.route.run_type)
        """Metadata and dispatch, run on what the judge passes (the same stage objects the
        session's route ends with)."""
        self._judging = True
        self._judge: Judge | None = None
        self._held: list[bytes] = []
        """The reads fed so far, for the reference to take over from."""
        self._held_bytes = 0
        self._run: RunRecord | None = None
        self._answering = answering
        """The run input the stream answers, as the judge takes it."""

    async def feed(self, chunk: bytes | None) -> Batch:
        if not self._judging:
            return await super().feed(chunk)
        if self.verdict is not None:
            raise UsageError(f"the stream has ended ({self.verdict.outcome}): it reads no more")
        if chunk is None:
            return await self._end_judged()
        ctx = self.context
        if self._held_bytes + len(chunk) > ctx.limits.max_held_bytes:
            self._hand_over()  # while sure: past the limit, holding would cost memory
            return await super().feed(chunk)
        self._held.append(chunk)
        self._held_bytes += len(chunk)
        ctx.bytes_read += len(chunk)
        judge = self._judge
        if judge is not None:
            payloads = judge.feed(chunk)
        else:
            judge = self._start()
            if judge is None:
                # A byte order mark may still be arriving, or the stream is the reference's.
                return empty_batch() if self._judging else await self._take_over()
            payloads = judge.feed(b"".join(self._held).removeprefix(BOM))
        if judge.unsure is not None:
            return await self._take_over()
        if judge.noted:
            self._run = record_runs(ctx, judge.take_runs(), self._run)
        if payloads is None:
            return empty_batch()
        return await self._carry(self._batch(payloads), self._tail)

    def _start(self) -> Judge | None:
        """The judge, once the reads held tell the framing (parse's ``_start``: a byte order
        mark off, the framing from the first byte), to be fed them from there; ``None``: the
        reference's to read (a stream that opens with a blank or a JSON array), or not yet
        known."""
        head = b"".join(self._held)
        if len(head) < len(BOM) and BOM.startswith(head):
            return None  # a byte order mark may be arriving
        ctx = self.context
        framing = ctx.options.framing or framing_of(head.removeprefix(BOM)[:1])
        if framing not in ("sse", "jsonl"):
            self._judging = False  # the reference's from here; nothing was delivered
            return None
        ctx.transport = ctx.transport or framing  # as parse names it
        self._judge = judge = new_judge(framing, ctx.limits, delivers=True, input=self._answering)
        return judge

    def _batch(self, payloads: bytes) -> Batch:
        """The events the judge passed, built from their payloads; each is one frame."""
        events = orjson.loads(payloads)
        counters = self.context.counters
        start = counters.read
        counters.read = end = start + len(events)
        indices = [start] if end == start + 1 else list(range(start, end))
        return Batch(events, indices, objects=True)

    async def _end_judged(self) -> Batch:
        """The end of a stream the judge has read: clean to its end, it completes; else the
        reference takes over and ends it."""
        judge = self._judge
        if judge is None or not judge.finish():
            self._hand_over()
            return await self._end()
        if judge.noted:
            self._run = record_runs(self.context, judge.take_runs(), self._run)
        payloads = judge.take_payloads()  # a JSON line the stream ends without a newline
        batch = empty_batch()
        if payloads is not None:
            batch = await self._carry(self._batch(payloads), self._tail)
            if self.verdict is not None:
                return batch  # a handler failed on it
        tail = self._tail
        try:
            flushed = await through(tail.stages, empty_batch(), tail.built_in, flush=True)
        except Ended as ended:
            return await self._fault(ended.fault, ended.delivered, [])
        self.verdict = Verdict(Outcome.COMPLETED)
        if not flushed.events:
            return batch
        self.last_delivered = flushed.indices[-1]
        self.context.counters.delivered += len(flushed.events)
        return batch + flushed

    async def _take_over(self) -> Batch:
        """The judge is unsure of the last read, or never judged: the reference takes over
        before it, and reads it."""
        last = self._held.pop()
        self._held_bytes -= len(last)
        self._hand_over()
        return await super().feed(last)

    def _hand_over(self) -> None:
        """The reference takes over: the reads held go through parse and the stages up to
        lint as they went through the judge, their events dropped — metadata and dispatch
        have seen them — so that every stage holds what it would have held."""
        self._judging = False
        self._judge = None
        ctx = self.context
        ctx.counters.read = 0  # what the judge counted, the reference counts again
        ctx.bytes_read = 0
        ctx.runs.clear()
        ctx.runs_unlisted.clear()
        front = StageRun(self._front)
        decoder = self.decoder
        held, self._held, self._held_bytes = self._held, [], 0
        try:
            for read in held:
                batch = decoder.feed(read)
                if batch.events:
                    front.run(batch)
        except Exception as error:
            raise RuntimeError(
                "internal error: the reference rejected frames the native judge passed "
                "(a disagreement between the two: set AGUI_PIPELINE_PURE=1, and report it)"
            ) from error
