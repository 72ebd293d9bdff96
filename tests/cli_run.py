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
        env={**os.environ, "NO_COLOR": "", **(env or {})},
        timeout=120,
    )


def write_json(path: Path, document: Any) -> Path:
    path.write_bytes(orjson.dumps(document))
    return path
