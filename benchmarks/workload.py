"""The benchmark workload: it lives in the package (``agui_pipeline.testing.workload``), so that
``agui-pipeline bench`` can run it where ``benchmarks/`` is not installed."""

from agui_pipeline.testing.workload import (
    _TOOLS,
    DECLARATION,
    MIN_EVENTS,
    READ_SIZE,
    chunks,
    encode_jsonl,
    encode_sse,
    events,
    iter_events,
    iter_sse_chunks,
)

__all__ = [
    "DECLARATION",
    "MIN_EVENTS",
    "READ_SIZE",
    "_TOOLS",
    "chunks",
    "encode_jsonl",
    "encode_sse",
    "events",
    "iter_events",
    "iter_sse_chunks",
]
