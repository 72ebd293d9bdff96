"""The terminal: colour and links on a TTY only, --quiet, progress, a closed pipe,
missing extras."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import agui
from tests.conftest import ROOT
from tests.streams import encode
from tests.test_cli_gate import CLEAN, MISSPELT, TRUNCATED

COMMAND = [sys.executable, "-m", "agui_pipeline"]
LINK = "\x1b]8;;https://ag-ui.com/spec/1.1/basic/processing\x1b\\"


def _on_a_terminal(argv: list[str], env: dict[str, str]) -> str:
    """What ``check`` writes to stdout when stdout is a pseudo-terminal."""
    controller, terminal = pty.openpty()
    with subprocess.Popen(
        [*COMMAND, *argv], stdout=terminal, stderr=subprocess.DEVNULL, cwd=ROOT, env=env
    ) as process:
        os.close(terminal)
        chunks = []
        while True:
            try:
                chunk = os.read(controller, 1 << 16)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=60)
    os.close(controller)
    return b"".join(chunks).decode()


@pytest.fixture
def misspelt(tmp_path: Path) -> Path:
    path = tmp_path / "misspelt.sse"
    path.write_bytes(encode(MISSPELT, "sse"))
    return path


def test_colour_and_links_on_a_terminal_only(misspelt: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    coloured = _on_a_terminal(["check", str(misspelt)], env)
    assert "\x1b[32mcompleted\x1b[0m" in coloured
    assert "\x1b[33mwarning\x1b[0m enforce.stripped" in coloured
    assert LINK in coloured
    piped = agui("check", misspelt, env={"NO_COLOR": "", "FORCE_COLOR": ""}).stdout
    assert "\x1b" not in piped
    assert "spec: https://ag-ui.com/spec/1.1/basic/processing\n" in piped  # the whole URL


def test_no_color_and_force_color_as_no_color_org_defines_them(misspelt: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    # NO_COLOR, set and not empty: no escape at all on a terminal, hyperlinks included.
    plain = _on_a_terminal(["check", str(misspelt)], {**env, "NO_COLOR": "1"})
    assert "\x1b" not in plain
    assert "spec: https://ag-ui.com/spec/1.1/basic/processing" in plain
    assert LINK in _on_a_terminal(["check", str(misspelt)], {**env, "NO_COLOR": ""})  # empty: unset
    # FORCE_COLOR: colour in a pipe (a CI log), without the hyperlinks.
    forced = agui("check", misspelt, env={"NO_COLOR": "", "FORCE_COLOR": "1"}).stdout
    assert "\x1b[33mwarning\x1b[0m enforce.stripped" in forced
    assert LINK not in forced
    assert "\x1b" not in agui("check", misspelt, env={"NO_COLOR": "", "FORCE_COLOR": ""}).stdout
    both = agui("check", misspelt, env={"NO_COLOR": "1", "FORCE_COLOR": "1"}).stdout
    assert "\x1b" not in both  # the user's opt-out wins
    # The command line overrides both.
    assert LINK in agui("check", misspelt, "--color", "always", env={"NO_COLOR": "1"}).stdout
    assert (
        "\x1b" not in agui("check", misspelt, "--color", "never", env={"FORCE_COLOR": "1"}).stdout
    )


def test_quiet_prints_the_verdict_lines_only(tmp_path: Path, misspelt: Path) -> None:
    truncated = tmp_path / "truncated.sse"
    truncated.write_bytes(encode(TRUNCATED, "sse"))
    completed = agui("check", misspelt, truncated, "--quiet")
    assert completed.stdout.splitlines() == [
        f"{misspelt}: completed, failed: 1 warning(s) (--fail-on warning)",
        f"{truncated}: truncated",
    ]


def test_progress_line_for_a_file(misspelt: Path) -> None:
    completed = agui("check", misspelt, "--progress")
    assert "4 events" in completed.stderr and "1 diagnostics" in completed.stderr
    assert agui("check", misspelt).stderr == ""  # stderr is not a terminal here


@pytest.mark.parametrize("report", [["--format", "json", "--conversation"], []])
def test_no_traceback_when_the_reader_closes_the_pipe(tmp_path: Path, report: list[str]) -> None:
    messages = 6_666  # three events each: 20,000 events with the run's two
    events: list[dict[str, Any]] = [CLEAN[0]]
    for number in range(messages):
        events += [
            {"type": "TEXT_MESSAGE_START", "messageId": f"m{number}", "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"m{number}", "delta": "x" * 40},
            {"type": "TEXT_MESSAGE_END", "messageId": f"m{number}", "extra": 1},  # a warning
        ]
    events.append(CLEAN[-1])
    assert len(events) == 20_000
    big = tmp_path / "big.sse"
    big.write_bytes(encode(events, "sse"))
    with subprocess.Popen(
        [*COMMAND, "check", str(big), *report],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    ) as checker:
        assert checker.stdout is not None and checker.stderr is not None
        head = subprocess.run(["head", "-c", "10"], stdin=checker.stdout, capture_output=True)
        checker.stdout.close()
        errors = checker.stderr.read()
        checker.wait(timeout=60)
    assert len(head.stdout) == 10
    assert errors == b"", errors.decode()[-2000:]
    assert checker.returncode == 2


def test_missing_extras_are_named_in_one_line(misspelt: Path) -> None:
    for blocked, argv, extra in [
        ("httpx", ["check", "http://127.0.0.1:9/"], "http"),
        ("uvicorn", ["serve", str(misspelt)], "serve"),
    ]:
        without = (
            f"import sys; sys.modules[{blocked!r}] = None; "
            "from agui_pipeline.cli import main; raise SystemExit(main())"
        )
        completed = subprocess.run(
            [sys.executable, "-c", without, *argv], capture_output=True, text=True, cwd=ROOT
        )
        assert completed.returncode == 2
        assert completed.stderr.count("\n") == 1, completed.stderr
        assert f"pip install 'agui-pipeline[{extra}]'" in completed.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--version"],
        ["check", "--help"],
        ["serve", "--help"],
        ["proxy", "--help"],
        ["explain", "--help"],
        ["explain", "--markdown"],
        ["explain", "enforce.stripped"],
        ["conformance", "--help"],
        ["bench", "--help"],
    ],
)
def test_a_closed_pipe_ends_every_command_alike(argv: list[str]) -> None:
    """The reader is gone before the first byte: status 2, nothing on stderr."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([*COMMAND, *argv], stdout=write, stderr=subprocess.PIPE, cwd=ROOT)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (2, b"")
