"""The enforce benchmark runs, and its stream really takes the fast path."""

from __future__ import annotations

from agui_pipeline.stages._checks import CLEAN

from benchmarks import bench_enforce
from benchmarks.workload import events


def test_enforce_benchmark_runs_and_reports_rates() -> None:
    rates = bench_enforce.measure(n=2_000, repeat=1)
    assert rates["clean"] > 0 and rates["slow"] > 0


def test_the_benchmark_stream_is_clean_and_the_marked_one_is_not() -> None:
    batches = bench_enforce.batches_of(events(2_000))
    assert all(CLEAN[e["type"]](e) for b in batches for e in b.events)
    marked = bench_enforce.with_future_member(batches)
    assert not any(CLEAN[e["type"]](e) for b in marked for e in b.events)
