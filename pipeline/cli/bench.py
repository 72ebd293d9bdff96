"""``agui-pipeline bench``: the installed pipeline's throughput, on your recordings and setup.

``benchmarks/`` (the project's comparison suite) is not installed; this is what
a user can run: the default pipeline, with their middleware
(``--middleware module:factory``) and declaration (``--capabilities F``), over
their recordings (``SOURCE...``) or the built-in realistic workload
(:mod:`agui_pipeline.testing.workload`). It reports events/s for the whole pipeline
on each core (the native one and the pure Python reference, :mod:`agui_pipeline._cores`;
the pure one alone, saying why, where the native one is not available), with the
spread of its rounds, µs/event for each stage alone, and peak memory; beside it, on
the same events, a baseline that gives the figure a scale: the decode floor
(``orjson.loads`` of each event, what any Python consumer pays) and, when
``ag-ui-protocol`` is installed, the official SDK's parse-and-validate pass
(``TypeAdapter(Event).validate_json``). ``--live`` adds the per-event CPU of
``--runs`` runs read at once over HTTP from a local ``agui-pipeline serve`` (the
``http`` and ``serve`` extras), one frame per write. ``--count`` adds the whole
pipeline's instructions per event on each core under callgrind, the repeatable
figure (the method of ``benchmarks/instructions.py``). Text, or ``--format json``
for a CI job to track. Times are this process's CPU time over ``--repeat`` rounds,
each running every contender once: the median, and the fastest and slowest round.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import resource
import shlex
import shutil
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TextIO

from agui_pipeline import _cores
from agui_pipeline._checking.source import load_middleware
from agui_pipeline._checking.url import transport_named
from agui_pipeline._engine.pipeline import Pipeline
from agui_pipeline.cli.common import CommandError, add_transport_option
from agui_pipeline.errors import UsageError
from agui_pipeline.stage import Stage, StageFactory

if TYPE_CHECKING:
    from agui_pipeline.http.transport import Transport


DESCRIPTION = """\
Measure the installed pipeline as you run it: the default pipeline with your
middleware (--middleware module:factory) and declaration (--capabilities F), over
your recordings (SOURCE...) or a built-in realistic workload. Reports events/s
for the whole pipeline on the native core and on the pure Python one (the pure
one alone, saying why, where the native core is not built or AGUI_PIPELINE_PURE=1
is set) with the spread of its rounds, microseconds per event for each stage
alone, and peak memory; beside it, on the same events, a baseline: the decode
floor (orjson.loads of each event, what any Python consumer pays) and, when
ag-ui-protocol is installed, the official SDK's parse-and-validate pass. --live
adds the per-event CPU of --runs runs read at once over HTTP from a local
`agui-pipeline serve` (the 'http' and 'serve' extras). --count adds the whole
pipeline's instructions per event on each core, counted under valgrind's
callgrind. Times are this process's CPU time over --repeat rounds, each running
every contender once: the median, the fastest and the slowest. A machine shared
with other work moves them: compare a run with its baseline, not with another
machine's figures; a count does not move."""

EXIT_STATUSES = """\
exit status:
  0  measured
  2  a usage or I/O error: a bad option, a file that cannot be read, a middleware
     that does not load, a missing extra for --live, a closed pipe, --count
     without valgrind on PATH, a callgrind run that failed or whose child ran on
     another core than the one it was to count"""


def register(commands: Any) -> None:
    """Add ``agui-pipeline bench [SOURCE...]``."""
    bench = commands.add_parser(
        "bench",
        help="measure the installed pipeline on your recordings (events/s, per stage, memory)",
        description=DESCRIPTION,
        epilog=EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bench.add_argument("sources", nargs="*", metavar="SOURCE", help="recorded streams (files)")
    bench.add_argument(
        "--middleware",
        action="append",
        default=[],
        metavar="MODULE:FACTORY",
        help="a stage factory to insert as middleware: a Stage class, or a function from the "
        "StreamContext to a stage (repeatable, in order)",
    )
    bench.add_argument("--capabilities", metavar="F", help="the agent's declaration (JSON)")
    bench.add_argument(
        "--events", type=int, default=100_000, help="built-in workload length (100,000)"
    )
    bench.add_argument(
        "--repeat", type=int, default=5, help="rounds: the median and the spread are told (5)"
    )
    bench.add_argument("--live", action="store_true", help="also read runs at once over HTTP")
    bench.add_argument("--runs", type=int, default=100, help="with --live: runs at once (100)")
    bench.add_argument(
        "--live-events", type=int, default=450, help="with --live: events per run (450)"
    )
    bench.add_argument(
        "--count",
        action="store_true",
        help="also count the whole pipeline's instructions per event on each core under callgrind "
        "(valgrind)",
    )
    # What --count runs under callgrind: one source, the start-up alone or the pass too.
    bench.add_argument("--counted-pass", choices=("start-up", "measured"), help=argparse.SUPPRESS)
    bench.add_argument("--format", choices=("text", "json"), default="text")
    add_transport_option(bench, "with --live, each run")
    bench.set_defaults(handler=_command)


def _command(args: argparse.Namespace, out: TextIO) -> int:
    try:
        return run_bench(args, out)
    except ValueError as error:
        raise CommandError(str(error)) from error


def run_bench(args: argparse.Namespace, out: TextIO) -> int:
    """The command; misuse (a missing file, a middleware that does not load) raises
    ``ValueError``, which the command line reports as a usage error (exit 2)."""
    # Imported here, as statistics, subprocess and tempfile below: every command builds
    # this one's parser, and `check` need not pay for what only bench uses.
    from agui_pipeline.testing.workload import DECLARATION, encode_sse, events

    if args.repeat < 1 or args.events < 1 or args.runs < 1 or args.live_events < 1:
        raise ValueError("--repeat, --events, --runs and --live-events must be at least 1")
    if args.count and shutil.which("valgrind") is None:
        raise ValueError("--count needs valgrind on PATH (it counts under valgrind's callgrind)")
    middleware = [load_middleware(spec) for spec in args.middleware]
    capabilities: Any = Path(args.capabilities) if args.capabilities else None
    if capabilities is None and not args.sources:
        capabilities = DECLARATION  # the workload's own agent
    try:
        pipeline = Pipeline(middleware=middleware, capabilities=capabilities)
    except UsageError as error:  # a middleware placed where its chunk form cannot be met
        raise CommandError(f"--middleware: {error}") from None
    named = [(name, _read(name)) for name in args.sources] or [
        (f"built-in workload ({args.events:,} events)", encode_sse(events(args.events)))
    ]
    if args.counted_pass is not None:
        _counted_child(pipeline, named[0][1], args.counted_pass == "measured")
        out.write(_cores.ACTIVE + "\n")  # the parent checks the core it asked for ran
        return 0
    cores, unavailable = _compared_cores()
    active = next(iter(cores))
    report: dict[str, Any] = {
        "stages": pipeline.stage_names,
        "cores": {"active": active, "compared": list(cores), "native unavailable": unavailable},
        "sources": [],
    }
    for name, body in named:
        row = {"source": name, **_measured(pipeline, body, args.repeat, cores)}
        if args.count:
            source = name if args.sources else None
            for core in cores:
                counted = _counted(args, source, body, row["events"], core)
                row["by core"][core]["counted"] = counted
            row["counted"] = row["by core"][active]["counted"]
        report["sources"].append(row)
    if args.live:
        body = named[0][1] if args.sources else encode_sse(events(args.live_events))
        with _on_core(cores[active]):
            report["live"] = _live(pipeline, body, args.runs, args.repeat, args.transport)
        report["live"]["core"] = active
    report["peak RSS MiB"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out.write(json.dumps(report, indent=2) + "\n" if args.format == "json" else _text(report))
    return 0


def _read(name: str) -> bytes:
    try:
        return Path(name).read_bytes()
    except OSError as error:
        raise ValueError(f"cannot read {name}: {error}") from None


def _cpu(work: Any) -> float:
    """CPU seconds of ``anyio.run(work)``, the cyclic collector off (as a tuned server)."""
    import anyio  # in the functions that run a loop: the parser of every command imports this

    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        anyio.run(work)
        return time.process_time() - started
    finally:
        gc.enable()


def _compared_cores() -> tuple[dict[str, ModuleType | None], str | None]:
    """The cores to time, the active one first (what ``_cores.native`` makes a stage run
    on: the extension, or ``None`` for the pure reference), and why the native core is
    left out when it is: ``_cores.ACTIVE``'s wording, as ``--version`` says it."""
    if _cores.native is None:
        if _cores.ACTIVE.startswith(COUNTED_ON["pure"]):
            return {"pure": None}, _cores.ACTIVE
        return {"pure": None}, "pure Python core: switched to it within this process"
    return {"native": _cores.native, "pure": None}, None


@contextmanager
def _on_core(module: ModuleType | None) -> Iterator[None]:
    """The built-in stages created (and parse's framer, taken at the first read) inside run
    on ``module``'s core: stages read ``_cores.native`` when they are built."""
    before, _cores.native = _cores.native, module
    try:
        yield
    finally:
        _cores.native = before


def _measured(
    pipeline: Pipeline, body: bytes, repeat: int, cores: dict[str, ModuleType | None]
) -> dict[str, Any]:
    """The whole pipeline over ``body`` in 64 KiB reads on each core, beside a baseline
    that gives the figures a scale, all in the same rounds: each round runs every
    contender once, in an order that turns round by round, so that a machine whose load
    drifts moves them all alike. Then each stage alone, on the active (first) core.

    The baseline is what the same events cost with no pipeline at all: the decode floor
    (``orjson.loads``), and the official SDK's validation when installed. Both take each
    event's JSON as the parse stage found it, so a recording's framing (comments, several
    ``data`` lines) costs them nothing it would cost the pipeline: a floor, not a rival.
    """
    import statistics

    import anyio
    import orjson
    from agui_pipeline.testing.workload import chunks, encode_sse, events

    reads = chunks(body)
    payloads = _payloads(pipeline, reads)
    read: dict[str, int] = {}

    def whole(core: str) -> Callable[[], float]:
        async def stream() -> None:
            async with pipeline.open(reads) as opened:
                async for _batch in opened.batches():
                    pass
            read[core] = opened.context.counters.read

        def timed() -> float:
            with _on_core(cores[core]):
                return _cpu(stream)

        return timed

    def each_payload(work: Callable[[bytes], object]) -> Callable[[], float]:
        def timed() -> float:
            started = time.process_time()
            for payload in payloads:
                work(payload)
            return time.process_time() - started

        return lambda: _uncollected(timed)

    warm_up = [encode_sse(events(500, seed=1))]  # every first call, before any round
    for module in cores.values():
        with _on_core(module):
            anyio.run(_consume, pipeline, warm_up)
    contenders = {core: whole(core) for core in cores}
    contenders["decode floor"] = each_payload(orjson.loads)
    sdk = _sdk_validate()
    if sdk is not None:
        version, validate = sdk
        contenders["sdk"] = each_payload(lambda payload: _accepts(validate, payload))
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for turn in range(repeat):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            seconds[name].append(contenders[name]())

    def per_event(name: str, events: int) -> float:
        return round(statistics.median(seconds[name]) / max(events, 1) * 1e6, 3)

    by_core = {}
    for core in cores:
        rounds = sorted(seconds[core])
        count = max(read[core], 1)
        median = statistics.median(rounds)
        by_core[core] = {
            "events": read[core],
            "events/s": round(count / median) if median else None,
            "µs/event": round(median / count * 1e6, 3),
            "µs/event fastest": round(rounds[0] / count * 1e6, 3),
            "µs/event slowest": round(rounds[-1] / count * 1e6, 3),
        }
    baseline: dict[str, Any] = {
        "decode floor µs/event": per_event("decode floor", len(payloads)),
        "sdk": None,
    }
    if sdk is not None:
        baseline["sdk"] = {
            "package": f"ag-ui-protocol {version}",
            "accepted": sum(_accepts(validate, payload) for payload in payloads),
            "µs/event": per_event("sdk", len(payloads)),
        }
    active = next(iter(cores))
    with _on_core(cores[active]):
        alone = _stages_alone(pipeline, reads, repeat, max(read[active], 1))
    return {
        **by_core[active],
        "rounds": repeat,
        "µs/event by stage (alone)": alone,
        "by core": by_core,
        "baseline": baseline,
    }


def _stages_alone(
    pipeline: Pipeline, reads: list[bytes], repeat: int, read: int
) -> dict[str, float]:
    """Each stage's median µs/event alone over ``repeat`` rounds: parse fed ``reads``, each
    other stage fed the batches parse makes of them."""
    import statistics

    import anyio

    parse_seconds = []
    for _ in range(repeat):
        parser = pipeline.decoder(pipeline.context())
        started = time.process_time()
        for piece in reads:
            parser.feed(piece)
        parser.finish()
        parse_seconds.append(time.process_time() - started)
    stage_us = {"parse": statistics.median(parse_seconds) / read * 1e6}
    for name, factory in zip(pipeline.stage_names[1:], pipeline.stage_factories, strict=True):
        times = [anyio.run(stage_alone, pipeline, factory, reads) for _ in range(repeat)]
        stage_us[name] = statistics.median(times) / read * 1e6
    return {name: round(us, 3) for name, us in stage_us.items()}


def _payloads(pipeline: Pipeline, reads: list[bytes]) -> list[bytes]:
    """Each event's JSON as the parse stage decoded it (the events themselves let go).

    Copied out of what ``orjson.dumps`` returns: each of those keeps a 4 KiB
    allocation however short its JSON (orjson 3.13: 100,000 small events held
    390 MB; copied, 12).
    """
    import orjson

    parser = pipeline.decoder(pipeline.context())
    batches = [parser.feed(piece) for piece in reads] + [parser.finish()]
    return [bytes(memoryview(orjson.dumps(e))) for batch in batches for e in batch.events]


def _sdk_validate() -> tuple[str, Callable[[bytes], object]] | None:
    """The official SDK's consumer path (``TypeAdapter(Event).validate_json``), if installed."""
    try:
        from importlib.metadata import version

        from ag_ui.core import Event
        from pydantic import TypeAdapter
    except ImportError:
        return None
    return version("ag-ui-protocol"), TypeAdapter(Event).validate_json


def _accepts(validate: Callable[[bytes], object], payload: bytes) -> bool:
    """Whether the SDK validates ``payload`` (an event type it does not know fails: timed
    all the same, as a consumer built on it would pay for it)."""
    from pydantic import ValidationError

    try:
        validate(payload)
    except ValidationError:
        return False
    return True


def _uncollected(work: Callable[[], float]) -> float:
    """``work()``, with the cyclic collector off (as :func:`_cpu` times the pipeline)."""
    gc.collect()
    gc.disable()
    try:
        return work()
    finally:
        gc.enable()


async def stage_alone(pipeline: Pipeline, factory: StageFactory, reads: list[bytes]) -> float:
    """CPU seconds of one stage over the batches parse makes of ``reads`` (parsed untimed,
    afresh: a stage may change the events it is given)."""
    ctx = pipeline.context()
    parser = pipeline.decoder(ctx)
    batches = [parser.feed(piece) for piece in reads] + [parser.finish()]
    stage: Stage = factory(ctx)
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        for batch in batches:
            if batch.events:
                await stage.process(batch)
        await stage.finish()
        return time.process_time() - started
    finally:
        gc.enable()


COUNTED_ON = {"native": "native core", "pure": "pure Python core"}
"""How ``_cores.ACTIVE`` begins in a child on each core: the parent checks the one it asked for."""


def _counted(
    args: argparse.Namespace, source: str | None, body: bytes, count: int, core: str
) -> dict[str, Any]:
    """The whole pipeline's instructions per event on ``core`` over ``source`` (or the
    built-in workload's ``body``): this command, as a child on that one source and that
    core (``AGUI_PIPELINE_PURE=1`` in its environment for the pure one, unset for the
    native one), run twice under callgrind with ``PYTHONHASHSEED=0`` (a random seed moves
    dict probing by a few percent), once to the start of the pass and once through it;
    the difference over the events leaves start-up out."""
    import subprocess

    command = [sys.executable, "-m", "agui_pipeline", "bench"]
    command += [source or _workload_file(body)]
    for spec in args.middleware:
        command += ["--middleware", spec]
    if args.capabilities or source is None:
        command += ["--capabilities", args.capabilities or _workload_declaration()]
    setting = {_cores.PURE_SETTING: "1"} if core == "pure" else {}
    with _own_bytecode(setting) as env:
        measured = [*command, "--counted-pass", "measured"]
        subprocess.run(measured, env=env, capture_output=True, check=False)  # writes the bytecode
        start_up = _callgrind([*command, "--counted-pass", "start-up"], env, core)
        whole = _callgrind(measured, env, core)
    shown = "".join(f"{name}={value} " for name, value in setting.items())
    return {
        "instructions/event": round((whole - start_up) / max(count, 1)),
        "command": f"{shown}PYTHONHASHSEED=0 valgrind --tool=callgrind "
        + shlex.join(measured)
        + "  # less the same with --counted-pass start-up",
    }


def _workload_file(body: bytes) -> str:
    """The built-in workload as a file the child reads (where ``benchmarks/instructions.py``
    keeps it), rewritten if it is not this body."""
    import tempfile

    count = body.count(b"\n\n")  # one blank line ends each SSE event
    path = Path(tempfile.gettempdir()) / f"agui-workload-{count}.sse"
    if not path.exists() or path.read_bytes() != body:
        path.write_bytes(body)
    return str(path)


def _workload_declaration() -> str:
    """The workload's agent declaration as a file, for the child's ``--capabilities``."""
    import tempfile

    from agui_pipeline.testing.workload import DECLARATION

    path = Path(tempfile.gettempdir()) / "agui-workload-declaration.json"
    text = json.dumps(DECLARATION, indent=2)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return str(path)


@contextmanager
def _own_bytecode(setting: dict[str, str]) -> Iterator[dict[str, str]]:
    """The children's environment: this one's with ``setting`` (``AGUI_PIPELINE_PURE``, taken
    out otherwise) and a hash seed fixed, on a bytecode cache of this count's own
    (``PYTHONPYCACHEPREFIX``), written by an uncounted run of the pass first. A count is the
    difference of two children: were one to load bytecode that the other compiled (a test
    run writing the package's bytecode between them, or a source edited), the compiling
    would be counted as the pass's."""
    import tempfile

    env = {name: value for name, value in os.environ.items() if name != _cores.PURE_SETTING}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as cache:
        yield dict(env, PYTHONHASHSEED="0", PYTHONPYCACHEPREFIX=cache, **setting)


def _callgrind(command: list[str], env: dict[str, str], core: str) -> int:
    """Instructions callgrind counts for one run of ``command`` on ``core`` in ``env``."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        finished = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/out", *command],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    found = re.search(r"Collected : (\d+)", finished.stderr)
    if finished.returncode != 0 or found is None:
        tail = finished.stderr.strip().splitlines()[-5:]
        raise ValueError("--count: the callgrind run failed: " + " | ".join(tail))
    ran = finished.stdout.strip()
    if not ran.startswith(COUNTED_ON[core]):  # a count of the other core would mislead
        raise ValueError(f"--count: the child counted for the {core} core ran on {ran!r}")
    return int(found.group(1))


def _counted_child(pipeline: Pipeline, body: bytes, measured: bool) -> None:
    """What ``--count`` runs under callgrind: a short warm-up stream always (so the event
    loop's start and every first call are in both runs), ``body``'s pass in 64 KiB reads
    when ``measured``, as the timed whole-pipeline row reads it."""
    import anyio
    from agui_pipeline.testing.workload import chunks, encode_sse, events

    warm_up = [encode_sse(events(500, seed=1))]
    reads = chunks(body)  # in both runs: reading the source is not the pass

    async def passes() -> None:
        await _consume(pipeline, warm_up)
        if measured:
            await _consume(pipeline, reads)

    anyio.run(passes)


async def _consume(pipeline: Pipeline, source: list[bytes]) -> None:
    """One stream of ``source`` through ``pipeline``, its events let go."""
    async with pipeline.open(source) as stream:
        async for _batch in stream.batches():
            pass


def _live(
    pipeline: Pipeline, body: bytes, runs: int, repeat: int, transport: str
) -> dict[str, Any]:
    """``runs`` runs at once from a local ``agui-pipeline serve``, read through
    ``transport`` (httpx or aiohttp): client CPU per event."""
    import statistics
    import subprocess
    import tempfile

    import anyio

    try:
        from agui_pipeline.http.client import HttpAgent
    except ModuleNotFoundError as error:
        raise ValueError(f"--live needs the 'http' and 'serve' extras ({error})") from None
    transport_named(transport)  # a missing extra is told before the server starts
    with tempfile.TemporaryDirectory() as folder:
        recording = Path(folder) / "run.sse"
        recording.write_bytes(body)
        command = [sys.executable, "-m", "agui_pipeline", "serve", str(recording)]
        server = subprocess.Popen(
            [*command, "--port", "0", "--pause", "0.005"], stderr=subprocess.PIPE, text=True
        )
        try:
            assert server.stderr is not None
            line = server.stderr.readline()
            if " at " not in line:
                raise ValueError(f"the local server did not start: {line.strip()!r}")
            url = line.rsplit(" at ", 1)[1].strip()
            seen: list[int] = []

            async def all_runs() -> None:
                async with (
                    _pooled(transport, runs) as pool,
                    HttpAgent(url, pipeline=pipeline, transport=pool) as agent,
                ):

                    async def one(number: int) -> None:
                        body = {"threadId": f"t-{number}", "runId": f"r-{number}", "messages": []}
                        result = await agent.run(body)
                        seen.append(result.counters.delivered)

                    async with anyio.create_task_group() as group:
                        for number in range(runs):
                            group.start_soon(one, number)

            per_event = []
            for _ in range(repeat):
                seen.clear()
                cpu = _cpu(all_runs)
                per_event.append(cpu / max(sum(seen), 1) * 1e6)
        finally:
            server.terminate()
            server.wait(timeout=30)
    return {
        "runs": runs,
        "transport": transport,
        "events per run": max(seen, default=0),
        "client CPU µs/event": round(statistics.median(per_event), 2),
    }


@asynccontextmanager
async def _pooled(transport: str, runs: int) -> AsyncIterator[Transport]:
    """A transport with a connection per run and none kept alive, as a gateway opening
    runs would (``agui-pipeline serve`` closes idle connections after 5 s)."""
    if transport == "aiohttp":
        import aiohttp
        from agui_pipeline.http.aiohttp_transport import AiohttpTransport

        connector = aiohttp.TCPConnector(limit=runs, force_close=True)
        timeout = aiohttp.ClientTimeout(total=None, connect=60)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            yield AiohttpTransport(session)
        return
    import httpx
    from agui_pipeline.http.client import HttpxTransport

    limits = httpx.Limits(max_connections=runs, max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(None, connect=60)) as client:
        yield HttpxTransport(client)


def _text(report: dict[str, Any]) -> str:
    cores = report["cores"]
    lines = ["stages: " + " → ".join(report["stages"])]
    if cores["native unavailable"] is not None:
        lines.append(
            f"the native core is not available ({cores['native unavailable']}): "
            "the pure core alone is measured"
        )
    for row in report["sources"]:
        lines.append(
            f"{row['source']}: {row['events']:,} events, the contenders in turn in each of "
            f"{row['rounds']} rounds"
        )
        by_core = row["by core"]
        for core, figures in by_core.items():
            lines.append(_core_line(core, figures, row["rounds"], by_core))
        lines.append(f"  each stage alone, on the {cores['active']} core:")
        for name, us in row["µs/event by stage (alone)"].items():
            lines.append(f"    {name:<12} {us:8.3f} µs/event")
        baseline = row["baseline"]
        floor = baseline["decode floor µs/event"]
        lines.append(
            f"  baseline on the same events: decode floor (orjson.loads) {floor:.3f} µs/event; "
            + _times(by_core, floor)
            if floor
            else "  baseline: no events"
        )
        sdk = baseline["sdk"]
        if sdk is None:
            lines.append("  the official SDK (ag-ui-protocol) is not installed: not compared")
        else:
            lines.append(
                f"  {sdk['package']} (TypeAdapter(Event).validate_json): {sdk['µs/event']:.3f} "
                f"µs/event, {sdk['accepted']:,} of {row['events']:,} events accepted; "
                + _times(by_core, sdk["µs/event"])
            )
        for core, figures in by_core.items():
            counted = figures.get("counted")
            if counted:
                lines.append(
                    f"  counted under callgrind, {core} core: "
                    f"{counted['instructions/event']:,} instructions/event beside the timed "
                    f"{figures['µs/event']:.2f} µs/event; {counted['command']}"
                )
    live = report.get("live")
    if live:
        lines.append(
            f"live, {live['core']} core: {live['runs']} runs at once over {live['transport']}, "
            f"{live['events per run']} events each, one frame per write, 5 ms apart: "
            f"{live['client CPU µs/event']:.2f} µs/event client CPU"
        )
    lines.append(f"peak RSS: {report['peak RSS MiB']} MiB")
    return "\n".join(lines) + "\n"


def _core_line(
    core: str, figures: dict[str, Any], rounds: int, by_core: dict[str, dict[str, Any]]
) -> str:
    """One core's whole-pipeline figures; the pure core's line, beside a native one, says
    what share of its time the native core takes."""
    median, fastest = figures["µs/event"], figures["µs/event fastest"]
    slowest = figures["µs/event slowest"]
    spread = (slowest - fastest) / median * 100 if median else 0.0
    line = (
        f"  {core + ' core:':<13}{figures['events/s']:,} events/s, {median:.2f} µs/event "
        f"(median of {rounds} rounds; fastest {fastest:.2f}, slowest {slowest:.2f}: "
        f"a spread of {spread:.0f} %)"
    )
    native = by_core.get("native")
    if core == "pure" and native is not None and median:
        line += f"; the native core {native['µs/event'] / median:.2f}× that"
    return line


def _times(by_core: dict[str, dict[str, Any]], us: float) -> str:
    """How many times ``us`` each core's pipeline takes: "the native core 4.3× that, ..."."""
    return ", ".join(
        f"the {core} core {figures['µs/event'] / us:.2f}× that" for core, figures in by_core.items()
    )
