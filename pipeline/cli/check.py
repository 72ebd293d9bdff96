"""``check SOURCE...``: each source (a file, a directory of recordings, ``-``, a fixture or
an agent's URL) through the default pipeline, judged by the gate, reported."""

from __future__ import annotations

import argparse
import io
import itertools
import os
import sys
import textwrap
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agui_pipeline._checking import missing_extra, recordings
from agui_pipeline._checking.gate import FAIL_ON, FAIL_ON_ALIASES, LEVELS, ConfigError
from agui_pipeline._checking.meter import StreamMeter
from agui_pipeline._checking.source import (
    Checked,
    CheckSettings,
    build_pipeline,
    check_source,
    declaration_from_files,
)
from agui_pipeline._checking.url import parse_headers
from agui_pipeline.cli.common import (
    EXIT_OK,
    EXIT_STATUSES,
    EXIT_USAGE,
    CommandError,
    Settings,
    Style,
    add_transport_option,
)
from agui_pipeline.cli.config import build_gate
from agui_pipeline.cli.output import REPORTS
from agui_pipeline.delivery.escaping import inert, printable_name
from agui_pipeline.delivery.redaction import redact_in, redact_source

if TYPE_CHECKING:
    from concurrent.futures import Future

# Start-up is most of `check` on a short file, so what only some paths need is imported
# there: the SARIF and JUnit writers, the process pool of --jobs, the cluster of
# --scheduler (the checking itself defers what it can: agui_pipeline._checking.source).


def _checked(name: str, settings: Settings, progress: bool) -> Checked:
    """One source checked with ``settings``, its progress line drawn when ``progress``."""
    meter = StreamMeter(sys.stderr, forced=settings.progress) if progress else None
    return check_source(name, settings.check, meter=meter)


def _render(name: str, settings: Settings) -> tuple[int, str]:
    """Check one source and render its part of the report (a ``--jobs`` or cluster worker)."""
    return render_checked(check_source(name, settings.check), settings)


def render_checked(checked: Checked, settings: Settings) -> tuple[int, str]:
    """``checked``'s status and report part, its error (for stderr) after a NUL."""
    buffer = io.StringIO()
    REPORTS[settings.format].write(checked, settings, buffer)
    if checked.error is not None:
        buffer.write("\0" + checked.error)  # the error goes to stderr in the parent
    return checked.status, buffer.getvalue()


# -- check: the command ------------------------------------------------------------------


def register(commands: Any) -> None:
    """Add ``agui-pipeline check SOURCE...``."""
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
    add_transport_option(check, "a URL")
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
    build_pipeline(settings.check)
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
                    checked = _checked(name, settings, progress)
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
        parse_headers(args.header)
        if args.run_input is not None:
            recordings.paired(args.run_input, "runs/a.sse")
    except (ConfigError, ValueError) as error:
        raise CommandError(str(error)) from error
    check = CheckSettings(
        gate=gate,
        framing=args.framing,
        peer_version=args.peer_version,
        declaration=declaration_from_files(args.capabilities, args.agent_resource),
        input=args.input,
        run_input=args.run_input,
        headers=tuple(args.header),
        idle_timeout=args.idle_timeout or None,
        max_duration=args.max_duration,
        transport=args.transport,
        middleware=tuple(args.middleware),
        conversation=args.conversation,
    )
    return Settings(
        check=check,
        format=args.format,
        capabilities=args.capabilities,
        agent_resource=args.agent_resource,
        progress=args.progress,
        conversation=args.conversation,
        quiet=args.quiet,
        style=Style.choose(args.color, out),
        sarif_root=args.sarif_root,
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
        from agui_pipeline._checking import cluster
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
