"""agui-pipeline: consume AG-UI event streams the way the protocol requires.

The public API::

    from agui_pipeline import Pipeline

    result = await Pipeline().run(Path("run.sse"))
    result.verdict.outcome      # completed / rejected / truncated / handler-failed
    result.events               # what application code may see
    result.diagnostics          # what was stripped, translated, noticed

Everything importable from this module is the stable API; submodules are
the implementation.
"""

from typing import TYPE_CHECKING, Any

from .agent_resource import AgentResourceError, capabilities_from_agent_resource
from .capabilities import AgentCapabilities, Declaration, DeclarationUnusable, check_run_input
from .catalog import Code, Severity
from .conversation import Conversation
from .engine import EventStream, Outcome, Pipeline, RunResult, Verdict, run_sync
from .errors import Diagnostic, HandlerFailed, StreamRejected, StreamTruncated
from .events import EventType
from .report import FindingGroup, ProducerReport, producer_report
from .resume import pending_interrupts, resume_input
from .run_input import InputRejected, PreparedInput, RunAgentInput, prepare_input
from .sources import Source
from .stage import (
    Batch,
    Counters,
    Decoder,
    Event,
    Limits,
    Options,
    RunRecord,
    RunStatus,
    Stage,
    StreamContext,
)
from .subscribers import Handlers, JsonLinesSink, Sink, SseSink, encode_json_lines, encode_sse

if TYPE_CHECKING:
    from .client import HttpAgent, HttpStatusError, RequestFailed

_HTTP_CLIENT = ("HttpAgent", "HttpStatusError", "RequestFailed")


def __getattr__(name: str) -> Any:
    """The HTTP client's names, imported on first use: they need the ``http`` extra."""
    if name in _HTTP_CLIENT:
        from . import client

        return getattr(client, name)
    raise AttributeError(f"module 'agui_pipeline' has no attribute {name!r}")


__all__ = [
    "AgentCapabilities",
    "AgentResourceError",
    "Batch",
    "Code",
    "Conversation",
    "Counters",
    "Declaration",
    "DeclarationUnusable",
    "Decoder",
    "Diagnostic",
    "Event",
    "EventStream",
    "EventType",
    "FindingGroup",
    "HandlerFailed",
    "Handlers",
    "HttpAgent",
    "HttpStatusError",
    "InputRejected",
    "JsonLinesSink",
    "Limits",
    "Options",
    "Outcome",
    "Pipeline",
    "PreparedInput",
    "ProducerReport",
    "RequestFailed",
    "RunAgentInput",
    "RunRecord",
    "RunResult",
    "RunStatus",
    "Severity",
    "Sink",
    "Source",
    "SseSink",
    "Stage",
    "StreamContext",
    "StreamRejected",
    "StreamTruncated",
    "Verdict",
    "capabilities_from_agent_resource",
    "check_run_input",
    "encode_json_lines",
    "encode_sse",
    "pending_interrupts",
    "prepare_input",
    "producer_report",
    "resume_input",
    "run_sync",
]
