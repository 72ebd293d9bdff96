"""A pipeline's configuration: :class:`Options` and the :class:`Limits` inside it.

Both are frozen: a :class:`~agui_pipeline.Pipeline` and every copy made from
it (``with_options``, ``insert_before``, ...) hold an ``Options`` nobody can
change under them; :class:`Settings` is what those two take by name. A pipeline
reads what it was given once — the capabilities declaration, the handler registry,
the sinks — so no stream repeats that work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from agui_pipeline.declaration import CapabilitiesSource, Declaration
from agui_pipeline.errors import Diagnostic
from agui_pipeline.subscribers import HandlerMap, Handlers, Sink


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds that keep a hostile producer from exhausting memory.

    Exceeding one rejects the stream with a ``limit.*`` code naming the limit
    and the value seen. The defaults fit in 1 GB together: a stream that fills
    the state, the activity, the Conversation's text and its items to their
    limits and then sends the largest frame peaks at about 720 MiB (docs/limits.md,
    "What bounds memory"), so raising one is spending that room.
    """

    max_frame_bytes: int = 8 * 1024 * 1024
    """Largest single frame's payload, what the JSON decoder is handed (an SSE event's
    ``data`` lines joined with LF, one JSON line), measured the same whole or still
    arriving; an SSE event as sent is held to 4 times this plus 64 bytes. Decoded, a frame
    of the smallest arrays takes about 40 times its size."""
    max_document_bytes: int = 16 * 1024 * 1024
    """Largest JSON array document, which must be read whole before decoding (decoded,
    a document of the smallest objects takes about 45 times its size)."""
    max_frame_entries: int = 262_144
    """Most messages one protobuf frame may hold, every nested message and repeated entry
    counted, empty or not: an empty one is 2 bytes on the wire and about 600 in memory
    once decoded, so a frame is bounded by its entries as well as by its bytes (at this
    limit about 160 MB, below a JSON frame's worst case)."""
    max_diagnostics: int = 10_000
    """Diagnostics kept on the result; later ones are counted, not stored."""
    max_depth: int = 128
    """Deepest nesting of arrays and objects in one event (orjson itself stops at 1024,
    and cannot re-encode past 255, so a sink could not pass a deeper event on)."""
    max_open_items: int = 10_000
    """Messages, tool calls, reasoning spans, steps and subagents open at once."""
    max_text_chars: int = 16 * 1024 * 1024
    """Longest text the Conversation accumulates for one message or one tool call's
    arguments, in characters."""
    max_conversation_chars: int = 32 * 1024 * 1024
    """Most text the Conversation holds at once, all messages together: content (a
    tool result's list of parts as its JSON size, :func:`agui_pipeline.model.patch.size`) and
    tool call arguments, in characters, streamed or restated. A message a
    ``MESSAGES_SNAPSHOT`` replaces or drops gives its text back."""
    max_items: int = 100_000
    """Messages and tool calls one stream may introduce: new ids, open or closed,
    however few are open at once (the run input's own are not counted). What verify,
    lint and the Conversation remember per item, about 1 kB, is bounded by it."""
    max_state_bytes: int = 16 * 1024 * 1024
    """Largest state document the Conversation holds, as JSON bytes (to within a
    sixteenth: the state is measured when what patches inserted reaches the limit).
    Measured from its structure (:func:`agui_pipeline.model.patch.size`: a string counts its
    characters), never by serialising it, so the limit holds at any depth."""
    max_activity_bytes: int = 16 * 1024 * 1024
    """Largest total the Conversation holds in the content of all its activity messages,
    measured like ``max_state_bytes`` (snapshots and patches charged, recounted when full)."""
    max_patch_work: int = 256 * 1024 * 1024
    """Work the patches of one stream may do beyond what they carry — values copied out
    of the document and array elements moved — on top of 4,096 per operation applied; so
    a stream's patch work stays within this plus 4 KiB per operation it sends."""
    max_run_records: int = 1_000
    """Run records kept on the result (``RunResult.runs``): the first half of this many
    runs and the latest half; every run is counted in ``RunResult.run_counts``."""
    max_run_ids: int = 100_000
    """runIds remembered to find a reused one (``lint.run-id-reused``): a reuse of a
    runId more than this many runs back is not seen."""
    max_held_bytes: int = 4 * 1024 * 1024
    """Bytes of a stream the native core's deliver mode holds so that the Python stages can
    take over where it stops being sure (``docs/performance.md``, "Deliver mode"); the read
    that would pass it is the Python stages', from there on. Never a verdict."""
    max_decompression_ratio: int = 100
    """Most bytes a compressed HTTP response body (``Content-Encoding``) may inflate to
    per byte received, past its first MiB: a real event stream compresses about tenfold,
    a decompression bomb (``gzip, gzip``) a millionfold."""


@dataclass(frozen=True, slots=True)
class Options:
    """Configuration shared by the stages of a pipeline, fixed for its lifetime.

    Pass the fields to ``Pipeline(...)`` or ``Pipeline.with_options(...)`` by
    name; an ``Options`` built by hand is taken as it is (a stage test's
    ``StreamContext(Options())``).
    """

    limits: Limits = field(default_factory=Limits)
    framing: str | None = None
    """Force ``"sse"``, ``"jsonl"`` or ``"json"``; ``None`` detects from the first bytes."""
    idle_timeout: float | None = 300.0
    """Seconds spent waiting on a live source (a socket, a pipe, an async iterable)
    without an event, after which the stream is ended and judged as it stands — a run
    still open is truncated (``source.idle-timeout``), never a hang. Bytes that complete
    no event (keep-alive comments, a frame trickling in) do not reset it. ``None``
    waits forever. It also bounds the wait for an HTTP response's headers."""
    max_duration: float | None = None
    """Seconds after a live stream is opened at which it is ended and judged as it
    stands (``source.max-duration``), however steadily events arrive. ``None``: no
    deadline. It also bounds the wait for an HTTP response's headers."""
    peer_max_protocol_version: str | None = None
    """The newest protocol version the peer speaks, when the consumer knows it is older."""
    on_diagnostic: Callable[[Diagnostic], None] | None = None
    """Called with every diagnostic as it is made (for logging or progress)."""
    handlers: Handlers | HandlerMap | None = None
    """Application callbacks by event type, run by dispatch (``"*"``: every event). A
    pipeline holds them as a :class:`~agui_pipeline.Handlers` registry closed to
    further registration."""
    sinks: Sequence[Sink] = ()
    """Where dispatch re-encodes delivered events (``SseSink``, ``JsonLinesSink``)."""
    conversation: bool = True
    """Materialise the Conversation (messages, state, interrupts) in dispatch."""
    capabilities: Declaration | CapabilitiesSource | None = None
    """The agent's ``AgentCapabilities`` declaration — a model, a dict, JSON bytes or a file
    path — read once when the pipeline is made; reconcile compares each stream with it
    (never rejecting)."""


class Settings(TypedDict, total=False):
    """The settings ``Pipeline(...)`` and ``Pipeline.with_options(...)`` take by name: each
    is the :class:`Options` field of that name (a test holds the two to the same names and
    types), and one not passed keeps the value the pipeline has."""

    limits: Limits
    framing: str | None
    idle_timeout: float | None
    max_duration: float | None
    peer_max_protocol_version: str | None
    on_diagnostic: Callable[[Diagnostic], None] | None
    handlers: Handlers | HandlerMap | None
    sinks: Sequence[Sink]
    conversation: bool
    capabilities: Declaration | CapabilitiesSource | None
