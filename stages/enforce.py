"""enforce — the line between what the protocol describes and what it does not.

``/spec/1.1/basic/processing``: unrecognised material is not an error, a
malformed known value is.

- An event of an unknown ``type`` is dropped, with a warning naming the type.
- An undescribed property, or an unrecognised union member (a content part
  kind, a source kind, an outcome type, a patch ``op``, a message role in a
  list) or a string outside a closed set (a ``role``), is stripped with a
  warning naming its JSON pointer. In an optional position the field goes; in
  a required position the value containing it goes, up to the nearest
  optional field or list element; inside a list the element goes. When that
  reaches the event itself, the event is dropped with a warning — the answer
  ``/spec/1.1/events/reasoning`` spells out for an unknown ``subtype``.
- A described field holding a value the schema rejects — a wrong type, a
  missing required field, an integer out of range, a ``null`` standing for
  an absent optional field (``/spec/1.1/basic/index``), an outcome that is not
  an object, a malformed JSON Pointer — rejects the stream. No repair, no
  coercion. Within one value a malformed field wins over an unrecognised one,
  so the verdict does not depend on key order.
- Open objects (metadata, ``rawEvent``, ``state``, activity ``content``,
  ``CUSTOM.value``, ``RAW.event``, tool ``parameters``, the members of a JSON
  Patch operation RFC 6902 ignores) are data and are never looked into. That
  an event holds one is what the search for integers past 64 bits reads
  (``IntegerSearch`` in :mod:`.parse`): nowhere else can such an integer,
  a double once decoded, pass the checks.

The checks are compiled once from the ``TypedDict``\\ s in
:mod:`agui_pipeline.events` (:mod:`._checks`); this module is the stage that
applies them, a batch at a time (:meth:`Enforce.process`) or an event at a time
in the engine's fused pass (:meth:`Enforce.step`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from agui_pipeline import _cores
from agui_pipeline._json import MISSING, describe, shown
from agui_pipeline._suggest import did_you_mean
from agui_pipeline.batch import Batch, Event, empty_batch
from agui_pipeline.catalog import (
    ENFORCE_DROPPED,
    ENFORCE_MALFORMED,
    ENFORCE_STRIPPED,
    ENFORCE_UNKNOWN_EVENT,
)
from agui_pipeline.errors import StreamRejected
from agui_pipeline.stage import Stage, StreamContext, reject_after
from agui_pipeline.stages._checks import (
    CLEAN,
    EVENTS,
    Malformed,
    Removals,
    Unrecognised,
    native_checks,
    print_generated,
    scan_any,
    scan_collecting,
    scan_objects,
)
from agui_pipeline.stages.parse import IntegerSearch

# --- the stage --------------------------------------------------------------------------


class Enforce(Stage):
    """Drop unknown events, strip unrecognised members, reject malformed known values."""

    name: ClassVar[str] = "enforce"

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)
        self.integers = IntegerSearch(ctx)
        """The search for integers past 64 bits in the frames enforce's checks choose, which
        the engine hands parse (``core.build``); until then, parse searches every read."""
        native = _cores.native
        self._native = None if native is None else native_checks(native)
        """The native core's batch scan, or ``None`` for the reference's generated one. Only
        the fast check is native: an event it does not pass is judged by :meth:`_judge`."""

    async def process(self, batch: Batch) -> Batch:
        integers = self.integers  # parse's frames of these events, if it left them:
        frames = None if integers.held is None else integers.take(batch)
        native = self._native
        if native is not None:
            start, opened = native.scan(batch.events, batch.types)
            if frames is not None:
                integers.search(batch, frames, opened, start)  # before any judgement
        elif frames is None:
            scan = scan_objects if batch.objects else scan_any
            start = scan(batch.events, batch.types)
        else:  # parse's batch as it made it: its events are dicts
            types: Any = iter(batch.types)  # a list iterator: __length_hint__ is what is left
            opened = []  # the events with open members, by how many follow them
            collecting = scan_collecting()
            start = collecting(batch.events, types, opened.append, types.__length_hint__)
            integers.search(batch, frames, opened, start)  # before any judgement
        if start == len(batch.events):
            return batch  # every event clean: the batch goes on untouched
        return self._judge_from(batch, start)

    def step(self, event: Event, kind: Any, index: int) -> Event | None:
        """One event of the engine's fused pass (``_engine/chain.py``): what :meth:`process`
        makes of a batch of this event alone — the event, perhaps stripped, or ``None``
        when it is dropped."""
        if self.integers.held is not None:  # parse handed a read over: search it now
            self.integers.flush()
        native = self._native
        if native is not None:
            if native.clean(event, kind):
                return event
        else:
            try:
                if CLEAN[kind](event):
                    return event
            except (KeyError, TypeError):  # an unknown or unhashable type: judged below
                pass
        try:
            keep = self._judge(event, index)
        except StreamRejected as rejection:
            raise reject_after(empty_batch(), rejection) from None
        return event if keep else None

    async def finish(self) -> Batch:
        self.integers.flush()
        return empty_batch()

    def _judge_from(self, batch: Batch, start: int) -> Batch:
        """The slow path, from the first event that was not clean."""
        events, indices = batch.events, batch.indices
        out_events, out_indices = events[:start], indices[:start]
        clean = CLEAN
        for position in range(start, len(events)):
            event, index = events[position], indices[position]
            try:
                check = clean.get(event.get("type"))  # type: ignore[arg-type]
            except TypeError:  # an unhashable type value: judged below
                check = None
            if check is None or not check(event):
                try:
                    keep = self._judge(event, index)
                except StreamRejected as rejection:
                    raise reject_after(Batch(out_events, out_indices), rejection) from None
                if not keep:
                    continue
            out_events.append(event)
            out_indices.append(index)
        return Batch(out_events, out_indices)

    def _judge(self, event: Event, index: int) -> bool:
        """Strip ``event`` in place, or say it is dropped (``False``), or reject."""
        ctx = self.ctx
        kind = event.get("type", MISSING)
        if type(kind) is not str:
            raise ctx.reject(
                ENFORCE_MALFORMED("type", kind=describe(kind)),
                event_index=index,
                pointer="/type",
            )
        node = EVENTS.members.get(kind)
        if node is None:
            ctx.report(
                ENFORCE_UNKNOWN_EVENT(
                    kind=shown(kind), suggestion=did_you_mean(kind, EVENTS.members)
                ),
                event_index=index,
                pointer="",
            )
            ctx.counters.dropped += 1
            return False
        removed: Removals = []
        try:
            node.walk(event, "", removed)
        except Malformed as malformed:
            raise ctx.reject(
                malformed.code(
                    "" if malformed.definition else "bare",
                    kind=kind,
                    pointer=malformed.pointer,
                    expected=malformed.expected,
                    received=malformed.received,
                    definition=malformed.definition,
                ),
                event_index=index,
                pointer=malformed.pointer,
            ) from None
        except Unrecognised as unrecognised:
            ctx.report(
                ENFORCE_DROPPED(kind=kind, pointer=unrecognised.pointer, why=unrecognised.why),
                event_index=index,
                pointer=unrecognised.pointer,
            )
            ctx.counters.dropped += 1
            return False
        for pointer, why in removed:
            ctx.report(
                ENFORCE_STRIPPED(pointer=pointer, kind=kind, why=why),
                event_index=index,
                pointer=pointer,
            )
        ctx.counters.stripped += len(removed)
        return True


if __name__ == "__main__":
    import sys

    print_generated(sys.argv[1:])
