"""The ``agui-pipeline`` command line.

``check SOURCE...`` runs the default pipeline over each stream (a file, ``-``
for stdin, a conformance fixture, or an agent's URL — :mod:`agui_pipeline.cli.http`)
and reports the verdict and every diagnostic; ``serve FILE`` is the other side
of a URL, a recorded stream replayed as an HTTP + SSE endpoint; ``proxy`` relays
runs to an agent through the pipeline (:mod:`agui_pipeline.http.proxy`); ``explain CODE``
describes a diagnostic code; ``conformance`` replays corpus fixtures.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import orjson
from agui_pipeline import catalog
from agui_pipeline._engine.pipeline import Pipeline
from agui_pipeline._engine.result import Outcome, RunResult
from agui_pipeline._engine.sources import Source, iter_chunks_sync, may_stall
from agui_pipeline.catalog import Severity
from agui_pipeline.cli import http as cli_http
from agui_pipeline.cli.config import FAIL_ON, FAIL_ON_ALIASES, LEVELS, ConfigError, Gate, build_gate
from agui_pipeline.declaration import Declaration
from agui_pipeline.delivery.escaping import inert, printable_name
from agui_pipeline.delivery.redaction import redact_url
from agui_pipeline.delivery.report import Finding, findings, producer_report
from agui_pipeline.errors import Diagnostic, InputRejected
from agui_pipeline.model.declared import read_declaration
from agui_pipeline.stage import RunRecord, RunStatus
from agui_pipeline.subscribers import Sink

if TYPE_CHECKING:
    from concurrent.futures import Future

    from _typeshed import SupportsWrite
    from agui_pipeline.testing.conformance import Fixture

# Start-up is most of `check` on a short file, so what only some paths need is imported
# there: pydantic (the run input's and a declaration's models), the SARIF and JUnit
# writers, the process pool of --jobs, importlib.metadata for --version, and anyio (with
# asyncio under it) for a URL or stdin — a file is checked through the sync shell.

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_STATUSES = """\
exit status:
  0  every source completed, and nothing at or above the --fail-on level was found
     (by default: no run ended with RUN_ERROR, no warning)
  1  a source failed: rejected or truncated (always), or failed by --fail-on
     (by default any warning or RUN_ERROR), --max-warnings or a --rule raised to error
  2  a usage or I/O error: a bad option, a file that cannot be read, a run input the
     outgoing boundary rejects, an HTTP error status, a missing extra, a closed pipe
  130  interrupted (Ctrl-C)"""

COMMAND_EXIT_STATUSES = """\
exit status (each command's --help lists its own):
  0  success
  1  check: a source failed the gate; conformance: a fixture failed
  2  a usage or I/O error, a missing extra, a closed pipe (the reader of the output
     went away, as in `| head`: every command ends so, with nothing on stderr)
  130  interrupted (Ctrl-C)"""


class UsageError(Exception):
    """A problem with the command line or a file it names (exit status 2)."""


# -- the terminal ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Style:
    """Colour and hyperlinks for the text report.

    ``--color always|never`` decides when given (a command-line argument overrides
    the environment, as https://no-color.org asks). Otherwise, ``NO_COLOR`` set and not
    empty turns off every escape, colour and OSC 8 hyperlinks alike; ``FORCE_COLOR``
    set and not empty turns colour on where the output is not a terminal (a CI log),
    without the hyperlinks a log viewer may not read; and a terminal gets both.
    """

    colour: bool = False
    links: bool = False

    @staticmethod
    def choose(choice: str, stream: TextIO) -> Style:
        if choice == "never":
            return Style()
        if choice == "always":
            return Style(colour=True, links=True)
        if os.environ.get("NO_COLOR"):
            return Style()
        tty = stream.isatty()
        return Style(colour=tty or bool(os.environ.get("FORCE_COLOR")), links=tty)

    def paint(self, text: str, tone: str) -> str:
        if not self.colour:
            return text
        code = {"good": "32", "bad": "1;31", "warning": "33", "info": "36", "error": "31"}
        return f"\x1b[{code[tone]}m{text}\x1b[0m"

    def link(self, url: str) -> str:
        """An OSC 8 hyperlink where the terminal supports one; the URL shows either way."""
        return f"\x1b]8;;{url}\x1b\\{url}\x1b]8;;\x1b\\" if self.links else url


# -- check: settings and one source -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything about a ``check`` that is the same for every source (picklable, for --jobs)."""

    format: str
    framing: str | None
    peer_version: str | None
    capabilities: str | None
    agent_resource: str | None
    input: str | None
    headers: tuple[str, ...]
    progress: bool
    conversation: bool
    quiet: bool
    style: Style
    gate: Gate
    sarif_root: str | None
    idle_timeout: float | None = 300.0
    max_duration: float | None = None
    transport: str = "httpx"


@dataclass(slots=True)
class Checked:
    """One source, checked: the result (``None`` when it could not be read) and its status."""

    name: str
    result: RunResult | None
    status: int
    failures: list[str] = field(default_factory=list)
    """Why the source fails the check (empty when it passes)."""
    error: str | None = None
    """The usage or I/O error that kept the source from being checked."""
    stream_file: str | None = None
    """The stream's file, which findings are placed in by line and column (``None`` for
    stdin, a URL or a conformance fixture)."""


def _check_source(name: str, settings: Settings, progress: bool) -> Checked:
    """Check one source; a usage error becomes a :class:`Checked` with status 2.

    The source is named in the report as it may be written: a URL redacted, a file name
    that is not UTF-8 with its bytes escaped.
    """
    shown = redact_url(name) if name.startswith(("http://", "https://")) else printable_name(name)
    try:
        result, stream_file = _run_source(name, settings, progress)
    except UsageError as error:
        return Checked(shown, None, EXIT_USAGE, error=printable_name(str(error)))
    settings.gate.tune(result)
    failures = settings.gate.failures(result)
    status = EXIT_FAILED if failures else EXIT_OK
    return Checked(shown, result, status, failures, stream_file=stream_file)


def _run_source(name: str, settings: Settings, progress: bool) -> tuple[RunResult, str | None]:
    declaration = _declaration(settings)
    raw_input = None if settings.input is None else read_input(Path(settings.input))
    meter = cli_http.Progress(sys.stderr, forced=settings.progress) if progress else None
    sinks: list[Sink] = [meter] if meter else []
    peer = settings.peer_version
    if name.startswith(("http://", "https://")):
        try:
            from agui_pipeline.http.client import RequestFailed
        except ModuleNotFoundError as error:
            raise _missing_extra(error, "http", "checking a URL") from None
        try:
            return cli_http.check_url(
                name,
                framing=settings.framing,
                peer_version=peer,
                headers=settings.headers,
                run_input=raw_input,
                capabilities=declaration,
                progress=meter,
                idle_timeout=settings.idle_timeout,
                max_duration=settings.max_duration,
                transport=settings.transport,
            ), None
        except (ValueError, InputRejected, RequestFailed) as error:
            raise UsageError(str(error)) from error
    source: Source = "-"
    stream_file: str | None = None
    if name != "-":
        path = Path(name)
        if not path.is_file():
            raise UsageError(f"no such file: {name}")
        source = path
        fixture = _fixture(path)
        if fixture is not None:
            # A conformance fixture: its stream, its input unless --input overrides it.
            source = fixture.sse()
            raw_input = raw_input if raw_input is not None else fixture.raw_input()
            peer = peer or fixture.peer_max_protocol_version
        else:
            stream_file = name
    pipeline = Pipeline(
        framing=settings.framing,
        peer_max_protocol_version=peer,
        capabilities=declaration,
        sinks=sinks,
        on_diagnostic=meter.diagnostic if meter else None,
        idle_timeout=settings.idle_timeout,
        max_duration=settings.max_duration,
    )
    body, outgoing = None, []
    if raw_input is not None:
        from agui_pipeline.model.run_input import prepare_input

        # The same boundary a live run's input crosses, so a file and a URL judge alike.
        try:
            prepared = prepare_input(raw_input, peer_max_protocol_version=peer)
        except InputRejected as error:
            raise UsageError(f"the run input {settings.input}: {error}") from error
        body, outgoing = prepared.body, list(prepared.diagnostics)
    try:
        return _drain(pipeline, source, body, outgoing), stream_file
    except OSError as error:
        raise UsageError(f"cannot read {name}: {error}") from error
    finally:
        if meter is not None:
            meter.close()


def _drain(
    pipeline: Pipeline, source: Source, run_input: dict[str, Any] | None, said: list[Diagnostic]
) -> RunResult:
    """Judge one stream keeping none of its events (so a stream of any length fits), with
    ``said`` — the outgoing boundary's diagnostics on the run input — reported first.

    A file or bytes cannot stall, so they go through the sync shell: the same stages and
    verdict as :meth:`EventStream.drain`, without an event loop, so ``check FILE`` never
    imports anyio or asyncio (a fifth of its start-up). Stdin can stall, and its idle
    window and deadline are the async shell's clock.
    """
    if may_stall(source):
        import anyio

        stream = pipeline.open(source, run_input=run_input)
        stream.context.diagnostics.extend(said)
        return anyio.run(stream.drain)
    incremental = pipeline.incremental(run_input=run_input)
    incremental.context.diagnostics.extend(said)
    for chunk in iter_chunks_sync(source):
        incremental.feed(chunk)
        if incremental.ended:
            break
    result = incremental.close()
    result.events = []  # as drain(): the report needs no events
    return result


def _fixture(path: Path) -> Fixture | None:
    """The conformance fixture in ``path``, when it holds one (a JSON object with ``stream``).

    A stream file never starts with a line that is not a whole value, while a fixture
    is a pretty-printed document: only then is the whole file read and parsed.
    """
    with path.open("rb") as file:
        first = file.readline(1 << 16).strip()
    if not first.startswith(b"{"):
        return None
    try:
        head = orjson.loads(first)
    except orjson.JSONDecodeError:
        head = None
    if type(head) is dict and "stream" not in head:
        return None  # a JSON-lines stream
    from agui_pipeline.testing import conformance

    try:
        return conformance.load_fixture(path)
    except conformance.FixtureError:
        return None


def read_input(path: Path) -> dict[str, Any]:
    """The run input in ``path`` (``--input``): a JSON object."""
    from agui_pipeline._json import read_document

    try:
        document = orjson.loads(read_document(path))
    except (OSError, orjson.JSONDecodeError) as error:
        raise UsageError(f"cannot read the run input {path}: {error}") from None
    if type(document) is not dict:
        raise UsageError(f"the run input {path} is not a JSON object")
    return document


def _declaration(settings: Settings) -> Declaration | None:
    """The declaration named by ``--capabilities`` or ``--agent-resource``, if any."""
    return _read_declaration(settings.capabilities, settings.agent_resource)


def _read_declaration(capabilities: str | None, agent_resource: str | None) -> Declaration | None:
    path = capabilities or agent_resource
    if path is None:
        return None
    if not Path(path).is_file():
        raise UsageError(f"no such file: {path}")
    from agui_pipeline._json import MAX_DOCUMENT

    size = Path(path).stat().st_size
    if size > MAX_DOCUMENT:
        raise UsageError(
            f"{path} holds {size:,} bytes, over the {MAX_DOCUMENT:,}-byte cap on a "
            "declaration or agent resource (MAX_DOCUMENT)"
        )
    if capabilities:
        return read_declaration(Path(path))
    from agui_pipeline.model.agent_resource import capabilities_from_agent_resource

    try:
        return read_declaration(capabilities_from_agent_resource(Path(path)))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot derive a declaration from {path}: {exc}") from exc


def _missing_extra(error: ModuleNotFoundError, extra: str, doing: str) -> UsageError:
    return UsageError(
        f"{doing} needs the '{extra}' extra (no module {error.name!r}): "
        f"pip install 'agui-pipeline[{extra}]'"
    )


# -- check: the reports ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Report:
    """A report format: what opens and closes the document, and one source's part."""

    write: Callable[[Checked, Settings, TextIO], None]
    open: Callable[[bool], str] = lambda many: ""
    between: str = ""
    close: Callable[[bool], str] = lambda many: ""


def _verdict_line(checked: Checked, style: Style) -> str:
    """``NAME: OUTCOME`` and, for a stream that was read to its end, why it fails the check.

    A completed stream on which a run ended with ``RUN_ERROR`` reads ``run-error``: the
    stream is sound, the run failed (as a relay reports an upstream it lost).
    """
    name = inert(checked.name)
    if checked.result is None:
        return f"{name}: {style.paint('error', 'bad')}: {inert(checked.error or '')}"
    result = checked.result
    completed = result.verdict.outcome is Outcome.COMPLETED
    outcome = str(result.verdict.outcome)
    if completed and result.run_counts.get(str(RunStatus.ERROR)):
        outcome = "run-error"
    tone = "good" if outcome == str(Outcome.COMPLETED) else "bad"
    line = f"{name}: {style.paint(outcome, tone)}"
    if checked.failures and completed:
        line += f", {style.paint('failed', 'bad')}: " + "; ".join(checked.failures)
    return line


def _text_report(checked: Checked, settings: Settings, out: TextIO) -> None:
    style = settings.style
    out.write(_verdict_line(checked, style) + "\n")
    result = checked.result
    if result is None or settings.quiet:
        return
    counters = result.counters
    out.write(
        f"  events: {counters.read} read, {counters.delivered} delivered, "
        f"{counters.dropped} dropped, {counters.stripped} members stripped, "
        f"{counters.expanded} chunks expanded into {counters.synthesized}"
        + (f", {counters.discarded} discarded at the rejection" if counters.discarded else "")
        + f" ({result.transport or 'no framing'})\n"
    )
    listed = len(result.runs)
    for position, run in enumerate(result.runs):
        if position == listed // 2 and sum(result.run_counts.values()) > listed:
            unlisted = sum(result.run_counts.values()) - listed
            out.write(f"  ... {unlisted} more runs not listed (limit max_run_records)\n")
        out.write(f"  {_run_line(run)}\n")
    if sum(result.run_counts.values()) > listed:
        counted = ", ".join(f"{count} {status}" for status, count in result.run_counts.items())
        out.write(f"  runs: {counted}\n")
    for finding in _placed(checked, settings):
        out.write(_finding_text(checked.name, finding, style))
    for code, count in result.suppressed.items():
        out.write(f"  ... and {count} more {code} (limit max_diagnostics)\n")
    report = producer_report(result.diagnostics, result.suppressed)
    if any(group.count > 1 for group in report.groups):  # the grouping says something new
        out.write("  " + "\n  ".join(inert(line) for line in report.render().split("\n")) + "\n")


def _placed(checked: Checked, settings: Settings) -> list[Finding]:
    """The checked source's findings, placed in the stream file and the declaration."""
    assert checked.result is not None
    return findings(checked.result, stream=checked.stream_file, declaration=settings.capabilities)


def _finding_text(source: str, finding: Finding, style: Style) -> str:
    """A finding as a compiler prints one, for editors and CI annotations to pick up::

        run.sse:3:51: warning verify.tool-result-unseen: TOOL_CALL_RESULT answers ...
          event 1, at /toolCallId; spec: https://ag-ui.com/spec/1.1/events/tool-calls
          fix: Pass the run input ... (agui-pipeline explain verify.tool-result-unseen)

    The place is the stream file's line and column (or the declaration's, for a finding
    about it); without one, the source's name alone.
    """
    diagnostic, position = finding.diagnostic, finding.position
    place = inert(source)
    if position is not None:
        place = f"{inert(finding.file or source)}:{position.line}:{position.column}"
    severity = str(diagnostic.severity)
    message = inert(diagnostic.message)  # the producer's text: inert on a terminal
    text = f"{place}: {style.paint(severity, severity)} {diagnostic.code}: {message}\n"
    where = []
    if diagnostic.event_index is not None:
        where.append(f"event {diagnostic.event_index}")
    if diagnostic.pointer is not None:
        where.append(f"at {inert(diagnostic.pointer) or '/'}")
    if diagnostic.declared is not None:
        where.append(f"declaration {diagnostic.declared}")
    said = [", ".join(where)] if where else []
    if diagnostic.spec:
        said.append(f"spec: {style.link(catalog.spec_url(diagnostic.spec))}")
    if said:
        text += "  " + "; ".join(said) + "\n"
    if finding.fix and diagnostic.severity is not Severity.INFO:
        text += f"  fix: {finding.fix} (agui-pipeline explain {diagnostic.code})\n"
    return text


def _run_line(run: RunRecord) -> str:
    """One run: its ids and how it ended (``run 'r1' (thread 't1'): interrupted, 2 interrupts``)."""
    name = "(failed before it began)" if run.run_id is None else repr(run.run_id)
    thread = "" if run.thread_id is None else f" (thread {run.thread_id!r})"
    detail = ""
    if run.status is RunStatus.ERROR:
        detail = f": {run.error}"
    elif run.status is RunStatus.INTERRUPTED and run.outcome is not None:
        detail = f", {len(run.outcome['interrupts'])} interrupt(s)"
    return inert(f"run {name}{thread}: {run.status}{detail}")


def _json_report(checked: Checked, settings: Settings, out: TextIO) -> None:
    """One source's JSON object; the Conversation, when asked for, is written piece by
    piece, so a huge one is never held a second time as one serialised document."""
    result = checked.result
    report: dict[str, Any] = {"source": checked.name, "status": checked.status}
    if result is None:
        report["error"] = checked.error
        out.write(_dumps(report))
        return
    counters = result.counters
    placed = _placed(checked, settings)
    report |= {
        "failures": checked.failures,
        "verdict": _verdict_fields(result, placed),
        "transport": result.transport,
        "counters": {
            "read": counters.read,
            "delivered": counters.delivered,
            "dropped": counters.dropped,
            "stripped": counters.stripped,
            "expanded": counters.expanded,
            "synthesized": counters.synthesized,
            "discarded": counters.discarded,
        },
        "diagnostics": [finding.to_dict() for finding in placed if not finding.ended_stream],
        "suppressed": result.suppressed,
        "producerReport": producer_report(result.diagnostics, result.suppressed).to_dict(),
        "runs": [run.to_dict() for run in result.runs],
        "runCounts": result.run_counts,
    }
    head = _dumps(report)
    conversation = result.materialised
    if not settings.conversation or conversation is None:
        out.write(head)
        return
    out.write(head[:-2] + ',\n  "conversation": {\n    "messages": [')
    activity = []
    for position, message in enumerate(conversation.messages):
        out.write(("," if position else "") + "\n      " + _dumps(message, 6))
        if message.get("role") == "activity":
            activity.append(message.get("id"))
    out.write("\n    ],\n")
    out.write(f'    "state": {_dumps(conversation.state, 4)},\n')
    out.write(f'    "interrupts": {_dumps(conversation.interrupts, 4)},\n')
    out.write(f'    "activity": {_dumps(activity, 4)}\n  }}\n}}')


def _verdict_fields(result: RunResult, placed: list[Finding]) -> dict[str, Any]:
    """The verdict as separate fields: the outcome, then what the rejection (if any) said,
    where, why and how to fix it, as each diagnostic has them."""
    fields: dict[str, Any] = {"outcome": str(result.verdict.outcome)}
    for finding in placed:
        if finding.ended_stream:
            said = finding.to_dict()
            return fields | {name: said[name] for name in _FINDING_FIELDS}
    return fields | dict.fromkeys(_FINDING_FIELDS)


_FINDING_FIELDS = (
    "code",
    "message",
    "spec",
    "fix",
    "file",
    "line",
    "column",
    "eventIndex",
    "pointer",
)


def _dumps(value: Any, indent: int = 0) -> str:
    text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    return text.replace("\n", "\n" + " " * indent) if indent else text


def _sarif_report(checked: Checked, settings: Settings, out: TextIO) -> None:
    from agui_pipeline.delivery.sarif import sarif_run

    if checked.result is None:
        run = sarif_run(checked.name, None, error=checked.error, root=settings.sarif_root)
    else:
        run = sarif_run(
            checked.name,
            checked.result,
            stream_file=checked.stream_file,
            declaration=settings.capabilities or settings.agent_resource,
            derived=settings.agent_resource is not None,
            root=settings.sarif_root,
        )
    out.write(orjson.dumps(run, option=orjson.OPT_INDENT_2).decode())


def _junit_report(checked: Checked, settings: Settings, out: TextIO) -> None:
    from agui_pipeline.delivery import junit

    junit.write_suite(
        out,
        checked.name,
        checked.result,
        failures=checked.failures,
        error=checked.error,
        fail_on_run_error=FAIL_ON.index(settings.gate.fail_on) >= FAIL_ON.index("error"),
        text=_plain_text(checked, settings),
    )


def _plain_text(checked: Checked, settings: Settings) -> str:
    buffer = io.StringIO()
    _text_report(checked, replace(settings, style=Style(), quiet=False), buffer)
    return buffer.getvalue()


def _sarif_open(many: bool) -> str:
    from agui_pipeline.delivery.sarif import sarif_log_open

    return sarif_log_open(many)


def _sarif_close(many: bool) -> str:
    from agui_pipeline.delivery.sarif import sarif_log_close

    return sarif_log_close(many)


def _junit_open(many: bool) -> str:
    from agui_pipeline.delivery.junit import document_open

    return document_open(many)


def _junit_close(many: bool) -> str:
    from agui_pipeline.delivery.junit import document_close

    return document_close(many)


REPORTS: dict[str, Report] = {
    "text": Report(_text_report),
    "json": Report(
        _json_report,
        open=lambda many: "[\n" if many else "",
        between=",\n",
        close=lambda many: "\n]\n" if many else "\n",
    ),
    "sarif": Report(_sarif_report, open=_sarif_open, between=",\n", close=_sarif_close),
    "junit": Report(_junit_report, open=_junit_open, close=_junit_close),
}


def _render(name: str, settings: Settings) -> tuple[int, str]:
    """Check one source and render its part of the report (a ``--jobs`` worker)."""
    checked = _check_source(name, settings, progress=False)
    buffer = io.StringIO()
    REPORTS[settings.format].write(checked, settings, buffer)
    if checked.error is not None:
        buffer.write("\0" + checked.error)  # the error goes to stderr in the parent
    return checked.status, buffer.getvalue()


# -- check: the command ------------------------------------------------------------------


def _add_check(commands: Any) -> None:
    check = commands.add_parser(
        "check",
        help="run the pipeline over streams and report verdicts and diagnostics",
        description=textwrap.fill(
            "Run the default pipeline over each SOURCE and report the verdict and "
            "every diagnostic. A SOURCE is a stream file (SSE, JSON lines or a JSON array), - for "
            "stdin, a conformance fixture (a JSON object with 'stream' and 'input'), or an agent's "
            "http(s) URL. Options also read from [tool.agui-pipeline] in ./pyproject.toml "
            "(fail-on, max-warnings, rules = {CODE = LEVEL}); the command line wins.",
            78,
        ),
        epilog=EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("sources", nargs="+", metavar="SOURCE", help="a file, -, or a URL")
    check.add_argument(
        "--format",
        choices=sorted(REPORTS),
        default="text",
        help="report format (default text; sarif: SARIF 2.1.0 for code scanning; junit: "
        "JUnit XML, one test suite per source and a test case per run)",
    )
    check.add_argument(
        "--framing",
        choices=["sse", "jsonl", "json", "proto"],
        help="the stream's framing (default: detected from the first bytes; proto, "
        "length-prefixed protobuf frames, is never detected and needs the 'proto' extra)",
    )
    check.add_argument(
        "--peer-version",
        metavar="VERSION",
        help="the newest protocol version the producer speaks, when it is older (e.g. 0.0.45): "
        "selects the version-gated compatibility shims",
    )
    declared = check.add_mutually_exclusive_group()
    declared.add_argument(
        "--capabilities",
        metavar="FILE",
        help="the agent's AgentCapabilities declaration (JSON): report where the stream "
        "contradicts it (never rejects)",
    )
    declared.add_argument(
        "--agent-resource",
        metavar="FILE",
        help="a Customer Engagement Suite agent resource (JSON) to derive the declaration from",
    )
    check.add_argument(
        "--input",
        metavar="FILE",
        help="the RunAgentInput (JSON) the stream answers: the baseline state, the declared "
        "tools, the history. POSTed to a URL; judged against for a file, stdin or a fixture "
        "(replacing the fixture's own input)",
    )
    check.add_argument(
        "--fail-on",
        choices=(*FAIL_ON, *FAIL_ON_ALIASES),
        metavar="LEVEL",
        help="what fails the check, each level including the one before: verdict (a "
        "rejection or truncation), error (also a run that ended with RUN_ERROR, the lenient "
        "mode), warning (also any warning: the default, as a linter), info (also any info)",
    )
    check.add_argument(
        "--max-warnings",
        type=int,
        metavar="N",
        help="fail when a source has more than N warnings",
    )
    check.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="CODE=LEVEL",
        help=f"set a diagnostic code's severity ({'|'.join(LEVELS)}; repeatable). A "
        "rejection's code cannot be tuned",
    )
    check.add_argument(
        "--off",
        action="append",
        default=[],
        metavar="CODE",
        help="leave a diagnostic code out of the report (--rule CODE=off; repeatable)",
    )
    check.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=1,
        metavar="N",
        help="check N sources at once in separate processes (reports stay in input order)",
    )
    check.add_argument(
        "--conversation",
        action="store_true",
        help="with --format json: add the materialised Conversation (messages, state, "
        "interrupts, activity)",
    )
    check.add_argument(
        "--quiet", "-q", action="store_true", help="print only the verdict line of each source"
    )
    check.add_argument(
        "--color",
        choices=["auto", "always", "never"],
        default="auto",
        help="colour and links in the text report (auto: on a terminal; none under NO_COLOR, "
        "colour without links under FORCE_COLOR)",
    )
    check.add_argument(
        "--sarif-root",
        metavar="DIR",
        help="with --format sarif: write file URIs relative to DIR (default: the current "
        "directory); files outside it get absolute file:// URIs",
    )
    check.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="with a URL: a request header (repeatable), e.g. 'Authorization: Bearer ...'",
    )
    check.add_argument(
        "--idle-timeout",
        type=_seconds,
        default=300.0,
        metavar="S",
        help="with a URL or stdin: end the stream, judged as it stands, after S seconds "
        "waiting without an event — keep-alive comments and partial frames do not count "
        "(300; 0 turns it off)",
    )
    check.add_argument(
        "--max-duration",
        type=_seconds,
        metavar="S",
        help="with a URL or stdin: end the stream, judged as it stands, S seconds after "
        "it was opened (the request sent), however steadily events arrive (no deadline)",
    )
    cli_http.add_transport_option(check, "a URL")
    check.add_argument(
        "--progress",
        action="store_true",
        help="show a progress line on stderr even when it is not a terminal",
    )
    check.set_defaults(handler=_check)


RECORDING_SUFFIXES = (".sse", ".jsonl", ".ndjson", ".json")
"""The files ``check DIR`` takes for recordings (a ``.json`` one only when it holds a stream)."""


def _recordings(source: str) -> list[str]:
    """``source`` itself, or for a directory every recording under it, in path order.

    As a linter takes a directory: the files named for a stream (``*.sse``,
    ``*.jsonl``, ``*.ndjson``), and the ``*.json`` ones that hold one — a JSON array,
    a conformance fixture, JSON lines of events — but not a capabilities declaration or
    a run input beside them. Hidden files and directories (``.git``, ``.venv``) are left out.
    """
    folder = Path(source)
    if source == "-" or source.startswith(("http://", "https://")) or not folder.is_dir():
        return [source]
    found = [
        str(path)
        for path in sorted(folder.rglob("*"))
        if path.suffix in RECORDING_SUFFIXES
        and path.is_file()
        and not any(part.startswith(".") for part in path.relative_to(folder).parts)
        and (path.suffix != ".json" or _holds_a_stream(path))
    ]
    if not found:
        raise UsageError(
            f"no recordings under {source} (files named {', '.join(RECORDING_SUFFIXES)}; "
            "a .json one holding a stream or a fixture)"
        )
    return found


def _holds_a_stream(path: Path) -> bool:
    """Whether a ``.json`` file is a recording: a JSON array, JSON lines of events, or a
    conformance fixture (a declaration or a run input is none of these)."""
    try:
        with path.open("rb") as file:
            first = file.readline(1 << 16).strip()
    except OSError:
        return True  # unreadable: checking it says why
    if first.startswith(b"["):
        return True
    try:
        head = orjson.loads(first)
    except orjson.JSONDecodeError:
        head = None
    if type(head) is dict and "type" in head:
        return True  # JSON lines, an event on its first line
    return _fixture(path) is not None


def _seconds(text: str) -> float:
    """A duration option: a positive number of seconds (``0`` turns ``--idle-timeout`` off)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not seconds >= 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds ≥ 0, got {text!r}")
    return seconds


def _check(args: argparse.Namespace, out: TextIO) -> int:
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.max_warnings is not None and args.max_warnings < 0:
        raise UsageError("--max-warnings must be at least 0")
    if args.conversation and args.format != "json":
        raise UsageError("--conversation needs --format json")
    if args.sources.count("-") > 1:
        raise UsageError("stdin (-) can be read only once")
    sources = [found for source in args.sources for found in _recordings(source)]
    try:
        gate = build_gate(
            Path("pyproject.toml"), args.fail_on, args.max_warnings, args.rule, args.off
        )
        cli_http.parse_headers(args.header)
    except (ConfigError, ValueError) as error:
        raise UsageError(str(error)) from error
    settings = Settings(
        format=args.format,
        framing=args.framing,
        peer_version=args.peer_version,
        capabilities=args.capabilities,
        agent_resource=args.agent_resource,
        input=args.input,
        headers=tuple(args.header),
        progress=args.progress,
        conversation=args.conversation,
        quiet=args.quiet,
        style=Style.choose(args.color, out),
        gate=gate,
        sarif_root=args.sarif_root,
        idle_timeout=args.idle_timeout or None,
        max_duration=args.max_duration,
        transport=args.transport,
    )
    report = REPORTS[args.format]
    many = len(sources) > 1 or any(Path(source).is_dir() for source in args.sources)
    out.write(report.open(many))
    worst = EXIT_OK
    parallel = args.jobs > 1 and many
    progress = not parallel and (args.progress or sys.stderr.isatty())
    with ExitStack() as stack:
        futures: dict[int, Future[tuple[int, str]]] = {}
        if parallel:
            # Stdin belongs to this process; every other source goes to a worker.
            from concurrent.futures import ProcessPoolExecutor

            pool = stack.enter_context(ProcessPoolExecutor(args.jobs))
            futures = {
                position: pool.submit(_render, name, settings)
                for position, name in enumerate(sources)
                if name != "-"
            }
        for position, name in enumerate(sources):
            if position:
                out.write(report.between)
            if position in futures:
                status, text = futures[position].result()
                text, _, problem = text.partition("\0")
                out.write(text)
            else:
                checked = _check_source(name, settings, progress)
                report.write(checked, settings, out)
                status, problem = checked.status, checked.error or ""
            out.flush()
            if problem:
                print(f"agui-pipeline: {inert(problem)}", file=sys.stderr)
            worst = max(worst, status)
    out.write(report.close(many))
    return worst


# -- serve ------------------------------------------------------------------------------


def _add_serve(commands: Any) -> None:
    cli_http.add_serve(commands)
    commands.choices["serve"].set_defaults(handler=_serve)


def _serve(args: argparse.Namespace, out: TextIO) -> int:
    try:
        cli_http.run_serve(args)
    except ModuleNotFoundError as error:
        raise _missing_extra(error, "serve", "serve") from None
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from exc
    return EXIT_OK


# -- bench ------------------------------------------------------------------------------


def _add_bench(commands: Any) -> None:
    from agui_pipeline.cli import bench as cli_bench

    cli_bench.add_command(commands)
    commands.choices["bench"].set_defaults(handler=_bench)


def _bench(args: argparse.Namespace, out: TextIO) -> int:
    from agui_pipeline.cli import bench as cli_bench

    try:
        return cli_bench.run_bench(args, out)
    except ValueError as error:
        raise UsageError(str(error)) from error


# -- proxy ------------------------------------------------------------------------------


def _add_proxy(commands: Any) -> None:
    cli_http.add_proxy(commands)
    proxy = commands.choices["proxy"]
    declared = proxy.add_mutually_exclusive_group()
    declared.add_argument(
        "--capabilities",
        metavar="FILE",
        help="the agent's AgentCapabilities declaration (JSON): report where a stream "
        "contradicts it (never rejects)",
    )
    declared.add_argument(
        "--agent-resource",
        metavar="FILE",
        help="a Customer Engagement Suite agent resource (JSON) to derive the declaration from",
    )
    proxy.set_defaults(handler=_proxy)


def _proxy(args: argparse.Namespace, out: TextIO) -> int:
    declaration = _read_declaration(args.capabilities, args.agent_resource)
    try:
        cli_http.run_proxy(args, declaration)
    except ModuleNotFoundError as error:
        raise _missing_extra(error, "serve", "proxy") from None
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from exc
    return EXIT_OK


# -- the command line ------------------------------------------------------------


class _ShowVersion(argparse.Action):
    """``--version``: the installed version, read from the metadata only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **_: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from importlib.metadata import version

        sys.stdout.write(f"{parser.prog} {version('agui-pipeline')}\n")
        parser.exit()


def _add_explain(commands: Any) -> None:
    from agui_pipeline.cli import explain as cli_explain

    cli_explain.add_command(commands)


def _add_conformance(commands: Any) -> None:
    from agui_pipeline.testing import conformance

    conformance.add_command(commands)


COMMANDS: dict[str, Callable[[Any], None]] = {
    "check": _add_check,
    "serve": _add_serve,
    "proxy": _add_proxy,
    "explain": _add_explain,
    "conformance": _add_conformance,
    "bench": _add_bench,
}
"""Each command's name and what adds its subparser (and imports its module)."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser, but help written to a closed pipe says so (argparse drops the
    error), so that ``--help | head`` ends as every other command does."""

    def print_help(self, file: SupportsWrite[str] | None = None) -> None:
        (file or sys.stdout).write(self.format_help())


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command``'s alone when the command line names
    it: only the top-level ``--help`` and an unknown command's error list them all, and
    building the other five subparsers (their options, their help text, their modules)
    costs about as much as checking a 20-event file once started (~4 ms)."""
    parser = _Parser(
        prog="agui-pipeline",
        description="Consume AG-UI event streams: verify them, and tell producers what "
        "their streams do wrong.",
        epilog=COMMAND_EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_ShowVersion)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, add in COMMANDS.items():
        if command is None or name == command:
            add(commands)
    return parser


def run() -> NoReturn:
    """The command as a process of its own: the ``agui-pipeline`` script, ``python -m``.

    Whatever the command, a reader that went away (``| head``) ends it with status 2
    and nothing on stderr: what is still buffered is flushed here, where a closed pipe
    can be answered, rather than at exit, where Python would print a traceback.
    """
    _collect_less()
    try:
        try:
            status: int | str | None = main()
        except SystemExit as ended:  # --help, --version, a usage error: argparse exits
            status = ended.code
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_to_devnull()
        status = EXIT_USAGE
    raise SystemExit(status)


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null: Python flushes it again at exit, and that must be quiet."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _collect_less() -> None:
    """Tune the cyclic collector for a process that is this one command.

    The pipeline's events are dicts and lists that reference counting frees; cycles
    are rare. At CPython's default (a gen-0 collection every 700 allocations) a long
    ``check`` spends about a tenth of its CPU walking the events it holds. Freezing
    what the imports made (it lives as long as the process) and collecting every
    100,000 allocations still collects cycles, for a fraction of that: ``check`` on
    300,000 events, 0.87 → 0.77 s CPU (median of 7 interleaved runs, the workload's
    SSE; disabling the collector outright did no better).
    A library call (``main()`` in-process) leaves the caller's collector alone.
    """
    gc.freeze()
    gc.set_threshold(100_000)


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    named = arguments[0] if arguments and arguments[0] in COMMANDS else None
    args = build_parser(named).parse_args(arguments)
    handler: Callable[[argparse.Namespace, TextIO], int] = args.handler
    try:
        return handler(args, out or sys.stdout)
    except UsageError as exc:
        print(f"agui-pipeline: {inert(printable_name(str(exc)))}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more can be said, so say nothing.
        _stdout_to_devnull()
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
