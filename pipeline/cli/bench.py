"""``agui-pipeline bench``: the installed pipeline's throughput, on your recordings and setup.

``benchmarks/`` (the project's comparison suite) is not installed; this is what
a user can run: the default pipeline, with their middleware
(``--middleware module:factory``) and declaration (``--capabilities F``), over
their recordings (``SOURCE...``) or the built-in realistic workload
(:mod:`agui_pipeline.testing.workload`). It reports events/s for the whole pipeline,
with the spread of its rounds, µs/event for each stage alone, and peak memory;
beside it, on the same events, a baseline that gives the figure a scale: the
decode floor (``orjson.loads`` of each event, what any Python consumer pays)
and, when ``ag-ui-protocol`` is installed, the official SDK's parse-and-validate
pass (``TypeAdapter(Event).validate_json``). ``--live`` adds the per-event CPU
of ``--runs`` runs read at once over HTTP from a local ``agui-pipeline serve``
(the ``http`` and ``serve`` extras), one frame per write. ``--count`` adds the
whole pipeline's instructions per event under callgrind, the repeatable figure
(the method of ``benchmarks/instructions.py``). Text, or ``--format json`` for a
CI job to track. Times are this process's CPU time over ``--repeat`` rounds: the
median, and the fastest and slowest round.
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
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

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
for the whole pipeline with the spread of its rounds, microseconds per event for
each stage alone, and peak memory; beside it, on the same events, a baseline:
the decode floor (orjson.loads of each event, what any Python consumer pays)
and, when ag-ui-protocol is installed, the official SDK's parse-and-validate
pass. --live adds the per-event CPU of --runs runs read at once over HTTP from a
local `agui-pipeline serve` (the 'http' and 'serve' extras). --count adds the
whole pipeline's instructions per event, counted under valgrind's callgrind.
Times are this process's CPU time over --repeat rounds: the median, the fastest
and the slowest. A machine shared with other work moves them: compare a run with
its baseline, not with another machine's figures; a count does not move."""

EXIT_STATUSES = """\
exit status:
  0  measured
  2  a usage or I/O error: a bad option, a file that cannot be read, a middleware
     that does not load, a missing extra for --live, a closed pipe, --count
     without valgrind on PATH or a callgrind run that failed"""


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
        help="also count the whole pipeline's instructions per event under callgrind (valgrind)",
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
    report: dict[str, Any] = {"stages": pipeline.stage_names, "sources": []}
    named = [(name, _read(name)) for name in args.sources] or [
        (f"built-in workload ({args.events:,} events)", encode_sse(events(args.events)))
    ]
    if args.counted_pass is not None:
        _counted_child(pipeline, named[0][1], args.counted_pass == "measured")
        return 0
    for name, body in named:
        row = {"source": name, **_batch(pipeline, body, args.repeat)}
        row["baseline"] = _baseline(pipeline, body, args.repeat)
        if args.count:
            row["counted"] = _counted(args, name if args.sources else None, body, row["events"])
        report["sources"].append(row)
    if args.live:
        body = named[0][1] if args.sources else encode_sse(events(args.live_events))
        report["live"] = _live(pipeline, body, args.runs, args.repeat, args.transport)
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


def _batch(pipeline: Pipeline, body: bytes, repeat: int) -> dict[str, Any]:
    """The whole pipeline over ``body`` in 64 KiB reads, then each stage alone."""
    import statistics

    import anyio
    from agui_pipeline.testing.workload import chunks

    reads = chunks(body)
    counted: list[int] = []

    async def whole() -> None:
        count = 0
        async with pipeline.open(reads) as stream:
            async for batch in stream.batches():
                count += len(batch)
        counted.append(stream.context.counters.read)

    rounds = sorted(_cpu(whole) for _ in range(repeat))
    seconds = statistics.median(rounds)
    read = max(counted[-1], 1)
    stage_us: dict[str, float] = {}
    parse_seconds = []
    for _ in range(repeat):
        parser = pipeline.decoder(pipeline.context())
        started = time.process_time()
        for piece in reads:
            parser.feed(piece)
        parser.finish()
        parse_seconds.append(time.process_time() - started)
    stage_us["parse"] = statistics.median(parse_seconds) / read * 1e6
    for name, factory in zip(pipeline.stage_names[1:], pipeline.stage_factories, strict=True):
        times = [anyio.run(stage_alone, pipeline, factory, reads) for _ in range(repeat)]
        stage_us[name] = statistics.median(times) / read * 1e6
    return {
        "events": counted[-1],
        "events/s": round(read / seconds) if seconds else None,
        "µs/event": round(seconds / read * 1e6, 3),
        "rounds": repeat,
        "µs/event fastest": round(rounds[0] / read * 1e6, 3),
        "µs/event slowest": round(rounds[-1] / read * 1e6, 3),
        "µs/event by stage (alone)": {name: round(us, 3) for name, us in stage_us.items()},
    }


def _baseline(pipeline: Pipeline, body: bytes, repeat: int) -> dict[str, Any]:
    """What the same events cost with no pipeline at all, timed as the pipeline is: the
    decode floor (``orjson.loads``), and the official SDK's validation when installed.

    Both take each event's JSON as the parse stage found it, so a recording's framing
    (comments, several ``data`` lines) costs them nothing it would cost the pipeline:
    a floor, not a rival.
    """
    import statistics

    import orjson
    from agui_pipeline.testing.workload import chunks

    payloads = _payloads(pipeline, chunks(body))
    count = max(len(payloads), 1)

    def per_event(work: Callable[[bytes], object]) -> float:
        def timed() -> float:
            started = time.process_time()
            for payload in payloads:
                work(payload)
            return time.process_time() - started

        return round(statistics.median(_uncollected(timed) for _ in range(repeat)) / count * 1e6, 3)

    baseline: dict[str, Any] = {"decode floor µs/event": per_event(orjson.loads)}
    sdk = _sdk_validate()
    if sdk is not None:
        version, validate = sdk
        accepted = sum(_accepts(validate, payload) for payload in payloads)
        baseline["sdk"] = {
            "package": f"ag-ui-protocol {version}",
            "accepted": accepted,
            "µs/event": per_event(lambda payload: _accepts(validate, payload)),
        }
    else:
        baseline["sdk"] = None
    return baseline


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


def _counted(
    args: argparse.Namespace, source: str | None, body: bytes, count: int
) -> dict[str, Any]:
    """The whole pipeline's instructions per event over ``source`` (or the built-in
    workload's ``body``): this command, as a child on that one source, run twice under
    callgrind with ``PYTHONHASHSEED=0`` (a random seed moves dict probing by a few
    percent), once to the start of the pass and once through it; the difference over
    the events leaves start-up out."""
    command = [sys.executable, "-m", "agui_pipeline", "bench"]
    command += [source or _workload_file(body)]
    for spec in args.middleware:
        command += ["--middleware", spec]
    if args.capabilities or source is None:
        command += ["--capabilities", args.capabilities or _workload_declaration()]
    start_up = _callgrind([*command, "--counted-pass", "start-up"])
    whole = _callgrind([*command, "--counted-pass", "measured"])
    return {
        "instructions/event": round((whole - start_up) / max(count, 1)),
        "command": "PYTHONHASHSEED=0 valgrind --tool=callgrind "
        + shlex.join([*command, "--counted-pass", "measured"])
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


def _callgrind(command: list[str]) -> int:
    """Instructions callgrind counts for one run of ``command``."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        finished = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/out", *command],
            env=dict(os.environ, PYTHONHASHSEED="0"),
            capture_output=True,
            text=True,
            check=False,
        )
    found = re.search(r"Collected : (\d+)", finished.stderr)
    if finished.returncode != 0 or found is None:
        tail = finished.stderr.strip().splitlines()[-5:]
        raise ValueError("--count: the callgrind run failed: " + " | ".join(tail))
    return int(found.group(1))


def _counted_child(pipeline: Pipeline, body: bytes, measured: bool) -> None:
    """What ``--count`` runs under callgrind: a short warm-up stream always (so the event
    loop's start and every first call are in both runs), ``body``'s pass in 64 KiB reads
    when ``measured``, as the timed whole-pipeline row reads it."""
    import anyio
    from agui_pipeline.testing.workload import chunks, encode_sse, events

    warm_up = [encode_sse(events(500, seed=1))]
    reads = chunks(body)  # in both runs: reading the source is not the pass

    async def consume(source: list[bytes]) -> None:
        async with pipeline.open(source) as stream:
            async for _batch in stream.batches():
                pass

    async def passes() -> None:
        await consume(warm_up)
        if measured:
            await consume(reads)

    anyio.run(passes)


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
    lines = ["stages: " + " → ".join(report["stages"])]
    for row in report["sources"]:
        median, fastest, slowest = row["µs/event"], row["µs/event fastest"], row["µs/event slowest"]
        spread = (slowest - fastest) / median * 100 if median else 0.0
        lines.append(
            f"{row['source']}: {row['events']:,} events, {row['events/s']:,} events/s, "
            f"{median:.2f} µs/event (median of {row['rounds']} rounds; fastest {fastest:.2f}, "
            f"slowest {slowest:.2f}: a spread of {spread:.0f} %)"
        )
        for name, us in row["µs/event by stage (alone)"].items():
            lines.append(f"  {name:<12} {us:8.3f} µs/event")
        baseline = row["baseline"]
        floor = baseline["decode floor µs/event"]
        lines.append(
            f"  baseline on the same events: decode floor (orjson.loads) {floor:.3f} µs/event, "
            f"the pipeline {median / floor:.1f}× that"
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
                f"the pipeline {median / sdk['µs/event']:.2f}× that"
            )
        counted = row.get("counted")
        if counted:
            lines.append(
                f"  counted under callgrind: {counted['instructions/event']:,} instructions/event"
                f" beside the timed {median:.2f} µs/event; {counted['command']}"
            )
    live = report.get("live")
    if live:
        lines.append(
            f"live: {live['runs']} runs at once over {live['transport']}, "
            f"{live['events per run']} events each, one frame per write, 5 ms apart: "
            f"{live['client CPU µs/event']:.2f} µs/event client CPU"
        )
    lines.append(f"peak RSS: {report['peak RSS MiB']} MiB")
    return "\n".join(lines) + "\n"
