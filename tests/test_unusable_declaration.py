"""Seed 000's rule in every front end: a declaration the consumer cannot use never stops a
check. "A consumer MUST NOT use a declaration it cannot validate", and "a rejected or
absent declaration MUST NOT prevent a run" (``/spec/1.1/basic/capabilities``, Error
Handling); seed 004 adds that a CES agent resource no declaration can be derived from is
such a declaration.

Who made the mistake decides the answer: a file the operator named that is not there, is
a directory or cannot be opened ends the command with exit 2 naming it; a file that opens
but holds no usable declaration is the producer's mistake, reported on every stream as
``reconcile.declaration-unusable`` while the stream is judged as undeclared.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agui_pipeline._json import MAX_DOCUMENT
from agui_pipeline.cli import main
from agui_pipeline.declaration import Declaration
from agui_pipeline.http.serve import Replay, ReplayServer
from agui_pipeline.model.declared import derive_declaration, read_declaration

from tests.cli_run import agui
from tests.conftest import ROOT
from tests.streams import encode
from tests.test_relay import relay_run

pytest_plugins = ("pytester",)

UNUSABLE = "reconcile.declaration-unusable"
WEATHER = ROOT / "examples" / "weather.sse"
RUN: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t-1", "runId": "r-1"},
    {"type": "REASONING_START", "messageId": "s"},
    {"type": "REASONING_END", "messageId": "s"},
    {"type": "RUN_FINISHED", "threadId": "t-1", "runId": "r-1"},
]

# (what is wrong, the file's bytes, the pointer the finding names, what it says)
DECLARATIONS = [
    ("not JSON", b"{not json", "", "not JSON"),
    ("not an object", b"[]", "", "expected a JSON object, found array"),
    ("a malformed field", b'{"reasoning": {"supported": "yes"}}', "/reasoning/supported", "yes"),
    (
        "a member named twice",
        b'{"reasoning": {"supported": true}, "reasoning": {"supported": false}}',
        "/reasoning",
        'the member "reasoning" appears twice',
    ),
    (
        "past the depth limit",
        b'{"custom": ' + b'{"a": ' * 1100 + b"1" + b"}" * 1100 + b"}",
        "",
        "depth limit exceeded",
    ),
]
RESOURCES = [
    ("not JSON", b"{not json", "", "not JSON"),
    ("not an object", b"[]", "", "expected an object, found list"),
    ("a field of the wrong type", b'{"displayName": 3}', "/displayName", "expected a string"),
    ("a member named twice", b'{"tools": [], "tools": ["t"]}', "/tools", "appears twice"),
]


def check(*argv: str | Path) -> tuple[int, str]:
    out = io.StringIO()
    status = main(["check", *map(str, argv)], out=out)
    return status, out.getvalue()


def unusable(diagnostics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in diagnostics if d["code"] == UNUSABLE]


def assert_names(finding: dict[str, Any], file: Path, pointer: str, said: str) -> None:
    assert finding["severity"] == "warning"
    assert finding["declared"] == pointer
    assert str(file) in finding["message"] and said in finding["message"]
    assert f"at {pointer or '/'}" in finding["message"]
    assert "as for an agent that declared nothing" in finding["message"]


def judged_as_undeclared(report: dict[str, Any], stream: Path) -> None:
    """The verdict and every other finding are the stream's own, as with no declaration."""
    alone = json.loads(check(stream, "--format", "json")[1])
    assert report["verdict"] == alone["verdict"]
    others = [d for d in report["diagnostics"] if d["code"] != UNUSABLE]
    assert others == alone["diagnostics"]


@pytest.fixture
def stream(tmp_path: Path) -> Path:
    path = tmp_path / "run.sse"
    path.write_bytes(encode(RUN, "sse"))
    return path


# -- check FILE ----------------------------------------------------------------------------


@pytest.mark.parametrize(("case", "content", "pointer", "said"), DECLARATIONS)
def test_check_judges_the_stream_as_undeclared_and_names_the_declaration(
    stream: Path, tmp_path: Path, case: str, content: bytes, pointer: str, said: str
) -> None:
    declaration = tmp_path / "caps.json"
    declaration.write_bytes(content)
    status, text = check(stream, "--capabilities", declaration, "--format", "json")
    report = json.loads(text)
    assert status == 1, case  # a warning fails the default gate, as any warning does
    (finding,) = unusable(report["diagnostics"])
    assert_names(finding, declaration, pointer, said)
    judged_as_undeclared(report, stream)
    assert check(stream, "--capabilities", declaration, "--fail-on", "error")[0] == 0


@pytest.mark.parametrize(("case", "content", "pointer", "said"), RESOURCES)
def test_check_judges_the_stream_as_undeclared_when_no_declaration_derives_from_a_resource(
    stream: Path, tmp_path: Path, case: str, content: bytes, pointer: str, said: str
) -> None:
    resource = tmp_path / "agent.json"
    resource.write_bytes(content)
    status, text = check(stream, "--agent-resource", resource, "--format", "json")
    report = json.loads(text)
    assert status == 1, case
    (finding,) = unusable(report["diagnostics"])
    assert_names(finding, resource, pointer, said)
    assert "agent resource" in finding["message"]
    judged_as_undeclared(report, stream)


def test_a_declaration_past_the_size_limit_is_the_producers_and_is_not_read_whole(
    stream: Path, tmp_path: Path
) -> None:
    """200 MB (sparse, so the test writes nothing): read no further than the cap, reported."""
    huge = tmp_path / "caps.json"
    with huge.open("wb") as file:
        file.truncate(200 * 1024 * 1024)
    for fmt in ("json", "sarif", "text"):
        status, text = check(stream, "--capabilities", huge, "--format", fmt)
        assert status == 1 and UNUSABLE in text
    report = json.loads(check(stream, "--capabilities", huge, "--format", "json")[1])
    (finding,) = unusable(report["diagnostics"])
    assert_names(finding, huge, "", f"over the {MAX_DOCUMENT:,}-byte cap")


def test_an_endless_declaration_is_not_read() -> None:
    """/dev/zero never ends: a device is named for what it is and never read (a reader
    without a bound would never return)."""
    declaration = read_declaration(Path("/dev/zero"))
    assert not declaration.usable
    assert "a character device, not a file" in declaration.notes[0].message


def test_the_finding_is_placed_in_the_declaration_file(stream: Path, tmp_path: Path) -> None:
    declaration = tmp_path / "caps.json"
    declaration.write_bytes(b'{\n  "reasoning": {\n    "supported": "yes"\n  }\n}\n')
    status, text = check(stream, "--capabilities", declaration)
    assert status == 1
    assert f"{declaration}:3:5: warning {UNUSABLE}:" in text


# -- many sources, other processes, a cluster -------------------------------------------------


def test_every_source_of_a_directory_is_judged_each_with_the_finding(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("a.sse", "b.sse", "c.sse"):
        (runs / name).write_bytes(encode(RUN, "sse"))
    declaration = tmp_path / "caps.json"
    declaration.write_bytes(b"[]")
    for spread in ([], ["--jobs", "2"]):
        status, text = check(runs, "--capabilities", declaration, "--format", "json", *spread)
        reports = json.loads(text)
        assert status == 1 and len(reports) == 3
        for report in reports:
            assert report["verdict"]["outcome"] == "completed"
            (finding,) = unusable(report["diagnostics"])
            assert_names(finding, declaration, "", "expected a JSON object")


def test_the_declaration_is_read_once_for_every_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.sse", "b.sse", "c.sse"):
        (tmp_path / name).write_bytes(encode(RUN, "sse"))
    declaration = tmp_path / "caps.json"
    declaration.write_bytes(b'{"reasoning": {"supported": false}}')
    reads: list[Any] = []

    def counted(source: Any) -> Declaration:
        reads.append(source)
        return read_declaration(source)

    monkeypatch.setattr("agui_pipeline._checking.source.read_declaration", counted)
    sources = [tmp_path / name for name in ("a.sse", "b.sse", "c.sse")]
    status, text = check(*sources, "--capabilities", declaration, "--format", "json")
    assert status == 1
    for report in json.loads(text):
        assert [d["code"] for d in report["diagnostics"]][:1] == ["reconcile.false-contradicted"]
    assert reads == [declaration]


def test_check_on_a_cluster_judges_every_source_as_undeclared(stream: Path, tmp_path: Path) -> None:
    declaration = tmp_path / "caps.json"
    declaration.write_bytes(b'{"reasoning": {"supported": "yes"}}')
    done = agui(
        "check", stream, stream, "--capabilities", declaration, "--scheduler", "local:1",
        "--format", "json",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    for report in json.loads(done.stdout):
        assert report["verdict"]["outcome"] == "completed"
        (finding,) = unusable(report["diagnostics"])
        assert_names(finding, declaration, "/reasoning/supported", "yes")


def test_check_fleet_judges_every_recording_as_undeclared(stream: Path, tmp_path: Path) -> None:
    from agui_pipeline.fleet import check_fleet

    declaration = tmp_path / "caps.json"
    declaration.write_bytes(b"{not json")
    with check_fleet([str(stream)], scheduler="local:1", capabilities=str(declaration)) as run:
        (result,) = list(run)
    assert result.status == 1 and result.outcome == "completed"
    assert result.findings.groups[0].code == UNUSABLE


# -- a URL -----------------------------------------------------------------------------------


def test_check_url_judges_the_stream_as_undeclared(tmp_path: Path) -> None:
    declaration = tmp_path / "caps.json"
    declaration.write_bytes(b'{"reasoning": {"supported": "yes"}}')
    run_input = tmp_path / "input.json"
    run_input.write_text(json.dumps({"threadId": "t-1", "runId": "r-1", "messages": []}))
    with ReplayServer(Replay(RUN)) as agent:
        status, text = check(
            agent.url, "--input", run_input, "--capabilities", declaration, "--format", "json"
        )
    report = json.loads(text)
    assert status == 1 and report["verdict"]["outcome"] == "completed"
    (finding,) = unusable(report["diagnostics"])
    assert_names(finding, declaration, "/reasoning/supported", "yes")


# -- the proxy -------------------------------------------------------------------------------


@pytest.fixture
def agent() -> Iterator[ReplayServer]:
    with ReplayServer(Replay(RUN)) as running:
        yield running


@pytest.mark.parametrize(
    ("option", "content", "said"),
    [
        ("--capabilities", b'{"reasoning": {"supported": "yes"}}', "/reasoning/supported"),
        ("--capabilities", b'{"tools": {}, "tools": {}}', "appears twice"),
        ("--agent-resource", b'{"displayName": 3}', "/displayName"),
    ],
)
def test_the_proxy_starts_says_so_once_and_reports_the_finding_on_every_run(
    agent: ReplayServer, tmp_path: Path, option: str, content: bytes, said: str
) -> None:
    declaration = tmp_path / "declared.json"
    declaration.write_bytes(content)
    command = [
        sys.executable, "-m", "agui_pipeline", "proxy", "--upstream", agent.url, "--port", "0",
        "--log-format", "json", option, str(declaration),
    ]  # fmt: skip
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as proxy:
        try:
            assert proxy.stderr is not None
            warned = proxy.stderr.readline()
            listening = proxy.stderr.readline()
            url = listening.split()[1]
            results = [relay_run(url), relay_run(url)]
        finally:
            proxy.terminate()
        logged = [json.loads(line) for line in proxy.stderr.read().splitlines()]
    assert warned.startswith("agui-pipeline: ") and str(declaration) in warned and said in warned
    assert listening.startswith("relaying ")
    assert all(result.verdict.completed for result in results)
    findings = [line["diagnostic"] for line in logged if "diagnostic" in line]
    assert [d["code"] for d in findings] == [UNUSABLE, UNUSABLE]
    assert all(str(declaration) in d["message"] for d in findings)


# -- the library, and the pytest plugin's pipeline -------------------------------------------


def test_a_pipeline_names_the_declaration_file_it_cannot_use(tmp_path: Path) -> None:
    declaration = tmp_path / "caps.json"
    declaration.write_bytes(b'{"state": {"deltas": true, "deltas": false}}')
    (note,) = read_declaration(declaration).notes
    assert note.pointer == "/state/deltas" and str(declaration) in note.message
    resource = tmp_path / "agent.json"
    resource.write_bytes(b'{"childAgents": "a"}')
    (note,) = derive_declaration(resource).notes
    assert note.pointer == "/childAgents" and str(resource) in note.message


def test_a_member_named_twice_is_found_at_any_depth_orjson_reads() -> None:
    deep = b'{"custom": ' + b'{"a": ' * 1000 + b'{"x": 1, "x": 2}' + b"}" * 1000 + b"}"
    (note,) = read_declaration(deep).notes
    assert note.code.id == UNUSABLE
    assert note.pointer == "/custom" + "/a" * 1000 + "/x"
    # The same name in different objects, and a colon or quote inside a string, are not twice.
    fine = b'{"custom": {"a": {"x": "a:\\":b"}, "b": {"x": 1}, "c": [{"x": 1}, {"x": 2}]}}'
    assert read_declaration(fine).usable


def test_the_pytest_plugin_runs_with_a_declaration_it_cannot_use(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        f"""
        from pathlib import Path
        from agui_pipeline import Pipeline, ReplayServer, Replay

        RUN = {RUN!r}

        def test_unusable(agui_run, tmp_path):
            declaration = tmp_path / "caps.json"
            declaration.write_bytes(b"[]")
            with ReplayServer(Replay(RUN)) as agent:
                result = agui_run(
                    agent.url,
                    {{"threadId": "t-1", "runId": "r-1", "messages": []}},
                    pipeline=Pipeline(capabilities=declaration),
                )
            assert result.verdict.completed
            (note,) = [d for d in result.diagnostics if d.code == "{UNUSABLE}"]
            assert str(declaration) in note.message and "expected a JSON object" in note.message
        """
    )
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


# -- the operator's mistakes: exit 2, naming the file -----------------------------------------


def operator_mistakes(tmp_path: Path) -> list[tuple[Path, str]]:
    plain = tmp_path / "plain.txt"
    plain.write_text("")
    return [
        (tmp_path / "missing.json", "no such file"),
        (tmp_path, "is a directory"),
        (plain / "caps.json", "cannot open"),  # a path through a file: ENOTDIR
    ]


@pytest.mark.parametrize("option", ["--capabilities", "--agent-resource"])
def test_check_exits_2_naming_a_file_the_operator_got_wrong(
    stream: Path, tmp_path: Path, option: str
) -> None:
    for path, said in operator_mistakes(tmp_path):
        done = agui("check", stream, option, path)
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert str(path) in done.stderr and said in done.stderr
        assert "Traceback" not in done.stderr


def test_the_proxy_and_check_fleet_refuse_a_file_the_operator_got_wrong(tmp_path: Path) -> None:
    from agui_pipeline.fleet import check_fleet

    for path, said in operator_mistakes(tmp_path):
        done = agui("proxy", "--upstream", "http://127.0.0.1:9/", "--capabilities", path)
        assert done.returncode == 2 and str(path) in done.stderr and said in done.stderr
        with pytest.raises(OSError, match=said):
            check_fleet(["run.sse"], scheduler="local:1", capabilities=str(path))
