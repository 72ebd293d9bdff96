"""``check SOURCE...``: each source (a file, a directory of recordings, ``-``, a fixture or
an agent's URL) through the default pipeline, judged by the gate, reported."""

from __future__ import annotations

import argparse
import io
import itertools
import os
import stat
import sys
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import orjson
from agui_pipeline._engine.pipeline import Pipeline
from agui_pipeline._engine.result import RunResult
from agui_pipeline._engine.sources import Source, iter_chunks_sync, may_stall
from agui_pipeline.cli import http as cli_http
from agui_pipeline.cli import recordings
from agui_pipeline.cli.config import FAIL_ON, FAIL_ON_ALIASES, LEVELS, ConfigError, build_gate
from agui_pipeline.declaration import Declaration
from agui_pipeline.delivery.escaping import inert, printable_name
from agui_pipeline.delivery.locate import CHANGED, Stamp, stamp
from agui_pipeline.delivery.redaction import redact_in, redact_source
from agui_pipeline.errors import Diagnostic, InputRejected, UsageError
from agui_pipeline.model.declared import derive_declaration, read_declaration
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
    load_middleware,
)
from agui_pipeline.cli.output import REPORTS


def _check_source(
    name: str, settings: Settings, progress: bool, sink: Sink | None = None
) -> Checked:
    """Check one source; a usage error becomes a :class:`Checked` with status 2.

    The source is named in the report as it may be written: a URL of any scheme redacted,
    a file name that is not UTF-8 with its bytes escaped; so is any error about it.
    ``sink`` sees the delivered events (the fleet's run fields).
    """
    shown = printable_name(redact_source(name))
    try:
        result, stream_file, judged = _run_source(name, settings, progress, sink)
    except CommandError as error:
        said = printable_name(redact_in(str(error), name))
        return Checked(shown, None, EXIT_USAGE, error=said)
    settings.gate.tune(result)
    failures = settings.gate.failures(result)
    status = EXIT_FAILED if failures else EXIT_OK
    return Checked(shown, result, status, failures, stream_file=stream_file, judged=judged)


def _run_source(
    name: str, settings: Settings, progress: bool, sink: Sink | None = None
) -> tuple[RunResult, str | None, Stamp | None]:
    """The result, the file its findings are placed in, and that file's stamp as it was
    read (``CHANGED`` when it changed under the read)."""
    declaration = settings.declaration
    raw_input, input_name = _run_input(name, settings)
    meter = cli_http.StreamMeter(sys.stderr, forced=settings.progress) if progress else None
    sinks: list[Sink] = [meter] if meter else []
    if sink is not None:
        sinks.append(sink)
    if name.startswith(("http://", "https://")):
        return _check_url(name, settings, raw_input, declaration, meter), None, None
    source, stream_file, fixture = _local_source(name)
    peer = settings.peer_version
    if fixture is not None:
        # A conformance fixture: its stream, its input unless --input overrides it.
        source = fixture.sse()
        raw_input = raw_input if raw_input is not None else fixture.raw_input()
        peer = peer or fixture.peer_max_protocol_version
    pipeline = _pipeline(replace(settings, peer_version=peer), declaration, sinks, meter)
    body, outgoing = _outgoing(raw_input, input_name, peer)
    try:
        before = stamp(stream_file) if stream_file is not None else None
        result = _drain(pipeline, source, body, outgoing)
        if stream_file is None:
            return result, None, None
        return result, stream_file, before if stamp(stream_file) == before else CHANGED
    except OSError as error:
        raise CommandError(f"cannot read {redact_source(name)}: {error}") from error
    finally:
        if meter is not None:
            meter.close()


def _check_url(
    url: str,
    settings: Settings,
    raw_input: dict[str, Any] | None,
    declaration: Declaration | None,
    meter: cli_http.StreamMeter | None,
) -> RunResult:
    """An agent's URL, checked with the run input POSTed to it."""
    try:
        from agui_pipeline.http.client import RequestFailed
    except ModuleNotFoundError as error:
        raise missing_extra(error, "http", "checking a URL") from None
    try:
        result: RunResult = cli_http.check_url(
            url,
            framing=settings.framing,
            peer_version=settings.peer_version,
            headers=settings.headers,
            run_input=raw_input,
            capabilities=declaration,
            progress=meter,
            idle_timeout=settings.idle_timeout,
            max_duration=settings.max_duration,
            transport=settings.transport,
            middleware=[load_middleware(spec) for spec in settings.middleware],
        )
    except (ValueError, InputRejected, RequestFailed) as error:
        raise CommandError(str(error)) from error
    return result


def _local_source(name: str) -> tuple[Source, str | None, Fixture | None]:
    """What ``name`` (a file, an fsspec URL or ``-``) is read from, the file findings are
    placed in (``None``: placed by event), and the conformance fixture it holds, if any."""
    if name == "-":
        return "-", None, None
    if recordings.is_stored(name):
        # Findings in object storage are placed by event, not line (no second read).
        source, fixture = _open_stored(name)
        return source, None, fixture
    path = Path(name)
    _is_a_file(name)
    fixture = _fixture(path)
    return path, None if fixture is not None else name, fixture


def _is_a_file(name: str, what: str = "") -> None:
    """Refuse ``name`` unless it is a regular file, saying what it is: a FIFO or a device
    is never opened (it may never end, or never begin), a directory found in a listing
    is one that could not be listed."""
    from agui_pipeline._json import not_a_file

    try:
        kind = not_a_file(name)
    except FileNotFoundError:
        raise CommandError(f"{what}no such file: {name}") from None
    except OSError as error:
        raise CommandError(f"{what}cannot read {name}: {error.strerror or error}") from None
    if kind == "a directory":
        try:
            os.scandir(name).close()
        except OSError as error:
            kind += f" that cannot be listed ({error.strerror or error})"
    if kind is not None:
        raise CommandError(f"{what}{name} is {kind}, not a file: it is not read")


def _outgoing(
    raw_input: dict[str, Any] | None, input_name: str | None, peer: str | None
) -> tuple[dict[str, Any] | None, list[Diagnostic]]:
    """The run input as it would be sent, and what the outgoing boundary said of it: the
    same boundary a live run's input crosses, so a file and a URL judge alike."""
    if raw_input is None:
        return None, []
    from agui_pipeline.model.run_input import prepare_input

    try:
        prepared = prepare_input(raw_input, peer_max_protocol_version=peer)
    except InputRejected as error:
        raise CommandError(f"the run input {input_name}: {error}") from error
    return prepared.body, list(prepared.diagnostics)


def _pipeline(
    settings: Settings,
    declaration: Declaration | None = None,
    sinks: Sequence[Sink] = (),
    meter: cli_http.StreamMeter | None = None,
) -> Pipeline:
    """The pipeline a file or stdin is checked with; ``--middleware`` loaded (a usage error
    when it does not load, or asks for a chunk form its place cannot give)."""
    try:
        return Pipeline(
            middleware=[load_middleware(spec) for spec in settings.middleware],
            framing=settings.framing,
            peer_max_protocol_version=settings.peer_version,
            capabilities=declaration,
            sinks=sinks,
            on_diagnostic=meter.diagnostic if meter else None,
            idle_timeout=settings.idle_timeout,
            max_duration=settings.max_duration,
        )
    except UsageError as error:
        raise CommandError(f"--middleware: {error}") from None


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

    A fixture is a document, read whole: a file past ``MAX_DOCUMENT`` is none (a 300 MB
    line that opens like one would otherwise be read into memory before it is judged)."""
    from agui_pipeline._json import MAX_DOCUMENT

    with path.open("rb") as file:
        first = file.readline(1 << 16).strip()
        too_long = os.fstat(file.fileno()).st_size > MAX_DOCUMENT
    if too_long or not _may_be_fixture(first):
        return None
    from agui_pipeline.testing import conformance

    try:
        return conformance.load_fixture(path)
    except conformance.FixtureError:
        return None


def _may_be_fixture(first_line: bytes) -> bool:
    """A stream file never starts with a line that is not a whole value, while a fixture
    is a pretty-printed document: only then is the whole file read and parsed."""
    if not first_line.startswith(b"{"):
        return False
    try:
        head = orjson.loads(first_line)
    except orjson.JSONDecodeError:
        return True
    return not (type(head) is dict and "stream" not in head)  # else a JSON-lines stream


def _open_stored(name: str) -> tuple[Source, Fixture | None]:
    """A recording named by an fsspec URL, read once from its start: the stream to check,
    and the fixture it holds (if it is one)."""
    try:
        reads = recordings.read_stored(name)
        first = next(reads, b"")
        if not _may_be_fixture(first.split(b"\n", 1)[0][: 1 << 16].strip()):
            return _resumed(first, reads), None
        data = first + b"".join(reads)
    except ModuleNotFoundError as error:
        raise missing_extra(error, "dask", f"reading {name}") from None
    except FileNotFoundError:
        raise CommandError(f"no such file: {redact_source(name)}") from None
    except (OSError, ImportError, ValueError) as error:
        raise CommandError(f"cannot read {redact_source(name)}: {error}") from None
    from agui_pipeline.testing import conformance

    try:
        return data, conformance.parse_fixture(data, name)
    except conformance.FixtureError:
        return data, None


def _resumed(first: bytes, reads: Iterator[bytes]) -> Iterator[bytes]:
    """``first`` and the reads after it, closing the reader however the stream ends."""
    try:
        yield first
        yield from reads
    finally:
        close = getattr(reads, "close", None)
        if close is not None:
            close()


def read_input(path: Path) -> dict[str, Any]:
    """The run input in ``path`` (``--input``): a JSON object."""
    from agui_pipeline._json import read_document

    try:
        data = read_document(path)
    except OSError as error:
        raise CommandError(f"cannot read the run input {path}: {error}") from None
    return _input_document(data, str(path))


def _input_document(data: bytes, where: str) -> dict[str, Any]:
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise CommandError(f"cannot read the run input {where}: {error}") from None
    if type(document) is not dict:
        raise CommandError(f"the run input {where} is not a JSON object")
    return document


def _run_input(name: str, settings: Settings) -> tuple[dict[str, Any] | None, str | None]:
    """The run input ``name`` is judged against, and where it was read: ``--input``'s for
    every source, or the one ``--run-input`` pairs with this recording by its name."""
    if settings.input is not None:
        return read_input(Path(settings.input)), settings.input
    if settings.run_input is None:
        return None, None
    if name == "-" or name.startswith(("http://", "https://")):
        raise CommandError(
            f"--run-input pairs recordings with their inputs by name: {name} is none"
        )
    where = recordings.paired(settings.run_input, name)
    if not recordings.is_stored(where):
        _is_a_file(where, f"no run input for {name}: ")
        return read_input(Path(where)), where
    from agui_pipeline._json import MAX_DOCUMENT

    try:
        data = recordings.read_stored_document(where, MAX_DOCUMENT)
    except ModuleNotFoundError as error:
        raise missing_extra(error, "dask", f"reading {where}") from None
    except FileNotFoundError:
        said = f"no such file: {redact_source(where)}"
        raise CommandError(f"no run input for {redact_source(name)}: {said}") from None
    except (OSError, ImportError, ValueError) as error:
        said = redact_in(str(error), where)
        raise CommandError(f"cannot read the run input {redact_source(where)}: {said}") from None
    return _input_document(data, redact_source(where)), where


def declaration_from_files(
    capabilities: str | None, agent_resource: str | None
) -> Declaration | None:
    """The declaration ``--capabilities`` or ``--agent-resource`` names, read once.

    Who made the mistake decides the answer. A file the operator named that is not there,
    is a directory or cannot be opened is a usage error naming it (exit 2). A file that
    opens but cannot be used as a declaration — not JSON, not an object, a malformed
    field, a member named twice, over the size or depth limit — is the producer's: it is
    read as the library reads it, unusable, and every stream is judged as undeclared with
    ``reconcile.declaration-unusable`` saying why, for "a rejected or absent declaration
    MUST NOT prevent a run" (``/spec/1.1/basic/capabilities``, Error Handling).
    """
    path = capabilities or agent_resource
    if path is None:
        return None
    _openable(path)
    if capabilities:
        return read_declaration(Path(path))
    return derive_declaration(path)


def _openable(path: str) -> None:
    """Refuse, naming it, a file the command line was given that cannot be opened."""
    try:
        kind = os.stat(path).st_mode
        if stat.S_ISDIR(kind):
            raise CommandError(f"{path} is a directory, not a file")
        if not stat.S_ISREG(kind):
            raise CommandError(f"{path} is not a regular file")
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise CommandError(f"no such file: {path}") from None
    except OSError as error:
        raise CommandError(f"cannot open {path}: {error.strerror or error}") from None


def missing_extra(error: ModuleNotFoundError, extra: str, doing: str) -> CommandError:
    return CommandError(
        f"{doing} needs the '{extra}' extra (no module {error.name!r}): "
        f"pip install 'agui-pipeline[{extra}]'"
    )


def _render(name: str, settings: Settings) -> tuple[int, str]:
    """Check one source and render its part of the report (a ``--jobs`` or cluster worker)."""
    return render_checked(_check_source(name, settings, progress=False), settings)


def render_checked(checked: Checked, settings: Settings) -> tuple[int, str]:
    """``checked``'s status and report part, its error (for stderr) after a NUL."""
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
            "stdin, a conformance fixture (a JSON object with 'stream' and 'input'), a directory "
            "(its recordings), a glob, an fsspec URL (s3://bucket/runs/, the 'dask' extra), or "
            "an agent's http(s) URL. Options also read from [tool.agui-pipeline] in "
            "./pyproject.toml "
            "(fail-on, max-warnings, rules = {CODE = LEVEL}); the command line wins.",
            78,
        ),
        epilog=EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument(
        "sources", nargs="+", metavar="SOURCE", help="a file, a directory, a glob, -, or a URL"
    )
    check.add_argument(
        "--format",
        choices=sorted(REPORTS),
        default="text",
        help="report format (default text; sarif: SARIF 2.1.0 for code scanning; junit: "
        "JUnit XML, one test suite per source and a test case per run)",
    )
    _add_reading_options(check)
    _add_gate_options(check)
    _add_spreading_options(check)
    _add_report_options(check)
    _add_live_options(check)
    check.set_defaults(handler=_check)


def _add_reading_options(check: Any) -> None:
    """How each stream is read, and what it is judged against."""
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
        "contradicts it (never rejects; one it cannot use is a finding, and the stream is "
        "judged as undeclared)",
    )
    declared.add_argument(
        "--agent-resource",
        metavar="FILE",
        help="a Customer Engagement Suite agent resource (JSON) to derive the declaration from",
    )
    check.add_argument(
        "--middleware",
        action="append",
        default=[],
        metavar="MODULE:FACTORY",
        help="a stage of yours to run as middleware, before enforce: a Stage class or a "
        "function from the StreamContext to a stage, found from the current directory "
        "(repeatable, in order)",
    )
    inputs = check.add_mutually_exclusive_group()
    inputs.add_argument(
        "--input",
        metavar="FILE",
        help="the RunAgentInput (JSON) the stream answers: the baseline state, the declared "
        "tools, the history. POSTed to a URL; judged against for a file, stdin or a fixture "
        "(replacing the fixture's own input)",
    )
    inputs.add_argument(
        "--run-input",
        metavar="PATTERN",
        help="each recording's own run input, named from the recording's by PATTERN: {dir} "
        "its directory, {name} its file name, {stem} that name without its suffix (e.g. "
        "'{dir}/{stem}.input.json', 's3://bucket/inputs/{stem}.json')",
    )


def _add_gate_options(check: Any) -> None:
    """What fails a source."""
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


def _add_spreading_options(check: Any) -> None:
    """Where the sources are checked: here, in worker processes, on a cluster."""
    check.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=1,
        metavar="N",
        help="check N sources at once in separate processes (reports stay in input order)",
    )
    check.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="check the sources on a Dask cluster (the 'dask' extra): a scheduler's address "
        "(tcp://host:8786), or local:N for N worker processes on this machine. The workers "
        "read the sources themselves; the report is the one a single process prints",
    )


def _add_report_options(check: Any) -> None:
    """What the report shows, and how."""
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


def _add_live_options(check: Any) -> None:
    """A URL or stdin: the request, and when a live stream is given up."""
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
    settings = _settings(args, out)
    # A middleware that cannot be used ends here, before any report.
    _pipeline(settings, settings.declaration)
    sources = _sources(args.sources)
    report = REPORTS[args.format]
    many = len(args.sources) > 1 or any(map(_is_collection, args.sources))
    worst = EXIT_OK
    progress = not (args.jobs > 1 and many) and (args.progress or sys.stderr.isatty())
    opening, written = report.open(many), 0
    document = bool(report.close(many))
    try:
        out.write(opening)
        with ExitStack() as stack:
            for name, rendered in _parts(args, settings, sources, stack):
                # A document (JSON, SARIF, JUnit) gets one write per source, its separator
                # with it: an interrupt leaves it with whole parts only. Text is written
                # as it is made.
                between = report.between if written else ""
                if rendered is None:
                    checked = _check_source(name, settings, progress)
                    text = between
                    if document:
                        part = io.StringIO()
                        report.write(checked, settings, part)
                        text += part.getvalue()
                    else:
                        report.write(checked, settings, out)
                    status, problem = checked.status, checked.error or ""
                else:
                    status, text = rendered
                    text, _, problem = text.partition("\0")
                    text = between + text
                out.write(text)
                written += 1
                out.flush()
                if problem:
                    print(f"agui-pipeline: {inert(problem)}", file=sys.stderr)
                worst = max(worst, status)
    except KeyboardInterrupt:
        # Ctrl-C: the report is closed round the sources already written, so what was
        # written still parses; the exit status (130) says it is not all.
        if opening or written:
            out.write(report.close(many))
        print(
            f"agui-pipeline: interrupted: the report holds the {written} sources checked before it",
            file=sys.stderr,
        )
        raise
    out.write(report.close(many))
    return worst


def _settings(args: argparse.Namespace, out: TextIO) -> Settings:
    """The settings every source is checked with; options that contradict each other, or a
    gate, a header or a pattern that does not read, refused before anything is checked."""
    if args.jobs < 1:
        raise CommandError("--jobs must be at least 1")
    if args.max_warnings is not None and args.max_warnings < 0:
        raise CommandError("--max-warnings must be at least 0")
    if args.conversation and args.format != "json":
        raise CommandError("--conversation needs --format json")
    if args.sources.count("-") > 1:
        raise CommandError("stdin (-) can be read only once")
    if args.scheduler is not None and args.jobs > 1:
        raise CommandError("--scheduler and --jobs both spread the sources: give one")
    if args.scheduler is not None and "-" in args.sources:
        raise CommandError("--scheduler: the workers cannot read this process's stdin (-)")
    try:
        gate = build_gate(
            Path("pyproject.toml"), args.fail_on, args.max_warnings, args.rule, args.off
        )
        cli_http.parse_headers(args.header)
        if args.run_input is not None:
            recordings.paired(args.run_input, "runs/a.sse")
    except (ConfigError, ValueError) as error:
        raise CommandError(str(error)) from error
    return Settings(
        format=args.format,
        framing=args.framing,
        peer_version=args.peer_version,
        capabilities=args.capabilities,
        agent_resource=args.agent_resource,
        declaration=declaration_from_files(args.capabilities, args.agent_resource),
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
        run_input=args.run_input,
        middleware=tuple(args.middleware),
    )


def _parts(
    args: argparse.Namespace,
    settings: Settings,
    sources: Iterator[tuple[str, int | None]],
    stack: ExitStack,
) -> Iterator[tuple[str, tuple[int, str] | None]]:
    """Each source in order, with its rendered report part (status, text) when another
    process checked it, or ``None`` for this one to check it and write as it reads."""
    if args.scheduler is not None:
        show = args.progress or sys.stderr.isatty()
        yield from _on_cluster(args.scheduler, settings, sources, stack, show)
        return
    names = [name for name, _ in sources]
    futures: dict[int, Future[tuple[int, str]]] = {}
    if args.jobs > 1 and len(names) > 1:
        # Stdin belongs to this process; every other source goes to a worker.
        from concurrent.futures import ProcessPoolExecutor

        pool = stack.enter_context(ProcessPoolExecutor(args.jobs))
        futures = {
            position: pool.submit(_render, name, settings)
            for position, name in enumerate(names)
            if name != "-"
        }
    for position, name in enumerate(names):
        yield name, futures[position].result() if position in futures else None


def _on_cluster(
    scheduler: str,
    settings: Settings,
    sources: Iterator[tuple[str, int | None]],
    stack: ExitStack,
    show: bool,
) -> Iterator[tuple[str, tuple[int, str]]]:
    """``--scheduler``: each source rendered by a worker of the cluster (:mod:`cluster`)."""
    try:
        from agui_pipeline.cli import cluster
    except ModuleNotFoundError as error:
        raise missing_extra(error, "dask", "--scheduler") from None
    # SARIF's URIs are relative to this process's directory, wherever a worker runs.
    settings = replace(settings, sarif_root=str(Path(settings.sarif_root or os.getcwd()).resolve()))

    def unchecked(name: str, cause: str) -> tuple[int, str]:
        shown, said = printable_name(redact_source(name)), redact_in(cause, name)
        return render_checked(Checked(shown, None, EXIT_USAGE, error=said), settings)

    try:
        client = stack.enter_context(cluster.connect(scheduler))
    except (OSError, ValueError) as error:  # no scheduler there, or a bad local:N
        raise CommandError(f"--scheduler {scheduler}: {error}") from error
    meter = cluster.Progress(client) if show else None
    for _, name, part in cluster.results(
        client, sources, _render, (settings,), unchecked, ordered=True
    ):
        if meter is not None:
            meter.update(part[0])
            if "\0" in part[1]:  # its error goes to stderr: on a line of its own
                meter.clear()
        yield name, part
    if meter is not None:
        meter.close()


def _sources(given: list[str]) -> Iterator[tuple[str, int | None]]:
    """The recordings ``given`` names (:func:`recordings.expand`), listed lazily; a
    directory or glob that names nothing is refused before anything is checked."""
    listings = [_listing(source) for source in given]
    return (found for listing in listings for found in listing)


def _listing(source: str) -> Iterator[tuple[str, int | None]]:
    listed = _expand(source)
    first = next(listed)  # a collection that names nothing raises here, before any report
    return itertools.chain([first], listed)


def _is_collection(source: str) -> bool:
    """Whether ``source`` is a directory or a glob (so the report is one for several)."""
    try:
        return recordings.is_collection(source)
    except ModuleNotFoundError as error:
        raise missing_extra(error, "dask", f"reading {source}") from None
    except (OSError, ImportError, ValueError) as error:
        said = redact_in(str(error), source)
        raise CommandError(f"cannot list {redact_source(source)}: {said}") from None


def _expand(source: str) -> Iterator[tuple[str, int | None]]:
    """:func:`recordings.expand`, a listing that fails being a usage error."""
    try:
        yield from recordings.expand(source)
    except ModuleNotFoundError as error:
        raise missing_extra(error, "dask", f"reading {source}") from None
    except recordings.NothingFound as error:
        raise CommandError(str(error)) from None
    except (OSError, ImportError, ValueError) as error:
        said = redact_in(str(error), source)
        raise CommandError(f"cannot list {redact_source(source)}: {said}") from None
