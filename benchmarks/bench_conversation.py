"""The metadata stage and the Conversation: cost per event, and whether it grows.

Both are fed the realistic workload in 256-event batches, as dispatch would
(the Conversation's messages are read once, at the end), beside a floor: a
loop that only visits each event and reads its type. The figure that
matters beside the µs/event is the ratio between a long stream and a short
one: ``ARCHITECTURE.md`` wants the same cost per event at 1,000,000 events as
at 1,000 — no per-event copy of anything that grows with the run.

    python -m benchmarks.bench_conversation [--events N ...] [--repeat R]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from contextlib import suppress

from agui_pipeline.batch import Batch, Event
from agui_pipeline.model.conversation import Conversation
from agui_pipeline.options import Options
from agui_pipeline.stage import StreamContext
from agui_pipeline.stages.metadata import Metadata

from .workload import events

BATCH = 256


def batches_of(stream: list[Event]) -> list[Batch]:
    return [
        Batch(stream[start : start + BATCH], list(range(start, min(start + BATCH, len(stream)))))
        for start in range(0, len(stream), BATCH)
    ]


def floor_work(batches: list[Batch]) -> Callable[[], object]:
    """The least any per-event consumer pays: visit each event and read its type."""

    def work() -> object:
        for batch in batches:
            for event in batch.events:
                event.get("type")
        return None

    return work


def metadata_work(batches: list[Batch]) -> Callable[[], object]:
    def work() -> object:
        stage = Metadata(StreamContext(Options()))
        for batch in batches:
            step = stage.process(batch)  # awaits nothing: driven without an event loop
            with suppress(StopIteration):
                step.send(None)
        return stage

    return work


def conversation_work(batches: list[Batch]) -> Callable[[], object]:
    def work() -> object:
        conversation = Conversation(StreamContext(Options()))
        for batch in batches:
            conversation.apply(batch)
        return conversation.messages

    return work


def cpu_seconds(work: Callable[[], object], repeat: int) -> float:
    """Best of ``repeat`` runs, in CPU time of this thread with the cyclic collector off.

    CPU time rather than wall time: on a shared 2-core machine a run of a few
    milliseconds is often preempted, and wall time then measures the neighbours.
    """
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            started = time.thread_time()
            work()
            best = min(best, time.thread_time() - started)
        finally:
            gc.enable()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    per_event: dict[str, dict[int, float]] = {"floor": {}, "metadata": {}, "conversation": {}}
    for n in args.events:
        batches = batches_of(events(n))
        works = {
            "floor": floor_work(batches),
            "metadata": metadata_work(batches),
            "conversation": conversation_work(batches),
        }
        for name, work in works.items():
            per_event[name][n] = cpu_seconds(work, args.repeat) / n * 1e6
        print(
            f"{n:>9} events: "
            + ", ".join(f"{name} {figures[n]:.3f}" for name, figures in per_event.items())
            + " µs/event"
        )
    shortest, longest = min(args.events), max(args.events)
    for name, figures in per_event.items():
        growth = figures[longest] / figures[shortest]
        print(f"{name:>12}: µs/event at {longest:,} / at {shortest:,} = {growth:.2f}")


if __name__ == "__main__":
    main()
