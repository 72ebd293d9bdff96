"""agui-pipeline's lint against ag-ui-validate 0.4.0 on the same real captures.

Two claims, per framework, over each of its scenarios (``side_by_side.FRAMEWORKS``):

- every producer fault ag-ui-validate reports (a warning or an error), agui-pipeline
  reports too, under the code ``SAME_FINDING`` names; a rule of the peer's not in that
  table fails the test, so a finding nobody mapped is looked at, not passed over;
- agui-pipeline's findings, judged with the run input, are exactly the ones the
  framework earns (the per-framework tests say why each is right), including the ones
  ag-ui-validate misses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.interop.servers import node_missing
from tests.interop.side_by_side import (
    FRAMEWORKS,
    SAME_FINDING,
    codes,
    our_findings,
    peer_findings,
    record,
)

pytest.importorskip("ag_ui_validate", reason="the interop extra is not installed")

pytestmark = pytest.mark.interop

ARGUMENTS = ["lint.arguments-not-json", "lint.snapshot-contradicts-stream"]
RESTATED = ["lint.snapshot-renames-message"]
"""LlamaIndex restates what each run streamed under fresh ids in every snapshot."""
EARNED: dict[str, dict[str, list[str]]] = {
    "pydantic-ai": {},
    "langgraph": {"backend tool": ARGUMENTS, "frontend tool": [*ARGUMENTS, "lint.pending-omitted"]},
    "llamaindex": {
        **{scenario: RESTATED for scenario in FRAMEWORKS["llamaindex"]},
        "model error": [],
        "frontend tool": [*RESTATED, "lint.pending-omitted"],
    },
    "agno": {
        "frontend tool": ["lint.pending-omitted"],
        "interrupt": ["lint.pending-unlisted-tool"],
        "resume": ["lint.history-restreamed", "lint.reopen-disagrees", "lint.second-tool-result"],
    },
    "mastra": {
        "frontend tool": ["lint.pending-omitted"],
        "interrupt": ["lint.interrupt-unknown-call"],
        "resume": ["lint.result-for-unknown-call"],
    },
}
"""Scenario → the lint codes the framework's stream earns (none where absent)."""

NEEDS = {
    "pydantic-ai": "pydantic_ai.ui.ag_ui",
    "langgraph": "ag_ui_langgraph",
    "llamaindex": "llama_index.protocols.ag_ui",
    "agno": "agno.os.interfaces.agui",
}
"""The module a Python framework's server needs (the interop extra's)."""


@pytest.mark.parametrize("framework", sorted(EARNED))
def test_every_peer_finding_is_ours_and_ours_are_the_earned_ones(
    framework: str, tmp_path: Path
) -> None:
    if framework in NEEDS:
        pytest.importorskip(NEEDS[framework], reason="the interop extra is not installed")
    elif (missing := node_missing()) is not None:
        pytest.skip(missing)
    for capture in record(framework, tmp_path):
        verdict, ours = our_findings(capture)
        assert verdict == "completed", (capture, ours)
        for finding in peer_findings(capture):
            rule = finding.split(":", 1)[0]
            assert rule in SAME_FINDING, f"{capture.scenario}: unmapped {finding}"
            assert SAME_FINDING[rule] in codes(ours), (capture.scenario, finding, ours)
        earned = sorted(EARNED[framework].get(capture.scenario, []))
        assert codes(ours) == earned, (capture.scenario, ours)
