"""Codes of the boundaries before verification: retired shapes (compat), the outgoing run
input, enforcement of the schema, and chunk expansion."""

from __future__ import annotations

from agui_pipeline.catalog.code import (
    _CONTINUATION_TAG,
    _E,
    _I,
    _MALFORMED_KNOWN_VALUE,
    _W,
    EVENT_MODEL,
    PROCESSING,
    RUN_INPUT,
    STREAMING,
    SUBAGENTS,
    VERSIONING,
    Ground,
    _code,
)

# --- compat -----------------------------------------------------------------


# The retired binary part's translation, worded alike by the stream's shim and the run
# input's (pipeline/model/retired.py gives the fields; each boundary its code and form).
_BINARY = (
    "retired binary content part at {pointer} translated into {media} part with a {source} "
    "source (from its '{field}')"
)
_NOT_CARRIED = "; not carried: {lost} — a media part has one source and no filename"
_OLD_PEER = (
    "; a peer at or below 0.0.47 predates media parts and may not read it (the upgrade is not "
    "reversed: a downgrade may not invent the retired shape)"
)

COMPAT_RETIRED_EVENT = _code(
    "compat.retired-event",
    _W,
    VERSIONING,
    "a retired THINKING_* event was translated into its REASONING_* replacement",
    advice="Emit REASONING_* events instead of the retired THINKING_* ones.",
    message="retired event {retired} translated into {replacement} (messageId "
    "{message_id}){extra}; DEPRECATIONS.md",
)
COMPAT_RETIRED_NULL = _code(
    "compat.retired-null",
    _W,
    VERSIONING,
    "a whole optional field sent as null (a retired shape) was turned into an absent field",
    advice=(
        "Leave an optional field with no value out of the event instead of sending `null`; it "
        "was read as absent, so nothing was lost."
    ),
    message="retired shape '{field}: null' on {where} turned into an absent field at /{field} "
    "(absent means absent; DEPRECATIONS.md)",
    forms={
        "nested": "retired shape '{field}: null' {where} turned into an absent field at "
        "{pointer} (absent means absent; DEPRECATIONS.md)",
    },
)
COMPAT_RETIRED_BINARY = _code(
    "compat.retired-binary-part",
    _W,
    VERSIONING,
    "a retired binary content part was translated into a media part with a source",
    advice=(
        "Send media as a media part whose `source` says where its bytes are, in place of the "
        "retired binary part (DEPRECATIONS.md); a media part carries one source and no filename."
    ),
    message=_BINARY + " (DEPRECATIONS.md)",
    forms={"lossy": _BINARY + _NOT_CARRIED + " (DEPRECATIONS.md)"},
)
COMPAT_PEER_DROPPED = _code(
    "compat.peer-downgrade-dropped",
    _W,
    VERSIONING,
    "an event an older peer cannot represent was dropped by a version-gated shim",
    advice=(
        "Set peer_max_protocol_version to the version the peer really speaks: a peer newer than "
        "0.0.57 keeps subagent events; otherwise upgrade the peer if it needs them."
    ),
    message="{kind} dropped: the peer's protocol version (peer_max_protocol_version "
    "{peer_setting}) predates subagents, so this shim removes their lifecycle events; "
    "the attributed work is kept, flattened into the run's thread; a peer newer than "
    "0.0.57 keeps subagent events",
)
COMPAT_PEER_STRIPPED = _code(
    "compat.peer-downgrade-stripped",
    _I,
    VERSIONING,
    "material an older peer has no concept of was stripped by a version-gated shim (lossless)",
    advice=(
        "Nothing was lost; if the peer is newer than 0.0.57, raise peer_max_protocol_version so "
        "subagentRunId reaches it."
    ),
    message="subagentRunId stripped at {paths} for a peer that predates subagents "
    "(peer_max_protocol_version {peer_setting}); lossless, and every later strip on this "
    "stream is counted, not reported",
)
COMPAT_VERSION_NEWER = _code(
    "compat.version-newer",
    _W,
    VERSIONING,
    "the producer declares a newer protocol version than this consumer speaks",
    advice=(
        "Upgrade agui-pipeline to a release that speaks the producer's protocol version; until "
        "then what it does not recognise is dropped or stripped, with warnings."
    ),
    message="the producer declares protocolVersion {declared} at /protocolVersion, newer than "
    "{spoken}, which this consumer speaks; proceeding under the processing "
    "model (what this consumer does not recognise is dropped or stripped with warnings) "
    "— upgrade agui-pipeline to read it all",
)
COMPAT_VERSION_UNINTERPRETABLE = _code(
    "compat.version-uninterpretable",
    _W,
    VERSIONING,
    "the producer declares a protocol version this consumer cannot interpret",
    advice=(
        "Declare protocolVersion as `MAJOR.MINOR` (such as `1.1`): the version the producer "
        "itself speaks."
    ),
    message="the producer declares protocolVersion {declared} at /protocolVersion, which is not "
    "a MAJOR.MINOR version this consumer can interpret; handled like a newer one: "
    "proceeding under {spoken}'s processing model (what this consumer does not "
    "recognise is dropped or stripped with warnings)",
)

# --- outgoing run input -------------------------------------------------------

INPUT_UNRECOGNISED = _code(
    "input.unrecognised",
    _W,
    "/spec/1.1/basic/processing",
    "unrecognised material was removed from the run input before sending",
    advice=(
        "Build the run input from the fields RunAgentInput defines; application data meant for "
        "the agent goes in `forwardedProps`, which travels untouched."
    ),
    message="unrecognised property removed from the run input before sending: {base}/{key}",
    forms={
        "described": "{what}; removed from the run input before sending: {pointer}",
    },
)
INPUT_RETIRED_SHAPE = _code(
    "input.retired-shape",
    _I,
    VERSIONING,
    "a retired shape in the run input was upgraded to its replacement (lossless)",
    advice=(
        "Have the application build the current shape (DEPRECATIONS.md) so nothing needs "
        "upgrading; where the message names what was not carried, the agent never got it."
    ),
    message="retired shape '{field}: null' {where} turned into an absent field at {pointer} "
    "(absent means absent; DEPRECATIONS.md)",
    forms={
        "binary": _BINARY + " (DEPRECATIONS.md)",
        "binary-lossy": _BINARY + _NOT_CARRIED + " (DEPRECATIONS.md)",
        "binary-old-peer": _BINARY + " (DEPRECATIONS.md)" + _OLD_PEER,
        "binary-lossy-old-peer": _BINARY + _NOT_CARRIED + " (DEPRECATIONS.md)" + _OLD_PEER,
    },
)
INPUT_ACTIVITY_REMOVED = _code(
    "input.activity-removed",
    _I,
    RUN_INPUT,
    "activity messages never travel back to the producer and were removed before sending",
    advice=(
        "Nothing to fix: activity messages are the consumer's to render and never go back; "
        "leave them out of the history the application sends to quiet this."
    ),
    message="activity message removed before sending: {pointer} (activity messages are the "
    "consumer's rendering material and never travel back to the producer)",
)
INPUT_DOWNGRADE_LOSSY = _code(
    "input.downgrade-lossy",
    _W,
    VERSIONING,
    "a version-gated shim for an older peer lost content from the run input",
    advice=(
        "Set peer_max_protocol_version to the version the peer really speaks; a peer at 0.0.40 "
        "or later receives content parts whole, so upgrade the peer if the parts matter."
    ),
    message="{pointer}/content flattened to its text parts concatenated, for a peer at or below "
    "0.0.39, which takes content as a string; {detail} — a peer at 0.0.40 or later "
    "receives the parts",
)
INPUT_DOWNGRADE = _code(
    "input.downgrade",
    _I,
    VERSIONING,
    "a version-gated shim for an older peer reshaped the run input without losing content",
    advice=(
        "Nothing was lost from the messages; if the peer is newer than 0.0.57, raise "
        "peer_max_protocol_version so their subagentRunId travels too."
    ),
    message="subagentRunId removed from {count} message(s) ({pointers}) for a peer at or below "
    "0.0.57, which predates subagents (lossless: the messages keep their place)",
)
INPUT_MALFORMED = _code(
    "input.malformed",
    _E,
    RUN_INPUT,
    "a known field of the run input holds a value the schema rejects; nothing was sent",
    advice=(
        "Fix the value at the pointer the message names so it has the type schema.json's "
        "RunAgentInput gives that field; the input is never sent repaired."
    ),
    ground=Ground(
        PROCESSING,
        "Immediately before transmission, a consumer MUST remove unrecognised material from the "
        "run input, SHOULD warn about what it removed, and MUST treat a malformed known field as "
        "fatal before anything is sent.",
    ),
    message="expected a JSON value at {at}, found {value}; nothing was sent",
    forms={
        "not-object": "expected the run input as a JSON object, found {raw}",
        "too-deep": "the input is nested more than {max_depth} levels deep at {pointer}, deeper "
        "than it "
        "can be encoded; nothing was sent",
        "schema": "malformed run input at {at}: {msg}, found {found}; nothing was sent",
        "key": "expected string keys at {at}, found the key {key!r}",
    },
)

# --- enforce ----------------------------------------------------------------


ENFORCE_UNKNOWN_EVENT = _code(
    "enforce.unknown-event",
    _W,
    PROCESSING,
    "an event of a type this consumer does not recognise was dropped",
    advice="Send only the event types of the protocol version you declare; for your own data use "
    "CUSTOM or RAW events.",
    message="dropped an event of unknown type {kind}{suggestion}",
)
ENFORCE_STRIPPED = _code(
    "enforce.stripped",
    _W,
    PROCESSING,
    "an undescribed property or an unrecognised union member or value was stripped",
    advice="Remove the member from the producer, or spell it as schema.json does: the message "
    "names the path, and suggests the known field one edit away (messageID → messageId).",
    message="stripped {pointer} from {kind}: {why}",
)
ENFORCE_DROPPED = _code(
    "enforce.unrecognised-required",
    _W,
    PROCESSING,
    "an event was dropped: an unrecognised value sits in one of its required fields",
    advice=(
        "Put only values schema.json defines in an event's required fields: an unknown value "
        "there leaves nothing of the event to keep, so it is dropped whole."
    ),
    message="dropped a {kind} event: its required {pointer} holds an {why}",
)
ENFORCE_MALFORMED = _code(
    "enforce.malformed",
    _E,
    PROCESSING,
    "a described field holds a value the schema rejects",
    advice="Send the field with the type schema.json gives it; the message names the path, what "
    "was expected and what arrived.",
    ground=_MALFORMED_KNOWN_VALUE,
    message="{kind} {pointer}: expected {expected}, received {received} (schema.json#{definition})",
    forms={
        "bare": "{kind} {pointer}: expected {expected}, received {received}",
        "type": "/type: expected an event type (a string), received {kind}",
    },
)
ENFORCE_NULL_OPTIONAL = _code(
    "enforce.null-optional",
    _E,
    EVENT_MODEL,
    "an optional field was sent as null; absent means absent, the field must be omitted",
    advice="Leave an optional field out instead of sending null: absent means absent.",
    ground=_MALFORMED_KNOWN_VALUE,
    message="{kind} {pointer}: expected {expected}, received {received} (schema.json#{definition})",
    forms={"bare": "{kind} {pointer}: expected {expected}, received {received}"},
)

# --- expand -----------------------------------------------------------------


EXPAND_FIRST_CHUNK = _code(
    "expand.first-chunk-incomplete",
    _E,
    STREAMING,
    "the first chunk of an item lacks a field opening it requires (an id, a tool name)",
    advice="Put the opening fields (messageId and role, or toolCallId and toolCallName) on the "
    "first chunk of each item.",
    ground=Ground(
        STREAMING,
        "A consumer MUST treat a first chunk missing a required field as a protocol violation "
        "rather than inventing an identifier.",
    ),
    message="First {chunk} must have a {id_key}: this one carries no /{id_key} and there is no "
    "open {noun} chunk stream for it to continue ({why}); an identifier is never invented",
    forms={
        "tool-call-name": "First TOOL_CALL_CHUNK must have a toolCallName: the chunk opening "
        "call {item_id!r} "
        "carries no /toolCallName, and a call is never opened without one",
    },
)
EXPAND_CONFLICTING_REPEAT = _code(
    "expand.conflicting-repeat",
    _E,
    STREAMING,
    "a continuation chunk repeats an opener field with a value the opener did not establish",
    advice=(
        "On a later chunk, repeat an opener field only with the value the first chunk gave, or "
        "leave it out; a different value belongs to a new item with its own id."
    ),
    ground=Ground(STREAMING, "A consumer MUST treat a conflicting repeat as a protocol violation."),
    message="{chunk} /{key} {value!r} does not match the open stream's {key}: {noun} {id!r} has "
    "{had}; a continuation may repeat an opener field only with the same value",
)
EXPAND_AMBIGUOUS = _code(
    "expand.ambiguous-continuation",
    _E,
    STREAMING,
    "a chunk with neither an id nor a tag could continue open streams in several lanes",
    advice=(
        "While subagents run in parallel, give every continuation chunk its item's id (or its "
        "subagentRunId) so it names one open stream."
    ),
    ground=Ground(
        STREAMING,
        "When several lanes hold open streams of that kind and none of them is the parent's, the "
        "continuation has no unique referent and MUST be rejected as ambiguous — a producer "
        "running parallel subagents MUST attribute its continuations.",
    ),
    message="expected a {chunk} without /{id_key} or /subagentRunId to continue the parent "
    "agent's open {noun} or the only open one; found open {noun}s in the lanes of "
    "subagents {lanes} and none in the parent's — a producer running parallel subagents "
    "must attribute its continuations",
)
EXPAND_OWNER_CONFLICT = _code(
    "expand.owner-conflict",
    _E,
    SUBAGENTS,
    "a chunk names an open item under a subagentRunId other than the item's owner",
    advice=(
        "Tag a continuation chunk with its item's owner's subagentRunId, or leave the tag off; "
        "an open item never moves to another owner."
    ),
    ground=_CONTINUATION_TAG,
    message="expected a {chunk} continuing {noun} {id!r} to carry no /subagentRunId or its "
    "owner's; the item is owned by {owner}, the chunk names {tag!r}",
)
EXPAND_MALFORMED_CHUNK = _code(
    "expand.malformed-chunk",
    _E,
    PROCESSING,
    "a chunk reached expansion with a malformed known field (expansion ran before enforce)",
    advice=(
        "Give the chunk's field the type schema.json gives it; in a custom stage order, run "
        "expand after enforce so a malformed chunk is judged there."
    ),
    ground=Ground(
        PROCESSING,
        "A chunk is an event in its own right, and it MUST be judged as one: whichever stage "
        "meets a malformed chunk first — enforcement on the canonical order above, expansion "
        "where a middleware chain expands early — MUST reject it rather than repair it, and MUST "
        "NOT normalise, default or conceal a malformed known value enforcement would reject.",
    ),
    message="expected {expected} at /{key} of {chunk}, found {found_type} {found!r:.60}; a "
    "malformed chunk is rejected, never repaired",
)

__all__ = [
    "COMPAT_PEER_DROPPED",
    "COMPAT_PEER_STRIPPED",
    "COMPAT_RETIRED_BINARY",
    "COMPAT_RETIRED_EVENT",
    "COMPAT_RETIRED_NULL",
    "COMPAT_VERSION_NEWER",
    "COMPAT_VERSION_UNINTERPRETABLE",
    "ENFORCE_DROPPED",
    "ENFORCE_MALFORMED",
    "ENFORCE_NULL_OPTIONAL",
    "ENFORCE_STRIPPED",
    "ENFORCE_UNKNOWN_EVENT",
    "EXPAND_AMBIGUOUS",
    "EXPAND_CONFLICTING_REPEAT",
    "EXPAND_FIRST_CHUNK",
    "EXPAND_MALFORMED_CHUNK",
    "EXPAND_OWNER_CONFLICT",
    "INPUT_ACTIVITY_REMOVED",
    "INPUT_DOWNGRADE",
    "INPUT_DOWNGRADE_LOSSY",
    "INPUT_MALFORMED",
    "INPUT_RETIRED_SHAPE",
    "INPUT_UNRECOGNISED",
]
