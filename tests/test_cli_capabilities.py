"""`check --capabilities / --agent-resource`, and the SARIF 2.1.0 report."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from agui_pipeline.cli import main

from tests.conftest import ROOT
from tests.streams import encode
from tests.test_agent_resource import LLM_AGENT

EVENTS: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
    {"type": "REASONING_START", "messageId": "s"},
    {"type": "REASONING_END", "messageId": "s"},
    {"type": "SUBAGENT_STARTED", "subagentRunId": "x", "name": "billing"},
    {"type": "SUBAGENT_FINISHED", "subagentRunId": "x"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
]
DECLARATION = {"reasoning": {"supported": False}, "futureGroup": {}}


def check(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(["check", *argv], out=out)
    return status, out.getvalue()


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    stream = tmp_path / "run.sse"
    stream.write_bytes(b": a comment first\n\n" + encode(EVENTS, "sse"))
    capabilities = tmp_path / "capabilities.json"
    capabilities.write_text(json.dumps(DECLARATION))
    resource = tmp_path / "agent.json"
    resource.write_text(json.dumps(LLM_AGENT))
    return {"stream": stream, "capabilities": capabilities, "resource": resource}


def test_text_report_names_findings_and_the_gate_fails_them_as_warnings(
    files: dict[str, Path],
) -> None:
    status, text = check(str(files["stream"]), "--capabilities", str(files["capabilities"]))
    assert status == 1  # the stream completed; its warnings fail the default gate
    assert f"{files['stream']}: completed, failed: 2 warning(s)" in text
    assert (
        check(
            str(files["stream"]),
            "--capabilities",
            str(files["capabilities"]),
            "-q",
            "--fail-on",
            "error",
        )[0]
        == 0
    )
    assert "reconcile.false-contradicted" in text
    assert "/reasoning/supported" in text
    assert "reconcile.declaration-unrecognised" in text


def test_json_report_carries_the_declaration_field(files: dict[str, Path]) -> None:
    status, text = check(
        str(files["stream"]), "--capabilities", str(files["capabilities"]), "--format", "json"
    )
    assert status == 1
    report = json.loads(text)
    (finding,) = [d for d in report["diagnostics"] if d["code"] == "reconcile.false-contradicted"]
    assert finding["declared"] == "/reasoning/supported"
    assert finding["eventIndex"] == 1


def test_agent_resource(files: dict[str, Path]) -> None:
    status, text = check(str(files["stream"]), "--agent-resource", str(files["resource"]))
    assert status == 1
    assert "reconcile.unlisted-subagent" in text
    assert '"billing"' in text


def test_sarif_report(files: dict[str, Path]) -> None:
    status, text = check(
        str(files["stream"]), "--capabilities", str(files["capabilities"]), "--format", "sarif"
    )
    assert status == 1
    log = json.loads(text)
    assert log["version"] == "2.1.0"
    (sarif_run,) = log["runs"]
    assert sarif_run["tool"]["driver"]["name"] == "agui-pipeline"
    rule_ids = {rule["id"] for rule in sarif_run["tool"]["driver"]["rules"]}
    for result in sarif_run["results"]:
        assert result["ruleId"] in rule_ids
        assert result["level"] in {"none", "note", "warning", "error"}
        assert result["message"]["text"]
        for location in result["locations"]:
            assert location["physicalLocation"]["artifactLocation"]["uri"]
            # A region only where the line is known (never a made-up line 1).
            region = location["physicalLocation"].get("region", {"startLine": 1})
            assert region["startLine"] >= 1
    (finding,) = [r for r in sarif_run["results"] if r["ruleId"] == "reconcile.false-contradicted"]
    assert finding["level"] == "warning"
    (location,) = finding["locations"]
    # Event 1 is the second SSE event; the file starts with a comment block and a blank line.
    # The pointer names its "type" member, 7 characters into the line ('data: {').
    assert location["physicalLocation"]["region"] == {"startLine": 5, "startColumn": 8}
    assert location["logicalLocations"][0]["fullyQualifiedName"] == "event[1]/type"
    (related,) = finding["relatedLocations"]
    assert related["physicalLocation"]["artifactLocation"]["uri"].endswith("capabilities.json")
    assert related["logicalLocations"][0]["fullyQualifiedName"] == "/reasoning/supported"
    (unrecognised,) = [
        r for r in sarif_run["results"] if r["ruleId"] == "reconcile.declaration-unrecognised"
    ]
    assert unrecognised["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
        "capabilities.json"
    )


def test_sarif_reports_the_rejection_as_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n\n[1]\n')
    status, text = check(str(bad), "--format", "sarif")
    assert status == 1
    (result,) = [r for r in json.loads(text)["runs"][0]["results"] if r["level"] == "error"]
    assert result["ruleId"] == "parse.not-object"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 3


def test_usage_errors(files: dict[str, Path], tmp_path: Path) -> None:
    assert check(str(files["stream"]), "--capabilities", str(tmp_path / "none.json"))[0] == 2
    assert check(str(files["stream"]), "--agent-resource", str(tmp_path))[0] == 2  # a directory
    assert check("http://127.0.0.1:9/agent", "--capabilities", str(files["capabilities"]))[0] == 2
    with pytest.raises(SystemExit):
        check(str(files["stream"]), "--capabilities", "a", "--agent-resource", "b")


def test_the_readme_examples() -> None:
    examples = ROOT / "examples"
    status, text = check(
        str(examples / "weather.sse"),
        "--capabilities",
        str(examples / "weather.capabilities.json"),
        "--format",
        "json",
    )
    assert status == 1  # the docs' point: the stream contradicts the declaration
    warnings = [d for d in json.loads(text)["diagnostics"] if d["severity"] == "warning"]
    assert [(d["code"], d["declared"]) for d in warnings] == [
        ("reconcile.false-contradicted", "/state/deltas")
    ]
    status, text = check(
        str(examples / "weather.sse"),
        "--agent-resource",
        str(examples / "weather.agent.json"),
        "--format",
        "sarif",
        "--fail-on",
        "error",
    )
    assert status == 0
    assert json.loads(text)["version"] == "2.1.0"
