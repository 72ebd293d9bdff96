"""The input that continues an interrupted run (``/spec/1.1/basic/patterns/interrupt-resume``).

A run that needs something from outside ends with ``RUN_FINISHED`` carrying
the interrupt outcome; the run that continues carries the answers in its
input's ``resume`` list. Coverage is the consumer's rule: every interrupt of
the run being continued is answered or explicitly abandoned (status
``cancelled``), each entry names one of those interrupts, and an interrupt
the consumer judges expired can only be abandoned. :func:`resume_input`
refuses, with :class:`~agui_pipeline.errors.InputRejected`, an input that breaks
any of these — before anything is sent.

The continuing run keeps the thread: the same ``threadId``, the messages and
state the interrupted run left behind, and a new ``runId``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from agui_pipeline._engine.result import RunResult
from agui_pipeline._json import copy_json
from agui_pipeline.catalog import RESUME_EXPIRED, RESUME_UNCOVERED, RESUME_UNKNOWN
from agui_pipeline.errors import InputRejected


def pending_interrupts(result: RunResult) -> list[dict[str, Any]]:
    """The interrupts the stream's last run ended with (empty when it did not end on one)."""
    if result.materialised is not None:
        return list(result.materialised.interrupts)
    interrupts: list[dict[str, Any]] = []
    for event in result.events:
        kind = event.get("type")
        if kind == "RUN_STARTED":
            interrupts = []
        elif kind == "RUN_FINISHED":
            outcome = event.get("outcome")
            if type(outcome) is dict and outcome.get("type") == "interrupt":
                interrupts = list(outcome.get("interrupts") or ())
    return interrupts


def resume_input(
    previous: Mapping[str, Any],
    result: RunResult,
    answers: Mapping[str, Any] | None = None,
    *,
    cancelled: Iterable[str] = (),
    run_id: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The ``RunAgentInput`` that continues the interrupted run ``result`` read.

    ``previous`` is the input that started it (tools, context and forwarded
    props carry over); ``answers`` maps interrupt ids to the payload each
    answer carries (``None``: resolved with no payload); ``cancelled`` names
    the interrupts abandoned. Messages and state are what the run left
    behind, taken from ``result.conversation`` (or ``previous`` when the
    pipeline kept none). Send the result through the client as usual.
    """
    answers = dict(answers or {})
    abandoned = list(cancelled)
    by_id = _interrupts_covered(pending_interrupts(result), answers, abandoned)
    moment = now or datetime.now(UTC)
    expired = [i for i in answers if _expired(by_id[i].get("expiresAt"), moment)]
    if expired:
        raise InputRejected(
            RESUME_EXPIRED(expired=expired),
            pointer="/resume",
        )
    resume: list[dict[str, Any]] = []
    for interrupt_id in by_id:
        if interrupt_id in answers:
            entry: dict[str, Any] = {"interruptId": interrupt_id, "status": "resolved"}
            if answers[interrupt_id] is not None:
                entry["payload"] = answers[interrupt_id]
        else:
            entry = {"interruptId": interrupt_id, "status": "cancelled"}
        resume.append(entry)
    continued = _continued(previous, result)
    continued["runId"] = run_id or f"run-{uuid.uuid4()}"
    continued["resume"] = resume
    return continued


def _interrupts_covered(
    interrupts: list[dict[str, Any]], answers: dict[str, Any], abandoned: list[str]
) -> dict[Any, dict[str, Any]]:
    """The run's interrupts by id, once every one has exactly one entry, answered or
    abandoned, and no entry names another (interrupt-resume.mdx, Resuming: the consumer's
    rules to enforce before anything is sent)."""
    if not interrupts:
        raise InputRejected(
            RESUME_UNKNOWN("no-interrupt"),
            pointer="/resume",
        )
    by_id = {interrupt.get("id"): interrupt for interrupt in interrupts}
    unknown = [i for i in [*answers, *abandoned] if i not in by_id]
    if unknown:
        raise InputRejected(
            RESUME_UNKNOWN(interrupts=sorted(map(str, by_id)), unknown=unknown),
            pointer="/resume",
        )
    both = sorted(set(answers) & set(abandoned))
    if both:
        raise InputRejected(RESUME_UNKNOWN("both", both=both), pointer="/resume")
    uncovered = [i for i in by_id if i not in answers and i not in abandoned]
    if uncovered:
        raise InputRejected(
            RESUME_UNCOVERED(uncovered=uncovered),
            pointer="/resume",
        )
    return by_id


def _continued(previous: Mapping[str, Any], result: RunResult) -> dict[str, Any]:
    """What carries over from the input that started the run (tools, context, forwarded
    props), with the messages and state the run left behind."""
    conversation = result.materialised
    continued = {
        key: value
        for key, value in previous.items()
        if key not in ("runId", "parentRunId", "resume", "messages", "state")
    }
    if conversation is not None:
        continued["messages"] = copy_json(conversation.messages)
        continued["state"] = copy_json(conversation.state)
    else:
        continued["messages"] = copy_json(previous.get("messages", []))
        if "state" in previous:
            continued["state"] = copy_json(previous["state"])
    if continued.get("state") is None:
        continued.pop("state", None)  # a whole null means absent
    return continued


def _expired(expires_at: Any, now: datetime) -> bool:
    """Read ``expiresAt`` as an ISO 8601 date; one that is not a date never expires."""
    if not isinstance(expires_at, str):
        return False
    try:
        moment = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
    except ValueError:
        return False
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment <= now
