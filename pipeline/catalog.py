"""Every diagnostic and rejection code, defined once.

A code is the stable name a caller matches on: it never changes meaning
between releases. Each entry records its default severity and the spec page
the rule comes from (paths as the corpus spells them, ``/spec/1.1/...``),
and what to do about it (its own ``advice``, or its section's in
:data:`ADVICE`) — ``agui-pipeline explain CODE`` prints it, and
the documentation site's reference pages are generated from this module.
Stages import the entries they emit; nothing else mints a code.

Sections follow the flow of stages. Add a code to its stage's section.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    """How much a finding matters. ``ERROR`` is reserved for rejections."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why a rejecting code rejects: the spec sentence that makes it the consumer's verdict.

    A rejection the spec does not call for loses a real agent's answer, so every ``ERROR``
    code names its ground. ``quoted``: ``sentence`` is the page's own words (a test finds
    them there); otherwise it says why the consumer cannot go on — a bound the operator
    configured, or a pipeline that cannot judge what it was handed.
    """

    page: str
    sentence: str
    quoted: bool = True


@dataclass(frozen=True, slots=True)
class Code:
    """One entry of the catalog."""

    id: str
    severity: Severity
    spec: str
    title: str
    advice: str = ""
    """What to do about it, when the code's own words say more than its section's."""
    verdict: Verdict | None = None
    """For a rejection (``ERROR``), what makes it the consumer's verdict; ``None`` otherwise."""

    def __str__(self) -> str:
        return self.id

    @property
    def what_to_do(self) -> str:
        """What a producer (or the consumer's operator) should do about this finding."""
        return self.advice or ADVICE[self.id.partition(".")[0]]

    @property
    def url(self) -> str:
        return spec_url(self.spec)


ALL: dict[str, Code] = {}


def _code(
    id: str,
    severity: Severity,
    spec: str,
    title: str,
    advice: str = "",
    verdict: Verdict | None = None,
) -> Code:
    if id in ALL:
        raise ValueError(f"diagnostic code {id!r} defined twice")
    if (severity is Severity.ERROR) != (verdict is not None):
        raise ValueError(f"{id}: a rejection names its verdict's ground, and only a rejection")
    entry = Code(id, severity, spec, title, advice, verdict)
    ALL[id] = entry
    return entry


SPEC_SITE = "https://ag-ui.com"
"""Where the spec pages are published (the origin ``schema.json``'s ``$id`` names)."""


def spec_url(page: str) -> str:
    """The published URL of a spec page given as ``/spec/1.1/...`` (a URL stays as it is)."""
    return page if "://" in page else SPEC_SITE + page


# The grounds most rejections share (``Verdict``): the sentences as the pages word them.
_DECODE_FAILURE = Verdict(
    "/spec/1.1/basic/processing",
    "Turning bytes into events is the reader's whole job — a frame whose bytes map to no event "
    "at all is a decode failure, and that judgement is properly the reader's.",
)
_MALFORMED_KNOWN_VALUE = Verdict(
    "/spec/1.1/basic/processing",
    "A field the protocol DOES describe, carrying a value the schema rejects, MUST be fatal: the "
    "consumer MUST fail the run rather than repair, coerce or ignore the value.",
)
_LIFECYCLE_FATAL = Verdict(
    "/spec/1.1/events/lifecycle",
    "A stream the consumer rejects is a protocol violation it detected: everything on this page "
    "a producer MUST NOT do is fatal when a consumer sees it — an event before RUN_STARTED, an "
    "event after close other than the two admitted, a nested RUN_STARTED, an unbalanced step, "
    "or anything still open at RUN_FINISHED.",
)
_CONTINUATION_TAG = Verdict(
    "/spec/1.1/events/subagents",
    "A consumer MUST reject a continuation whose tag disagrees with its opener.",
)


def _bound(setting: str) -> Verdict:
    """A limit's ground: not a spec sentence, a bound the operator set (Limits)."""
    return Verdict(
        "/spec/1.1/basic/transports",
        f"A bound the operator configured ({setting}): going on would make the consumer hold "
        "more than it was allowed to, so the stream is cut there, never altered; everything "
        "before stays delivered.",
        quoted=False,
    )


ADVICE: dict[str, str] = {
    "parse": "Fix the producer's framing: every frame must hold one complete JSON object "
    "(SSE: `data:` lines ended by a blank line; JSON lines: one object per line).",
    "source": "Check the producer is still sending; raise idle_timeout if a long silence "
    "is expected.",
    "limit": "Either the producer sends far more than a UI can use, or the limit is too low "
    "for this workload: raise it in Limits if the size is legitimate.",
    "compat": "Nothing was lost on the consumer's side; update the producer to the current "
    "shapes (DEPRECATIONS.md) to silence it.",
    "input": "Fix the run input the application builds: send only what schema.json's "
    "RunAgentInput describes.",
    "enforce": "Fix the producer to send only what schema.json describes, spelt as it is "
    "spelt there; values of a known field must have its type.",
    "expand": "Give the first chunk of each item every field its opener needs, and keep ids "
    "consistent across chunks.",
    "verify": "Fix the order of events in the producer: open before continuing, close what "
    "was opened, one run at a time (lifecycle.mdx and the event's page).",
    "reconcile": "Make the agent's capabilities declaration say what the agent really does, "
    "or change the agent to match it.",
    "conversation": "Fix the producer's state or activity updates: patches must apply to the "
    "document the consumer holds (send a snapshot first).",
    "lint": "Fix the producer: what it restates, reopens or reports must agree with what it "
    "streamed and with the run input it answers (the README's lint table says how).",
    "dispatch": "A handler of your application raised: fix the handler; the stream was valid.",
    "transport": "Fix the endpoint: answer with text/event-stream and keep the connection "
    "open until the run ends.",
}
"""What to do, by section (the part of a code before the dot)."""

_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO

PROCESSING = "/spec/1.1/basic/processing"
TRANSPORTS = "/spec/1.1/basic/transports"
HTTP_SSE = "/spec/1.1/basic/transports/http-sse"
HTTP_PROTOBUF = "/spec/1.1/basic/transports/http-protobuf"

# --- source and parse -------------------------------------------------------

PARSE_NOT_JSON = _code(
    "parse.not-json",
    _E,
    HTTP_SSE,
    "a frame's bytes are not a JSON document",
    advice="Fix the producer's serialisation: the frame named is not JSON (often a Python repr, a "
    "truncated write or an unescaped newline inside a data: line).",
    verdict=_DECODE_FAILURE,
)
PARSE_NUMBER_RANGE = _code(
    "parse.number-range",
    _E,
    PROCESSING,
    "a frame holds a number too large for a double (such as 1e999999), or a protobuf double "
    "that is NaN or infinite: it has no value to deliver",
    advice="Send numbers within IEEE 754 double range, never NaN or Infinity (RFC 8259 §6, "
    "I-JSON RFC 7493 §2.2); send a larger quantity as a string.",
    verdict=_DECODE_FAILURE,
)
PARSE_UNPAIRED_SURROGATE = _code(
    "parse.unpaired-surrogate",
    _E,
    PROCESSING,
    "a frame's string escapes a lone UTF-16 surrogate (such as \\ud800), which names no character",
    advice="Escape characters outside the Basic Multilingual Plane as a surrogate pair, or send "
    "them as UTF-8 (RFC 8259 §7, §8.2; I-JSON RFC 7493 §2.1).",
    verdict=_DECODE_FAILURE,
)
PARSE_INTEGER_PRECISION = _code(
    "parse.integer-precision",
    _W,
    PROCESSING,
    "an integer beyond 64 bits was delivered as the nearest double: its exact value is lost",
    advice="Send integers within 64 bits (I-JSON RFC 7493 §2.2 advises within ±2**53); send a "
    "larger one as a string.",
)
PARSE_CONTENT_ENCODING = _code(
    "parse.content-encoding",
    _E,
    TRANSPORTS,
    "the response body does not decode by its Content-Encoding, or names one the client "
    "does not read",
    advice="Compress the body with what the request's Accept-Encoding offered (gzip or "
    "deflate), or not at all.",
    verdict=_DECODE_FAILURE,
)
PARSE_NOT_OBJECT = _code(
    "parse.not-object",
    _E,
    HTTP_SSE,
    "a frame holds JSON that is not an object",
    verdict=_DECODE_FAILURE,
)
PARSE_NOT_ARRAY = _code(
    "parse.not-array",
    _E,
    TRANSPORTS,
    "a JSON array document is not an array of objects",
    verdict=_DECODE_FAILURE,
)
PARSE_UNKNOWN_FRAMING = _code(
    "parse.unknown-framing",
    _E,
    TRANSPORTS,
    "the first bytes match no framing this reader knows (SSE, JSON lines, JSON array)",
    verdict=_DECODE_FAILURE,
)
PARSE_INCOMPLETE_FRAME = _code(
    "parse.incomplete-frame",
    _W,
    HTTP_SSE,
    "the stream ended inside a frame; the partial frame was discarded",
)
PARSE_PROTO_FRAME = _code(
    "parse.proto-frame",
    _E,
    HTTP_PROTOBUF,
    "a protobuf frame's bytes do not decode as one event (a known field of the wrong wire "
    "type included)",
    advice="Encode each frame with the wire schema's types: a field of a known number must "
    "carry that field's wire type.",
    verdict=Verdict(
        HTTP_PROTOBUF,
        "A frame whose bytes do not decode as a message is malformed transport material and "
        "fatal to the stream.",
    ),
)
PARSE_PROTO_UNKNOWN_ARM = _code(
    "parse.proto-unknown-arm",
    _W,
    HTTP_PROTOBUF,
    "a protobuf frame holds no event this build's wire schema knows (an empty frame, or an "
    "arm it predates), or such a content part; dropped",
)
PARSE_PROTO_INCOMPLETE_FRAME = _code(
    "parse.proto-incomplete-frame",
    _W,
    HTTP_PROTOBUF,
    "the body ended inside a protobuf frame (a truncated run); the partial frame was discarded",
)
SOURCE_IDLE_TIMEOUT = _code(
    "source.idle-timeout",
    _W,
    TRANSPORTS,
    "no event arrived within the idle window (idle_timeout); the stream was ended there",
)
SOURCE_MAX_DURATION = _code(
    "source.max-duration",
    _W,
    TRANSPORTS,
    "the stream was still open at its deadline (max_duration); it was ended there",
)

# --- limits -----------------------------------------------------------------

LIMIT_FRAME_SIZE = _code(
    "limit.frame-bytes",
    _E,
    TRANSPORTS,
    "a frame is larger than the configured limit",
    verdict=_bound("Limits.max_frame_bytes"),
)
LIMIT_DEPTH = _code(
    "limit.depth",
    _E,
    TRANSPORTS,
    "an event, or a state or activity a patch would build, is nested deeper than the "
    "configured limit",
    verdict=_bound("Limits.max_depth"),
)
LIMIT_OPEN_ITEMS = _code(
    "limit.open-items",
    _E,
    TRANSPORTS,
    "more messages, tool calls, spans, steps or subagents open at once than the limit",
    verdict=_bound("Limits.max_open_items"),
)
LIMIT_TEXT_CHARS = _code(
    "limit.text-chars",
    _E,
    TRANSPORTS,
    "a message's text or a tool call's arguments grew past the configured limit",
    verdict=_bound("Limits.max_text_chars"),
)
LIMIT_CONVERSATION_CHARS = _code(
    "limit.conversation-chars",
    _E,
    TRANSPORTS,
    "the text the Conversation holds, all messages and tool calls together, grew past the "
    "configured limit",
    advice="A stream that restates or streams this much text is past what a UI shows: send a "
    "MESSAGES_SNAPSHOT that drops old messages, or raise Limits.max_conversation_chars "
    "(and check the memory it spends, README: What bounds memory).",
    verdict=_bound("Limits.max_conversation_chars"),
)
LIMIT_ITEMS = _code(
    "limit.items",
    _E,
    TRANSPORTS,
    "the stream introduced more messages and tool calls than the configured limit",
    advice="Each message and tool call a stream introduces is remembered to judge later events "
    "against it: split a long conversation over several streams (runs of one thread), or "
    "raise Limits.max_items (about 1 kB each, README: What bounds memory).",
    verdict=_bound("Limits.max_items"),
)
LIMIT_STATE_BYTES = _code(
    "limit.state-bytes",
    _E,
    TRANSPORTS,
    "the state document grew past the configured limit",
    verdict=_bound("Limits.max_state_bytes"),
)
LIMIT_DECOMPRESSION = _code(
    "limit.decompression",
    _E,
    TRANSPORTS,
    "a compressed response body inflated past the configured ratio (a decompression bomb)",
    verdict=_bound("Limits.max_decompression_ratio"),
)
LIMIT_ACTIVITY_BYTES = _code(
    "limit.activity-bytes",
    _E,
    TRANSPORTS,
    "the content of the activity messages grew past the configured limit",
    verdict=_bound("Limits.max_activity_bytes"),
)
LIMIT_PATCH_WORK = _code(
    "limit.patch-work",
    _E,
    TRANSPORTS,
    "patches made the consumer copy or move more than the configured work allowance",
    verdict=_bound("Limits.max_patch_work"),
)
LIMIT_DIAGNOSTICS = _code(
    "limit.diagnostics",
    _W,
    PROCESSING,
    "more diagnostics than the configured limit; further ones are only counted",
)

# --- compat -----------------------------------------------------------------

VERSIONING = "/spec/1.1/basic/versioning"
RUN_INPUT = "/spec/1.1/basic/run-input"

COMPAT_RETIRED_EVENT = _code(
    "compat.retired-event",
    _W,
    VERSIONING,
    "a retired THINKING_* event was translated into its REASONING_* replacement",
    advice="Emit REASONING_* events instead of the retired THINKING_* ones.",
)
COMPAT_RETIRED_NULL = _code(
    "compat.retired-null",
    _W,
    VERSIONING,
    "a whole optional field sent as null (a retired shape) was turned into an absent field",
)
COMPAT_RETIRED_BINARY = _code(
    "compat.retired-binary-part",
    _W,
    VERSIONING,
    "a retired binary content part was translated into a media part with a source",
)
COMPAT_PEER_DROPPED = _code(
    "compat.peer-downgrade-dropped",
    _W,
    VERSIONING,
    "an event an older peer cannot represent was dropped by a version-gated shim",
)
COMPAT_PEER_STRIPPED = _code(
    "compat.peer-downgrade-stripped",
    _I,
    VERSIONING,
    "material an older peer has no concept of was stripped by a version-gated shim (lossless)",
)
COMPAT_VERSION_NEWER = _code(
    "compat.version-newer",
    _W,
    VERSIONING,
    "the producer declares a newer protocol version than this consumer speaks",
)
COMPAT_VERSION_UNINTERPRETABLE = _code(
    "compat.version-uninterpretable",
    _W,
    VERSIONING,
    "the producer declares a protocol version this consumer cannot interpret",
)

# --- outgoing run input -------------------------------------------------------

INPUT_UNRECOGNISED = _code(
    "input.unrecognised",
    _W,
    "/spec/1.1/basic/processing",
    "unrecognised material was removed from the run input before sending",
)
INPUT_RETIRED_SHAPE = _code(
    "input.retired-shape",
    _I,
    VERSIONING,
    "a retired shape in the run input was upgraded to its replacement (lossless)",
)
INPUT_ACTIVITY_REMOVED = _code(
    "input.activity-removed",
    _I,
    RUN_INPUT,
    "activity messages never travel back to the producer and were removed before sending",
)
INPUT_DOWNGRADE_LOSSY = _code(
    "input.downgrade-lossy",
    _W,
    VERSIONING,
    "a version-gated shim for an older peer lost content from the run input",
)
INPUT_DOWNGRADE = _code(
    "input.downgrade",
    _I,
    VERSIONING,
    "a version-gated shim for an older peer reshaped the run input without losing content",
)
INPUT_MALFORMED = _code(
    "input.malformed",
    _E,
    RUN_INPUT,
    "a known field of the run input holds a value the schema rejects; nothing was sent",
    verdict=Verdict(
        PROCESSING,
        "Immediately before transmission, a consumer MUST remove unrecognised material from the "
        "run input, SHOULD warn about what it removed, and MUST treat a malformed known field as "
        "fatal before anything is sent.",
    ),
)

# --- enforce ----------------------------------------------------------------

EVENT_MODEL = "/spec/1.1/basic/index"

ENFORCE_UNKNOWN_EVENT = _code(
    "enforce.unknown-event",
    _W,
    PROCESSING,
    "an event of a type this consumer does not recognise was dropped",
    advice="Send only the event types of the protocol version you declare; for your own data use "
    "CUSTOM or RAW events.",
)
ENFORCE_STRIPPED = _code(
    "enforce.stripped",
    _W,
    PROCESSING,
    "an undescribed property or an unrecognised union member or value was stripped",
    advice="Remove the member from the producer, or spell it as schema.json does: the message "
    "names the path, and suggests the known field one edit away (messageID → messageId).",
)
ENFORCE_DROPPED = _code(
    "enforce.unrecognised-required",
    _W,
    PROCESSING,
    "an event was dropped: an unrecognised value sits in one of its required fields",
)
ENFORCE_MALFORMED = _code(
    "enforce.malformed",
    _E,
    PROCESSING,
    "a described field holds a value the schema rejects",
    advice="Send the field with the type schema.json gives it; the message names the path, what "
    "was expected and what arrived.",
    verdict=_MALFORMED_KNOWN_VALUE,
)
ENFORCE_NULL_OPTIONAL = _code(
    "enforce.null-optional",
    _E,
    EVENT_MODEL,
    "an optional field was sent as null; absent means absent, the field must be omitted",
    advice="Leave an optional field out instead of sending null: absent means absent.",
    verdict=_MALFORMED_KNOWN_VALUE,
)

# --- expand -----------------------------------------------------------------

STREAMING = "/spec/1.1/basic/patterns/streaming"
SUBAGENTS = "/spec/1.1/events/subagents"

EXPAND_FIRST_CHUNK = _code(
    "expand.first-chunk-incomplete",
    _E,
    STREAMING,
    "the first chunk of an item lacks a field opening it requires (an id, a tool name)",
    advice="Put the opening fields (messageId and role, or toolCallId and toolCallName) on the "
    "first chunk of each item.",
    verdict=Verdict(
        STREAMING,
        "A consumer MUST treat a first chunk missing a required field as a protocol violation "
        "rather than inventing an identifier.",
    ),
)
EXPAND_CONFLICTING_REPEAT = _code(
    "expand.conflicting-repeat",
    _E,
    STREAMING,
    "a continuation chunk repeats an opener field with a value the opener did not establish",
    verdict=Verdict(
        STREAMING, "A consumer MUST treat a conflicting repeat as a protocol violation."
    ),
)
EXPAND_AMBIGUOUS = _code(
    "expand.ambiguous-continuation",
    _E,
    STREAMING,
    "a chunk with neither an id nor a tag could continue open streams in several lanes",
    verdict=Verdict(
        STREAMING,
        "When several lanes hold open streams of that kind and none of them is the parent's, the "
        "continuation has no unique referent and MUST be rejected as ambiguous — a producer "
        "running parallel subagents MUST attribute its continuations.",
    ),
)
EXPAND_OWNER_CONFLICT = _code(
    "expand.owner-conflict",
    _E,
    SUBAGENTS,
    "a chunk names an open item under a subagentRunId other than the item's owner",
    verdict=_CONTINUATION_TAG,
)
EXPAND_MALFORMED_CHUNK = _code(
    "expand.malformed-chunk",
    _E,
    PROCESSING,
    "a chunk reached expansion with a malformed known field (expansion ran before enforce)",
    verdict=Verdict(
        PROCESSING,
        "A chunk is an event in its own right, and it MUST be judged as one: whichever stage "
        "meets a malformed chunk first — enforcement on the canonical order above, expansion "
        "where a middleware chain expands early — MUST reject it rather than repair it, and MUST "
        "NOT normalise, default or conceal a malformed known value enforcement would reject.",
    ),
)

# --- verify -----------------------------------------------------------------

LIFECYCLE = "/spec/1.1/events/lifecycle"
TEXT_MESSAGES = "/spec/1.1/events/text-messages"
TOOL_CALLS = "/spec/1.1/events/tool-calls"
REASONING = "/spec/1.1/events/reasoning"
INTERRUPTS = "/spec/1.1/basic/patterns/interrupt-resume"

VERIFY_FIRST_EVENT = _code(
    "verify.first-event",
    _E,
    LIFECYCLE,
    "the stream begins with an event other than RUN_STARTED or RUN_ERROR",
    advice="Send RUN_STARTED first: every event belongs to a run, and a run opens with it "
    "(RUN_ERROR may open a stream that fails before a run begins).",
    verdict=Verdict(
        LIFECYCLE,
        "A producer MUST NOT emit any other event first, and a consumer MUST treat a stream "
        "that opens with anything else as a protocol violation.",
    ),
)
VERIFY_NESTED_RUN = _code(
    "verify.nested-run",
    _E,
    LIFECYCLE,
    "a RUN_STARTED arrived while a run was still active",
    verdict=_LIFECYCLE_FATAL,
)
VERIFY_AFTER_CLOSE = _code(
    "verify.after-close",
    _E,
    LIFECYCLE,
    "an event other than RUN_STARTED (or a late RUN_ERROR) arrived after a run closed",
    advice="Start a new run (RUN_STARTED) before sending more events once a run has finished or "
    "failed.",
    verdict=Verdict(
        LIFECYCLE, "A consumer MUST reject any other event that arrives after a run has closed."
    ),
)
VERIFY_OPEN_AT_FINISH = _code(
    "verify.open-at-finish",
    _E,
    LIFECYCLE,
    "RUN_FINISHED arrived while something the run opened was still open",
    advice="End what the run opened (text messages, tool calls, reasoning, steps, subagents) "
    "before RUN_FINISHED; the message names what is still open.",
    verdict=_LIFECYCLE_FATAL,
)
VERIFY_STEP = _code(
    "verify.step",
    _E,
    LIFECYCLE,
    "a step was opened while open, or finished without being open (per name and owner)",
    verdict=_LIFECYCLE_FATAL,
)
VERIFY_TEXT_MESSAGE = _code(
    "verify.text-message-sequence",
    _E,
    TEXT_MESSAGES,
    "a text message was opened while open, or continued or closed while not open",
    advice="Send TEXT_MESSAGE_START, then its CONTENT, then TEXT_MESSAGE_END, for the same "
    "messageId; do not reopen a message that is open.",
    verdict=Verdict(
        TEXT_MESSAGES,
        "A TEXT_MESSAGE_CONTENT or TEXT_MESSAGE_END for a messageId that is not open, or a "
        "TEXT_MESSAGE_START for one that is, is a malformed sequence and fatal to the run.",
    ),
)
VERIFY_TOOL_CALL = _code(
    "verify.tool-call-sequence",
    _E,
    TOOL_CALLS,
    "a tool call was opened while open, or continued or closed while not open",
    advice="Send TOOL_CALL_START, then its ARGS, then TOOL_CALL_END, for the same toolCallId; do "
    "not reopen a call that is open.",
    verdict=Verdict(
        TOOL_CALLS,
        "The streaming pattern's sequence rules apply unchanged: continuing or closing a call "
        "that is not open, or reopening one that is, is fatal.",
    ),
)
VERIFY_REASONING = _code(
    "verify.reasoning-sequence",
    _E,
    REASONING,
    "a reasoning span or message was opened while open, or continued or closed while not open",
    verdict=Verdict(
        REASONING,
        "A consumer MUST detect a violation of that discipline and fail the run, on spans and on "
        "reasoning messages alike:",
    ),
)
VERIFY_ATTRIBUTION = _code(
    "verify.attribution-mismatch",
    _E,
    "/spec/1.1/events/subagents",
    "an event continuing an item carries a subagentRunId that disagrees with the item's owner",
    verdict=_CONTINUATION_TAG,
)
VERIFY_SUBAGENT = _code(
    "verify.subagent-lifecycle",
    _E,
    SUBAGENTS,
    "a subagent invocation was closed (SUBAGENT_FINISHED or SUBAGENT_ERROR) while not active",
    verdict=Verdict(
        SUBAGENTS,
        "The official conformance corpus holds this fatal (subagent-finished-unstarted-fatal): a "
        "terminal event closes an invocation, and one that is not active leaves it nothing to "
        "close. The subagents page words no consumer verdict of its own here; the corpus is "
        "followed because it does not mark this as a gap against the spec.",
        quoted=False,
    ),
)
VERIFY_SUBAGENT_ORDER = _code(
    "verify.subagent-announcement",
    _W,
    SUBAGENTS,
    "a subagent invocation was announced after its events, announced again, nested under a "
    "parent not active, or used after it ended (producer rules; the stream goes on)",
    advice="Send SUBAGENT_STARTED before any event attributed to the invocation, once per "
    "invocation, after its parent's; give a new invocation a new subagentRunId.",
)
VERIFY_CALL_ATTRIBUTION = _code(
    "verify.call-attribution",
    _W,
    SUBAGENTS,
    "a tool call is attributed to another owner than the message that carries it",
    advice="Tag a tool call as its message is tagged (or leave it untagged: it inherits the "
    "message's owner).",
)
VERIFY_CANCELLED_RESULT = _code(
    "verify.cancelled-result",
    _W,
    LIFECYCLE,
    "a run finished with the cancelled outcome carries a result, which it SHOULD NOT",
)
VERIFY_UNEXPANDED_CHUNK = _code(
    "verify.unexpanded-chunk",
    _E,
    "/spec/1.1/basic/patterns/streaming",
    "a *_CHUNK event reached verification unexpanded (the pipeline has no expand stage)",
    verdict=Verdict(
        PROCESSING,
        "Verification MUST run after expansion, because what it checks — that messages and "
        "calls open before they continue and close after — only exists once a chunk has become "
        "the events it stands for.",
    ),
)
VERIFY_UNREADABLE = _code(
    "verify.unreadable-event",
    _E,
    PROCESSING,
    "an event lacks a field verification reads (the pipeline has no enforce stage)",
    verdict=Verdict(
        PROCESSING,
        "Middleware — anything a consumer installs to translate, observe or rewrite the stream — "
        "MUST run before enforcement, and enforcement MUST run before verification and before "
        "application code sees anything.",
    ),
)
VERIFY_TRUNCATED = _code(
    "verify.truncated",
    _E,
    TRANSPORTS,
    "the stream ended while a run was active, or before any event: the run has no outcome",
    advice="End every run with RUN_FINISHED or RUN_ERROR before closing the connection; if the "
    "connection drops, the run is lost and must be retried.",
    verdict=Verdict(
        TRANSPORTS,
        "A consumer MUST NOT synthesize a RUN_FINISHED for it and MUST NOT report it as having "
        "succeeded; everything the run delivered before the break remains delivered.",
    ),
)

# --- reconcile --------------------------------------------------------------

CAPABILITIES = "/spec/1.1/basic/capabilities"

RECONCILE_DECLARATION_UNUSABLE = _code(
    "reconcile.declaration-unusable",
    _W,
    CAPABILITIES,
    "a known field of the capabilities declaration is malformed; the declaration is not used",
)
RECONCILE_DECLARATION_UNRECOGNISED = _code(
    "reconcile.declaration-unrecognised",
    _W,
    CAPABILITIES,
    "the declaration carries a group or field this version does not define; kept, not read",
)
RECONCILE_FALSE_CONTRADICTED = _code(
    "reconcile.false-contradicted",
    _W,
    CAPABILITIES,
    "the stream uses a capability the declaration explicitly sets to false",
    advice="Set the capability to true in the declaration, or stop using it in the agent.",
)
RECONCILE_UNLISTED_TOOL = _code(
    "reconcile.unlisted-tool",
    _W,
    CAPABILITIES,
    "a tool was called that is in neither tools.items nor the run input's tools",
    advice="List the tool in the declaration's tools.items, or have the application declare it in "
    "the run input, or stop calling it.",
)
RECONCILE_CLIENT_TOOL = _code(
    "reconcile.client-tool",
    _W,
    CAPABILITIES,
    "one of the application's tools was called under tools.clientProvided: false",
)
RECONCILE_PARALLEL_CALLS = _code(
    "reconcile.parallel-calls",
    _W,
    CAPABILITIES,
    "tool calls were in flight at the same time under tools.parallelCalls: false",
)
RECONCILE_UNLISTED_SUBAGENT = _code(
    "reconcile.unlisted-subagent",
    _W,
    CAPABILITIES,
    "a subagent was started under a name multiAgent.subagents does not list",
)
RECONCILE_TRANSPORT = _code(
    "reconcile.transport",
    _W,
    CAPABILITIES,
    "the stream arrived over a transport the declaration explicitly sets to false",
)
RECONCILE_INPUT_MODALITY = _code(
    "reconcile.input-modality",
    _W,
    CAPABILITIES,
    "the run input carries a modality multimodal.input explicitly sets to false",
)
RECONCILE_INPUT_REFUSED = _code(
    "reconcile.input-refused",
    _W,
    CAPABILITIES,
    "the run input offers tools, resume entries or edited arguments the declaration refuses",
)
RECONCILE_RUN_SUMMARY = _code(
    "reconcile.run-summary",
    _I,
    CAPABILITIES,
    "per run: declared capabilities exercised and not, and undeclared ones used",
)

# --- lint: what the stream says about itself ----------------------------------

STATE = "/spec/1.1/events/state"

LINT_SNAPSHOT_CONTRADICTS = _code(
    "lint.snapshot-contradicts-stream",
    _W,
    STATE,
    "a MESSAGES_SNAPSHOT restates a message or tool call this run streamed with other "
    "content, arguments or name",
    advice=(
        "Stream what you will restate: the typical cause is a dropped first argument chunk, "
        "or a final snapshot that blanks a reply holding reasoning."
    ),
)
LINT_SECOND_RESULT = _code(
    "lint.second-tool-result",
    _W,
    TOOL_CALLS,
    "a second tool message answers one toolCallId (a TOOL_CALL_RESULT, or a snapshot's tool "
    "message under a new id)",
    advice="Restate a streamed result under its own `messageId`; answer a call once.",
)
LINT_REOPEN_DISAGREES = _code(
    "lint.reopen-disagrees",
    _W,
    TOOL_CALLS,
    "a reopened message or tool call disagrees with what it reopens (role, name, parent, owner)",
    advice="Reopen with the item's own values, or use a new id for a new item.",
)
LINT_HISTORY_RESTREAMED = _code(
    "lint.history-restreamed",
    _W,
    LIFECYCLE,
    "a message or tool call the run input already held is streamed again as new material",
    advice="Send history the consumer already has as `MESSAGES_SNAPSHOT`, or not at all.",
)
LINT_PENDING_OMITTED = _code(
    "lint.pending-omitted",
    _W,
    TOOL_CALLS,
    "a run finished with frontend tool calls unanswered and no pendingToolCallIds",
    advice=(
        "Name the unanswered calls in `outcome.pendingToolCallIds`, in the order they were made."
    ),
)
LINT_RUN_IDENTITY = _code(
    "lint.run-identity",
    _W,
    "/spec/1.1/basic/run-input",
    "a run's identifiers disagree: with its run input (threadId, runId), between its "
    "RUN_STARTED and RUN_FINISHED, or with the input RUN_STARTED echoes",
    advice="Echo the input's `threadId` on every run and its `runId` on the requested run; "
    "close a run with the ids it started with.",
)
LINT_THREAD_CHANGED = _code(
    "lint.thread-changed",
    _W,
    "/spec/1.1/basic/run-input",
    "a run on the stream names another thread than the runs before it",
    advice="Carry one thread per stream: every run on it carries the input's `threadId`.",
)
LINT_RUN_ID_REUSED = _code(
    "lint.run-id-reused",
    _W,
    EVENT_MODEL,
    "a RUN_STARTED reuses the runId of an earlier run on the stream",
    advice="Mint a new runId for every run; a runId names one run of the thread.",
)
LINT_MESSAGE_ID_REUSED = _code(
    "lint.message-id-reused",
    _W,
    EVENT_MODEL,
    "a messageId that names a message of one kind names a new message of another kind (or a "
    "second tool result); the Conversation holds the later one in its place",
    advice="Mint a new messageId for each message: an id is unique within its thread.",
)
LINT_INTERRUPT_UNKNOWN_CALL = _code(
    "lint.interrupt-unknown-call",
    _W,
    INTERRUPTS,
    "an interrupt's toolCallId names a call neither the stream nor the input's history holds",
    advice="Name the call the approval is for, after streaming it.",
)
LINT_ARGUMENTS_NOT_JSON = _code(
    "lint.arguments-not-json",
    _W,
    TOOL_CALLS,
    "a tool call's complete argument text does not parse as JSON (a convention, not a rule)",
    advice=(
        "Stream every argument chunk; this catches a dropped first chunk even when no "
        "snapshot follows."
    ),
)
LINT_USAGE_ARITHMETIC = _code(
    "lint.usage-arithmetic",
    _W,
    LIFECYCLE,
    "a usage entry's counts disagree: a part exceeds its total, or totalTokens is not "
    "inputTokens plus outputTokens",
    advice=(
        "Translate the provider's counts into the protocol's accounting: add a part reported "
        "beside a smaller total into it, never twice."
    ),
)
LINT_RESULT_BEFORE_END = _code(
    "lint.result-before-call-end",
    _W,
    TOOL_CALLS,
    "a TOOL_CALL_RESULT answers a call before its TOOL_CALL_END: the tool ran on arguments that "
    "were not final",
    advice="Close the call (TOOL_CALL_END) before running the tool and sending its result: "
    "until then the argument text is only a prefix.",
)
LINT_RESULT_UNKNOWN_CALL = _code(
    "lint.result-for-unknown-call",
    _W,
    TOOL_CALLS,
    "a TOOL_CALL_RESULT answers a call neither the stream nor the run input's history carried",
    advice="Stream the call (TOOL_CALL_START … END) before its result; a call restated only by "
    "a later MESSAGES_SNAPSHOT, or suspended before it was streamed, reaches the UI after its "
    "answer.",
)
LINT_RESULT_UNSEEN = _code(
    "lint.result-call-unseen",
    _W,
    TOOL_CALLS,
    "a TOOL_CALL_RESULT answers a call from before the stream, and no run input says whether "
    "the history holds it",
    advice="Pass the run input with --input (or from the client) so the answered call can be "
    "looked for in the history.",
)
LINT_RESULT_FRONTEND = _code(
    "lint.result-for-frontend-tool",
    _W,
    TOOL_CALLS,
    "a TOOL_CALL_RESULT answers a call to one of the run input's tools, which the application "
    "answers",
    advice="Leave a frontend tool's call unanswered and finish the run: the application runs "
    "it and answers in the next run's input.",
)
LINT_PENDING_INEXACT = _code(
    "lint.pending-inexact",
    _W,
    TOOL_CALLS,
    "pendingToolCallIds is not exactly the calls the run started and did not answer",
    advice="List in pendingToolCallIds exactly the tool calls the run started and did not "
    "answer, in the order they were made.",
)
LINT_PENDING_UNLISTED = _code(
    "lint.pending-unlisted-tool",
    _W,
    TOOL_CALLS,
    "a run ended leaving a call unanswered whose tool the run input did not list: no one is "
    "there to answer it",
    advice="Answer your own (backend) tools in the run with TOOL_CALL_RESULT; call frontend "
    "tools only from the input's `tools`.",
)
LINT_INTERRUPT_OUTCOME = _code(
    "lint.interrupt-outcome",
    _W,
    INTERRUPTS,
    "an interrupt outcome repeats an interrupt id, or disagrees with a suspended subagent, or a "
    "run with a suspended subagent finished as success",
    advice="Give each interrupt a unique id, carry every interrupt a suspended subagent named "
    "(attributed to it), and end such a run with the interrupt outcome.",
)
LINT_SNAPSHOT_DROPS = _code(
    "lint.snapshot-drops-message",
    _W,
    STATE,
    "a MESSAGES_SNAPSHOT leaves out a message this run streamed: a UI following state.mdx "
    "removes it",
    advice="Restate every message the run streamed in each MESSAGES_SNAPSHOT, under its own id.",
)
LINT_SNAPSHOT_RENAMES = _code(
    "lint.snapshot-renames-message",
    _W,
    STATE,
    "a MESSAGES_SNAPSHOT restates a message this run streamed under a new id: a UI removes the "
    "message it rendered and appends a copy",
    advice="Restate a streamed message under the messageId it was streamed with (and a tool "
    "call under its toolCallId).",
)
LINT_TEXT_BUDGET = _code(
    "lint.text-budget",
    _I,
    PROCESSING,
    "a run streamed more text than lint keeps (Limits.max_text_chars): the rest of the run's "
    "text is not compared with snapshots, history or JSON",
    advice=(
        "Nothing is wrong with the stream; raise `max_text_chars` to have lint compare longer "
        "runs (it bounds what lint holds per run)."
    ),
)
LINT_RUN_REPORT = _code(
    "lint.run-report",
    _I,
    PROCESSING,
    "per run that had lint findings: the findings by code, with counts",
)

# --- metadata and the conversation -------------------------------------------

SNAPSHOTS = "/spec/1.1/basic/patterns/snapshots"
ACTIVITY = "/spec/1.1/events/activity"

CONVERSATION_STATE_PATCH = _code(
    "conversation.state-patch-failed",
    _W,
    SNAPSHOTS,
    "a well-formed STATE_DELTA did not apply; the state was left exactly as it was",
    advice="Send STATE_SNAPSHOT before deltas, and patch paths that exist in it. For a recording, "
    "pass the run input's state with --input: the deltas apply to that baseline.",
)
CONVERSATION_ACTIVITY_PATCH = _code(
    "conversation.activity-patch-failed",
    _W,
    ACTIVITY,
    "a well-formed ACTIVITY_DELTA did not apply; the activity was left exactly as it was",
)
CONVERSATION_ACTIVITY_TARGET = _code(
    "conversation.activity-target-missing",
    _W,
    ACTIVITY,
    "an activity event names a message that does not exist or is not an activity message; "
    "it was skipped",
)
CONVERSATION_ENCRYPTED_TARGET = _code(
    "conversation.encrypted-value-target-missing",
    _W,
    "/spec/1.1/events/reasoning",
    "a REASONING_ENCRYPTED_VALUE names no message or tool call the consumer holds; "
    "the value was dropped",
)
CONVERSATION_NO_CARRIER = _code(
    "conversation.tool-call-no-carrier",
    _W,
    "/spec/1.1/events/tool-calls",
    "a tool call's parentMessageId names a message that is not an assistant message; "
    "the call is kept off the message list",
)

# --- dispatch and transports --------------------------------------------------

HANDLER_FAILED = _code(
    "dispatch.handler-failed",
    _E,
    PROCESSING,
    "an application handler raised",
    verdict=Verdict(
        PROCESSING,
        "Not the producer's fault: the application's own handler raised, and the stream cannot "
        "be handed on to a handler that failed. The verdict says handler-failed, never that the "
        "stream was malformed.",
        quoted=False,
    ),
)
TRANSPORT_CONTENT_TYPE = _code(
    "transport.content-type",
    _W,
    HTTP_SSE,
    "the response is not text/event-stream; its body was read by the framing it shows",
    advice="Answer with Content-Type: text/event-stream, as the HTTP binding requires.",
)
TRANSPORT_CONNECTION_LOST = _code(
    "transport.connection-lost",
    _W,
    HTTP_SSE,
    "the connection failed mid-body; the stream ended there and is judged as it stands",
    advice="Find what closed the connection (a proxy timeout, a crashed worker); send keep-alive "
    "comments during long pauses.",
)
RESUME_UNCOVERED = _code(
    "input.resume-uncovered",
    _E,
    "/spec/1.1/basic/patterns/interrupt-resume",
    "a resuming input leaves an interrupt of the interrupted run with no entry",
    verdict=Verdict(
        INTERRUPTS,
        "A consumer MUST reject a resuming input that leaves an interrupt uncovered before the "
        "run starts — before anything is sent — and MUST NOT silently continue past an "
        "interrupt it has no entry for.",
    ),
)
RESUME_UNKNOWN = _code(
    "input.resume-unknown",
    _E,
    "/spec/1.1/basic/patterns/interrupt-resume",
    "a resume entry names no interrupt of the run being continued",
    verdict=Verdict(
        INTERRUPTS,
        "Each entry's interruptId MUST name an interrupt from the run being continued — the "
        "most recent interrupted run on the thread.",
    ),
)
RESUME_EXPIRED = _code(
    "input.resume-expired",
    _E,
    "/spec/1.1/basic/patterns/interrupt-resume",
    "a resume entry answers an interrupt the consumer judges expired",
    verdict=Verdict(
        INTERRUPTS,
        "The rule attaches to the judgment, not to a parse the schema refuses to specify: an "
        "interrupt the consumer judges expired can no longer be answered — the consumer rejects "
        "a resume entry resolving it before the run starts, as it rejects an uncovered "
        "interrupt.",
    ),
)
