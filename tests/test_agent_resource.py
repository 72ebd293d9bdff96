"""A declaration derived from a CES agent resource: only what the resource says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agui_pipeline import Pipeline
from agui_pipeline.errors import DeclarationUnusable
from agui_pipeline.model.agent_resource import (
    AgentResourceError,
    capabilities_from_agent_resource,
    declaration_document,
)

from tests.conftest import run
from tests.streams import encode
from tests.test_capabilities import validator

APP = "projects/p/locations/us/apps/shop"

LLM_AGENT: dict[str, Any] = {
    "name": f"{APP}/agents/root",
    "displayName": "Shop assistant",
    "description": "Answers order questions",
    "modelSettings": {"model": "gemini-2.5-flash", "temperature": 0.2},
    "instruction": "Be brief.",
    "tools": [f"{APP}/tools/lookup_order"],
    "toolsets": [{"toolset": f"{APP}/toolsets/crm", "toolIds": ["create_ticket"]}],
    "childAgents": [f"{APP}/agents/returns"],
    "transferRules": [
        {
            "childAgent": f"{APP}/agents/returns",
            "direction": "PARENT_TO_CHILD",
            "deterministicTransfer": {"expressionCondition": {"expression": "x"}},
        }
    ],
    "beforeModelCallbacks": [{"pythonCode": "def f(): pass"}],
    "guardrails": [f"{APP}/guardrails/no-pii"],
    "createTime": "2026-01-01T00:00:00Z",
    "etag": "abc",
    "llmAgent": {},
}


def test_llm_agent_mapping() -> None:
    document = declaration_document(LLM_AGENT)
    assert validator().is_valid(document)
    assert document["identity"]["name"] == "Shop assistant"
    assert document["identity"]["description"] == "Answers order questions"
    assert document["tools"] == {
        "supported": True,
        "items": [
            {
                "name": "lookup_order",
                "description": "",
                "metadata": {"ces": {"resource": f"{APP}/tools/lookup_order"}},
            },
            {
                "name": "create_ticket",
                "description": "",
                "metadata": {"ces": {"toolset": f"{APP}/toolsets/crm"}},
            },
        ],
    }
    assert document["multiAgent"] == {
        "supported": True,
        "handoffs": True,
        "subagents": [{"name": "returns"}],
    }
    ces = document["identity"]["metadata"]["ces"]
    assert ces["agentType"] == "llmAgent"
    assert ces["resource"] == LLM_AGENT["name"]
    for kept in ("modelSettings", "beforeModelCallbacks", "guardrails", "transferRules"):
        assert ces[kept] == LLM_AGENT[kept]
    # Nothing invented: no group the resource does not speak to, no instruction, no etag.
    assert set(document) == {"identity", "tools", "multiAgent"}
    assert set(document["identity"]) == {"name", "description", "metadata"}
    assert "instruction" not in json.dumps(document)


def test_a_whole_toolset_leaves_items_undeclared() -> None:
    resource = {"displayName": "x", "toolsets": [{"toolset": f"{APP}/toolsets/crm"}]}
    assert declaration_document(resource)["tools"] == {"supported": True}


def test_empty_resource_declares_nothing_but_identity() -> None:
    assert declaration_document({"displayName": "bare", "tools": []}) == {
        "identity": {"name": "bare"}
    }


def test_remote_a2a_agent_transport_and_card() -> None:
    resource = {
        "displayName": "Remote",
        "remoteA2aAgent": {
            "a2aConfig": {
                "streamingEnabled": False,
                "agentCard": {
                    "name": "r",
                    "version": "2.0.1",
                    "documentationUrl": "https://d",
                    "provider": {"organization": "Acme", "url": "https://acme"},
                    "capabilities": {"streaming": True, "pushNotifications": True},
                },
            }
        },
    }
    document = declaration_document(resource)
    assert validator().is_valid(document)
    # The CES connection setting wins over what the card says the agent can do.
    assert document["transport"] == {"streaming": False, "pushNotifications": True}
    assert document["identity"]["version"] == "2.0.1"
    assert document["identity"]["provider"] == "Acme"
    assert document["identity"]["documentationUrl"] == "https://d"
    assert document["identity"]["metadata"]["ces"]["agentType"] == "remoteA2aAgent"


def test_remote_dialogflow_agent_ignores_agent_level_properties() -> None:
    resource = {**LLM_AGENT, "remoteDialogflowAgent": {"agent": "projects/p/agents/df"}}
    del resource["llmAgent"]
    document = declaration_document(resource)
    assert set(document) == {"identity"}
    assert document["identity"]["metadata"]["ces"]["agentType"] == "remoteDialogflowAgent"


@pytest.mark.parametrize(
    ("resource", "pointer"),
    [
        ({"displayName": 3}, "/displayName"),
        ({"tools": "x"}, "/tools"),
        ({"toolsets": [{"toolIds": [1]}]}, "/toolsets/0/toolIds/0"),
        (
            {"remoteA2aAgent": {"a2aConfig": {"streamingEnabled": "yes"}}},
            "/remoteA2aAgent/a2aConfig/streamingEnabled",
        ),
        ({"llmAgent": {}, "remoteA2aAgent": {}}, "/remoteA2aAgent"),
        ([], ""),  # the whole document (RFC 6901: "/" would be a member named "")
    ],
)
def test_wrong_types_name_the_field(resource: Any, pointer: str) -> None:
    with pytest.raises(AgentResourceError) as caught:
        declaration_document(resource)
    assert caught.value.pointer == pointer
    assert isinstance(caught.value, DeclarationUnusable)  # seed 004: a declaration unusable
    assert str(caught.value).startswith(f"agent resource {pointer or '/'}: expected")


def test_the_derived_declaration_drives_reconcile(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(LLM_AGENT))
    capabilities = capabilities_from_agent_resource(path)
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s", "name": "billing"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    result = run(encode(events, "jsonl"), Pipeline(capabilities=capabilities))
    codes = [d.code for d in result.diagnostics if d.severity == "warning"]
    assert codes == ["reconcile.unlisted-subagent"]
