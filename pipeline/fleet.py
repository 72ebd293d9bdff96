"""Producer diagnostics over archives of recorded runs, on a Dask cluster (the ``dask`` extra).

Users outgrow one machine when they judge archives: a week of recorded runs from every
agent, often millions of files in object storage. :func:`check_fleet` checks each
recording on a cluster's workers with the per-source check ``check`` runs (the workers read
the sources themselves: paths they see, or fsspec URLs such as ``s3://archive/runs/``),
yields each source's :class:`SourceResult` as it completes, and sums them up in a
:class:`FleetReport`: findings by code, by producer and by version, each code with its
first occurrence. ``agui-pipeline check --scheduler`` is the command's way to the same
cluster (:mod:`agui_pipeline._checking.cluster` cuts, sends, retries and collects the work
for both).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import Any

import orjson
from agui_pipeline._checking import FAILED, UNCHECKED, CheckError, cluster, recordings
from agui_pipeline._checking.gate import Gate, check_rules
from agui_pipeline._checking.source import CheckSettings, check_source, declaration_from_files
from agui_pipeline.delivery.report import ProducerReport, producer_report
from agui_pipeline.events import AnyEvent
from distributed import Client

MAX_GROUPS = 1000
"""Producers, and versions, a :class:`FleetReport` keeps apart; the rest are ``(other)``."""


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


def _judge(
    name: str, settings: CheckSettings, producer: ProducerKey | None, version: str
) -> SourceResult:
    """A worker's check of one source for :func:`check_fleet`: its findings grouped, its
    producer and version (its position is the client's to fill in)."""
    started = _FirstRunStarted()
    checked = check_source(name, settings, sink=started)
    result = checked.result
    return SourceResult(
        source=checked.name,
        position=-1,
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
        self.failed += result.status == FAILED
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
        self.unchecked += result.status == UNCHECKED
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
    batch_sources: int = cluster.BATCH_SOURCES,
) -> FleetRun:
    """Check every recording ``sources`` name on a Dask cluster, as ``check`` would.

    ``sources`` are paths, directories, globs or fsspec URLs, listed lazily as ``check``
    lists them (a directory or glob that names nothing raises :class:`FileNotFoundError`
    saying so).
    ``scheduler`` is an address, ``local:N``, or a :class:`distributed.Client` the caller
    owns. ``producer`` groups the report by a segment of the path
    (:class:`ProducerFromPath`) or a field of the run (:class:`ProducerFromRun`); ``version``
    is the field of the stream's first ``RUN_STARTED`` it is grouped by as well — by
    default ``protocolVersion``, the version the producer declares it speaks
    (``/spec/1.1/basic/versioning``, "Version negotiation"); point it at wherever your
    agents stamp their release (``/metadata/agentVersion``). ``run_input`` pairs each
    recording with its run input (``check --run-input``), ``rules`` tunes codes as
    ``--rule`` does. ``capabilities`` is the declaration's file, read once here: one that is
    not there, is a directory or cannot be opened raises ``OSError``; one that cannot be used
    as a declaration judges every recording as undeclared, each with
    ``reconcile.declaration-unusable`` (``/spec/1.1/basic/capabilities``, Error Handling).
    """
    try:
        declaration = declaration_from_files(capabilities, None)
    except CheckError as error:
        raise OSError(str(error)) from None
    settings = CheckSettings(
        gate=Gate(rules=check_rules(dict(rules or {}), "rules")),
        framing=framing,
        peer_version=peer_version,
        declaration=declaration,
        run_input=run_input,
    )
    if run_input is not None:
        recordings.paired(run_input, "runs/a.sse")  # a bad pattern is refused now
    if batch_sources < 1:
        raise ValueError("batch_sources must be at least 1")

    def unchecked(name: str, cause: str) -> SourceResult:
        return SourceResult(name, -1, UNCHECKED, None, ProducerReport(), None, None, 0, error=cause)

    def results() -> Iterator[SourceResult]:
        listed = (found for source in sources for found in recordings.expand(source))
        extra = (settings, producer, version)
        with ExitStack() as stack:
            client = (
                scheduler
                if isinstance(scheduler, Client)
                else stack.enter_context(cluster.connect(scheduler))
            )
            for position, _, result in cluster.results(
                client, listed, _judge, extra, unchecked, ordered=False, batch_sources=batch_sources
            ):
                yield replace(result, position=position)

    return FleetRun(results())


__all__ = [
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
]
