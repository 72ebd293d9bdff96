"""agui-pipeline: consume AG-UI event streams the way the protocol requires.

The public API::

    from pipeline import Pipeline

    result = await Pipeline().run(Path("run.sse"))
    result.verdict.outcome      # completed / rejected / truncated / handler-failed
    result.events               # what application code may see
    result.diagnostics          # what was stripped, translated, noticed

Everything importable from this module is the stable API; submodules are
the implementation.
"""

from .catalog import Code, Severity
from .engine import EventStream, Outcome, Pipeline, RunResult, Verdict, run_sync
from .errors import Diagnostic, HandlerFailed, StreamRejected, StreamTruncated
from .run_input import InputRejected, PreparedInput, RunAgentInput, prepare_input
from .sources import Source
from .stage import Batch, Counters, Decoder, Event, Limits, Options, Stage, StreamContext

__all__ = [
    "Batch",
    "Code",
    "Counters",
    "Decoder",
    "Diagnostic",
    "Event",
    "EventStream",
    "HandlerFailed",
    "InputRejected",
    "Limits",
    "Options",
    "Outcome",
    "Pipeline",
    "PreparedInput",
    "RunAgentInput",
    "RunResult",
    "Severity",
    "Source",
    "Stage",
    "StreamContext",
    "StreamRejected",
    "StreamTruncated",
    "Verdict",
    "prepare_input",
    "run_sync",
]
