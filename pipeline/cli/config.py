"""Where ``check``'s gate comes from: ``--fail-on``, ``--max-warnings``, ``--rule`` and
``--off``, over the ``[tool.agui-pipeline]`` table of ./pyproject.toml (the command line
wins). The gate itself, and what a tuning may say, are the library's
(:mod:`agui_pipeline._checking.gate`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from agui_pipeline._checking.gate import (
    DEFAULT_FAIL_ON,
    OFF,
    ConfigError,
    Gate,
    check_rules,
    fail_on_level,
)
from agui_pipeline._suggest import did_you_mean


def parse_rules(rules: Iterable[str], off: Iterable[str]) -> dict[str, str]:
    """``--rule CODE=LEVEL`` and ``--off CODE`` as one code → level map (checked)."""
    tuned: dict[str, str] = {}
    for rule in rules:
        code, equals, level = rule.partition("=")
        if not equals:
            raise ConfigError(f"--rule expects CODE=LEVEL, got {rule!r}")
        tuned[code.strip()] = level.strip()
    for code in off:
        tuned[code.strip()] = OFF
    return check_rules(tuned, "--rule")


def read_pyproject(path: Path) -> dict[str, Any]:
    """The ``[tool.agui-pipeline]`` table of ``path`` (empty when there is none).

    Keys: ``fail-on``, ``max-warnings``, and ``rules`` (a table of code = level).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    import tomllib  # only when there is a file to parse: about 2 ms of start-up

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    table = document.get("tool", {}).get("agui-pipeline", {})
    where = f"{path} [tool.agui-pipeline]"
    keys = ("fail-on", "max-warnings", "rules")
    unknown = sorted(set(table) - set(keys))
    if unknown:
        hint = did_you_mean(unknown[0], keys, loosely=True)
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}{hint} (known: {', '.join(keys)})")
    if "fail-on" in table:
        try:
            table["fail-on"] = fail_on_level(str(table["fail-on"]))
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}") from None
    limit = table.get("max-warnings")
    if limit is not None and (type(limit) is not int or limit < 0):
        raise ConfigError(f"{where}: max-warnings must be a whole number of at least 0")
    rules = table.get("rules", {})
    if not isinstance(rules, dict):
        raise ConfigError(f"{where}: rules must be a table of code = level")
    return {**table, "rules": check_rules(rules, f"{where} rules")}


def build_gate(
    pyproject: Path,
    fail_on: str | None,
    max_warnings: int | None,
    rules: Sequence[str],
    off: Sequence[str],
) -> Gate:
    """The gate from pyproject.toml, with the command line's options taking precedence."""
    table = read_pyproject(pyproject)
    return Gate(
        fail_on=fail_on_level(fail_on) if fail_on else table.get("fail-on", DEFAULT_FAIL_ON),
        max_warnings=max_warnings if max_warnings is not None else table.get("max-warnings"),
        rules={**table.get("rules", {}), **parse_rules(rules, off)},
    )
