"""``check SOURCE...``: each source (a file, a directory of recordings, ``-``, a fixture or
an agent's URL) through the default pipeline, judged by the gate, reported."""

from __future__ import annotations

import argparse
import io
import sys
import textwrap
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import orjson
from agui_pipeline._engine.pipeline import Pipeline
from agui_pipeline._engine.result import RunResult
from agui_pipeline._engine.sources import Source, iter_chunks_sync, may_stall
from agui_pipeline.cli import http as cli_http
from agui_pipeline.cli.config import FAIL_ON, FAIL_ON_ALIASES, LEVELS, ConfigError, build_gate
from agui_pipeline.declaration import Declaration
from agui_pipeline.delivery.escaping import inert, printable_name
from agui_pipeline.delivery.redaction import redact_url
from agui_pipeline.errors import Diagnostic, InputRejected
from agui_pipeline.model.declared import read_declaration
from agui_pipeline.subscribers import Sink

if TYPE_CHECKING:
    from concurrent.futures import Future

    from agui_pipeline.testing.conformance import Fixture

# Start-up is most of `check` on a short file, so what only some paths need is imported
# there: pydantic (the run input's and a declaration's models), the SARIF and JUnit
# writers, the process pool of --jobs, importlib.metadata for --version, and anyio (with
# asyncio under it) for a URL or stdin — a file is checked through the sync shell.


from agui_pipeline.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_STATUSES,
    EXIT_USAGE,
    Checked,
    CommandError,
    Settings,
    Style,
)
from agui_pipeline.cli.output import REPORTS


def _check_source(name: str, settings: Settings, progress: bool) -> Checked:
    """Check one source; a usage error becomes a :class:`Checked` with status 2.

    The source is named in the report as it may be written: a URL redacted, a file name
    that is not UTF-8 with its bytes escaped.
    """
    shown = redact_url(name) if name.startswith(("http://", "https://")) else printable_name(name)
    try:
        result, stream_file = _run_source(name, settings, progress)
    except CommandError as error:
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
            raise missing_extra(error, "http", "checking a URL") from None
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
            raise CommandError(str(error)) from error
    source: Source = "-"
    stream_file: str | None = None
    if name != "-":
        path = Path(name)
        if not path.is_file():
            raise CommandError(f"no such file: {name}")
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
            raise CommandError(f"the run input {settings.input}: {error}") from error
        body, outgoing = prepared.body, list(prepared.diagnostics)
    try:
        return _drain(pipeline, source, body, outgoing), stream_file
    except OSError as error:
        raise CommandError(f"cannot read {name}: {error}") from error
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
        raise CommandError(f"cannot read the run input {path}: {error}") from None
    if type(document) is not dict:
        raise CommandError(f"the run input {path} is not a JSON object")
    return document


def _declaration(settings: Settings) -> Declaration | None:
    """The declaration named by ``--capabilities`` or ``--agent-resource``, if any."""
    return declaration_from_files(settings.capabilities, settings.agent_resource)


def declaration_from_files(
    capabilities: str | None, agent_resource: str | None
) -> Declaration | None:
    path = capabilities or agent_resource
    if path is None:
        return None
    if not Path(path).is_file():
        raise CommandError(f"no such file: {path}")
    from agui_pipeline._json import MAX_DOCUMENT

    size = Path(path).stat().st_size
    if size > MAX_DOCUMENT:
        raise CommandError(
            f"{path} holds {size:,} bytes, over the {MAX_DOCUMENT:,}-byte cap on a "
            "declaration or agent resource (MAX_DOCUMENT)"
        )
    if capabilities:
        return read_declaration(Path(path))
    from agui_pipeline.model.agent_resource import capabilities_from_agent_resource

    try:
        return read_declaration(capabilities_from_agent_resource(Path(path)))
    except (OSError, ValueError) as exc:
        raise CommandError(f"cannot derive a declaration from {path}: {exc}") from exc


def missing_extra(error: ModuleNotFoundError, extra: str, doing: str) -> CommandError:
    return CommandError(
        f"{doing} needs the '{extra}' extra (no module {error.name!r}): "
        f"pip install 'agui-pipeline[{extra}]'"
    )


def _render(name: str, settings: Settings) -> tuple[int, str]:
    """Check one source and render its part of the report (a ``--jobs`` worker)."""
    checked = _check_source(name, settings, progress=False)
    buffer = io.StringIO()
    REPORTS[settings.format].write(checked, settings, buffer)
    if checked.error is not None:
        buffer.write("\0" + checked.error)  # the error goes to stderr in the parent
    return checked.status, buffer.getvalue()


# -- check: the command ------------------------------------------------------------------


def add_check(commands: Any) -> None:
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
        raise CommandError(
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
        raise CommandError("--jobs must be at least 1")
    if args.max_warnings is not None and args.max_warnings < 0:
        raise CommandError("--max-warnings must be at least 0")
    if args.conversation and args.format != "json":
        raise CommandError("--conversation needs --format json")
    if args.sources.count("-") > 1:
        raise CommandError("stdin (-) can be read only once")
    sources = [found for source in args.sources for found in _recordings(source)]
    try:
        gate = build_gate(
            Path("pyproject.toml"), args.fail_on, args.max_warnings, args.rule, args.off
        )
        cli_http.parse_headers(args.header)
    except (ConfigError, ValueError) as error:
        raise CommandError(str(error)) from error
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
