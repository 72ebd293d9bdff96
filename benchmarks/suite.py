"""``python -m benchmarks``: this project's stages and pipeline next to its peers.

Four parts, every figure measured in this one run:

1. **Stages** — each stage of the default pipeline alone (fed the batches
   parse made from 64 KiB reads) and the pipeline built up stage by stage.
2. **Peers** — the whole default pipeline (reconcile holding a full
   declaration, dispatch materialising the Conversation) beside bare
   ``orjson.loads`` per frame and the official Python SDK, timed in the same
   interleaved rounds; the TypeScript client beside the same pipeline on a
   shorter stream, because its cost per event grows with the run.
3. **Scaling** — events/s from 1,000 events up to ``--max`` (default 1,000,000),
   every contender fed from memory, and this project's pipeline also reading the
   stream from a file (the input not held in memory, as ``agui-pipeline check``).
4. **Memory** — peak RSS and tracemalloc peak for ``--max`` events with no
   Conversation (events dispatched and forgotten), in a child process.
5. **Live** — ``bench_live``: ``--live-runs`` runs at once from ``agui-pipeline
   serve``, one frame per write, client CPU per event beside hand-rolled httpx
   consumers (its plot goes to ``benchmarks/results/live.png``).
6. **Whole process** — ``bench_check``: ``agui-pipeline check FILE`` on
   ``--check-events`` events beside the SDK's parse-only pass as a process of its
   own, start-up included.

The plot goes to ``benchmarks/results/bench.png`` (``--docs`` copies it to
``docs/bench.png``), the figures to ``benchmarks/results/results.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from agui_pipeline import Pipeline, Source
from agui_pipeline.cli.bench import stage_alone
from agui_pipeline.stage import StageFactory

from . import peers
from .bench_parse import decode_with_parse, frame_payloads
from .bench_parse import measure as measure_parse
from .timing import SelfTimed, Work, median, ratio, rounds
from .workload import DECLARATION, chunks, encode_jsonl, encode_sse, events

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DOCS_PLOT = ROOT / "docs" / "bench.png"
SCALE_SIZES = (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000)
TS_SIZES = (1_000, 3_000, 10_000, 30_000)
OURS = "agui-pipeline (whole pipeline)"
OURS_FROM_FILE = "agui-pipeline (whole pipeline, stream read from a file)"
TARGET_RATE = 250_000
"""Issue 7's target for the whole default pipeline on this machine class (≈ 4 µs/event)."""


def proto_frames(stream: list[dict[str, Any]]) -> bytes | None:
    """The stream as HTTP + Protobuf frames, or ``None`` without the protobuf runtime."""
    try:
        from agui_pipeline._proto.codec import encode_frames
    except ImportError:
        return None
    return encode_frames(stream)


def default_pipeline(*, conversation: bool = True) -> Pipeline:
    """The pipeline every figure of this project is for: the default one, fully declared."""
    return Pipeline(capabilities=DECLARATION, conversation=conversation)


# -- timing this project ---------------------------------------------------------------


async def _consume(pipeline: Pipeline, reads: Source) -> int:
    """Read a whole stream as an application would, keeping nothing but the count."""
    count = 0
    async with pipeline.open(reads) as stream:
        async for batch in stream.batches():
            count += len(batch)
    if not stream.verdict.completed:
        raise RuntimeError(f"the benchmark stream was not accepted: {stream.verdict}")
    return count


def pipeline_work(pipeline: Pipeline, reads: Source, loops: int = 1) -> SelfTimed:
    """``loops`` streams through ``pipeline``, timed inside one event loop. ``reads`` is
    the stream in memory, or a file read as ``agui-pipeline check`` reads one (the input
    not held in memory)."""

    async def timed() -> float:
        gc.collect()
        gc.disable()
        try:
            started = time.process_time()
            for _ in range(loops):
                await _consume(pipeline, reads)
            return time.process_time() - started
        finally:
            gc.enable()

    return SelfTimed(lambda: anyio.run(timed))


def stage_work(pipeline: Pipeline, factory: StageFactory, reads: list[bytes]) -> SelfTimed:
    """One stage alone over the batches parse makes from ``reads`` (parsed afresh, untimed):
    the same measure ``agui-pipeline bench`` reports per stage."""
    return SelfTimed(lambda: anyio.run(stage_alone, pipeline, factory, reads))


def loops_for(n: int) -> int:
    """Streams per timed call, so a short stream is timed over ~100,000 events."""
    return max(1, 100_000 // n)


# -- the parts ---------------------------------------------------------------------------


@dataclass
class Report:
    events: int
    repeat: int
    stages: list[dict[str, Any]] = field(default_factory=list)
    peers: list[dict[str, Any]] = field(default_factory=list)
    ts: dict[str, Any] | None = None
    scaling: dict[str, dict[int, float]] = field(default_factory=dict)
    memory: dict[str, Any] | None = None
    parse: list[dict[str, Any]] = field(default_factory=list)
    live: dict[str, Any] | None = None
    check: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def stages_part(report: Report, reads: list[bytes]) -> None:
    n, repeat = report.events, report.repeat
    full = default_pipeline()
    names = full.stage_names[1:]
    works: dict[str, Work] = {"alone parse": lambda: decode_with_parse(reads)}
    for name, factory in zip(names, full.stage_factories, strict=True):
        works[f"alone {name}"] = stage_work(full, factory, reads)
    prefix = full
    for name in reversed(names):
        works[f"upto {name}"] = pipeline_work(prefix, reads)
        prefix = prefix.without(name)
    works["upto parse"] = pipeline_work(prefix, reads)
    times = rounds(works, repeat)
    for name in ["parse", *names]:
        alone, upto = median(times[f"alone {name}"]), median(times[f"upto {name}"])
        report.stages.append(
            {
                "stage": name,
                "alone_us": alone / n * 1e6,
                "upto_us": upto / n * 1e6,
                "upto_rate": n / upto,
            }
        )


def peers_part(
    report: Report,
    body: bytes,
    reads: list[bytes],
    jsonl_reads: list[bytes],
    proto_reads: list[bytes] | None = None,
) -> None:
    n, repeat = report.events, report.repeat
    payloads = frame_payloads(body, "sse")
    works: dict[str, Work] = {
        "pipeline": pipeline_work(default_pipeline(), reads),
        "pipeline-jsonl": pipeline_work(default_pipeline(), jsonl_reads),
        "orjson": peers.prepare_orjson(payloads),
    }
    if proto_reads is not None:
        proto_pipeline = Pipeline(capabilities=DECLARATION, framing="proto")
        works["pipeline-proto"] = pipeline_work(proto_pipeline, proto_reads)
    sdk = peers.prepare_sdk(payloads)
    if sdk is not None:
        works["sdk"] = sdk
    times = rounds(works, repeat)
    labels = {
        "pipeline": "agui-pipeline: the whole default pipeline (SSE, 64 KiB reads)",
        "pipeline-jsonl": "agui-pipeline: the same, the stream as JSON lines (64 KiB reads)",
        "pipeline-proto": "agui-pipeline: the same, the stream as protobuf frames (64 KiB reads)",
        "orjson": "bare orjson.loads per frame (decode only)",
        "sdk": f"ag-ui-protocol {peers.sdk_version()}: TypeAdapter(Event).validate_json per frame",
    }
    for name in works:
        report.peers.append(
            {
                "name": labels[name],
                "key": name,
                "rate": n / median(times[name]),
                "relative": ratio(times["pipeline"], times[name]),
            }
        )
    if sdk is None:
        report.notes.append("Python SDK not installed (pip install -e . --group bench): skipped")


def ts_part(report: Report, ts_n: int) -> None:
    reason = peers.ts_available()
    if reason is not None:
        report.notes.append(reason)
        print(f"  {reason}", file=sys.stderr)
        return
    repeat = 3 if ts_n <= 3_000 else 1  # 10,000 events take node ~20 s
    stream = events(ts_n)
    body = encode_sse(stream)
    reads = chunks(body)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "stream.sse"
        path.write_bytes(body)
        ts_seconds = peers.run_ts(path, repeat + 1)["seconds"][1:]  # the first warms the JIT
    ours = rounds({"pipeline": pipeline_work(default_pipeline(), reads, loops_for(ts_n))}, repeat)
    ours_seconds = median(ours["pipeline"]) / loops_for(ts_n)
    report.ts = {
        "events": ts_n,
        "version": peers.ts_version(),
        "ts_rate": ts_n / median(ts_seconds),
        "pipeline_rate": ts_n / ours_seconds,
    }


def scaling_part(report: Report, largest: int, ts_largest: int) -> None:
    sizes = [size for size in SCALE_SIZES if size <= largest]
    ts_reason = peers.ts_available() if ts_largest else "TypeScript client not requested"
    files = Path(tempfile.mkdtemp())
    for size in sizes:
        print(f"  scaling: {size:,} events", file=sys.stderr)
        stream = events(size)
        body = encode_sse(stream)
        del stream
        reads, payloads = chunks(body), frame_payloads(body, "sse")
        stored = files / f"{size}.sse"
        stored.write_bytes(body)
        loops = loops_for(size)
        works: dict[str, Work] = {
            OURS: pipeline_work(default_pipeline(), reads, loops),
            OURS_FROM_FILE: pipeline_work(default_pipeline(), stored, loops),
            "orjson.loads per frame": _looped(peers.prepare_orjson(payloads), loops),
        }
        sdk = peers.prepare_sdk(payloads)
        if sdk is not None:
            works[f"ag-ui-protocol {peers.sdk_version()} (validate_json)"] = _looped(sdk, loops)
        repeat = min(report.repeat, 3 if size >= 300_000 else 5)
        times = rounds(works, repeat)
        for name, seconds in times.items():
            report.scaling.setdefault(name, {})[size] = size * loops / median(seconds)
        del reads, payloads
        if ts_reason is None and size <= ts_largest and size in TS_SIZES:
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "stream.sse"
                path.write_bytes(body)
                reps = 3 if size <= 3_000 else 1
                seconds = peers.run_ts(path, reps + 1)["seconds"][1:]
            name = f"@ag-ui/client {peers.ts_version()} (node, whole pipeline)"
            report.scaling.setdefault(name, {})[size] = size / median(seconds)
        stored.unlink()
    files.rmdir()


def _looped(work: Callable[[], object], loops: int) -> Callable[[], object]:
    def run() -> None:
        for _ in range(loops):
            work()

    return run


def memory_part(report: Report, n: int) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", str(n)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode != 0:
        report.notes.append(f"memory run failed: {done.stderr.strip()[-300:]}")
        return
    report.memory = json.loads(done.stdout.strip().splitlines()[-1])


def live_part(report: Report, runs: int, per_run: int, out: Path) -> None:
    """The live path (``bench_live``): one frame per write, ``runs`` at once, 5 ms apart."""
    from . import bench_live

    report.live = bench_live.measure(runs, per_run, 0.005, report.repeat)
    bench_live.plot(report.live, out / "live.png")


def check_part(report: Report, n: int) -> None:
    """``check FILE`` and the SDK's pass, each a whole process (``bench_check``)."""
    from . import bench_check

    report.check = bench_check.measure(n, report.repeat, sys.executable)


# -- output ------------------------------------------------------------------------------


def render(report: Report) -> str:
    """The report as Markdown (what docs/performance.md holds)."""
    n = report.events
    lines = [
        f"Machine: {platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}; stream: {n:,} realistic events (SSE, 64 KiB reads); "
        f"median of {report.repeat} interleaved rounds; events per CPU-second of this "
        "process (the TypeScript client: node's own wall clock).",
        "",
    ]
    if report.parse:
        lines += [
            "| parse vs bare orjson | parse ev/s | orjson ev/s | parse / orjson | target |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for row in report.parse:
            lines.append(
                f"| {row['framing']} | {row['parse_rate']:,.0f} | {row['orjson_rate']:,.0f} | "
                f"{row['ratio']:.2f}× | ≤ {row['target']:.1f}× |"
            )
        lines.append("")
    if report.stages:
        lines += [
            "| stage | alone µs/event | pipeline up to here µs/event | events/s up to here |",
            "| --- | ---: | ---: | ---: |",
        ]
        for row in report.stages:
            lines.append(
                f"| {row['stage']} | {row['alone_us']:.2f} | {row['upto_us']:.2f} | "
                f"{row['upto_rate']:,.0f} |"
            )
        lines.append("")
    if report.peers:
        lines += [
            f"| same {n:,} events, same rounds | events/s | throughput ÷ agui-pipeline's |",
            "| --- | ---: | ---: |",
        ]
        for row in report.peers:
            lines.append(f"| {row['name']} | {row['rate']:,.0f} | {row['relative']:.2f}× |")
        lines.append("")
    if report.ts:
        ts = report.ts
        lines += [
            f"| {ts['events']:,} events (TypeScript peer) | events/s |",
            "| --- | ---: |",
            f"| agui-pipeline, whole default pipeline | {ts['pipeline_rate']:,.0f} |",
            f"| @ag-ui/client {ts['version']} on node, whole pipeline | {ts['ts_rate']:,.0f} |",
            f"| ratio | {ts['pipeline_rate'] / ts['ts_rate']:,.0f}× |",
            "",
        ]
    if report.scaling:
        sizes = sorted({size for series in report.scaling.values() for size in series})
        lines += [
            "| events/s by stream length | " + " | ".join(f"{s:,}" for s in sizes) + " |",
            "| --- |" + " ---: |" * len(sizes),
        ]
        for name, series in report.scaling.items():
            cells = [f"{series[s]:,.0f}" if s in series else "" for s in sizes]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        for name in (OURS, OURS_FROM_FILE):
            ours = report.scaling.get(name, {})
            if 10_000 in ours and max(ours) > 10_000:
                last = max(ours)
                drift = ours[last] / ours[10_000] - 1
                lines.append("")
                lines.append(
                    f"Flatness, {name}: events/s at {last:,} events is {drift:+.0%} against "
                    "10,000 events."
                )
        lines.append("")
    if report.memory:
        memory = report.memory
        for kind, how in (
            ("forwarding", "with no Conversation (a consumer that forwards events)"),
            ("judging", "judged as check and drain() judge them, the Conversation held"),
        ):
            run = memory[kind]
            lines.append(
                f"Memory, {run['events']:,} events {how}: peak RSS {run['peak_rss_mb']:.0f} MB "
                f"(the interpreter and imports alone: {run['baseline_rss_mb']:.0f} MB); "
                f"tracemalloc peak {run['tracemalloc_peak_mb']:.1f} MB; {run['seconds']:.1f} s "
                "including making the stream."
            )
        per_run = memory["per_run"]
        held, bare = per_run["with_conversation"], per_run["without_conversation"]
        lines.append(
            f"What a finished run leaves (its {per_run['items_per_run']} messages and tool "
            f"calls, until max_items): {held['bytes_per_item']:,} bytes an item with the "
            f"Conversation, {bare['bytes_per_item']:,} without."
        )
        lines.append("")
    if report.live:
        from .bench_live import render as render_live

        lines += [render_live(report.live)]
    if report.check:
        from .bench_check import render as render_check

        lines += [render_check(report.check)]
    lines += [f"- {note}" for note in report.notes]
    return "\n".join(lines).rstrip() + "\n"


def plot(report: Report, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        report.notes.append("matplotlib not installed (pip install -e . --group bench): no plot")
        return False
    figure, axes = plt.subplots(figsize=(8, 5), dpi=110)
    for name, series in report.scaling.items():
        sizes = sorted(series)
        axes.plot(sizes, [series[s] for s in sizes], marker="o", label=name)
    axes.axhline(TARGET_RATE, color="grey", linestyle="--", linewidth=1)
    axes.annotate(
        f"target {TARGET_RATE:,} events/s",
        (0.01, TARGET_RATE),
        xycoords=("axes fraction", "data"),
        xytext=(0, 3),
        textcoords="offset points",
        fontsize=8,
        color="grey",
    )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("events in the stream")
    axes.set_ylabel("events / s (higher is better)")
    axes.set_title("AG-UI stream consumption: throughput against stream length")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return True


# -- the command -------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--events", type=int, default=100_000, help="stream length for the tables")
    parser.add_argument("--repeat", type=int, default=5, help="rounds per measurement")
    parser.add_argument("--max", type=int, default=1_000_000, help="largest scaling/memory size")
    parser.add_argument(
        "--ts-events",
        type=int,
        default=10_000,
        help="stream length for the TypeScript pair, and its largest scaling size (0: skip)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="20,000 events, --max 100,000, 3 rounds"
    )
    parser.add_argument(
        "--live-runs", type=int, default=100, help="runs at once in the live part (0: skip)"
    )
    parser.add_argument("--live-events", type=int, default=450, help="events per live run")
    parser.add_argument(
        "--check-events",
        type=int,
        default=300_000,
        help="events in the whole-process check comparison (0: skip)",
    )
    parser.add_argument("--docs", action="store_true", help="also copy the plot to docs/bench.png")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"results folder ({RESULTS})")
    args = parser.parse_args(argv)
    if args.quick:
        args.events, args.max, args.repeat = 20_000, 100_000, 3
        args.ts_events = min(args.ts_events, 3_000)
        args.live_runs, args.live_events = min(args.live_runs, 20), min(args.live_events, 200)
        args.check_events = min(args.check_events, 20_000)
    report = Report(args.events, args.repeat)
    load_before = os.getloadavg()[0]
    stream = events(args.events)
    body = encode_sse(stream)
    reads = chunks(body)
    jsonl_body = encode_jsonl(stream)
    jsonl_reads = chunks(jsonl_body)
    proto_body = proto_frames(stream)
    proto_reads = None if proto_body is None else chunks(proto_body)
    wire = [f"SSE {len(body):,}", f"JSON lines {len(jsonl_body):,}"]
    if proto_body is None:
        report.notes.append("protobuf runtime not installed (pip install -e '.[proto]'): skipped")
    else:
        wire.append(f"protobuf {len(proto_body):,}")
    sizes = ", ".join(wire)
    report.notes.append(f"Bytes on the wire for the same {args.events:,} events: {sizes}.")
    del stream, jsonl_body, proto_body

    print("parse vs bare orjson ...", file=sys.stderr)
    for figure in measure_parse(args.events, args.repeat):
        report.parse.append(
            {
                "framing": figure.framing,
                "parse_rate": figure.parse_rate,
                "orjson_rate": figure.orjson_rate,
                "ratio": figure.ratio,
                "target": figure.target,
            }
        )
    print("stages ...", file=sys.stderr)
    stages_part(report, reads)
    print("peers ...", file=sys.stderr)
    peers_part(report, body, reads, jsonl_reads, proto_reads)
    if args.ts_events:
        print("TypeScript peer ...", file=sys.stderr)
        ts_part(report, args.ts_events)
    del body, reads, jsonl_reads, proto_reads
    print("scaling ...", file=sys.stderr)
    scaling_part(report, args.max, args.ts_events)
    print("memory ...", file=sys.stderr)
    memory_part(report, args.max)
    if args.live_runs:
        print("live ...", file=sys.stderr)
        live_part(report, args.live_runs, args.live_events, args.out)
    if args.check_events:
        print("whole process ...", file=sys.stderr)
        check_part(report, args.check_events)

    report.notes.append(
        f"Load average (1 min) on this {os.cpu_count()}-core machine: {load_before:.1f} at the "
        f"start, {os.getloadavg()[0]:.1f} at the end — other work running at the same time "
        "slows every contender alike within a round, but moves the absolute figures."
    )
    args.out.mkdir(parents=True, exist_ok=True)
    image = args.out / "bench.png"
    if plot(report, image) and args.docs:
        DOCS_PLOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(image, DOCS_PLOT)
    text = render(report)
    (args.out / "results.md").write_text(text)
    (args.out / "results.json").write_text(json.dumps(report.__dict__, indent=2, default=str))
    print(text)
    return 0
