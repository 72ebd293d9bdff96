"""A new user's first runs of ``check`` (issue 26): the broken streams of tests/walkthrough,
the serve-then-check demo (docs/guides/serve.md), and an upstream cut short behind the proxy.

Each broken stream holds one producer mistake. What a user needs from the report is
what to fix and where: the gate fails it as a linter would, the finding leads with
``path:line:col: severity code: message`` (what editors and CI annotations pick up),
then the event, the pointer, the spec page and the catalog's fix line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest
from agui_pipeline import Replay, ReplayServer
from agui_pipeline.catalog import ALL
from agui_pipeline.http.serve import read_recording

from tests.cli_run import agui
from tests.conftest import ROOT

WALKTHROUGH = ROOT / "tests" / "walkthrough"
WEATHER = ROOT / "examples" / "weather.sse"

# stream → (where its first finding is, what that finding says beyond the code)
PLACED = {
    "unknown-call.sse": ("3:51", "warning lint.result-call-unseen", "call 'nope'"),
    "bad-delta.sse": ("5:38", "warning conversation.state-patch-failed", '"/missing"'),
    "snapshot-contradicts.sse": ("9:77", "warning lint.snapshot-contradicts-stream", "'Goodbye'"),
    "args-not-json.sse": ("7:31", "warning lint.arguments-not-json", "'{\"city\": Lis'"),
    "lowercase-type.sse": (
        "3:7",
        "warning enforce.unknown-event",
        '"text_message_start" (did you mean TEXT_MESSAGE_START?)',
    ),
    "messageID.sse": (
        "3:7",
        "error enforce.malformed",
        '"messageID" is there: did you mean messageId?',
    ),
    # The column counts in the file: the frame is line 2, cut short after 48 characters.
    "not-json.jsonl": ("2:49", "error parse.not-json", "unexpected end of data"),
}

REJECTED = {"lowercase-type.sse", "messageID.sse", "not-json.jsonl"}
"""The streams the consumer rejects (the rest complete with warnings)."""


@pytest.mark.parametrize("name", sorted(PLACED))
def test_each_broken_stream_fails_the_default_gate_and_says_where_and_how_to_fix(
    name: str,
) -> None:
    stream = WALKTHROUGH / name
    at, said, detail = PLACED[name]
    done = agui("check", stream)
    assert done.returncode == 1, done.stdout
    lines = done.stdout.splitlines()
    (lead,) = [n for n, line in enumerate(lines) if line.startswith(f"{stream}:{at}: ")]
    assert lines[lead].startswith(f"{stream}:{at}: {said}: "), lines[lead]
    assert detail in lines[lead]
    code = said.split()[1]
    where, fix = lines[lead + 1], lines[lead + 2]
    assert where.startswith("  event ") and f"spec: {ALL[code].url}" in where
    assert fix == f"  fix: {ALL[code].what_to_do} (agui-pipeline explain {code})"
    # The same finding in the JSON report, field by field.
    report = json.loads(agui("check", stream, "--format", "json").stdout)
    every = [*report["diagnostics"], report["verdict"]]
    (finding,) = [f for f in every if f["code"] == code and f["line"] == int(at.split(":")[0])]
    assert (finding["file"], finding["line"], finding["column"]) == (
        str(stream),
        *map(int, at.split(":")),
    )
    assert finding["fix"] == ALL[code].what_to_do and finding["spec"] == ALL[code].spec
    assert detail in finding["message"] and code not in finding["message"]


def test_a_warning_passes_the_lenient_gate_and_a_rejection_does_not() -> None:
    for name in PLACED:
        lenient = agui("check", WALKTHROUGH / name, "--fail-on", "error", "--format", "json")
        completed = json.loads(lenient.stdout)["verdict"]["outcome"] == "completed"
        assert lenient.returncode == (0 if completed else 1), name
        assert completed is (name not in REJECTED)


def test_a_run_error_reads_as_one() -> None:
    stream = WALKTHROUGH / "run-error.sse"
    done = agui("check", stream)
    assert done.returncode == 1
    assert done.stdout.startswith(f"{stream}: run-error, failed: 1 run(s) ended with RUN_ERROR")
    assert "run 'r1' (thread 't1'): error: model quota exceeded" in done.stdout


def test_a_misspelt_declaration_member_gets_a_suggestion_at_its_line() -> None:
    declaration = WALKTHROUGH / "hitl.capabilities.json"
    done = agui("check", WEATHER, "--capabilities", declaration)
    assert done.returncode == 1
    assert (
        f"{declaration}:1:2: warning reconcile.declaration-unrecognised: declaration "
        "/humaninTheLoop: a member this version of AgentCapabilities does not define; kept, "
        "and not read (did you mean humanInTheLoop?)"
    ) in done.stdout


def _serve(*flags: str) -> Iterator[str]:
    command = [sys.executable, "-m", "agui_pipeline", "serve", str(WEATHER), "--port", "0"]
    with subprocess.Popen([*command, *flags], stderr=subprocess.PIPE, text=True) as server:
        try:
            assert server.stderr is not None
            yield server.stderr.readline().rsplit(" at ", 1)[1].strip()
        finally:
            server.terminate()
            server.wait(timeout=10)


def test_the_readme_demo_passes_the_strictest_gate() -> None:
    """The walk-through of docs/guides/serve.md: check the example, serve it, check the URL — at
    ``--fail-on info``, where any finding at all fails."""
    assert agui("check", WEATHER, "--fail-on", "info").returncode == 0
    for url in _serve():
        done = agui("check", url, "--fail-on", "info")
        assert done.returncode == 0, done.stdout
        assert done.stdout.splitlines()[0] == f"{url}: completed"
    for url in _serve("--no-echo-ids"):  # the recording's own ids: not the request's
        done = agui("check", url, "-q")
        assert done.returncode == 1 and "2 warning(s)" in done.stdout


@pytest.mark.parametrize("gate", [[], ["--fail-on", "error"]])
def test_an_upstream_cut_behind_the_proxy_never_reads_as_success(gate: list[str]) -> None:
    cut = Replay(read_recording(WEATHER.read_bytes()), drop_after=5)
    with ReplayServer(cut) as agent:
        command = [sys.executable, "-m", "agui_pipeline", "proxy", "--upstream", agent.url]
        with subprocess.Popen(
            [*command, "--port", "0"], stderr=subprocess.PIPE, text=True
        ) as proxy:
            try:
                assert proxy.stderr is not None
                url = proxy.stderr.readline().split()[1]
                done = agui("check", url, *gate)
            finally:
                proxy.terminate()
                proxy.wait(timeout=10)
    assert done.returncode == 1, done.stdout
    assert done.stdout.startswith(f"{url}: run-error, failed: 1 run(s) ended with RUN_ERROR")
    assert "error: upstream stream verify.truncated" in done.stdout
