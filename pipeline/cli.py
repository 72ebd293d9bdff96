"""The ``agui-pipeline`` command line.

``check SOURCE`` runs the default pipeline over a stream and reports the
verdict and every diagnostic. Exit status: 0 the stream completed, 1 the
consumer rejected it (or it was truncated), 2 a usage or I/O error. SOURCE
may be an agent's URL (:mod:`agui_pipeline.cli_http`), and ``serve FILE`` is the
other side: a recorded stream replayed as an HTTP + SSE endpoint.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any, TextIO

import anyio
import orjson

from . import cli_http, conformance
from .agent_resource import capabilities_from_agent_resource
from .capabilities import Declaration
from .engine import Outcome, Pipeline, RunResult
from .report import producer_report
from .sarif import sarif_report
from .sources import Source
from .stage import RunRecord, RunStatus

EXIT_COMPLETED = 0
EXIT_REJECTED = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """A problem with the command line or a file it names (exit status 2)."""


# -- check -------------------------------------------------------------------------


def _add_check(commands: Any) -> None:
    check = commands.add_parser(
        "check",
        help="run the pipeline over a stream and report the verdict and diagnostics",
        description="Run the default pipeline over SOURCE (a file, or - for stdin) and "
        "report the verdict and every diagnostic.",
    )
    check.add_argument("source", help="a stream file (SSE, JSON lines or a JSON array), or -")
    check.add_argument(
        "--format",
        choices=["text", "json", "sarif"],
        default="text",
        help="report format (default text; sarif: SARIF 2.1.0 for code-scanning tools)",
    )
    check.add_argument(
        "--framing",
        choices=["sse", "jsonl", "json"],
        help="the stream's framing (default: detected from the first bytes)",
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
        "--input", metavar="FILE", help="with a URL: the RunAgentInput to POST (JSON)"
    )
    check.add_argument(
        "--header",
        action="append",
        metavar="NAME:VALUE",
        help="with a URL: a request header (repeatable), e.g. 'Authorization: Bearer ...'",
    )
    check.add_argument(
        "--progress",
        action="store_true",
        help="with a URL: show progress on stderr even when it is not a terminal",
    )
    check.set_defaults(handler=_check)


def _check(args: argparse.Namespace, out: TextIO) -> int:
    declaration = _declaration(args)
    if args.source.startswith(("http://", "https://")):
        return _check_url(args, out, declaration)
    source: Source = "-" if args.source == "-" else Path(args.source)
    if isinstance(source, Path) and not source.is_file():
        raise UsageError(f"no such file: {args.source}")
    pipeline = Pipeline(
        framing=args.framing,
        peer_max_protocol_version=args.peer_version,
        capabilities=declaration,
    )
    try:
        # The report needs no events: keeping none judges a stream of any length.
        result = anyio.run(pipeline.open(source).drain)
    except OSError as exc:
        raise UsageError(f"cannot read {args.source}: {exc}") from exc
    report = _sarif_report(args) if args.format == "sarif" else _REPORTS[args.format]
    report(args.source, result, out)
    return EXIT_COMPLETED if result.verdict.outcome is Outcome.COMPLETED else EXIT_REJECTED


def _declaration(args: argparse.Namespace) -> Declaration | None:
    """The declaration named by ``--capabilities`` or ``--agent-resource``, if any."""
    path = args.capabilities or args.agent_resource
    if path is None:
        return None
    if not Path(path).is_file():
        raise UsageError(f"no such file: {path}")
    if args.capabilities:
        return Declaration.read(Path(path))
    try:
        return Declaration.read(capabilities_from_agent_resource(Path(path)))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot derive a declaration from {path}: {exc}") from exc


def _sarif_report(args: argparse.Namespace) -> Callable[[str, RunResult, TextIO], None]:
    def report(name: str, result: RunResult, out: TextIO) -> None:
        stream = Path(name).read_bytes() if name != "-" and Path(name).is_file() else None
        log = sarif_report(
            name, result, stream=stream, declaration=args.capabilities or args.agent_resource
        )
        out.write(orjson.dumps(log, option=orjson.OPT_INDENT_2).decode() + "\n")

    return report


def _text_report(name: str, result: RunResult, out: TextIO) -> None:
    verdict, counters = result.verdict, result.counters
    out.write(f"{name}: {verdict.outcome}\n")
    out.write(
        f"  events: {counters.read} read, {counters.delivered} delivered, "
        f"{counters.dropped} dropped, {counters.stripped} members stripped, "
        f"{counters.expanded} chunks expanded into {counters.synthesized}"
        + (f", {counters.discarded} discarded at the rejection" if counters.discarded else "")
        + f" ({result.transport or 'no framing'})\n"
    )
    for run in result.runs:
        out.write(f"  {_run_line(run)}\n")
    if verdict.error is not None:
        out.write(f"  {verdict.message}\n")
    if result.diagnostics:
        out.write(f"  diagnostics ({len(result.diagnostics)}):\n")
        for diagnostic in result.diagnostics:
            out.write(f"    {diagnostic.severity}: {diagnostic}\n")
    for code, count in result.suppressed.items():
        out.write(f"    ... and {count} more {code}\n")
    report = producer_report(result.diagnostics, result.suppressed)
    if report.groups:
        out.write("  " + report.render().replace("\n", "\n  ") + "\n")


def _run_line(run: RunRecord) -> str:
    """One run: its ids and how it ended (``run 'r1' (thread 't1'): interrupted, 2 interrupts``)."""
    name = "(failed before it began)" if run.run_id is None else repr(run.run_id)
    thread = "" if run.thread_id is None else f" (thread {run.thread_id!r})"
    detail = ""
    if run.status is RunStatus.ERROR:
        detail = f": {run.error}"
    elif run.status is RunStatus.INTERRUPTED and run.outcome is not None:
        detail = f", {len(run.outcome['interrupts'])} interrupt(s)"
    return f"run {name}{thread}: {run.status}{detail}"


def _json_report(name: str, result: RunResult, out: TextIO) -> None:
    counters = result.counters
    report = {
        "source": name,
        "verdict": result.verdict.to_dict(),
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
        "diagnostics": [d.to_dict() for d in result.diagnostics],
        "suppressed": result.suppressed,
        "runs": [run.to_dict() for run in result.runs],
    }
    out.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")


_REPORTS: dict[str, Callable[[str, RunResult, TextIO], None]] = {
    "text": _text_report,
    "json": _json_report,
}


# -- check URL and serve (the http and serve extras) --------------------------------


def _check_url(args: argparse.Namespace, out: TextIO, declaration: Declaration | None) -> int:
    """``check`` against an agent endpoint: POST the input, judge the response stream."""
    from .client import RequestFailed
    from .errors import InputRejected

    try:
        result = cli_http.check_url(args, declaration)
    except (ValueError, RequestFailed, InputRejected) as exc:
        raise UsageError(str(exc)) from exc
    report = _sarif_report(args) if args.format == "sarif" else _REPORTS[args.format]
    report(args.source, result, out)
    return EXIT_COMPLETED if result.verdict.outcome is Outcome.COMPLETED else EXIT_REJECTED


def _add_serve(commands: Any) -> None:
    cli_http.add_serve(commands)
    commands.choices["serve"].set_defaults(handler=_serve)


def _serve(args: argparse.Namespace, out: TextIO) -> int:
    try:
        cli_http.run_serve(args)
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from exc
    return EXIT_COMPLETED


# -- the command line ------------------------------------------------------------

COMMANDS: list[Callable[[Any], None]] = [_add_check, _add_serve, conformance.add_command]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agui-pipeline",
        description="Consume AG-UI event streams: verify them, and tell producers what "
        "their streams do wrong.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {version('agui-pipeline')}"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(commands)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace, TextIO], int] = args.handler
    try:
        return handler(args, out or sys.stdout)
    except UsageError as exc:
        print(f"agui-pipeline: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
