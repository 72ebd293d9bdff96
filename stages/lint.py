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
reference, one Python step per stretch of them, and joined into their item's
text only when something reads it. The run's streamed text is kept until the
run ends, so a snapshot can be compared with it.

The stage is three modules: this one (what each event type means to lint),
``_lint_state`` (what lint remembers, and the holding: ``LintState._hold``) and
``_lint_snapshot`` (a ``MESSAGES_SNAPSHOT`` against what the run streamed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import compress
from typing import Any, ClassVar

from agui_pipeline.batch import Batch, Event, type_table
from agui_pipeline.catalog import (
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
    LINT_THREAD_CHANGED,
    LINT_USAGE_ARITHMETIC,
)
from agui_pipeline.stage import StreamContext
from agui_pipeline.stages._lint_snapshot import SnapshotComparison
from agui_pipeline.stages._lint_state import (
    _ACTIVITY,
    _ARGS,
    _CARRIER,
    _DELTA,
    _IDS_SHOWN,
    _MISSING,
    _RESULT,
    _ids,
    _kind,
    _list,
    _same_arguments,
    _short,
)

Handler = Callable[[Event, int], None]


class Lint(SnapshotComparison):
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
        run_input = ctx.run_input
        if isinstance(run_input, dict):
            self._learn_input(run_input)
            self._retable = False  # no batch read yet

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
            text = "".join((_DELTA(event),))  # as _hold joins: a delta that is no str raises
            self._args.setdefault(call_id, []).append(text)
            self._count(len(text), index)
        else:
            self._held_args.append(event)
        self._fold_if_due(index)
        return event

    async def finish(self) -> Batch:
        wanted = self._input_run_id
        seen = self._input_run_seen or wanted in self._first_run_ids
        if wanted is not None and self._runs_started and not seen:
            self._report(
                LINT_RUN_IDENTITY(
                    "input-run",
                    wanted=_short(wanted),
                    runs=_ids(self._first_run_ids, self._runs_started),
                ),
                self._last_start,
                "/runId",
            )
        return await super().finish()

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
                LINT_RUN_ID_REUSED(run_id=_short(run_id), max_run_ids=self.ctx.limits.max_run_ids),
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
                LINT_THREAD_CHANGED(
                    thread=_short(thread), stream_thread=_short(self._stream_thread)
                ),
                index,
                "/threadId",
            )
        echoed = event.get("input")
        if isinstance(echoed, dict):
            for field, expected in (("threadId", thread), ("runId", run_id)):
                if echoed.get(field) != expected:
                    self._report(
                        LINT_RUN_IDENTITY(
                            "echo",
                            field=field,
                            named=_short(echoed.get(field)),
                            expected=_short(expected),
                        ),
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
                LINT_RUN_IDENTITY("input-thread", thread=_short(thread), wanted=_short(wanted)),
                index,
                "/threadId",
            )

    def _run_finished(self, event: Event, index: int) -> None:
        started = self._started or {}
        for field in ("runId", "threadId"):
            if event.get(field) != started.get(field):
                self._report(
                    LINT_RUN_IDENTITY(
                        field=field,
                        named=_short(event.get(field)),
                        started=_short(started.get(field)),
                    ),
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
                    LINT_USAGE_ARITHMETIC(
                        position=position,
                        part=" + ".join(part),
                        sum=sum(parts),
                        whole=whole,
                        total=total,
                        why=why,
                    ),
                    index,
                    f"/usage/{position}/{part[-1]}",
                )
            counts = _counts(entry, ("inputTokens", "outputTokens", "totalTokens"))
            if counts is not None and counts[0] + counts[1] != counts[2]:
                self._report(
                    LINT_USAGE_ARITHMETIC(
                        "total", position=position, total=counts[2], sum=counts[0] + counts[1]
                    ),
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
                LINT_RUN_REPORT(
                    run_id=_short(self._run_id), total=sum(findings.values()), counts=counts
                ),
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
                    LINT_INTERRUPT_OUTCOME(
                        "repeated-id", interrupt_id=_short(interrupt_id), where=where
                    ),
                    index,
                    where + "/id",
                )
            owners.setdefault(interrupt_id, interrupt.get("subagentRunId"))
            call_id = interrupt.get("toolCallId")
            if call_id is not None and call_id not in self._calls:
                self._report(
                    LINT_INTERRUPT_UNKNOWN_CALL(
                        interrupt_id=_short(interrupt_id), call_id=_short(call_id), where=where
                    ),
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
                    LINT_INTERRUPT_OUTCOME(
                        sub=_short(sub), interrupt_id=_short(interrupt_id), problem=problem
                    ),
                    index,
                    "/outcome/interrupts",
                )

    def _check_suspended(self, index: int, pointer: str) -> None:
        """A run whose subagent suspended on interrupts does not end as success."""
        waiting = [(sub, ids) for sub, ids in self._suspended.items() if ids]
        if waiting:
            sub, ids = waiting[0]
            self._report(
                LINT_INTERRUPT_OUTCOME(
                    "finished", sub=_short(sub), interrupts=_ids(ids[:_IDS_SHOWN], len(ids))
                ),
                index,
                pointer,
            )

    def _check_pending_named(self, named: list[Any], index: int) -> None:
        """pendingToolCallIds, when sent, is exactly the calls the run left unanswered."""
        unanswered = [call for call, answered in self._run_calls.items() if not answered]
        if len(set(named)) != len(named) or set(named) != set(unanswered):
            self._report(
                LINT_PENDING_INEXACT(
                    named=_ids(named[:_IDS_SHOWN], len(named)),
                    unanswered=_ids(unanswered[:_IDS_SHOWN], len(unanswered)) or "none",
                ),
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
                LINT_PENDING_UNLISTED(
                    calls=_ids(orphans[:_IDS_SHOWN], len(orphans)), tools=", ".join(names[:5])
                ),
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
                LINT_PENDING_OMITTED(calls=_ids(waiting[:_IDS_SHOWN], len(waiting))),
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
            LINT_MESSAGE_ID_REUSED(
                type=event["type"], what=what, message_id=_short(message_id), kind=kind
            ),
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
                LINT_REOPEN_DISAGREES(
                    type=event["type"], what=what, item=_short(item), differing="; ".join(differing)
                ),
                index,
                "",
            )

    def _restreamed(self, kind: str, what: str, item: Any, index: int, pointer: str) -> None:
        self._report(
            LINT_HISTORY_RESTREAMED(kind=kind, what=what, item=_short(item)),
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
                LINT_RESULT_BEFORE_END(call_id=_short(call_id)),
                index,
                "/toolCallId",
            )
        elif call is None and self._input_known:
            self._report(
                LINT_RESULT_UNKNOWN_CALL(call_id=_short(call_id)),
                index,
                "/toolCallId",
            )
        elif call is None:
            self._report(
                LINT_RESULT_UNSEEN(call_id=_short(call_id)),
                index,
                "/toolCallId",
            )
        if call is not None and call.get("toolCallName") in self._frontend_tools:
            self._report(
                LINT_RESULT_FRONTEND(
                    call_id=_short(call_id), tool=_short(call.get("toolCallName"))
                ),
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
                LINT_SECOND_RESULT(
                    message_id=_short(message_id),
                    by=by,
                    call_id=_short(call_id),
                    pointer=pointer,
                    earlier=_short(earlier),
                ),
                index,
                pointer,
            )

    # -- snapshots ----------------------------------------------------------------


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
_START_KINDS = {"TEXT_MESSAGE_START": "text", "REASONING_MESSAGE_START": "reasoning"}
_MESSAGE_ENDS = frozenset({"TEXT_MESSAGE_END", "REASONING_MESSAGE_END"})
_POSITIONS = list(range(4096))


def _positions(count: int) -> list[int] | range:
    """``range(count)`` for ``compress``; for a batch of up to 4,096 events, a list made
    once, so iterating it makes no int objects (measured: 84 instructions an event
    against 168 for the range)."""
    return _POSITIONS if count <= len(_POSITIONS) else range(count)


def _counts(entry: dict[str, Any], names: tuple[str, ...]) -> list[int] | None:
    """The named counts of a usage entry, or ``None`` unless every one is reported."""
    counts = [count for name in names if type(count := entry.get(name)) is int]
    return counts if len(counts) == len(names) else None
