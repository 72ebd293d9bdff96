"""The native judge of one stream as both of its modes make it and read its notes: judge mode
(``judge.py``, a file's verdict) and deliver mode (``deliver.py``, events to application
code)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import orjson
from agui_pipeline import _cores
from agui_pipeline.model.versions import PROTOCOL_VERSION, SPOKEN, parse_version
from agui_pipeline.options import Limits
from agui_pipeline.stage import RunRecord, RunStatus, StreamContext

if TYPE_CHECKING:
    from agui_pipeline._native import Judge


def new_judge(
    framing: str, limits: Limits, *, delivers: bool, input: tuple[Any, ...] | None = None
) -> Judge:
    """A native judge of one stream in ``framing`` under ``limits``; ``delivers``: it keeps
    the payloads of the events it passes, for deliver mode (``deliver.py``); ``input``: the
    run input the stream answers, as the judge takes it (``deliver.input_for_judge``)."""
    assert _cores.native is not None
    judge: Judge = _cores.native.Judge(
        framing, *_plan(), _limits(limits), _quiet_versions(), delivers, input
    )
    return judge


@cache
def _plan() -> tuple[list[tuple[Any, ...]], dict[str, int]]:
    """enforce's checks as the native core builds its own (``stages/_checks.py``)."""
    from agui_pipeline.stages._checks import native_plan

    return native_plan()


def _limits(limits: Limits) -> tuple[int, int, int, int, int, int, int, int, int]:
    return (
        limits.max_frame_bytes,
        limits.max_depth,
        limits.max_open_items,
        limits.max_text_chars,
        limits.max_conversation_chars,
        limits.max_items,
        limits.max_run_ids,
        limits.max_state_bytes,
        limits.max_patch_work,
    )


@cache
def _quiet_versions() -> list[str]:
    """``protocolVersion`` values compat's negotiation says nothing of (``Compat._negotiate``):
    the judge leaves any other to the pipeline."""
    quiet = []
    for version in ("1.0", PROTOCOL_VERSION):
        parsed = parse_version(version)
        if parsed is not None and parsed <= SPOKEN:
            quiet.append(version)
    return quiet


def record_runs(
    ctx: StreamContext, notes: list[tuple[Any, ...]], run: RunRecord | None
) -> RunRecord | None:
    """The runs the judge noted, recorded as verify records them; the run open now."""
    for note in notes:
        if note[0] == "started":
            run = RunRecord(note[1], note[2])
            ctx.record_run(run)
            continue
        assert run is not None, "the judge noted a run's end before its start"
        if note[0] == "finished":
            run.status = RunStatus.FINISHED
            run.outcome = None if note[2] is None else orjson.loads(note[2])["outcome"]
        else:
            run.status = RunStatus.ERROR
            run.error = note[2]
        run.ended_at = note[1]
    return run
