"""compat — the compatibility boundary: retired shapes in, current shapes out.

It sees the stream first (``/spec/1.1/basic/processing``, "Where middleware
sits"): a retired shape is unrecognised to enforcement, which would otherwise
drop or strip it, and a retired shape can be a chunk, so nothing may touch the
stream before it.

Always on (``DEPRECATIONS.md``, ``/spec/1.1/basic/versioning`` "Retired
shapes"), each translation with a warning naming the shape, its path and its
replacement:

- ``THINKING_START`` / ``THINKING_END`` → ``REASONING_START`` / ``REASONING_END``,
  and ``THINKING_TEXT_MESSAGE_START`` / ``_CONTENT`` / ``_END`` →
  ``REASONING_MESSAGE_*``. The retired events carried no ``messageId``; the
  boundary assigns one per span and per message (``compat-thinking-<frame>``)
  and carries it to the events that continue them. A legacy span ``title``
  has no place in the reasoning family and is dropped with the warning.
- the listed whole-field ``null`` s become absent fields — that list only: on
  events (``rawEvent``, ``parentMessageId`` on ``TOOL_CALL_START`` and
  ``TOOL_CALL_CHUNK``, ``outcome`` and ``result`` on ``RUN_FINISHED``,
  ``result`` on ``SUBAGENT_FINISHED``) and inside the documents events carry
  (:mod:`agui_pipeline.model.retired`).
- legacy ``binary`` content parts become media parts (:mod:`agui_pipeline.model.retired`).

Version-gated, when ``Options.peer_max_protocol_version`` says the peer is at
or below a shim's version: 0.0.57 drops the ``SUBAGENT_*`` events (a lossy
downgrade, so each drop warns) and strips ``subagentRunId`` from the events
that survive and from the messages and interrupts inside them (lossless: the
work flattens into one thread, said once). The 0.0.45 shim translates
``THINKING_*``, which the always-on boundary already does; 0.0.39 and the
binary upgrade concern the outgoing input (:mod:`agui_pipeline.model.run_input`).

Version negotiation (``/spec/1.1/basic/versioning``, "Version negotiation"):
``RUN_STARTED.protocolVersion`` is compared numerically with the version this
consumer speaks; a newer or uninterpretable one proceeds with a warning, the
same, an older or an absent one is quiet. A ``protocolVersion`` that is not a
string is left for enforcement to reject.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import compress, count, repeat
from typing import Any, ClassVar

from agui_pipeline._json import MISSING, shown
from agui_pipeline.batch import Batch, Event, type_table
from agui_pipeline.catalog import (
    COMPAT_PEER_DROPPED,
    COMPAT_PEER_STRIPPED,
    COMPAT_RETIRED_BINARY,
    COMPAT_RETIRED_EVENT,
    COMPAT_RETIRED_NULL,
    COMPAT_VERSION_NEWER,
    COMPAT_VERSION_UNINTERPRETABLE,
)
from agui_pipeline.model.retired import Note, upgrade_input, upgrade_messages, upgrade_parts
from agui_pipeline.model.versions import (
    GATE_SUBAGENTS,
    PROTOCOL_VERSION,
    SPOKEN,
    at_or_below,
    parse_version,
    peer_version,
)
from agui_pipeline.stage import Stage, StreamContext

_EVENT_NULLS: dict[str, tuple[str, ...]] = {
    "TOOL_CALL_START": ("parentMessageId",),
    "TOOL_CALL_CHUNK": ("parentMessageId",),
    "RUN_FINISHED": ("outcome", "result"),
    "SUBAGENT_FINISHED": ("result",),
}
"""The listed whole-field nulls on events, beyond ``rawEvent`` (any event)."""

_SUBAGENT_EVENTS = frozenset({"SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"})


class Compat(Stage):
    """The always-on compatibility boundary plus the shims the peer's version selects."""

    name: ClassVar[str] = "compat"

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)
        peer = peer_version(ctx.options.peer_max_protocol_version)
        self._peer_setting = ctx.options.peer_max_protocol_version
        self._no_subagents = at_or_below(peer, GATE_SUBAGENTS)
        self._open_span: str | None = None
        """The id assigned to the THINKING span open now, for THINKING_END."""
        self._open_message: str | None = None
        """The id of the THINKING text message open now, for its CONTENT and END."""
        self._strip_reported = False
        self._retyped = False

    async def process(self, batch: Batch) -> Batch:
        events, indices = batch.events, batch.indices
        # Most events need nothing from the boundary. Two C-level passes say which
        # do: their handlers (by type), and whether any carries a rawEvent (it may be
        # the retired 'rawEvent: null', looked for on the exact path).
        found: Sequence[Any] = batch.by_type(_HANDLERS)
        try:
            exact = any(map(dict.__contains__, events, repeat("rawEvent")))
        except TypeError:  # an event that is not an object
            exact = True
        if exact:
            self._each(events, indices)
        else:
            for position in compress(count(), found):
                found[position](self, events[position], indices[position])
        if self._retyped:  # a THINKING_* event became a REASONING_* one
            self._retyped = False
            batch.changed()
        if self._no_subagents:
            return self._without_subagents(batch)
        return batch

    def step(self, event: Event, kind: Any, index: int) -> Event | Batch | None:
        """One event of the engine's fused pass (``_engine/chain.py``): what :meth:`process`
        makes of a batch of this event alone — the event, or a batch when its type changed
        (a retired event translated) or the peer's shim dropped it."""
        if type(kind) is str:
            handler = _HANDLERS.get(kind)
            if handler is not None:
                handler(self, event, index)
        if "rawEvent" in event and event["rawEvent"] is None:
            self._drop_null(event, "rawEvent", f"an event of type {shown(kind)}", index)
        if self._no_subagents:
            self._retyped = False
            return self._without_subagents(Batch([event], [index]))
        if self._retyped:
            self._retyped = False
            return Batch([event], [index])
        return event

    def _each(self, events: list[Event], indices: list[int]) -> None:
        """Event by event: the path for a batch holding anything unusual."""
        handler_for = _HANDLERS.get
        for position, event in enumerate(events):
            kind = event.get("type")
            if type(kind) is str:  # anything else is enforce's to reject
                handler = handler_for(kind)
                if handler is not None:
                    handler(self, event, indices[position])
            if "rawEvent" in event and event["rawEvent"] is None:
                self._drop_null(
                    event, "rawEvent", f"an event of type {shown(kind)}", indices[position]
                )

    # -- THINKING_* → REASONING_* ----------------------------------------------

    def _thinking_start(self, event: Event, index: int) -> None:
        span = self._assign(event, index, None)
        self._open_span = span if type(span) is str else None
        title = event.pop("title", MISSING)
        lost = (
            "" if title is MISSING else f"; its title {shown(title)} was dropped (no replacement)"
        )
        self._translated(event, "THINKING_START", "REASONING_START", index, lost)

    def _thinking_end(self, event: Event, index: int) -> None:
        self._assign(event, index, self._open_span)
        self._open_span = None
        self._translated(event, "THINKING_END", "REASONING_END", index)

    def _thinking_message_start(self, event: Event, index: int) -> None:
        message = self._assign(event, index, None)
        self._open_message = message if type(message) is str else None
        event.setdefault("role", "reasoning")
        self._translated(event, "THINKING_TEXT_MESSAGE_START", "REASONING_MESSAGE_START", index)

    def _thinking_message_content(self, event: Event, index: int) -> None:
        self._assign(event, index, self._open_message)
        self._translated(event, "THINKING_TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", index)

    def _thinking_message_end(self, event: Event, index: int) -> None:
        self._assign(event, index, self._open_message)
        self._open_message = None
        self._translated(event, "THINKING_TEXT_MESSAGE_END", "REASONING_MESSAGE_END", index)

    @staticmethod
    def _assign(event: Event, index: int, open_id: str | None) -> Any:
        """The event's ``messageId``: its own if it has one, else the open one, else a new one.

        A continuation with nothing open gets a fresh id, so verification
        rejects it as naming nothing rather than the boundary inventing what
        it continues.
        """
        if "messageId" not in event:
            event["messageId"] = open_id if open_id is not None else f"compat-thinking-{index}"
        return event["messageId"]

    def _translated(
        self, event: Event, retired: str, replacement: str, index: int, extra: str = ""
    ) -> None:
        event["type"] = replacement
        self._retyped = True
        self.ctx.report(
            COMPAT_RETIRED_EVENT(
                retired=retired,
                replacement=replacement,
                message_id=shown(event["messageId"]),
                extra=extra,
            ),
            event_index=index,
            pointer="",
        )

    # -- whole-field nulls, binary parts ------------------------------------------

    def _event_nulls(self, event: Event, index: int) -> None:
        kind = event["type"]
        for field in _EVENT_NULLS[kind]:
            if event.get(field, MISSING) is None:
                self._drop_null(event, field, kind, index)

    def _drop_null(self, event: Event, field: str, where: str, index: int) -> None:
        del event[field]
        self.ctx.report(
            COMPAT_RETIRED_NULL(field=field, where=where),
            event_index=index,
            pointer=f"/{field}",
        )

    def _note(self, index: int) -> Note:
        def note(kind: str, pointer: str, fields: dict[str, str], lossy: bool) -> None:
            if kind == "null":
                message = COMPAT_RETIRED_NULL("nested", **fields)
            else:
                message = COMPAT_RETIRED_BINARY("lossy" if lossy else "", **fields)
            self.ctx.report(message, event_index=index, pointer=pointer)

        return note

    def _run_started(self, event: Event, index: int) -> None:
        upgrade_input(event.get("input"), "/input", self._note(index))
        self._negotiate(event, index)

    def _messages_snapshot(self, event: Event, index: int) -> None:
        upgrade_messages(event.get("messages"), "/messages", self._note(index))

    def _tool_call_result(self, event: Event, index: int) -> None:
        content = event.get("content")
        if type(content) is list:
            upgrade_parts(content, "/content", self._note(index))

    # -- version negotiation ----------------------------------------------------------

    def _negotiate(self, event: Event, index: int) -> None:
        declared = event.get("protocolVersion")
        if type(declared) is not str:
            return  # absent: a peer from before versions (quiet); not a string: enforce's
        version = parse_version(declared)
        if version is None:
            self.ctx.report(
                COMPAT_VERSION_UNINTERPRETABLE(declared=shown(declared), spoken=PROTOCOL_VERSION),
                event_index=index,
                pointer="/protocolVersion",
            )
        elif version > SPOKEN:
            self.ctx.report(
                COMPAT_VERSION_NEWER(declared=shown(declared), spoken=PROTOCOL_VERSION),
                event_index=index,
                pointer="/protocolVersion",
            )

    # -- the 0.0.57 shim: no subagents ---------------------------------------------------

    def _without_subagents(self, batch: Batch) -> Batch:
        events: list[Event] = []
        indices: list[int] = []
        counters = self.ctx.counters
        for event, index in zip(batch.events, batch.indices, strict=True):
            kind = event.get("type")
            if type(kind) is str and kind in _SUBAGENT_EVENTS:
                counters.dropped += 1
                self.ctx.report(
                    COMPAT_PEER_DROPPED(kind=kind, peer_setting=self._peer_setting),
                    event_index=index,
                    pointer="",
                )
                continue
            stripped = self._strip_attribution(event, index)
            if stripped:
                counters.stripped += stripped
            events.append(event)
            indices.append(index)
        return Batch(events, indices)

    def _strip_attribution(self, event: Event, index: int) -> int:
        """Remove ``subagentRunId`` from the event and the messages/interrupts it carries."""
        paths: list[str] = []
        if "subagentRunId" in event:
            del event["subagentRunId"]
            paths.append("/subagentRunId")
        kind = event.get("type")
        if kind == "MESSAGES_SNAPSHOT":
            _strip_each(event.get("messages"), "/messages", paths)
        elif kind == "RUN_STARTED":
            run_input = event.get("input")
            if type(run_input) is dict:
                _strip_each(run_input.get("messages"), "/input/messages", paths)
        elif kind == "RUN_FINISHED":
            outcome = event.get("outcome")
            if type(outcome) is dict:
                _strip_each(outcome.get("interrupts"), "/outcome/interrupts", paths)
        if paths and not self._strip_reported:
            self._strip_reported = True
            self.ctx.report(
                COMPAT_PEER_STRIPPED(paths=", ".join(paths), peer_setting=self._peer_setting),
                event_index=index,
                pointer=paths[0],
            )
        return len(paths)


def _strip_each(items: Any, base: str, paths: list[str]) -> None:
    if type(items) is not list:
        return
    for position, item in enumerate(items):
        if type(item) is dict and "subagentRunId" in item:
            del item["subagentRunId"]
            paths.append(f"{base}/{position}/subagentRunId")


_HANDLERS: dict[str, Callable[[Compat, Event, int], None] | None] = type_table(
    {
        "THINKING_START": Compat._thinking_start,
        "THINKING_END": Compat._thinking_end,
        "THINKING_TEXT_MESSAGE_START": Compat._thinking_message_start,
        "THINKING_TEXT_MESSAGE_CONTENT": Compat._thinking_message_content,
        "THINKING_TEXT_MESSAGE_END": Compat._thinking_message_end,
        "TOOL_CALL_START": Compat._event_nulls,
        "TOOL_CALL_CHUNK": Compat._event_nulls,
        "SUBAGENT_FINISHED": Compat._event_nulls,
        "RUN_FINISHED": Compat._event_nulls,
        "RUN_STARTED": Compat._run_started,
        "MESSAGES_SNAPSHOT": Compat._messages_snapshot,
        "TOOL_CALL_RESULT": Compat._tool_call_result,
    }
)
"""The event types the boundary looks inside; every other event passes on the fast path."""
