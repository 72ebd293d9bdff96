"""Check recorded runs at fleet scale, on a Dask cluster (the ``dask`` extra).

Runs are independent, so an archive of them spreads over as many workers as there are:
each worker reads its sources itself (a path it sees, or an fsspec URL such as
``s3://archive/runs/``) and checks them with ``check``'s own per-source code; the client
sends names and gets back results, never a file's bytes. Two ways in:

- ``agui-pipeline check --scheduler ADDRESS SOURCE...`` (:func:`render_on_cluster`)
  prints what one process prints for the same sources, in the order given;
- :func:`check_fleet`, the library's, yields each source's :class:`SourceResult` as it
  completes and sums them up in a :class:`FleetReport`: findings by code, by producer
  and by version, each with its first occurrence.

Nothing is held and nothing lost. Sources are listed lazily and sent in batches (a task
per source would cost the scheduler more than the check of a short recording), with a
bounded number of batches in flight and, for the command's ordered output, a bounded
number waiting for their turn. A worker that dies has its batches run again elsewhere
by the scheduler (checking is a pure read, so running again is safe); a batch whose
workers keep dying is split so that only the source that kills them is reported, with
the cause. Every source given comes out: checked, or said why not.
"""

from __future__ import annotations

import gc
import logging
import os
import re
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import CancelledError
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO, TypeVar

import orjson
from distributed import Client, Future, LocalCluster, as_completed
from distributed.scheduler import KilledWorker

from . import recordings
from .cli import (
    EXIT_FAILED,
    EXIT_USAGE,
    Checked,
    Settings,
    Style,
    UsageError,
    render_checked,
)
from .cli import _check_source as check_source
from .cli_config import Gate, check_rules
from .events import AnyEvent
from .report import ProducerReport, producer_report

BATCH_SOURCES = 32
"""Sources per task at most: a Dask task costs the scheduler and the client about a
millisecond, as much as checking a short recording (README, Running on a cluster)."""
BATCH_BYTES = 8 << 20
"""Bytes per task at most, where the listing gave sizes: about a tenth of a second's check."""
WAITING_BATCHES = 256
"""Batches done but not yet printed, at most (``check`` prints in the order given)."""
MAX_GROUPS = 1000
"""Producers, and versions, a :class:`FleetReport` keeps apart; the rest are ``(other)``."""

R = TypeVar("R")


# -- the cluster --------------------------------------------------------------------------


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


def _stream(
    client: Client,
    batches: Iterator[_Batch],
    task: Callable[..., list[R]],
    extra: tuple[Any, ...],
    unchecked: Callable[[int, str, str], R],
    *,
    ordered: bool,
) -> Iterator[R]:
    """Run ``task(batch, *extra)`` on the cluster for every batch, and yield each source's
    result as its batch completes (``ordered``: in the order given). ``unchecked(position,
    name, cause)`` stands for a source the cluster could not check.

    The scheduler runs a task again when its worker dies, and gives up on it (``KilledWorker``)
    when its workers died ``distributed.scheduler.allowed-failures`` + 1 times. Any task
    assigned to a dying worker is blamed, not only the one that killed it, so a task given
    up on is not proof: its sources become suspects, each run again alone on the cluster,
    and only a source whose workers die while it runs alone is reported.
    """
    pending: dict[Future[list[R]], _Batch] = {}
    waiting: dict[int, tuple[_Batch, list[R]]] = {}
    suspects: deque[_Batch] = deque()
    alone: Future[list[R]] | None = None
    turn = 0
    queue = as_completed()
    capacity = _Capacity(client)

    def submit(batch: _Batch) -> Future[list[R]]:
        future = client.submit(task, batch, *extra, pure=False)
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
                results = future.result()
            except KilledWorker as error:
                if future is not alone:
                    suspects.extend(
                        _Batch(batch.first + offset, (name,))
                        for offset, name in enumerate(batch.names)
                    )
                    fill()
                    continue
                results = [unchecked(batch.first, batch.names[0], _died(error))]
            except CancelledError as error:
                cause = f"the cluster cancelled its task ({error or 'the scheduler went away'})"
                results = [
                    unchecked(batch.first + offset, name, cause)
                    for offset, name in enumerate(batch.names)
                ]
            finally:
                future.release()
            if not ordered:
                yield from results
            else:
                waiting[batch.first] = (batch, results)
                while turn in waiting:
                    done, results = waiting.pop(turn)
                    turn += len(done.names)
                    yield from results
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


def _died(error: KilledWorker) -> str:
    return f"the workers checking it died each time, alone on the cluster ({error})"


class _Progress:
    """A one-line count on stderr while a cluster works: sources done, failed, not checked,
    the rate and the workers; redrawn at most every half second."""

    def __init__(self, client: Client, out: TextIO = sys.stderr) -> None:
        self.client = client
        self.out = out
        self.counts = [0, 0, 0]
        self.started = self.drawn = time.monotonic()

    def update(self, status: int) -> None:
        self.counts[min(status, EXIT_USAGE)] += 1
        now = time.monotonic()
        if now - self.drawn >= 0.5:
            self.drawn = now
            self.draw(now)

    def draw(self, now: float) -> None:
        done = sum(self.counts)
        rate = done / max(now - self.started, 1e-9)
        workers = len(self.client.scheduler_info().get("workers", {}))
        self.out.write(
            f"\r{done} sources checked ({self.counts[EXIT_FAILED]} failed, "
            f"{self.counts[EXIT_USAGE]} not checked), {rate:,.1f}/s, {workers} workers\x1b[K"
        )
        self.out.flush()

    def clear(self) -> None:
        self.out.write("\r\x1b[K")

    def close(self) -> None:
        self.draw(time.monotonic())
        self.out.write("\n")
        self.out.flush()


# -- the command: check --scheduler ------------------------------------------------------


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


def _render_batch(batch: _Batch, settings: Settings) -> list[tuple[str, tuple[int, str]]]:
    """A worker's task for ``check``: each source's name, status and report part."""
    with _collecting_less():
        return [
            (name, render_checked(check_source(name, settings, False), settings))
            for name in batch.names
        ]


def render_on_cluster(
    scheduler: str,
    sources: Iterable[tuple[str, int | None]],
    settings: Settings,
    *,
    progress: bool = False,
) -> Iterator[tuple[str, tuple[int, str]]]:
    """``check --scheduler``: each source's name with its status and report part, in the
    order given, checked on the cluster at ``scheduler`` (see :func:`connect`)."""
    # SARIF URIs are relative to this process's directory, wherever a worker runs.
    settings = replace(settings, sarif_root=str(Path(settings.sarif_root or os.getcwd()).resolve()))

    def unchecked(_position: int, name: str, cause: str) -> tuple[str, tuple[int, str]]:
        return name, render_checked(Checked(name, None, EXIT_USAGE, error=cause), settings)

    with ExitStack() as stack:
        try:
            client = stack.enter_context(connect(scheduler))
        except (OSError, ValueError) as error:  # no scheduler there, or a bad local:N
            raise UsageError(f"--scheduler {scheduler}: {error}") from error
        meter = _Progress(client) if progress else None
        batches = _batches(sources, BATCH_SOURCES)
        parts = _stream(client, batches, _render_batch, (settings,), unchecked, ordered=True)
        for name, part in parts:
            if meter is not None:
                meter.update(part[0])
                if "\0" in part[1]:  # check prints why on stderr: on a line of its own
                    meter.clear()
            yield name, part
        if meter is not None:
            meter.close()


# -- the library: check_fleet ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProducerFromPath:
    """The producer named by a segment of each source's path: ``pattern`` is the path with
    ``{producer}`` where that segment is, ``*`` for any one segment and ``**`` for any
    depth (``s3://archive/{producer}/**``)."""

    pattern: str

    def __post_init__(self) -> None:
        if self.pattern.count("{producer}") != 1:
            raise ValueError(f"{self.pattern!r}: a producer pattern has one {{producer}}")

    def key(self, source: str, _run_started: AnyEvent | None) -> str | None:
        head, _, tail = self.pattern.partition("{producer}")
        regex = _path_regex(head) + "(?P<producer>[^/]+)" + _path_regex(tail)
        found = re.fullmatch(regex, source)
        return found["producer"] if found else None


def _path_regex(glob: str) -> str:
    out, position = "", 0
    while position < len(glob):
        if glob.startswith("**", position):
            out, position = out + ".*", position + 2
        elif glob[position] == "*":
            out, position = out + "[^/]*", position + 1
        else:
            out, position = out + re.escape(glob[position]), position + 1
    return out


@dataclass(frozen=True, slots=True)
class ProducerFromRun:
    """The producer named by a field of the stream's first ``RUN_STARTED``, at JSON pointer
    ``pointer`` (``/input/forwardedProps/agent``, ``/metadata/agent``)."""

    pointer: str

    def key(self, _source: str, run_started: AnyEvent | None) -> str | None:
        return _field(run_started, self.pointer)


ProducerKey = ProducerFromPath | ProducerFromRun
"""How sources are grouped by producer in a :class:`FleetReport`."""


def _field(event: AnyEvent | None, pointer: str) -> str | None:
    """The value at ``pointer`` in ``event`` as a key: a string as it is, anything else as
    compact JSON (at most 200 characters); ``None`` where the stream does not say."""
    value: Any = event
    for token in pointer.split("/")[1:] if pointer else ():
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict):
            value = value.get(token)
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return None
    if value is None:
        return None
    return value if isinstance(value, str) else orjson.dumps(value).decode()[:200]


@dataclass(frozen=True, slots=True)
class SourceResult:
    """One source, checked (or not) on the cluster."""

    source: str
    position: int
    """Where the source is in the order given (after directories and globs are listed)."""
    status: int
    """As ``check`` would exit for it alone: 0 passed, 1 failed, 2 not checked."""
    outcome: str | None
    """The verdict (``completed``, ``rejected``, ``truncated``...); ``None`` when not checked."""
    findings: ProducerReport
    """The source's producer report: its findings by code, each with its first occurrence."""
    producer: str | None
    version: str | None
    events: int
    """Events read."""
    failures: list[str] = field(default_factory=list)
    """Why it failed the gate (empty when it passed)."""
    error: str | None = None
    """Why it could not be checked."""


class _FirstRunStarted:
    """A sink keeping the stream's first ``RUN_STARTED`` (one test per read after it)."""

    def __init__(self) -> None:
        self.event: AnyEvent | None = None

    async def write(self, events: Any) -> None:
        if self.event is None:
            self.event = next((e for e in events if e.get("type") == "RUN_STARTED"), None)


def _judge_batch(
    batch: _Batch, settings: Settings, producer: ProducerKey | None, version: str
) -> list[SourceResult]:
    """A worker's task for :func:`check_fleet`: each source's result, findings grouped."""
    with _collecting_less():
        return [
            _judged(batch, offset, settings, producer, version)
            for offset in range(len(batch.names))
        ]


def _judged(
    batch: _Batch, offset: int, settings: Settings, producer: ProducerKey | None, version: str
) -> SourceResult:
    name = batch.names[offset]
    started = _FirstRunStarted()
    checked = check_source(name, settings, False, started)
    result = checked.result
    return SourceResult(
        source=name,
        position=batch.first + offset,
        status=checked.status,
        outcome=None if result is None else str(result.verdict.outcome),
        findings=ProducerReport()
        if result is None
        else producer_report(result.diagnostics, result.suppressed),
        producer=None if producer is None else producer.key(name, started.event),
        version=_field(started.event, version),
        events=0 if result is None else result.counters.read,
        failures=checked.failures,
        error=checked.error,
    )


@dataclass(frozen=True, slots=True)
class Occurrence:
    """Where a code was first reported: the source (earliest in the order given) and event."""

    source: str
    event_index: int | None
    pointer: str | None


@dataclass(slots=True)
class CodeTally:
    """One code across sources: how often, in how many sources, and where first."""

    count: int = 0
    sources: int = 0
    first: Occurrence | None = None
    first_position: int = -1


@dataclass(slots=True)
class FindingsGroup:
    """Sources that share a producer or a version (or all of them): their findings by code."""

    sources: int = 0
    failed: int = 0
    codes: dict[str, CodeTally] = field(default_factory=dict)

    def add(self, result: SourceResult) -> None:
        self.sources += 1
        self.failed += result.status == EXIT_FAILED
        for group in result.findings.groups:
            tally = self.codes.setdefault(group.code, CodeTally())
            tally.count += group.count
            tally.sources += 1
            if tally.first is None or result.position < tally.first_position:
                first = group.first
                tally.first = Occurrence(result.source, first.event_index, first.pointer)
                tally.first_position = result.position

    def to_dict(self) -> dict[str, Any]:
        return {
            "sources": self.sources,
            "failed": self.failed,
            "codes": {
                code: {
                    "count": tally.count,
                    "sources": tally.sources,
                    "first": None
                    if tally.first is None
                    else {
                        "source": tally.first.source,
                        "eventIndex": tally.first.event_index,
                        "pointer": tally.first.pointer,
                    },
                }
                for code, tally in self._ranked()
            },
        }

    def _ranked(self) -> list[tuple[str, CodeTally]]:
        return sorted(self.codes.items(), key=lambda item: (-item[1].count, item[0]))

    def render(self, indent: str = "  ") -> list[str]:
        lines = []
        for code, tally in self._ranked():
            first = tally.first
            where = "" if first is None else f"first {first.source}"
            if first is not None and first.event_index is not None:
                where += f", event {first.event_index}"
            lines.append(f"{indent}{code}: {tally.count} in {tally.sources} sources ({where})")
        return lines


OTHER = "(other)"
"""The group of producers or versions past :data:`MAX_GROUPS`."""


@dataclass(slots=True)
class FleetReport:
    """What the producers get wrong, across every source checked: findings by code, by
    producer and by version, each code with its first occurrence. Its size grows with
    codes, producers and versions, never with sources."""

    unchecked: int = 0
    events: int = 0
    overall: FindingsGroup = field(default_factory=FindingsGroup)
    by_producer: dict[str | None, FindingsGroup] = field(default_factory=dict)
    by_version: dict[str | None, FindingsGroup] = field(default_factory=dict)

    def add(self, result: SourceResult) -> None:
        self.overall.add(result)
        self.unchecked += result.status == EXIT_USAGE
        self.events += result.events
        _group(self.by_producer, result.producer).add(result)
        _group(self.by_version, result.version).add(result)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sources": self.overall.sources,
            "failed": self.overall.failed,
            "unchecked": self.unchecked,
            "events": self.events,
            "codes": self.overall.to_dict()["codes"],
            "byProducer": [
                {"producer": key, **group.to_dict()} for key, group in self.by_producer.items()
            ],
            "byVersion": [
                {"version": key, **group.to_dict()} for key, group in self.by_version.items()
            ],
        }

    def render(self) -> str:
        """Text for a terminal: the totals, every code, then each producer's and version's."""
        overall = self.overall
        lines = [
            f"fleet report: {overall.sources} sources, {self.events} events: "
            f"{overall.sources - overall.failed - self.unchecked} passed, {overall.failed} "
            f"failed, {self.unchecked} not checked"
        ]
        lines += overall.render()
        for title, groups in (("producer", self.by_producer), ("version", self.by_version)):
            for key, group in groups.items():
                label = "(not said)" if key is None else key
                lines.append(f"{title} {label}: {group.sources} sources, {group.failed} failed")
                lines += group.render("    ")
        return "\n".join(lines)


def _group(groups: dict[str | None, FindingsGroup], key: str | None) -> FindingsGroup:
    if key not in groups and len(groups) >= MAX_GROUPS:
        key = OTHER
    return groups.setdefault(key, FindingsGroup())


class FleetRun:
    """A fleet check under way: iterate it for each :class:`SourceResult` as it completes;
    :attr:`report` sums up those yielded so far (all of them once the iteration ends).
    Use it in a ``with`` block, or iterate it to its end, so the cluster it started is
    closed."""

    def __init__(self, results: Iterator[SourceResult]) -> None:
        self._results = results
        self.report = FleetReport()

    def __iter__(self) -> FleetRun:
        return self

    def __next__(self) -> SourceResult:
        result = next(self._results)
        self.report.add(result)
        return result

    def close(self) -> None:
        close = getattr(self._results, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> FleetRun:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def check_fleet(
    sources: Iterable[str],
    *,
    scheduler: str | Client,
    producer: ProducerKey | None = None,
    version: str = "/protocolVersion",
    run_input: str | None = None,
    capabilities: str | None = None,
    framing: str | None = None,
    peer_version: str | None = None,
    rules: Mapping[str, str] | None = None,
    batch_sources: int = BATCH_SOURCES,
) -> FleetRun:
    """Check every recording ``sources`` name on a Dask cluster, as ``check`` would.

    ``sources`` are paths, directories, globs or fsspec URLs (:mod:`agui_pipeline.recordings`),
    listed lazily. ``scheduler`` is an address, ``local:N``, or a :class:`distributed.Client`
    the caller owns. ``producer`` groups the report by a segment of the path
    (:class:`ProducerFromPath`) or a field of the run (:class:`ProducerFromRun`); ``version``
    is the field of the stream's first ``RUN_STARTED`` it is grouped by as well — by
    default ``protocolVersion``, the version the producer declares it speaks
    (``/spec/1.1/basic/versioning``, "Version negotiation"); point it at wherever your
    agents stamp their release (``/metadata/agentVersion``). ``run_input`` pairs each
    recording with its run input (``check --run-input``), ``rules`` tunes codes as
    ``--rule`` does.
    """
    settings = Settings(
        format="text",
        framing=framing,
        peer_version=peer_version,
        capabilities=capabilities,
        agent_resource=None,
        input=None,
        headers=(),
        progress=False,
        conversation=False,
        quiet=True,
        style=Style(),
        gate=Gate(rules=check_rules(dict(rules or {}), "rules")),
        sarif_root=None,
        run_input=run_input,
    )
    if run_input is not None:
        recordings.paired(run_input, "runs/a.sse")  # a bad pattern is refused now
    if batch_sources < 1:
        raise ValueError("batch_sources must be at least 1")

    def unchecked(position: int, name: str, cause: str) -> SourceResult:
        return SourceResult(
            name, position, EXIT_USAGE, None, ProducerReport(), None, None, 0, error=cause
        )

    def results() -> Iterator[SourceResult]:
        listed = (found for source in sources for found in recordings.expand(source))
        batches = _batches(listed, batch_sources)
        extra = (settings, producer, version)
        with ExitStack() as stack:
            client = (
                scheduler
                if isinstance(scheduler, Client)
                else stack.enter_context(connect(scheduler))
            )
            yield from _stream(client, batches, _judge_batch, extra, unchecked, ordered=False)

    return FleetRun(results())


__all__ = [
    "BATCH_SOURCES",
    "CodeTally",
    "FindingsGroup",
    "FleetReport",
    "FleetRun",
    "Occurrence",
    "ProducerFromPath",
    "ProducerFromRun",
    "ProducerKey",
    "SourceResult",
    "check_fleet",
    "connect",
    "render_on_cluster",
]
