"""``check`` over many recordings: one process, ``--jobs 2`` and a Dask cluster of 1 and 2
worker processes (``--scheduler``).

Two archives of realistic SSE recordings (:mod:`agui_pipeline.workload`): *short* ones
(20 events: what each source costs beyond its own events) and *long* ones (20,000
events: the throughput). Each is checked as ``check -q ARCHIVE`` does, in this process,
the report written to ``/dev/null``:

- one process and ``--jobs 2``: ``cli.main``, imports warmed up first; ``--jobs`` pays for
  starting its pool each time, as the command does;
- ``--scheduler``: against a cluster started once and warmed up beforehand, as a standing
  cluster is used (its start-up, a few seconds, is timed on its own).

Figures: wall time per source and events per second of wall time; CPU per source split
between the command (with the scheduler, which a local cluster runs in this process) and
the workers (``getrusage`` in each, through ``Client.run``). Medians of the rounds. On the
cluster of two, also: batches a quarter the size (so what each task costs shows), and
:func:`~agui_pipeline.fleet.check_fleet`, the library's way (results, no reports).

    python -m benchmarks.fleet [--short 2000] [--long 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agui_pipeline import fleet
from agui_pipeline._checking import cluster
from agui_pipeline.cli import main as check
from agui_pipeline.testing.workload import encode_sse, events
from distributed import Client, LocalCluster


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _measure(run: Callable[[], None], workers: Callable[[], float]) -> tuple[float, float, float]:
    """Wall, this process's CPU and the workers' CPU seconds of ``run()``."""
    own, theirs, started = _cpu(), workers(), time.perf_counter()
    run()
    wall = time.perf_counter() - started
    return wall, _cpu() - own, workers() - theirs


def _check(folder: Path, *options: str) -> Callable[[], None]:
    def run() -> None:
        with open(os.devnull, "w") as out:
            check(["check", "-q", str(folder), *options], out)

    return run


def _archive(root: Path, name: str, count: int, size: int) -> Path:
    folder = root / name
    folder.mkdir()
    body = encode_sse(events(size, seed=7))
    for number in range(count):
        (folder / f"{number:05}.sse").write_bytes(body)
    return folder


def _library(client: Client) -> Callable[[Path], Callable[[], None]]:
    """:func:`check_fleet` over a folder, its results summed into its report."""

    def over(folder: Path) -> Callable[[], None]:
        def run() -> None:
            with fleet.check_fleet([str(folder)], scheduler=client) as results:
                for _ in results:
                    pass

        return run

    return over


def _row(
    mode: str,
    rounds: int,
    short: tuple[Path, int],
    long: tuple[Path, int],
    *options: str,
    workers: Callable[[], float] = _children_cpu,
    run: Callable[[Path], Callable[[], None]] | None = None,
) -> None:
    figures = []
    for folder, count in (short, long):
        job = _check(folder, *options) if run is None else run(folder)
        runs = [_measure(job, workers) for _ in range(rounds)]
        figures.append([statistics.median(column) / count for column in zip(*runs, strict=True)])
    (wall, own, theirs), (long_wall, long_own, long_theirs) = figures
    print(
        f"| {mode} | {wall * 1000:.3f} | {own * 1000:.3f} | {theirs * 1000:.3f} "
        f"| {20_000 / long_wall:,.0f} | {(long_own + long_theirs) / 20_000 * 1e6:.2f} |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", type=int, default=2000, help="20-event recordings")
    parser.add_argument("--long", type=int, default=20, help="20,000-event recordings")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        short = (_archive(root, "short", args.short, 20), args.short)
        long = (_archive(root, "long", args.long, 20_000), args.long)
        _check(short[0])()  # imports, caches
        print(
            "| mode | short: wall ms/source | CPU ms/source, command (+ scheduler) "
            "| CPU ms/source, workers | long: events/s of wall | CPU µs/event, all |"
        )
        print("| --- | --- | --- | --- | --- | --- |")
        _row("one process", args.rounds, short, long)
        _row("--jobs 2", args.rounds, short, long, "--jobs", "2")
        for count in (1, 2):
            started = time.perf_counter()
            with (
                LocalCluster(
                    n_workers=count,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address="127.0.0.1:0",
                ) as local,
                Client(local) as client,
            ):
                up = time.perf_counter() - started

                def workers(client: Client = client) -> float:
                    return float(sum(client.run(_cpu).values()))

                address = local.scheduler_address
                _check(short[0], "--scheduler", address)()  # the workers' imports
                _row(
                    f"--scheduler, {count} worker(s)",
                    args.rounds,
                    short,
                    long,
                    "--scheduler",
                    address,
                    workers=workers,
                )
                if count == 2:
                    # What a task costs, apart from its sources: batches 4 times smaller.
                    cluster.BATCH_SOURCES //= 4
                    mode = f"--scheduler, 2 workers, batches of {cluster.BATCH_SOURCES}"
                    _row(mode, args.rounds, short, long, "--scheduler", address, workers=workers)
                    cluster.BATCH_SOURCES *= 4
                    mode = "check_fleet, 2 workers"
                    _row(mode, args.rounds, short, long, workers=workers, run=_library(client))
            print(f"(a local cluster of {count}: {up:.2f} s to start)", flush=True)


if __name__ == "__main__":
    main()
