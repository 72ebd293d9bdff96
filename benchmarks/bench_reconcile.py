"""The reconcile benchmark: what comparing a stream with a full declaration adds.

The whole default pipeline (parse to dispatch, materialising the Conversation)
runs the realistic stream from :mod:`benchmarks.workload` as SSE in 64 KiB
reads, once with no declaration (reconcile is then a pass-through) and once
with a declaration that fills every group and field — tools listed, subagents
listed, every boolean set — so every event type reconcile can read goes
through its handler. The figures: the median of the per-round ratios (the
target is under 10 % added), and — steadier on a busy machine — the time
reconcile's own ``process`` takes inside the warm pipeline, per event and
as a share of everything else.

    python -m benchmarks.bench_reconcile [--events N] [--repeat R]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import anyio
from agui_pipeline import Batch, Pipeline
from agui_pipeline.stages.reconcile import Reconcile

from .timing import median, ratio, rounds
from .workload import _TOOLS, chunks, encode_sse, events

FULL_DECLARATION: dict[str, Any] = {
    "identity": {
        "name": "bench",
        "type": "custom",
        "description": "d",
        "version": "1.0.0",
        "provider": "p",
        "documentationUrl": "https://example.com",
        "metadata": {"k": "v"},
    },
    "transport": {
        "streaming": True,
        "websocket": False,
        "httpBinary": False,
        "pushNotifications": False,
        "resumable": False,
    },
    "tools": {
        "supported": True,
        "parallelCalls": False,
        "clientProvided": True,
        "items": [{"name": name, "description": name} for name in _TOOLS],
    },
    "output": {"structuredOutput": False, "supportedMimeTypes": ["text/plain"]},
    "state": {"snapshots": True, "deltas": True, "memory": False, "persistentState": True},
    "multiAgent": {
        "supported": True,
        "delegation": True,
        "handoffs": False,
        "subagents": [{"name": "researcher"}],
    },
    "reasoning": {"supported": True, "streaming": True, "encrypted": False},
    "multimodal": {
        "input": {"image": True, "audio": False, "video": False, "pdf": True, "file": False},
        "output": {"image": False, "audio": False},
    },
    "execution": {
        "codeExecution": False,
        "sandboxed": True,
        "maxIterations": 20,
        "maxExecutionTime": 60_000,
    },
    "humanInTheLoop": {
        "supported": True,
        "approvals": True,
        "interventions": False,
        "feedback": False,
        "interrupts": True,
        "approveWithEdits": False,
    },
    "custom": {"bench": True},
}


class _Timed(Reconcile):
    """Reconcile, adding the time its own ``process`` takes to ``spent``."""

    spent = 0.0

    async def process(self, batch: Batch) -> Batch:
        started = time.perf_counter()
        out = await super().process(batch)
        _Timed.spent += time.perf_counter() - started
        return out


def run_through(pipeline: Pipeline, reads: list[bytes]) -> int:
    result = anyio.run(pipeline.run, reads)
    assert result.verdict.completed, result.verdict
    return len(result.events)


def measure(n: int, repeat: int) -> dict[str, Any]:
    reads = chunks(encode_sse(events(n)))
    plain = Pipeline()
    declared = Pipeline(capabilities=FULL_DECLARATION)
    assert declared.options.capabilities is not None
    without_reconcile = Pipeline().without("reconcile")
    timed = declared.replace("reconcile", _Timed)
    times = rounds(
        {
            "no reconcile stage": lambda: run_through(without_reconcile, reads),
            "no declaration": lambda: run_through(plain, reads),
            "full declaration": lambda: run_through(declared, reads),
        },
        repeat,
    )
    # Reconcile's own share, measured inside the (warm) pipeline in separate runs.
    shares = []
    for _ in range(repeat):
        _Timed.spent = 0.0
        started = time.perf_counter()
        run_through(timed, reads)
        shares.append((_Timed.spent, time.perf_counter() - started))
    spent, total = sorted(shares)[len(shares) // 2]
    return {
        "medians": {name: median(seconds) for name, seconds in times.items()},
        "added": ratio(times["full declaration"], times["no declaration"]) - 1,
        "stage": ratio(times["full declaration"], times["no reconcile stage"]) - 1,
        "own ns/event": spent / n * 1e9,
        "own share": spent / (total - spent),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    figures = measure(args.events, args.repeat)
    print(
        f"full pipeline, realistic stream: {args.events:,} events as SSE in 64 KiB reads, "
        f"median of {args.repeat} interleaved rounds"
    )
    print(f"{'pipeline':<22} {'events/s':>12} {'ns/event':>9}")
    for name, seconds in figures["medians"].items():
        print(f"{name:<22} {args.events / seconds:>12,.0f} {seconds / args.events * 1e9:>9.0f}")
    print(f"full declaration vs none:           {figures['added']:+.1%} (target < +10%)")
    print(f"full declaration vs no reconcile:   {figures['stage']:+.1%}")
    print(
        f"reconcile's own time, full declaration: {figures['own ns/event']:.0f} ns/event, "
        f"{figures['own share']:+.1%} on the rest of the pipeline"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
