"""What verify says when it rejects: the texts of its rejections, each naming what was
expected, where, and the item it is about (kept apart from the rules in :mod:`.verify`)."""

from __future__ import annotations

from agui_pipeline.batch import Event
from agui_pipeline.catalog import LIMIT_ITEMS, VERIFY_ATTRIBUTION, Code
from agui_pipeline.errors import StreamRejected
from agui_pipeline.stage import StreamContext

Owner = str | None
"""Who produced an item: a ``subagentRunId``, or ``None`` for the parent agent."""


def too_many_items(ctx: StreamContext, index: int, pointer: str) -> StreamRejected:
    limit = ctx.limits.max_items
    return ctx.reject(
        LIMIT_ITEMS(limit=limit, pointer=pointer),
        event_index=index,
        pointer=pointer,
    )


def mismatch(
    ctx: StreamContext, kind: str, what: str, item: str, owner: Owner, tag: str, index: int
) -> StreamRejected:
    return ctx.reject(
        VERIFY_ATTRIBUTION(kind=kind, what=what, item=item, tag=tag, owner=owner_name(owner)),
        event_index=index,
        pointer="/subagentRunId",
    )


def already_open(
    ctx: StreamContext, code: Code, event: Event, what: str, index: int
) -> StreamRejected:
    field = "toolCallId" if what == "tool call" else "messageId"
    kind = event["type"]
    return ctx.reject(
        code(
            "already-active",
            kind=kind,
            what=what,
            item=event[field],
            field=field,
            end=kind.replace("START", "END"),
        ),
        event_index=index,
        pointer=f"/{field}",
    )


def bad_continuation(
    ctx: StreamContext,
    code: Code,
    open_items: dict[str, Owner],
    event: Event,
    field: str,
    what: str,
    index: int,
) -> StreamRejected:
    item, kind = event[field], event["type"]
    if item in open_items:
        tag = event["subagentRunId"]
        return mismatch(ctx, kind, what, item, open_items[item], tag, index)
    return ctx.reject(
        code(what=what, item=item, kind=kind, field=field),
        event_index=index,
        pointer=f"/{field}",
    )


def owner_name(owner: Owner) -> str:
    return "the parent agent" if owner is None else f"subagent {owner!r}"


def step_label(owner: Owner, name: str) -> str:
    return repr(name) if owner is None else f"{name!r} (subagent {owner!r})"


def join(shown: list[str], limit: int = 5) -> str:
    """Rendered ids for a message, a few of them: error text stays short on a huge run."""
    more = f" and {len(shown) - limit} more" if len(shown) > limit else ""
    return ", ".join(shown[:limit]) + more


def describe(groups: list[tuple[str, list[str]]]) -> str:
    return "; ".join(f"{label}: {join(shown)}" for label, shown in groups)
