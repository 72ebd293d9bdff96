"""What the commands share: exit statuses, the command-line error, the terminal's style,
and the settings and outcome of checking one source."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import TextIO

from agui_pipeline._engine.result import RunResult
from agui_pipeline.cli.config import Gate
from agui_pipeline.declaration import Declaration
from agui_pipeline.options import Options
from agui_pipeline.stage import Stage, StageFactory, StreamContext

# Start-up is most of `check` on a short file, so what only some paths need is imported
# there: pydantic (the run input's and a declaration's models), the SARIF and JUnit
# writers, the process pool of --jobs, importlib.metadata for --version, and anyio (with
# asyncio under it) for a URL or stdin — a file is checked through the sync shell.


EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
"""Ctrl-C: 128 plus SIGINT's number, as a shell reports a process SIGINT ended."""
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


class CommandError(Exception):
    """A problem with the command line or a file it names (exit status 2)."""


def load_middleware(spec: str) -> StageFactory:
    """The stage factory ``--middleware MODULE:FACTORY`` names, built once to see that it
    builds: a failure is a usage error naming the spec and the cause, not a traceback.

    The current directory is searched first, as ``python -m`` would (the installed
    ``agui-pipeline`` script does not put it on the path), so a module of the project
    the command runs in is found.
    """
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise CommandError(
            f"--middleware expects MODULE:FACTORY (a Stage class, or a function from the "
            f"StreamContext to a stage), got {spec!r}"
        )
    import importlib

    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # whatever the user's module raises on import
        raise CommandError(
            f"--middleware {spec}: importing {module_name} failed: {_cause(error)}"
        ) from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        found = "no attribute" if factory is None else f"a {type(factory).__name__}"
        raise CommandError(
            f"--middleware {spec}: module {module_name} has {found} {attribute!r}, "
            "not a stage factory"
        )
    try:
        stage = factory(StreamContext(Options()))
    except Exception as error:  # whatever the user's factory raises
        raise CommandError(
            f"--middleware {spec}: the factory failed when given a StreamContext: "
            f"{_cause(error)} (a factory takes the stream's context and returns a Stage; "
            "one that takes arguments of its own is a function or functools.partial that "
            "supplies them)"
        ) from None
    if not isinstance(stage, Stage):
        raise CommandError(
            f"--middleware {spec}: the factory returned a {type(stage).__name__}, not a Stage"
        )
    return factory  # type: ignore[no-any-return]


def _cause(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


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
    declaration: Declaration | None
    """What ``capabilities`` or ``agent_resource`` holds, read once (:func:`declaration_from_files
    <agui_pipeline.cli.check.declaration_from_files>`) and carried to every process."""
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
    run_input: str | None = None
    """``--run-input``: the pattern that names each recording's run input."""
    middleware: tuple[str, ...] = ()
    """``--middleware``: the stage factories to insert, as ``MODULE:FACTORY`` (each process
    of ``--jobs`` or the cluster loads them itself)."""


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
    judged: tuple[int, int] | None = None
    """The stream file's size and modification time as it was checked (``locate.CHANGED``:
    it changed while it was read): findings are placed only in that same file."""
