"""verify — the sequencing rules of the protocol, checked as each event arrives.

Verification runs after chunk expansion (``/spec/1.1/basic/processing``): what
it checks — that items open before they continue and close after — only
exists once a chunk has become the events it stands for. Every event reaching
it is schema-valid (enforce saw it first), so this stage judges order only.
It rejects only what a spec sentence makes the consumer's verdict (each code's
``Ground`` in the catalog quotes it); what the spec asks of the producer alone
is reported and the stream goes on — here where only verify tracks what the
rule needs (subagent announcements, a call's owner against its message's),
otherwise by ``lint``: identifiers reused, tool results out of place, outcomes
that disagree with the run.
(A pipeline without enforce may hand it an event it cannot read: that is
rejected as ``verify.unreadable-event`` only when enforce would not have
delivered the event, ``enforce.would_deliver``; an exception on any other
event is verify's own bug and propagates as itself.)

- runs (``/spec/1.1/events/lifecycle``, Error Handling): the stream opens with
  ``RUN_STARTED`` or ``RUN_ERROR``; no run starts inside another; after
  ``RUN_FINISHED`` only a new ``RUN_STARTED`` or a late ``RUN_ERROR`` (which
  fails the run), after ``RUN_ERROR`` only ``RUN_STARTED``; ``RUN_FINISHED``
  finds everything the run opened closed, while ``RUN_ERROR`` abandons it;
- steps, matched by name per owner (``/spec/1.1/events/subagents``, Ownership);
- the streamed items — text messages, tool calls, reasoning messages — and
  reasoning spans (``/spec/1.1/basic/patterns/streaming``, the family pages):
  opened while closed, continued and closed only while open;
- subagents (``/spec/1.1/events/subagents``): a continuation whose tag
  disagrees with its item's owner is rejected (an untagged one continues the
  owner); an invocation is closed only while active (the conformance corpus),
  and before the run finishes. Announcing one after its events, twice, under a
  parent not active, or using it after it ended is reported
  (``verify.subagent-announcement``), as is a tool call tagged otherwise than
  the message that carries it (``verify.call-attribution``).

A stream that ends while a run is active — or before any event — is a
truncated run (``/spec/1.1/basic/transports``, Truncation): :meth:`finish`
raises :class:`~agui_pipeline.errors.StreamTruncated`; nothing is synthesized.

State is kept in dicts keyed by id: what is open in the current run (dropped
when the run closes, and at most ``Limits.max_open_items`` at once), plus the
ids the thread must not reuse — one entry per message, tool call and run,
never per event. Verify is where a stream's messages and tool calls are first
recorded, so it holds their number to ``Limits.max_items``: that bounds its own
records, lint's and the Conversation's together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from enum import Enum
from typing import Any, ClassVar

from agui_pipeline._json import MISSING
from agui_pipeline.batch import Batch, Event, empty_batch
from agui_pipeline.catalog import (
    LIMIT_OPEN_ITEMS,
    VERIFY_AFTER_CLOSE,
    VERIFY_CALL_ATTRIBUTION,
    VERIFY_CANCELLED_RESULT,
    VERIFY_FIRST_EVENT,
    VERIFY_NESTED_RUN,
    VERIFY_OPEN_AT_FINISH,
    VERIFY_REASONING,
    VERIFY_STEP,
    VERIFY_TEXT_MESSAGE,
    VERIFY_TOOL_CALL,
    VERIFY_TRUNCATED,
    VERIFY_UNEXPANDED_CHUNK,
    VERIFY_UNREADABLE,
)
from agui_pipeline.errors import StreamRejected, StreamTruncated
from agui_pipeline.stage import RunRecord, RunStatus, Stage, StreamContext, reject_after
from agui_pipeline.stages._checks import would_deliver
from agui_pipeline.stages._verify_subagents import Subagents
from agui_pipeline.stages._verify_texts import (
    already_open,
    bad_continuation,
    describe,
    join,
    mismatch,
    owner_name,
    step_label,
    too_many_items,
)

Owner = str | None
"""Who produced an item: a ``subagentRunId``, or ``None`` for the parent agent."""


class Phase(Enum):
    """Where the stream stands with respect to its runs."""

    BEFORE_FIRST = "before the first run"
    ACTIVE = "a run is active"
    FINISHED = "the last run finished"
    ERRORED = "the last run ended with RUN_ERROR"


_BEFORE_FIRST, _ACTIVE, _FINISHED, _ERRORED = Phase

_CARRIER = "carrier"
"""The kind recorded for a message known only as the parent a tool call named."""
_SUBAGENT_EVENTS = frozenset({"SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"})
_UNSETTLED: Any = object()
"""The owner of a message only untagged tool calls have named so far: the message decides."""

Handler = Callable[[Event, int, Owner], None]


def _counting(batch: Batch) -> tuple[Iterator[tuple[Event, Any]], Callable[[], int]]:
    """Each event of ``batch`` with its type, and a function saying how many are yet to come.

    What it buys: verify iterates the events alone and works out the position of the
    current one (``len(events) - 1 - left()``) only when it needs its frame index —
    the deltas to an open item, most events, need none — instead of pairing every
    event with its index: 138 instructions an event fewer than ``enumerate``
    (``python -m benchmarks.instructions --upto verify``). A list iterator's
    ``__length_hint__`` is exact: what it has not yet yielded. And the type comes
    from :attr:`Batch.types`, read once per batch, not from a subscript of each event:
    140 instructions an event fewer (verify alone on the workload, 2,057 → 1,917). An
    event without a ``type`` has ``None`` there, and the loop then reads it to raise.
    """
    unread = iter(batch.events)
    return zip(unread, batch.types, strict=True), unread.__length_hint__  # type: ignore[attr-defined]


class Verify(Stage):
    """Rejects any event that breaks the protocol's sequencing rules; passes the rest."""

    name: ClassVar[str] = "verify"

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)
        self._phase = _BEFORE_FIRST
        self._run: RunRecord | None = None
        self._run_no = 0
        """Counts runs; ownership recorded under an older number has lapsed (it is per run)."""
        self._messages: dict[str, tuple[str, Owner, int]] = {}
        """messageId → (its role, or ``_CARRIER`` for a message only a tool call has named;
        owner; run the owner was recorded in)."""
        self._calls: dict[str, tuple[Owner, int]] = {}
        """toolCallId → (owner, run) for every call opened on the stream or found in history."""
        self._items_left = ctx.limits.max_items
        """Messages and tool calls the stream may still introduce (``_new_item``)."""
        self._end_index = 0
        # Run-scoped tracking: emptied, never replaced, when a run closes (process holds
        # the open-item dicts for a whole batch).
        self._open_text: dict[str, Owner] = {}
        self._open_calls: dict[str, Owner] = {}
        self._open_reasoning: dict[str, Owner] = {}
        self._open_spans: dict[str, Owner] = {}
        self._steps: set[tuple[Owner, str]] = set()
        self._subagents = Subagents(ctx)
        self._awaiting_parent: dict[str, list[str]] = {}
        """A message untagged tool calls named before it arrived → those calls (this run)."""
        self._continuations: dict[str, tuple[dict[str, Owner], str]] = {
            "TEXT_MESSAGE_CONTENT": (self._open_text, "messageId"),
            "REASONING_MESSAGE_CONTENT": (self._open_reasoning, "messageId"),
            "TOOL_CALL_ARGS": (self._open_calls, "toolCallId"),
        }
        """The most common events by far: where their item is open, and the field naming it."""
        self._handlers: dict[str, Handler] = {
            "RUN_STARTED": self._nested_run,
            "RUN_FINISHED": self._run_finished,
            "RUN_ERROR": self._run_error,
            "STEP_STARTED": self._step_started,
            "STEP_FINISHED": self._step_finished,
            "TEXT_MESSAGE_START": self._text_start,
            "TEXT_MESSAGE_CONTENT": self._text_continue,
            "TEXT_MESSAGE_END": self._text_end,
            "TOOL_CALL_START": self._call_start,
            "TOOL_CALL_ARGS": self._call_continue,
            "TOOL_CALL_END": self._call_end,
            "TOOL_CALL_RESULT": self._call_result,
            "REASONING_START": self._span_start,
            "REASONING_END": self._span_end,
            "REASONING_MESSAGE_START": self._reasoning_start,
            "REASONING_MESSAGE_CONTENT": self._reasoning_continue,
            "REASONING_MESSAGE_END": self._reasoning_end,
            "SUBAGENT_STARTED": self._subagent_started,
            "SUBAGENT_FINISHED": self._subagent_ended,
            "SUBAGENT_ERROR": self._subagent_ended,
            "ACTIVITY_SNAPSHOT": self._activity_snapshot,
            "ACTIVITY_DELTA": self._activity_delta,
            "MESSAGES_SNAPSHOT": self._messages_snapshot,
            "TEXT_MESSAGE_CHUNK": self._unexpanded,
            "TOOL_CALL_CHUNK": self._unexpanded,
            "REASONING_MESSAGE_CHUNK": self._unexpanded,
        }
        if ctx.run_input is not None:
            self._learn_history(ctx.run_input, None)

    def _close_run_state(self) -> None:
        """Nothing crosses a run boundary: a new run starts with nothing open (lifecycle)."""
        for tracked in (
            self._open_text,
            self._open_calls,
            self._open_reasoning,
            self._open_spans,
            self._steps,
            self._subagents,
            self._awaiting_parent,
        ):
            tracked.clear()

    def _new_item(self, index: int, pointer: str) -> None:
        """The stream introduces one more message or tool call (an id not recorded yet):
        it must fit under ``max_items``, so what every stage remembers per item is
        bounded however few of them are open at once. The one place the budget is spent."""
        self._items_left -= 1
        if self._items_left < 0:
            raise too_many_items(self.ctx, index, pointer)

    def _make_room(self, index: int) -> None:
        """One more open item must fit under ``max_open_items``: a producer that opens and
        never closes cannot grow this stage's state without bound."""
        limit = self.ctx.limits.max_open_items
        open_now = (
            len(self._open_text)
            + len(self._open_calls)
            + len(self._open_reasoning)
            + len(self._open_spans)
            + len(self._steps)
            + self._subagents.running
        )
        if open_now >= limit:
            raise self.ctx.reject(
                LIMIT_OPEN_ITEMS(limit=limit, open_now=open_now),
                event_index=index,
                pointer="",
            )

    # -- the stage ----------------------------------------------------------------

    async def process(self, batch: Batch) -> Batch:
        try:
            self._check(batch)
        except StreamRejected as rejection:
            # Every event passes verify unchanged: what it kept is the batch before the fault.
            raise reject_after(batch.before(rejection.event_index), rejection) from None
        return batch

    def step(self, event: Event, kind: Any, index: int) -> Event:
        """One event of the engine's fused pass (``_engine/chain.py``): judged as
        :meth:`process` judges a batch of this event alone, which keeps nothing of it on a
        rejection. The commonest event, a delta to an open item, is judged inline."""
        try:  # an untagged delta to an open item: its id is among the open ones
            delta = self._continuations.get(kind)
            if delta is not None and event[delta[1]] in delta[0] and "subagentRunId" not in event:
                self._end_index = index + 1
                return event
        except (KeyError, TypeError):  # an unhashable type, or an id that cannot be read
            pass
        try:
            self._judge(event, kind, index)
        except StreamRejected as rejection:
            raise reject_after(empty_batch(), rejection) from None
        self._end_index = index + 1
        return event

    def _check(self, batch: Batch) -> None:
        """Judge every event of ``batch`` in turn; raise at the first that breaks a rule."""
        events, indices = batch.events, batch.indices
        if len(indices) != len(events):
            raise self.ctx.reject(
                VERIFY_UNREADABLE("batch", events=len(events), indices=len(indices)),
                event_index=self._end_index,
                pointer="",
            )
        open_text, open_reasoning, open_calls = (
            self._open_text,
            self._open_reasoning,
            self._open_calls,
        )
        typed, left = _counting(batch)
        last = len(events) - 1  # the current event is events[last - left()]
        for event, kind in typed:
            # The common case first, inline: an untagged continuation of an open item
            # (nothing is open between runs, so this also finds the run active).
            try:
                if (
                    (kind == "TEXT_MESSAGE_CONTENT" and event["messageId"] in open_text)
                    or (
                        kind == "REASONING_MESSAGE_CONTENT" and event["messageId"] in open_reasoning
                    )
                    or (kind == "TOOL_CALL_ARGS" and event["toolCallId"] in open_calls)
                ) and "subagentRunId" not in event:
                    continue
            except (KeyError, TypeError):  # an id that cannot be read: judged below, in turn
                pass
            self._judge(event, kind, indices[last - left()])
        if indices:
            self._end_index = indices[-1] + 1

    def _judge(self, event: Event, kind: Any, index: int) -> None:
        """Judge one event that is not an untagged delta to an open item."""
        try:
            if kind is None:  # no type, or not an object: raise what reading it raises
                kind = event["type"]
            if self._phase is not _ACTIVE:
                self._between_runs(event, kind, index)
                return
            tag = None
            if "subagentRunId" in event:  # rare: an `in` test is cheaper than a get call
                tag = event["subagentRunId"]
                if tag is not None and kind not in _SUBAGENT_EVENTS:
                    self._subagents.attributed(tag, index)
            continuation = self._continuations.get(kind)
            if continuation is not None:  # tagged, or its item is not open
                continued, field = continuation
                owner = continued.get(event[field], MISSING)
                if owner is MISSING or (tag is not None and tag != owner):
                    self._handlers[kind](event, index, tag)  # raises, saying what is wrong
                return
            handler = self._handlers.get(kind)
            if handler is not None:
                handler(event, index, tag)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            # What reading a malformed event raises. Only a pipeline without enforce lets
            # one through, and then it is the producer's fault; otherwise it is ours.
            if would_deliver(event):
                raise
            raise self.ctx.reject(
                VERIFY_UNREADABLE(error_type=type(exc).__name__, error=exc),
                event_index=index,
                pointer="",
            ) from None

    async def finish(self) -> Batch:
        """A run still open here has no outcome: the stream is truncated, never completed."""
        if self._phase is _ACTIVE:
            assert self._run is not None
            self._run.status = RunStatus.TRUNCATED
            still_open = describe(self._still_open())
            raise StreamTruncated(
                VERIFY_TRUNCATED(
                    "still-open" if still_open else "",
                    run_id=self._run.run_id,
                    still_open=still_open,
                ),
                event_index=self._end_index,
            )
        if self._phase is _BEFORE_FIRST:
            raise StreamTruncated(VERIFY_TRUNCATED("no-run"), event_index=self._end_index)
        return empty_batch()

    # -- runs (/spec/1.1/events/lifecycle) -------------------------------------

    def _between_runs(self, event: Event, kind: str, index: int) -> None:
        """No run is active: only RUN_STARTED, or RUN_ERROR where the lifecycle admits it."""
        if kind == "RUN_STARTED":
            self._run_started(event, index)
        elif kind == "RUN_ERROR" and self._phase is not _ERRORED:
            if self._phase is _BEFORE_FIRST:
                # A run that failed before it began: nothing to name it by.
                self._run = RunRecord(None, None)
                self.ctx.record_run(self._run)
            self._fail_run(event, index)
        elif self._phase is _BEFORE_FIRST:
            raise self.ctx.reject(
                VERIFY_FIRST_EVENT(kind=kind),
                event_index=index,
                pointer="/type",
            )
        elif self._phase is _FINISHED:
            raise self.ctx.reject(
                VERIFY_AFTER_CLOSE(kind=kind),
                event_index=index,
                pointer="/type",
            )
        else:
            raise self.ctx.reject(
                VERIFY_AFTER_CLOSE("after-error", kind=kind),
                event_index=index,
                pointer="/type",
            )

    def _run_started(self, event: Event, index: int) -> None:
        # A runId reused, another thread, an echo naming another run: the producer's to fix,
        # reported by lint (basic/index, run-input bind the producer); the run goes on.
        echoed = event.get("input")
        if echoed is not None:
            self._learn_history(echoed, index)
        self._run_no += 1
        self._run = RunRecord(event["runId"], event["threadId"])
        self.ctx.record_run(self._run)
        self._phase = _ACTIVE

    def _nested_run(self, event: Event, index: int, tag: Owner) -> None:
        assert self._run is not None
        raise self.ctx.reject(
            VERIFY_NESTED_RUN(run_id=self._run.run_id, run_id2=event["runId"]),
            event_index=index,
            pointer="",
        )

    def _run_error(self, event: Event, index: int, tag: Owner) -> None:
        # Ends whatever was open along with the run: nothing is expected to close.
        self._fail_run(event, index)

    def _fail_run(self, event: Event, index: int) -> None:
        assert self._run is not None
        if self._phase is _FINISHED and self._run.ended_at is not None:
            self._run.superseded = (self._run.status, self._run.ended_at)  # a late error
        self._run.status = RunStatus.ERROR
        self._run.error = event["message"]
        self._run.ended_at = index
        self._phase = _ERRORED
        self._close_run_state()

    def _run_finished(self, event: Event, index: int, tag: Owner) -> None:
        run = self._run
        assert run is not None
        still_open = self._still_open()
        if still_open:
            active = (f"{label} are still active: {join(shown)}" for label, shown in still_open)
            raise self.ctx.reject(
                VERIFY_OPEN_AT_FINISH(active="; ".join(active)),
                event_index=index,
                pointer="",
            )
        # What the outcome says is the producer's account (lint compares it with the run).
        outcome: dict[str, Any] | None = event.get("outcome")
        kind = "success" if outcome is None else outcome["type"]
        if kind == "interrupt":
            run.status = RunStatus.INTERRUPTED
        elif kind == "cancelled":
            if "result" in event:
                self.ctx.report(
                    VERIFY_CANCELLED_RESULT(run_id=run.run_id),
                    event_index=index,
                    pointer="/result",
                )
            run.status = RunStatus.CANCELLED
        else:
            run.status = RunStatus.FINISHED
        run.outcome = outcome
        run.ended_at = index
        self._phase = _FINISHED
        self._close_run_state()

    def _still_open(self) -> list[tuple[str, list[str]]]:
        """What the run has open, by kind; empty when everything is closed."""
        groups = [
            ("text messages", [repr(item) for item in self._open_text]),
            ("tool calls", [repr(item) for item in self._open_calls]),
            ("reasoning messages", [repr(item) for item in self._open_reasoning]),
            ("reasoning spans", [repr(item) for item in self._open_spans]),
            ("steps", [step_label(owner, name) for owner, name in self._steps]),
            ("subagent invocations", self._subagents.still_running()),
        ]
        return [(label, shown) for label, shown in groups if shown]

    # -- attribution and subagents (/spec/1.1/events/subagents) ------------------

    def _subagent_started(self, event: Event, index: int, tag: Owner) -> None:
        self._subagents.started(event, index, self._make_room)

    def _subagent_ended(self, event: Event, index: int, tag: Owner) -> None:
        self._subagents.ended(event, index)

    # -- steps (/spec/1.1/events/lifecycle, Steps) ----------------------------------

    def _step_started(self, event: Event, index: int, tag: Owner) -> None:
        key = (tag, event["stepName"])
        if key in self._steps:
            raise self.ctx.reject(
                VERIFY_STEP(step=step_label(*key)),
                event_index=index,
                pointer="/stepName",
            )
        self._make_room(index)
        self._steps.add(key)

    def _step_finished(self, event: Event, index: int, tag: Owner) -> None:
        key = (tag, event["stepName"])
        if key not in self._steps:
            others = [owner for owner, name in self._steps if name == key[1]]
            hint = (
                f"; a step of that name is open under {owner_name(others[0])}, and STEP_FINISHED "
                "carries the attribution of the STEP_STARTED it closes"
                if others
                else ""
            )
            raise self.ctx.reject(
                VERIFY_STEP("not-started", step=step_label(*key), hint=hint),
                event_index=index,
                pointer="/stepName",
            )
        self._steps.remove(key)

    # -- messages (/spec/1.1/basic/patterns/streaming and the family pages) -------

    def _open_message(self, event: Event, index: int, tag: Owner, role: str) -> Owner:
        """Record a text or reasoning message being opened (or reopened); its owner.

        A messageId reused for another kind of message is lint's to report: the
        Conversation holds the later message in the earlier one's place."""
        message_id = event["messageId"]
        known = self._messages.get(message_id)
        if known is None:
            self._new_item(index, "/messageId")
            self._messages[message_id] = (role, tag, self._run_no)
            return tag
        kind, owner, run_no = known
        if run_no == self._run_no:
            if owner is _UNSETTLED:  # named by untagged tool calls before it arrived
                self._settle(message_id, tag)
                owner = tag
            elif kind == _CARRIER:  # named by tagged calls: its own opener decides
                if tag != owner:
                    self._call_disagrees(event, message_id, owner, tag, index)
                owner = tag
            # Reopened in the same run: the established owner stands.
            if tag is not None and tag != owner:
                raise mismatch(self.ctx, event["type"], "message", message_id, owner, tag, index)
            tag = owner
        self._messages[message_id] = (role, tag, self._run_no)
        return tag

    def _call_disagrees(
        self, event: Event, message_id: str, call_owner: Owner, owner: Owner, index: int
    ) -> None:
        """A tool call and the message carrying it name two owners (subagents.mdx: a producer
        MUST NOT; no consumer verdict): said, and each keeps its own."""
        self.ctx.report(
            VERIFY_CALL_ATTRIBUTION(
                type=event["type"],
                message_id=message_id,
                owner=owner_name(owner),
                call_owner=owner_name(call_owner),
            ),
            event_index=index,
            pointer="/subagentRunId" if event.get("subagentRunId") else "/messageId",
        )

    def _text_start(self, event: Event, index: int, tag: Owner) -> None:
        message_id = event["messageId"]
        if message_id in self._open_text:
            raise already_open(self.ctx, VERIFY_TEXT_MESSAGE, event, "text message", index)
        self._make_room(index)
        self._open_text[message_id] = self._open_message(
            event, index, tag, event.get("role", "assistant")
        )

    def _text_continue(self, event: Event, index: int, tag: Owner) -> None:
        owner = self._open_text.get(event["messageId"], MISSING)
        if owner is MISSING or (tag is not None and tag != owner):
            raise bad_continuation(
                self.ctx,
                VERIFY_TEXT_MESSAGE,
                self._open_text,
                event,
                "messageId",
                "text message",
                index,
            )

    def _text_end(self, event: Event, index: int, tag: Owner) -> None:
        self._text_continue(event, index, tag)
        del self._open_text[event["messageId"]]

    def _reasoning_start(self, event: Event, index: int, tag: Owner) -> None:
        message_id = event["messageId"]
        if message_id in self._open_reasoning:
            raise already_open(self.ctx, VERIFY_REASONING, event, "reasoning message", index)
        self._make_room(index)
        self._open_reasoning[message_id] = self._open_message(event, index, tag, "reasoning")

    def _reasoning_continue(self, event: Event, index: int, tag: Owner) -> None:
        owner = self._open_reasoning.get(event["messageId"], MISSING)
        if owner is MISSING or (tag is not None and tag != owner):
            raise bad_continuation(
                self.ctx,
                VERIFY_REASONING,
                self._open_reasoning,
                event,
                "messageId",
                "reasoning message",
                index,
            )

    def _reasoning_end(self, event: Event, index: int, tag: Owner) -> None:
        self._reasoning_continue(event, index, tag)
        del self._open_reasoning[event["messageId"]]

    def _span_start(self, event: Event, index: int, tag: Owner) -> None:
        # A span namespaces nothing: it is checked against open spans only (reasoning).
        if event["messageId"] in self._open_spans:
            raise already_open(self.ctx, VERIFY_REASONING, event, "reasoning span", index)
        self._make_room(index)
        self._open_spans[event["messageId"]] = tag

    def _span_end(self, event: Event, index: int, tag: Owner) -> None:
        owner = self._open_spans.get(event["messageId"], MISSING)
        if owner is MISSING or (tag is not None and tag != owner):
            raise bad_continuation(
                self.ctx,
                VERIFY_REASONING,
                self._open_spans,
                event,
                "messageId",
                "reasoning span",
                index,
            )
        del self._open_spans[event["messageId"]]

    # -- tool calls (/spec/1.1/events/tool-calls) -----------------------------------

    def _call_start(self, event: Event, index: int, tag: Owner) -> None:
        call_id = event["toolCallId"]
        if call_id in self._open_calls:
            raise already_open(self.ctx, VERIFY_TOOL_CALL, event, "tool call", index)
        owner, run_no = tag, self._run_no
        known = self._calls.get(call_id)
        if known is None:
            self._new_item(index, "/toolCallId")
            established, opened_in = None, -1
        else:
            established, opened_in = known
        reopened = opened_in == run_no
        if reopened:  # the owner established in this run stands
            if tag is not None and tag != established:
                raise mismatch(
                    self.ctx, "TOOL_CALL_START", "tool call", call_id, established, tag, index
                )
            owner = established
        parent = event.get("parentMessageId")
        if parent is not None:
            inherits = tag is None and not reopened
            owner = self._attach_to_parent(event, parent, owner, inherits, index)
        self._calls[call_id] = (owner, run_no)
        self._make_room(index)
        self._open_calls[call_id] = owner

    def _attach_to_parent(
        self, event: Event, parent: str, owner: Owner, inherits: bool, index: int
    ) -> Owner:
        """A call belongs to the message that holds it, and shares its owner (subagents)."""
        known = self._messages.get(parent)
        if known is None:
            if inherits:
                # Its message has not arrived: the call takes the message's owner when it
                # does, so both orders are judged alike (subagents: "a tool call inherits
                # the attribution of the message that held it").
                self._awaiting_parent.setdefault(parent, []).append(event["toolCallId"])
                owner = _UNSETTLED
            self._new_item(index, "/parentMessageId")
            self._messages[parent] = (_CARRIER, owner, self._run_no)
            return None if owner is _UNSETTLED else owner
        _, parent_owner, run_no = known
        if run_no != self._run_no:
            return owner  # ownership tracking does not cross runs
        if inherits:
            if parent_owner is _UNSETTLED:
                self._awaiting_parent[parent].append(event["toolCallId"])
                return None
            return parent_owner
        if parent_owner is _UNSETTLED:
            self._settle(parent, owner)
        elif owner != parent_owner:
            self._call_disagrees(event, parent, owner, parent_owner, index)
        return owner

    def _settle(self, message_id: str, owner: Owner) -> None:
        """The message untagged calls named has arrived: they, and it, take its owner."""
        role, _, run_no = self._messages[message_id]
        self._messages[message_id] = (role, owner, run_no)
        for call_id in self._awaiting_parent.pop(message_id, ()):
            self._calls[call_id] = (owner, run_no)
            if call_id in self._open_calls:
                self._open_calls[call_id] = owner

    def _call_continue(self, event: Event, index: int, tag: Owner) -> None:
        owner = self._open_calls.get(event["toolCallId"], MISSING)
        if owner is MISSING or (tag is not None and tag != owner):
            raise bad_continuation(
                self.ctx,
                VERIFY_TOOL_CALL,
                self._open_calls,
                event,
                "toolCallId",
                "tool call",
                index,
            )

    def _call_end(self, event: Event, index: int, tag: Owner) -> None:
        self._call_continue(event, index, tag)
        del self._open_calls[event["toolCallId"]]

    def _call_result(self, event: Event, index: int, tag: Owner) -> None:
        # Whether the call it answers is closed, known, or the application's is lint's to
        # report (tool-calls.mdx makes none of it fatal): the result is a message in its own
        # right whatever it answers, and the call stays open until its TOOL_CALL_END.
        message_id = event["messageId"]
        if message_id not in self._messages:
            self._new_item(index, "/messageId")
        self._messages[message_id] = ("tool", tag, self._run_no)

    # -- activity and snapshots ------------------------------------------------------

    def _activity_snapshot(self, event: Event, index: int, tag: Owner) -> None:
        message_id = event["messageId"]
        known = self._messages.get(message_id)
        if known is None:
            self._new_item(index, "/messageId")
        if known is None or known[0] != "activity" or event.get("replace", True) is not False:
            # A replacing snapshot re-mints the activity, its owner included (activity page).
            self._messages[message_id] = ("activity", tag, self._run_no)

    def _activity_delta(self, event: Event, index: int, tag: Owner) -> None:
        # A delta for a missing or non-activity message is the Conversation's to skip and warn.
        known = self._messages.get(event["messageId"])
        if (
            tag is not None
            and known is not None
            and known[0] == "activity"
            and known[2] == self._run_no
            and known[1] != tag
        ):
            raise mismatch(
                self.ctx, "ACTIVITY_DELTA", "activity", event["messageId"], known[1], tag, index
            )

    def _messages_snapshot(self, event: Event, index: int, tag: Owner) -> None:
        self._learn_messages(event["messages"], self._run_no, index, "/messages")

    def _learn_history(self, run_input: dict[str, Any], index: int | None) -> None:
        """The conversation before the stream, as the run input says it (the ids it holds; no
        ownership, which is per run). ``index``: the RUN_STARTED that echoed it, whose new
        ids count as the stream's; ``None`` for the run input the application gave."""
        messages = run_input.get("messages") if isinstance(run_input, dict) else None
        if isinstance(messages, list):
            self._learn_messages(messages, -1, index, "/input/messages")

    def _learn_messages(
        self, messages: Iterable[Any], run_no: int, index: int | None, pointer: str
    ) -> None:
        """Messages restated whole: each id's kind and owner as the restatement gives them.
        Restated by an event (``index``), the ids new to the stream count against
        ``max_items``; ``pointer`` is where the messages are in it."""
        for position, message in enumerate(messages):
            if not isinstance(message, dict):
                continue
            message_id, role = message.get("id"), message.get("role")
            if not isinstance(message_id, str) or not isinstance(role, str):
                continue
            owner = message.get("subagentRunId")
            owner = owner if isinstance(owner, str) else None
            if index is not None and message_id not in self._messages:
                self._new_item(index, f"{pointer}/{position}/id")
            self._messages[message_id] = (role, owner, run_no)
            calls = message.get("toolCalls") if role == "assistant" else None
            for number, call in enumerate(calls if isinstance(calls, list) else ()):
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    if index is not None and call["id"] not in self._calls:
                        self._new_item(index, f"{pointer}/{position}/toolCalls/{number}/id")
                    self._calls.setdefault(call["id"], (owner, run_no))

    def _unexpanded(self, event: Event, index: int, tag: Owner) -> None:
        raise self.ctx.reject(
            VERIFY_UNEXPANDED_CHUNK(type=event["type"]),
            event_index=index,
            pointer="/type",
        )
