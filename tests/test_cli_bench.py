"""``agui-pipeline bench``: the installed pipeline measured on a user's recording, with
their middleware, as text or JSON; ``--live`` over a real local server; ``--count``
under callgrind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest
from agui_pipeline.batch import Batch
from agui_pipeline.stage import Stage, StreamContext
from agui_pipeline.testing.workload import encode_sse, events

ROOT = Path(__file__).resolve().parents[1]


class Tagging(Stage):
    """A user's middleware: loaded by ``--middleware tests.test_cli_bench:Tagging``."""

    name: ClassVar[str] = "tagging"

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)

    async def process(self, batch: Batch) -> Batch:
        return batch


def bench(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agui_pipeline", "bench", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_recording_with_middleware_as_json(tmp_path: Path) -> None:
    recording = tmp_path / "run.sse"
    recording.write_bytes(encode_sse(events(600)))
    done = bench(
        str(recording), "--middleware", "tests.test_cli_bench:Tagging", "--repeat", "3",
        "--format", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["stages"][:3] == ["parse", "compat", "tagging"]
    (row,) = report["sources"]
    assert row["events"] == 600
    assert row["events/s"] > 0
    assert set(row["µs/event by stage (alone)"]) == set(report["stages"])
    assert report["peak RSS MiB"] > 0
    # The spread of the rounds, and a baseline on the same events.
    assert row["rounds"] == 3
    assert 0 < row["µs/event fastest"] <= row["µs/event"] <= row["µs/event slowest"]
    baseline = row["baseline"]
    assert baseline["decode floor µs/event"] > 0
    sdk = baseline["sdk"]  # ag-ui-protocol is installed with the test extras
    assert sdk["package"].startswith("ag-ui-protocol ") and sdk["µs/event"] > 0
    assert sdk["accepted"] == 600


def test_the_built_in_workload_live_as_text(transport: str) -> None:
    done = bench(
        "--events", "500", "--repeat", "1", "--live", "--runs", "2", "--live-events", "20",
        "--transport", transport,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "built-in workload (500 events): 500 events" in done.stdout
    assert "(median of 1 rounds; fastest " in done.stdout
    assert "baseline on the same events: decode floor (orjson.loads) " in done.stdout
    assert " (TypeAdapter(Event).validate_json): " in done.stdout
    assert f"live: 2 runs at once over {transport}, 20 events each" in done.stdout


def test_a_middleware_that_is_not_there_is_a_usage_error() -> None:
    done = bench("--middleware", "tests.test_cli_bench:Missing", "--events", "10")
    assert done.returncode == 2
    assert "--middleware tests.test_cli_bench:Missing" in done.stderr
    assert bench("--middleware", "no-colon").returncode == 2


VALGRIND = shutil.which("valgrind")


@pytest.mark.slow  # about a minute under callgrind
@pytest.mark.skipif(VALGRIND is None, reason="--count runs valgrind, which is not on PATH")
def test_count_puts_instructions_per_event_beside_the_time() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agui_pipeline", "bench", "examples/weather.sse", "--count",
         "--repeat", "1", "--format", "json"],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["sources"]
    counted = row["counted"]
    # The default pipeline on the 21 events of weather.sse: about 56,000 instructions an
    # event (each stream's fixed costs over few events). Start-up not taken off would be
    # millions; the pass not run, about none.
    assert 10_000 < counted["instructions/event"] < 200_000, counted
    assert counted["command"].startswith("PYTHONHASHSEED=0 valgrind --tool=callgrind ")
    assert " bench examples/weather.sse --counted-pass measured" in counted["command"]


def test_count_without_valgrind_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agui_pipeline", "bench", "--count", "--events", "10"],
        env={**os.environ, "PATH": str(tmp_path)},  # an empty folder: no valgrind on it
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "agui-pipeline: --count needs valgrind on PATH (it counts under valgrind's callgrind)"
    )
    assert done.stdout == ""
