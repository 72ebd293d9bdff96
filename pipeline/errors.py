"""Diagnostics and the exceptions that end a stream.

Two different things end a run badly (``/spec/1.1/events/lifecycle``, Error
Handling): the consumer rejecting the stream (:class:`StreamRejected`, and its
special case :class:`StreamTruncated`), and the run reporting its own failure
with ``RUN_ERROR`` — which is an event, not an exception. A third thing is not
the protocol's at all: application code failing inside a handler
(:class:`HandlerFailed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agui_pipeline.catalog import HANDLER_FAILED, Code, Message, Severity

if TYPE_CHECKING:
    from agui_pipeline.batch import Batch

MAX_MESSAGE = 2000
"""The longest message a diagnostic or a rejection keeps, in characters: a longer one (an
HTTP library's error quoting a whole response, a value quoted whole) is cut there and says
how long it was, so one finding cannot fill a report."""


def cut_message(message: str) -> str:
    """``message``, or its first ``MAX_MESSAGE`` characters saying how long it was."""
    if len(message) <= MAX_MESSAGE:
        return message
    return f"{message[:MAX_MESSAGE]}… (cut at {MAX_MESSAGE} of {len(message):,} characters)"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding about the stream: what, where, and which rule says so.

    ``pointer`` is a JSON Pointer (RFC 6901) into the event at ``event_index``
    (the position of the frame as it was read, counting from 0), or ``""``
    for the whole event. Either may be ``None`` when the finding is not about
    one event (a declaration, the transport, a run summary).
    """

    code: str
    severity: Severity
    message: str
    event_index: int | None = None
    pointer: str | None = None
    spec: str = ""
    declared: str | None = None
    """For a reconcile finding: the capabilities field it is about, as a JSON Pointer into
    the ``AgentCapabilities`` declaration (``/tools/parallelCalls``)."""

    def __post_init__(self) -> None:
        if len(self.message) > MAX_MESSAGE:
            object.__setattr__(self, "message", cut_message(self.message))

    def __str__(self) -> str:
        return _render(self.code, self.message, self.event_index, self.pointer, self.spec)

    def to_dict(self) -> dict[str, Any]:
        record = {
            "code": self.code,
            "severity": str(self.severity),
            "message": self.message,
            "eventIndex": self.event_index,
            "pointer": self.pointer,
            "spec": self.spec,
        }
        if self.declared is not None:
            record["declared"] = self.declared
        return record


class AguiPipelineError(Exception):
    """The root of every error this library raises on purpose.

    ``except AguiPipelineError`` catches a rejected stream, a failed handler, a
    malformed run input, an unusable declaration, a failed request and a
    misused stream, and nothing that is a bug (a ``KeyError`` in a stage of
    yours surfaces as itself).
    """


class DeclarationUnusable(AguiPipelineError, ValueError):
    """What a declaration is read from cannot be used: a known field carries a value the
    schema rejects, or a member is named twice (``pointer`` says where in ``document``)."""

    def __init__(self, pointer: str, reason: str, document: str = "declaration") -> None:
        self.pointer = pointer
        self.reason = reason
        super().__init__(f"{document} {pointer or '/'}: {reason}")


class UsageError(AguiPipelineError, RuntimeError):
    """The API was used out of order; the message says which rule was broken.

    For example: a stream is read inside ``async with pipeline.open(source) as
    stream:``, its verdict once it has ended, and a handler registry is filled
    before a pipeline takes it.
    """


def _render(
    code: str, message: str, event_index: int | None, pointer: str | None, spec: str
) -> str:
    where = []
    if event_index is not None:
        where.append(f"event {event_index}")
    if pointer is not None:
        where.append(f"at {pointer or '/'}")
    place = f" ({', '.join(where)})" if where else ""
    page = f" [{spec}]" if spec else ""
    return f"{code}: {message}{place}{page}"


def _worded(message: Message | Code, text: str | None) -> tuple[Code, str]:
    """A finding's code and text: a :class:`Message` as it is, a code with its own
    words (the form before codes owned their messages), or a code with no fields."""
    if isinstance(message, Message):
        return message.code, message.text
    return message, message().text if text is None else text


class StreamRejected(AguiPipelineError):
    """The consumer rejects the stream: a malformed known value or a broken sequence.

    ``kept`` is what the raising stage kept of its batch before the fault,
    set by :func:`agui_pipeline.stage.reject_after`; the engine hands those
    events on. ``None`` says nothing, and the engine then delivers nothing of
    the batch from that stage on (unless the stage passes its events through).
    """

    def __init__(
        self,
        code: Message | Code,
        message: str | None = None,
        *,
        event_index: int | None = None,
        pointer: str | None = None,
    ) -> None:
        code, message = _worded(code, message)
        message = cut_message(message)
        self.code = code.id
        self.spec = code.spec
        self.detail = message
        self.event_index = event_index
        self.pointer = pointer
        self.kept: Batch | None = None
        super().__init__(message)

    def __str__(self) -> str:
        # Rendered when read: a decoder may place the rejection at its frame after building it.
        return _render(self.code, self.detail, self.event_index, self.pointer, self.spec)

    def to_diagnostic(self) -> Diagnostic:
        return Diagnostic(
            self.code, Severity.ERROR, self.detail, self.event_index, self.pointer, self.spec
        )


class StreamTruncated(StreamRejected):
    """The stream ended while a run was open (``/spec/1.1/basic/transports``, Truncation).

    A truncated run has no outcome: it is never reported as completed, and
    nothing is synthesized for it. Everything delivered before the break stays
    delivered.
    """


class HandlerFailed(AguiPipelineError):
    """Application code raised while handling a delivered event.

    Not a verdict on the stream: the events were valid, the consumer's own
    code failed. ``__cause__`` is the handler's exception.
    """

    def __init__(self, event_index: int | None, event_type: str, error: BaseException) -> None:
        self.code = HANDLER_FAILED.id
        self.spec = HANDLER_FAILED.spec
        self.event_index = event_index
        self.event_type = event_type
        self.error = error
        self.kept: Batch | None = None
        """The events of the batch handled before the failing one (set by dispatch)."""
        super().__init__(
            HANDLER_FAILED(
                event_type=event_type,
                event_index=event_index,
                error_type=type(error).__name__,
                error=error,
            ).text
        )


class InputRejected(AguiPipelineError):
    """The run input the consumer was about to send is malformed; nothing was sent.

    ``/spec/1.1/basic/processing`` ("Outgoing material"): a known field of the
    input holding a value the schema rejects is fatal before transmission.
    ``pointer`` is a JSON Pointer into the input as the caller passed it.
    """

    def __init__(self, code: Message | Code, message: str | None = None, *, pointer: str) -> None:
        code, message = _worded(code, message)
        self.code = code.id
        self.spec = code.spec
        self.detail = message
        self.pointer = pointer
        super().__init__(_render(self.code, message, None, pointer, self.spec))
