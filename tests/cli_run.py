"""Running the real command line in a subprocess, for the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from tests.conftest import ROOT


def agui(
    *argv: str | Path,
    stdin: bytes | None = None,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m agui_pipeline ARGV...``; stdout and stderr captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "agui_pipeline", *map(str, argv)],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "", "FORCE_COLOR": "", **(env or {})},
        timeout=120,
    )


def write_json(path: Path, document: Any) -> Path:
    path.write_bytes(orjson.dumps(document))
    return path


PLACE = ("file", "line", "column")
"""The fields of a JSON report's finding that say where it is in a file."""


def unplaced(report: dict[str, Any]) -> dict[str, Any]:
    """A JSON report without where its findings are in a file: what stdin, a URL and
    a file of the same bytes agree on (only a file has lines)."""

    def strip(finding: dict[str, Any]) -> dict[str, Any]:
        return {name: value for name, value in finding.items() if name not in PLACE}

    return {
        **report,
        "verdict": strip(report["verdict"]),
        "diagnostics": [strip(finding) for finding in report["diagnostics"]],
    }
