"""Codes of reading a stream: the source, the framing and JSON (parse), and the limits."""

from __future__ import annotations

from agui_pipeline.catalog.code import (
    _DECODE_FAILURE,
    _E,
    _W,
    HTTP_PROTOBUF,
    HTTP_SSE,
    PROCESSING,
    TRANSPORTS,
    Ground,
    _bound,
    _code,
)

# --- source and parse -------------------------------------------------------

PARSE_NOT_JSON = _code(
    "parse.not-json",
    _E,
    HTTP_SSE,
    "a frame's bytes are not a JSON document",
    advice="Fix the producer's serialisation: the frame named is not JSON (often a Python repr, a "
    "truncated write or an unescaped newline inside a data: line).",
    ground=_DECODE_FAILURE,
    message="expected a JSON object in the frame; its bytes do not decode ({why}, at character "
    "{column} of the frame): {excerpt!r}",
    forms={
        "document": "expected a JSON array of event objects; the document does not decode: "
        "{msg} (line "
        "{lineno}, column {colno} of the document)",
    },
)
PARSE_NUMBER_RANGE = _code(
    "parse.number-range",
    _E,
    PROCESSING,
    "a frame holds a number too large for a double (such as 1e999999), or a protobuf double "
    "that is NaN or infinite: it has no value to deliver",
    advice="Send numbers within IEEE 754 double range, never NaN or Infinity (RFC 8259 §6, "
    "I-JSON RFC 7493 §2.2); send a larger quantity as a string.",
    ground=_DECODE_FAILURE,
    message="expected a number within double range at {at}, found one past ±1.8e308 (RFC 8259 "
    "§6: such a number has no value a consumer can use)",
    forms={
        "proto-nan": "expected a number at {at}, found NaN, a protobuf double JSON has no "
        "number for (RFC 8259 §6 permits no NaN; on SSE its only spelling, the token NaN, is "
        "not JSON): it has no value a consumer can use",
        "proto-infinite": "expected a number within double range at {at}, found {found}, a "
        "protobuf double past ±1.8e308 (RFC 8259 §6: such a number has no value a consumer "
        "can use)",
    },
)
PARSE_UNPAIRED_SURROGATE = _code(
    "parse.unpaired-surrogate",
    _E,
    PROCESSING,
    "a frame's string escapes a lone UTF-16 surrogate (such as \\ud800), which names no character",
    advice="Escape characters outside the Basic Multilingual Plane as a surrogate pair, or send "
    "them as UTF-8 (RFC 8259 §7, §8.2; I-JSON RFC 7493 §2.1).",
    ground=_DECODE_FAILURE,
    message="expected Unicode text at {at}, found a string that escapes a lone surrogate "
    "({string}) — RFC 8259 §8.2: it names no character",
)
PARSE_INTEGER_PRECISION = _code(
    "parse.integer-precision",
    _W,
    PROCESSING,
    "an integer beyond 64 bits was delivered as the nearest double: its exact value is lost",
    advice="Send integers within 64 bits (I-JSON RFC 7493 §2.2 advises within ±2**53); send a "
    "larger one as a string.",
    message="the integer {number} at {pointer} is beyond 64 bits; it is delivered as the nearest "
    "double, {nearest!r}",
)
PARSE_CONTENT_ENCODING = _code(
    "parse.content-encoding",
    _E,
    TRANSPORTS,
    "the response body does not decode by its Content-Encoding, or names one the client "
    "does not read",
    advice="Compress the body with what the request's Accept-Encoding offered (gzip or "
    "deflate), or not at all.",
    ground=_DECODE_FAILURE,
    message="expected the body in one of the codings the request accepted ({accepted}), found "
    "Content-Encoding {coding!r}",
    forms={
        "undecodable": "expected a body in {coding} (Content-Encoding), but it does not decode: "
        "{error}",
    },
)
PARSE_NOT_OBJECT = _code(
    "parse.not-object",
    _E,
    HTTP_SSE,
    "a frame holds JSON that is not an object",
    advice=(
        "Send one event per frame as a JSON object, not wrapped in an array or sent as a bare "
        "string or number."
    ),
    ground=_DECODE_FAILURE,
    message="expected a JSON object (one event) in the frame, found {value}",
)
PARSE_NOT_ARRAY = _code(
    "parse.not-array",
    _E,
    TRANSPORTS,
    "a JSON array document is not an array of objects",
    advice=(
        "Make every element of a JSON array body an event object; send SSE or JSON lines "
        "instead when events should arrive one at a time."
    ),
    ground=_DECODE_FAILURE,
    message="expected a JSON array of event objects, found {document}",
)
PARSE_UNKNOWN_FRAMING = _code(
    "parse.unknown-framing",
    _E,
    TRANSPORTS,
    "the first bytes match no framing this reader knows (SSE, JSON lines, JSON array)",
    advice=(
        "Answer with SSE (`data:` lines ended by a blank line), JSON lines or a JSON array of "
        "events; check the endpoint is not returning an error page or some other body."
    ),
    ground=_DECODE_FAILURE,
    message="expected an SSE field (such as 'data:'), '{{' (JSON lines) or '[' (a JSON array) as "
    "the first byte, found {first!r}",
)
PARSE_INCOMPLETE_FRAME = _code(
    "parse.incomplete-frame",
    _W,
    HTTP_SSE,
    "the stream ended inside a frame; the partial frame was discarded",
    advice=(
        "End every SSE event with a blank line, the last one included, before closing the "
        "stream; if the connection dropped, find what cut it."
    ),
    message="the stream ended inside an SSE event ({rest_count} bytes with no blank line after "
    "them); the partial frame was not decoded",
)
PARSE_PROTO_FRAME = _code(
    "parse.proto-frame",
    _E,
    HTTP_PROTOBUF,
    "a protobuf frame's bytes do not decode as one event (a known field of the wrong wire "
    "type included)",
    advice="Encode each frame with the wire schema's types: a field of a known number must "
    "carry that field's wire type.",
    ground=Ground(
        HTTP_PROTOBUF,
        "A frame whose bytes do not decode as a message is malformed transport material and "
        "fatal to the stream.",
    ),
    message="expected one encoded AG-UI Event in frame {index} ({size} bytes); its bytes do "
    "not decode: {detail}",
    forms={
        "not-event": "expected one encoded AG-UI Event in frame {index} ({size} bytes); its "
        "bytes do not decode: not an Event message ({error})",
    },
)
PARSE_PROTO_UNKNOWN_ARM = _code(
    "parse.proto-unknown-arm",
    _W,
    HTTP_PROTOBUF,
    "a protobuf frame holds no event this build's wire schema knows (an empty frame, or an "
    "arm it predates), or such a content part; dropped",
    advice=(
        "If the producer speaks a newer wire schema, upgrade agui-pipeline to read it; "
        "otherwise fix the producer's encoder, which sent an empty frame or an arm the schema "
        "lacks."
    ),
    message="a content part at {path} has an arm this build's wire schema predates; the part was "
    "dropped",
    forms={
        "empty-frame": "frame {index} is an empty Event: it names no event type (an encoder "
        "writes one for a type its wire schema lacks, as @ag-ui/proto 1.0.0 does), so the frame "
        "was dropped",
        "envelope-arm": "frame {index} holds only envelope arm {arms}, which this build's wire "
        "schema predates: it carries no event type to hand on, so the frame was dropped",
        "envelope-arms": "frame {index} holds only envelope arms {arms}, which this build's wire "
        "schema predates: it carries no event type to hand on, so the frame was dropped",
    },
)
PARSE_PROTO_INCOMPLETE_FRAME = _code(
    "parse.proto-incomplete-frame",
    _W,
    HTTP_PROTOBUF,
    "the body ended inside a protobuf frame (a truncated run); the partial frame was discarded",
    advice=(
        "Write each frame whole before closing the body (all the bytes its length prefix "
        "announces); if the connection dropped, find what cut it."
    ),
    message="the body ended inside frame {next_frame} ({held} bytes of it arrived, header "
    "included); the partial frame was not decoded and the run is judged as it stands (a "
    "truncated run)",
)
SOURCE_IDLE_TIMEOUT = _code(
    "source.idle-timeout",
    _W,
    TRANSPORTS,
    "no event arrived within the idle window (idle_timeout); the stream was ended there",
    message="no event for {idle:g} s (idle_timeout: keep-alive comments and partial frames do "
    "not count); the stream was ended there and is judged as it stands",
    advice="Check the producer is still sending; raise idle_timeout if a silence this long "
    "is expected (keep-alive comments do not count as events).",
)
SOURCE_MAX_DURATION = _code(
    "source.max-duration",
    _W,
    TRANSPORTS,
    "the stream was still open at its deadline (max_duration); it was ended there",
    message="the stream was still open after {max_duration:g} s (max_duration); it was ended "
    "there and is judged as it stands",
    advice="Raise max_duration if runs this long are expected, or have the agent finish its "
    "runs sooner.",
)

# --- limits -----------------------------------------------------------------

LIMIT_FRAME_SIZE = _code(
    "limit.frame-bytes",
    _E,
    TRANSPORTS,
    "a frame is larger than the configured limit",
    ground=_bound("Limits.max_frame_bytes"),
    message="a frame of more than {size} bytes exceeds the limit max_frame_bytes={limit}",
    forms={
        "document": "a JSON array document of more than {size} bytes exceeds the limit "
        "max_document_bytes={limit}",
        "proto": "a frame header announces {size} bytes, over the limit max_frame_bytes={limit}",
        "sse-event": "an SSE event of more than {size} bytes as sent (field names, comments and "
        "line ends included) exceeds 4 x max_frame_bytes={limit} + 64",
    },
    advice="Send smaller frames (split long text into several content events), or raise "
    "max_frame_bytes / max_document_bytes if frames this large are legitimate.",
)
LIMIT_FRAME_ENTRIES = _code(
    "limit.frame-entries",
    _E,
    TRANSPORTS,
    "a protobuf frame holds more messages (repeated entries, nested messages) than the "
    "configured limit",
    advice=(
        "Either the producer packs more into one event than a UI can use, or the limit is too "
        "low for this workload: raise Limits.max_frame_entries if the size is legitimate."
    ),
    ground=_bound("Limits.max_frame_entries"),
    message="frame {index} ({size} bytes) holds {entries}, over the limit "
    "max_frame_entries={limit}",
)
LIMIT_DEPTH = _code(
    "limit.depth",
    _E,
    TRANSPORTS,
    "an event, or a state or activity a patch would build, is nested deeper than the "
    "configured limit",
    ground=_bound("Limits.max_depth"),
    message="an event nested {depth} levels deep exceeds the limit max_depth={limit}",
    forms={
        "patch": "this patch operation would nest the document deeper than the limit "
        "max_depth={limit} ({detail})",
        "beyond-reader": "an event nested deeper than orjson reads (1,024 levels) exceeds the "
        "limit "
        "max_depth={limit}",
    },
    advice="Flatten the producer's structures, or raise max_depth if nesting this deep is "
    "legitimate.",
)
LIMIT_OPEN_ITEMS = _code(
    "limit.open-items",
    _E,
    TRANSPORTS,
    "more messages, tool calls, spans, steps or subagents open at once than the limit",
    ground=_bound("Limits.max_open_items"),
    message="expected at most {limit} items open at once (limit max_open_items), found "
    "{open_now} open and this event opening another",
    advice="Close messages, tool calls, spans and steps when they are done, or raise "
    "max_open_items if this many open at once is legitimate.",
)
LIMIT_TEXT_CHARS = _code(
    "limit.text-chars",
    _E,
    TRANSPORTS,
    "a message's text or a tool call's arguments grew past the configured limit",
    ground=_bound("Limits.max_text_chars"),
    message="a message's text or a tool call's arguments grew to {length} characters, past the "
    "limit max_text_chars={max_text}",
    advice="Split very long text across messages, or raise max_text_chars if one item this "
    "long is legitimate.",
)
LIMIT_CONVERSATION_CHARS = _code(
    "limit.conversation-chars",
    _E,
    TRANSPORTS,
    "the text the Conversation holds, all messages and tool calls together, grew past the "
    "configured limit",
    advice="A stream that restates or streams this much text is past what a UI shows: send a "
    "MESSAGES_SNAPSHOT that drops old messages, or raise Limits.max_conversation_chars "
    "(and check the memory it spends: the docs, Limits and reliability, What bounds memory).",
    ground=_bound("Limits.max_conversation_chars"),
    message="the text the Conversation holds (messages' content and tool calls' arguments, all "
    "together) would grow to {chars} characters, past the limit "
    "max_conversation_chars={max_chars}",
)
LIMIT_ITEMS = _code(
    "limit.items",
    _E,
    TRANSPORTS,
    "the stream introduced more messages and tool calls than the configured limit",
    advice="Each message and tool call a stream introduces is remembered to judge later events "
    "against it: split a long conversation over several streams (runs of one thread), or "
    "raise Limits.max_items (about 1 kB each: the docs, Limits and reliability).",
    ground=_bound("Limits.max_items"),
    message="expected at most {limit} messages and tool calls on one stream (limit max_items), "
    "found this event introducing one more at {pointer}",
)
LIMIT_STATE_BYTES = _code(
    "limit.state-bytes",
    _E,
    TRANSPORTS,
    "the state document grew past the configured limit",
    ground=_bound("Limits.max_state_bytes"),
    message="this patch would grow the state (now {held} bytes) past the limit "
    "max_state_bytes={limit}",
    forms={
        "snapshot": "a state of more than {limit} bytes exceeds the limit max_state_bytes={limit}",
    },
    advice="Keep the shared state smaller (send references, not payloads), or raise "
    "max_state_bytes.",
)
LIMIT_DECOMPRESSION = _code(
    "limit.decompression",
    _E,
    TRANSPORTS,
    "a compressed response body inflated past the configured ratio (a decompression bomb)",
    ground=_bound("Limits.max_decompression_ratio"),
    message="the body inflated to more than {inflated} bytes from {received} received "
    "(Content-Encoding {codings}), past the limit max_decompression_ratio={ratio}",
    advice="Send the body with less extreme compression, or raise max_decompression_ratio if "
    "a body this compressible is legitimate.",
)
LIMIT_ACTIVITY_BYTES = _code(
    "limit.activity-bytes",
    _E,
    TRANSPORTS,
    "the content of the activity messages grew past the configured limit",
    ground=_bound("Limits.max_activity_bytes"),
    message="this would grow the content of the activity messages (now {held} bytes) past the "
    "limit max_activity_bytes={limit}",
    advice="Keep activity content smaller, or raise max_activity_bytes.",
)
LIMIT_PATCH_WORK = _code(
    "limit.patch-work",
    _E,
    TRANSPORTS,
    "patches made the consumer copy or move more than the configured work allowance",
    ground=_bound("Limits.max_patch_work"),
    message="this patch operation would make the patches of this stream copy or move more than "
    "the limit max_patch_work={max_patch_work} allows (plus 4096 per operation)",
    advice="Send a snapshot instead of patches that copy or move large parts of the "
    "document, or raise max_patch_work.",
)
LIMIT_DIAGNOSTICS = _code(
    "limit.diagnostics",
    _W,
    PROCESSING,
    "more diagnostics than the configured limit; further ones are only counted",
    message="more than {limit} diagnostics (limit max_diagnostics); later ones are counted by "
    "code only",
    advice="Fix the most frequent findings first (the counts by code are kept), or raise "
    "max_diagnostics to see every one.",
)

__all__ = [
    "LIMIT_ACTIVITY_BYTES",
    "LIMIT_CONVERSATION_CHARS",
    "LIMIT_DECOMPRESSION",
    "LIMIT_DEPTH",
    "LIMIT_DIAGNOSTICS",
    "LIMIT_FRAME_ENTRIES",
    "LIMIT_FRAME_SIZE",
    "LIMIT_ITEMS",
    "LIMIT_OPEN_ITEMS",
    "LIMIT_PATCH_WORK",
    "LIMIT_STATE_BYTES",
    "LIMIT_TEXT_CHARS",
    "PARSE_CONTENT_ENCODING",
    "PARSE_INCOMPLETE_FRAME",
    "PARSE_INTEGER_PRECISION",
    "PARSE_NOT_ARRAY",
    "PARSE_NOT_JSON",
    "PARSE_NOT_OBJECT",
    "PARSE_NUMBER_RANGE",
    "PARSE_PROTO_FRAME",
    "PARSE_PROTO_INCOMPLETE_FRAME",
    "PARSE_PROTO_UNKNOWN_ARM",
    "PARSE_UNKNOWN_FRAMING",
    "PARSE_UNPAIRED_SURROGATE",
    "SOURCE_IDLE_TIMEOUT",
    "SOURCE_MAX_DURATION",
]
