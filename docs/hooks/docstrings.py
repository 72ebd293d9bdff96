"""The docstrings as the API page renders them: Markdown, the public API only.

The package's docstrings are written in reStructuredText's inline style, which reads well
in the source and in ``help()``: ``:class:`Stage``` for a name, ````code```` for code, and
``text::`` before an indented example. mkdocstrings renders docstrings as Markdown, where
the roles would show as written; this griffe extension (``extensions:`` in ``mkdocs.yml``)
turns each role into a code span as the package is loaded, and ``::`` into ``:`` (the
indented example is a Markdown code block already). Double backticks are a Markdown code
span too. It also hides the special members (``__init__``, ``__call__`` and the like):
what they do is said by their class's docstring and its signature.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(
    r":(?:class|func|meth|mod|data|attr|exc|obj|const):`(?P<short>~?)(?P<name>[^`]+)`"
)
"""A Sphinx cross-reference role; ``~`` shows the last component of the name only."""


def markdown(docstring: str) -> str:
    """``docstring`` with its reStructuredText roles and literal markers as Markdown."""

    def role(found: re.Match[str]) -> str:
        name = found["name"]
        return f"`{name.rpartition('.')[2] if found['short'] else name}`"

    lines = []
    for line in ROLE.sub(role, docstring).split("\n"):
        if line.strip() == "::":
            continue
        lines.append(line[:-1] if line.endswith("::") else line)
    return "\n".join(lines)


class MarkdownDocstrings(griffe.Extension):
    """Rewrites every docstring of the loaded package, and hides its special members."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._rewrite(pkg, seen=set())

    def _rewrite(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
        for member in obj.members.values():
            if member.is_alias:  # documented where it is defined
                continue
            assert isinstance(member, griffe.Object)
            if member.is_special and not member.is_module:
                member.public = False
            self._rewrite(member, seen)
