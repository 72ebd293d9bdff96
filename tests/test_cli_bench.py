"""``agui-pipeline bench``: the installed pipeline measured on a user's recording, with
their middleware, as text or JSON, on the native and the pure core side by side (the pure
one alone, saying why, without the native one); ``--live`` over a real local server;
``--count`` under callgrind, a child on each core."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, cast

import pytest
from agui_pipeline import _cores
from agui_pipeline.batch import Batch
from agui_pipeline.cli import build_parser
from agui_pipeline.cli.bench import run_bench
from agui_pipeline.stage import Stage, StreamContext
from agui_pipeline.testing.workload import encode_sse, events

from tests.cores import native_module

ROOT = Path(__file__).resolve().parents[1]
PURE = "AGUI_PIPELINE_PURE"


class Tagging(Stage):
    """A user's middleware: loaded by ``--middleware tests.test_cli_bench:Tagging``."""

    name: ClassVar[str] = "tagging"

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)

    async def process(self, batch: Batch) -> Batch:
        return batch


def bench(*arguments: str, pure: bool | None = None) -> subprocess.CompletedProcess[str]:
    """The command as a process; ``pure`` sets ``AGUI_PIPELINE_PURE=1`` in its environment
    (True) or takes it out (False), None leaves this process's."""
    env = {name: value for name, value in os.environ.items() if pure is None or name != PURE}
    if pure:
        env[PURE] = "1"
    return subprocess.run(
        [sys.executable, "-m", "agui_pipeline", "bench", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
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
    assert re.search(f"^live, (native|pure) core: 2 runs at once over {transport}, 20 events each",
                     done.stdout, re.MULTILINE)  # fmt: skip


CORE_LINE = re.compile(
    r"^  (?P<core>native|pure) core: +(?P<rate>[\d,]+) events/s, (?P<us>[\d.]+) µs/event "
    r"\(median of 2 rounds; fastest (?P<fastest>[\d.]+), slowest (?P<slowest>[\d.]+)",
    re.MULTILINE,
)
"""A core's line of the text output (``--repeat 2``)."""

NOT_AVAILABLE = "the native core is not available ({}): the pure core alone is measured"


def test_both_cores_side_by_side_when_the_native_one_is_built(tmp_path: Path) -> None:
    native_module()  # skips (full tier: fails) where the extension is not built
    recording = tmp_path / "run.sse"
    recording.write_bytes(encode_sse(events(600)))
    text = bench(str(recording), "--repeat", "2", pure=False)
    assert text.returncode == 0, text.stderr
    lines = {found["core"]: found for found in CORE_LINE.finditer(text.stdout)}
    assert list(lines) == ["native", "pure"], text.stdout
    for found in lines.values():
        assert int(found["rate"].replace(",", "")) > 0
        assert 0 < float(found["fastest"]) <= float(found["us"]) <= float(found["slowest"])
    assert "not available" not in text.stdout
    assert "  each stage alone, on the native core:" in text.stdout
    assert re.search(r"decode floor .*; the native core [\d.]+× that, the pure core [\d.]+× that",
                     text.stdout)  # fmt: skip
    done = bench(str(recording), "--repeat", "2", "--format", "json", pure=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["cores"] == {
        "active": "native", "compared": ["native", "pure"], "native unavailable": None,
    }  # fmt: skip
    (row,) = report["sources"]
    assert list(row["by core"]) == ["native", "pure"]
    for figures in row["by core"].values():
        assert figures["events"] == 600 and figures["events/s"] > 0
        assert 0 < figures["µs/event fastest"] <= figures["µs/event"]
        assert figures["µs/event"] <= figures["µs/event slowest"]
    # The keys a CI job already tracks keep their meaning: the active core's figures.
    active = {key: row[key] for key in row["by core"]["native"]}
    assert active == row["by core"]["native"]


def test_without_the_native_core_one_line_says_why_and_the_pure_core_is_measured() -> None:
    text = bench("--events", "300", "--repeat", "2", pure=True)
    assert text.returncode == 0, text.stderr
    said = NOT_AVAILABLE.format(f"pure Python core: {PURE}=1")
    assert text.stdout.splitlines()[1] == said
    assert text.stdout.count("not available") == 1
    assert [found["core"] for found in CORE_LINE.finditer(text.stdout)] == ["pure"]
    assert "native core" not in text.stdout.replace(said, "")
    done = bench("--events", "300", "--repeat", "2", "--format", "json", pure=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["cores"] == {
        "active": "pure", "compared": ["pure"],
        "native unavailable": f"pure Python core: {PURE}=1",
    }  # fmt: skip
    (row,) = report["sources"]
    assert list(row["by core"]) == ["pure"]
    assert row["µs/event"] == row["by core"]["pure"]["µs/event"] > 0


def in_process(*arguments: str) -> str:
    """``bench`` run in this process (where a test can switch ``_cores``), its output."""
    out = io.StringIO()
    assert run_bench(build_parser("bench").parse_args(["bench", *arguments]), out) == 0
    return out.getvalue()


@pytest.mark.parametrize(
    ("active", "said"),
    [
        ("pure Python core: extension not built", "pure Python core: extension not built"),
        # A process that switched the core itself (as tests/cores.py does): --version's
        # words would say "native core", so bench says what happened.
        ("native core", "pure Python core: switched to it within this process"),
    ],
)
def test_an_extension_not_built_is_said_as_version_says_it(
    monkeypatch: pytest.MonkeyPatch, active: str, said: str
) -> None:
    monkeypatch.setattr(_cores, "native", None)
    monkeypatch.setattr(_cores, "ACTIVE", active)
    shown = in_process("--events", "200", "--repeat", "2")
    assert shown.splitlines()[1] == NOT_AVAILABLE.format(said)
    assert [found["core"] for found in CORE_LINE.finditer(shown)] == ["pure"]


class _Slowed:
    """The native module, but each framer or judge it makes first burns 30 ms of CPU: a
    contender on it (parse's framer, or deliver mode's judge) is told apart from one on the
    pure core by its time alone."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    @staticmethod
    def _burn() -> None:
        started = time.process_time()
        while time.process_time() - started < 0.03:
            pass

    def Framer(self, *arguments: Any) -> Any:  # the module's class names
        self._burn()
        return self._module.Framer(*arguments)

    def Judge(self, *arguments: Any) -> Any:
        self._burn()
        return self._module.Judge(*arguments)


def test_each_contender_runs_on_its_own_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """The native contender's stream takes the native module's framer and the pure one's
    does not: with every framer 30 ms slower (50 µs an event over 600 events), only the
    native figure moves."""
    monkeypatch.setattr(_cores, "native", cast(ModuleType, _Slowed(native_module())))
    report = json.loads(in_process("--events", "600", "--repeat", "2", "--format", "json"))
    by_core = report["sources"][0]["by core"]
    native, pure = by_core["native"]["µs/event"], by_core["pure"]["µs/event"]
    assert native > 40 and pure < native - 30, by_core


def test_a_middleware_that_is_not_there_is_a_usage_error() -> None:
    done = bench("--middleware", "tests.test_cli_bench:Missing", "--events", "10")
    assert done.returncode == 2
    assert "--middleware tests.test_cli_bench:Missing" in done.stderr
    assert bench("--middleware", "no-colon").returncode == 2


VALGRIND = shutil.which("valgrind")


@pytest.mark.slow  # about two minutes under callgrind: two runs on each core
@pytest.mark.skipif(VALGRIND is None, reason="--count runs valgrind, which is not on PATH")
def test_count_puts_instructions_per_event_beside_the_time() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agui_pipeline", "bench", "examples/weather.sse", "--count",
         "--repeat", "1", "--format", "json"],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    (row,) = report["sources"]
    counted = row["counted"]  # the active core's
    assert counted == row["by core"][report["cores"]["active"]]["counted"]
    # The default pipeline on the 21 events of weather.sse: about 76,000 instructions an
    # event on the native core, 86,000 on the pure one (each stream's fixed costs over few
    # events). Start-up not taken off would be millions; the pass not run, about none.
    for core in report["cores"]["compared"]:
        counted = row["by core"][core]["counted"]
        assert 10_000 < counted["instructions/event"] < 200_000, counted
        # Each child runs on its core: bench checks what the child says it ran on.
        setting = "AGUI_PIPELINE_PURE=1 " if core == "pure" else ""
        command = counted["command"]
        assert command.startswith(f"{setting}PYTHONHASHSEED=0 valgrind --tool=callgrind ")
        assert " bench examples/weather.sse --counted-pass measured" in command
    assert report["cores"]["compared"] == ["native", "pure"]  # the extension is built here


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
