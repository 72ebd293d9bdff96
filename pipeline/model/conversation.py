"""The Conversation: the messages, state and pending interrupts a stream materialises.

What the conformance corpus observes (``messages``, ``state``) and what an
application renders. Built from delivered events only — after enforcement and
verification — so it trusts their shapes and sequencing, and never alters an
event: everything it keeps that it might later change is its own copy.

Messages are plain dicts in the schema's ``Message`` shapes
(``/spec/1.1/schema#message``):

- ``TEXT_MESSAGE_*`` → a user, system, developer or assistant message
  (``/spec/1.1/events/text-messages``; an absent role is ``assistant``). A
  ``START`` for a message already held reopens it: its established role and
  name stand and content appends.
- ``REASONING_MESSAGE_*`` → a reasoning message (``/spec/1.1/events/reasoning``).
- ``TOOL_CALL_*`` → a ``ToolCall`` on the assistant message ``parentMessageId``
  names, created (with no content) when the consumer holds none; a call with
  no parent gets a message of its own, whose id is the call's
  (``/spec/1.1/events/tool-calls``).
- ``TOOL_CALL_RESULT`` → a tool message with the event's ``messageId``, its
  content a string or a list of parts exactly as sent.
- ``ACTIVITY_SNAPSHOT`` / ``ACTIVITY_DELTA`` → an activity message, created or
  replaced (``replace: false`` leaves an existing one alone), patched in place
  (``/spec/1.1/events/activity``). A delta naming no activity message warns
  and is skipped.
- ``MESSAGES_SNAPSHOT`` → reconciled by id (``/spec/1.1/events/state``): a held
  message is replaced in place, a new one appended in snapshot order, a held
  one the snapshot omits dropped — except activity and reasoning messages,
  unless the snapshot carries any message of that role.
- ``REASONING_ENCRYPTED_VALUE`` → ``encryptedValue`` (and
  ``encryptedValueType``, removed when the event has none) on the message or
  tool call ``entityId`` names; an unknown target warns and the value is dropped.

Metadata is the merged value the metadata stage keeps per item
(``/spec/1.1/basic/metadata``): a message or tool call carries the same dict
object as ``ctx.item_metadata`` does. That stage merges a whole batch before
dispatch sees it, so the metadata is exact at every batch boundary; a handler
dispatch runs in the middle of a batch may already see keys that later events
of the same read carried. Without the metadata stage, items keep only the
stored metadata of messages restated whole.

State (``/spec/1.1/events/state``, ``/spec/1.1/basic/patterns/snapshots``)
starts as the run input's ``state``, or ``{}``. ``STATE_SNAPSHOT`` replaces it
with any JSON value (``null`` and ``false`` too); ``STATE_DELTA`` applies
atomically, in place, with an undo log (:mod:`agui_pipeline.model.patch`): a patch that
does not apply warns and leaves the state exactly as it was.

Pending interrupts are those of the latest ``RUN_FINISHED`` with the
interrupt outcome (``/spec/1.1/basic/patterns/interrupt-resume``), until the
next ``RUN_STARTED`` begins a run. Messages and state accumulate across the
runs on one stream; messages and state of the run input are the starting point.

Cost: a content or argument delta is appended to a list — the same cost at
the millionth delta as at the first — and the pieces are joined once, when the
item closes or the messages are read (reading an open message after every
delta would join it every time: read at ``*_END``, or at the end of a batch).
A run of consecutive deltas to one item is counted against ``max_text_chars``
and ``max_conversation_chars`` once, at its end; a breach is still rejected at
the delta that made it. The text held (content and arguments, all messages
together) is a running count: a tool result adds its content, a
``MESSAGES_SNAPSHOT`` what it carries less what it replaces and drops.
A ``STATE_DELTA`` costs what its operations touch, never a copy of the state.

Interface with dispatch: ``Dispatch`` creates ``ctx.conversation =
Conversation(ctx)`` when ``Options.conversation`` is true (after the metadata
stage has set ``ctx.item_metadata``), and calls :meth:`Conversation.apply`
with each batch — or with consecutive slices of it — before any handler sees
those events. ``apply`` is synchronous and never raises for a hostile stream;
what it cannot apply becomes a warning diagnostic on the context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson
from agui_pipeline._json import copy_json
from agui_pipeline.batch import Batch, Event
from agui_pipeline.catalog import (
    CONVERSATION_ACTIVITY_PATCH,
    CONVERSATION_ACTIVITY_TARGET,
    CONVERSATION_ENCRYPTED_TARGET,
    CONVERSATION_NO_CARRIER,
    CONVERSATION_STATE_PATCH,
    LIMIT_CONVERSATION_CHARS,
    LIMIT_TEXT_CHARS,
)
from agui_pipeline.errors import StreamRejected
from agui_pipeline.model.documents import PatchedDocuments
from agui_pipeline.model.patch import (
    PatchFailed,
    size,
)
from agui_pipeline.stage import StreamContext

Message = dict[str, Any]
"""A message in the schema's ``Message`` shape, discriminated by ``role``."""

_CLIENT_ONLY = ("activity", "reasoning")
_OTHER_THAN_TEXT = frozenset({"activity", "reasoning", "tool"})
"""Roles a text message's start does not continue: it mints a text message in their place."""


class Conversation:
    """Messages, state and pending interrupts, materialised from delivered events."""

    def __init__(self, ctx: StreamContext) -> None:
        self._ctx = ctx
        store = ctx.item_metadata
        self._message_metadata: dict[str, Any] = {} if store is None else store.messages
        self._call_metadata: dict[str, Any] = {} if store is None else store.tool_calls
        self._by_id: dict[str, Message] = {}
        """Every message held, by id, in conversation order (the one store of messages)."""
        self._by_role: dict[Any, dict[str, None]] = {}
        """The ids held, by role, so a snapshot visits only the roles it may drop."""
        self._listed: list[Message] | None = []
        """``_by_id``'s messages as a list, kept while only appends change it."""
        self._calls: dict[str, dict[str, Any]] = {}
        """Every tool call held, by id (on a message, or kept off the list)."""
        self._text: dict[str, _Pieces] = {}
        """Content pieces not yet joined, by message id; the first piece is what was there."""
        self._arguments: dict[str, _Pieces] = {}
        """Argument pieces not yet joined, by tool call id."""
        self._max_text = ctx.limits.max_text_chars
        self._max_chars = ctx.limits.max_conversation_chars
        self._chars = 0
        """Characters of text held, all messages together (:func:`_text_chars` of each; a
        message's pieces count as they are appended), held to ``max_conversation_chars``."""
        run_input = ctx.run_input or {}
        self._documents = PatchedDocuments(ctx, self._activity_size)
        self._state: Any = {}
        if "state" in run_input:
            self._state = self._documents.take_state(run_input["state"], None)
        self.interrupts: list[dict[str, Any]] = []
        """The interrupts the latest run ended with, while no new run has started."""
        messages = run_input.get("messages")
        if type(messages) is list:
            self._restate(messages, complete=False)
        self._apply: dict[str, Callable[[Event, int], None]] = {
            "TEXT_MESSAGE_START": self._text_start,
            "TEXT_MESSAGE_CONTENT": self._content,
            "TEXT_MESSAGE_END": self._message_end,
            "REASONING_MESSAGE_START": self._reasoning_start,
            "REASONING_MESSAGE_CONTENT": self._content,
            "REASONING_MESSAGE_END": self._message_end,
            "REASONING_ENCRYPTED_VALUE": self._encrypted_value,
            "TOOL_CALL_START": self._call_start,
            "TOOL_CALL_ARGS": self._call_arguments,
            "TOOL_CALL_END": self._call_end,
            "TOOL_CALL_RESULT": self._call_result,
            "STATE_SNAPSHOT": self._state_snapshot,
            "STATE_DELTA": self._state_delta,
            "MESSAGES_SNAPSHOT": self._messages_snapshot,
            "ACTIVITY_SNAPSHOT": self._activity_snapshot,
            "ACTIVITY_DELTA": self._activity_delta,
            "RUN_STARTED": self._run_started,
            "RUN_FINISHED": self._run_finished,
        }

    # -- reading ------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """The messages in order, content complete (read-only: the Conversation's own list)."""
        self._join()
        if self._listed is None:
            self._listed = list(self._by_id.values())
        return self._listed

    def message(self, message_id: str) -> Message | None:
        """The message with this id, content complete, or ``None``."""
        message = self._by_id.get(message_id)
        pieces = self._text.pop(message_id, None)
        if message is not None and pieces is not None:
            message["content"] = "".join(pieces)
        if message is not None and self._arguments:
            for call in message.get("toolCalls") or ():
                if type(call) is dict:
                    self._join_arguments(call.get("id"))
        return message

    @property
    def state(self) -> Any:
        """The current state: any JSON value."""
        return self._state

    def to_dict(self) -> dict[str, Any]:
        return {"messages": self.messages, "state": self._state, "interrupts": self.interrupts}

    # -- applying -------------------------------------------------------------------

    def apply_event(self, event: Event, index: int) -> None:
        """Apply one delivered event, from frame ``index``: :meth:`apply` of a batch of it,
        without the batch (dispatch keeps the Conversation one event ahead of a handler)."""
        apply_one = self._apply.get(event["type"])
        if apply_one is not None:
            apply_one(event, index)

    def apply(self, batch: Batch) -> None:
        """Apply delivered events in order (synchronous; called by dispatch per batch)."""
        if len(batch.events) == 1:
            # A live read's one event: its handler, as a run of one would end, without
            # the run's bookkeeping (``_content`` grows an item as ``_end_run`` would).
            apply_one = self._apply.get(batch.types[0])
            if apply_one is not None:
                apply_one(batch.events[0], batch.indices[0])
            return
        table, text, arguments, indices = self._apply, self._text, self._arguments, batch.indices
        # The commonest events, deltas to an item already growing, take a short path
        # (``_grow`` inlined). Consecutive deltas to one item form a run: appended one
        # by one from ``run[mark]`` on, counted and held to max_text_chars once, when
        # the run ends. ``done``: the position in the batch of the run's first event,
        # or of the event at hand when no run is open.
        run, run_id, run_in, mark, done = _NO_RUN, None, None, 0, 0
        for event, kind in zip(batch.events, batch.types, strict=True):
            if kind == "TEXT_MESSAGE_CONTENT" or kind == "REASONING_MESSAGE_CONTENT":
                item_id, held = event["messageId"], text
            elif kind == "TOOL_CALL_ARGS":
                item_id, held = event["toolCallId"], arguments
            else:
                held = None
            if held is not None and "metadata" not in event:
                if held is run_in and item_id == run_id:
                    run.append(event["delta"])
                    continue
                if run_in is not None:
                    done = self._end_run(run, mark, done, indices)
                    run, run_in = _NO_RUN, None
                pieces = held.get(item_id)
                if pieces is None:
                    opened = self._open_text if held is text else self._open_arguments
                    pieces = opened(item_id)
                if pieces is not None:
                    run, run_id, run_in, mark = pieces, item_id, held, len(pieces)
                    pieces.append(event["delta"])
                    continue
            if run_in is not None:
                done = self._end_run(run, mark, done, indices)
                run, run_in = _NO_RUN, None
            apply = table.get(kind)
            if apply is not None:
                apply(event, indices[done])
            done += 1
        if run_in is not None:
            self._end_run(run, mark, done, indices)

    def _end_run(self, run: _Pieces, mark: int, done: int, indices: list[int]) -> int:
        """Count a run of deltas into its item's length; the position after the run."""
        added = len("".join(run[mark:]))  # one join: cheaper than len() per piece
        length = run.length + added
        chars = self._chars + added
        if length > self._max_text or chars > self._max_chars:
            raise self._too_long_in_run(run, mark, done, indices)
        run.length = length
        self._chars = chars
        after = done + len(run) - mark
        if len(run) - run.joined > _JOIN_AT:
            run.join_tail()
        return after

    def _too_long_in_run(
        self, run: _Pieces, mark: int, done: int, indices: list[int]
    ) -> StreamRejected:
        """The rejection ``_grow`` would have raised: at the delta that crossed the limit,
        the pieces as they were there (the run's later deltas taken back)."""
        crossed = mark
        added = len(run[crossed])
        room = min(self._max_text - run.length, self._max_chars - self._chars)
        while added <= room:
            crossed += 1
            added += len(run[crossed])
        del run[crossed + 1 :]
        run.length += added
        self._chars += added
        return self._too_long(run, indices[done + crossed - mark])

    # text and reasoning messages

    def _text_start(self, event: Event, index: int) -> None:
        message_id = event["messageId"]
        message = held = self._by_id.get(message_id)
        if message is None or message.get("role") in _OTHER_THAN_TEXT:
            message = {"id": message_id, "role": event.get("role", "assistant"), "content": ""}
            if "name" in event:
                message["name"] = event["name"]
            _attribute(message, event)
            if held is None:
                self._append(message)
            else:
                self._replace(message)
        elif "content" not in message:  # an assistant message a tool call made
            message["content"] = ""
        if "metadata" in event:
            self._attach(message, message_id)

    def _reasoning_start(self, event: Event, index: int) -> None:
        message_id = event["messageId"]
        message = held = self._by_id.get(message_id)
        if message is None or message.get("role") != "reasoning":
            message = {"id": message_id, "role": "reasoning", "content": ""}
            _attribute(message, event)
            if held is None:
                self._append(message)
            else:
                self._replace(message)
        if "metadata" in event:
            self._attach(message, message_id)

    def _content(self, event: Event, index: int) -> None:
        message_id = event["messageId"]
        pieces = self._text.get(message_id) or self._open_text(message_id)
        if pieces is None:
            return
        self._grow(pieces, event["delta"], index)
        if "metadata" in event:
            self._message_metadata_of(event, index)

    def _open_text(self, message_id: str) -> _Pieces | None:
        """A message's content pieces, started from what it holds; ``None``: it holds none."""
        message = self._by_id.get(message_id)
        if message is None or type(message.get("content", "")) is not str:
            return None  # a snapshot dropped it (or restated it without text content)
        pieces = self._text[message_id] = _Pieces(message.get("content", ""))
        return pieces

    def _grow(self, pieces: _Pieces, delta: str, index: int) -> None:
        pieces.append(delta)
        pieces.length += len(delta)
        self._chars += len(delta)
        if pieces.length > self._max_text or self._chars > self._max_chars:
            raise self._too_long(pieces, index)
        if len(pieces) - pieces.joined > _JOIN_AT:
            pieces.join_tail()

    def _too_long(self, pieces: _Pieces, index: int) -> StreamRejected:
        if pieces.length > self._max_text:
            return self._ctx.reject(
                LIMIT_TEXT_CHARS(length=pieces.length, max_text=self._max_text),
                event_index=index,
                pointer="/delta",
            )
        return self._too_much_text(self._chars, index, "/delta")

    def _too_much_text(self, chars: int, index: int | None, pointer: str) -> StreamRejected:
        return self._ctx.reject(
            LIMIT_CONVERSATION_CHARS(chars=chars, max_chars=self._max_chars),
            event_index=index,
            pointer=pointer,
        )

    def _message_end(self, event: Event, index: int) -> None:
        self.message(event["messageId"])  # join now: only open messages hold pieces
        self._message_metadata_of(event, index)

    def _message_metadata_of(self, event: Event, index: int) -> None:
        if "metadata" in event:
            message = self._by_id.get(event["messageId"])
            if message is not None:
                self._attach(message, event["messageId"])

    def _encrypted_value(self, event: Event, index: int) -> None:
        entity_id, subtype = event["entityId"], event["subtype"]
        target: dict[str, Any] | None
        if subtype == "tool-call":
            target = self._calls.get(entity_id)
        else:
            target = self._by_id.get(entity_id)
            if target is not None and target.get("role") == "activity":
                target = None  # an activity message carries no encrypted value, by schema
        if target is None:
            what = "tool call" if subtype == "tool-call" else "message"
            self._ctx.report(
                CONVERSATION_ENCRYPTED_TARGET(what=what, entity_id=entity_id),
                event_index=index,
                pointer="/entityId",
            )
            return
        target["encryptedValue"] = event["encryptedValue"]
        if "encryptedValueType" in event:
            target["encryptedValueType"] = event["encryptedValueType"]
        else:  # an old type left on new bytes would mislabel them
            target.pop("encryptedValueType", None)

    # tool calls

    def _call_start(self, event: Event, index: int) -> None:
        call_id = event["toolCallId"]
        call = self._calls.get(call_id)
        if call is None:
            call = {
                "id": call_id,
                "type": "function",
                "function": {"name": event["toolCallName"], "arguments": ""},
            }
            self._calls[call_id] = call
            parent_id = str(event.get("parentMessageId", call_id))
            parent = self._by_id.get(parent_id)
            if parent is None:
                parent = {"id": parent_id, "role": "assistant"}
                _attribute(parent, event)
                self._append(parent)
            if parent.get("role") == "assistant":
                parent.setdefault("toolCalls", []).append(call)
            else:
                self._ctx.report(
                    CONVERSATION_NO_CARRIER(
                        call_id=call_id, parent_id=parent_id, role=parent.get("role")
                    ),
                    event_index=index,
                    pointer="/parentMessageId",
                )
        if "metadata" in event:
            self._attach_call(call, call_id)

    def _call_arguments(self, event: Event, index: int) -> None:
        call_id = event["toolCallId"]
        pieces = self._arguments.get(call_id) or self._open_arguments(call_id)
        if pieces is None:
            return
        self._grow(pieces, event["delta"], index)
        if "metadata" in event:
            self._call_metadata_of(event, index)

    def _open_arguments(self, call_id: str) -> _Pieces | None:
        """A tool call's argument pieces, started from what it holds; ``None``: no such call."""
        call = self._calls.get(call_id)
        if call is None:
            return None  # a snapshot dropped the message holding it
        pieces = self._arguments[call_id] = _Pieces(call["function"]["arguments"])
        return pieces

    def _call_end(self, event: Event, index: int) -> None:
        self._join_arguments(event["toolCallId"])  # only open calls hold pieces
        self._call_metadata_of(event, index)

    def _call_metadata_of(self, event: Event, index: int) -> None:
        if "metadata" in event:
            call = self._calls.get(event["toolCallId"])
            if call is not None:
                self._attach_call(call, event["toolCallId"])

    def _call_result(self, event: Event, index: int) -> None:
        message_id, content = event["messageId"], event["content"]
        message: Message = {
            "id": message_id,
            "role": "tool",
            "toolCallId": event["toolCallId"],
            "content": list(content) if type(content) is list else content,
        }
        _attribute(message, event)
        held = self._by_id.get(message_id)
        # _text_chars(message), inline: a result is a common event, and a new message
        chars = self._chars + (len(content) if type(content) is str else _json_chars(content))
        if held is not None:
            self.message(message_id)  # joined, so its text is counted as it stands
            chars -= _text_chars(held)
        if chars > self._max_chars:
            raise self._too_much_text(chars, index, "/content")
        self._chars = chars
        if held is None:
            self._append(message)
        else:  # the same message minted again: the later result stands, in place
            self._put(message)
        if message_id in self._message_metadata:
            self._attach(message, message_id)

    # state

    def _state_snapshot(self, event: Event, index: int) -> None:
        self._state = self._documents.take_state(event["snapshot"], index)

    def _state_delta(self, event: Event, index: int) -> None:
        try:
            self._state = self._documents.patch_state(self._state, event["delta"], index)
        except PatchFailed as failure:
            self._ctx.report(
                CONVERSATION_STATE_PATCH(failure=failure, position=failure.position),
                event_index=index,
                pointer=f"/delta/{failure.position}",
            )

    # activity

    def _activity_snapshot(self, event: Event, index: int) -> None:
        message_id = event["messageId"]
        message = held = self._by_id.get(message_id)
        if message is None or message.get("role") != "activity":
            self._documents.charge_activity(event["content"], index, "/content")
            message = {
                "id": message_id,
                "role": "activity",
                "activityType": event["activityType"],
                "content": copy_json(event["content"]),
            }
            _attribute(message, event)
            if held is None:
                self._append(message)
            else:
                self._replace(message)
        elif event.get("replace", True) is not False:
            # Replaces content, type and ownership — not the accumulated metadata.
            self._documents.charge_activity(event["content"], index, "/content")
            message["activityType"] = event["activityType"]
            message["content"] = copy_json(event["content"])
            if "subagentRunId" in event:
                message["subagentRunId"] = event["subagentRunId"]
            else:
                message.pop("subagentRunId", None)
        if message_id in self._message_metadata:
            self._attach(message, message_id)

    def _activity_delta(self, event: Event, index: int) -> None:
        message = self._by_id.get(event["messageId"])
        if message is None or message.get("role") != "activity":
            self._not_activity(event, index, message)
            return
        try:
            message["content"] = self._documents.patch_activity(
                message["content"], event["patch"], index
            )
        except PatchFailed as failure:
            self._ctx.report(
                CONVERSATION_ACTIVITY_PATCH(
                    message_id=event["messageId"], failure=failure, position=failure.position
                ),
                event_index=index,
                pointer=f"/patch/{failure.position}",
            )
            return
        message["activityType"] = event["activityType"]
        if "metadata" in event:
            self._attach(message, event["messageId"])

    def _activity_size(self, limit: int) -> int:
        """The content of every activity message held, measured (stops once past ``limit``)."""
        total = 0
        for message_id in self._by_role.get("activity", ()):
            total += size(self._by_id[message_id].get("content"), limit - total) + 1
            if total > limit:
                break
        return total

    def _not_activity(self, event: Event, index: int, message: Message | None) -> None:
        found = "no such message" if message is None else f"a {message.get('role')} message"
        self._ctx.report(
            CONVERSATION_ACTIVITY_TARGET(
                type=event["type"], message_id=event["messageId"], found=found
            ),
            event_index=index,
            pointer="/messageId",
        )

    # runs

    def _run_started(self, event: Event, index: int) -> None:
        self.interrupts = []

    def _run_finished(self, event: Event, index: int) -> None:
        outcome = event.get("outcome")
        if type(outcome) is dict and outcome.get("type") == "interrupt":
            self.interrupts = list(outcome.get("interrupts") or ())

    # messages restated whole

    def _messages_snapshot(self, event: Event, index: int) -> None:
        self._restate(event["messages"], complete=True, index=index)

    def _restate(
        self, restated: Iterable[Any], *, complete: bool, index: int | None = None
    ) -> None:
        """Reconcile messages restated whole (``/spec/1.1/events/state``, MESSAGES_SNAPSHOT).

        ``complete``: the producer declares its complete set, so held messages it
        omits are dropped (activity and reasoning ones only when it carries that role).
        Costs what the snapshot carries plus what it drops: held messages of a role it
        may not drop are not visited (each message is dropped at most once).
        """
        self._join()
        incoming: dict[str, Message] = {}
        declared: set[Any] = set()
        for position, message in enumerate(restated):
            if type(message) is dict and type(message.get("id")) is str:
                incoming[message["id"]] = self._copy(message, index, position)
                declared.add(message.get("role"))
        dropped: list[str] = []
        if complete:
            for role, ids in self._by_role.items():
                if role not in _CLIENT_ONLY or role in declared:
                    dropped.extend(i for i in ids if i not in incoming)
        held, limit = self._by_id, self._max_chars
        chars = self._chars - sum(_text_chars(held[i]) for i in dropped)
        for message_id, message in incoming.items():
            chars += _text_chars(message)
            if message_id in held:
                chars -= _text_chars(held[message_id])
        if chars > limit:
            raise self._too_much_text(chars, index, "/messages" if complete else "")
        self._chars = chars
        for message_id in dropped:
            self._drop(message_id)
        for message in incoming.values():
            self._put(message)
        self._calls = {
            call["id"]: call
            for role, ids in self._by_role.items()
            if role not in _CLIENT_ONLY
            for message_id in ids
            for call in self._by_id[message_id].get("toolCalls") or ()
            if type(call) is dict and "id" in call
        }

    def _copy(self, message: Message, index: int | None, position: int) -> Message:
        """Our own copy of a restated message: the parts we may later change are copied."""
        copy = dict(message)
        message_id = copy["id"]
        if type(copy.get("toolCalls")) is list:
            copy["toolCalls"] = [copy_json(call) for call in copy["toolCalls"]]
            for call in copy["toolCalls"]:
                merged = self._call_metadata.get(call.get("id"))
                if merged is not None and "metadata" in call:
                    call["metadata"] = merged
        if copy.get("role") == "activity":
            self._documents.charge_activity(
                copy.get("content"), index, f"/messages/{position}/content"
            )
            copy["content"] = copy_json(copy.get("content"))
        if "metadata" in copy:
            merged = self._message_metadata.get(message_id)
            copy["metadata"] = merged if merged is not None else dict(copy["metadata"])
        return copy

    # bookkeeping

    def _append(self, message: Message) -> None:
        """A message not held yet, at the end."""
        message_id, role = message["id"], message.get("role")
        self._by_id[message_id] = message
        ids = self._by_role.get(role)
        if ids is None:  # not setdefault: that would make a dict on every call
            ids = self._by_role[role] = {}
        ids[message_id] = None
        if self._listed is not None:
            self._listed.append(message)

    def _replace(self, message: Message) -> None:
        """``message`` in the place of another kind of message under its id (a producer
        reusing the id, which basic/index forbids and lint reports): the later one stands,
        as a snapshot restating the id would have it."""
        held = self.message(message["id"])  # its pieces joined: its text counted as it stands
        if held is not None:
            self._chars -= _text_chars(held)
        self._put(message)

    def _put(self, message: Message) -> None:
        """``message`` in place of the one held with its id (in its position), or appended."""
        message_id = message["id"]
        held = self._by_id.get(message_id)
        if held is None:
            self._append(message)
            return
        if held.get("role") != message.get("role"):
            del self._by_role[held.get("role")][message_id]
            self._by_role.setdefault(message.get("role"), {})[message_id] = None
        self._by_id[message_id] = message
        self._listed = None

    def _drop(self, message_id: str) -> None:
        message = self._by_id.pop(message_id)
        del self._by_role[message.get("role")][message_id]
        self._listed = None

    def _attach(self, message: Message, message_id: str) -> None:
        merged = self._message_metadata.get(message_id)
        if merged is not None:
            message["metadata"] = merged

    def _attach_call(self, call: dict[str, Any], call_id: str) -> None:
        merged = self._call_metadata.get(call_id)
        if merged is not None:
            call["metadata"] = merged

    def _join(self) -> None:
        for message_id, pieces in self._text.items():
            message = self._by_id.get(message_id)
            if message is not None:
                message["content"] = "".join(pieces)
        self._text.clear()
        for call_id in list(self._arguments):
            self._join_arguments(call_id)

    def _join_arguments(self, call_id: Any) -> None:
        pieces = self._arguments.pop(call_id, None)
        call = self._calls.get(call_id)
        if pieces is not None and call is not None:
            call["function"]["arguments"] = "".join(pieces)


class _Pieces(list[str]):
    """Text not yet joined, and its length so far (held to ``Limits.max_text_chars``).

    Never empty (its first piece is what the item held), so always true. The
    pieces since the last join are joined into one once there are more than
    ``_JOIN_AT`` of them (:meth:`join_tail`): a delta of one character costs
    about 60 bytes as a string of its own, so an open message of a million
    one-character deltas would hold 60 MB for 1 MB of text; joined, it holds
    the text and one string per ``_JOIN_AT`` deltas, and each delta is copied
    once more, not once per join.
    """

    __slots__ = ("joined", "length")

    def __init__(self, first: str) -> None:
        super().__init__((first,))
        self.length = len(first)
        self.joined = 0
        """Leading pieces that are already joins of earlier ones."""

    def join_tail(self) -> None:
        self[self.joined :] = ["".join(self[self.joined :])]
        self.joined += 1


_JOIN_AT = 1024
"""Pieces an open item may hold unjoined (see :class:`_Pieces`)."""

_NO_RUN = _Pieces("")
"""Stands for the run of deltas while none is open (never appended to)."""


def _text_chars(message: Message) -> int:
    """The text of a held message counted against ``max_conversation_chars``: its content
    and its calls' arguments. An activity message's content is the activity budget's,
    not counted here. The same content always counts the same, so what is charged for a
    message is what is given back when it is replaced or dropped."""
    content = message.get("content")
    if type(content) is str:
        chars = len(content)
    elif content is None or message.get("role") == "activity":
        chars = 0
    else:
        chars = _json_chars(content)
    calls = message.get("toolCalls")
    for call in calls if type(calls) is list else ():
        function = call.get("function") if type(call) is dict else None
        arguments = function.get("arguments") if type(function) is dict else None
        if type(arguments) is str:
            chars += len(arguments)
    return chars


def _json_chars(value: Any) -> int:
    """A content that is not a string (a list of parts) counted as its JSON text's bytes.

    What it buys: orjson writes a tool result's few parts some ten times faster than
    :func:`~agui_pipeline.model.patch.size` walks them (whole pipeline: about 20 instructions
    an event, ``python -m benchmarks.instructions``). A value orjson cannot write —
    deeper than 255 levels, or not JSON (a run input made in Python) — is walked."""
    try:
        return len(orjson.dumps(value))
    except orjson.JSONEncodeError:
        return size(value, 2**62)


def _attribute(message: Message, event: Event) -> None:
    if "subagentRunId" in event:
        message["subagentRunId"] = event["subagentRunId"]
