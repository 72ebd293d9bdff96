"""The native judge of one stream as both of its modes make it and read its notes: judge mode
(``judge.py``, a file's verdict) and deliver mode (``deliver.py``, events to application
code)."""

from __future__ import annotations

from collections.abc import Collection
from functools import cache
from typing import TYPE_CHECKING, Any

import orjson
from agui_pipeline import _cores
from agui_pipeline._engine.order import default_decoder, default_stages
from agui_pipeline.model.versions import (
    GATE_SUBAGENTS,
    PROTOCOL_VERSION,
    SPOKEN,
    at_or_below,
    parse_version,
    peer_version,
)
from agui_pipeline.options import Limits, Options
from agui_pipeline.stage import RunRecord, RunStatus, Stage, StreamContext
from agui_pipeline.stages.compat import Compat
from agui_pipeline.stages.lint import Lint
from agui_pipeline.stages.parse import BOM, framing_of

if TYPE_CHECKING:
    from agui_pipeline._engine.core import StagePlan
    from agui_pipeline._native import Judge


LAST_JUDGED: type[Stage] = Lint
"""The last of the built-in stages, from parse, that the judge stands in for with every rule:
judge mode cuts the pipeline here, and so does deliver mode where every stage of the user's
follows it (each is handed what it passes)."""

FRONT_JUDGED: type[Stage] = Compat
"""The last of the built-in stages the judge stands in for in deliver mode when a stage of the
user's comes before lint (middleware, say): the judge frames and decodes the stream and stands
in for compat alone, and enforce and every stage after it run in Python on what it passes."""


def stands_in(plan: StagePlan, options: Options) -> type[Stage] | None:
    """The last of ``plan``'s built-in stages, from parse, that the judge can stand in for:
    :data:`LAST_JUDGED` where the decoder is the default one, the default stages keep their
    order, and any of the user's come only after lint (they see what lint passes, which the
    judge hands on); :data:`FRONT_JUDGED` where a stage of the user's comes before lint but
    after compat, and the peer's version gates none of compat's shims; ``None`` otherwise. A
    peer's version must be one that compat reads, and a framing, if one is set, one the judge
    reads. Each mode asks more of its own (``judge.judges``: no stage of the user's and no
    declaration either, since they read the events; ``deliver.delivers``)."""
    built_in = [stage for _, stage in default_stages()]
    factories = list(plan.stage_factories)
    if not (
        plan.decoder is default_decoder()
        and [factory for factory in factories if factory in built_in] == built_in
        and options.framing in (None, "sse", "jsonl")
        and _usable_peer(options.peer_max_protocol_version)
    ):
        return None
    checked = built_in.index(LAST_JUDGED) + 1
    if factories[:checked] == built_in[:checked]:
        return LAST_JUDGED
    fronted = built_in.index(FRONT_JUDGED) + 1
    if factories[:fronted] == built_in[:fronted] and not _gated(options.peer_max_protocol_version):
        return FRONT_JUDGED
    return None


def reads_no_event(plan: StagePlan, options: Options) -> bool:
    """Whether nothing after lint reads the events but a declaration's reconcile and the
    Conversation: no stage of the user's, no handler, no sink. Where the caller keeps neither
    the events nor the Conversation, the judge then need build none of them."""
    return (
        len(plan.stage_factories) == len(default_stages())
        and options.handlers is None
        and not options.sinks
    )


def _gated(setting: str | None) -> bool:
    """Whether the peer's version (one compat reads) selects the shim that drops subagents and
    strips their attribution: compat then changes events the judge passes as sent, so it stands
    in for compat only where no shim is selected."""
    return at_or_below(peer_version(setting), GATE_SUBAGENTS)


def _usable_peer(setting: str | None) -> bool:
    """Whether the peer's version is none or one compat reads (another fails the stream as
    its stages are built, the reference's to say). The judge stands in for either: what an
    old peer's shims do (``SUBAGENT_*`` dropped, ``subagentRunId`` stripped from an event,
    a snapshot's messages, an echoed input or an outcome's interrupts) touches only what
    the judge is unsure of, so on a stream it is sure of they do nothing."""
    try:
        peer_version(setting)
    except ValueError:
        return False
    return True


def judged_framing(head: bytes, forced: str | None) -> str | None:
    """The framing the judge reads a stream in, told by its first bytes ``head`` as parse's
    ``_start`` tells it (a byte order mark off, then the first byte), or ``forced``:
    ``"sse"`` or ``"jsonl"``; ``""`` while a byte order mark may still be arriving; ``None``
    for a stream that is not the judge's (a JSON array document, a blank first)."""
    if len(head) < len(BOM) and BOM.startswith(head):
        return ""
    framing = forced or framing_of(head.removeprefix(BOM)[:1])
    return framing if framing in ("sse", "jsonl") else None


def new_judge(
    framing: str,
    limits: Limits,
    *,
    delivers: bool,
    input: JudgeInput | None = None,
    only: Collection[str] | None = None,
    upto: type[Stage] = LAST_JUDGED,
) -> Judge:
    """A native judge of one stream in ``framing`` under ``limits``; ``delivers``: it builds
    the events it passes, for deliver mode (``deliver.py``), or ``only`` those of these types,
    each marked (``take_marked``: where each was among those passed), for judge mode's
    reconcile (``judge.py``); ``input``: the run input the stream answers, as the judge takes
    it (``deliver.input_for_judge``); ``upto``: the last stage it stands in for
    (:func:`stands_in`)."""
    from agui_pipeline.stages._checks import native_checks  # the stages sit above the engine
    from agui_pipeline.stages.metadata import ALWAYS_READ

    native = _cores.native
    assert native is not None
    built = None if only is None else sorted(only)
    if built is not None:
        delivery: tuple[list[str], list[str] | None] | None = (built, built)
    else:
        delivery = (sorted(ALWAYS_READ), None) if delivers else None
    judge: Judge = native.Judge(
        framing,
        native_checks(native),
        _limits(limits),
        _quiet_versions(),
        input,
        delivery,
        upto.name,
    )
    return judge


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


JudgeInput = tuple[str, str, list[str] | None, list[str], int, str | None]
"""A run input as the judge takes it: the thread and run it asks for, the names of the tools
it lists (``None``: it lists none), every id its history holds, an upper bound of the text
the Conversation takes from it, and its state as JSON text, if it has one."""


def input_for_judge(run_input: Any) -> JudgeInput | None:
    """The run input as the judge's rules need it (``judge.rs``'s ``RunInput``); ``None``
    when the judge cannot take it and the stream is the reference's: not an object, a
    thread or run that is not a string, or what JSON cannot hold.

    The ids are a superset of what verify, lint and the Conversation learn from the history
    (every string ``id`` and ``toolCallId`` of a message and of its calls, whatever its
    role): the judge leaves any event that names one to the reference. The text is the
    history's JSON length, at least the characters the Conversation counts of it.
    """
    if not isinstance(run_input, dict):
        return None
    thread_id, run_id = run_input.get("threadId"), run_input.get("runId")
    if not isinstance(thread_id, str) or not isinstance(run_id, str):
        return None
    tools = run_input.get("tools")
    listed = None
    if isinstance(tools, list):
        listed = [
            tool["name"]
            for tool in tools
            if isinstance(tool, dict) and isinstance(tool.get("name"), str)
        ]
    messages = run_input.get("messages")
    history: list[str] = []
    chars = 0
    try:
        if isinstance(messages, list):
            chars = len(orjson.dumps(messages))
            for message in messages:
                if isinstance(message, dict):
                    history += _ids_of(message)
                    calls = message.get("toolCalls")
                    for call in calls if isinstance(calls, list) else ():
                        if isinstance(call, dict):
                            history += _ids_of(call)
        state = orjson.dumps(run_input["state"]).decode() if "state" in run_input else None
    except (TypeError, orjson.JSONEncodeError):
        return None
    return thread_id, run_id, listed, history, chars, state


def _ids_of(item: dict[str, Any]) -> list[str]:
    return [item[key] for key in ("id", "toolCallId") if isinstance(item.get(key), str)]
