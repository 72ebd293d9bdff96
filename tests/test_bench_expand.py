"""The expand benchmark measures what it says: its chunk spelling expands back to the workload."""

from __future__ import annotations

from typing import Any

from benchmarks import bench_expand
from benchmarks.workload import events
from tests.test_expand import Expanded


def test_the_chunk_spelling_expands_back_to_the_workload() -> None:
    stream = events(3_000)
    spelled = bench_expand.chunked(stream)
    assert sum(e["type"].endswith("_CHUNK") for e in spelled) > len(stream) // 2
    out = Expanded(spelled, splits=list(range(100, len(spelled), 250)))
    expected: list[tuple[Any, Any, Any]] = []
    for event in stream:
        if event["type"].endswith("_END") and "metadata" in event:
            # an END's metadata rides a metadata-only last chunk: an empty content event
            content = event["type"].replace(
                "_END", "_ARGS" if "TOOL" in event["type"] else "_CONTENT"
            )
            expected.append((content, "", event["metadata"]))
            expected.append((event["type"], None, None))
        else:
            expected.append((event["type"], event.get("delta"), event.get("metadata")))
    assert [(e["type"], e.get("delta"), e.get("metadata")) for e in out.events] == expected


def test_the_expand_benchmark_runs() -> None:
    figures = bench_expand.measure(2_000, repeat=1)
    assert set(figures) == {"pass-through", "expand (triads, no chunks)", "expand (all chunks)"}
    assert all(seconds > 0 for seconds in figures.values())
