"""What the commands share: exit statuses, the command-line error, options more than one
command takes, the terminal's style, and ``check``'s settings."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from agui_pipeline._checking import FAILED, PASSED, UNCHECKED
from agui_pipeline._checking.url import TRANSPORTS

if TYPE_CHECKING:
    from agui_pipeline._checking.source import CheckSettings

EXIT_OK = PASSED
EXIT_FAILED = FAILED
EXIT_USAGE = UNCHECKED
"""A usage or I/O error; also a source that could not be checked."""
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


# -- options more than one command takes ---------------------------------------------


def add_transport_option(parser: Any, what: str) -> None:
    """``--transport``: the HTTP client ``what`` is read through."""
    parser.add_argument(
        "--transport",
        choices=TRANSPORTS,
        default="httpx",
        help=f"the HTTP client {what} is read through: httpx (the default) or aiohttp, "
        "about half the CPU per live read (needs the 'aiohttp' extra)",
    )


def listen_host(text: str) -> str:
    """An address to listen on: never empty, which the socket layer reads as every
    interface; that is said as ``0.0.0.0`` or ``::``."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "expected an address to listen on, got an empty one "
            "(every interface is 0.0.0.0, or :: for IPv6)"
        )
    return text


def listen_port(text: str) -> int:
    """A port to listen on (``0``: a free one, picked by the system)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text!r}")
    return port


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


# -- check's settings -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything about a ``check`` that is the same for every source: how each is checked,
    and how it is reported (picklable, for --jobs and the cluster)."""

    check: CheckSettings
    format: str
    capabilities: str | None
    """The declaration's file as given (the report names it)."""
    agent_resource: str | None
    progress: bool
    """``--progress``: the progress line even when stderr is not a terminal."""
    conversation: bool
    quiet: bool
    style: Style
    sarif_root: str | None
