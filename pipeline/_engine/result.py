"""What one stream yields: the verdict, and the :class:`RunResult` both shells return."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, cast

from agui_pipeline.errors import Diagnostic, HandlerFailed, StreamRejected, UsageError
from agui_pipeline.events import AnyEvent
from agui_pipeline.model.conversation import Conversation
from agui_pipeline.stage import Counters, RunRecord, StreamContext


class Outcome(StrEnum):
    """How the consumer judged the stream."""

    COMPLETED = "completed"
    """Consumed to the end; every run on it closed (a ``RUN_ERROR`` is a closed, failed run)."""
    REJECTED = "rejected"
    """A malformed known value or a broken sequence ended it."""
    TRUNCATED = "truncated"
    """It ended while a run was open: that run has no outcome."""
    HANDLER_FAILED = "handler-failed"
    """Application code raised while handling a delivered event."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The consumer's verdict on one stream, with the error that ended it, if any."""

    outcome: Outcome
    error: StreamRejected | HandlerFailed | None = None

    @property
    def completed(self) -> bool:
        return self.outcome is Outcome.COMPLETED

    @property
    def code(self) -> str | None:
        """The catalog code of the error (``dispatch.handler-failed`` for a handler's)."""
        return None if self.error is None else self.error.code

    @property
    def message(self) -> str | None:
        return None if self.error is None else str(self.error)

    @property
    def pointer(self) -> str | None:
        return self.error.pointer if isinstance(self.error, StreamRejected) else None

    @property
    def event_index(self) -> int | None:
        return None if self.error is None else self.error.event_index

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": str(self.outcome),
            "code": self.code,
            "message": self.message,
            "pointer": self.pointer,
            "eventIndex": self.event_index,
        }


@dataclass(slots=True)
class RunResult:
    """Everything one stream produced: what was delivered, what was said, the verdict."""

    events: list[AnyEvent]
    verdict: Verdict
    diagnostics: list[Diagnostic]
    counters: Counters
    transport: str | None = None
    suppressed: dict[str, int] = field(default_factory=dict)
    """Diagnostics over the ``max_diagnostics`` limit, counted by code."""
    runs: list[RunRecord] = field(default_factory=list)
    """The runs on the stream in order, with how each ended (kept by verify): all of them
    up to ``Limits.max_run_records``, past that the first half of that many and the latest
    half (:attr:`run_counts` counts every run)."""
    run_counts: dict[str, int] = field(default_factory=dict)
    """Every run on the stream by :class:`RunStatus` value, listed in :attr:`runs` or not."""
    materialised: Conversation | None = field(default=None, repr=False)
    """The Conversation, or ``None`` when the pipeline builds none (see :attr:`conversation`)."""

    @property
    def conversation(self) -> Conversation:
        """The materialised Conversation: messages, state, pending interrupts.

        Raises :class:`~agui_pipeline.UsageError` when the pipeline builds none
        (``Pipeline(conversation=False)``, or no dispatch stage); the
        ``materialised`` field is the same value, ``None`` in those cases.
        """
        if self.materialised is None:
            raise UsageError(
                "this result has no Conversation: the pipeline was made with "
                "conversation=False, or without the dispatch stage that builds it"
            )
        return self.materialised

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]

    def raise_for_verdict(self) -> None:
        """Raise the error that ended the stream, if it did not complete."""
        if self.verdict.error is not None:
            raise self.verdict.error


def result_of(ctx: StreamContext, verdict: Verdict, events: list[AnyEvent]) -> RunResult:
    """The result of a stream read to its end, with ``events`` delivered."""
    return RunResult(
        events=events,
        verdict=verdict,
        diagnostics=ctx.diagnostics,
        counters=ctx.counters,
        transport=ctx.transport,
        suppressed=ctx.suppressed,
        runs=ctx.runs,
        run_counts=ctx.run_counts(),
        # What dispatch put there is a Conversation: the context types it by what the
        # stages use of it, so that the contract does not import the model.
        materialised=cast(Conversation | None, ctx.conversation),
    )
