"""Running a per-source check on a Dask cluster (the ``dask`` extra), for ``check
--scheduler`` and :mod:`agui_pipeline.fleet`.

Runs are independent, so an archive spreads over as many workers as there are: each
worker reads its sources itself (a path it sees, or an fsspec URL) and checks them; the
client sends names and gets results back, never a file's bytes. :func:`results` does it
for any picklable per-source function, so the command and the library share the way work
is cut, sent, retried and collected, and only their per-source function differs.

Nothing is held and nothing lost. Sources are taken lazily and sent in batches (a task per
source would cost the scheduler and the client more than checking a short recording),
with a bounded number of batches in flight and, for ordered results, a bounded number
waiting for their turn. A worker that dies has its batches run again elsewhere by the
scheduler (checking is a pure read, so running again is safe); a batch whose workers keep
dying is split so that only the source that kills them is reported, with the cause.
Every source given comes out: its result, or why there is none.
"""

from __future__ import annotations

import gc
import logging
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO, TypeVar

from distributed import Client, Future, LocalCluster, as_completed
from distributed.scheduler import KilledWorker

BATCH_SOURCES = 32
"""Sources per task at most: a Dask task costs about 5 ms of CPU beyond its sources, the
check of a dozen short recordings (docs/guides/cluster.md)."""
BATCH_BYTES = 8 << 20
"""Bytes per task at most, where the listing gave sizes: about a tenth of a second's check."""
WAITING_BATCHES = 256
"""Batches done but not yet given out, at most, when results keep the order given."""

R = TypeVar("R")


@contextmanager
def connect(scheduler: str) -> Iterator[Client]:
    """A client of the scheduler at ``scheduler`` (``tcp://host:8786``), or of a cluster of
    N single-threaded worker processes on this machine for ``local:N``, closed on exit."""
    if not scheduler.startswith("local:"):
        with Client(scheduler) as client:
            yield client
        return
    count = scheduler.removeprefix("local:")
    if not count.isdigit() or int(count) < 1:
        raise ValueError("expected local:N, N worker processes ≥ 1, or a scheduler's address")
    # One thread per process: the check is Python code that holds the GIL.
    with (
        LocalCluster(
            n_workers=int(count),
            threads_per_worker=1,
            processes=True,
            dashboard_address="127.0.0.1:0",  # loopback, any free port: never a clash on 8787
            silence_logs=logging.CRITICAL,  # what goes wrong is in the report, with its cause
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


@dataclass(frozen=True, slots=True)
class _Batch:
    """Sources checked by one task: ``names``, the first at ``first`` in the order given."""

    first: int
    names: tuple[str, ...]


def _batches(
    sources: Iterable[tuple[str, int | None]], count: int, size: int = BATCH_BYTES
) -> Iterator[_Batch]:
    names: list[str] = []
    first = total = 0
    for position, (name, known) in enumerate(sources):
        names.append(name)
        total += known or 0
        if len(names) >= count or total >= size:
            yield _Batch(first, tuple(names))
            first, names, total = position + 1, [], 0
    if names:
        yield _Batch(first, tuple(names))


def results(
    client: Client,
    sources: Iterable[tuple[str, int | None]],
    check: Callable[..., R],
    extra: tuple[Any, ...],
    unchecked: Callable[[str, str], R],
    *,
    ordered: bool,
    batch_sources: int | None = None,
) -> Iterator[tuple[int, str, R]]:
    """``check(name, *extra)`` run on the cluster for each of ``sources`` (names, and
    sizes where known), yielded as ``(position, name, result)`` as each batch completes
    (``ordered``: in the order given). ``check`` must be picklable (a module's function);
    ``unchecked(name, cause)`` stands for a source the cluster could not check.

    The scheduler runs a task again when its worker dies, and gives up on it (``KilledWorker``)
    when its workers died ``distributed.scheduler.allowed-failures`` + 1 times. Any task
    assigned to a dying worker is blamed, not only the one that killed it, so a task given
    up on is not proof: its sources become suspects, each run again alone on the cluster,
    and only a source whose workers die while it runs alone is reported.
    """
    batches = _batches(sources, batch_sources or BATCH_SOURCES)
    pending: dict[Future[list[R]], _Batch] = {}
    waiting: dict[int, tuple[_Batch, list[R]]] = {}
    suspects: deque[_Batch] = deque()
    alone: Future[list[R]] | None = None
    turn = 0
    queue = as_completed()
    capacity = _Capacity(client)

    def submit(batch: _Batch) -> Future[list[R]]:
        future = client.submit(_each, batch, check, *extra, pure=False)
        pending[future] = batch
        queue.add(future)
        return future

    def fill() -> None:
        nonlocal alone
        if suspects:
            if not pending:
                alone = submit(suspects.popleft())
            return
        # Two batches a worker thread: the next is there the moment one finishes.
        while len(pending) < 2 * capacity.threads() and len(waiting) < WAITING_BATCHES:
            batch = next(batches, None)
            if batch is None:
                return
            submit(batch)

    try:
        fill()
        for future in queue:
            batch = pending.pop(future)
            try:
                said = future.result()
            except KilledWorker as error:
                if future is not alone:
                    suspects.extend(
                        _Batch(batch.first + offset, (name,))
                        for offset, name in enumerate(batch.names)
                    )
                    fill()
                    continue
                said = [unchecked(batch.names[0], _died(error))]
            except CancelledError as error:
                cause = f"the cluster cancelled its task ({error or 'the scheduler went away'})"
                said = [unchecked(name, cause) for name in batch.names]
            finally:
                future.release()
            if not ordered:
                yield from _placed(batch, said)
            else:
                waiting[batch.first] = (batch, said)
                while turn in waiting:
                    done, said = waiting.pop(turn)
                    turn += len(done.names)
                    yield from _placed(done, said)
            fill()
    finally:
        if pending:
            client.cancel(list(pending))


class _Capacity:
    """The cluster's worker threads, asked again at most every two seconds (it may scale)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.known = 0
        self.asked = 0.0

    def threads(self) -> int:
        now = time.monotonic()
        if now - self.asked > 2.0:
            self.asked = now
            self.known = sum(self.client.nthreads().values())
        return max(self.known, 1)


def _placed(batch: _Batch, said: list[R]) -> Iterator[tuple[int, str, R]]:
    for offset, (name, result) in enumerate(zip(batch.names, said, strict=True)):
        yield batch.first + offset, name, result


def _each(batch: _Batch, check: Callable[..., R], *extra: Any) -> list[R]:
    """A worker's task: ``check`` each source of ``batch``."""
    with _collecting_less():
        return [check(name, *extra) for name in batch.names]


def _died(error: KilledWorker) -> str:
    return f"the workers checking it died each time, alone on the cluster ({error})"


class Progress:
    """A one-line count on stderr while a cluster works: sources done, failed (status 1),
    not checked (status 2), the rate and the workers; redrawn at most every half second."""

    def __init__(self, client: Client, out: TextIO = sys.stderr) -> None:
        self.client = client
        self.out = out
        self.counts = [0, 0, 0]
        self.started = self.drawn = time.monotonic()

    def update(self, status: int) -> None:
        self.counts[min(status, 2)] += 1
        now = time.monotonic()
        if now - self.drawn >= 0.5:
            self.drawn = now
            self.draw(now)

    def draw(self, now: float) -> None:
        done = sum(self.counts)
        rate = done / max(now - self.started, 1e-9)
        workers = len(self.client.scheduler_info().get("workers", {}))
        self.out.write(
            f"\r{done} sources checked ({self.counts[1]} failed, "
            f"{self.counts[2]} not checked), {rate:,.1f}/s, {workers} workers\x1b[K"
        )
        self.out.flush()

    def clear(self) -> None:
        self.out.write("\r\x1b[K")

    def close(self) -> None:
        self.draw(time.monotonic())
        self.out.write("\n")
        self.out.flush()


@contextmanager
def _collecting_less() -> Iterator[None]:
    """While a batch is checked, collect cycles every 100,000 allocations instead of 700,
    as the ``agui-pipeline`` process does (``cli._collect_less``: the events are freed by
    reference counting; cycles are rare); the worker's own setting is put back after."""
    before = gc.get_threshold()
    gc.set_threshold(100_000, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
