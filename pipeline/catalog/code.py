"""What a code is: :class:`Code`, its :class:`Severity`, and a rejection's :class:`Ground`;
the registry :data:`ALL` every code joins; the spec pages codes cite; and what to do
about a section's findings in general (:data:`ADVICE`).

Add a code to its family's module (``catalog/reading.py``, ``boundary.py``,
``sequence.py``, ``producer.py``, ``delivery.py``), in its stage's section.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    """How much a finding matters. ``ERROR`` is reserved for rejections."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Ground:
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
    """One entry of the catalog.

    A code owns its message: :attr:`message` is its shape, a :meth:`str.format` template over
    named fields, and calling the code with those fields gives the :class:`Message` a stage
    reports or rejects with, so every finding of a code reads alike wherever it is raised.
    """

    id: str
    severity: Severity
    spec: str
    title: str
    advice: str = ""
    """What to do about it: the producer's (or the operator's) change, in the code's own words."""
    ground: Ground | None = None
    """For a rejection (``ERROR``), what makes it the consumer's verdict; ``None`` otherwise."""
    message: str = ""
    """The message's shape: a template whose ``{fields}`` a finding fills (:func:`render`)."""
    forms: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    """Further shapes by name, where one code words several situations differently."""

    def __str__(self) -> str:
        return self.id

    def __call__(self, form: str = "", /, **fields: Any) -> Message:
        """This code's message with ``fields`` filled in (its ``form``, when named)."""
        return Message(self, self.template(form).format_map(fields))

    def template(self, form: str = "") -> str:
        """The message's shape: the default, or the named ``form``."""
        return self.forms[form] if form else self.message

    @property
    def what_to_do(self) -> str:
        """What a producer (or the consumer's operator) should do about this finding."""
        return self.advice

    @property
    def url(self) -> str:
        return spec_url(self.spec)


@dataclass(frozen=True, slots=True)
class Message:
    """One finding of a code in words: what :meth:`Code.__call__` returns, and what
    ``StreamContext.report`` and ``reject`` take."""

    code: Code
    text: str

    def __str__(self) -> str:
        return self.text


ALL: dict[str, Code] = {}


def render(code_id: str, fields: Mapping[str, Any], form: str = "") -> str:
    """The text of a finding of ``code_id``: its template (or named ``form``) filled with
    ``fields``.

    The one place a code's message is worded: a core that raises a finding by id (the
    native one) renders it here, so both cores' texts are the same by construction.
    """
    return ALL[code_id].template(form).format_map(fields)


def _code(
    id: str,
    severity: Severity,
    spec: str,
    title: str,
    advice: str = "",
    ground: Ground | None = None,
    message: str = "",
    forms: Mapping[str, str] | None = None,
) -> Code:
    if id in ALL:
        raise ValueError(f"diagnostic code {id!r} defined twice")
    if (severity is Severity.ERROR) != (ground is not None):
        raise ValueError(f"{id}: a rejection names its ground, and only a rejection")
    entry = Code(id, severity, spec, title, advice, ground, message, dict(forms or {}))
    ALL[id] = entry
    return entry


SPEC_SITE = "https://ag-ui.com"
"""Where the spec pages are published (the origin ``schema.json``'s ``$id`` names)."""


def spec_url(page: str) -> str:
    """The published URL of a spec page given as ``/spec/1.1/...`` (a URL stays as it is)."""
    return page if "://" in page else SPEC_SITE + page


# The grounds most rejections share (``Ground``): the sentences as the pages word them.
_DECODE_FAILURE = Ground(
    "/spec/1.1/basic/processing",
    "Turning bytes into events is the reader's whole job — a frame whose bytes map to no event "
    "at all is a decode failure, and that judgement is properly the reader's.",
)
_MALFORMED_KNOWN_VALUE = Ground(
    "/spec/1.1/basic/processing",
    "A field the protocol DOES describe, carrying a value the schema rejects, MUST be fatal: the "
    "consumer MUST fail the run rather than repair, coerce or ignore the value.",
)
_LIFECYCLE_FATAL = Ground(
    "/spec/1.1/events/lifecycle",
    "A stream the consumer rejects is a protocol violation it detected: everything on this page "
    "a producer MUST NOT do is fatal when a consumer sees it — an event before RUN_STARTED, an "
    "event after close other than the two admitted, a nested RUN_STARTED, an unbalanced step, "
    "or anything still open at RUN_FINISHED.",
)
_CONTINUATION_TAG = Ground(
    "/spec/1.1/events/subagents",
    "A consumer MUST reject a continuation whose tag disagrees with its opener.",
)


def _bound(setting: str) -> Ground:
    """A limit's ground: not a spec sentence, a bound the operator set (Limits)."""
    return Ground(
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
    "streamed and with the run input it answers (the docs' producer lint guide says how).",
    "dispatch": "A handler of your application raised: fix the handler; the stream was valid.",
    "transport": "Fix the endpoint: answer with text/event-stream and keep the connection "
    "open until the run ends.",
}
"""What a section's findings have in common, by section (the part of a code before the dot):
the reference page's lead for the section; each code's own :attr:`Code.advice` says what to do."""

_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO

PROCESSING = "/spec/1.1/basic/processing"
TRANSPORTS = "/spec/1.1/basic/transports"
HTTP_SSE = "/spec/1.1/basic/transports/http-sse"
HTTP_PROTOBUF = "/spec/1.1/basic/transports/http-protobuf"

# The spec pages the codes cite (``/spec/1.1/...``, as the corpus spells them).
VERSIONING = "/spec/1.1/basic/versioning"
RUN_INPUT = "/spec/1.1/basic/run-input"
EVENT_MODEL = "/spec/1.1/basic/index"
STREAMING = "/spec/1.1/basic/patterns/streaming"
SUBAGENTS = "/spec/1.1/events/subagents"
LIFECYCLE = "/spec/1.1/events/lifecycle"
TEXT_MESSAGES = "/spec/1.1/events/text-messages"
TOOL_CALLS = "/spec/1.1/events/tool-calls"
REASONING = "/spec/1.1/events/reasoning"
INTERRUPTS = "/spec/1.1/basic/patterns/interrupt-resume"
CAPABILITIES = "/spec/1.1/basic/capabilities"
STATE = "/spec/1.1/events/state"
SNAPSHOTS = "/spec/1.1/basic/patterns/snapshots"
ACTIVITY = "/spec/1.1/events/activity"

__all__ = [
    "ACTIVITY",
    "ADVICE",
    "ALL",
    "CAPABILITIES",
    "EVENT_MODEL",
    "HTTP_PROTOBUF",
    "HTTP_SSE",
    "INTERRUPTS",
    "LIFECYCLE",
    "PROCESSING",
    "REASONING",
    "RUN_INPUT",
    "SNAPSHOTS",
    "SPEC_SITE",
    "STATE",
    "STREAMING",
    "SUBAGENTS",
    "TEXT_MESSAGES",
    "TOOL_CALLS",
    "TRANSPORTS",
    "VERSIONING",
    "Code",
    "Ground",
    "Message",
    "Severity",
    "render",
    "spec_url",
]
