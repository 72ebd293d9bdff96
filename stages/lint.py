"""lint — what the stream says about itself, and against its run input: producer diagnostics.

Verification judges what a consumer must reject; this stage reports what the
spec asks of the producer only, where a consumer accepts the stream but a UI
shows the damage. It runs after verify, so it sees only events verification
accepted, and it never drops, alters, delays or rejects one. Findings, each a
warning with the event index, a pointer and the spec page:

- ``lint.snapshot-contradicts-stream``: a ``MESSAGES_SNAPSHOT`` restates a
  message or tool call streamed in this run with other content, arguments
  (compared as JSON when both parse) or tool name (``/spec/1.1/events/state``);
- ``lint.snapshot-drops-message`` / ``lint.snapshot-renames-message``: a
  ``MESSAGES_SNAPSHOT`` leaves out a message this run streamed, which a UI
  following state.mdx removes — or restates it under a new id (the same text,
  the same answered call, a call it carried), so the UI removes what it
  rendered and appends a copy (``/spec/1.1/events/state``);
- ``lint.second-tool-result``: the Conversation holds two tool messages for one
  ``toolCallId`` — a second ``TOOL_CALL_RESULT``, a snapshot keeping the
  streamed result beside another, or an answer to a call the input already
  answered (``/spec/1.1/events/tool-calls``);
- ``lint.result-before-call-end``, ``lint.result-for-unknown-call``,
  ``lint.result-for-frontend-tool`` (``lint.result-call-unseen`` without a run
  input): a ``TOOL_CALL_RESULT`` before its call closed, for a call nothing
  carried, or answering the application's own tool (``/spec/1.1/events/tool-calls``:
  none of it fatal; the result is a message in its own right);
- ``lint.message-id-reused``, ``lint.run-id-reused``, ``lint.thread-changed``:
  identifiers the producer must not reuse or change (``/spec/1.1/basic/index``,
  run-input); the Conversation holds a reused id's later message;
- ``lint.pending-inexact``: ``pendingToolCallIds`` other than the calls the run
  left unanswered; ``lint.pending-unlisted-tool``: a run ending with a call
  unanswered whose tool the run input did not list (tool-calls);
- ``lint.interrupt-outcome``: interrupt ids repeated, or at odds with a
  suspended subagent (interrupt-resume, subagents);
- ``lint.reopen-disagrees``: a reopening ``TEXT_MESSAGE_START`` or
  ``TOOL_CALL_START`` whose role, name, parent or owner differs from the item
  it reopens, on the stream or in the input's history (text-messages,
  tool-calls: "MUST agree", "a consumer is not required to detect");
- ``lint.history-restreamed``: a message or call the input's history holds,
  streamed again with the same content (``/spec/1.1/events/lifecycle``,
  Several runs: history MUST be restated as snapshots);
- ``lint.pending-omitted``: a run finishing as success with calls to the run
  input's (frontend) tools unanswered and no ``pendingToolCallIds``
  (tool-calls: SHOULD);
- ``lint.run-identity``: a run's ``threadId`` other than the input's, no run on
  the stream carrying the input's ``runId``, a ``RUN_FINISHED`` naming another
  run than its ``RUN_STARTED``, or an echoed input naming another run
  (``/spec/1.1/basic/run-input``, Identity);
- ``lint.interrupt-unknown-call``: an interrupt's ``toolCallId`` naming no call
  the stream or the input's history holds (interrupt-resume);
- ``lint.usage-arithmetic``: a ``usage`` entry on ``RUN_FINISHED`` / ``RUN_ERROR``
  whose parts exceed their total, or whose ``totalTokens`` is not
  ``inputTokens + outputTokens`` (``/spec/1.1/events/lifecycle``, Token usage);
- ``lint.arguments-not-json``: a call started in the run whose complete
  argument text does not parse as JSON. tool-calls.mdx calls JSON a convention
  and such text no protocol violation, so this is never a verdict; it is a
  warning because whoever executes the tool will parse that text, and a UI
  shows it broken. Judged when the run ends (a reopened call appends), at the
  call's last ``TOOL_CALL_END``; empty text (a call without arguments) passes.

At the end of a run that had findings, ``lint.run-report`` (information)
counts them by code; :func:`agui_pipeline.delivery.report.producer_report` groups a
whole result's findings.

Cost: one dict lookup by event type per event, for the whole batch at C
speed; the content deltas between two events that have a handler are held by
reference, one Python step per stretch of them (see ``Lint._hold``), and joined
into their item's text only when something reads it. The run's streamed text
is kept until the run ends, so a snapshot can be compared with it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from itertools import compress, groupby, repeat
from operator import is_, itemgetter
from typing import Any, ClassVar

import orjson
from agui_pipeline.batch import Batch, Event, type_table
from agui_pipeline.catalog import (
    LINT_ARGUMENTS_NOT_JSON,
    LINT_HISTORY_RESTREAMED,
    LINT_INTERRUPT_OUTCOME,
    LINT_INTERRUPT_UNKNOWN_CALL,
    LINT_MESSAGE_ID_REUSED,
    LINT_PENDING_INEXACT,
    LINT_PENDING_OMITTED,
    LINT_PENDING_UNLISTED,
    LINT_REOPEN_DISAGREES,
    LINT_RESULT_BEFORE_END,
    LINT_RESULT_FRONTEND,
    LINT_RESULT_UNKNOWN_CALL,
    LINT_RESULT_UNSEEN,
    LINT_RUN_ID_REUSED,
    LINT_RUN_IDENTITY,
    LINT_RUN_REPORT,
    LINT_SECOND_RESULT,
    LINT_SNAPSHOT_CONTRADICTS,
    LINT_SNAPSHOT_DROPS,
    LINT_SNAPSHOT_RENAMES,
    LINT_TEXT_BUDGET,
    LINT_THREAD_CHANGED,
    LINT_USAGE_ARITHMETIC,
    Code,
)
from agui_pipeline.stage import Stage, StreamContext

Handler = Callable[[Event, int], None]

_MISSING: Any = object()


class Lint(Stage):
    """Report producer mistakes the consumer accepts; never reject, delay or change an event."""

    name: ClassVar[str] = "lint"

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)
        self._handlers: dict[Any, Handler] = {
            "RUN_STARTED": self._run_started,
            "RUN_FINISHED": self._run_finished,
            "RUN_ERROR": self._run_error,
            "TEXT_MESSAGE_START": self._message_start,
            "REASONING_MESSAGE_START": self._message_start,
            "TEXT_MESSAGE_END": self._message_end,
            "REASONING_MESSAGE_END": self._message_end,
            "TOOL_CALL_START": self._call_start,
            "TOOL_CALL_END": self._call_end,
            "TOOL_CALL_RESULT": self._call_result,
            "MESSAGES_SNAPSHOT": self._messages_snapshot,
            "ACTIVITY_SNAPSHOT": self._activity_snapshot,
            "SUBAGENT_FINISHED": self._subagent_finished,
        }
        self._table = self._lookup(history=False)
        self._retable = False
        """Set when the run input, met on the stream, changed ``_table`` mid-batch."""
        self._messages: dict[Any, Event] = {}
        """messageId → what established it: its start event, result, activity snapshot, or the
        history's or a snapshot's message (all spell ``role``, ``name``, ``subagentRunId``
        alike; kept by reference, as an object made per item would cost the collector more
        than the whole check). A reused id's later message takes its place."""
        self._history_text: dict[Any, str] = {}
        """The input history's text content by messageId (to tell a restatement)."""
        self._calls: dict[Any, Event] = {}
        """toolCallId → its first TOOL_CALL_START (or the same fields, for a history call)."""
        self._open_calls: set[Any] = set()
        """Calls started and not yet ended: when one alone is open, an argument delta is its
        (verify saw to that), and a stretch of them is joined at once (``_hold``)."""
        self._history_args: dict[Any, str] = {}
        self._answers: dict[Any, Any] = {}
        """toolCallId → the messageId of the tool message that answered it."""
        self._frontend_tools: set[Any] = set()
        self._tools_listed = False
        """Whether a run input listed the application's tools (``tools``, maybe empty): only
        then is a call outside the list one nobody answers (``lint.pending-unlisted-tool``)."""
        self._input_known = False
        """Whether a run input (given, or echoed) says what the conversation and tools were."""
        self._run_ids: dict[Any, None] = {}
        """The latest ``limits.max_run_ids`` runIds, oldest first (``lint.run-id-reused``)."""
        self._stream_thread: Any = _MISSING
        """The threadId of the stream's first run (``lint.thread-changed``)."""
        self._first_run_ids: list[Any] = []
        """The first runIds on the stream (a few, for the message): runs add O(1) each."""
        self._runs_started = 0
        self._run_id: Any = None
        self._input_run_seen = False
        self._last_start: int | None = None
        self._input_thread: Any = None
        self._input_run_id: Any = None
        self._reset_run()
        run_input = ctx.run_input
        if isinstance(run_input, dict):
            self._learn_input(run_input)
            self._retable = False  # no batch read yet

    def _reset_run(self) -> None:
        self._texts: dict[Any, list[str]] = {}
        """Messages streamed into in this run → the pieces of text streamed, joined when read."""
        self._held_texts: list[Event] = []
        """The run's events without a handler, in order, but for argument deltas: its text
        deltas among them, held by reference until something reads their text; then (or
        past ``_HOLD_AT`` of them) folded into ``_texts``."""
        self._held_args: list[Event] = []
        """The run's argument deltas in order, held so until folded into ``_args``."""
        self._new_messages: set[Any] = set()
        """Of those, the ones this run introduced (a snapshot is compared with these)."""
        self._streamed: dict[str, dict[Any, Any]] = {kind: {} for kind in _KINDS}
        """Messages this run streamed and the Conversation still holds, by kind, in order:
        started, minted by a result (→ the call it answers) or an activity snapshot (→ its
        type), or named as a call's parent (a snapshot that leaves one out is
        ``lint.snapshot-drops-message``). By kind, so a snapshot visits only the kinds it
        may drop: it costs what it carries and drops."""
        self._run_calls: dict[Any, bool] = {}
        """Calls started in this run, in order → whether this run answered them."""
        self._carried: dict[Any, list[Any]] = {}
        """The message carrying each call this run introduced → those calls (a snapshot
        restating one of them elsewhere restates their message there)."""
        self._started: Event | None = None
        """This run's RUN_STARTED (what its RUN_FINISHED must name)."""
        self._suspended: dict[Any, list[Any]] = {}
        """subagentRunId → the interrupt ids its suspended outcome named, this run."""
        self._args: dict[Any, list[str]] = {}
        """Calls streamed into in this run → the pieces of argument text, joined when read."""
        self._new_calls: dict[Any, bool] = {}
        """Calls this run introduced, in order → whether their arguments were checked."""
        self._ends: dict[Any, int] = {}
        """Calls closed in this run → the event index of their last TOOL_CALL_END."""
        self._run_findings: Counter[str] = Counter()
        self._run_chars = 0
        """Characters of streamed (and restated) text this run's ``_texts`` and ``_args``
        took in, counted as they fold: past ``limits.max_text_chars`` the run is not
        compared any more (``_blind``), so what lint holds stays bounded."""
        self._blind = False
        self._fold_at = self.ctx.bytes_read + _HOLD_BYTES

    # -- the stage ----------------------------------------------------------------

    def _lookup(self, history: bool) -> dict[Any, Any]:
        """Event type → its handler, or ``_ARGS`` for an argument delta (``process``).

        A message's end is looked at only when the run input's history holds messages
        that a stream might restate: otherwise nothing reads it."""
        table: dict[Any, Any] = type_table(
            {
                kind: handler if history or kind not in _MESSAGE_ENDS else None
                for kind, handler in self._handlers.items()
            }
        )
        table["TOOL_CALL_ARGS"] = _ARGS
        return table

    async def process(self, batch: Batch) -> Batch:
        # Event type → handler for the whole batch in C (verify has read every type). The
        # text deltas, most events, have none (``None``), the argument deltas a falsy mark,
        # so the Python loop visits only the others, and holds the stretch before each.
        found: Sequence[Any] | None = batch.by_type(self._table)
        cut = 0
        while found is not None:
            found, cut = self._visit(batch, found, cut)
        return batch

    def _visit(
        self, batch: Batch, found: Sequence[Any], cut: int
    ) -> tuple[Sequence[Any] | None, int]:
        """Hand the events from ``cut`` on with a handler in ``found`` to it, holding the
        stretches between; when a run's echoed input changed the table, the rest looked up
        again (the visited events marked ``None``) and where to go on from."""
        events, indices = batch.events, batch.indices
        for position in compress(_positions(len(found)), found):
            if cut < position:
                self._hold(events, indices, found, cut, position)
            cut = position + 1
            found[position](events[position], indices[position])
            if self._retable:  # a run echoed its input: look the rest up again
                self._retable = False
                return (None,) * cut + tuple(batch.by_type(self._table, cut)), cut
        if cut < len(found):
            self._hold(events, indices, found, cut, len(found))
        return None, cut

    def _hold(
        self, events: list[Event], indices: list[int], found: Sequence[Any], start: int, stop: int
    ) -> None:
        """Hold the events of ``events[start:stop]``, a stretch without a handler.

        What keeps the lint within its budget: a content delta costs no Python bytecode,
        and its text is joined only when something reads it (a snapshot, a history item
        closing, the run's end for arguments). On a real stream the stretch between two
        events with a handler is one message's deltas and what follows its end (no
        handler: ``None`` throughout), or one call's argument deltas (``_ARGS``
        throughout): counting one mark, an identity test in C, tells it, and the stretch
        is held by one slice — or, for one call's deltas while it alone is open, joined
        at once (verify has seen that each delta names an open call), which costs less
        than holding them and grouping them by call later. Measured
        (``python -m benchmarks.instructions``, the whole pipeline against
        ``--without lint``): lint cost 997 instructions an event holding every
        argument delta, 940 with this.
        """
        if self._blind:
            return
        marks = found[start:stop]
        first = marks[0]
        if marks.count(first) == len(marks):  # one kind throughout: identity tests only
            if first is None:
                self._held_texts += events[start:stop]
            elif len(self._open_calls) == 1 and not self._held_args:
                # One call's deltas, none of its earlier ones still held: join them now.
                (call_id,) = self._open_calls
                text = "".join(map(_DELTA, events[start:stop]))
                self._args.setdefault(call_id, []).append(text)
                self._count(len(text), indices[stop - 1])
            else:
                self._held_args += events[start:stop]
        else:  # argument deltas among other events: pick each out
            stretch = events[start:stop]
            self._held_texts += compress(stretch, map(is_, marks, repeat(None)))
            self._held_args += compress(stretch, map(is_, marks, repeat(_ARGS)))
        self._fold_if_due(indices[stop - 1])

    def step(self, event: Event, kind: Any, index: int) -> Event:
        """One event of the engine's fused pass (``_engine/chain.py``): seen as
        :meth:`process` sees a batch of this event alone (``_hold`` for one event)."""
        try:
            handler = self._table.get(kind)
        except TypeError:  # an unhashable type: no handler, as in Batch.by_type
            handler = None
        if handler:
            handler(event, index)
            self._retable = False
            return event
        if self._blind:
            return event
        if handler is None:
            self._held_texts.append(event)
        elif len(self._open_calls) == 1 and not self._held_args:
            (call_id,) = self._open_calls
            text = "".join((_DELTA(event),))
            self._args.setdefault(call_id, []).append(text)
            self._count(len(text), index)
        else:
            self._held_args.append(event)
        self._fold_if_due(index)
        return event

    def _fold_if_due(self, index: int) -> None:
        """A long run keeps its text, not its event objects: held events are folded past
        _HOLD_AT of them, or once _HOLD_BYTES more of the stream was read (large deltas)."""
        if (
            len(self._held_texts) > _HOLD_AT
            or len(self._held_args) > _HOLD_AT
            or self.ctx.bytes_read > self._fold_at
        ):
            self._fold_texts(index)
            self._fold_args(index)
            self._fold_at = self.ctx.bytes_read + _HOLD_BYTES

    def _fold_texts(self, index: int) -> None:
        """Fold the held text deltas into ``_texts`` (``index``: the event lint is at)."""
        held = self._held_texts
        self._count(_fold(_text_deltas(held), _MESSAGE_ID, self._texts), index)
        held.clear()

    def _fold_args(self, index: int) -> None:
        self._count(_fold(self._held_args, _TOOL_CALL_ID, self._args), index)
        self._held_args.clear()

    def _count(self, chars: int, index: int) -> None:
        """Charge ``chars`` of text to the run, taken in at event ``index``; past the limit,
        stop comparing this run."""
        self._run_chars += chars
        limit = self.ctx.limits.max_text_chars
        if self._run_chars <= limit or self._blind:
            return
        self._blind = True
        self._texts, self._args = {}, {}
        self._held_texts.clear()
        self._held_args.clear()
        self.ctx.report(
            LINT_TEXT_BUDGET,
            f"run {_short(self._run_id)} streamed more than max_text_chars={limit} characters "
            "of text and arguments: lint compares nothing more of this run's text (snapshots, "
            "history, argument JSON); the findings before stand",
            event_index=index,
            pointer="",
        )

    async def finish(self) -> Batch:
        wanted = self._input_run_id
        seen = self._input_run_seen or wanted in self._first_run_ids
        if wanted is not None and self._runs_started and not seen:
            self._report(
                LINT_RUN_IDENTITY,
                f"no run on the stream carries the run input's runId {_short(wanted)} "
                f"(runs: {_ids(self._first_run_ids, self._runs_started)}): the requested run "
                "echoes the input's runId",
                self._last_start,
                "/runId",
            )
        return await super().finish()

    def _report(self, code: Code, message: str, index: int | None, pointer: str) -> None:
        self._run_findings[code.id] += 1
        self.ctx.report(code, message, event_index=index, pointer=pointer)

    # -- the run input ------------------------------------------------------------

    def _learn_input(self, run_input: dict[str, Any]) -> None:
        """The history the stream continues, the application's tools, the requested run."""
        self._input_known = True
        self._tools_listed = self._tools_listed or isinstance(run_input.get("tools"), list)
        self._input_thread = run_input.get("threadId")
        self._input_run_id = run_input.get("runId")
        for tool in _list(run_input.get("tools")):
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                self._frontend_tools.add(tool["name"])
        for message in _list(run_input.get("messages")):
            if not isinstance(message, dict):
                continue
            message_id, role = message.get("id"), message.get("role")
            if not isinstance(message_id, str):
                continue
            self._messages.setdefault(message_id, message)
            if isinstance(message.get("content"), str):
                self._history_text[message_id] = message["content"]
                if message["content"] and self._table["TEXT_MESSAGE_END"] is None:
                    self._table, self._retable = self._lookup(history=True), True
            if role == "tool" and isinstance(message.get("toolCallId"), str):
                self._answers.setdefault(message["toolCallId"], message_id)
            for call in _list(message.get("toolCalls")) if role == "assistant" else ():
                arguments = self._learn_call(call, message)
                if arguments is not None:
                    self._history_args[call["id"]] = arguments

    def _learn_call(self, call: Any, message: dict[str, Any]) -> str | None:
        """A tool call restated whole (history, or a snapshot) is one the stream carried:
        recorded as a start would be, unless known already; its argument text, or ``None``
        for a call that is not one."""
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(call.get("id"), str):
            return None
        self._calls.setdefault(
            call["id"],
            {
                "toolCallName": function.get("name"),
                "parentMessageId": message.get("id"),
                "subagentRunId": message.get("subagentRunId"),
            },
        )
        arguments = function.get("arguments")
        return arguments if isinstance(arguments, str) else ""

    # -- runs ---------------------------------------------------------------------

    def _run_started(self, event: Event, index: int) -> None:
        self._reset_run()
        self._started = event
        self._last_start = index
        run_id = self._run_id = event.get("runId")
        thread = event.get("threadId")
        self._runs_started += 1
        if len(self._first_run_ids) < _IDS_SHOWN:
            self._first_run_ids.append(run_id)
        if run_id in self._run_ids:
            self._report(
                LINT_RUN_ID_REUSED,
                f"RUN_STARTED reuses runId {_short(run_id)} at /runId: an earlier run on this "
                "stream has it, and a runId names one run of the thread (checked against the "
                f"latest max_run_ids={self.ctx.limits.max_run_ids} runs)",
                index,
                "/runId",
            )
        self._run_ids[run_id] = None
        if len(self._run_ids) > self.ctx.limits.max_run_ids:
            del self._run_ids[next(iter(self._run_ids))]  # the oldest leaves the window
        if self._stream_thread is _MISSING:
            self._stream_thread = thread
        elif thread != self._stream_thread and self._input_thread is None:
            # (Against a run input, lint.run-identity below says it, naming the input's.)
            self._report(
                LINT_THREAD_CHANGED,
                f"RUN_STARTED names thread {_short(thread)} at /threadId, but the runs before it "
                f"on this stream belong to {_short(self._stream_thread)}: one stream carries "
                "one thread",
                index,
                "/threadId",
            )
        echoed = event.get("input")
        if isinstance(echoed, dict):
            for field, expected in (("threadId", thread), ("runId", run_id)):
                if echoed.get(field) != expected:
                    self._report(
                        LINT_RUN_IDENTITY,
                        f"RUN_STARTED echoes an input whose /input/{field} is "
                        f"{_short(echoed.get(field))}, but the run it starts is "
                        f"{_short(expected)}: the echo is the input of the run it opens",
                        index,
                        f"/input/{field}",
                    )
            if self.ctx.run_input is None:
                self._learn_input(echoed)
        if run_id is not None and run_id == self._input_run_id:
            self._input_run_seen = True
        wanted = self._input_thread
        if wanted is not None and thread != wanted:
            self._report(
                LINT_RUN_IDENTITY,
                f"RUN_STARTED carries threadId {_short(thread)} at /threadId, but the run input "
                f"names thread {_short(wanted)}: every run on the stream carries the input's "
                "threadId",
                index,
                "/threadId",
            )

    def _run_finished(self, event: Event, index: int) -> None:
        started = self._started or {}
        for field in ("runId", "threadId"):
            if event.get(field) != started.get(field):
                self._report(
                    LINT_RUN_IDENTITY,
                    f"RUN_FINISHED names {field} {_short(event.get(field))} at /{field}, but the "
                    f"run it closes started as {_short(started.get(field))}: a run's two "
                    "boundary events agree on their ids",
                    index,
                    f"/{field}",
                )
        outcome: dict[str, Any] = event.get("outcome") or {}
        kind = outcome.get("type", "success")
        interrupts = outcome.get("interrupts") or () if kind == "interrupt" else ()
        if kind == "interrupt":
            self._check_interrupts(interrupts, index)
        elif kind == "success":
            self._check_suspended(index, "/outcome" if outcome else "")
            named = outcome.get("pendingToolCallIds")
            if named:
                self._check_pending_named(named, index)
            else:
                self._check_pending(index, "/outcome" if outcome else "")
        if kind != "cancelled":
            self._check_unlisted(interrupts, index)
        self._end_run(event, index)

    def _run_error(self, event: Event, index: int) -> None:
        self._end_run(event, index)

    def _check_usage(self, event: Event, index: int) -> None:
        """Token usage under the lifecycle page's accounting: parts within their totals, the
        two cache counts disjoint, the total the sum; an absent count is not judged."""
        for position, entry in enumerate(_list(event.get("usage"))):
            if not isinstance(entry, dict):
                continue
            for part, whole, why in _USAGE_RULES:
                counts = _counts(entry, (*part, whole))
                if counts is None:
                    continue
                *parts, total = counts
                if sum(parts) <= total:
                    continue
                self._report(
                    LINT_USAGE_ARITHMETIC,
                    f"usage entry {position} reports {' + '.join(part)} = {sum(parts)} above "
                    f"{whole} = {total}: {why}",
                    index,
                    f"/usage/{position}/{part[-1]}",
                )
            counts = _counts(entry, ("inputTokens", "outputTokens", "totalTokens"))
            if counts is not None and counts[0] + counts[1] != counts[2]:
                self._report(
                    LINT_USAGE_ARITHMETIC,
                    f"usage entry {position} reports totalTokens {counts[2]}, but inputTokens + "
                    f"outputTokens is {counts[0] + counts[1]}: the total is their sum",
                    index,
                    f"/usage/{position}/totalTokens",
                )

    def _end_run(self, event: Event, index: int) -> None:
        if "usage" in event:
            self._check_usage(event, index)
        self._check_arguments(index)
        findings = self._run_findings
        if findings:
            counts = ", ".join(f"{code} ×{count}" for code, count in sorted(findings.items()))
            self.ctx.report(
                LINT_RUN_REPORT,
                f"run {_short(self._run_id)}: "
                f"{sum(findings.values())} producer findings ({counts})",
                event_index=index,
                pointer="",
            )
        self._reset_run()

    def _check_interrupts(self, interrupts: Any, index: int) -> None:
        owners: dict[Any, Any] = {}
        for position, interrupt in enumerate(interrupts):
            if not isinstance(interrupt, dict):
                continue
            interrupt_id, where = interrupt.get("id"), f"/outcome/interrupts/{position}"
            if interrupt_id in owners:
                self._report(
                    LINT_INTERRUPT_OUTCOME,
                    f"interrupt id {_short(interrupt_id)} at {where}/id repeats an earlier one: "
                    "each interrupt's id is unique within the run, and a resume entry answers "
                    "it by that id",
                    index,
                    where + "/id",
                )
            owners.setdefault(interrupt_id, interrupt.get("subagentRunId"))
            call_id = interrupt.get("toolCallId")
            if call_id is not None and call_id not in self._calls:
                self._report(
                    LINT_INTERRUPT_UNKNOWN_CALL,
                    f"interrupt {_short(interrupt_id)} asks about tool call {_short(call_id)} at "
                    f"{where}/toolCallId, but no call has that id on the stream or in the "
                    "input's history",
                    index,
                    where + "/toolCallId",
                )
        for sub, interrupt_ids in self._suspended.items():
            for interrupt_id in interrupt_ids:
                if interrupt_id not in owners:
                    problem = "carries no interrupt with that id"
                elif owners[interrupt_id] not in (None, sub):
                    problem = f"attributes it to subagent {_short(owners[interrupt_id])}"
                else:
                    continue
                self._report(
                    LINT_INTERRUPT_OUTCOME,
                    f"subagent {_short(sub)} suspended on interrupt {_short(interrupt_id)}, but "
                    f"the run's interrupt outcome at /outcome/interrupts {problem}",
                    index,
                    "/outcome/interrupts",
                )

    def _check_suspended(self, index: int, pointer: str) -> None:
        """A run whose subagent suspended on interrupts does not end as success."""
        waiting = [(sub, ids) for sub, ids in self._suspended.items() if ids]
        if waiting:
            sub, ids = waiting[0]
            self._report(
                LINT_INTERRUPT_OUTCOME,
                f"subagent {_short(sub)} suspended on run-level interrupts "
                f"{_ids(ids[:_IDS_SHOWN], len(ids))}, but the run finished as success: a run "
                "that stopped to ask ends with the interrupt outcome",
                index,
                pointer,
            )

    def _check_pending_named(self, named: list[Any], index: int) -> None:
        """pendingToolCallIds, when sent, is exactly the calls the run left unanswered."""
        unanswered = [call for call, answered in self._run_calls.items() if not answered]
        if len(set(named)) != len(named) or set(named) != set(unanswered):
            self._report(
                LINT_PENDING_INEXACT,
                f"/outcome/pendingToolCallIds names {_ids(named[:_IDS_SHOWN], len(named))}; "
                "expected exactly the calls this run started and did not answer with "
                f"TOOL_CALL_RESULT: {_ids(unanswered[:_IDS_SHOWN], len(unanswered)) or 'none'}",
                index,
                "/outcome/pendingToolCallIds",
            )

    def _check_unlisted(self, interrupts: Any, index: int) -> None:
        """Calls the run leaves unanswered to a tool the input did not list: nobody answers
        them (the producer answers its own in-stream; the application only its tools)."""
        if not self._tools_listed:
            return
        asked = {i.get("toolCallId") for i in interrupts if isinstance(i, dict)}
        tools = self._frontend_tools
        orphans = [
            call_id
            for call_id, answered in self._run_calls.items()
            if not answered
            and call_id not in self._answers
            and call_id not in asked
            and self._calls[call_id].get("toolCallName") not in tools
        ]
        if orphans:
            names = sorted({str(self._calls[c].get("toolCallName")) for c in orphans})
            self._report(
                LINT_PENDING_UNLISTED,
                f"the run ends leaving calls {_ids(orphans[:_IDS_SHOWN], len(orphans))} "
                f"unanswered, to tools the run input did not list ({', '.join(names[:5])}): the "
                "application answers only its own tools, so no one will answer these",
                index,
                "",
            )

    def _check_pending(self, index: int, pointer: str) -> None:
        tools = self._frontend_tools
        waiting = [
            call_id
            for call_id in self._new_calls
            if self._calls[call_id]["toolCallName"] in tools and call_id not in self._answers
        ]
        if waiting:
            self._report(
                LINT_PENDING_OMITTED,
                f"the run leaves frontend tool calls {_ids(waiting[:_IDS_SHOWN], len(waiting))} "
                "for the application to answer, but RUN_FINISHED carries no "
                "/outcome/pendingToolCallIds: a producer SHOULD name the pending calls",
                index,
                pointer,
            )

    def _check_arguments(self, index: int) -> None:
        """Each call this run started: its complete argument text, as a JSON document."""
        self._fold_args(index)
        if self._blind:
            return
        for call_id in self._new_calls:
            self._check_call(call_id)

    def _check_call(self, call_id: Any) -> None:
        """Once per call per run: the text as streamed (before a snapshot restates it)."""
        if self._new_calls.get(call_id) or call_id not in self._ends:
            return
        self._new_calls[call_id] = True
        text = "".join(self._args.get(call_id, ()))
        if text and _json(text) is _MISSING:
            self._report(
                LINT_ARGUMENTS_NOT_JSON,
                f"tool call {_short(call_id)} ({_short(self._calls[call_id]['toolCallName'])}) "
                f"closed with argument text that is not JSON: {_excerpt(text)}; whoever executes "
                "it parses that text (JSON is the convention, not a rule)",
                self._ends.get(call_id),
                "/toolCallId",
            )

    # -- messages -----------------------------------------------------------------

    def _message_start(self, event: Event, index: int) -> None:
        message_id = event["messageId"]
        known = self._messages.setdefault(message_id, event)
        if known is event or known is _CARRIER:  # new, or only a call's parent so far
            self._messages[message_id] = event
            self._new_messages.add(message_id)
            self._streamed[_START_KINDS[event["type"]]][message_id] = None
            return
        if not self._same_kind(known, event, index, message_id):
            self._new_messages.add(message_id)
            self._streamed[_START_KINDS[event["type"]]][message_id] = None
            return
        pairs = tuple(
            (label, known.get(field, default), event.get(field, default))
            for label, field, default in _MESSAGE_FIELDS
        )
        self._disagreement(event, index, "message", message_id, pairs)

    def _same_kind(self, known: Event, event: Event, index: int, message_id: Any) -> bool:
        """Whether ``event`` names a message of the kind its id already names (a tool result
        is never the same: a second one mints a second message); if not, report the reuse and
        let the new message stand, as the Conversation does (basic/index: MUST be unique)."""
        kind, new_kind = _kind(known), _kind(event)
        if kind == new_kind and new_kind != "tool":
            return True
        what = "a second tool message" if kind == new_kind else f"a {new_kind} message"
        self._report(
            LINT_MESSAGE_ID_REUSED,
            f"{event['type']} mints {what} under messageId {_short(message_id)} at /messageId, "
            f"which already names a {kind} message: a messageId is unique within its thread, "
            "and the Conversation holds the new message in the old one's place",
            index,
            "/messageId",
        )
        self._messages[message_id] = event
        self._streamed.get(kind, {}).pop(message_id, None)  # it is held as its new kind now
        return False

    def _message_end(self, event: Event, index: int) -> None:
        message_id = event["messageId"]
        history = self._history_text.get(message_id)
        if not history:
            return
        self._fold_texts(index)
        if not self._blind and "".join(self._texts.get(message_id, ())) == history:
            self._restreamed(event["type"], "message", message_id, index, "/messageId")

    def _disagreement(
        self,
        event: Event,
        index: int,
        what: str,
        item: Any,
        pairs: tuple[tuple[str, Any, Any], ...],
    ) -> None:
        """A reopening start against the item it reopens; a value left out is no disagreement."""
        differing = [
            f"{field} {_short(new)} (was {_short(old)})"
            for field, old, new in pairs
            if new is not None and old is not None and new != old
        ]
        if differing:
            self._report(
                LINT_REOPEN_DISAGREES,
                f"{event['type']} reopens {what} {_short(item)} with {'; '.join(differing)}: a "
                f"reopening start MUST agree with the {what} it reopens",
                index,
                "",
            )

    def _restreamed(self, kind: str, what: str, item: Any, index: int, pointer: str) -> None:
        self._report(
            LINT_HISTORY_RESTREAMED,
            f"{kind} closes {what} {_short(item)}, streamed again with what the run input's "
            "history already holds: the Conversation now holds it twice; restate history with "
            "MESSAGES_SNAPSHOT, stream only new material",
            index,
            pointer,
        )

    # -- tool calls ---------------------------------------------------------------

    def _call_start(self, event: Event, index: int) -> None:
        call_id = event["toolCallId"]
        self._open_calls.add(call_id)
        self._run_calls.setdefault(call_id, False)
        known = self._calls.setdefault(call_id, event)
        if known is event:
            self._new_calls[call_id] = False
            # The message carrying it: the one it names, or (none named) one the Conversation
            # holds under the call's own id; a snapshot restating it elsewhere moves it.
            parent = event.get("parentMessageId", call_id)
            if parent not in self._messages:
                self._messages[parent] = _CARRIER
                self._streamed["text"][parent] = None
            carried = self._carried.get(parent)
            if carried is None:
                self._carried[parent] = [call_id]
            else:
                carried.append(call_id)
            return
        pairs = tuple((label, known.get(field), event.get(field)) for label, field in _CALL_FIELDS)
        self._disagreement(event, index, "tool call", call_id, pairs)

    def _call_end(self, event: Event, index: int) -> None:
        call_id = event["toolCallId"]
        self._open_calls.discard(call_id)
        self._ends[call_id] = index
        history = self._history_args.get(call_id)
        if not history:
            return
        self._fold_args(index)
        if not self._blind and _same_arguments("".join(self._args.get(call_id, ())), history):
            self._restreamed("TOOL_CALL_END", "tool call", call_id, index, "/toolCallId")

    def _call_result(self, event: Event, index: int) -> None:
        call_id, message_id = event["toolCallId"], event["messageId"]
        call = self._calls.get(call_id)
        if call_id in self._open_calls:
            self._report(
                LINT_RESULT_BEFORE_END,
                f"TOOL_CALL_RESULT answers call {_short(call_id)} at /toolCallId while it is still "
                "open: the tool ran before TOOL_CALL_END made its arguments final (a consumer "
                "MUST NOT act on them before); the call stays open until its end",
                index,
                "/toolCallId",
            )
        elif call is None and self._input_known:
            self._report(
                LINT_RESULT_UNKNOWN_CALL,
                f"TOOL_CALL_RESULT answers call {_short(call_id)} at /toolCallId, but no call has "
                "that id: none was streamed before it, none is in the run input's history; the "
                "Conversation holds the result with no call to show it under",
                index,
                "/toolCallId",
            )
        elif call is None:
            self._report(
                LINT_RESULT_UNSEEN,
                f"TOOL_CALL_RESULT answers call {_short(call_id)} at /toolCallId, which did not "
                "start on this stream; without the run input its history cannot be checked",
                index,
                "/toolCallId",
            )
        if call is not None and call.get("toolCallName") in self._frontend_tools:
            self._report(
                LINT_RESULT_FRONTEND,
                f"TOOL_CALL_RESULT answers call {_short(call_id)} at /toolCallId, a call to the "
                f"run input's tool {_short(call.get('toolCallName'))}: the application executes "
                "its own tools and answers them in the next run's input, so the producer MUST "
                "NOT answer it",
                index,
                "/toolCallId",
            )
        known = self._messages.get(message_id)
        if known is None:
            self._messages[message_id] = _RESULT
        else:
            self._same_kind(known, event, index, message_id)
        self._streamed["tool"][message_id] = call_id
        if call_id in self._run_calls:
            self._run_calls[call_id] = True
        self._answer(call_id, message_id, index, "/toolCallId", "stream")

    def _activity_snapshot(self, event: Event, index: int) -> None:
        message_id = event["messageId"]
        known = self._messages.get(message_id)
        if known is None:
            self._messages[message_id] = _ACTIVITY
        elif _kind(known) != "activity":
            self._same_kind(known, event, index, message_id)
        self._streamed["activity"][message_id] = event["activityType"]

    def _subagent_finished(self, event: Event, index: int) -> None:
        outcome = event.get("outcome")
        if isinstance(outcome, dict) and outcome.get("type") == "suspended":
            self._suspended[event["subagentRunId"]] = list(outcome.get("interruptIds") or ())

    def _answer(self, call_id: Any, message_id: Any, index: int, pointer: str, by: str) -> None:
        earlier = self._answers.setdefault(call_id, message_id)
        if earlier != message_id:
            self._report(
                LINT_SECOND_RESULT,
                f"tool message {_short(message_id)} ({by}) answers call {_short(call_id)} at "
                f"{pointer}, already answered by tool message {_short(earlier)}: the "
                "Conversation now holds two results for one call",
                index,
                pointer,
            )

    # -- snapshots ----------------------------------------------------------------

    def _messages_snapshot(self, event: Event, index: int) -> None:
        self._fold_texts(index)
        self._fold_args(index)
        messages = event["messages"]
        positions: dict[Any, int] = {}
        roles: set[Any] = set()
        for position, message in enumerate(messages):
            positions.setdefault(message.get("id"), position)
            roles.add(message.get("role"))
        self._restated_results(messages, index)
        self._restated_streamed(messages, positions, roles, index)
        for position, message in enumerate(messages):
            message_id, role = message.get("id"), message.get("role")
            self._messages.setdefault(message_id, message)
            if role == "tool":
                continue  # results are judged above
            if self._blind:  # past the budget: no text to compare, but the calls are carried
                for call in _list(message.get("toolCalls")):
                    self._learn_call(call, message)
                continue
            where = f"/messages/{position}"
            if message_id in self._new_messages:
                restated = message.get("content")
                restated = restated if isinstance(restated, str) else ""
                text = "".join(self._texts.get(message_id, ()))
                if restated != text:
                    self._contradiction(
                        index, where + "/content", f"message {_short(message_id)}", text, restated
                    )
                # Later deltas append to the restated content (state.mdx reconciliation).
                self._texts[message_id] = [restated]
                self._count(len(restated), index)
            for number, call in enumerate(_list(message.get("toolCalls"))):
                self._restated_call(call, index, f"{where}/toolCalls/{number}")
                self._learn_call(call, message)

    def _restated_results(self, messages: list[Any], index: int) -> None:
        """Tool messages as the Conversation will hold them: the snapshot's, and no other
        (it drops every tool message it leaves out). Two for one call is a second result."""
        answers: dict[Any, Any] = {}
        for position, message in enumerate(messages):
            if message.get("role") != "tool":
                continue
            call_id, message_id = message.get("toolCallId"), message.get("id")
            earlier = answers.setdefault(call_id, message_id)
            if earlier == message_id:
                continue
            where = f"/messages/{position}/toolCallId"
            self._report(
                LINT_SECOND_RESULT,
                f"MESSAGES_SNAPSHOT holds tool message {_short(message_id)} answering call "
                f"{_short(call_id)} at {where} beside tool message {_short(earlier)}: the "
                "Conversation now holds two results for one call",
                index,
                where,
            )
        self._answers = answers

    def _restated_streamed(
        self, messages: list[Any], positions: dict[Any, int], roles: set[Any], index: int
    ) -> None:
        """Each message this run streamed that the snapshot leaves out: restated under a new
        id (the same text, the same answered call, a call it carried, the same activity), or
        dropped. The Conversation drops it either way (``/spec/1.1/events/state``), and a UI
        with it: what it had rendered goes, and a copy appears in its place, or nothing."""
        gone = [
            (kind, message_id, detail)
            for kind, streamed in self._streamed.items()
            if _droppable(kind, roles)
            for message_id, detail in streamed.items()
            if message_id not in positions
        ]
        if not gone:
            return
        copies = self._copies(messages)
        for kind, message_id, detail in gone:
            del self._streamed[kind][message_id]
            copy = self._copy_of(message_id, kind, detail, copies)
            what = f"{kind} message {_short(message_id)}"
            if self._messages[message_id] is _CARRIER and message_id in self._calls:
                what = (
                    f"the message carrying tool call {_short(message_id)} (streamed without a "
                    "parentMessageId, so held under the call's id)"
                )
            if copy is None:
                self._report(
                    LINT_SNAPSHOT_DROPS,
                    f"MESSAGES_SNAPSHOT leaves out {what}, which this run streamed: a UI "
                    "following state.mdx removes it from the conversation",
                    index,
                    "/messages",
                )
                continue
            where = f"/messages/{positions[copy]}/id"
            self._report(
                LINT_SNAPSHOT_RENAMES,
                f"MESSAGES_SNAPSHOT restates {what} under a new id {_short(copy)} at {where}: a "
                "UI following state.mdx removes the message it rendered and appends a copy "
                "(flicker; any per-message UI state is lost)",
                index,
                where,
            )

    def _copies(self, messages: list[Any]) -> dict[tuple[Any, ...], Any]:
        """The snapshot's messages under ids never seen before, by what would identify them as
        a streamed message's copy: (kind, text), ("tool", callId), ("call", callId),
        ("activity", activityType) → the first such id."""
        copies: dict[tuple[Any, ...], Any] = {}
        for message in messages:
            message_id = message.get("id")
            if message_id in self._messages:
                continue
            kind = _kind(message)
            content = message.get("content")
            if kind == "tool":
                copies.setdefault(("tool", message.get("toolCallId")), message_id)
            elif kind == "activity":
                copies.setdefault(("activity", message.get("activityType")), message_id)
            elif isinstance(content, str) and content:
                copies.setdefault((kind, content), message_id)
            for call in _list(message.get("toolCalls")):
                if isinstance(call, dict):
                    copies.setdefault(("call", call.get("id")), message_id)
        return copies

    def _copy_of(
        self, message_id: Any, kind: str, detail: Any, copies: dict[tuple[Any, ...], Any]
    ) -> Any:
        """The id a streamed message was restated under, or ``None`` (``detail``: what
        ``_streamed`` holds of it, the call a result answers or an activity's type)."""
        if kind in ("tool", "activity"):
            return copies.get((kind, detail))
        text = "".join(self._texts.get(message_id, ())) if not self._blind else ""
        copy = copies.get((kind, text)) if text else None
        for call_id in self._carried.get(message_id, ()) if copy is None else ():
            copy = copies.get(("call", call_id))
            if copy is not None:
                break
        return copy

    def _restated_call(self, call: Any, index: int, where: str) -> None:
        call_id = call.get("id") if isinstance(call, dict) else None
        if call_id not in self._new_calls:
            return
        function = call.get("function") or {}
        name, restated = function.get("name"), function.get("arguments")
        restated = restated if isinstance(restated, str) else ""
        text = "".join(self._args.get(call_id, ()))
        if not _same_arguments(text, restated):
            self._contradiction(
                index, where + "/function/arguments", f"tool call {_short(call_id)}", text, restated
            )
        self._check_call(call_id)
        streamed_name = self._calls[call_id]["toolCallName"]
        if name is not None and name != streamed_name:
            self._contradiction(
                index, where + "/function/name", f"tool call {_short(call_id)}", streamed_name, name
            )
        self._args[call_id] = [restated]
        self._count(len(restated), index)

    def _contradiction(
        self, index: int, pointer: str, what: str, streamed: Any, restated: Any
    ) -> None:
        self._report(
            LINT_SNAPSHOT_CONTRADICTS,
            f"MESSAGES_SNAPSHOT restates {what} at {pointer} as {_excerpt(restated)}, but this run "
            f"streamed {_excerpt(streamed)}: the UI showed one and now shows the other",
            index,
            pointer,
        )


_USAGE_RULES = (
    (("cachedInputTokens",), "inputTokens", "cache reads are part of the input total"),
    (("cacheWriteInputTokens",), "inputTokens", "cache writes are part of the input total"),
    (
        ("cachedInputTokens", "cacheWriteInputTokens"),
        "inputTokens",
        "the two cache counts are disjoint parts of the input total",
    ),
    (("reasoningTokens",), "outputTokens", "reasoning is part of the output total"),
)
"""(parts, their total, why): the parts never add up to more than the total (lifecycle)."""

_MESSAGE_FIELDS = (
    ("role", "role", "assistant"),  # absent on a start means assistant
    ("name", "name", None),
    ("owner", "subagentRunId", None),
)
_CALL_FIELDS = (
    ("toolCallName", "toolCallName"),
    ("parentMessageId", "parentMessageId"),
    ("owner", "subagentRunId"),
)
_TEXT_ROLES = frozenset({"assistant", "user", "system", "developer"})
_KINDS = ("text", "reasoning", "tool", "activity")
"""The kinds of message (``_kind``); a run's streamed messages are kept by kind."""
_START_KINDS = {"TEXT_MESSAGE_START": "text", "REASONING_MESSAGE_START": "reasoning"}
_CLIENT_ONLY = frozenset({"activity", "reasoning"})
"""Kinds a snapshot drops only when it carries that role (the Conversation's rule)."""
_CARRIER: Event = {"role": "assistant"}
"""What ``Lint._messages`` holds for a message only a tool call has named (its parent)."""
_RESULT: Event = {"type": "TOOL_CALL_RESULT"}
_ACTIVITY: Event = {"type": "ACTIVITY_SNAPSHOT"}
"""What it holds for a message a result or an activity snapshot minted: its kind is all
lint reads of it, and a marker keeps no event alive for the collector to walk."""


def _kind(message: Event) -> str:
    """What kind of message an event mints or a restated message is: ``text`` (the four text
    roles), ``reasoning``, ``tool`` or ``activity``."""
    kind = message.get("type")
    if kind == "TOOL_CALL_RESULT":
        return "tool"
    if kind == "ACTIVITY_SNAPSHOT":
        return "activity"
    role = message.get("role", "assistant")
    return "text" if role in _TEXT_ROLES else str(role)


def _droppable(kind: str, roles: set[Any]) -> bool:
    """Whether a complete snapshot carrying ``roles`` drops a held message of ``kind``."""
    return kind not in _CLIENT_ONLY or kind in roles


_ARGS = 0
"""The mark of an argument delta in ``Lint._table``: falsy, so ``compress`` passes over it
as over the ``None`` of an event without a handler; one object, so ``list.count`` finds it
by identity."""
_MESSAGE_ENDS = frozenset({"TEXT_MESSAGE_END", "REASONING_MESSAGE_END"})
_TEXT_DELTAS = frozenset({"TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"})
_HOLD_AT = 4096
"""Content deltas a run holds by reference before they are folded into text."""
_HOLD_BYTES = 4 * 1024 * 1024
"""Bytes of the stream read after which the held deltas are folded, however few: what
bounds the held events when each is large."""
_POSITIONS = list(range(4096))


def _positions(count: int) -> list[int] | range:
    """``range(count)`` for ``compress``; for a batch of up to 4,096 events, a list made
    once, so iterating it makes no int objects (measured: 84 instructions an event
    against 168 for the range)."""
    return _POSITIONS if count <= len(_POSITIONS) else range(count)


_MESSAGE_ID, _TOOL_CALL_ID = itemgetter("messageId"), itemgetter("toolCallId")
_TYPE = itemgetter("type")
_DELTA = itemgetter("delta")


def _text_deltas(held: list[Event]) -> list[Event]:
    """The text deltas among held events, in order."""
    try:
        return list(compress(held, map(_TEXT_DELTAS.__contains__, map(_TYPE, held))))
    except (KeyError, TypeError):  # an event that is no object, or its type: only without enforce
        return [e for e in held if type(e) is dict and _is_text_delta(e.get("type"))]


def _is_text_delta(kind: Any) -> bool:
    return type(kind) is str and kind in _TEXT_DELTAS


def _fold(deltas: list[Event], item_of: Callable[[Event], Any], texts: dict[Any, list[str]]) -> int:
    """Append the deltas to their items' text, in order: one join per run of one item's;
    the characters appended."""
    chars = 0
    for item, run in groupby(deltas, key=item_of):
        text = "".join(map(_DELTA, run))
        chars += len(text)
        if item in texts:
            texts[item].append(text)
        else:
            texts[item] = [text]
    return chars


def _counts(entry: dict[str, Any], names: tuple[str, ...]) -> list[int] | None:
    """The named counts of a usage entry, or ``None`` unless every one is reported."""
    counts = [count for name in names if type(count := entry.get(name)) is int]
    return counts if len(counts) == len(names) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _json(text: str) -> Any:
    """The JSON value of ``text``, or ``_MISSING`` when it is not a JSON document."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _MISSING


def _same_arguments(streamed: str, restated: str) -> bool:
    """The same text, or the same JSON value (a producer may re-serialise it)."""
    if streamed == restated:
        return True
    value = _json(streamed)
    return value is not _MISSING and value == _json(restated)


def _short(value: Any) -> str:
    """A producer-supplied value for a message, cut short: a message never grows with it."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _excerpt(value: Any) -> str:
    return "empty text" if value == "" else _short(value)


_IDS_SHOWN = 5


def _ids(first: list[Any], count: int) -> str:
    """The first runIds of ``count`` runs, for a message."""
    shown = ", ".join(_short(item) for item in first)
    return shown + (f" and {count - len(first)} more" if count > len(first) else "")
