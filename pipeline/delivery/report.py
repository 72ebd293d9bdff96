"""What a report says about a result: every finding placed in its file (:func:`findings`),
and the producer report, the findings grouped by code for an agent developer to act on.

One group per diagnostic code that is a finding about the producer (a warning, or
the rejection that ended the stream), in the order the codes first appeared, with
how many times it was reported and its first occurrence. Information (summaries)
is left out: it says what happened, not what to fix.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agui_pipeline.catalog import ALL, Severity
from agui_pipeline.delivery.escaping import printable_name
from agui_pipeline.delivery.locate import (
    Position,
    Stamp,
    changed_since,
    locate_findings,
    locate_pointer,
)
from agui_pipeline.errors import Diagnostic, StreamRejected

if TYPE_CHECKING:
    from agui_pipeline._engine.result import RunResult


@dataclass(frozen=True, slots=True)
class FindingGroup:
    """Every report of one code: how often, and where first."""

    code: str
    count: int
    first: Diagnostic

    @property
    def title(self) -> str:
        """The catalog's one-line description of the code."""
        entry = ALL.get(self.code)
        return entry.title if entry is not None else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "count": self.count,
            "title": self.title,
            "spec": self.first.spec,
            "first": self.first.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class ProducerReport:
    """The findings of one stream, grouped by code (see :func:`producer_report`)."""

    groups: list[FindingGroup] = field(default_factory=list)

    def render(self) -> str:
        """Text for a terminal: one line per code, then its first occurrence indented."""
        if not self.groups:
            return "producer report: nothing to fix"
        lines = [f"producer report ({len(self.groups)} codes):"]
        for group in self.groups:
            first = group.first
            where = "" if first.event_index is None else f" (first at event {first.event_index}"
            if where and first.pointer:
                where += f", {first.pointer}"
            where += ")" if where else ""
            lines.append(f"  {group.code}: {group.count}{where} — {group.title} [{first.spec}]")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"groups": [group.to_dict() for group in self.groups]}


def producer_report(
    diagnostics: Iterable[Diagnostic], suppressed: dict[str, int] | None = None
) -> ProducerReport:
    """Group ``diagnostics`` (a result's, in order) by code; ``suppressed`` adds the counts
    of those past ``Limits.max_diagnostics`` (``RunResult.suppressed``)."""
    counts: dict[str, int] = {}
    firsts: dict[str, Diagnostic] = {}
    for diagnostic in diagnostics:
        if diagnostic.severity == "info":
            continue
        code = diagnostic.code
        counts[code] = counts.get(code, 0) + 1
        firsts.setdefault(code, diagnostic)
    for code, extra in (suppressed or {}).items():
        if code in counts:
            counts[code] += extra
    return ProducerReport([FindingGroup(code, counts[code], firsts[code]) for code in counts])


# -- every finding, placed -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finding:
    """One diagnostic, or the rejection that ended the stream, with where it is in a file.

    What a person acts on: what (``code``, ``message``), where (``file``,
    ``position``, and the diagnostic's event index and pointer), why (the spec
    page) and how to fix it (:attr:`fix`, the catalog's advice).
    """

    diagnostic: Diagnostic
    file: str | None = None
    """The file :attr:`position` counts in: the stream, or the declaration for a finding
    about the declaration itself."""
    position: Position | None = None
    ended_stream: bool = False
    """This is the rejection that ended the stream (the verdict's error), not a diagnostic."""

    @property
    def fix(self) -> str:
        """What to do about it (the catalog's advice; empty for a code not in the catalog)."""
        entry = ALL.get(self.diagnostic.code)
        return entry.what_to_do if entry is not None else ""

    def to_dict(self) -> dict[str, Any]:
        line = column = None
        if self.position is not None:
            line, column = self.position.line, self.position.column
        return {
            **self.diagnostic.to_dict(),
            "fix": self.fix,
            "file": printable_name(self.file) if self.file and self.position else None,
            "line": line,
            "column": column,
        }


def findings(
    result: RunResult,
    *,
    stream: str | None = None,
    declaration: str | None = None,
    judged: Stamp | None = None,
) -> list[Finding]:
    """``result``'s diagnostics and its rejection, in the stream's order, placed in files.

    ``stream`` is the path of the stream file (``None`` for stdin or a URL, which have
    no lines), ``declaration`` that of the capabilities declaration, ``judged`` the
    stream file's stamp when it was checked: a file that is no longer the one judged
    (:func:`~agui_pipeline.delivery.locate.changed_since`) has nothing placed in it.
    Positions are read from the files (:mod:`agui_pipeline.delivery.locate`) only when
    there is something to place.
    """
    said = list(result.diagnostics)
    error = result.verdict.error
    ending: Diagnostic | None = None
    if isinstance(error, StreamRejected):
        ending = error.to_diagnostic()
    elif error is not None:
        ending = Diagnostic(error.code, Severity.ERROR, str(error), error.event_index)
    if ending is not None:
        said.append(ending)
    # Findings with no event (the declaration's, the run input's) come first, as they
    # were said before the stream; the others in stream order, each event's in turn.
    said.sort(key=lambda d: -1 if d.event_index is None else d.event_index)
    placed = (
        locate_findings(Path(stream), result.transport, said)
        if stream is not None and changed_since(stream, judged) is None
        else [None] * len(said)
    )
    out: list[Finding] = []
    for diagnostic, position in zip(said, placed, strict=True):
        file = stream
        if position is None and diagnostic.declared is not None and declaration is not None:
            file, position = declaration, locate_pointer(Path(declaration), diagnostic.declared)
        out.append(Finding(diagnostic, file, position, ended_stream=diagnostic is ending))
    return out
