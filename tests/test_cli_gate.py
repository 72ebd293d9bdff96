"""`check` as a CI gate: exit statuses, --fail-on, --max-warnings, rule tuning,
pyproject.toml, and several sources at once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import agui
from tests.streams import encode

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISH = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
CLEAN = [
    START,
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    FINISH,
]
# A misspelt optional field: stripped with a warning, the stream still completes.
MISSPELT = [
    START,
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "messageID": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    FINISH,
]
RUN_ERROR = [START, {"type": "RUN_ERROR", "message": "the model is down"}]
TRUNCATED = CLEAN[:3]


def _file(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_bytes(encode(events, "sse"))
    return path


def test_the_default_gate_fails_a_warning_as_a_linter_does(tmp_path: Path) -> None:
    misspelt, clean = _file(tmp_path, "misspelt.sse", MISSPELT), _file(tmp_path, "c.sse", CLEAN)
    failed = agui("check", misspelt)
    assert failed.returncode == 1  # the default: any warning fails
    assert "completed, failed: 1 warning(s) (--fail-on warning)" in failed.stdout
    assert "(did you mean messageId?)" in failed.stdout
    assert agui("check", misspelt, "--fail-on", "warning").returncode == 1
    assert agui("check", misspelt, "--fail-on", "error").returncode == 0  # the lenient mode
    assert agui("check", misspelt, "--fail-on", "verdict").returncode == 0
    assert agui("check", clean).returncode == 0
    assert agui("check", clean, "--fail-on", "info").returncode == 0


def test_a_run_error_fails_by_default_and_under_fail_on_error(tmp_path: Path) -> None:
    failed_run = _file(tmp_path, "run-error.sse", RUN_ERROR)
    default = agui("check", failed_run)
    assert default.returncode == 1
    assert "run-error.sse: run-error, failed: 1 run(s) ended with RUN_ERROR" in default.stdout
    assert "run 'r' (thread 't'): error: the model is down" in default.stdout
    for level in ("error", "run-error"):  # run-error: the level's earlier name
        gated = agui("check", failed_run, "--fail-on", level, "--format", "json")
        assert gated.returncode == 1
        assert json.loads(gated.stdout)["failures"] == [
            "1 run(s) ended with RUN_ERROR (--fail-on error)"
        ]
    verdict_only = agui("check", failed_run, "--fail-on", "verdict", "-q")
    assert verdict_only.returncode == 0
    assert verdict_only.stdout == f"{failed_run}: run-error\n"  # passes, but says what it is
    assert agui("check", _file(tmp_path, "c.sse", CLEAN), "--fail-on", "error").returncode == 0


def test_max_warnings(tmp_path: Path) -> None:
    misspelt = _file(tmp_path, "misspelt.sse", MISSPELT)
    assert agui("check", misspelt, "--fail-on", "error", "--max-warnings", "1").returncode == 0
    over = agui("check", misspelt, "--fail-on", "error", "--max-warnings", "0")
    assert over.returncode == 1
    assert "1 warning(s), over --max-warnings 0" in over.stdout


def test_rules_tune_diagnostics(tmp_path: Path) -> None:
    misspelt = _file(tmp_path, "misspelt.sse", MISSPELT)
    off = agui("check", misspelt, "--off", "enforce.stripped", "--fail-on", "warning")
    assert off.returncode == 0
    assert "enforce.stripped" not in off.stdout
    info = agui("check", misspelt, "--rule", "enforce.stripped=info", "--fail-on", "warning")
    assert info.returncode == 0
    assert ": info enforce.stripped: stripped /messageID" in info.stdout
    error = agui("check", misspelt, "--rule", "enforce.stripped=error", "--fail-on", "verdict")
    assert error.returncode == 1  # raised to error: fails at every level
    assert "1 diagnostic(s) raised to error by --rule" in error.stdout


def test_a_verdicts_code_cannot_be_tuned(tmp_path: Path) -> None:
    truncated = _file(tmp_path, "truncated.sse", TRUNCATED)
    refused = agui("check", truncated, "--off", "verify.truncated")
    assert refused.returncode == 2
    assert "verify.truncated is a rejection's code" in refused.stderr
    unknown = agui("check", truncated, "--rule", "enforce.strip=off")
    assert unknown.returncode == 2
    assert "did you mean enforce.stripped?" in unknown.stderr
    assert agui("check", truncated, "--rule", "enforce.stripped=loud").returncode == 2


def test_pyproject_table_and_the_command_line_wins(tmp_path: Path) -> None:
    misspelt = _file(tmp_path, "misspelt.sse", MISSPELT)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.agui-pipeline]\nfail-on = "warning"\nrules = { "enforce.stripped" = "warning" }\n'
    )
    assert agui("check", misspelt, cwd=tmp_path).returncode == 1
    assert agui("check", misspelt, "--off", "enforce.stripped", cwd=tmp_path).returncode == 0
    assert agui("check", misspelt, "--fail-on", "verdict", cwd=tmp_path).returncode == 0
    (tmp_path / "pyproject.toml").write_text(
        '[tool.agui-pipeline]\nrules = { "verify.no-such-rule" = "off" }\n'
    )
    refused = agui("check", misspelt, cwd=tmp_path)
    assert refused.returncode == 2
    assert (
        "pyproject.toml [tool.agui-pipeline] rules: no diagnostic code 'verify.no-such-rule'"
        in refused.stderr
    )


def test_several_sources_worst_status_in_input_order(tmp_path: Path) -> None:
    names = ["clean.sse", "truncated.sse", "misspelt.sse", "missing.sse"]
    files = [
        _file(tmp_path, "clean.sse", CLEAN),
        _file(tmp_path, "truncated.sse", TRUNCATED),
        _file(tmp_path, "misspelt.sse", MISSPELT),
    ]
    two = agui("check", files[0], files[1], "-q")
    assert two.returncode == 1
    assert two.stdout.splitlines() == [f"{files[0]}: completed", f"{files[1]}: truncated"]
    every = agui("check", *files, tmp_path / "missing.sse", "-q", "--fail-on", "warning")
    assert every.returncode == 2  # the missing file is the worst
    assert [line.split(":")[0] for line in every.stdout.splitlines()] == [
        str(tmp_path / name) for name in names
    ]
    assert "no such file" in every.stderr
    parallel = agui(
        "check", *files, tmp_path / "missing.sse", "-q", "--fail-on", "warning", "--jobs", "3"
    )
    assert (parallel.returncode, parallel.stdout) == (every.returncode, every.stdout)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_several_sources_as_one_json_document(tmp_path: Path, jobs: str) -> None:
    files = [_file(tmp_path, "clean.sse", CLEAN), _file(tmp_path, "truncated.sse", TRUNCATED)]
    completed = agui("check", *files, "--format", "json", "--jobs", jobs)
    reports = json.loads(completed.stdout)
    assert [(r["source"], r["status"]) for r in reports] == [(str(files[0]), 0), (str(files[1]), 1)]


def test_help_documents_the_exit_statuses() -> None:
    text = agui("check", "--help").stdout
    assert "exit status:" in text
    assert "0  every source completed" in text
    assert "1  a source failed" in text
    assert "2  a usage or I/O error" in text
    overall = agui("--help").stdout
    assert "exit status (each command's --help lists its own):" in overall
    assert "1  check: a source failed the gate; conformance: a fixture failed" in overall
    check_help = " ".join(agui("check", "--help").stdout.split())
    assert "verdict (a rejection or truncation), error (also a run that ended" in check_help
    assert "warning (also any warning: the default, as a linter)" in check_help
