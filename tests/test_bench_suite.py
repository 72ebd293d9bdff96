"""``python -m benchmarks`` runs end to end on a tiny stream and reports every part."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bench_check, bench_live, peers, suite
from benchmarks.workload import encode_sse, events


@pytest.mark.slow  # the whole benchmark suite, live part included
def test_suite_runs_on_a_tiny_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--events", "2000", "--repeat", "1", "--max", "1000", "--ts-events", "0"]
    argv += ["--live-runs", "2", "--live-events", "20", "--check-events", "2000"]
    assert suite.main([*argv, "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    report = json.loads((tmp_path / "results.json").read_text())
    assert [row["stage"] for row in report["stages"]] == suite.default_pipeline().stage_names
    assert {row["key"] for row in report["peers"]} >= {"pipeline", "pipeline-jsonl", "orjson"}
    memory = report["memory"]
    assert memory["events"] == 1000 and memory["judging"]["peak_rss_mb"] > 0
    assert memory["forwarding"]["conversation"] is False and memory["judging"]["conversation"]
    assert {suite.OURS, suite.OURS_FROM_FILE} <= set(report["scaling"])
    assert "| parse |" in printed and "Memory, 1,000 events" in printed
    live = {row["contender"]: row for row in report["live"]["rows"]}
    assert live[bench_live.OURS]["events/read"] > 0  # every run was read to its end
    assert "Live: 2 runs at once, 20 events each" in printed
    assert "Whole process, 2,000 events" in printed


def test_what_a_finished_run_leaves_is_measured_and_within_the_documented_bound() -> None:
    """``benchmarks.memory``'s per-run growth: the formula in docs/limits.md counts 1.3 kB an item
    (a message or tool call), and a run's items are what a stream keeps of it."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", "--one", "per_run", "0"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    measured = json.loads(done.stdout)
    assert measured["items_per_run"] == 5  # weather.sse: reasoning, a call and its carrier,
    held = measured["with_conversation"]  # the tool message, the answer
    bare = measured["without_conversation"]
    assert 0 < bare["bytes_per_item"] < held["bytes_per_item"] < 1_300


def test_check_and_the_sdk_are_timed_as_whole_processes() -> None:
    result = bench_check.measure(300, 1, sys.executable)
    rows = {row["contender"]: row for row in result["rows"]}
    assert set(rows) == {bench_check.CHECK, bench_check.SDK, bench_check.STARTUP, bench_check.FLOOR}
    assert all(row["CPU s (median)"] > 0 for row in rows.values())
    assert result["SDK ÷ check (median of rounds)"] > 0
    assert "`check` is" in bench_check.render(result)


@pytest.mark.skipif(
    shutil.which("node") is None or peers.ts_version() is None,
    reason="node, or @ag-ui/client in benchmarks/.peers (python -m benchmarks installs it)",
)
def test_typescript_peer_consumes_the_whole_stream(tmp_path: Path) -> None:
    path = tmp_path / "stream.sse"
    path.write_bytes(encode_sse(events(500)))
    result = peers.run_ts(path, 1)
    assert result["events"] == 500 and len(result["seconds"]) == 1


@pytest.mark.parametrize("deliver", ["handler", "bare", "middleware", "verdict", "floor"])
def test_the_instruction_count_s_delivery_children_read_the_workload_to_its_end(
    deliver: str, tmp_path: Path
) -> None:
    """What ``python -m benchmarks.instructions --deliver`` runs under valgrind, run once
    without it: each pipeline's child completes the workload (it asserts the verdict)."""
    path = tmp_path / "workload.sse"
    path.write_bytes(encode_sse(events(300)))
    child = [sys.executable, "-m", "benchmarks.instructions", "--child", "--file", str(path)]
    done = subprocess.run(
        [*child, "--measured", "--deliver", deliver],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
