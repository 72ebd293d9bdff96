"""Judge mode: a stream read by the native core when only its verdict is wanted.

``check FILE`` reports the verdict, the diagnostics, the counters and the runs, never the
events, and building the events is most of what the pipeline costs. The native core's judge
(``native/src/judge.rs``) reads such a stream without a Python object per event and answers
one of two things: the stream is clean — it completes, and no stage of the pipeline would
say anything about it — or it is unsure, and the pipeline reads the stream from its start,
as it always did. Every diagnostic, and every verdict but "completed", still comes from the
pipeline: the judge only spares a clean stream the cost of its events, and costs a stream it
is unsure of its own pass on top (``docs/performance.md``, "Judge mode").

It judges only where nothing asks for more than the verdict: the default decoder and stages
(no stage of the user's), no handler or sink, a peer's version only one compat reads, SSE or
JSON lines, a run input only if the judge can take it (``judging.input_for_judge``), and a
caller that keeps neither the events nor the Conversation (the result has none).

A capabilities declaration is judged too. The judge is sure only of streams no stage but
reconcile would say anything of, and reconcile reads the declaration, never changes an event,
and reads only the events of its own types (``reconcile.EVIDENCE_TYPES``): so the judge builds
those alone, where they stood in the stream, and reconcile, the reference's own stage, holds
them to the declaration in its own words. Its findings are then the result's diagnostics, as
the pipeline would report them. Such a pipeline is judged only without ``on_diagnostic``,
which would hear reconcile's findings twice if the pipeline had to read the stream again.

A file or bytes are read again when the judge gives up (:func:`judge_file`); a stream that can
be read only once, a recording in object storage, is held for the pipeline as the judge reads
it, within ``Limits.max_held_bytes`` (:func:`judge_reads`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agui_pipeline import _cores
from agui_pipeline._engine.builtin import run_without_loop
from agui_pipeline._engine.judging import (
    LAST_JUDGED,
    input_for_judge,
    judged_framing,
    new_judge,
    reads_no_event,
    record_runs,
    stands_in,
)
from agui_pipeline._engine.result import Outcome, RunResult, Verdict, result_of
from agui_pipeline._engine.sources import iter_chunks_sync
from agui_pipeline.batch import Batch, Event
from agui_pipeline.stage import RunRecord
from agui_pipeline.stages.parse import BOM
from agui_pipeline.stages.reconcile import EVIDENCE_TYPES, Reconcile

if TYPE_CHECKING:
    from agui_pipeline._engine.pipeline import Pipeline
    from agui_pipeline._native import Judge


def judge_file(
    pipeline: Pipeline, source: Path | bytes, run_input: dict[str, Any] | None = None
) -> RunResult | None:
    """The result of the stream in ``source`` (a file, or a stream's bytes), answering
    ``run_input`` if given, when the native judge finds it clean; ``None`` when the pipeline
    must read it (no native core, a pipeline that asks for more, a run input the judge cannot
    take, or a stream it is unsure of). Either can be read again from its start, so nothing
    is held for the pipeline."""
    return _judge(pipeline, iter_chunks_sync(source), run_input, None)


def judge_reads(
    pipeline: Pipeline, reads: Iterator[bytes], run_input: dict[str, Any] | None = None
) -> RunResult | Iterator[bytes]:
    """The result of the stream ``reads`` delivers, when the native judge finds it clean;
    otherwise the reads for the pipeline to read from the first: those the judge took,
    then the rest of ``reads``.

    A stream that can be read only once (a recording in object storage) cannot be opened
    again when the judge gives up, so the judge holds what it read, up to
    ``Limits.max_held_bytes`` (as deliver mode does for its handover); a stream longer than
    that is handed to the pipeline at that read, its judging wasted.
    """
    held: list[bytes] = []
    result = _judge(pipeline, reads, run_input, held)
    if result is not None:
        return result
    return _replayed(held, reads)


def _replayed(held: list[bytes], reads: Iterator[bytes]) -> Iterator[bytes]:
    """``held``, then the rest of ``reads``, closing ``reads`` however the reading ends."""
    try:
        yield from held
        held.clear()
        yield from reads
    finally:
        close = getattr(reads, "close", None)
        if close is not None:
            close()


def _judge(
    pipeline: Pipeline,
    reads: Iterator[bytes],
    run_input: dict[str, Any] | None,
    held: list[bytes] | None,
) -> RunResult | None:
    """The judge's pass over ``reads`` (each kept in ``held`` when given, within
    ``max_held_bytes``), and the result when it finds the stream clean."""
    if _cores.native is None or not judges(pipeline):
        return None
    answering = None
    if run_input is not None:
        answering = input_for_judge(run_input)
        if answering is None:
            return None
    ctx = pipeline.context(run_input)
    reconcile = None if pipeline.options.capabilities is None else Reconcile(ctx)
    evidence = None if reconcile is None else EVIDENCE_TYPES
    judge: Judge | None = None
    head = b""
    run: RunRecord | None = None
    held_bytes = 0
    for chunk in reads:
        if held is not None:
            held.append(chunk)
            held_bytes += len(chunk)
            if held_bytes > ctx.limits.max_held_bytes:
                return None
        if judge is None:
            head += chunk
            framing = judged_framing(head, pipeline.options.framing)
            if framing == "":
                continue  # a byte order mark may be arriving
            if framing is None:
                return None
            ctx.transport = framing  # as parse names a file's framing
            judge = new_judge(framing, ctx.limits, delivers=False, input=answering, only=evidence)
            chunk = head.removeprefix(BOM)
        start = judge.read
        built = judge.feed(chunk)
        run = record_runs(ctx, judge.take_runs(), run)
        if judge.unsure is not None:
            return None
        if reconcile is not None and built is not None:
            _reconciled(reconcile, built, start, judge.take_marked())
    if judge is None:
        return None
    start = judge.read
    if not judge.finish():
        return None
    record_runs(ctx, judge.take_runs(), run)
    if reconcile is not None:
        built = judge.take_ended()
        if built is not None:
            _reconciled(reconcile, built, start, judge.take_marked())
        # No run is open at a clean end, so reconcile's finish would add nothing.
    ctx.counters.read = ctx.counters.delivered = judge.read
    return result_of(ctx, Verdict(Outcome.COMPLETED), [])


def _reconciled(reconcile: Reconcile, built: list[Event], start: int, at: list[int]) -> None:
    """The events of reconcile's types the judge built of a read, through reconcile: each at
    its place in the stream (``at``: among the read's events, the first of which was the
    stream's ``start``)."""
    batch = Batch(built, [start + position for position in at], objects=True)
    run_without_loop(reconcile.process(batch))


def judges(pipeline: Pipeline) -> bool:
    """Whether the judge can stand in for ``pipeline``: nothing in it asks for more than the
    verdict and reconcile's findings, and its framing (if set) is one the judge reads."""
    options = pipeline.options
    return (
        stands_in(pipeline, options) is LAST_JUDGED
        and reads_no_event(pipeline, options)
        and (options.capabilities is None or options.on_diagnostic is None)
    )
