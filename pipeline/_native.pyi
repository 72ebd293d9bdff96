# The native core's extension module (native/src/lib.rs); present when the crate was built.

from typing import Any

class InternalError(RuntimeError):
    """A Rust panic, with the stage it happened in."""

class Framer:
    """parse's framer of SSE or JSON lines for one stream (``stages/parse.py``)."""

    def __init__(self, framing: str, max_frame_bytes: int) -> None: ...
    def feed(
        self, chunk: bytes
    ) -> tuple[list[bytes], bytes] | tuple[list[bytes], bytes, int, bool] | None:
        """``None``: no frame completed; the payloads and their region; or those (perhaps
        none) and then the size of the frame held past the last boundary, already over the
        limit, and whether that size is an SSE event's bytes as sent (past
        ``4 * max_frame_bytes + 64``) rather than its payload (past ``max_frame_bytes``)."""
    @property
    def idle(self) -> bool:
        """Nothing held: no partial frame, no CR waiting for its LF."""
    def take_rest(self) -> bytes: ...

class Checks:
    """enforce's fast check of every event type, built from ``native_plan()``'s rows
    (``stages/_checks.py``)."""

    def __init__(self, rows: list[tuple[Any, ...]], events: dict[str, int]) -> None: ...
    def scan(self, events: list[Any], types: list[Any]) -> tuple[int, list[int]]:
        """The first event not clean (``len(events)`` if none), and for each clean event
        before it with a member the check does not look into, how many events follow it."""
    def clean(self, event: Any, kind: Any) -> bool:
        """Whether ``event`` of type ``kind`` is clean."""

class Judge:
    """The judge of one stream (``native/src/judge.rs``, ``pipeline/_engine/judge.py``)."""

    def __init__(
        self,
        framing: str,
        checks: Checks,
        limits: tuple[int, int, int, int, int, int, int, int, int],
        quiet_versions: list[str],
        input: tuple[Any, ...] | None = None,
        delivers: tuple[list[str], list[str] | None] | None = None,
        stands_in: str = "lint",
    ) -> None:
        """``delivers``, for a judge that builds the events it passes (``None``: it builds
        none): the types it marks whatever their members (``take_marked``), and the only
        types it builds (``None``: every one); ``stands_in``: the last stage it stands in for,
        ``"lint"`` (every rule) or ``"compat"`` (the frames and compat alone)."""
    def feed(self, chunk: bytes) -> list[dict[str, Any]] | None:
        """One read, from the stream's first frame on; for a judge made to deliver, the
        events it passed of the read, built as ``orjson.loads`` builds them, when it is still
        sure of the stream after it (``None``: none, or it is unsure); only those of
        ``built_types`` when it names any."""
    @property
    def noted(self) -> bool:
        """Whether runs were noted since ``take_runs`` was last called."""
    def finish(self) -> bool:
        """The end of the stream: whether it was clean to its end."""
    def take_ended(self) -> list[dict[str, Any]] | None:
        """For a judge made to deliver that finished clean, the events the end passed (a JSON
        line without a newline; ``None``: none)."""
    def take_marked(self) -> list[int]:
        """The positions, among the events the last ``feed`` (or ``finish``) passed, of those
        built (every one, unless ``built_types`` names the only types built) with a
        ``metadata`` member or of a type of ``marked_types``."""
    @property
    def unsure(self) -> str | None:
        """Why the judge left the stream to the pipeline (``None`` while it has not)."""
    @property
    def read(self) -> int:
        """Frames decoded so far."""
    def take_runs(self) -> list[tuple[Any, ...]]:
        """The runs noted since the last call: ``("started", runId, threadId)``,
        ``("finished", index, frame or None)``, ``("failed", index, message)``."""

def state_probe(
    snapshot: bytes | None,
    patches: list[bytes],
    max_state_bytes: int,
    max_patch_work: int,
    max_depth: int,
) -> bytes | None:
    """The native state mirror (``native/src/patch.rs``) over a snapshot and patches given as
    JSON: the state as JSON, or ``None`` when it cannot vouch for a step; the probe
    ``tests/test_native_state.py`` drives against the Python reference."""
