"""metadata — merge each event's ``metadata`` into the item the event builds.

``/spec/1.1/basic/metadata`` ("Merging", "Where each event's metadata
lands"): a consumer MUST merge the metadata of every event making up an item,
key by key, the last write winning for each key, and the merge MUST NOT
recurse — a key's value is replaced outright. The target is the thing the
event builds:

============================================  =====================================
``TEXT_MESSAGE_START`` / ``CONTENT`` / ``END``  the text message (``messageId``)
``REASONING_MESSAGE_*``                        the reasoning message (``messageId``)
``TOOL_CALL_START`` / ``ARGS`` / ``END``        the tool call itself (``toolCallId``),
                                               not the assistant message that owns it
``TOOL_CALL_RESULT``                           the tool message it mints (``messageId``)
``ACTIVITY_SNAPSHOT`` / ``ACTIVITY_DELTA``     the activity message; what accumulated
                                               survives a replacing snapshot
everything else                                nothing: its metadata is its own
============================================  =====================================

Chunks need no entry: expand has already turned them into the events above,
carrying the chunk's metadata (``/spec/1.1/basic/patterns/streaming``, "Chunk
metadata").

Where the merge lands. The page puts the merged value on the *item*; an
event's own ``metadata`` stays "the event's own, visible to middleware and to
whatever observes the stream". So this stage writes nothing onto events —
every delivered event carries exactly the metadata its producer sent — and
keeps the merged value per item in :class:`~agui_pipeline.model.item_metadata.ItemMetadata`
(``ctx.item_metadata``),
which the Conversation puts on the messages and tool calls it materialises.

Stored metadata (``/spec/1.1/basic/metadata``, "Stored metadata"): a message
restated whole — in the run input, or by ``MESSAGES_SNAPSHOT`` — brings its
own stored ``metadata`` (and its tool calls theirs), which later events merge
into. A snapshot drops what the consumer no longer holds under the
reconciliation of ``/spec/1.1/events/state`` (activity and reasoning messages
survive a snapshot that carries none of their role).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from agui_pipeline.batch import Batch, Event
from agui_pipeline.stage import ItemMetadata, Merged, Stage, StreamContext

_MESSAGE, _CALL, _ACTIVITY = 0, 1, 2

_TARGETS: dict[str, int] = {
    "TEXT_MESSAGE_START": _MESSAGE,
    "TEXT_MESSAGE_CONTENT": _MESSAGE,
    "TEXT_MESSAGE_END": _MESSAGE,
    "REASONING_MESSAGE_START": _MESSAGE,
    "REASONING_MESSAGE_CONTENT": _MESSAGE,
    "REASONING_MESSAGE_END": _MESSAGE,
    "TOOL_CALL_RESULT": _MESSAGE,
    "ACTIVITY_SNAPSHOT": _MESSAGE,
    "TOOL_CALL_START": _CALL,
    "TOOL_CALL_ARGS": _CALL,
    "TOOL_CALL_END": _CALL,
    "ACTIVITY_DELTA": _ACTIVITY,
}
"""Event type → which kind of item its metadata merges into."""

ALWAYS_READ = frozenset({"MESSAGES_SNAPSHOT", "ACTIVITY_SNAPSHOT", "REASONING_MESSAGE_START"})
"""Events the stage must see whatever their metadata: they create or restate items. (The
native judge marks these and every event with a ``metadata`` member: ``Batch.marked``.)"""

_CLIENT_ONLY = ("activity", "reasoning")
"""Roles a ``MESSAGES_SNAPSHOT`` without that role does not drop (``/spec/1.1/events/state``)."""


class Metadata(Stage):
    """Accumulates per-item metadata in ``ctx.item_metadata``; passes events through unchanged."""

    name: ClassVar[str] = "metadata"

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)
        self.store = ItemMetadata()
        ctx.item_metadata = self.store
        self._roles: dict[str, str] = {}
        """Role of each activity or reasoning message, by id: the ones a snapshot may keep,
        and the activity messages an ``ACTIVITY_DELTA`` can merge into."""
        self._ids: dict[str, dict[str, None]] = {role: {} for role in _CLIENT_ONLY}
        """The same ids by role, so a snapshot visits only the roles it drops."""
        self._plain: dict[str, None] = {}
        """The ids of the other messages with merged metadata: what every snapshot drops."""
        messages = (ctx.run_input or {}).get("messages")
        if type(messages) is list:
            self._restate(messages, complete=False)

    async def process(self, batch: Batch) -> Batch:
        marked = batch.marked
        if marked is not None:  # the events to read, named by the native judge
            events = batch.events
            for position in marked:
                event = events[position]
                self.step(event, event.get("type"), position)
            return batch
        special = ALWAYS_READ
        for event, kind in zip(batch.events, batch.types, strict=True):
            # The common event carries no metadata and restates nothing: two tests.
            if kind in special:
                self._note(event)
            elif "metadata" in event:
                self._merge(event)
        return batch

    def step(self, event: Event, kind: Any, index: int) -> Event:
        """One event of the engine's fused pass (``_engine/chain.py``), seen as
        :meth:`process` sees each."""
        if kind in ALWAYS_READ:
            self._note(event)
        elif "metadata" in event:
            self._merge(event)
        return event

    def _note(self, event: Event) -> None:
        """An event that creates or restates items whatever its metadata."""
        kind = event["type"]
        if kind == "MESSAGES_SNAPSHOT":
            if type(event.get("messages")) is list:
                self._restate(event["messages"], complete=True)
            return
        self._role(
            event.get("messageId"), "activity" if kind == "ACTIVITY_SNAPSHOT" else "reasoning"
        )
        if "metadata" in event:
            self._merge(event)

    def _merge(self, event: Event) -> None:
        metadata = event["metadata"]
        target = _TARGETS.get(event.get("type"))  # type: ignore[arg-type]
        if type(metadata) is not dict or target is None:
            return  # no merge target: the event's metadata is its own
        if target is _CALL:
            _merge(self.store.tool_calls, event.get("toolCallId"), metadata)
        elif target is _MESSAGE or self._roles.get(event.get("messageId")) == "activity":  # type: ignore[arg-type]
            # An ACTIVITY_DELTA for an activity nothing created is skipped
            # (/spec/1.1/events/activity): it has no item to merge into.
            message_id = event.get("messageId")
            merged = self.store.messages.get(message_id)  # type: ignore[arg-type]
            if merged is not None:
                merged.update(metadata)
                return
            self.store.messages[message_id] = dict(metadata)  # type: ignore[index]
            if message_id not in self._roles:
                self._plain[message_id] = None  # type: ignore[index]

    def _role(self, message_id: Any, role: str | None) -> None:
        """``message_id`` is now of ``role`` (``None``: not an activity or reasoning one)."""
        held = self._roles.get(message_id)
        if held == role:
            return
        if held is not None:
            del self._ids[held][message_id]
            del self._roles[message_id]
        if role is not None:
            self._roles[message_id] = role
            self._ids[role][message_id] = None
            self._plain.pop(message_id, None)

    def _restate(self, restated: Iterable[Any], *, complete: bool) -> None:
        """Messages restated whole: their stored metadata is the new base.

        ``complete`` (a ``MESSAGES_SNAPSHOT``): entries for messages the
        snapshot no longer holds are dropped, as the Conversation drops them.
        """
        messages: dict[str, Merged] = {}
        calls: dict[str, Merged] = {}
        roles: dict[str, str] = {}
        declared: set[Any] = set()
        ids: set[str] = set()
        for message in restated:
            if type(message) is not dict or type(message.get("id")) is not str:
                continue
            message_id, role = message["id"], message.get("role")
            declared.add(role)
            ids.add(message_id)
            if role in _CLIENT_ONLY:
                roles[message_id] = role
            if type(message.get("metadata")) is dict:
                messages[message_id] = dict(message["metadata"])
            for call in message.get("toolCalls") or ():
                if type(call) is dict and type(call.get("metadata")) is dict:
                    calls[call.get("id")] = dict(call["metadata"])  # type: ignore[index]
        store = self.store
        if complete:
            # Costs what the snapshot drops (each entry was made once), never what it
            # keeps: the roles it does not carry are not visited.
            for message_id in self._plain:
                store.messages.pop(message_id, None)
            self._plain.clear()
            for role in _CLIENT_ONLY:
                if role in declared:
                    for message_id in self._ids[role]:
                        store.messages.pop(message_id, None)
                        del self._roles[message_id]
                    self._ids[role] = {}
            for message_id in ids:
                if message_id not in messages:  # restated without metadata: none kept
                    store.messages.pop(message_id, None)
            store.tool_calls.clear()
        for message_id in ids:
            self._role(message_id, roles.get(message_id))
        store.messages.update(messages)
        for message_id in messages:
            if message_id not in self._roles:
                self._plain[message_id] = None
        store.tool_calls.update(calls)


def _merge(table: dict[str, Merged], key: Any, metadata: Merged) -> None:
    """Key by key, last write wins, no recursion (``/spec/1.1/basic/metadata``, "Merging")."""
    merged = table.get(key)
    if merged is None:
        table[key] = dict(metadata)  # a copy: later merges must not touch the event's object
    else:
        merged.update(metadata)
