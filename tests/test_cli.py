"""The command line: exit statuses and report formats of `check`."""

from __future__ import annotations

import gc
import io
import json
import os
import re
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agui_pipeline.cli import main

from tests.cli_run import agui, unplaced
from tests.conftest import ROOT
from tests.streams import encode

EXAMPLE = ROOT / "examples" / "weather.sse"


def check(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(["check", *argv], out=out)
    return status, out.getvalue()


def test_example_completes_with_exit_0() -> None:
    status, text = check(str(EXAMPLE))
    assert status == 0
    assert "weather.sse: completed" in text


def test_json_report_carries_verdict_counters_and_diagnostics(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n[1]\n')
    status, text = check(str(bad), "--format", "json")
    assert status == 1
    report = json.loads(text)
    assert report["verdict"]["outcome"] == "rejected"
    assert report["verdict"]["code"] == "parse.not-object"
    assert report["verdict"]["eventIndex"] == 1
    assert report["counters"]["read"] == 1


def test_rejected_stream_exits_1_and_names_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sse"
    bad.write_text("data: {not json\n\n")
    status, text = check(str(bad))
    assert status == 1
    assert "parse.not-json" in text and "event 0" in text


def test_missing_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = check(str(tmp_path / "nope.sse"))
    assert status == 2
    assert "no such file" in capsys.readouterr().err


def test_stdin_and_the_console_script() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "agui_pipeline", "check", "-"],
        input=EXAMPLE.read_bytes(),
        capture_output=True,
        cwd=ROOT,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert b"-: completed" in completed.stdout


def test_stdin_from_a_silent_producer_is_judged_when_the_idle_window_ends() -> None:
    """`producer | check -` where the producer stalls: the idle window ends the stream,
    the report is written and the process exits then, with the pipe still open."""
    checker = subprocess.Popen(
        [sys.executable, "-m", "agui_pipeline", "check", "-", "--idle-timeout", "1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    assert checker.stdin is not None and checker.stdout is not None
    report = b""
    try:
        checker.stdin.write(b'data: {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n\n')
        checker.stdin.flush()  # then nothing more, the pipe held open
        ready, _, _ = select.select([checker.stdout], [], [], 30)
        assert ready, "no report 30 s into a 1 s idle window"
        report = os.read(checker.stdout.fileno(), 1 << 16)  # written with stdin still open
        checker.wait(timeout=30)  # and the process ends, the producer still silent
    finally:
        checker.stdin.close()  # the producer goes away: the process may end
        report += checker.stdout.read()
        checker.wait(timeout=30)
    assert report.startswith(b"-: truncated"), report
    assert b"source.idle-timeout" in report
    assert checker.returncode == 1


def test_peer_version_selects_the_version_gated_shims(tmp_path: Path) -> None:
    stream = tmp_path / "subagent.sse"
    stream.write_text(
        'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
        'data: {"type":"SUBAGENT_STARTED","subagentRunId":"s","name":"helper"}\n\n'
        'data: {"type":"SUBAGENT_FINISHED","subagentRunId":"s"}\n\n'
        'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'
    )
    status, text = check(str(stream), "--format", "json")
    assert status == 0
    assert json.loads(text)["counters"]["dropped"] == 0
    status, text = check(str(stream), "--format", "json", "--peer-version", "0.0.57")
    assert status == 1  # warned: two events of types 0.0.57 does not know were dropped
    assert json.loads(text)["counters"]["dropped"] == 2  # the 0.0.57 shim drops SUBAGENT_*


def test_json_report_accounting_adds_up_at_a_rejection(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n'
        '{"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}\n'
        '{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 42}\n'
        '{"type": "TEXT_MESSAGE_END", "messageId": "m"}\n'
    )
    status, text = check(str(bad), "--format", "json")
    assert status == 1
    counters = json.loads(text)["counters"]
    assert (counters["read"], counters["delivered"], counters["discarded"]) == (4, 2, 2)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("agui-pipeline 0.")


# -- start-up: check imports what it needs ---------------------------------------------

ONLY_WHEN_ASKED = {
    "pydantic",  # the run input's and a declaration's models: --input, --capabilities
    "agui_pipeline.model.run_input",
    "agui_pipeline.model.capabilities",
    "agui_pipeline.delivery.junit",  # --format junit
    "agui_pipeline.delivery.sarif",  # --format sarif
    "concurrent.futures.process",  # --jobs
    "importlib.metadata",  # --version
    "agui_pipeline.testing.workload",  # bench
    # An event loop: a URL's or stdin's (a file goes through the sync shell).
    "asyncio",
    "anyio",
    "ssl",
    "concurrent.futures",
    "agui_pipeline.http.client",  # a URL
    "httpx",
    # The other commands' modules: only the command named gets a parser.
    "agui_pipeline.testing.conformance",  # a fixture (a file that is a JSON object with "stream")
    "agui_pipeline.cli.bench",
    "agui_pipeline.cli.conformance",
    "agui_pipeline.cli.explain",
    "agui_pipeline.cli.proxy",
    "agui_pipeline.cli.serve",
    "agui_pipeline._checking.cluster",  # --scheduler
    "difflib",  # a did-you-mean for an unknown code
    "tomllib",  # a ./pyproject.toml (the probe runs where there is none)
}
"""Modules `check FILE` does without: start-up is most of its cost on a short file."""

EVENT_LOOP = {"asyncio", "anyio"}


def modules_imported_by(argv: list[str], cwd: Path) -> set[str]:
    script = (
        "import sys\n"
        "from agui_pipeline.cli import main\n"
        "main(sys.argv[1:])\n"
        "print(' '.join(sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *argv], capture_output=True, text=True, cwd=cwd
    )
    assert done.returncode == 0, done.stderr
    return set(done.stderr.split())


def test_check_on_a_file_imports_only_what_it_needs(tmp_path: Path) -> None:
    recording = ROOT / "examples" / "weather.sse"
    plain = modules_imported_by(["check", str(recording)], tmp_path)
    assert not plain & ONLY_WHEN_ASKED, sorted(plain & ONLY_WHEN_ASKED)
    run_input = tmp_path / "input.json"
    run_input.write_text(json.dumps({"threadId": "thread-weather", "runId": "run-1"}))
    asked = ["check", str(recording), "--input", str(run_input), "--format", "junit"]
    # The same probe sees them once an option needs them.
    with_options = modules_imported_by(asked, tmp_path)
    assert {
        "pydantic",
        "agui_pipeline.model.run_input",
        "agui_pipeline.delivery.junit",
    } <= with_options
    # A file with a run input, a declaration or as a fixture still needs no event loop.
    declared = ["--capabilities", str(ROOT / "examples" / "weather.capabilities.json")]
    fixture = tmp_path / "fixture.json"
    fixture.write_text(json.dumps({"stream": [], "input": {}}, indent=2))
    for imported in (
        with_options,
        modules_imported_by(["check", str(recording), *declared], tmp_path),
        modules_imported_by(["check", str(fixture)], tmp_path),
    ):
        assert not imported & EVENT_LOOP, sorted(imported & EVENT_LOOP)


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"k": value}
    return value


SHELL_PARITY = {
    "completed": EXAMPLE.read_bytes(),
    "truncated": b'{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n',
    "rejected": b'{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n[1]\n',
    # The Conversation rejects the delta (max_depth) after verify saw the run finish in the
    # same read: RUN_FINISHED is discarded, so the run is open again.
    "end discarded": b"".join(
        json.dumps(event).encode() + b"\n"
        for event in [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            {"type": "STATE_SNAPSHOT", "snapshot": _nested(100)},
            {
                "type": "STATE_DELTA",
                "delta": [{"op": "add", "path": "/k" * 100 + "/x", "value": _nested(60)}],
            },
            {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
        ]
    ),
}


@pytest.mark.parametrize("name", sorted(SHELL_PARITY))
def test_a_file_through_the_sync_shell_is_judged_as_stdin_through_the_async_one(
    name: str, tmp_path: Path
) -> None:
    """`check FILE` runs the sync shell, `check -` the async one: the reports are the same."""
    stream = tmp_path / "run.jsonl"
    stream.write_bytes(SHELL_PARITY[name])
    by_file = agui("check", stream, "--format", "json", cwd=tmp_path)
    by_stdin = agui("check", "-", "--format", "json", stdin=stream.read_bytes(), cwd=tmp_path)
    assert by_file.returncode == by_stdin.returncode, by_file.stderr + by_stdin.stderr
    file_report, stdin_report = json.loads(by_file.stdout), json.loads(by_stdin.stdout)
    assert file_report.pop("source") == str(stream) and stdin_report.pop("source") == "-"
    assert unplaced(file_report) == unplaced(stdin_report)  # only a file has lines
    if name == "rejected":
        assert (file_report["verdict"]["line"], stdin_report["verdict"]["line"]) == (2, None)
    if name == "end discarded":
        assert file_report["runCounts"] == {"open": 1}


def test_the_command_as_a_process_collects_less_and_a_call_leaves_the_collector_alone() -> None:
    probe = (
        "import gc, sys\n"
        "from agui_pipeline import cli\n"
        "cli.main = lambda: print(gc.get_threshold()[0], gc.get_freeze_count() > 0) or 0\n"
        "cli.run()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.split() == ["100000", "True"], done.stderr
    threshold = gc.get_threshold()
    assert check(str(ROOT / "examples" / "weather.sse"))[0] == 0
    assert gc.get_threshold() == threshold


def test_each_command_is_a_module_that_registers_itself_one_way() -> None:
    """Every command is a module under cli/ with ``register(commands)``, which adds the one
    subparser ``COMMANDS`` lists it under, with its handler; no module registers a
    command ``COMMANDS`` does not name."""
    import argparse
    import importlib

    from agui_pipeline.cli import COMMANDS

    folder = ROOT / "pipeline" / "cli"
    registering = {p.stem for p in folder.glob("*.py") if "\ndef register(" in p.read_text()}
    assert registering == {module.rpartition(".")[2] for module in COMMANDS.values()}
    assert set(COMMANDS) == registering  # each module is named for its command
    for name, module in COMMANDS.items():
        commands = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).register(commands)
        assert list(commands.choices) == [name]
        assert callable(commands.choices[name].get_default("handler")), name


def test_every_command_help_is_plain_text_and_lists_its_exit_statuses() -> None:
    from agui_pipeline.cli import COMMANDS

    for command in [None, *COMMANDS]:
        text = agui(*([command] if command else []), "--help").stdout
        assert "exit status" in text, command
        assert re.search(r"^  0  ", text, re.MULTILINE), command
        assert "closed pipe" in text, command
        for markup in ("``", ":mod:", ":func:", ":class:", ":data:"):
            assert markup not in text, (command, markup)


def test_a_directory_is_checked_for_its_recordings(tmp_path: Path) -> None:
    run = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    nested = tmp_path / "recordings" / "nested"
    nested.mkdir(parents=True)
    (tmp_path / "recordings" / "a.sse").write_bytes(encode(run, "sse"))
    (nested / "b.jsonl").write_bytes(encode(run, "jsonl"))
    (nested / "c.json").write_bytes(encode(run, "json"))  # a JSON array: a recording
    (nested / "d.ndjson").write_bytes(encode(run, "jsonl"))
    (nested / "capabilities.json").write_text('{"tools": {"supported": true}}')  # not one
    (nested / "input.json").write_text('{"threadId": "t", "runId": "r", "messages": []}')
    (nested / "notes.txt").write_text("not a recording")
    hidden = tmp_path / "recordings" / ".cache"
    hidden.mkdir()
    (hidden / "e.sse").write_bytes(b"data: {not json}\n\n")
    done = agui("check", tmp_path / "recordings", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f"{tmp_path / 'recordings' / name}: completed"
        for name in ("a.sse", "nested/b.jsonl", "nested/c.json", "nested/d.ndjson")
    ]
    one = json.loads(agui("check", tmp_path / "recordings" / "nested", "--format", "json").stdout)
    assert [report["source"] for report in one] == [
        str(nested / n) for n in ("b.jsonl", "c.json", "d.ndjson")
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = agui("check", empty)
    assert refused.returncode == 2 and f"no recordings under {empty}" in refused.stderr
