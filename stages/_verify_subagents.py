"""Verify's tracker of the subagent invocations of the current run
(``/spec/1.1/events/subagents``): which are announced, running and ended, and what the
producer did out of order. Only closing one that is not running is the consumer's
verdict; the rest is reported (``verify.subagent-announcement``)."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from agui_pipeline.batch import Event
from agui_pipeline.catalog import VERIFY_SUBAGENT, VERIFY_SUBAGENT_ORDER, Message
from agui_pipeline.stage import StreamContext


class Invocation(Enum):
    """Where one ``subagentRunId`` stands in the current run."""

    ATTRIBUTED = "attributed"
    """Seen only as a tag on events: never announced (legal)."""
    RUNNING = "running"
    """Announced with ``SUBAGENT_STARTED`` and not yet closed."""
    ENDED = "ended"
    """Closed by ``SUBAGENT_FINISHED`` or ``SUBAGENT_ERROR`` in this run."""


_ATTRIBUTED, _RUNNING, _ENDED = Invocation


class Subagents:
    """The invocations of the current run by id; emptied when the run closes."""

    __slots__ = ("_ctx", "running", "states")

    def __init__(self, ctx: StreamContext) -> None:
        self._ctx = ctx
        self.states: dict[str, Invocation] = {}
        self.running = 0
        """Invocations announced and not yet closed (they count as open items)."""

    def clear(self) -> None:
        self.states.clear()
        self.running = 0

    def still_running(self) -> list[str]:
        return [repr(sub) for sub, state in self.states.items() if state is _RUNNING]

    def attributed(self, tag: str, index: int) -> None:
        """An event other than a subagent's own lifecycle carries ``tag``."""
        state = self.states.get(tag)
        if state is None:
            self.states[tag] = _ATTRIBUTED  # unannounced attribution is legal
        elif state is _ENDED:
            self._out_of_order(
                VERIFY_SUBAGENT_ORDER("after-end", tag=tag),
                index,
                "/subagentRunId",
            )
            self.states[tag] = _ATTRIBUTED  # said once: it is in use again, unannounced

    def started(self, event: Event, index: int, make_room: Callable[[int], None]) -> None:
        """``SUBAGENT_STARTED``; ``make_room`` holds the invocation to the open-item limit."""
        sub = event["subagentRunId"]
        state = self.states.get(sub)
        if state is not None:
            problem = {
                _RUNNING: "is already active",
                _ENDED: "already finished in this run, and an id names one invocation",
                _ATTRIBUTED: "already had events attributed to it; an invocation is announced "
                "before any event attributed to it",
            }[state]
            self._out_of_order(
                VERIFY_SUBAGENT_ORDER(sub=sub, problem=problem),
                index,
                "/subagentRunId",
            )
            if state is _RUNNING:
                return  # still the one active invocation
        parent = event.get("parentSubagentRunId")
        if parent is not None and self.states.get(parent) is not _RUNNING:
            why = (
                "has already ended"
                if self.states.get(parent) is _ENDED
                else "was not announced in this run"
            )
            self._out_of_order(
                VERIFY_SUBAGENT_ORDER("parent", sub=sub, parent=parent, why=why),
                index,
                "/parentSubagentRunId",
            )
        make_room(index)
        self.states[sub] = _RUNNING
        self.running += 1

    def ended(self, event: Event, index: int) -> None:
        """``SUBAGENT_FINISHED`` or ``SUBAGENT_ERROR``: closing what is not running is fatal
        (the conformance corpus)."""
        sub, kind = event["subagentRunId"], event["type"]
        state = self.states.get(sub)
        if state is not _RUNNING:
            why = {
                None: "was never started",
                _ATTRIBUTED: "was never announced with SUBAGENT_STARTED",
                _ENDED: "has already ended",
            }[state]
            raise self._ctx.reject(
                VERIFY_SUBAGENT(kind=kind, sub=sub, why=why),
                event_index=index,
                pointer="/subagentRunId",
            )
        self.states[sub] = _ENDED
        self.running -= 1

    def _out_of_order(self, message: Message, index: int, pointer: str) -> None:
        """A subagent lifecycle rule that binds only the producer (subagents.mdx, Lifecycle)."""
        self._ctx.report(message, event_index=index, pointer=pointer)
