"""``agui-pipeline conformance PATH...``: replay corpus fixtures and check what each
expects, through the library's runner (:mod:`agui_pipeline.testing.conformance`)."""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Any, TextIO

import orjson
from agui_pipeline.testing.conformance import FixtureError, check_paths

CORPUS_HELP = """\
where the corpus lives:
  The official AG-UI conformance corpus is published with the specification in
  the AG-UI repository (github.com/ag-ui-protocol/ag-ui), folder
  spec/1.1/conformance: one JSON fixture per file under streams/, and a README
  describing the format. Clone or download the repository and point PATH at it:

    agui-pipeline conformance ag-ui/spec/1.1/conformance/streams

  Any folder of fixtures in the same format works. `agui-pipeline check FIXTURE`
  checks one fixture's stream against its input, as an ordinary source.

exit status:
  0  every fixture passed
  1  a fixture failed: the replay differs from its 'expect'
  2  a fixture that cannot be read, no fixture under PATH, a closed pipe"""


def register(commands: Any) -> None:
    """Register ``agui-pipeline conformance PATH... [--json]``."""
    command = commands.add_parser(
        "conformance",
        help="replay conformance corpus fixtures and check what each expects",
        description=textwrap.fill(
            "Replay each fixture (a file, or every *.json in a folder) through the default "
            "pipeline and check every key of its 'expect'. Prints 'ok NAME' or "
            "'FAIL NAME: ...' per fixture and 'N passed, M failed' last. Exit status 0 only "
            "when every fixture passed.",
            78,
        ),
        epilog=CORPUS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument("paths", nargs="+", metavar="PATH", help="a fixture file or folder")
    command.add_argument("--json", action="store_true", help="print a JSON report instead")
    command.set_defaults(handler=_command)


def _command(args: argparse.Namespace, out: TextIO) -> int:
    try:
        reports = check_paths(args.paths)
    except FixtureError as error:
        print(f"agui-pipeline: {error}", file=sys.stderr)
        return 2
    if not reports:
        print(f"agui-pipeline: no fixtures under {' '.join(args.paths)}", file=sys.stderr)
        return 2
    passed = sum(report.passed for report in reports)
    failed = len(reports) - passed
    if args.json:
        document = {
            "fixtures": [report.to_dict() for report in reports],
            "passed": passed,
            "failed": failed,
        }
        out.write(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        for report in reports:
            out.write(report.line() + "\n")
        out.write(f"{passed} passed, {failed} failed\n")
    return 0 if failed == 0 else 1
