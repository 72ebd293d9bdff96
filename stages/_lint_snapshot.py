"""lint's comparison of a ``MESSAGES_SNAPSHOT`` with what the run streamed: contradictions,
messages dropped or restated under a new id, second results (``/spec/1.1/events/state``).

Split from ``stages/lint.py``; a snapshot is rare on a stream, so nothing here is on the
path of a delta.
"""

from __future__ import annotations

from typing import Any

from agui_pipeline.batch import Event
from agui_pipeline.catalog import (
    LINT_SECOND_RESULT,
    LINT_SNAPSHOT_CONTRADICTS,
    LINT_SNAPSHOT_DROPS,
    LINT_SNAPSHOT_RENAMES,
)
from agui_pipeline.stages._lint_state import (
    _CARRIER,
    LintState,
    _droppable,
    _excerpt,
    _kind,
    _list,
    _same_arguments,
    _short,
)


class SnapshotComparison(LintState):
    """The snapshot handler of lint and what it compares."""

    def _messages_snapshot(self, event: Event, index: int) -> None:
        self._fold_texts(index)
        self._fold_args(index)
        messages = event["messages"]
        positions: dict[Any, int] = {}
        roles: set[Any] = set()
        for position, message in enumerate(messages):
            positions.setdefault(message.get("id"), position)
            roles.add(message.get("role"))
        self._restated_results(messages, index)
        self._restated_streamed(messages, positions, roles, index)
        for position, message in enumerate(messages):
            message_id, role = message.get("id"), message.get("role")
            self._messages.setdefault(message_id, message)
            if role == "tool":
                continue  # results are judged above
            if self._blind:  # past the budget: no text to compare, but the calls are carried
                for call in _list(message.get("toolCalls")):
                    self._learn_call(call, message)
                continue
            where = f"/messages/{position}"
            if message_id in self._new_messages:
                restated = message.get("content")
                restated = restated if isinstance(restated, str) else ""
                text = "".join(self._texts.get(message_id, ()))
                if restated != text:
                    self._contradiction(
                        index, where + "/content", f"message {_short(message_id)}", text, restated
                    )
                # Later deltas append to the restated content (state.mdx reconciliation).
                self._texts[message_id] = [restated]
                self._count(len(restated), index)
            for number, call in enumerate(_list(message.get("toolCalls"))):
                self._restated_call(call, index, f"{where}/toolCalls/{number}")
                self._learn_call(call, message)

    def _restated_results(self, messages: list[Any], index: int) -> None:
        """Tool messages as the Conversation will hold them: the snapshot's, and no other
        (it drops every tool message it leaves out). Two for one call is a second result."""
        answers: dict[Any, Any] = {}
        for position, message in enumerate(messages):
            if message.get("role") != "tool":
                continue
            call_id, message_id = message.get("toolCallId"), message.get("id")
            earlier = answers.setdefault(call_id, message_id)
            if earlier == message_id:
                continue
            where = f"/messages/{position}/toolCallId"
            self._report(
                LINT_SECOND_RESULT(
                    "snapshot",
                    message_id=_short(message_id),
                    call_id=_short(call_id),
                    where=where,
                    earlier=_short(earlier),
                ),
                index,
                where,
            )
        self._answers = answers

    def _restated_streamed(
        self, messages: list[Any], positions: dict[Any, int], roles: set[Any], index: int
    ) -> None:
        """Each message this run streamed that the snapshot leaves out: restated under a new
        id (the same text, the same answered call, a call it carried, the same activity), or
        dropped. The Conversation drops it either way (``/spec/1.1/events/state``), and a UI
        with it: what it had rendered goes, and a copy appears in its place, or nothing."""
        gone = [
            (kind, message_id, detail)
            for kind, streamed in self._streamed.items()
            if _droppable(kind, roles)
            for message_id, detail in streamed.items()
            if message_id not in positions
        ]
        if not gone:
            return
        copies = self._copies(messages)
        for kind, message_id, detail in gone:
            del self._streamed[kind][message_id]
            copy = self._copy_of(message_id, kind, detail, copies)
            what = f"{kind} message {_short(message_id)}"
            if self._messages[message_id] is _CARRIER and message_id in self._calls:
                what = (
                    f"the message carrying tool call {_short(message_id)} (streamed without a "
                    "parentMessageId, so held under the call's id)"
                )
            if copy is None:
                self._report(
                    LINT_SNAPSHOT_DROPS(what=what),
                    index,
                    "/messages",
                )
                continue
            where = f"/messages/{positions[copy]}/id"
            self._report(
                LINT_SNAPSHOT_RENAMES(what=what, copy=_short(copy), where=where),
                index,
                where,
            )

    def _copies(self, messages: list[Any]) -> dict[tuple[Any, ...], Any]:
        """The snapshot's messages under ids never seen before, by what would identify them as
        a streamed message's copy: (kind, text), ("tool", callId), ("call", callId),
        ("activity", activityType) → the first such id."""
        copies: dict[tuple[Any, ...], Any] = {}
        for message in messages:
            message_id = message.get("id")
            if message_id in self._messages:
                continue
            kind = _kind(message)
            content = message.get("content")
            if kind == "tool":
                copies.setdefault(("tool", message.get("toolCallId")), message_id)
            elif kind == "activity":
                copies.setdefault(("activity", message.get("activityType")), message_id)
            elif isinstance(content, str) and content:
                copies.setdefault((kind, content), message_id)
            for call in _list(message.get("toolCalls")):
                if isinstance(call, dict):
                    copies.setdefault(("call", call.get("id")), message_id)
        return copies

    def _copy_of(
        self, message_id: Any, kind: str, detail: Any, copies: dict[tuple[Any, ...], Any]
    ) -> Any:
        """The id a streamed message was restated under, or ``None`` (``detail``: what
        ``_streamed`` holds of it, the call a result answers or an activity's type)."""
        if kind in ("tool", "activity"):
            return copies.get((kind, detail))
        text = "".join(self._texts.get(message_id, ())) if not self._blind else ""
        copy = copies.get((kind, text)) if text else None
        for call_id in self._carried.get(message_id, ()) if copy is None else ():
            copy = copies.get(("call", call_id))
            if copy is not None:
                break
        return copy

    def _restated_call(self, call: Any, index: int, where: str) -> None:
        call_id = call.get("id") if isinstance(call, dict) else None
        if call_id not in self._new_calls:
            return
        function = call.get("function") or {}
        name, restated = function.get("name"), function.get("arguments")
        restated = restated if isinstance(restated, str) else ""
        text = "".join(self._args.get(call_id, ()))
        if not _same_arguments(text, restated):
            self._contradiction(
                index, where + "/function/arguments", f"tool call {_short(call_id)}", text, restated
            )
        self._check_call(call_id)
        streamed_name = self._calls[call_id]["toolCallName"]
        if name is not None and name != streamed_name:
            self._contradiction(
                index, where + "/function/name", f"tool call {_short(call_id)}", streamed_name, name
            )
        self._args[call_id] = [restated]
        self._count(len(restated), index)

    def _contradiction(
        self, index: int, pointer: str, what: str, streamed: Any, restated: Any
    ) -> None:
        self._report(
            LINT_SNAPSHOT_CONTRADICTS(
                what=what, pointer=pointer, restated=_excerpt(restated), streamed=_excerpt(streamed)
            ),
            index,
            pointer,
        )
