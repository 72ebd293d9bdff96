"""Codes of delivery: metadata and the Conversation, handlers and sinks, the transports,
and resuming an interrupted run."""

from __future__ import annotations

from agui_pipeline.catalog.code import (
    _E,
    _I,
    _W,
    ACTIVITY,
    HTTP_SSE,
    INTERRUPTS,
    PROCESSING,
    SNAPSHOTS,
    Ground,
    _code,
)

# --- metadata and the conversation -------------------------------------------


CONVERSATION_STATE_PATCH = _code(
    "conversation.state-patch-failed",
    _W,
    SNAPSHOTS,
    "a well-formed STATE_DELTA did not apply; the state was left exactly as it was",
    advice="Send STATE_SNAPSHOT before deltas, and patch paths that exist in it. For a recording, "
    "pass the run input's state with --input: the deltas apply to that baseline.",
    message="Failed to apply state patch: {failure} (at /delta/{position}); the state is left "
    "exactly as it was",
)
CONVERSATION_ACTIVITY_PATCH = _code(
    "conversation.activity-patch-failed",
    _W,
    ACTIVITY,
    "a well-formed ACTIVITY_DELTA did not apply; the activity was left exactly as it was",
    advice=(
        "Patch against the activity content the consumer holds: send ACTIVITY_SNAPSHOT for the "
        "messageId first, and a fresh one to resynchronise after a failure."
    ),
    message="Failed to apply activity patch to {message_id!r}: {failure} (at /patch/{position}); "
    "the activity is left exactly as it was",
)
CONVERSATION_ACTIVITY_TARGET = _code(
    "conversation.activity-target-missing",
    _W,
    ACTIVITY,
    "an activity event names a message that does not exist or is not an activity message; "
    "it was skipped",
    advice=(
        "Open an activity message with ACTIVITY_SNAPSHOT before sending deltas for its "
        "messageId, and never reuse the id of a message of another role."
    ),
    message="{type} names message {message_id!r} (at /messageId): expected an activity message, "
    "found {found}; the event was skipped",
)
CONVERSATION_ENCRYPTED_TARGET = _code(
    "conversation.encrypted-value-target-missing",
    _W,
    "/spec/1.1/events/reasoning",
    "a REASONING_ENCRYPTED_VALUE names no message or tool call the consumer holds; "
    "the value was dropped",
    advice=(
        "Send REASONING_ENCRYPTED_VALUE after the message or tool call its entityId names, with "
        "the subtype saying which of the two it is."
    ),
    message="REASONING_ENCRYPTED_VALUE names {what} {entity_id!r}, which this consumer does not "
    "hold (at /entityId); the value was dropped",
)
CONVERSATION_NO_CARRIER = _code(
    "conversation.tool-call-no-carrier",
    _W,
    "/spec/1.1/events/tool-calls",
    "a tool call's parentMessageId names a message that is not an assistant message; "
    "the call is kept off the message list",
    advice="Set parentMessageId to the assistant message that makes the call, or leave it out.",
    message="TOOL_CALL_START {call_id!r} names parentMessageId {parent_id!r}, a {role} message, "
    "which cannot hold a tool call (at /parentMessageId); the call is kept off the "
    "message list",
)

# --- dispatch and transports --------------------------------------------------

HANDLER_FAILED = _code(
    "dispatch.handler-failed",
    _E,
    PROCESSING,
    "an application handler raised",
    advice=(
        "Fix the application handler registered for that event type: the exception is its own, "
        "and the stream was valid."
    ),
    ground=Ground(
        PROCESSING,
        "Not the producer's fault: the application's own handler raised, and the stream cannot "
        "be handed on to a handler that failed. The verdict says handler-failed, never that the "
        "stream was malformed.",
        quoted=False,
    ),
    message="a handler for {event_type} (event {event_index}) raised {error_type}: {error}",
)
TRANSPORT_CONTENT_TYPE = _code(
    "transport.content-type",
    _W,
    HTTP_SSE,
    "the response is not text/event-stream; its body was read by the framing it shows",
    advice="Answer with Content-Type: text/event-stream, as the HTTP binding requires.",
    message="expected Content-Type {expected}, found {content_type!r}; the body is read "
    "with the framing its first bytes show",
)
TRANSPORT_CONNECTION_LOST = _code(
    "transport.connection-lost",
    _W,
    HTTP_SSE,
    "the connection failed mid-body; the stream ended there and is judged as it stands",
    advice="Find what closed the connection (a proxy timeout, a crashed worker); send keep-alive "
    "comments during long pauses.",
    message="the connection failed before the response body ended ({error_type}: {said}); "
    "{why}the stream is judged as it stands",
)
TRANSPORT_RESUMED = _code(
    "transport.resumed",
    _I,
    HTTP_SSE,
    "the connection failed mid-body and the stream was resumed with Last-Event-ID",
    advice="Nothing was lost or read twice; find what closed the connection if it recurs.",
    message="the connection failed ({error_type}); resumed with Last-Event-ID {last_id!r}, "
    "skipping the {skipped} event(s) already read after it",
)
RESUME_UNCOVERED = _code(
    "input.resume-uncovered",
    _E,
    "/spec/1.1/basic/patterns/interrupt-resume",
    "a resuming input leaves an interrupt of the interrupted run with no entry",
    ground=Ground(
        INTERRUPTS,
        "A consumer MUST reject a resuming input that leaves an interrupt uncovered before the "
        "run starts — before anything is sent — and MUST NOT silently continue past an "
        "interrupt it has no entry for.",
    ),
    message="expected every interrupt answered or cancelled; {uncovered} have no entry (omission "
    "is not abandonment)",
    advice="Give every interrupt of the interrupted run a resume entry: answer it, or cancel "
    "it explicitly.",
)
RESUME_UNKNOWN = _code(
    "input.resume-unknown",
    _E,
    "/spec/1.1/basic/patterns/interrupt-resume",
    "a resume entry names no interrupt of the run being continued",
    ground=Ground(
        INTERRUPTS,
        "Each entry's interruptId MUST name an interrupt from the run being continued — the "
        "most recent interrupted run on the thread.",
    ),
    message="expected entries for the interrupted run's interrupts {interrupts}; found {unknown} "
    "which it did not raise",
    forms={
        "no-interrupt": "expected a run that ended with the interrupt outcome; the stream's "
        "last run did "
        "not, so there is nothing to resume",
        "both": "interrupts {both} are both answered and cancelled",
    },
    advice="Resume only a run that ended with the interrupt outcome, and answer only the "
    "interrupts it raised, each once.",
)
RESUME_EXPIRED = _code(
    "input.resume-expired",
    _E,
    "/spec/1.1/basic/patterns/interrupt-resume",
    "a resume entry answers an interrupt the consumer judges expired",
    ground=Ground(
        INTERRUPTS,
        "The rule attaches to the judgment, not to a parse the schema refuses to specify: an "
        "interrupt the consumer judges expired can no longer be answered — the consumer rejects "
        "a resume entry resolving it before the run starts, as it rejects an uncovered "
        "interrupt.",
    ),
    message="interrupts {expired} expired (expiresAt is now or earlier); an expired interrupt "
    "can only be cancelled",
    advice="Cancel an interrupt whose expiresAt has passed, or answer it before it expires.",
)

__all__ = [
    "CONVERSATION_ACTIVITY_PATCH",
    "CONVERSATION_ACTIVITY_TARGET",
    "CONVERSATION_ENCRYPTED_TARGET",
    "CONVERSATION_NO_CARRIER",
    "CONVERSATION_STATE_PATCH",
    "HANDLER_FAILED",
    "RESUME_EXPIRED",
    "RESUME_UNCOVERED",
    "RESUME_UNKNOWN",
    "TRANSPORT_CONNECTION_LOST",
    "TRANSPORT_CONTENT_TYPE",
    "TRANSPORT_RESUMED",
]
