"""The unit a stage works on: a :class:`Batch` of events, each with the frame it came from.

A batch is whatever one read of the transport delivered, decoded into events; the
engine never waits to fill one. Events are the plain dicts the JSON decoder made
(:data:`Event`); :mod:`agui_pipeline.events` types them statically.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any, TypeVar

from agui_pipeline.events import EventType

T = TypeVar("T")

Event = dict[str, Any]
"""An event at run time: the plain dict the JSON decoder produced.

:mod:`agui_pipeline.events` has a ``TypedDict`` per event type for static typing.
"""


class Batch:
    """Events in stream order, each with the index of the frame it came from.

    ``indices[i]`` is the position (from 0) of the frame ``events[i]`` was
    read from; an event a stage synthesizes carries the index of the event it
    was made from, so every diagnostic can point back at the bytes.
    ``types``, when given, is each event's ``type`` (see :attr:`types`);
    ``objects`` says every event is known to be a ``dict`` (see :attr:`objects`);
    ``marked``, the events metadata must read (see :attr:`marked`).
    """

    __slots__ = ("_marked", "_objects", "_types", "events", "indices")

    def __init__(
        self,
        events: list[Event],
        indices: list[int],
        types: list[Any] | None = None,
        *,
        objects: bool = False,
        marked: list[int] | None = None,
    ) -> None:
        self.events = events
        self.indices = indices
        self._types = types
        self._objects = objects
        self._marked = marked

    @property
    def types(self) -> list[Any]:
        """Each event's ``type`` member (``None`` where it has none, or is not an object).

        Read once per batch and shared: several stages choose what to do by
        type, and a pass over the events costs as much as the choice. A stage
        that changes an event's ``type`` (or an event) in place and returns the
        same batch calls :meth:`changed`. Your own stages need not: the engine
        forgets both caches after every stage that is not a built-in one, and a
        test (``tests/test_fault_delivery.py``) holds the built-in ones to it.
        """
        types = self._types
        if types is None:
            types = self._types = _types_of(self.events)
        return types

    @property
    def objects(self) -> bool:
        """Every event is known to be a ``dict``: the decoder made the batch from JSON
        objects and no stage has changed it since (enforce then skips asking)."""
        return self._objects

    @property
    def marked(self) -> list[int] | None:
        """The positions of the events the metadata stage must read — those with a
        ``metadata`` member, and those that create or restate items whatever their members —
        when known: the native judge names them as it builds the events (deliver mode), so
        metadata does not test every event in Python. ``None``: not known."""
        return self._marked

    def by_type(self, table: Mapping[str, T], start: int = 0) -> Sequence[T | None]:
        """``table``'s entry for the type of each event from ``start`` on (``None`` for none).

        The batch pre-scan compat, expand, reconcile and lint open with: the
        lookups run in C, and most events (the deltas) have no entry, so the
        stage's own Python loop visits only the few that do
        (``itertools.compress``). A table made by :func:`type_table` has an
        entry for every event type, so one ``itemgetter`` over the batch's types
        reads it into a tuple: measured (callgrind, a 1,000-event batch), 182
        instructions an event against 301 for ``list(map(table.get, ...))``,
        which is the fallback for a type the table lacks (one enforce would
        drop). A type that is not a string has no entry.
        """
        types = self._types
        if types is None:
            types = self.types
        if start:
            types = types[start:]
        try:
            if len(types) > 1:  # itemgetter of one key gives the entry, not a tuple
                try:
                    return itemgetter(*types)(table)  # type: ignore[no-any-return]
                except KeyError:
                    pass
            elif types:
                # One event: what a live read usually carries, asked by four stages.
                # The entry alone, no map and list around it: 5,200 -> 2,500
                # instructions a call (callgrind), 11,000 a live read over httpx.
                return (table.get(types[0]),)
            return list(map(table.get, types))
        except TypeError:  # an unhashable type (a list, an object): only before enforce
            get = table.get
            return [get(kind) if type(kind) is str else None for kind in types]

    def changed(self) -> None:
        """Forget what :attr:`types`, :attr:`objects` and :attr:`marked` knew: events changed
        in place."""
        self._types = None
        self._objects = False
        self._marked = None

    def __len__(self) -> int:
        return len(self.events)

    def before(self, event_index: int | None) -> Batch:
        """The events that came from frames read before ``event_index``."""
        if event_index is None:
            return Batch([], [])
        cut = bisect_left(self.indices, event_index)  # indices never decrease
        return Batch(self.events[:cut], self.indices[:cut])

    def __add__(self, other: Batch) -> Batch:
        return Batch(self.events + other.events, self.indices + other.indices)

    def __repr__(self) -> str:
        return f"Batch({len(self.events)} events, indices {self.indices[:1]}..)"


def type_table(entries: Mapping[str, T]) -> dict[str, T | None]:
    """``entries``, with ``None`` for every AG-UI event type they leave out: a table
    :meth:`Batch.by_type` reads without a miss on any stream enforce passed."""
    table: dict[str, T | None] = dict(_NO_TYPE)
    table.update(entries)
    return table


_NO_TYPE: dict[str, None] = dict.fromkeys(map(str, EventType))
"""Every AG-UI event type, mapped to nothing: made once, since walking the enumeration took
about 10 µs a table, 25 times what copying this one takes (``type_table``, for each stream)."""


_type_of = itemgetter("type")


def read_types(events: list[Event]) -> list[Any] | None:
    """Each event's ``type`` in one pass in C; ``None`` when an event has no ``type`` or
    cannot be indexed by a string (of what a JSON decoder makes, only a non-object)."""
    try:
        return list(map(_type_of, events))
    except (KeyError, TypeError):
        return None


def _types_of(events: list[Event]) -> list[Any]:
    types = read_types(events)
    if types is None:  # an event without a type, or not an object
        return [event.get("type") if type(event) is dict else None for event in events]
    return types


def empty_batch() -> Batch:
    return Batch([], [])
