"""Coverage-guided fuzz targets (atheris) for the patch and protobuf paths, run by
``tests/test_fuzz.py``'s slow tier in a process of their own: libFuzzer ends the process it
runs in. ``python tests/fuzz_targets.py patch|proto [libFuzzer flags] [corpus dirs]``.

A target's only allowed outcomes are its answers: a patch applies or fails
(``PatchFailed``) or meets its budget (``PatchRefused``); a protobuf body ends in a verdict
with a catalog code. Any other exception is a finding, and libFuzzer writes the input.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["agui_pipeline"]):
    import orjson
    from agui_pipeline import Limits, Outcome, Pipeline, run_sync
    from agui_pipeline.catalog import ALL
    from agui_pipeline.model.patch import (
        Allowance,
        PatchBudget,
        PatchFailed,
        PatchRefused,
        apply_patch,
        json_equal,
    )

PROTO = Pipeline(framing="proto", limits=Limits(max_frame_entries=1_000, max_frame_bytes=1 << 16))
DOCUMENT = {"a": {"b": [1, 2, 3], "c": "x"}, "d": None, "e~f": 1, "g/h": 2}


def patch(data: bytes) -> None:
    """A JSON Patch from the bytes, applied to a small document under a small budget."""
    try:
        operations = orjson.loads(data)
    except orjson.JSONDecodeError:
        return
    document = orjson.loads(orjson.dumps(DOCUMENT))
    budget = PatchBudget(1 << 12, Allowance(1 << 14), 32)
    try:
        apply_patch(document, operations, budget=budget)
    except (PatchFailed, PatchRefused):
        # Atomic: every value as it was (a member's place among its siblings may not be).
        assert json_equal(document, DOCUMENT), "a failed patch left the document changed"


def proto(data: bytes) -> None:
    """A body of length-prefixed protobuf frames through the whole pipeline."""
    result = run_sync(data, PROTO)
    assert result.verdict.outcome in (Outcome.COMPLETED, Outcome.REJECTED, Outcome.TRUNCATED)
    assert result.verdict.code is None or result.verdict.code in ALL, result.verdict.code


TARGETS = {"patch": patch, "proto": proto}

if __name__ == "__main__":
    target = TARGETS[sys.argv.pop(1)]
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()
