"""Running a test over either core: the native one (``agui_pipeline._native``) or the pure
Python reference, whichever ``AGUI_PIPELINE_PURE`` chose for the process (the way aiohttp
runs its parser tests over the C and the Python parser)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from types import ModuleType
from typing import Any

from agui_pipeline import RunResult, _cores

from tests.conftest import unavailable

CORES = ("pure", "native")


def native_module() -> ModuleType:
    """The extension; the test skips (full tier: fails) when it is not built."""
    try:
        from agui_pipeline import _native
    except ImportError as missing:
        unavailable(
            f"the native core is not built ({missing}); a Rust toolchain on PATH and "
            "`pip install -e . --group test --config-settings editable_mode=strict` build it"
        )
    return _native


@contextmanager
def running(core: str) -> Iterator[None]:
    """The built-in stages created inside run on ``core`` ("pure" or "native")."""
    chosen = native_module() if core == "native" else None
    before, _cores.native = _cores.native, chosen
    try:
        yield
    finally:
        _cores.native = before


def shown(value: Any) -> str:
    """``value`` as ``repr`` writes it, the form the cores' answers are compared in: it tells
    ``0`` from ``-0.0`` and ``False`` and shows key order; deep enough for the deepest event
    orjson reads (1,024 levels)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4_000))
    try:
        return repr(value)
    finally:
        sys.setrecursionlimit(limit)


def seen(result: RunResult) -> dict[str, Any]:
    """Everything ``check`` reports of a result, by part."""
    return {
        "verdict": shown(result.verdict.to_dict()),
        "diagnostics": [shown(d.to_dict()) for d in result.diagnostics],
        "suppressed": result.suppressed,
        "counters": asdict(result.counters),
        "transport": result.transport,
        "runs": [shown((run.to_dict(), run.ended_at, run.superseded)) for run in result.runs],
        "run counts": result.run_counts,
    }
