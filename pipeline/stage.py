"""The stage contract: what every stage receives, returns and may rely on.

A stage is an async transformer over *batches*. A batch is whatever one read
of the transport delivered, decoded into events — the engine never waits to
fill one — so the async overhead is paid once per read, not once per event,
and the code inside a stage is ordinary synchronous Python per event.

Each stream gets fresh stage instances (a stage keeps per-stream state, such
as which messages are open), built by calling a *stage factory* with the
stream's :class:`StreamContext`. A stage class whose ``__init__`` takes the
context is its own factory.

The contract, kept by the engine (``agui_pipeline._engine.pipeline``) rather than by
each stage: a stage *returns* the events it keeps, and when it rejects part
way through a batch it says what it kept before the fault with
:func:`reject_after`. Anything else it raises is a bug and surfaces as
itself, with the stage's name in a note.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Protocol, TypeVar

from agui_pipeline.batch import Batch, empty_batch
from agui_pipeline.catalog import LIMIT_DIAGNOSTICS, Code, Message, Severity
from agui_pipeline.errors import Diagnostic, HandlerFailed, StreamRejected, _worded
from agui_pipeline.options import Options


@dataclass(slots=True)
class Counters:
    """What happened to the events of one stream, for the accounting on the result.

    Always: ``read + synthesized == delivered + dropped + expanded + discarded``.
    The built-in stages count what they do. For a stage of yours the engine
    counts: the events it returns fewer than it was handed are ``dropped``, those
    it returns more are ``synthesized`` (a replacement is neither). A stage may
    count for itself instead (a replacement for expand counts ``expanded``), as
    long as what it counts balances what it returned; one that does not is a bug,
    raised as a :class:`~agui_pipeline.UsageError` naming the stage.
    """

    read: int = 0
    """Frames decoded by parse."""
    delivered: int = 0
    """Events handed to application code."""
    dropped: int = 0
    """Events removed whole (an unknown type, a retired event with no replacement)."""
    stripped: int = 0
    """Members removed from events that were otherwise delivered."""
    expanded: int = 0
    """Chunk events replaced by the events they stand for."""
    synthesized: int = 0
    """Events made by a stage (the start/content/end events of a chunk)."""
    discarded: int = 0
    """Events that had entered the pipeline when a rejection or a handler failure
    ended the stream: the offending event and those after it in its batch."""


class ChunkForm(StrEnum):
    """Which form of a streamed message, tool call or reasoning message a stage is handed.

    A producer may send an item as ``*_CHUNK`` events or as its start/content/end
    events, and a middleware chain may expand chunks between its own stages
    (``/spec/1.1/basic/processing``, "Where middleware sits"): a stage says on
    :attr:`Stage.form` which form it needs, and the engine keeps to it.
    """

    EITHER = "either"
    """Whatever its place gives it (the default): both forms before expand, only the
    expanded one after it. The stage handles both."""
    AS_SENT = "as-sent"
    """The events as the producer sent them, chunks included: nothing has been expanded
    before this stage. Placing it after expansion is refused (``UsageError``)."""
    EXPANDED = "expanded"
    """Never a chunk: the engine expands chunks just before this stage, unless
    something before it already has."""


class RunStatus(StrEnum):
    """How a run on the stream ended, as far as this consumer saw."""

    OPEN = "open"
    """No terminal event verified yet: the stream is still being read, or was rejected first."""
    FINISHED = "finished"
    """``RUN_FINISHED`` with the success outcome, or none."""
    CANCELLED = "cancelled"
    """``RUN_FINISHED`` with the cancelled outcome: stopped on purpose, neither success nor
    failure (``/spec/1.1/events/lifecycle``, Cancelled runs)."""
    INTERRUPTED = "interrupted"
    """``RUN_FINISHED`` with the interrupt outcome: waiting for outside input."""
    ERROR = "error"
    """``RUN_ERROR``, including a late one after ``RUN_FINISHED``: the run failed."""
    TRUNCATED = "truncated"
    """The stream ended while the run was open: it has no outcome."""


@dataclass(slots=True)
class RunRecord:
    """One run on the stream, kept by verify for the result and the CLI."""

    run_id: str | None
    """``None`` for a ``RUN_ERROR`` that opened the stream (a run that failed before it began)."""
    thread_id: str | None
    status: RunStatus = RunStatus.OPEN
    outcome: dict[str, Any] | None = None
    """The ``RUN_FINISHED`` outcome as sent (absent means success)."""
    error: str | None = None
    """The ``RUN_ERROR`` message, when the run failed."""
    ended_at: int | None = None
    """The event index of the terminal event that set ``status``. The engine reopens the
    run (``open``) when a rejection discards that event before delivery."""
    superseded: tuple[RunStatus, int] | None = None
    """The ``status`` and ``ended_at`` a late ``RUN_ERROR`` replaced (the run had finished):
    the engine puts them back when it discards that error but delivered the finish."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "threadId": self.thread_id,
            "status": str(self.status),
            "outcome": self.outcome,
            "error": self.error,
        }


# -- what stages share on the context --------------------------------------------------

Merged = dict[str, Any]


class ItemMetadata:
    """The merged metadata of every item so far, by id: filled by the metadata stage as
    events arrive (``/spec/1.1/basic/metadata``, "Merging"), read by the Conversation.

    ``messages`` is keyed by message id (text, reasoning, tool and activity
    messages share that namespace), ``tool_calls`` by tool call id. Only items
    that have metadata have an entry. The dicts are this object's own copies,
    updated in place as events arrive; never the producer's objects.
    """

    __slots__ = ("messages", "tool_calls")

    def __init__(self) -> None:
        self.messages: dict[str, Merged] = {}
        self.tool_calls: dict[str, Merged] = {}

    def message(self, message_id: str) -> Merged | None:
        return self.messages.get(message_id)

    def tool_call(self, tool_call_id: str) -> Merged | None:
        return self.tool_calls.get(tool_call_id)


class Materialiser(Protocol):
    """What the context holds in ``conversation``: the object dispatch hands every delivered
    batch to (the :class:`~agui_pipeline.Conversation`; typed by what the stages use of it,
    so that the contract does not import the model)."""

    def apply(self, batch: Batch) -> None: ...


class StreamContext:
    """Per-stream state every stage can see: options, diagnostics, accounting.

    Stages talk to each other only through events and this object; a field
    here is one a later stage or the result needs from an earlier one. The
    fields are declared here, typed, and nothing else can be attached
    (``__slots__``): what stages share is part of the contract.
    """

    __slots__ = (
        "__weakref__",  # a benchmark or a tool may key its own records by stream
        "bytes_read",
        "conversation",
        "counters",
        "diagnostics",
        "item_metadata",
        "limits",
        "options",
        "run_input",
        "runs",
        "runs_unlisted",
        "suppressed",
        "transport",
    )

    def __init__(self, options: Options, run_input: dict[str, Any] | None = None) -> None:
        self.options = options
        self.limits = options.limits
        self.run_input = run_input
        """The ``RunAgentInput`` this stream answers, as sent, if the consumer knows it."""
        self.transport: str | None = None
        """How the events arrived: ``"sse"``, ``"jsonl"``, ``"json"`` (set by parse),
        or a binding name set by the source, such as ``"http+sse"``."""
        self.diagnostics: list[Diagnostic] = []
        self.suppressed: dict[str, int] = {}
        """Diagnostics past ``limits.max_diagnostics``, counted by code."""
        self.counters = Counters()
        self.bytes_read = 0
        """Bytes of the stream's body parse has been fed (after any content decoding): what a
        stage holding events may size its holding by."""
        self.conversation: Materialiser | None = None
        """The materialised conversation, once dispatch provides one (``Options.conversation``)."""
        self.item_metadata: ItemMetadata | None = None
        """Each item's merged metadata, once the metadata stage provides it."""
        self.runs: list[RunRecord] = []
        """The runs on the stream in order, as verify saw them begin and end: a sample
        (see :meth:`record_run`)."""
        self.runs_unlisted: dict[str, int] = {}
        """Runs dropped from :attr:`runs`, counted by status."""

    def record_run(self, record: RunRecord) -> None:
        """Add the run that just began to :attr:`runs`, a sample of bounded size.

        ``limits.max_run_records`` bounds it: the first half of that many runs
        stay, and the latest half; a run dropped from the middle has ended
        (only the latest can be open) and is counted by its status, so a
        stream of a million runs holds a thousand records, not a million.
        """
        runs = self.runs
        runs.append(record)
        limit = max(self.limits.max_run_records, 1)
        if len(runs) > limit:
            dropped = runs.pop(limit // 2)  # the oldest of the latest half
            status = str(dropped.status)
            self.runs_unlisted[status] = self.runs_unlisted.get(status, 0) + 1

    def run_counts(self) -> dict[str, int]:
        """Every run on the stream by status, listed in :attr:`runs` or not."""
        counts = dict(self.runs_unlisted)
        for record in self.runs:
            counts[str(record.status)] = counts.get(str(record.status), 0) + 1
        return counts

    def report(
        self,
        message: Message | Code,
        text: str | None = None,
        *,
        event_index: int | None = None,
        pointer: str | None = None,
        severity: Severity | None = None,
        declared: str | None = None,
    ) -> Diagnostic:
        """Record a diagnostic (a warning or information, never a rejection).

        ``message`` is a code called with its fields (``CODE(name=...)``); a code with
        words of its own in ``text`` is still taken. ``declared`` is the capabilities
        field a reconcile finding is about.
        """
        code, text = _worded(message, text)
        diagnostic = Diagnostic(
            code.id, severity or code.severity, text, event_index, pointer, code.spec, declared
        )
        if len(self.diagnostics) < self.limits.max_diagnostics:
            self.diagnostics.append(diagnostic)
        else:
            if not self.suppressed:
                self.diagnostics.append(
                    Diagnostic(
                        LIMIT_DIAGNOSTICS.id,
                        LIMIT_DIAGNOSTICS.severity,
                        LIMIT_DIAGNOSTICS(limit=self.limits.max_diagnostics).text,
                        event_index,
                        None,
                        LIMIT_DIAGNOSTICS.spec,
                    )
                )
            self.suppressed[code.id] = self.suppressed.get(code.id, 0) + 1
        if self.options.on_diagnostic is not None:
            self.options.on_diagnostic(diagnostic)
        return diagnostic

    @staticmethod
    def reject(
        message: Message | Code,
        text: str | None = None,
        *,
        event_index: int | None = None,
        pointer: str | None = None,
    ) -> StreamRejected:
        """Build the rejection for ``raise``; the message names what was expected.

        ``message`` is a code called with its fields, as for :meth:`report`.

        Raised as it is, it says nothing of what the stage kept of its batch, and
        the engine delivers nothing of that batch from the stage on (it fails
        closed); :func:`reject_after` says what was kept.
        """
        return StreamRejected(message, text, event_index=event_index, pointer=pointer)


Fault = TypeVar("Fault", StreamRejected, HandlerFailed)


def reject_after(kept: Batch, fault: Fault) -> Fault:
    """``fault``, saying that ``kept`` is what the stage kept of its batch before it.

    The one way a stage ends the stream part way through its batch and still has
    the events before the fault delivered. A stage that changes its batch (drops,
    strips, synthesizes, redacts) passes what it built so far; one that only
    checks, the batch's events before the fault::

        raise reject_after(Batch(out, out_indices), self.ctx.reject(CODE, "...", event_index=i))
        raise reject_after(batch.before(i), self.ctx.reject(CODE, "...", event_index=i))

    ``kept`` goes on through the stages after this one; nothing the stage
    removed can reach the application, whatever it raises.
    """
    fault.kept = kept
    return fault


class Stage:
    """Base class for a stage between parse and the application.

    Override :meth:`process`, which returns the events the stage keeps;
    override :meth:`finish` when the stage has something to say at end of
    stream. To reject, ``raise reject_after(kept, ctx.reject(...))`` with the
    events kept so far and the event index (:func:`reject_after`); a stage
    that only checks passes ``batch.before(index)``. Raised without it, a
    rejection delivers nothing of the batch. Any other exception is a bug: it
    propagates, noted with the stage's name, and the stream has no verdict.
    """

    name: ClassVar[str] = "stage"
    form: ClassVar[ChunkForm] = ChunkForm.EITHER
    """Which form of a chunked item the stage is handed (:class:`ChunkForm`)."""

    def __init__(self, ctx: StreamContext) -> None:
        self.ctx = ctx

    async def process(self, batch: Batch) -> Batch:
        return batch

    async def finish(self) -> Batch:
        """End of stream: events to append, after the last batch has passed."""
        return empty_batch()


class Decoder:
    """Base class for the first stage: bytes in, events out (synchronous)."""

    name: ClassVar[str] = "parse"

    def __init__(self, ctx: StreamContext) -> None:
        self.ctx = ctx

    def feed(self, chunk: bytes) -> Batch:
        """The events of one read; a rejection says what was decoded before the bad
        frame with :func:`reject_after` (without it, nothing of the read is delivered)."""
        raise NotImplementedError

    def finish(self) -> Batch:
        return empty_batch()


StageFactory = Callable[[StreamContext], Stage]
"""What ``Pipeline(middleware=[...])`` takes: anything that makes a stream's stage from its
context. A stage class whose ``__init__`` takes only the context is one; a stage that
takes arguments of its own is given with them bound, and mypy checks them::

    class Redact(Stage):
        def __init__(self, ctx: StreamContext, tools: frozenset[str]) -> None: ...

    Pipeline(middleware=[functools.partial(Redact, tools=frozenset({"login"}))])

(``docs/guides/writing-stages.md``, the whole example.)"""
DecoderFactory = Callable[[StreamContext], Decoder]
