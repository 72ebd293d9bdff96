"""The JSON documents the Conversation patches — the state, and the activity messages'
content — held to their limits while patches apply (``Limits.max_state_bytes``,
``max_activity_bytes``, ``max_depth``, ``max_patch_work``).

Each inserted value is charged to the document's budget, so a small ``copy`` of a
large subtree costs what it copies; when a budget runs out, what it covers is
measured once and the budget reset to at least a sixteenth of the limit: a document
churning near its limit is not remeasured on every event, the limit holds to within
that sixteenth, and measuring costs at most seventeen times what was inserted since.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agui_pipeline._json import copy_json
from agui_pipeline.catalog import (
    LIMIT_ACTIVITY_BYTES,
    LIMIT_DEPTH,
    LIMIT_PATCH_WORK,
    LIMIT_STATE_BYTES,
)
from agui_pipeline.errors import StreamRejected
from agui_pipeline.model.patch import (
    Allowance,
    PatchBudget,
    PatchRefused,
    apply_patch,
    size,
)
from agui_pipeline.stage import StreamContext


class PatchedDocuments:
    """The state's and the activities' budgets, and patches applied within them.

    ``activity_size(limit)`` measures the content of every activity message held (up to
    ``limit``): the Conversation's, which holds them.
    """

    def __init__(self, ctx: StreamContext, activity_size: Callable[[int], int]) -> None:
        self._ctx = ctx
        limits = ctx.limits
        work = Allowance(limits.max_patch_work)
        self.state_budget = PatchBudget(limits.max_state_bytes, work, limits.max_depth)
        """What STATE_DELTA patches may still insert before the state is recounted."""
        self.activity_budget = PatchBudget(limits.max_activity_bytes, work, limits.max_depth)
        """What activity snapshots and patches may still insert, all activities together."""
        self._activity_size = activity_size

    def take_state(self, value: Any, index: int | None) -> Any:
        """A copy of a whole new state, within ``Limits.max_state_bytes``."""
        limit = self._ctx.limits.max_state_bytes
        measured = size(value, limit)
        if measured > limit:
            raise self._ctx.reject(
                LIMIT_STATE_BYTES("snapshot", limit=limit),
                event_index=index,
                pointer="/snapshot",
            )
        self.state_budget.remaining = limit - measured
        return copy_json(value)

    def patch_state(self, state: Any, patch: Any, index: int) -> Any:
        """A STATE_DELTA's patch applied to ``state`` within the limits."""
        return self.patched(state, patch, self.state_budget, index, state=True)

    def patch_activity(self, content: Any, patch: Any, index: int) -> Any:
        """An ACTIVITY_DELTA's patch applied to one activity's content within the limits."""
        return self.patched(content, patch, self.activity_budget, index, state=False)

    def patched(
        self, document: Any, patch: Any, budget: PatchBudget, index: int, *, state: bool
    ) -> Any:
        """``patch`` applied to ``document`` (the state, or one activity's content)."""
        member = "/delta" if state else "/patch"
        try:
            return apply_patch(document, patch, budget=budget)
        except PatchRefused as refused:
            if refused.limit == "size":
                return self._recounted(document, patch, budget, index, state=state)
            raise self._refusal(refused, f"{member}/{refused.position}", index) from None

    def _recounted(
        self, document: Any, patch: Any, budget: PatchBudget, index: int, *, state: bool
    ) -> Any:
        limits = self._ctx.limits
        limit = limits.max_state_bytes if state else limits.max_activity_bytes
        held = size(document, limit) if state else self._activity_size(limit)
        if held <= limit:
            budget.remaining = max(limit - held, limit // 16)
            try:
                return apply_patch(document, patch, budget=budget)
            except PatchRefused as refused:
                if refused.limit != "size":
                    member = "/delta" if state else "/patch"
                    raise self._refusal(refused, f"{member}/{refused.position}", index) from None
        if state:
            raise self._ctx.reject(
                LIMIT_STATE_BYTES(held=held, limit=limit),
                event_index=index,
                pointer="/delta",
            ) from None
        raise self.activity_full(held, index, "/patch")

    def _refusal(self, refused: PatchRefused, pointer: str, index: int) -> StreamRejected:
        """The rejection for a patch refused for its depth or its work."""
        limits = self._ctx.limits
        if refused.limit == "depth":
            return self._ctx.reject(
                LIMIT_DEPTH("patch", limit=limits.max_depth, detail=refused.detail),
                event_index=index,
                pointer=pointer,
            )
        return self._ctx.reject(
            LIMIT_PATCH_WORK(max_patch_work=limits.max_patch_work),
            event_index=index,
            pointer=pointer,
        )

    def charge_activity(self, content: Any, index: int | None, pointer: str) -> None:
        """Charge activity content coming in whole to the activity budget (recounting once
        when it runs out), or reject it at ``pointer``."""
        budget = self.activity_budget
        limit = self._ctx.limits.max_activity_bytes
        measured = size(content, limit)
        if measured > budget.remaining:
            held = self._activity_size(limit)
            budget.remaining = max(limit - held, limit // 16) if held <= limit else -1
            if measured > budget.remaining:
                raise self.activity_full(held, index, pointer)
        budget.remaining -= measured

    def activity_full(self, held: int, index: int | None, pointer: str) -> StreamRejected:
        limit = self._ctx.limits.max_activity_bytes
        return self._ctx.reject(
            LIMIT_ACTIVITY_BYTES(held=held, limit=limit),
            event_index=index,
            pointer=pointer,
        )
