"""Codes of verification: the order of events, and what it rejects."""

from __future__ import annotations

from agui_pipeline.catalog.code import (
    _CONTINUATION_TAG,
    _E,
    _LIFECYCLE_FATAL,
    _W,
    LIFECYCLE,
    PROCESSING,
    REASONING,
    SUBAGENTS,
    TEXT_MESSAGES,
    TOOL_CALLS,
    TRANSPORTS,
    Ground,
    _code,
)

# The shapes the three item sequences share (verify.text-message, tool-call, reasoning).
_NOT_OPEN = (
    "No active {what} found with ID {item!r}: {kind} at /{field} continues or closes only an "
    "open {what}, and nothing is open under that id"
)
_ALREADY_ACTIVE = (
    "{kind} for {what} {item!r} at /{field} that is already active: expected {end} before the "
    "id is opened again"
)

# --- verify -----------------------------------------------------------------


VERIFY_FIRST_EVENT = _code(
    "verify.first-event",
    _E,
    LIFECYCLE,
    "the stream begins with an event other than RUN_STARTED or RUN_ERROR",
    advice="Send RUN_STARTED first: every event belongs to a run, and a run opens with it "
    "(RUN_ERROR may open a stream that fails before a run begins).",
    ground=Ground(
        LIFECYCLE,
        "A producer MUST NOT emit any other event first, and a consumer MUST treat a stream "
        "that opens with anything else as a protocol violation.",
    ),
    message="First event must be 'RUN_STARTED' or 'RUN_ERROR', found {kind!r} at /type",
)
VERIFY_NESTED_RUN = _code(
    "verify.nested-run",
    _E,
    LIFECYCLE,
    "a RUN_STARTED arrived while a run was still active",
    ground=_LIFECYCLE_FATAL,
    message="Cannot send 'RUN_STARTED' while a run is still active: run {run_id!r} must end with "
    "RUN_FINISHED or RUN_ERROR before run {run_id2!r} starts",
    advice="End the active run with RUN_FINISHED or RUN_ERROR before the next RUN_STARTED: "
    "runs on one stream follow each other, never nest.",
)
VERIFY_AFTER_CLOSE = _code(
    "verify.after-close",
    _E,
    LIFECYCLE,
    "an event other than RUN_STARTED (or a late RUN_ERROR) arrived after a run closed",
    advice="Start a new run (RUN_STARTED) before sending more events once a run has finished or "
    "failed.",
    ground=Ground(
        LIFECYCLE, "A consumer MUST reject any other event that arrives after a run has closed."
    ),
    message="The run has already finished with 'RUN_FINISHED': expected RUN_STARTED (a new run) "
    "or RUN_ERROR (a late failure), found {kind!r} at /type",
    forms={
        "after-error": "The run has already ended with 'RUN_ERROR': expected RUN_STARTED (a new "
        "run), found "
        "{kind!r} at /type",
    },
)
VERIFY_OPEN_AT_FINISH = _code(
    "verify.open-at-finish",
    _E,
    LIFECYCLE,
    "RUN_FINISHED arrived while something the run opened was still open",
    advice="End what the run opened (text messages, tool calls, reasoning, steps, subagents) "
    "before RUN_FINISHED; the message names what is still open.",
    ground=_LIFECYCLE_FATAL,
    message="Cannot send 'RUN_FINISHED' while {active} — a run closes everything it opened "
    "before it finishes",
)
VERIFY_STEP = _code(
    "verify.step",
    _E,
    LIFECYCLE,
    "a step was opened while open, or finished without being open (per name and owner)",
    ground=_LIFECYCLE_FATAL,
    message="STEP_STARTED for step {step} at /stepName that is already open: expected "
    "STEP_FINISHED before the name is opened again",
    forms={
        "not-started": "STEP_FINISHED for step {step} at /stepName that was not started{hint}",
    },
    advice="Pair each STEP_STARTED with one STEP_FINISHED of the same stepName (and owner), "
    "and do not reopen a name that is still open.",
)
VERIFY_TEXT_MESSAGE = _code(
    "verify.text-message-sequence",
    _E,
    TEXT_MESSAGES,
    "a text message was opened while open, or continued or closed while not open",
    advice="Send TEXT_MESSAGE_START, then its CONTENT, then TEXT_MESSAGE_END, for the same "
    "messageId; do not reopen a message that is open.",
    ground=Ground(
        TEXT_MESSAGES,
        "A TEXT_MESSAGE_CONTENT or TEXT_MESSAGE_END for a messageId that is not open, or a "
        "TEXT_MESSAGE_START for one that is, is a malformed sequence and fatal to the run.",
    ),
    message=_NOT_OPEN,
    forms={"already-active": _ALREADY_ACTIVE},
)
VERIFY_TOOL_CALL = _code(
    "verify.tool-call-sequence",
    _E,
    TOOL_CALLS,
    "a tool call was opened while open, or continued or closed while not open",
    advice="Send TOOL_CALL_START, then its ARGS, then TOOL_CALL_END, for the same toolCallId; do "
    "not reopen a call that is open.",
    ground=Ground(
        TOOL_CALLS,
        "The streaming pattern's sequence rules apply unchanged: continuing or closing a call "
        "that is not open, or reopening one that is, is fatal.",
    ),
    message=_NOT_OPEN,
    forms={"already-active": _ALREADY_ACTIVE},
)
VERIFY_REASONING = _code(
    "verify.reasoning-sequence",
    _E,
    REASONING,
    "a reasoning span or message was opened while open, or continued or closed while not open",
    ground=Ground(
        REASONING,
        "A consumer MUST detect a violation of that discipline and fail the run, on spans and on "
        "reasoning messages alike:",
    ),
    message=_NOT_OPEN,
    forms={"already-active": _ALREADY_ACTIVE},
    advice="Open a reasoning span or message before its content or end, and end it before "
    "opening the same id again.",
)
VERIFY_ATTRIBUTION = _code(
    "verify.attribution-mismatch",
    _E,
    "/spec/1.1/events/subagents",
    "an event continuing an item carries a subagentRunId that disagrees with the item's owner",
    ground=_CONTINUATION_TAG,
    message="{kind} for {what} {item!r} carries /subagentRunId {tag!r}, which does not match the "
    "owner established when it was opened ({owner})",
    advice="Continue an item with the subagentRunId it was opened with (or none, for the "
    "parent agent).",
)
VERIFY_SUBAGENT = _code(
    "verify.subagent-lifecycle",
    _E,
    SUBAGENTS,
    "a subagent invocation was closed (SUBAGENT_FINISHED or SUBAGENT_ERROR) while not active",
    ground=Ground(
        SUBAGENTS,
        "The official conformance corpus holds this fatal (subagent-finished-unstarted-fatal): a "
        "terminal event closes an invocation, and one that is not active leaves it nothing to "
        "close. The subagents page words no consumer verdict of its own here; the corpus is "
        "followed because it does not mark this as a gap against the spec.",
        quoted=False,
    ),
    message="{kind} for subagent {sub!r} at /subagentRunId, but that invocation {why}: there is "
    "nothing to close",
    advice="Send SUBAGENT_FINISHED or SUBAGENT_ERROR once, for an invocation announced with "
    "SUBAGENT_STARTED and still running.",
)
VERIFY_SUBAGENT_ORDER = _code(
    "verify.subagent-announcement",
    _W,
    SUBAGENTS,
    "a subagent invocation was announced after its events, announced again, nested under a "
    "parent not active, or used after it ended (producer rules; the stream goes on)",
    advice="Send SUBAGENT_STARTED before any event attributed to the invocation, once per "
    "invocation, after its parent's; give a new invocation a new subagentRunId.",
    message="SUBAGENT_STARTED for {sub!r} at /subagentRunId, but that invocation {problem}",
    forms={
        "after-end": "an event attributed to subagent {tag!r} at /subagentRunId arrived after "
        "that invocation ended in this run; a new invocation takes a new id",
        "parent": "SUBAGENT_STARTED for {sub!r} names parent invocation {parent!r} at "
        "/parentSubagentRunId, which {why}",
    },
)
VERIFY_CALL_ATTRIBUTION = _code(
    "verify.call-attribution",
    _W,
    SUBAGENTS,
    "a tool call is attributed to another owner than the message that carries it",
    advice="Tag a tool call as its message is tagged (or leave it untagged: it inherits the "
    "message's owner).",
    message="{type} for message {message_id!r} belongs to {owner}, but a tool call it carries "
    "belongs to {call_owner}: a tool call has the attribution of the message that holds "
    "it",
)
VERIFY_CANCELLED_RESULT = _code(
    "verify.cancelled-result",
    _W,
    LIFECYCLE,
    "a run finished with the cancelled outcome carries a result, which it SHOULD NOT",
    message="run {run_id!r} was cancelled but carries /result: a cancelled run has no return value",
    advice="Leave result out of a RUN_FINISHED whose outcome is cancelled: a cancelled run "
    "has no return value.",
)
VERIFY_UNEXPANDED_CHUNK = _code(
    "verify.unexpanded-chunk",
    _E,
    "/spec/1.1/basic/patterns/streaming",
    "a *_CHUNK event reached verification unexpanded (the pipeline has no expand stage)",
    ground=Ground(
        PROCESSING,
        "Verification MUST run after expansion, because what it checks — that messages and "
        "calls open before they continue and close after — only exists once a chunk has become "
        "the events it stands for.",
    ),
    message="expected the start/content/end events a {type} stands for, found the chunk itself: "
    "chunks are expanded before verification (is expand missing?)",
    advice="Keep expand in the pipeline ahead of verify: chunks are verified as the start, "
    "content and end events they stand for.",
)
VERIFY_UNREADABLE = _code(
    "verify.unreadable-event",
    _E,
    PROCESSING,
    "an event lacks a field verification reads (the pipeline has no enforce stage)",
    ground=Ground(
        PROCESSING,
        "Middleware — anything a consumer installs to translate, observe or rewrite the stream — "
        "MUST run before enforcement, and enforcement MUST run before verification and before "
        "application code sees anything.",
    ),
    message="expected a schema-valid event, found one verification cannot read ({error_type}: "
    "{error}); is enforce missing from the pipeline?",
    forms={
        "batch": "expected a batch with one frame index per event, found {events} events and "
        "{indices} indices (a stage before verification broke the batch)",
    },
    advice="Keep enforce (and the stages before verify) in the pipeline: verify reads only "
    "schema-valid events, one frame index per event.",
)
VERIFY_TRUNCATED = _code(
    "verify.truncated",
    _E,
    TRANSPORTS,
    "the stream ended while a run was active, or before any event: the run has no outcome",
    advice="End every run with RUN_FINISHED or RUN_ERROR before closing the connection; if the "
    "connection drops, the run is lost and must be retried.",
    ground=Ground(
        TRANSPORTS,
        "A consumer MUST NOT synthesize a RUN_FINISHED for it and MUST NOT report it as having "
        "succeeded; everything the run delivered before the break remains delivered.",
    ),
    message="expected RUN_FINISHED or RUN_ERROR for run {run_id!r}, found the end of the "
    "stream: the run is truncated and has no outcome",
    forms={
        "still-open": "expected RUN_FINISHED or RUN_ERROR for run {run_id!r}, found the end of "
        "the stream: the run is truncated and has no outcome ({still_open} still open)",
        "no-run": "expected RUN_STARTED or RUN_ERROR, found the end of the stream with no event "
        "(none reached verification): no run began, and none has an outcome",
    },
)

__all__ = [
    "VERIFY_AFTER_CLOSE",
    "VERIFY_ATTRIBUTION",
    "VERIFY_CALL_ATTRIBUTION",
    "VERIFY_CANCELLED_RESULT",
    "VERIFY_FIRST_EVENT",
    "VERIFY_NESTED_RUN",
    "VERIFY_OPEN_AT_FINISH",
    "VERIFY_REASONING",
    "VERIFY_STEP",
    "VERIFY_SUBAGENT",
    "VERIFY_SUBAGENT_ORDER",
    "VERIFY_TEXT_MESSAGE",
    "VERIFY_TOOL_CALL",
    "VERIFY_TRUNCATED",
    "VERIFY_UNEXPANDED_CHUNK",
    "VERIFY_UNREADABLE",
]
