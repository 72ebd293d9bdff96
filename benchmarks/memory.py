"""The memory runs: ``python -m benchmarks.memory [N]`` (N workload events, 1,000,000).

Each measurement runs in a process of its own (peak RSS only grows), and the result
is one JSON line:

- ``forwarding``: N workload events (made and encoded as they are read, never all in
  memory) through the default pipeline with no Conversation, events dispatched and
  forgotten — a consumer that only forwards them;
- ``judging``: the same stream as ``agui-pipeline check`` and ``drain()`` judge it, the
  Conversation materialised, no event kept;
- ``per_run``: what a finished run leaves behind, measured on a stream of many copies
  of ``examples/weather.sse`` (five messages and tool calls a run): the bytes retained
  (tracemalloc, after the stream) per run and per item, with and without the
  Conversation, at two stream lengths, so the growth is a slope and not a guess.

For each stream: peak RSS, RSS before the stream, the tracemalloc peak of a second
pass (Python allocations only; slower, so timed apart), and what the stream held —
its messages and tool calls (I in the formula of docs/limits.md) and the characters of text
the Conversation holds (C).
"""

from __future__ import annotations

import gc
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import orjson
from agui_pipeline import Pipeline, RunResult

from .workload import DECLARATION, iter_sse_chunks

ROOT = Path(__file__).resolve().parent.parent
RUNS = (2_000, 4_000)
"""The two lengths of the many-runs stream (runs of the weather example)."""


def _peak_rss_mb() -> float:
    """This process's peak resident set so far, in MiB."""
    try:
        # VmHWM starts afresh at exec; ru_maxrss would still count the parent we forked from.
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    scale = 2**20 if sys.platform == "darwin" else 2**10  # bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def _held(result: RunResult) -> dict[str, int]:
    """What the stream left for the Conversation to hold: items (I) and text (C)."""
    conversation = result.materialised
    if conversation is None:
        return {}
    messages = conversation.messages
    calls = sum(len(m.get("toolCalls") or ()) for m in messages)
    chars = sum(len(m["content"]) for m in messages if type(m.get("content")) is str)
    return {"items": len(messages) + calls, "conversation_chars": chars}


def _workload(n: int, conversation: bool) -> dict[str, Any]:
    async def stream() -> RunResult:
        pipeline = Pipeline(capabilities=DECLARATION, conversation=conversation)
        result = await pipeline.open(iter_sse_chunks(n)).drain()
        if not result.verdict.completed:
            raise RuntimeError(f"the benchmark stream was not accepted: {result.verdict}")
        return result

    baseline = _peak_rss_mb()
    started = time.perf_counter()
    held = _held(anyio.run(stream))
    seconds = time.perf_counter() - started
    peak = _peak_rss_mb()
    tracemalloc.start()
    anyio.run(stream)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "events": n,
        "conversation": conversation,
        "baseline_rss_mb": round(baseline, 1),
        "peak_rss_mb": round(peak, 1),
        "tracemalloc_peak_mb": round(traced_peak / 2**20, 1),
        "seconds": round(seconds, 2),
        **held,
    }


def _runs_stream(runs: int) -> bytes:
    """``runs`` copies of examples/weather.sse, each under its own run and item ids."""
    recording = (ROOT / "examples" / "weather.sse").read_bytes()
    frames = [frame[6:] for frame in recording.split(b"\n\n") if frame.startswith(b"data: ")]
    events = [orjson.loads(frame) for frame in frames]
    out = bytearray()
    for number in range(runs):
        for event in events:
            copy = dict(event)
            if "runId" in copy:
                copy["runId"] = f"run-{number}"
            for key in ("messageId", "toolCallId"):
                if key in copy:
                    copy[key] = f"{copy[key]}-{number}"
            out += b"data: " + orjson.dumps(copy) + b"\n\n"
    return bytes(out)


def _retained(runs: int, conversation: bool) -> tuple[int, dict[str, int]]:
    """Bytes (tracemalloc) the pipeline's result and stages hold after ``runs`` runs."""
    body = _runs_stream(runs)
    gc.collect()
    tracemalloc.start()
    pipeline = Pipeline(conversation=conversation).incremental()
    for start in range(0, len(body), 65_536):
        pipeline.feed(body[start : start + 65_536])
    result = pipeline.close()
    result.events = []  # as check: no event kept
    gc.collect()
    retained, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    if not result.verdict.completed:
        raise RuntimeError(f"the many-runs stream was not accepted: {result.verdict}")
    return retained, _held(result)


def _per_run() -> dict[str, Any]:
    measured: dict[str, Any] = {"runs": list(RUNS)}
    items = 0
    for conversation in (True, False):
        (short, _), (long, held) = (_retained(runs, conversation) for runs in RUNS)
        if conversation:  # the Conversation counts the items a run brings
            items = held["items"] // RUNS[1]
        per_run = (long - short) / (RUNS[1] - RUNS[0])
        label = "with_conversation" if conversation else "without_conversation"
        measured[label] = {
            "bytes_per_run": round(per_run),
            "bytes_per_item": round(per_run / items),
            "retained_mb_at_longest": round(long / 2**20, 1),
        }
    measured["items_per_run"] = items
    return measured


def _child(kind: str, n: int) -> dict[str, Any]:
    """One measurement, in a process of its own."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", "--one", kind, str(n)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    measured: dict[str, Any] = json.loads(done.stdout)
    return measured


def main(n: int) -> dict[str, Any]:
    return {
        "events": n,
        "forwarding": _child("forwarding", n),
        "judging": _child("judging", n),
        "per_run": _child("per_run", n),
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        kind, n = sys.argv[2], int(sys.argv[3])
        if kind == "per_run":
            print(json.dumps(_per_run()))
        else:
            print(json.dumps(_workload(n, conversation=kind == "judging")))
    else:
        print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)))
