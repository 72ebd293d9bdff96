"""The peers a Python team would otherwise use, each driven on the same bytes.

- bare ``orjson.loads`` per frame: the floor for decoding in Python;
- the official Python SDK (``ag-ui-protocol``, import ``ag_ui``):
  ``TypeAdapter(Event).validate_json`` per frame — its whole consumer path,
  parse and validate, no sequencing and no materialised conversation;
- the official TypeScript client (``@ag-ui/client``), run by node on the SSE
  bytes through its full pipeline (``ts_peer.mjs``), installed with npm into
  ``benchmarks/.peers/`` on first use.

Each ``prepare_*`` returns the zero-argument work to time, or ``None`` with the
reason printed when that peer is not available here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
PEERS_DIR = HERE / ".peers"
TS_CLIENT = "@ag-ui/client@1.0.0"
"""The TypeScript client version measured (pinned so figures compare across runs)."""
TS_SCRIPT = HERE / "ts_peer.mjs"


def prepare_orjson(payloads: list[bytes]) -> Callable[[], object]:
    loads = orjson.loads
    return lambda: [loads(payload) for payload in payloads]


def sdk_version() -> str | None:
    try:
        return version("ag-ui-protocol")
    except PackageNotFoundError:
        return None


def prepare_sdk(payloads: list[bytes]) -> Callable[[], object] | None:
    try:
        from ag_ui.core import Event
        from pydantic import TypeAdapter
    except ImportError:
        print(
            "  (the Python SDK is not installed: pip install -e . --group bench)", file=sys.stderr
        )
        return None
    validate = TypeAdapter(Event).validate_json
    return lambda: [validate(payload) for payload in payloads]


def ts_available() -> str | None:
    """The reason the TypeScript peer cannot run here, or ``None`` when it can."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node/npm not found: the TypeScript client is skipped"
    if not (PEERS_DIR / "node_modules" / "@ag-ui" / "client").is_dir():
        PEERS_DIR.mkdir(exist_ok=True)
        manifest = PEERS_DIR / "package.json"
        if not manifest.exists():
            manifest.write_text('{"name": "agui-pipeline-bench-peers", "private": true}\n')
        print(f"  installing {TS_CLIENT} into {PEERS_DIR} ...", file=sys.stderr)
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent", TS_CLIENT],
            cwd=PEERS_DIR,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            return f"npm install {TS_CLIENT} failed: {done.stderr.strip()[-300:]}"
    return None


def ts_version() -> str | None:
    manifest = PEERS_DIR / "node_modules" / "@ag-ui" / "client" / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def run_ts(stream_file: Path, repeat: int) -> dict[str, Any]:
    """``{"events": n, "seconds": [...]}`` from node (its own clock: node's start-up excluded)."""
    done = subprocess.run(
        ["node", str(TS_SCRIPT), str(PEERS_DIR), str(stream_file), str(repeat)],
        capture_output=True,
        text=True,
        env={**os.environ, "SUPPRESS_TRANSFORMATION_WARNINGS": "true"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"the TypeScript peer failed: {done.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
