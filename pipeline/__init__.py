"""agui-pipeline: consume AG-UI event streams the way the protocol requires.

The public API::

    from agui_pipeline import Pipeline

    result = await Pipeline().run(Path("run.sse"))   # or "run.sse": a str is a path
    result.verdict.outcome      # completed / rejected / truncated / handler-failed
    result.events               # what application code may see, as AnyEvent
    result.diagnostics          # what was stripped, translated, noticed

Everything importable from this module is the stable API, typed: the events
are the ``TypedDict``\\ s of :mod:`agui_pipeline.events` (one per event type,
their union :data:`AnyEvent`, and the messages, content parts and outcomes they
carry), and every error raised on purpose is an :class:`AguiPipelineError`.
Submodules are the implementation.
"""

from typing import TYPE_CHECKING, Any

from .catalog import Code, Severity
from .conversation import Conversation
from .declaration import Declaration, DeclarationUnusable, check_run_input
from .engine import EventStream, Outcome, Pipeline, RunResult, Verdict, run_sync
from .errors import (
    AguiPipelineError,
    Diagnostic,
    HandlerFailed,
    InputRejected,
    StreamRejected,
    StreamTruncated,
    UsageError,
)
from .events import (
    ActivityDeltaEvent,
    ActivityMessage,
    ActivitySnapshotEvent,
    AnyEvent,
    AssistantMessage,
    AudioPart,
    ContentPart,
    CustomEvent,
    DataSource,
    DeveloperMessage,
    DocumentPart,
    EventType,
    FileSource,
    FunctionCall,
    ImagePart,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
    RawEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEndEvent,
    ReasoningMessage,
    ReasoningMessageChunkEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    ResumeEntry,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedOutcome,
    SubagentFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
    SubagentStartedEvent,
    SystemMessage,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TextPart,
    TokenUsage,
    Tool,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UrlSource,
    UserMessage,
    VideoPart,
)
from .incremental import Incremental
from .options import Limits, Options
from .report import FindingGroup, ProducerReport, producer_report
from .sources import Source
from .stage import (
    Batch,
    Counters,
    Decoder,
    Event,
    RunRecord,
    RunStatus,
    Stage,
    StreamContext,
    reject_after,
)
from .subscribers import (
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

if TYPE_CHECKING:
    from .agent_resource import AgentResourceError, capabilities_from_agent_resource
    from .aiohttp_transport import AiohttpTransport
    from .capabilities import AgentCapabilities
    from .client import HttpAgent, HttpStatusError, HttpxTransport, RequestFailed, Transport
    from .conformance import load_fixture, run_fixture
    from .relay import Relay, RelayResponse, Upstream
    from .resume import pending_interrupts, resume_input
    from .run_input import PreparedInput, RunAgentInput, prepare_input
    from .serve import BackgroundServer, Replay, ReplayServer

_LAZY = {
    "AgentCapabilities": "capabilities",
    "AgentResourceError": "agent_resource",
    "capabilities_from_agent_resource": "agent_resource",
    "PreparedInput": "run_input",
    "RunAgentInput": "run_input",
    "prepare_input": "run_input",
    "AiohttpTransport": "aiohttp_transport",
    "HttpAgent": "client",
    "HttpStatusError": "client",
    "HttpxTransport": "client",
    "RequestFailed": "client",
    "Transport": "client",
    "load_fixture": "conformance",
    "run_fixture": "conformance",
    "pending_interrupts": "resume",
    "resume_input": "resume",
    "Relay": "relay",
    "RelayResponse": "relay",
    "Upstream": "relay",
    "BackgroundServer": "serve",
    "Replay": "serve",
    "ReplayServer": "serve",
}
"""Names imported on first use, by module: they need the ``http``, ``aiohttp`` or ``serve``
extra, or pydantic (the models of a declaration and of a run input), whose import costs
about 0.2 s that ``agui-pipeline check FILE`` need not pay; or they bring what a check
of a file does without (the conformance runner and its event loop, ``uuid`` for
resuming). ``python -m agui_pipeline`` imports this package first, so whatever it
imports eagerly is part of every command's start-up."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        from importlib import import_module

        return getattr(import_module(f".{module}", __name__), name)
    raise AttributeError(f"module 'agui_pipeline' has no attribute {name!r}")


__all__ = [
    "ActivityDeltaEvent",
    "ActivityMessage",
    "ActivitySnapshotEvent",
    "AgentCapabilities",
    "AgentResourceError",
    "AguiPipelineError",
    "AiohttpTransport",
    "AnyEvent",
    "AssistantMessage",
    "AudioPart",
    "BackgroundServer",
    "Batch",
    "Code",
    "ContentPart",
    "Conversation",
    "Counters",
    "CustomEvent",
    "DataSource",
    "Declaration",
    "DeclarationUnusable",
    "Decoder",
    "DeveloperMessage",
    "Diagnostic",
    "DocumentPart",
    "Event",
    "EventHandler",
    "EventStream",
    "EventType",
    "FileSource",
    "FindingGroup",
    "FunctionCall",
    "HandlerFailed",
    "Handlers",
    "HttpAgent",
    "HttpStatusError",
    "HttpxTransport",
    "ImagePart",
    "Incremental",
    "InputRejected",
    "Interrupt",
    "JsonLinesSink",
    "Limits",
    "Message",
    "MessagesSnapshotEvent",
    "Options",
    "Outcome",
    "Pipeline",
    "PreparedInput",
    "ProducerReport",
    "ProtoSink",
    "RawEvent",
    "ReasoningEncryptedValueEvent",
    "ReasoningEndEvent",
    "ReasoningMessage",
    "ReasoningMessageChunkEvent",
    "ReasoningMessageContentEvent",
    "ReasoningMessageEndEvent",
    "ReasoningMessageStartEvent",
    "ReasoningStartEvent",
    "Relay",
    "RelayResponse",
    "Replay",
    "ReplayServer",
    "RequestFailed",
    "ResumeEntry",
    "RunAgentInput",
    "RunErrorEvent",
    "RunFinishedCancelledOutcome",
    "RunFinishedEvent",
    "RunFinishedInterruptOutcome",
    "RunFinishedOutcome",
    "RunFinishedSuccessOutcome",
    "RunRecord",
    "RunResult",
    "RunStartedEvent",
    "RunStatus",
    "Severity",
    "Sink",
    "Source",
    "SseSink",
    "Stage",
    "StateDeltaEvent",
    "StateSnapshotEvent",
    "StepFinishedEvent",
    "StepStartedEvent",
    "StreamContext",
    "StreamRejected",
    "StreamTruncated",
    "SubagentErrorEvent",
    "SubagentFinishedEvent",
    "SubagentFinishedOutcome",
    "SubagentFinishedSuccessOutcome",
    "SubagentFinishedSuspendedOutcome",
    "SubagentStartedEvent",
    "SystemMessage",
    "TextMessageChunkEvent",
    "TextMessageContentEvent",
    "TextMessageEndEvent",
    "TextMessageStartEvent",
    "TextPart",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolCallArgsEvent",
    "ToolCallChunkEvent",
    "ToolCallEndEvent",
    "ToolCallResultEvent",
    "ToolCallStartEvent",
    "ToolMessage",
    "Transport",
    "Upstream",
    "UrlSource",
    "UsageError",
    "UserMessage",
    "Verdict",
    "VideoPart",
    "capabilities_from_agent_resource",
    "check_run_input",
    "encode_json_lines",
    "encode_proto",
    "encode_sse",
    "load_fixture",
    "pending_interrupts",
    "prepare_input",
    "producer_report",
    "reject_after",
    "resume_input",
    "run_fixture",
    "run_sync",
]
