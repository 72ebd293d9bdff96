"""``agui-pipeline check FILE`` beside the SDK's parse-only pass, each a whole process.

A CI job runs ``check`` as a process: start-up counts as much as throughput.
Each round runs, one after the other, on the same realistic SSE file
(:mod:`agui_pipeline.testing.workload`):

- ``agui-pipeline check FILE`` — the whole default pipeline, its report printed;
- ``python benchmarks/sdk_check.py FILE`` — ag-ui-protocol's
  ``TypeAdapter(Event).validate_json`` per frame, the frames cut out by a split
  (the SDK's consumer path: parse and validate only);
- ``agui-pipeline check`` on a one-run file (20 events): the start-up alone;
- ``python benchmarks/decode_floor.py FILE`` — the same split, ``orjson.loads``
  per frame and nothing else: the floor no per-event Python work gets under.

Each figure is the child's user + system CPU time (``os.wait4``), so other work
on the machine moves it less than wall time; reported are the median and the
range of the rounds, and the median of the per-round ratios (SDK ÷ check: how
many times faster ``check`` is).

    python -m benchmarks.bench_check [--events 300000] [--rounds 7] [--python EXE]

``--python`` runs both with another interpreter (another install of the
project, to compare a change against main).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .workload import encode_sse, events

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SDK_SCRIPT = Path(__file__).resolve().parent / "sdk_check.py"
FLOOR_SCRIPT = Path(__file__).resolve().parent / "decode_floor.py"
CHECK = "agui-pipeline check FILE"
SDK = "SDK validate_json per frame (whole process)"
STARTUP = "agui-pipeline check, 20-event file (start-up)"
FLOOR = "orjson.loads per frame, nothing else (whole process)"


@dataclass
class Timed:
    name: str
    command: list[str]
    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        return {
            "contender": self.name,
            "CPU s (median)": round(statistics.median(self.cpu), 3),
            "CPU s (min–max)": [round(min(self.cpu), 3), round(max(self.cpu), 3)],
            "wall s (median)": round(statistics.median(self.wall), 3),
        }


_WITH_BYTECODE = {
    name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"
}
"""The children's environment: bytecode may be written (the warm-up run writes it), so
start-up is measured as an installed package runs, from bytecode, not compiling every
module's source each time, as it did where PYTHONDONTWRITEBYTECODE is set."""


def cpu_of(command: list[str]) -> tuple[float, float]:
    """(user + system CPU seconds, wall seconds) of one run of ``command``, its output dropped."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, cwd=ROOT, env=_WITH_BYTECODE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):  # check exits 1 when the stream fails it
        raise RuntimeError(f"{command} exited {child.returncode}")
    return usage.ru_utime + usage.ru_stime, wall


def measure(n: int, rounds: int, python: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        big, small = Path(folder) / "run.sse", Path(folder) / "small.sse"
        big.write_bytes(encode_sse(events(n)))
        small.write_bytes(encode_sse(events(20)))
        check = [python, "-m", "agui_pipeline", "check"]
        timed = [
            Timed(CHECK, [*check, str(big)]),
            Timed(SDK, [python, str(SDK_SCRIPT), str(big)]),
            Timed(STARTUP, [*check, str(small)]),
            Timed(FLOOR, [python, str(FLOOR_SCRIPT), str(big)]),
        ]
        for each in timed:  # warm-up: the files in the page cache, the bytecode compiled
            cpu_of(each.command)
        for _ in range(rounds):
            for each in timed:
                cpu, wall = cpu_of(each.command)
                each.cpu.append(cpu)
                each.wall.append(wall)
    ours, sdk, floor = timed[0].cpu, timed[1].cpu, timed[3].cpu
    ratios = [b / a for a, b in zip(ours, sdk, strict=True)]
    floor_ratios = [b / a for a, b in zip(floor, sdk, strict=True)]
    return {
        "events": n,
        "rounds": rounds,
        "python": python,
        "rows": [each.row() for each in timed],
        "SDK ÷ check (median of rounds)": round(statistics.median(ratios), 3),
        "SDK ÷ check (min–max)": [round(min(ratios), 3), round(max(ratios), 3)],
        "SDK ÷ decode floor (median of rounds)": round(statistics.median(floor_ratios), 3),
        "load average": round(os.getloadavg()[0], 1),
    }


def render(result: dict[str, Any]) -> str:
    low, high = result["SDK ÷ check (min–max)"]
    lines = [
        f"Whole process, {result['events']:,} events (SSE), user + system CPU, median of "
        f"{result['rounds']} interleaved rounds (load average {result['load average']}):",
        "",
        "| process | CPU s | min–max | wall s |",
        "| --- | ---: | ---: | ---: |",
    ]
    for row in result["rows"]:
        a, b = row["CPU s (min–max)"]
        lines.append(
            f"| {row['contender']} | {row['CPU s (median)']:.3f} | {a:.3f}–{b:.3f} | "
            f"{row['wall s (median)']:.3f} |"
        )
    lines += [
        "",
        f"`check` is {result['SDK ÷ check (median of rounds)']:.2f}× as fast as the SDK's pass "
        f"(median of the rounds' ratios; {low:.2f}–{high:.2f}). A process that only "
        f"decodes each frame is {result['SDK ÷ decode floor (median of rounds)']:.2f}× as fast.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--events", type=int, default=300_000, help="stream length (300,000)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (7)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to run")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"results folder ({RESULTS})")
    args = parser.parse_args(argv)
    result = measure(args.events, args.rounds, args.python)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "check.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
