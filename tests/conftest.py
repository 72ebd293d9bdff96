"""Shared test helpers: the shared reference folder and a one-call runner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from agui_pipeline import Pipeline, RunResult

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
"""``../shared`` beside the checkout (read-only; CI has it there too)."""
SPEC = SHARED / "reference" / "agui-1.1"
SCHEMA_PATH = SPEC / "schema.json"
CORPUS = SHARED / "conformance" / "streams"


def run(source: Any, pipeline: Pipeline | None = None, **kwargs: Any) -> RunResult:
    """Run one stream through ``pipeline`` (default: the default pipeline) under asyncio."""
    chosen = pipeline or Pipeline()
    return anyio.run(lambda: chosen.run(source, **kwargs))


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Tests marked ``@pytest.mark.anyio`` run under both backends."""
    return str(request.param)


# Hypothesis profiles: the default keeps CI bounded; `HYPOTHESIS_PROFILE=fuzz`
# runs the long profile by hand.
import os  # noqa: E402

from hypothesis import settings  # noqa: E402

settings.register_profile("default", max_examples=100)
settings.register_profile("fuzz", max_examples=5_000)
# CI: the default's count, derandomized, so a CI run is repeatable.
settings.register_profile("ci", max_examples=100, derandomize=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
