"""A capabilities declaration derived from a Customer Engagement Suite agent resource.

The resource is the REST resource ``projects.locations.apps.agents`` (its JSON
representation: ``displayName``, ``description``, ``tools``, ``toolsets``,
``childAgents``, ``transferRules``, the callback lists, ``guardrails``,
``modelSettings``, and at most one of ``llmAgent`` / ``remoteDialogflowAgent``
/ ``remoteA2aAgent``). Only what the resource says becomes a declaration:
an absent or empty field declares nothing (proto3 JSON omits empty lists, so
the two cannot be told apart), and nothing is inferred beyond the mapping
below — docs/guides/agent-resource.md has it as a table.

- ``displayName`` / ``description`` → ``identity.name`` / ``identity.description``;
- non-empty ``tools`` or ``toolsets`` → ``tools.supported: true``; ``tools.items``
  only when the resource enumerates every tool (each toolset names its
  ``toolIds``), one item per tool id with an empty description (the resource
  carries none) and the resource name under ``metadata.ces.resource``;
- non-empty ``childAgents`` → ``multiAgent.supported: true`` and one
  ``subagents`` entry per child id; non-empty ``transferRules`` →
  ``multiAgent.handoffs: true`` (a transfer hands the conversation over);
- ``remoteA2aAgent.a2aConfig.streamingEnabled`` → ``transport.streaming``; the
  inline ``agentCard``'s ``capabilities.streaming`` when that is absent, its
  ``capabilities.pushNotifications`` → ``transport.pushNotifications``, its
  ``version`` / ``provider.organization`` / ``documentationUrl`` → identity;
- the agent type, ``name``, ``modelSettings``, callbacks, guardrails, transfer
  rules and the remote agent's configuration → ``identity.metadata.ces``, whole.

A ``remoteDialogflowAgent`` ignores every other agent-level property (so says
the resource's reference), so for one only identity and ``identity.metadata``
are derived.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from agui_pipeline._json import DuplicateMember, load_document, read_document
from agui_pipeline.errors import DeclarationUnusable
from agui_pipeline.model.capabilities import AgentCapabilities

AGENT_TYPES = ("llmAgent", "remoteDialogflowAgent", "remoteA2aAgent")
CALLBACKS = (
    "beforeAgentCallbacks",
    "afterAgentCallbacks",
    "beforeModelCallbacks",
    "afterModelCallbacks",
    "beforeToolCallbacks",
    "afterToolCallbacks",
)


class AgentResourceError(DeclarationUnusable):
    """A field of the agent resource this mapping reads has the wrong type, or a member is
    named twice: a resource no declaration can be derived from is a declaration the consumer
    cannot use (``pointer`` is in the resource)."""

    def __init__(self, pointer: str, reason: str) -> None:
        super().__init__(pointer, reason, "agent resource")


def read_agent_resource(source: Mapping[str, Any] | bytes | str | os.PathLike[str]) -> Any:
    """The resource as a decoded JSON value (from a dict, JSON bytes or text, or a file)."""
    if isinstance(source, Mapping):
        return dict(source)
    if isinstance(source, str):
        source = source.encode("utf-8", "surrogatepass")  # orjson refuses a lone surrogate
    try:
        return load_document(source if isinstance(source, bytes) else read_document(source))
    except DuplicateMember as exc:
        raise AgentResourceError(exc.pointer, exc.reason) from None


def capabilities_from_agent_resource(
    source: Mapping[str, Any] | bytes | str | os.PathLike[str],
) -> AgentCapabilities:
    """Derive the declaration; :class:`AgentResourceError` names a field of the wrong type."""
    return AgentCapabilities.load(declaration_document(read_agent_resource(source)))


def declaration_document(resource: Any) -> dict[str, Any]:
    """The ``AgentCapabilities`` JSON document the resource supports (see the module doc)."""
    agent = _object(resource, "")
    identity: dict[str, Any] = {}
    ces: dict[str, Any] = {}
    for key, target in (("displayName", "name"), ("description", "description")):
        if key in agent:
            identity[target] = _string(agent[key], f"/{key}")
    if "name" in agent:
        ces["resource"] = _string(agent["name"], "/name")
    kinds = [kind for kind in AGENT_TYPES if kind in agent]
    if len(kinds) > 1:
        raise _wrong("/" + kinds[1], f"at most one of {', '.join(AGENT_TYPES)}", agent[kinds[1]])
    if kinds:
        ces["agentType"] = kinds[0]
    document: dict[str, Any] = {}
    if kinds != ["remoteDialogflowAgent"]:
        _agent_tree(agent, document, ces)
    for key in ("modelSettings", *CALLBACKS, "guardrails"):
        if agent.get(key):
            ces[key] = agent[key]
    if kinds:
        ces[kinds[0]] = agent[kinds[0]]
    if "remoteA2aAgent" in kinds:
        _remote_a2a(agent["remoteA2aAgent"], document, identity)
    if ces:
        identity["metadata"] = {"ces": ces}
    if identity:
        document["identity"] = identity
    return document


def _agent_tree(agent: dict[str, Any], document: dict[str, Any], ces: dict[str, Any]) -> None:
    tools = _list(agent.get("tools", []), "/tools")
    toolsets = _list(agent.get("toolsets", []), "/toolsets")
    if tools or toolsets:
        group: dict[str, Any] = {"supported": True}
        items = [
            _item(_string(name, f"/tools/{i}"), {"resource": name}) for i, name in enumerate(tools)
        ]
        complete = True
        for i, entry in enumerate(toolsets):
            toolset = _object(entry, f"/toolsets/{i}")
            ids = _list(toolset.get("toolIds", []), f"/toolsets/{i}/toolIds")
            if not ids:
                complete = False  # the whole toolset: its tools are not named here
            for j, tool_id in enumerate(ids):
                origin = {"toolset": toolset["toolset"]} if "toolset" in toolset else {}
                items.append(_item(_string(tool_id, f"/toolsets/{i}/toolIds/{j}"), origin))
        if complete:
            group["items"] = items
        document["tools"] = group
        if tools:
            ces["tools"] = tools
        if toolsets:
            ces["toolsets"] = toolsets
    children = _list(agent.get("childAgents", []), "/childAgents")
    rules = _list(agent.get("transferRules", []), "/transferRules")
    if children or rules:
        multi: dict[str, Any] = {"supported": True}
        if rules:
            multi["handoffs"] = True
            ces["transferRules"] = rules
        if children:
            multi["subagents"] = [
                {"name": _last(_string(child, f"/childAgents/{i}"))}
                for i, child in enumerate(children)
            ]
            ces["childAgents"] = children
        document["multiAgent"] = multi


def _remote_a2a(remote: Any, document: dict[str, Any], identity: dict[str, Any]) -> None:
    config = _object(
        _object(remote, "/remoteA2aAgent").get("a2aConfig", {}), "/remoteA2aAgent/a2aConfig"
    )
    at = "/remoteA2aAgent/a2aConfig"
    transport: dict[str, Any] = {}
    if "streamingEnabled" in config:
        transport["streaming"] = _boolean(config["streamingEnabled"], f"{at}/streamingEnabled")
    card = _object(config.get("agentCard", {}), f"{at}/agentCard")
    card_capabilities = _object(card.get("capabilities", {}), f"{at}/agentCard/capabilities")
    for key, target in (("streaming", "streaming"), ("pushNotifications", "pushNotifications")):
        if key in card_capabilities and target not in transport:
            transport[target] = _boolean(
                card_capabilities[key], f"{at}/agentCard/capabilities/{key}"
            )
    if transport:
        document["transport"] = transport
    for key, target in (("version", "version"), ("documentationUrl", "documentationUrl")):
        if key in card and target not in identity:
            identity[target] = _string(card[key], f"{at}/agentCard/{key}")
    provider = _object(card.get("provider", {}), f"{at}/agentCard/provider")
    if "organization" in provider:
        identity["provider"] = _string(
            provider["organization"], f"{at}/agentCard/provider/organization"
        )


def _item(tool_id: str, ces: dict[str, Any]) -> dict[str, Any]:
    item: dict[str, Any] = {"name": _last(tool_id), "description": ""}
    if ces:
        item["metadata"] = {"ces": ces}
    return item


def _last(resource_name: str) -> str:
    """``projects/p/locations/l/apps/a/tools/get_weather`` → ``get_weather``."""
    return resource_name.rstrip("/").rsplit("/", 1)[-1]


def _object(value: Any, pointer: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise _wrong(pointer, "an object", value)
    return value


def _list(value: Any, pointer: str) -> list[Any]:
    if type(value) is not list:
        raise _wrong(pointer, "an array", value)
    return value


def _string(value: Any, pointer: str) -> str:
    if type(value) is not str:
        raise _wrong(pointer, "a string", value)
    return value


def _boolean(value: Any, pointer: str) -> bool:
    if type(value) is not bool:
        raise _wrong(pointer, "a boolean", value)
    return value


def _wrong(pointer: str, expected: str, found: Any) -> AgentResourceError:
    return AgentResourceError(pointer, f"expected {expected}, found {type(found).__name__}")
