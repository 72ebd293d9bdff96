"""The gate: what fails a checked source (its status), beyond a verdict that is not
``completed``: a ``fail-on`` level, a warnings limit, and per-code tuning.

Tuning changes the severity of diagnostics, as a linter's rule configuration
does; it never touches a verdict. A code whose catalog severity is ``error``
names a rejection, so tuning one is a usage error rather than silently
ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agui_pipeline import catalog
from agui_pipeline._engine.result import Outcome, RunResult
from agui_pipeline._suggest import did_you_mean
from agui_pipeline.errors import Diagnostic
from agui_pipeline.stage import RunStatus

OFF = "off"
LEVELS = (OFF, "info", "warning", "error")
"""What ``--rule CODE=LEVEL`` accepts."""


class ConfigError(ValueError):
    """A tuning that cannot apply: an unknown code, a rejection's code, a bad level."""


FAIL_ON = ("verdict", "error", "warning", "info")
"""``--fail-on`` levels, each failing on everything the one before it does, and more:
``verdict`` a rejection or truncation; ``error`` also a run that ended with ``RUN_ERROR``;
``warning`` (the default, as a linter fails on any finding) also any warning; ``info``
also any info. A diagnostic raised to ``error`` by a rule fails at every level."""

DEFAULT_FAIL_ON = "warning"

FAIL_ON_ALIASES = {"run-error": "error"}
"""Earlier names of ``--fail-on`` levels, still accepted (see CHANGELOG.md)."""


def fail_on_level(name: str) -> str:
    """The :data:`FAIL_ON` level ``name`` stands for (an alias read as its level)."""
    level = FAIL_ON_ALIASES.get(name, name)
    if level not in FAIL_ON:
        raise ConfigError(
            f"--fail-on: no level {name!r}{did_you_mean(name, FAIL_ON, loosely=True)}"
        )
    return level


@dataclass(frozen=True, slots=True)
class Gate:
    """What fails a check, beyond a verdict that is not ``completed``."""

    fail_on: str = DEFAULT_FAIL_ON
    max_warnings: int | None = None
    rules: Mapping[str, str] = field(default_factory=dict)
    """Code → ``off``/``info``/``warning``/``error``."""

    def tune(self, result: RunResult) -> None:
        """Apply ``rules`` to ``result``'s diagnostics in place (``off`` removes them)."""
        if not self.rules:
            return
        tuned: list[Diagnostic] = []
        for diagnostic in result.diagnostics:
            level = self.rules.get(diagnostic.code)
            if level is None:
                tuned.append(diagnostic)
            elif level != OFF:
                tuned.append(replace(diagnostic, severity=catalog.Severity(level)))
        result.diagnostics = tuned
        result.suppressed = {
            code: count for code, count in result.suppressed.items() if self.rules.get(code) != OFF
        }

    def failures(self, result: RunResult) -> list[str]:
        """Why ``result`` fails the check (empty: it passes); ``result`` is already tuned."""
        reasons: list[str] = []
        if result.verdict.outcome is not Outcome.COMPLETED:
            code = result.verdict.code
            reasons.append(
                f"the stream was {result.verdict.outcome}" + (f" ({code})" if code else "")
            )
        counts = self.counts(result)
        if counts["error"]:
            reasons.append(f"{counts['error']} diagnostic(s) raised to error by --rule")
        rank = FAIL_ON.index(self.fail_on)
        if rank >= FAIL_ON.index("error"):
            failed = result.run_counts.get(str(RunStatus.ERROR), 0)  # listed or not
            if failed:
                reasons.append(f"{failed} run(s) ended with RUN_ERROR (--fail-on {self.fail_on})")
        if rank >= FAIL_ON.index("warning") and counts["warning"]:
            reasons.append(f"{counts['warning']} warning(s) (--fail-on {self.fail_on})")
        if rank >= FAIL_ON.index("info") and counts["info"]:
            reasons.append(f"{counts['info']} info diagnostic(s) (--fail-on info)")
        if self.max_warnings is not None and counts["warning"] > self.max_warnings:
            limit = self.max_warnings
            reasons.append(f"{counts['warning']} warning(s), over --max-warnings {limit}")
        return reasons

    def counts(self, result: RunResult) -> dict[str, int]:
        """Diagnostics by severity, counting those over the limit by their code's severity."""
        counts = {"error": 0, "warning": 0, "info": 0}
        for diagnostic in result.diagnostics:
            counts[str(diagnostic.severity)] += 1
        for code, count in result.suppressed.items():
            level = self.rules.get(code) or _catalog_severity(code)
            if level in counts:
                counts[level] += count
        return counts


def _catalog_severity(code: str) -> str:
    entry = catalog.ALL.get(code)
    return "warning" if entry is None else str(entry.severity)


def check_rules(rules: Mapping[str, Any], where: str) -> dict[str, str]:
    """Every code known and tunable, every level one of :data:`LEVELS`."""
    for code, level in rules.items():
        if level not in LEVELS:
            hint = did_you_mean(str(level), LEVELS, loosely=True)
            raise ConfigError(
                f"{where}: {code} = {level!r}: expected one of {', '.join(LEVELS)}{hint}"
            )
        entry = catalog.ALL.get(code)
        if entry is None:
            hint = did_you_mean(code, catalog.ALL, loosely=True)
            raise ConfigError(f"{where}: no diagnostic code {code!r}{hint}")
        if entry.severity is catalog.Severity.ERROR:
            raise ConfigError(
                f"{where}: {code} is a rejection's code: a verdict cannot be tuned, "
                "only diagnostics can"
            )
    return dict(rules)
