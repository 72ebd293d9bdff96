"""agui-pipeline: consume AG-UI event streams the way the protocol requires.

The public API::

    from agui_pipeline import Pipeline

    result = await Pipeline().run(Path("run.sse"))   # or "run.sse": a str is a path
    result.verdict.outcome      # completed / rejected / truncated / handler-failed
    result.events               # what application code may see, as AnyEvent
    result.diagnostics          # what was stripped, translated, noticed

Everything importable from this module is the stable API, typed, and so is
:mod:`agui_pipeline.events`: a ``TypedDict`` per event type, their union
:data:`AnyEvent` (exported here too), and the messages, content parts and
outcomes they carry. Every error raised on purpose is an
:class:`AguiPipelineError`. Other modules are the implementation: their names
may move between releases.
"""

import typing as _typing
from types import FunctionType as _FunctionType

from agui_pipeline import events
from agui_pipeline._engine.incremental import Incremental
from agui_pipeline._engine.pipeline import Pipeline, run_sync
from agui_pipeline._engine.result import Outcome, RunResult, Verdict
from agui_pipeline._engine.sources import Source
from agui_pipeline._engine.stream import EventStream
from agui_pipeline.batch import Batch, Event
from agui_pipeline.catalog import Code, Severity
from agui_pipeline.delivery.report import FindingGroup, ProducerReport, producer_report
from agui_pipeline.errors import (
    AguiPipelineError,
    DeclarationUnusable,
    Diagnostic,
    HandlerFailed,
    InputRejected,
    StreamRejected,
    StreamTruncated,
    UsageError,
)
from agui_pipeline.events import AnyEvent, EventType, Message
from agui_pipeline.model.conversation import Conversation
from agui_pipeline.model.declared import check_run_input
from agui_pipeline.options import Limits, Options
from agui_pipeline.stage import (
    ChunkForm,
    Counters,
    Decoder,
    RunRecord,
    RunStatus,
    Stage,
    StageFactory,
    StreamContext,
    reject_after,
)
from agui_pipeline.subscribers import (
    EventHandler,
    Handlers,
    JsonLinesSink,
    ProtoSink,
    Sink,
    SseSink,
    encode_json_lines,
    encode_proto,
    encode_sse,
)

if _typing.TYPE_CHECKING:
    from agui_pipeline.delivery.resume import pending_interrupts, resume_input
    from agui_pipeline.http.aiohttp_transport import AiohttpTransport
    from agui_pipeline.http.client import (
        HttpAgent,
        HttpStatusError,
        HttpxTransport,
        RequestFailed,
        Retries,
    )
    from agui_pipeline.http.relay import Relay, RelayResponse, Upstream
    from agui_pipeline.http.serve import BackgroundServer, Replay, ReplayServer
    from agui_pipeline.http.tap import Tap
    from agui_pipeline.http.transport import (
        ConnectionLost,
        Transport,
        TransportRequest,
        TransportResponse,
    )
    from agui_pipeline.model.agent_resource import (
        AgentResourceError,
        capabilities_from_agent_resource,
    )
    from agui_pipeline.model.capabilities import AgentCapabilities
    from agui_pipeline.model.run_input import PreparedInput, RunAgentInputModel, prepare_input
    from agui_pipeline.testing.conformance import load_fixture, run_fixture

_LAZY = {
    "AgentCapabilities": "model.capabilities",
    "AgentResourceError": "model.agent_resource",
    "capabilities_from_agent_resource": "model.agent_resource",
    "PreparedInput": "model.run_input",
    "RunAgentInputModel": "model.run_input",
    "prepare_input": "model.run_input",
    "AiohttpTransport": "http.aiohttp_transport",
    "HttpAgent": "http.client",
    "HttpStatusError": "http.client",
    "HttpxTransport": "http.client",
    "RequestFailed": "http.client",
    "Retries": "http.client",
    "ConnectionLost": "http.transport",
    "Transport": "http.transport",
    "TransportRequest": "http.transport",
    "TransportResponse": "http.transport",
    "Relay": "http.relay",
    "RelayResponse": "http.relay",
    "Upstream": "http.relay",
    "BackgroundServer": "http.serve",
    "Replay": "http.serve",
    "ReplayServer": "http.serve",
    "Tap": "http.tap",
    "pending_interrupts": "delivery.resume",
    "resume_input": "delivery.resume",
    "load_fixture": "testing.conformance",
    "run_fixture": "testing.conformance",
}
"""Names imported on first use, by module: they need the ``http``, ``aiohttp`` or ``serve``
extra, or pydantic (the models of a declaration and of a run input), whose import costs
about 0.2 s that ``agui-pipeline check FILE`` need not pay; or they bring what a check
of a file does without (the conformance runner and its event loop, ``uuid`` for
resuming). ``python -m agui_pipeline`` imports this package first, so whatever it
imports eagerly is part of every command's start-up."""


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is not None:
        from importlib import import_module

        value = getattr(import_module(f"agui_pipeline.{module}"), name)
        _publish(value)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'agui_pipeline' has no attribute {name!r}")


def _publish(value: object) -> None:
    """Name ``agui_pipeline`` as the module of an exported class or function.

    Reprs, tracebacks and pickles then show the public path, not the private module that
    defines it. A class's own annotations are resolved first, where they were written:
    ``typing.get_type_hints`` looks names up in the module ``__module__`` names.
    """
    if isinstance(value, type):
        own = vars(value).get("__annotations__")
        if own:
            hints = _typing.get_type_hints(value, include_extras=True)
            value.__annotations__ = {key: hints[key] for key in own}
    if isinstance(value, type | _FunctionType):
        value.__module__ = __name__


__all__ = [
    # the producer's side: declarations, run input, findings
    "AgentCapabilities",
    "AgentResourceError",
    # verdicts, diagnostics, errors
    "AguiPipelineError",
    # HTTP: the client, the gateway, serving and tapping
    "AiohttpTransport",
    # what application code receives
    "AnyEvent",
    "BackgroundServer",
    # writing a stage
    "Batch",
    "ChunkForm",
    "Code",
    "ConnectionLost",
    "Conversation",
    "Counters",
    "DeclarationUnusable",
    "Decoder",
    "Diagnostic",
    "Event",
    "EventHandler",
    # running a stream
    "EventStream",
    "EventType",
    "FindingGroup",
    "HandlerFailed",
    "Handlers",
    "HttpAgent",
    "HttpStatusError",
    "HttpxTransport",
    "Incremental",
    "InputRejected",
    "JsonLinesSink",
    # settings
    "Limits",
    "Message",
    "Options",
    "Outcome",
    "Pipeline",
    "PreparedInput",
    "ProducerReport",
    "ProtoSink",
    "Relay",
    "RelayResponse",
    "Replay",
    "ReplayServer",
    "RequestFailed",
    "Retries",
    "RunAgentInputModel",
    "RunRecord",
    "RunResult",
    "RunStatus",
    "Severity",
    "Sink",
    "Source",
    "SseSink",
    "Stage",
    "StageFactory",
    "StreamContext",
    "StreamRejected",
    "StreamTruncated",
    "Tap",
    "Transport",
    "TransportRequest",
    "TransportResponse",
    "Upstream",
    "UsageError",
    "Verdict",
    "capabilities_from_agent_resource",
    "check_run_input",
    "encode_json_lines",
    "encode_proto",
    "encode_sse",
    "events",
    # conformance fixtures
    "load_fixture",
    "pending_interrupts",
    "prepare_input",
    "producer_report",
    "reject_after",
    "resume_input",
    "run_fixture",
    "run_sync",
]

for _name in __all__:
    if _name not in _LAZY:
        _publish(globals()[_name])
del _name
