"""The parse fast paths agree with the general SSE grammar; the parse benchmark runs."""

from __future__ import annotations

from agui_pipeline.stages.parse import _sse_block_payloads, _sse_payloads
from hypothesis import given
from hypothesis import strategies as st

from benchmarks import bench_parse

# Pieces that make the fast path's condition true, false, and nearly true.
_PIECES = st.sampled_from(
    [
        b"data: ",
        b"data:",
        b"data:  ",
        b"\n",
        b"\n\n",
        b"\n\ndata: ",
        b": note",
        b"id: 7",
        b"{}",
        b'{"a":1}',
        b"x",
        b" ",
    ]
)


@given(st.lists(_PIECES, max_size=12).map(b"".join))
def test_sse_fast_path_matches_the_field_grammar(region: bytes) -> None:
    assert _sse_payloads(region) == _sse_block_payloads(region.split(b"\n\n"))


def test_sse_fast_path_taken_for_plain_frames() -> None:
    region = b'data: {"a":1}\n\ndata: {"b":2}'
    assert _sse_payloads(region) == [b'{"a":1}', b'{"b":2}']
    assert _sse_payloads(b"data: 1\n\ndata:2") == [b"1", b"2"]  # one slow-path frame


def test_parse_benchmark_runs_and_reports_ratios() -> None:
    figures = bench_parse.measure(n=2_000, repeat=1)
    assert [f.framing for f in figures] == ["jsonl", "sse"]
    assert all(f.ratio > 0 and f.parse_rate > 0 for f in figures)
