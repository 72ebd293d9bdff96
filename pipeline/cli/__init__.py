"""The ``agui-pipeline`` command line: one module per command, each adding its own
subparser with ``register(commands)``.

``check SOURCE...`` runs the default pipeline over each stream (a file, ``-``
for stdin, a conformance fixture, or an agent's URL) and reports the verdict and every
diagnostic; ``serve FILE`` is the other side of a URL, a recorded stream replayed as an
HTTP + SSE endpoint; ``proxy`` relays runs to an agent through the pipeline
(:mod:`agui_pipeline.http.proxy`); ``explain CODE`` describes a diagnostic code;
``conformance`` replays corpus fixtures; ``bench`` measures the pipeline. Checking a
source is the library's (:mod:`agui_pipeline._checking`), shared with
:mod:`agui_pipeline.fleet`.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from agui_pipeline._checking import CheckError
from agui_pipeline.cli.common import (
    COMMAND_EXIT_STATUSES,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CommandError,
)
from agui_pipeline.delivery.escaping import inert, printable_name

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

# Start-up is most of `check` on a short file, so what only some paths need is imported
# there: pydantic (the run input's and a declaration's models), the SARIF and JUnit
# writers, the process pool of --jobs, importlib.metadata for --version, and anyio (with
# asyncio under it) for a URL or stdin — a file is checked through the sync shell. Only the
# command named has its module imported and its parser built.

COMMANDS: dict[str, str] = {
    "check": "agui_pipeline.cli.check",
    "serve": "agui_pipeline.cli.serve",
    "proxy": "agui_pipeline.cli.proxy",
    "explain": "agui_pipeline.cli.explain",
    "conformance": "agui_pipeline.cli.conformance",
    "bench": "agui_pipeline.cli.bench",
}
"""Each command's name and its module, whose ``register(commands)`` adds the command's
subparser with its handler as the ``handler`` default."""


class _ShowVersion(argparse.Action):
    """``--version``: the installed version, read from the metadata only when asked, and
    the core that runs the built-in stages (native or pure Python, and why: ``_cores``)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **_: Any) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            help="show the version and the core in use (native or pure Python), and exit",
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from importlib.metadata import version

        from agui_pipeline._cores import ACTIVE

        sys.stdout.write(f"{parser.prog} {version('agui-pipeline')} ({ACTIVE})\n")
        parser.exit()


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
    for name, module in COMMANDS.items():
        if command is None or name == command:
            importlib.import_module(module).register(commands)
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
        except KeyboardInterrupt:  # Ctrl-C outside a command's own handling: no traceback
            status = EXIT_INTERRUPTED
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
    except (CommandError, CheckError) as exc:
        print(f"agui-pipeline: {inert(printable_name(str(exc)))}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more can be said, so say nothing.
        _stdout_to_devnull()
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
