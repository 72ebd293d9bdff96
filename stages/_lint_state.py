"""lint's memory of a stream: what it knows of the items and the current run, how it holds
the run's streamed text, and the checks the snapshot comparison shares with the rest.

Split from ``stages/lint.py`` (the stage: what each event type means to it) so that
neither file holds everything; ``stages/_lint_snapshot.py`` compares a
``MESSAGES_SNAPSHOT`` with what the run streamed. The holding is the hot part: see
:meth:`LintState._hold`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from itertools import compress, groupby, repeat
from operator import is_, itemgetter
from typing import Any

import orjson
from agui_pipeline.batch import Event
from agui_pipeline.catalog import LINT_ARGUMENTS_NOT_JSON, LINT_TEXT_BUDGET, Message
from agui_pipeline.stage import Stage, StreamContext

_MISSING: Any = object()


class LintState(Stage):
    """What lint knows of the stream, its run input and its current run."""

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)
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

    # -- holding the streamed text ---------------------------------------------------

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
            LINT_TEXT_BUDGET(run_id=_short(self._run_id), limit=limit),
            event_index=index,
            pointer="",
        )

    def _report(self, message: Message, index: int | None, pointer: str) -> None:
        self._run_findings[message.code.id] += 1
        self.ctx.report(message, event_index=index, pointer=pointer)

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

    def _check_call(self, call_id: Any) -> None:
        """Once per call per run: the text as streamed (before a snapshot restates it)."""
        if self._new_calls.get(call_id) or call_id not in self._ends:
            return
        self._new_calls[call_id] = True
        text = "".join(self._args.get(call_id, ()))
        if text and _json(text) is _MISSING:
            self._report(
                LINT_ARGUMENTS_NOT_JSON(
                    call_id=_short(call_id),
                    tool_call_name=_short(self._calls[call_id]["toolCallName"]),
                    text=_excerpt(text),
                ),
                self._ends.get(call_id),
                "/toolCallId",
            )


_TEXT_ROLES = frozenset({"assistant", "user", "system", "developer"})
_KINDS = ("text", "reasoning", "tool", "activity")
"""The kinds of message (``_kind``); a run's streamed messages are kept by kind."""
_CLIENT_ONLY = frozenset({"activity", "reasoning"})
"""Kinds a snapshot drops only when it carries that role (the Conversation's rule)."""
_CARRIER: Event = {"role": "assistant"}
"""What ``LintState._messages`` holds for a message only a tool call has named (its parent)."""
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
_TEXT_DELTAS = frozenset({"TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"})
_HOLD_AT = 4096
"""Content deltas a run holds by reference before they are folded into text."""
_HOLD_BYTES = 4 * 1024 * 1024
"""Bytes of the stream read after which the held deltas are folded, however few: what
bounds the held events when each is large."""

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
