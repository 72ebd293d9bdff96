"""lint — what the stream says about itself, and against its run input: producer diagnostics.

Verification judges what a consumer must reject; this stage reports what the
spec asks of the producer only, where a consumer accepts the stream but a UI
shows the damage. It runs after verify, so it sees only events verification
accepted, and it never drops, alters, delays or rejects one. Findings, each a
warning with the event index, a pointer and the spec page:

- ``lint.snapshot-contradicts-stream``: a ``MESSAGES_SNAPSHOT`` restates a
  message or tool call streamed in this run with other content, arguments
  (compared as JSON when both parse) or tool name (``/spec/1.1/events/state``);
- ``lint.second-tool-result``: a second tool message for one ``toolCallId`` —
  a second ``TOOL_CALL_RESULT``, or a snapshot's tool message under another id
  than the streamed result's, or an answer to a call the input already answered
  (``/spec/1.1/events/tool-calls``);
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
- ``lint.run-identity``: a run's ``threadId`` other than the input's, or no
  run on the stream carrying the input's ``runId`` (``/spec/1.1/basic/run-input``);
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
counts them by code; :func:`agui_pipeline.report.producer_report` groups a
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
from agui_pipeline.catalog import (
    LINT_ARGUMENTS_NOT_JSON,
    LINT_HISTORY_RESTREAMED,
    LINT_INTERRUPT_UNKNOWN_CALL,
    LINT_PENDING_OMITTED,
    LINT_REOPEN_DISAGREES,
    LINT_RUN_IDENTITY,
    LINT_RUN_REPORT,
    LINT_SECOND_RESULT,
    LINT_SNAPSHOT_CONTRADICTS,
    LINT_TEXT_BUDGET,
    LINT_USAGE_ARITHMETIC,
    Code,
)
from agui_pipeline.stage import Batch, Event, Stage, StreamContext, type_table

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
        }
        self._table = self._lookup(history=False)
        self._retable = False
        """Set when the run input, met on the stream, changed ``_table`` mid-batch."""
        self._messages: dict[Any, Event] = {}
        """messageId → what first established it: its start event, or the history's message
        (both spell ``role``, ``name``, ``subagentRunId`` alike; kept by reference, as an
        object made per item would cost the collector more than the whole check)."""
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
            elif len(self._open_calls) == 1:  # one call's deltas: join them, hold nothing
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
        # A long run keeps its text, not its event objects: held events are folded past
        # _HOLD_AT of them, or once _HOLD_BYTES more of the stream was read (large deltas).
        if (
            len(self._held_texts) > _HOLD_AT
            or len(self._held_args) > _HOLD_AT
            or self.ctx.bytes_read > self._fold_at
        ):
            self._fold_texts(indices[stop - 1])
            self._fold_args(indices[stop - 1])
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
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and isinstance(call.get("id"), str):
                    arguments = function.get("arguments")
                    self._calls.setdefault(
                        call["id"],
                        {
                            "toolCallName": function.get("name"),
                            "parentMessageId": message_id,
                            "subagentRunId": message.get("subagentRunId"),
                        },
                    )
                    self._history_args[call["id"]] = arguments if isinstance(arguments, str) else ""

    # -- runs ---------------------------------------------------------------------

    def _run_started(self, event: Event, index: int) -> None:
        self._reset_run()
        self._last_start = index
        run_id = self._run_id = event.get("runId")
        self._runs_started += 1
        if len(self._first_run_ids) < _IDS_SHOWN:
            self._first_run_ids.append(run_id)
        echoed = event.get("input")
        if isinstance(echoed, dict) and self.ctx.run_input is None:
            self._learn_input(echoed)
        if run_id is not None and run_id == self._input_run_id:
            self._input_run_seen = True
        wanted = self._input_thread
        if wanted is not None and event.get("threadId") != wanted:
            self._report(
                LINT_RUN_IDENTITY,
                f"RUN_STARTED carries threadId {_short(event.get('threadId'))} at /threadId, but "
                f"the run input names thread {_short(wanted)}: every run on the stream carries "
                "the input's threadId",
                index,
                "/threadId",
            )

    def _run_finished(self, event: Event, index: int) -> None:
        outcome: dict[str, Any] = event.get("outcome") or {}
        kind = outcome.get("type", "success")
        if kind == "interrupt":
            self._check_interrupts(outcome.get("interrupts") or (), index)
        elif kind == "success" and not outcome.get("pendingToolCallIds"):
            self._check_pending(index, "/outcome" if outcome else "")
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
        for position, interrupt in enumerate(interrupts):
            call_id = interrupt.get("toolCallId") if isinstance(interrupt, dict) else None
            if call_id is not None and call_id not in self._calls:
                self._report(
                    LINT_INTERRUPT_UNKNOWN_CALL,
                    f"interrupt {_short(interrupt.get('id'))} asks about tool call "
                    f"{_short(call_id)} at /outcome/interrupts/{position}/toolCallId, but no "
                    "call has that id on the stream or in the input's history",
                    index,
                    f"/outcome/interrupts/{position}/toolCallId",
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
        if known is event:
            self._new_messages.add(message_id)
            return
        pairs = tuple(
            (label, known.get(field, default), event.get(field, default))
            for label, field, default in _MESSAGE_FIELDS
        )
        self._disagreement(event, index, "message", message_id, pairs)

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
        known = self._calls.setdefault(call_id, event)
        if known is event:
            self._new_calls[call_id] = False
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
        self._answer(event["toolCallId"], event["messageId"], index, "/toolCallId", "stream")

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
        for position, message in enumerate(event["messages"]):
            message_id, role = message.get("id"), message.get("role")
            where = f"/messages/{position}"
            if role == "tool":
                self._answer(
                    message.get("toolCallId"), message_id, index, where + "/toolCallId", "snapshot"
                )
                continue
            if self._blind:
                continue  # the run's text is past the budget: nothing to compare with
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
