"""Each item's merged metadata, shared by the metadata stage and the Conversation.

The metadata stage (``agui_pipeline.stages.metadata``) fills it as events
arrive (``/spec/1.1/basic/metadata``, "Merging"); the Conversation reads it
for the messages and tool calls it materialises. It lives in the engine's
package because :class:`~agui_pipeline.stage.StreamContext` declares it.
"""

from __future__ import annotations

from typing import Any

Merged = dict[str, Any]


class ItemMetadata:
    """The merged metadata of every item so far, by id.

    ``messages`` is keyed by message id (text, reasoning, tool and activity
    messages share that namespace), ``tool_calls`` by tool call id. Only items
    that have metadata have an entry. The dicts are this object's own copies,
    updated in place as events arrive; never the producer's objects.
    """

    __slots__ = ("messages", "tool_calls")

    def __init__(self) -> None:
        self.messages: dict[str, Merged] = {}
        self.tool_calls: dict[str, Merged] = {}

    def message(self, message_id: str) -> Merged | None:
        return self.messages.get(message_id)

    def tool_call(self, tool_call_id: str) -> Merged | None:
        return self.tool_calls.get(tool_call_id)
