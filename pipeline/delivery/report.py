"""The producer report: a result's findings grouped by code, for an agent developer to act on.

One group per diagnostic code that is a finding about the producer (a warning, or
the rejection that ended the stream), in the order the codes first appeared, with
how many times it was reported and its first occurrence. Information (summaries)
is left out: it says what happened, not what to fix.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agui_pipeline.catalog import ALL
from agui_pipeline.errors import Diagnostic


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
