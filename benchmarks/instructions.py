"""Instructions per event under callgrind: the measure that settles a few-percent question.

Wall and CPU time on a shared 2-core VM drift by more than the changes worth
deciding, so speed work here is decided on instruction counts. The method:
run the same child process twice under ``valgrind --tool=callgrind`` with
``PYTHONHASHSEED=0`` (a random seed moves dict probing by a few percent) —
once doing everything but the measured pass (imports, reading the workload
file, building the pipeline, starting the event loop, a short warm-up stream
through the same pipeline), once doing it too — and divide the difference
by the number of events, so start-up and imports cancel out::

    python -m benchmarks.instructions                   # whole default pipeline
    python -m benchmarks.instructions --upto verify     # parse .. verify only
    python -m benchmarks.instructions --upto parse --events 20000

The pipeline is the one every figure is for (``suite.default_pipeline``:
a full declaration for reconcile, the Conversation on); ``--upto STAGE``
drops the stages after ``STAGE``. The workload file (``workload.py``, SSE)
is written once to ``--file``'s path and fed from memory in 64 KiB reads, a
realistic socket read; the count of events is read back from it.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _child(path: Path, upto: str, measured: bool) -> None:
    """What runs under valgrind: a short warm-up stream always (so the event loop's start
    and every first-call cost are in both runs), the workload's pass when ``measured``."""
    import anyio

    from .suite import default_pipeline
    from .workload import chunks, encode_sse, events

    pipeline = default_pipeline()
    names = pipeline.stage_names
    for later in reversed(names[names.index(upto) + 1 :]):
        pipeline = pipeline.without(later)
    warm_up = [encode_sse(events(500, seed=1))]
    reads = chunks(path.read_bytes())  # in both runs: reading the file is not the pass

    async def consume(source: list[bytes]) -> None:
        async with pipeline.open(source) as stream:
            async for _batch in stream.batches():
                pass
        assert stream.verdict is not None and stream.verdict.completed, stream.verdict

    async def passes() -> None:
        await consume(warm_up)
        if measured:
            await consume(reads)

    anyio.run(passes)


def _instructions(path: Path, upto: str, measured: bool) -> int:
    """Instructions callgrind counts for one child run."""
    with tempfile.TemporaryDirectory() as scratch:
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={scratch}/callgrind.out",
            sys.executable,
            "-m",
            "benchmarks.instructions",
            "--child",
            "--file",
            str(path),
            "--upto",
            upto,
        ] + (["--measured"] if measured else [])
        env = dict(os.environ, PYTHONHASHSEED="0")
        finished = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, check=False
        )
    found = re.search(r"Collected : (\d+)", finished.stderr)
    if finished.returncode != 0 or found is None:
        raise RuntimeError(f"the callgrind run failed:\n{finished.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--upto", default="dispatch", help="the last stage run (default: all)")
    parser.add_argument("--file", type=Path, help="the workload file (written if absent)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measured", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    path: Path = args.file or Path(tempfile.gettempdir()) / f"agui-workload-{args.events}.sse"
    if args.child:
        _child(path, args.upto, args.measured)
        return
    if not path.exists():
        from .workload import encode_sse, events

        path.write_bytes(encode_sse(events(args.events)))
    count = path.read_bytes().count(b"\n\n")  # one blank line ends each SSE event
    baseline = _instructions(path, args.upto, measured=False)
    total = _instructions(path, args.upto, measured=True)
    print(
        f"pipeline up to {args.upto}, {count:,} events ({path}): "
        f"{(total - baseline) / count:,.0f} instructions/event"
    )


if __name__ == "__main__":
    main()
