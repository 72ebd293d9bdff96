"""The reference pages, generated from the code each time the site is built.

Nothing in the reference is written by hand: the command-line page is rendered from the
argument parser (what ``agui-pipeline COMMAND --help`` prints), and the diagnostic codes
and the rejections from the catalog, by the generators ``agui-pipeline explain --markdown``
and ``explain --rejections`` already are. MkDocs loads this module as a hook
(``hooks:`` in ``mkdocs.yml``); the functions that write the pages need only the installed
package, so the tests call them directly (tests/test_docs_site.py).
"""

from __future__ import annotations

import argparse
import functools
import io
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agui_pipeline import cli

if TYPE_CHECKING:  # the docs extra; the page writers need only the package
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

HELP_WIDTH = 88
"""Columns the ``--help`` text is wrapped to (a terminal's width would make the page
depend on where the site was built)."""


def cli_page() -> str:
    """The command line: the program's ``--help``, then each command's, in its order."""
    parser = _fixed_width(cli.build_parser())
    lines = [
        "# Command line",
        "",
        "Generated from the argument parser when this site is built: each section is what",
        "`agui-pipeline COMMAND --help` prints.",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
    ]
    for name, summary, command in _commands(parser):
        lines += ["", f"## {name}", ""]
        if summary:
            lines += [summary[0].upper() + summary[1:] + ".", ""]
        lines += ["```text", _fixed_width(command).format_help().rstrip(), "```"]
    return "\n".join(lines) + "\n"


def diagnostics_page() -> str:
    """Every code the catalog holds: ``agui-pipeline explain --markdown``."""
    return _explain("--markdown")


def rejections_page() -> str:
    """Every rejecting code and its spec sentence: ``agui-pipeline explain --rejections``."""
    return _explain("--rejections")


GENERATED = {
    "reference/cli.md": cli_page,
    "reference/diagnostics.md": diagnostics_page,
    "reference/rejections.md": rejections_page,
}
"""Each generated page's place in the site and what writes it."""


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """MkDocs' hook: add the generated pages before the navigation is built."""
    from mkdocs.structure.files import File

    for uri, write in GENERATED.items():
        files.append(File.generated(config, uri, content=write()))
    return files


def _explain(option: str) -> str:
    out = io.StringIO()
    status = cli.main(["explain", option], out)
    if status != 0:
        raise RuntimeError(f"agui-pipeline explain {option} exited {status}")
    return out.getvalue()


def _commands(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """Each command's name, its one-line help and its parser, as ``--help`` lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, command in action.choices.items():
                yield name, summaries.get(name, ""), command


def _fixed_width(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    formatter: Any = parser.formatter_class  # typeshed's protocol types ``prog`` alone
    parser.formatter_class = functools.partial(formatter, width=HELP_WIDTH)
    return parser
