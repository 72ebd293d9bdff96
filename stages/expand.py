"""expand — the chunked form becomes the start/content/end events it stands for.

``TEXT_MESSAGE_CHUNK``, ``TOOL_CALL_CHUNK`` and ``REASONING_MESSAGE_CHUNK`` are
a compact spelling of the triad (``/spec/1.1/basic/patterns/streaming``, "The
chunked form"); verification and application code only ever see the triad.

- **The first chunk** of an item must carry what opening it requires:
  ``messageId``, or ``toolCallId`` and ``toolCallName``. A missing one is fatal;
  nothing is invented. An absent ``role`` is left absent on the synthesized
  ``TEXT_MESSAGE_START`` (it means ``assistant`` there too).
- **A continuation** may repeat an opener field only with the value the opener
  established — ``assistant`` for a message opened without a role. A
  conflicting repeat is fatal, and so is a field the opener did not set: no
  continuation event could carry it, so accepting it would lose it.
- **Lanes**: each owner (the parent agent, or one ``subagentRunId``) has at most
  one open chunk stream. A tagged chunk goes to its tag's lane; an untagged one
  naming an open item continues it wherever it is; one with neither id nor tag
  continues the parent's open stream of its kind, else the only open stream of
  its kind, and is rejected as ambiguous when several subagents have one.
- **Closing** ("Closing a chunk stream"): the ``*_END`` is synthesized, just
  before the event that ends the stream, when a chunk opens another item in the
  lane; when a message, tool-call, step, state, custom or reasoning event
  arrives in the lane (``RAW``, ``ACTIVITY_*``, ``REASONING_ENCRYPTED_VALUE``
  and ``SUBAGENT_STARTED`` stand aside); when ``RUN_STARTED``, ``RUN_FINISHED``,
  ``RUN_ERROR`` or ``MESSAGES_SNAPSHOT`` arrives (every lane); and when the
  owning subagent's ``SUBAGENT_FINISHED`` or ``SUBAGENT_ERROR`` arrives.
- **End of stream** closes nothing: a chunk stream can only still be open when
  its run is (every run-level event closes every lane), and a truncated run
  gets nothing synthesized (``/spec/1.1/basic/transports``, Truncation) — a
  made-up ``TOOL_CALL_END`` would claim arguments complete that were cut off.

What a chunk carries reaches the events made from it: deltas, opener fields,
``metadata`` (on each event made from the chunk, "Chunk metadata"),
``rawEvent`` and ``subagentRunId``. Its ``timestamp`` does not: the synthesized
events are not the chunk (``/spec/1.1/basic/processing``, "Where middleware
sits"). A continuation with no delta but metadata or ``rawEvent`` becomes a
content event with an empty delta, so what it carries still reaches the item.

On the canonical order enforce has already judged every chunk; a chunk that
reaches this stage malformed (expansion moved before enforce) is rejected,
never repaired.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from itertools import compress, islice
from typing import Any, ClassVar

from agui_pipeline.batch import Batch, Event, empty_batch, type_table
from agui_pipeline.catalog import (
    EXPAND_AMBIGUOUS,
    EXPAND_CONFLICTING_REPEAT,
    EXPAND_FIRST_CHUNK,
    EXPAND_MALFORMED_CHUNK,
    EXPAND_OWNER_CONFLICT,
)
from agui_pipeline.errors import StreamRejected
from agui_pipeline.stage import Stage, StreamContext, reject_after

Owner = str | None
"""A lane: the ``subagentRunId`` that owns it, ``None`` for the parent agent."""

_ABSENT: Any = object()
"""``dict.get`` default telling an absent member from one sent as ``null``."""


class _Kind:
    """One chunk family: its event types, identifier and opener fields."""

    __slots__ = ("chunk", "content", "end", "id_key", "noun", "opener", "shape", "start")

    def __init__(
        self, family: str, id_key: str, noun: str, opener: tuple[tuple[str, str | None], ...]
    ) -> None:
        self.chunk = f"{family}_CHUNK"
        self.start = f"{family}_START"
        self.content = f"{family}_{'ARGS' if family == 'TOOL_CALL' else 'CONTENT'}"
        self.end = f"{family}_END"
        self.id_key = id_key
        self.noun = noun
        self.opener = opener
        """Fields the first chunk establishes and a continuation may only repeat,
        each with the value its absence establishes (``None``: no value)."""
        self.shape: dict[str, type] = {
            key: str for key in (id_key, *(key for key, _ in opener), "delta", "subagentRunId")
        }
        """The type of each known member; ``rawEvent`` (``object``) is any value but null."""
        self.shape.update(metadata=dict, rawEvent=object)


TEXT = _Kind("TEXT_MESSAGE", "messageId", "text message", (("role", "assistant"), ("name", None)))
TOOL = _Kind(
    "TOOL_CALL", "toolCallId", "tool call", (("toolCallName", None), ("parentMessageId", None))
)
REASONING = _Kind("REASONING_MESSAGE", "messageId", "reasoning message", ())
KINDS = (TEXT, TOOL, REASONING)


class _Open:
    """A chunk stream being assembled: the item, its owner and its opener's values."""

    __slots__ = ("fields", "id", "kind", "owner")

    def __init__(self, kind: _Kind, item_id: str, owner: Owner, fields: dict[str, Any]) -> None:
        self.kind = kind
        self.id = item_id
        self.owner = owner
        self.fields = fields


class _Verb(Enum):
    """What an event type does to the lanes."""

    CHUNK = "chunk"
    """A chunk: opens or continues its lane's chunk stream."""
    RUN = "run"
    """A run's start or end, or a snapshot: every lane closes."""
    TERMINAL = "terminal"
    """A subagent's end: its own lane closes."""
    LANE = "lane"
    """Any other event of a lane (a step, state, a custom event): that lane closes."""
    ITEM = "item"
    """An explicit item event: the lane of its item closes."""


class _Effect(Enum):
    """What an explicit item event does to its item."""

    OPENS = "opens"
    CONTINUES = "continues"
    CLOSES = "closes"


_SPAN = "span"
"""Reasoning spans: their own namespace of ids, no chunk form."""


@dataclass(frozen=True, slots=True)
class _Action:
    """What one event type does: its verb, and for an item event the namespace and id key
    it is matched by and its effect on the item (for the owner record)."""

    verb: _Verb
    family: _Kind | None = None
    """The chunk family a chunk belongs to."""
    namespace: _Kind | str | None = None
    """An item event's namespace of ids: its family, or ``_SPAN``."""
    id_key: str = ""
    effect: _Effect | None = None
    forgets_owners: bool = False
    """A run event after which item ownership is forgotten (it is run-scoped)."""


_CHUNK, _RUN, _TERMINAL, _LANE, _ITEM = _Verb
_OPENS, _CONTINUES, _CLOSES = _Effect


def _item(namespace: _Kind | str, id_key: str, effect: _Effect) -> _Action:
    return _Action(_ITEM, namespace=namespace, id_key=id_key, effect=effect)


_ACTIONS: dict[str, _Action] = {
    **{kind.chunk: _Action(_CHUNK, family=kind) for kind in KINDS},
    **{kind.start: _item(kind, kind.id_key, _OPENS) for kind in KINDS},
    **{kind.content: _item(kind, kind.id_key, _CONTINUES) for kind in KINDS},
    **{kind.end: _item(kind, kind.id_key, _CLOSES) for kind in KINDS},
    "TOOL_CALL_RESULT": _item(TOOL, "toolCallId", _CONTINUES),
    "REASONING_START": _item(_SPAN, "messageId", _OPENS),
    "REASONING_END": _item(_SPAN, "messageId", _CLOSES),
    "RUN_STARTED": _Action(_RUN, forgets_owners=True),
    "RUN_FINISHED": _Action(_RUN, forgets_owners=True),
    "RUN_ERROR": _Action(_RUN, forgets_owners=True),
    "MESSAGES_SNAPSHOT": _Action(_RUN),
    "SUBAGENT_FINISHED": _Action(_TERMINAL),
    "SUBAGENT_ERROR": _Action(_TERMINAL),
    "STEP_STARTED": _Action(_LANE),
    "STEP_FINISHED": _Action(_LANE),
    "STATE_SNAPSHOT": _Action(_LANE),
    "STATE_DELTA": _Action(_LANE),
    "CUSTOM": _Action(_LANE),
    # RAW, ACTIVITY_SNAPSHOT, ACTIVITY_DELTA, REASONING_ENCRYPTED_VALUE and
    # SUBAGENT_STARTED stand aside, as does a type this table does not know.
}

_IDLE = type_table(
    {
        event_type: action
        for event_type, action in _ACTIONS.items()
        if action.verb is _CHUNK
        or (action.verb is _ITEM and action.effect is not _CONTINUES)
        or action.forgets_owners
    }
)
"""What matters while no chunk stream is open: a chunk opening one, and the
events that change the record of who owns an explicitly opened item."""


class Expand(Stage):
    """Chunks in, start/content/end out; every other event passes unchanged."""

    name: ClassVar[str] = "expand"

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)
        self._lanes: dict[Owner, _Open] = {}
        """The open chunk stream of each lane, in the order they opened."""
        self._by_id: dict[tuple[Any, str], _Open] = {}
        self._by_kind: dict[_Kind, dict[Owner, _Open]] = {kind: {} for kind in KINDS}
        self._owners: dict[tuple[Any, str], str] = {}
        """Subagent-owned items opened explicitly, so that an untagged continuation
        of one is placed in its owner's lane (``/spec/1.1/events/subagents``,
        Ownership). Parent-owned items are the default and not recorded."""

    async def process(self, batch: Batch) -> Batch:
        events = batch.events
        start = 0 if self._lanes else self._until_chunk(batch)
        if start == len(events):
            return batch  # no chunk, nothing open: the batch passes as it is
        indices = batch.indices
        out, out_indices = events[:start], indices[:start]
        try:
            for position in range(start, len(events)):
                self._expand(events[position], indices[position], out, out_indices)
        except StreamRejected as rejection:
            raise reject_after(Batch(out, out_indices), rejection) from None
        return Batch(out, out_indices)

    def step(self, event: Event, kind: Any, index: int) -> Event | Batch:
        """One event of the engine's fused pass (``_engine/chain.py``): what :meth:`process`
        makes of a batch of this event alone — the event, or the events it became."""
        if not self._lanes:
            action = _IDLE.get(kind) if type(kind) is str else None
            if action is None:
                return event
            if action.verb is not _CHUNK:
                self._record_owner(action, event)
                return event
        out: list[Event] = []
        out_indices: list[int] = []
        try:
            self._expand(event, index, out, out_indices)
        except StreamRejected as rejection:
            raise reject_after(Batch(out, out_indices), rejection) from None
        if len(out) == 1 and out[0] is event:
            return event
        return Batch(out, out_indices)

    def _expand(self, event: Event, index: int, out: list[Event], out_indices: list[int]) -> None:
        """Append what ``event`` becomes to ``out``: itself, perhaps after the end of a chunk
        stream it closes, or the events a chunk stands for."""
        event_type = event.get("type")
        action = _ACTIONS.get(event_type) if type(event_type) is str else None
        if action is None:
            out.append(event)
            out_indices.append(index)
        elif action.verb is _CHUNK:
            assert action.family is not None
            self._chunk(action.family, event, index, out, out_indices)
        else:
            self._other(action, event, index, out, out_indices)
            out.append(event)
            out_indices.append(index)

    def _until_chunk(self, batch: Batch) -> int:
        """The position of the first chunk, keeping the owner record up to date before it."""
        events = batch.events
        found: Sequence[Any] = batch.by_type(_IDLE)  # the deltas, most events, have no action
        for position in compress(range(len(found)), found):
            action = found[position]
            if action.verb is _CHUNK:
                return position
            self._record_owner(action, events[position])
        return len(events)

    async def finish(self) -> Batch:
        """Nothing: a stream can only end with a chunk stream open when its run is
        open too, and a truncated run gets nothing synthesized."""
        return empty_batch()

    # -- events other than chunks ------------------------------------------------

    def _other(
        self,
        action: _Action,
        event: Event,
        index: int,
        out: list[Event],
        out_indices: list[int],
    ) -> None:
        verb = action.verb
        if verb is _ITEM:
            namespace, effect = action.namespace, action.effect
            item_id = event.get(action.id_key)
            tag = event.get("subagentRunId")
            if type(tag) is not str:
                tag = None
            if type(item_id) is not str:
                if self._lanes:
                    self._close(tag, index, out, out_indices)
                return
            key = (namespace, item_id)
            lane = tag
            if lane is None and self._lanes:
                # An untagged continuation belongs to whoever owns its item; an
                # explicit event naming an item a chunk stream is assembling
                # ends that stream ("The chunked form").
                open_stream = self._by_id.get(key)
                lane = open_stream.owner if open_stream else self._owners.get(key)
            if effect is not _CONTINUES:
                self._record_owner(action, event)
            if self._lanes:
                self._close(lane, index, out, out_indices)
        elif verb is _LANE:
            if self._lanes:
                tag = event.get("subagentRunId")
                self._close(tag if type(tag) is str else None, index, out, out_indices)
        elif verb is _TERMINAL:
            tag = event.get("subagentRunId")
            if self._lanes and type(tag) is str:
                self._close(tag, index, out, out_indices)
        else:  # _RUN: every lane closes, in the order the streams opened
            for lane in list(self._lanes):
                self._close(lane, index, out, out_indices)
            if action.forgets_owners:
                self._record_owner(action, event)

    def _record_owner(self, action: _Action, event: Event) -> None:
        """Note who owns an explicitly opened item, forget a closed one; a run's end
        forgets them all (ownership is run-scoped)."""
        owners = self._owners
        if action.verb is _RUN:
            owners.clear()
            return
        namespace, effect = action.namespace, action.effect
        item_id, tag = event.get(action.id_key), event.get("subagentRunId")
        if type(item_id) is not str:
            return
        if effect is _OPENS and type(tag) is str:
            owners[namespace, item_id] = tag
        elif owners:
            owners.pop((namespace, item_id), None)

    def _close(self, lane: Owner, index: int, out: list[Event], out_indices: list[int]) -> None:
        """Synthesize the ``*_END`` of the lane's open chunk stream, if it has one."""
        stream = self._lanes.pop(lane, None)
        if stream is None:
            return
        kind = stream.kind
        del self._by_id[kind, stream.id]
        del self._by_kind[kind][lane]
        end: Event = {"type": kind.end, kind.id_key: stream.id}
        if lane is not None:
            end["subagentRunId"] = lane
        out.append(end)
        out_indices.append(index)
        self.ctx.counters.synthesized += 1

    # -- chunks ----------------------------------------------------------------------

    def _chunk(
        self, kind: _Kind, event: Event, index: int, out: list[Event], out_indices: list[int]
    ) -> None:
        # Each member is type-checked where it is read: on the canonical order
        # enforce has done so already, and this is one comparison per member.
        tag = event.get("subagentRunId", _ABSENT)
        if type(tag) is not str:
            if tag is not _ABSENT:
                raise self._malformed(kind, index, "subagentRunId", tag)
            tag = None
        item_id = event.get(kind.id_key, _ABSENT)
        if type(item_id) is str:
            stream = self._by_id.get((kind, item_id))
            if stream is None:
                self._open(kind, item_id, tag, event, index, out, out_indices)
                return
            if tag is not None and tag != stream.owner:
                raise self._owner_conflict(stream, tag, index)
        elif item_id is not _ABSENT:
            raise self._malformed(kind, index, kind.id_key, item_id)
        else:
            stream = self._by_kind[kind].get(None) if tag is None else None
            if stream is None:
                stream = self._resolve(kind, tag, index)
        # A continuation: opener fields may only be repeated, and it makes the
        # content event if it carries anything to deliver.
        for key, absent in kind.opener:
            if key in event:
                value, established = event[key], stream.fields[key]
                if type(value) is not str:
                    raise self._malformed(kind, index, key, value)
                if value != (absent if established is None else established):
                    raise self._conflict(stream, key, value, index)
        delta = event.get("delta", _ABSENT)
        if type(delta) is not str:
            if delta is not _ABSENT:
                raise self._malformed(kind, index, "delta", delta)
            delta = "" if "metadata" in event or "rawEvent" in event else None
        counters = self.ctx.counters
        if delta is not None:
            content: Event = {"type": kind.content, kind.id_key: stream.id, "delta": delta}
            self._carry(kind, event, content, index)
            out.append(content)
            out_indices.append(index)
            counters.synthesized += 1
        counters.expanded += 1

    def _open(
        self,
        kind: _Kind,
        item_id: str,
        owner: Owner,
        event: Event,
        index: int,
        out: list[Event],
        out_indices: list[int],
    ) -> None:
        shape = kind.shape
        for key, value in event.items():
            expected = shape.get(key)
            # ``object`` (rawEvent) admits any value but null.
            if (
                expected is not None
                and type(value) is not expected
                and (expected is not object or value is None)
            ):
                raise self._malformed(kind, index, key, value)
        fields = {key: event.get(key) for key, _ in kind.opener}
        if kind is TOOL and fields["toolCallName"] is None:
            raise self.ctx.reject(
                EXPAND_FIRST_CHUNK("tool-call-name", item_id=item_id),
                event_index=index,
                pointer="",
            )
        self._close(owner, index, out, out_indices)
        stream = _Open(kind, item_id, owner, fields)
        self._lanes[owner] = stream
        self._by_id[kind, item_id] = stream
        self._by_kind[kind][owner] = stream
        start: Event = {"type": kind.start, kind.id_key: item_id}
        if kind is REASONING:
            start["role"] = "reasoning"
        for key, _ in kind.opener:
            if key in event:
                start[key] = event[key]
        self._carry(kind, event, start, index)
        out.append(start)
        out_indices.append(index)
        made = 1
        if "delta" in event:
            content: Event = {"type": kind.content, kind.id_key: item_id, "delta": event["delta"]}
            self._carry(kind, event, content, index)
            out.append(content)
            out_indices.append(index)
            made = 2
        counters = self.ctx.counters
        counters.expanded += 1
        counters.synthesized += made

    def _resolve(self, kind: _Kind, tag: Owner, index: int) -> _Open:
        """The open stream a chunk without an identifier continues, when the parent
        agent has none of its kind open ("Closing a chunk stream")."""
        if tag is not None:
            stream = self._lanes.get(tag)
            if stream is not None and stream.kind is kind:
                return stream
            raise self._first_without_id(kind, index, f"subagent {tag!r}'s lane has none open")
        candidates = self._by_kind[kind]
        if len(candidates) == 1:
            return next(iter(candidates.values()))
        if not candidates:
            raise self._first_without_id(kind, index, "none is open")
        lanes = ", ".join(repr(lane) for lane in islice(candidates, 5))
        if len(candidates) > 5:
            lanes += f" and {len(candidates) - 5} more"
        raise self.ctx.reject(
            EXPAND_AMBIGUOUS(chunk=kind.chunk, id_key=kind.id_key, noun=kind.noun, lanes=lanes),
            event_index=index,
            pointer="",
        )

    def _carry(self, kind: _Kind, chunk: Event, made: Event, index: int) -> None:
        """Attribution, metadata and ``rawEvent`` reach each event made from a chunk."""
        if "subagentRunId" in chunk:
            made["subagentRunId"] = chunk["subagentRunId"]
        if "metadata" in chunk:
            metadata = chunk["metadata"]
            if type(metadata) is not dict:
                raise self._malformed(kind, index, "metadata", metadata)
            made["metadata"] = metadata
        if "rawEvent" in chunk:
            raw = chunk["rawEvent"]
            if raw is None:
                raise self._malformed(kind, index, "rawEvent", raw)
            made["rawEvent"] = raw

    # -- judgement --------------------------------------------------------------------

    def _malformed(self, kind: _Kind, index: int, key: str, found: object) -> StreamRejected:
        """A malformed known member: only met when expansion runs before enforce."""
        expected = _EXPECTED[kind.shape[key]]
        return self.ctx.reject(
            EXPAND_MALFORMED_CHUNK(
                expected=expected,
                key=key,
                chunk=kind.chunk,
                found_type=type(found).__name__,
                found=found,
            ),
            event_index=index,
            pointer=f"/{key}",
        )

    def _first_without_id(self, kind: _Kind, index: int, why: str) -> StreamRejected:
        return self.ctx.reject(
            EXPAND_FIRST_CHUNK(chunk=kind.chunk, id_key=kind.id_key, noun=kind.noun, why=why),
            event_index=index,
            pointer="",
        )

    def _conflict(self, stream: _Open, key: str, value: object, index: int) -> StreamRejected:
        kind = stream.kind
        established = stream.fields[key]
        absent = dict(kind.opener)[key]
        if established is not None:
            had = repr(established)
        elif absent is not None:
            had = f"{absent!r}, established by omission (its first chunk carried no /{key})"
        else:
            had = f"none (its first chunk set no /{key}, and a continuation cannot add one)"
        return self.ctx.reject(
            EXPAND_CONFLICTING_REPEAT(
                chunk=kind.chunk, key=key, value=value, noun=kind.noun, id=stream.id, had=had
            ),
            event_index=index,
            pointer=f"/{key}",
        )

    def _owner_conflict(self, stream: _Open, tag: str, index: int) -> StreamRejected:
        owner = "the parent agent" if stream.owner is None else f"subagent {stream.owner!r}"
        kind = stream.kind
        return self.ctx.reject(
            EXPAND_OWNER_CONFLICT(
                chunk=kind.chunk, noun=kind.noun, id=stream.id, owner=owner, tag=tag
            ),
            event_index=index,
            pointer="/subagentRunId",
        )


_EXPECTED = {str: "a string", dict: "an object", object: "any JSON value but null"}
