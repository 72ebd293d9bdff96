"""Fleet scale: sources listed from directories, globs and object storage, and checked on
a real Dask cluster (worker processes started and stopped here) with the report one
process prints; the library's results and producer report; a worker killed mid-run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest
from agui_pipeline._checking import recordings
from agui_pipeline.fleet import (
    FleetReport,
    ProducerFromPath,
    ProducerFromRun,
    SourceResult,
    check_fleet,
)
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import WorkerPlugin
from fsspec.implementations.local import LocalFileSystem

from tests.cli_run import agui, write_json
from tests.streams import encode
from tests.test_cli_gate import CLEAN, MISSPELT, RUN_ERROR, TRUNCATED
from tests.test_cli_input import ANSWERS_FRONTEND_TOOL, RUN_INPUT

FORMATS = ("text", "json", "sarif", "junit")


def _started(agent: str, version: str | None) -> dict[str, Any]:
    start: dict[str, Any] = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
    start["metadata"] = {"agent": agent}
    if version is not None:
        start["protocolVersion"] = version
    return start


def _archive(root: Path) -> Path:
    """Recordings of two agents, one directory each, a run input beside each recording,
    and files a directory listing must leave out (hidden, not named for a stream)."""
    runs = root / "runs"
    streams = {
        "agent-a/clean.sse": [_started("a", "1.1"), *CLEAN[1:]],
        "agent-a/misspelt.sse": [_started("a", "1.1"), *MISSPELT[1:]],
        "agent-a/sub/misspelt-again.jsonl": [_started("a", "1.0"), *MISSPELT[1:]],
        "agent-b/truncated.sse": [_started("b", None), *TRUNCATED[1:]],
        "agent-b/run-error.sse": [_started("b", None), *RUN_ERROR[1:]],
        "agent-b/frontend.sse": ANSWERS_FRONTEND_TOOL,
    }
    for name, events in streams.items():
        path = runs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(encode(events, "jsonl" if name.endswith(".jsonl") else "sse"))
        stem = path.name.rsplit(".", 1)[0]
        write_json(path.parent / f"{stem}.input.json", RUN_INPUT)
    (runs / "agent-a" / ".hidden.sse").write_bytes(encode(CLEAN, "sse"))
    (runs / "agent-a" / "notes.txt").write_text("not a recording")
    return runs


# -- listing: paths, directories, globs, URLs -------------------------------------------


def test_a_directory_lists_its_recordings_in_path_order_leaving_out_hidden_files(
    tmp_path: Path,
) -> None:
    runs = _archive(tmp_path)
    listed = [name for name, _ in recordings.expand(str(runs))]
    assert listed == [
        f"{runs}/agent-a/clean.sse",
        f"{runs}/agent-a/misspelt.sse",
        f"{runs}/agent-a/sub/misspelt-again.jsonl",
        f"{runs}/agent-b/frontend.sse",
        f"{runs}/agent-b/run-error.sse",
        f"{runs}/agent-b/truncated.sse",
    ]
    sizes = [size for _, size in recordings.expand(str(runs))]
    assert sizes == [Path(name).stat().st_size for name in listed]


def test_a_directory_takes_the_json_files_that_hold_a_stream(tmp_path: Path) -> None:
    (tmp_path / "array.json").write_bytes(encode(CLEAN, "json"))
    (tmp_path / "lines.json").write_bytes(encode(CLEAN, "jsonl"))
    write_json(tmp_path / "fixture.json", {"stream": CLEAN, "expect": {}})
    write_json(tmp_path / "capabilities.json", {"tools": {"supported": True}})
    write_json(tmp_path / "input.json", RUN_INPUT)
    for listed in (str(tmp_path), f"file://{tmp_path}"):
        names = [Path(name).name for name, _ in recordings.expand(listed)]
        assert names == ["array.json", "fixture.json", "lines.json"]


def test_a_directory_or_glob_that_names_nothing_is_refused_before_any_report(
    tmp_path: Path,
) -> None:
    (tmp_path / "clean.sse").write_bytes(encode(CLEAN, "sse"))
    (tmp_path / "empty").mkdir()
    for nothing in (tmp_path / "empty", tmp_path / "*.jsonl"):
        refused = agui("check", tmp_path / "clean.sse", nothing, "--scheduler", "local:1")
        assert refused.returncode == 2 and refused.stdout == ""
        assert "no recordings under" in refused.stderr or "no file matches" in refused.stderr


def test_globs_match_one_segment_with_star_and_any_depth_with_double_star(
    tmp_path: Path,
) -> None:
    runs = _archive(tmp_path)

    def names(pattern: str) -> list[str]:
        return [name.removeprefix(f"{runs}/") for name, _ in recordings.expand(pattern)]

    assert names(f"{runs}/*/m*.sse") == ["agent-a/misspelt.sse"]
    assert names(f"{runs}/**/*.jsonl") == ["agent-a/sub/misspelt-again.jsonl"]
    assert names(f"{runs}/**/misspelt.sse") == ["agent-a/misspelt.sse"]
    assert len(names(f"{runs}/**")) == 13  # six recordings, their six inputs, the notes
    assert names(f"{runs}/agent-[!a]/*.input.json") == [
        "agent-b/frontend.input.json",
        "agent-b/run-error.input.json",
        "agent-b/truncated.input.json",
    ]
    assert names(f"{runs}/*/?lean.sse") == ["agent-a/clean.sse"]
    # A glob that matches nothing says so once listed (check says it before any report).
    with pytest.raises(recordings.NothingFound, match="no file matches"):
        names(f"{runs}/*/nothing-*.sse")


def test_file_urls_list_as_the_local_directory_does(tmp_path: Path) -> None:
    runs = _archive(tmp_path)
    local = [name for name, _ in recordings.expand(str(runs))]
    stored = [name for name, _ in recordings.expand(f"file://{runs}/")]
    assert stored == [f"file://{name}" for name in local]
    globbed = [name for name, _ in recordings.expand(f"file://{runs}/**/*.jsonl")]
    assert globbed == [f"file://{runs}/agent-a/sub/misspelt-again.jsonl"]


def test_a_run_input_is_named_from_its_recording() -> None:
    pattern = "{dir}/{stem}.input.json"
    assert recordings.paired(pattern, "s3://b/runs/a.sse") == "s3://b/runs/a.input.json"
    assert recordings.paired("inputs/{name}", "a.sse") == "inputs/a.sse"
    with pytest.raises(ValueError, match="run-input"):
        recordings.paired("{path}.json", "a.sse")


def test_a_run_input_pattern_takes_only_its_named_fields() -> None:
    # str.format would read attributes and indices off the values (issue 34): refused.
    assert recordings.paired("{{x}}/{stem}", "runs/a.sse") == "{x}/a"
    for hostile in ("{dir.__class__}", "{name[0]}", "{0}", "{}", "{stem!r}", "{dir:>40}"):
        with pytest.raises(ValueError, match="is none of them"):
            recordings.paired(hostile, "runs/a.sse")
    done = agui("check", "x.sse", "--run-input", "{dir.__class__.__mro__}")
    assert done.returncode == 2 and "is none of them" in done.stderr
    assert "class" not in done.stderr.replace("{dir.__class__.__mro__}", "")


def test_the_listing_visits_each_directory_once_through_links(tmp_path: Path) -> None:
    runs = tmp_path / "d"
    (runs / "sub").mkdir(parents=True)
    (runs / "a.sse").write_bytes(encode(CLEAN, "sse"))
    (runs / "sub" / "b.sse").write_bytes(encode(CLEAN, "sse"))
    (runs / "again").symlink_to(".")  # a loop: d/again/again/... is d
    (runs / "sub" / "up").symlink_to("..")
    (runs / "elsewhere").symlink_to(runs / "sub")  # the same directory by a second name
    listed = [name.removeprefix(f"{runs}/") for name, _ in recordings.expand(str(runs))]
    assert listed == ["a.sse", "elsewhere/b.sse"]
    done = agui("check", runs, "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"{runs}/a.sse: completed",
        f"{runs}/elsewhere/b.sse: completed",
    ]


def test_a_tree_deeper_than_the_interpreter_recurses_is_listed(tmp_path: Path) -> None:
    levels = [str(tmp_path / "deep") + "/x" * depth for depth in range(1_201)]
    for level in levels:  # os.makedirs and shutil.rmtree recurse: made and removed by hand
        os.mkdir(level)
    recording = Path(levels[-1]) / "z.sse"
    recording.write_bytes(encode(CLEAN, "sse"))
    try:
        assert list(recordings.expand(levels[0])) == [(str(recording), recording.stat().st_size)]
        done = agui("check", "deep", "--quiet", cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-500:]
        assert done.stdout.strip().endswith("/x/z.sse: completed")
    finally:
        recording.unlink()
        for level in reversed(levels):
            os.rmdir(level)


def test_fifos_and_devices_are_named_for_what_they_are_and_never_opened(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.sse").write_bytes(encode(CLEAN, "sse"))
    os.mkfifo(runs / "pipe.sse")
    os.mkfifo(runs / "pipe.json")  # a .json is opened to tell a stream: not this one
    (runs / "null.jsonl").symlink_to(os.devnull)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    os.mkfifo(inputs / "a.input.json")
    done = agui("check", runs, "--quiet", cwd=tmp_path)  # each FIFO would hang it
    assert done.returncode == 2
    assert done.stdout.splitlines() == [
        f"{runs}/a.sse: completed",
        f"{runs}/null.jsonl: error: {runs}/null.jsonl is a character device, not a file: "
        "it is not read",
        f"{runs}/pipe.json: error: {runs}/pipe.json is a FIFO (named pipe), not a file: "
        "it is not read",
        f"{runs}/pipe.sse: error: {runs}/pipe.sse is a FIFO (named pipe), not a file: "
        "it is not read",
    ]
    paired = agui("check", runs / "a.sse", "--run-input", f"{inputs}/{{stem}}.input.json", "-q")
    assert paired.returncode == 2
    assert "a.input.json is a FIFO (named pipe), not a file" in paired.stderr
    # Named by --input, a pipe is read (`--input <(jq ...)`); one nobody writes to is empty.
    named = agui("check", runs / "a.sse", "--input", inputs / "a.input.json", "-q")
    assert named.returncode == 2 and "zero-length, empty document" in named.stderr
    device = agui("check", runs / "a.sse", "--input", os.devnull, "-q")
    assert device.returncode == 2 and "is a character device, not a file" in device.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root lists a directory whatever its mode")
def test_a_directory_that_cannot_be_listed_is_its_own_finding(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "locked").mkdir(parents=True)
    (runs / "a.sse").write_bytes(encode(CLEAN, "sse"))
    (runs / "locked").chmod(0)
    try:
        done = agui("check", runs, "--quiet", cwd=tmp_path)
    finally:
        (runs / "locked").chmod(0o755)
    assert done.returncode == 2
    assert done.stdout.splitlines()[0] == f"{runs}/a.sse: completed"
    assert "locked is a directory that cannot be listed (Permission denied)" in done.stdout


# -- one process, --jobs and --scheduler print the same report ----------------------------


def _steady(text: str) -> str:
    """The report without what changes from one run to the next whatever checks it: the
    clock (JUnit's timestamps)."""
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?", "TIME", text)


def _said(stderr: str) -> list[str]:
    """What ``check`` said on stderr, as a terminal shows it (past a progress line's
    carriage returns and erasures)."""
    shown = [line.rsplit("\r", 1)[-1].replace("\x1b[K", "") for line in stderr.splitlines()]
    return [line for line in shown if line.startswith("agui-pipeline:")]


@pytest.mark.parametrize("report_format", FORMATS)
def test_one_process_jobs_and_a_local_cluster_print_the_same_report(
    tmp_path: Path, report_format: str
) -> None:
    runs = _archive(tmp_path)
    fixture = write_json(
        tmp_path / "fixture.json",
        {"name": "answers", "stream": ANSWERS_FRONTEND_TOOL, "expect": {}},
    )
    sources: list[str | Path] = [runs, f"{runs}/*/c*.sse", fixture, tmp_path / "missing.sse"]
    common: tuple[str | Path, ...] = (
        "check",
        *sources,
        "--format",
        report_format,
        "--sarif-root",
        tmp_path,
    )
    alone = agui(*common)
    jobs = agui(*common, "--jobs", "2")
    cluster = agui(*common, "--scheduler", "local:2", "--progress")
    assert alone.returncode == jobs.returncode == cluster.returncode == 2
    assert _steady(alone.stdout) == _steady(jobs.stdout) == _steady(cluster.stdout)
    assert _said(alone.stderr) == _said(jobs.stderr) == _said(cluster.stderr)
    assert "sources checked" in cluster.stderr  # the progress line
    # Every recording is there: the directory's six, the glob's one, the fixture, the missing.
    if report_format == "json":
        reports = json.loads(cluster.stdout)
        assert len(reports) == 9 and reports[-1]["status"] == 2
        assert reports[-1]["error"] == f"no such file: {tmp_path / 'missing.sse'}"


def test_each_recording_is_judged_against_its_own_run_input(tmp_path: Path) -> None:
    runs = _archive(tmp_path)
    (runs / "agent-b" / "truncated.input.json").unlink()
    paired = ("check", runs, "--run-input", "{dir}/{stem}.input.json", "--format", "json")
    alone = agui(*paired)
    cluster = agui(*paired, "--scheduler", "local:1")
    assert alone.stdout == cluster.stdout and alone.returncode == cluster.returncode == 2
    by_source = {Path(report["source"]).name: report for report in json.loads(alone.stdout)}
    # The frontend tool is declared only by the input: paired, the lint can judge the answer.
    codes = [d["code"] for d in by_source["frontend.sse"]["diagnostics"]]
    assert "lint.result-for-frontend-tool" in codes
    given = agui(
        "check",
        runs / "agent-b" / "frontend.sse",
        "--format",
        "json",
        "--input",
        runs / "agent-b" / "frontend.input.json",
    )
    assert json.loads(given.stdout)["diagnostics"] == by_source["frontend.sse"]["diagnostics"]
    missing = runs / "agent-b" / "truncated.input.json"
    assert by_source["truncated.sse"]["error"] == (
        f"no run input for {runs / 'agent-b' / 'truncated.sse'}: no such file: {missing}"
    )


def test_scheduler_refuses_stdin_and_jobs_and_a_bad_local_count(tmp_path: Path) -> None:
    clean = tmp_path / "clean.sse"
    clean.write_bytes(encode(CLEAN, "sse"))
    stdin = agui("check", "-", "--scheduler", "local:1", stdin=encode(CLEAN, "sse"))
    assert stdin.returncode == 2 and "stdin" in stdin.stderr
    both = agui("check", clean, "--scheduler", "local:1", "--jobs", "2")
    assert both.returncode == 2 and "give one" in both.stderr
    zero = agui("check", clean, "--scheduler", "local:0")
    assert zero.returncode == 2 and "local:N" in zero.stderr


# -- the library on a cluster the tests start ------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[Client]:
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0"
        ) as local,
        Client(local) as client,
    ):
        yield client


def _one_process(sources: list[str]) -> list[dict[str, Any]]:
    completed = agui("check", *sources, "--format", "json")
    reports: list[dict[str, Any]] = json.loads(completed.stdout)
    return reports


def test_the_library_yields_every_source_once_and_sums_up_the_findings(
    tmp_path: Path, cluster: Client
) -> None:
    runs = _archive(tmp_path)
    expected = _one_process([str(runs)])
    by_path = ProducerFromPath(f"{runs}/{{producer}}/**")
    with check_fleet([str(runs)], scheduler=cluster, producer=by_path, batch_sources=2) as run:
        results = sorted(run, key=lambda result: result.position)
        report = run.report
    assert [r.source for r in results] == [report["source"] for report in expected]
    assert [r.status for r in results] == [report["status"] for report in expected]
    assert [r.outcome for r in results] == [r["verdict"]["outcome"] for r in expected]

    # By code: every source's producer report added up, first where it first appears.
    totals: dict[str, int] = {}
    firsts: dict[str, tuple[str, int]] = {}
    for source in expected:
        for group in source["producerReport"]["groups"]:
            totals[group["code"]] = totals.get(group["code"], 0) + group["count"]
            firsts.setdefault(group["code"], (source["source"], group["first"]["eventIndex"]))
    assert totals  # the archive has findings to count
    assert {code: tally.count for code, tally in report.overall.codes.items()} == totals
    for code, tally in report.overall.codes.items():
        assert tally.first is not None
        assert (tally.first.source, tally.first.event_index) == firsts[code]

    assert {key: group.sources for key, group in report.by_producer.items()} == {
        "agent-a": 3,
        "agent-b": 3,
    }
    # The version the stream declares; the streams that declare none are grouped apart.
    assert {key: group.sources for key, group in report.by_version.items()} == {
        "1.1": 2,
        "1.0": 1,
        None: 3,
    }
    stripped = "enforce.stripped"
    assert report.by_version["1.0"].codes[stripped].count == 1
    failed = sum(source["status"] == 1 for source in expected)
    assert report.overall.failed == failed and report.unchecked == 0
    assert report.to_dict()["codes"][stripped]["sources"] == 2
    assert "fleet report: 6 sources" in report.render()


def test_the_command_checks_on_a_standing_cluster_by_its_address(
    tmp_path: Path, cluster: Client
) -> None:
    runs = _archive(tmp_path)
    address: str = cluster.scheduler_info()["address"]
    alone = agui("check", runs, "--format", "sarif")
    remote = agui("check", runs, "--format", "sarif", "--scheduler", address)
    assert (remote.returncode, remote.stdout) == (alone.returncode, alone.stdout)
    assert len(cluster.scheduler_info()["workers"]) == 2  # the command left them running


def test_a_scheduler_that_is_not_there_is_a_usage_error(tmp_path: Path) -> None:
    clean = tmp_path / "clean.sse"
    clean.write_bytes(encode(CLEAN, "sse"))
    quick = {"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"}
    nowhere = agui("check", clean, "--scheduler", "tcp://127.0.0.1:9", env=quick)
    assert nowhere.returncode == 2 and nowhere.stdout == ""
    assert "agui-pipeline: --scheduler tcp://127.0.0.1:9:" in nowhere.stderr
    assert "Traceback" not in nowhere.stderr


def test_producers_can_be_named_by_a_field_of_the_run(tmp_path: Path, cluster: Client) -> None:
    runs = _archive(tmp_path)
    by_field = ProducerFromRun("/metadata/agent")
    with check_fleet([f"{runs}/**/*.sse"], scheduler=cluster, producer=by_field) as run:
        producers = {Path(result.source).name: result.producer for result in run}
    assert producers == {
        "clean.sse": "a",
        "misspelt.sse": "a",
        "truncated.sse": "b",
        "run-error.sse": "b",
        "frontend.sse": None,  # its RUN_STARTED says no agent
    }


def test_the_producer_report_groups_by_source_order_not_by_arrival() -> None:
    report = FleetReport()
    clean = SourceResult("a", 1, 0, "completed", _findings("x.y", 4), "p", "1.1", 5)
    later = SourceResult("b", 0, 0, "completed", _findings("x.y", 2), "p", "1.1", 5)
    report.add(clean)
    report.add(later)
    tally = report.overall.codes["x.y"]
    assert (tally.count, tally.sources) == (2, 2)
    assert tally.first is not None and (tally.first.source, tally.first.event_index) == ("b", 2)


def _findings(code: str, event_index: int) -> Any:
    from agui_pipeline.catalog import Severity
    from agui_pipeline.delivery.report import producer_report
    from agui_pipeline.errors import Diagnostic

    return producer_report([Diagnostic(code, Severity.WARNING, "m", event_index, "/", "")])


# -- object storage: a real S3-compatible server on 127.0.0.1 -------------------------------


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """moto's S3 server on a free port, and the environment that points clients at it."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    environment = {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "fleet-test",
        "AWS_SECRET_ACCESS_KEY": "fleet-test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    try:
        yield environment
    finally:
        server.stop()


@pytest.mark.slow
def test_recordings_in_object_storage_are_read_by_the_workers(
    tmp_path: Path, s3: dict[str, str]
) -> None:
    import s3fs

    runs = _archive(tmp_path)
    storage = s3fs.S3FileSystem()
    storage.mkdir("archive")
    storage.put(f"{runs}/", "archive/runs/", recursive=True)
    paired = ("--run-input", "{dir}/{stem}.input.json", "--format", "json")
    alone = agui("check", "s3://archive/runs/", *paired, env=s3)
    cluster = agui("check", "s3://archive/runs/", *paired, "--scheduler", "local:2", env=s3)
    assert alone.returncode == cluster.returncode == 1
    assert alone.stdout == cluster.stdout
    # The same verdicts and findings as the local copies get.
    local = json.loads(agui("check", runs, *paired).stdout)
    stored = json.loads(cluster.stdout)
    assert [r["source"] for r in stored] == [
        r["source"].replace(str(runs), "s3://archive/runs") for r in local
    ]
    # Placed by event, not by line: an object is not read a second time for its lines.
    assert [(_unplaced(r["verdict"]), list(map(_unplaced, r["diagnostics"]))) for r in stored] == [
        (_unplaced(r["verdict"]), list(map(_unplaced, r["diagnostics"]))) for r in local
    ]
    missing = agui("check", "s3://archive/runs/none.sse", "-q", env=s3)
    assert missing.returncode == 2
    assert "no such file: s3://archive/runs/none.sse" in missing.stderr


def _unplaced(finding: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in finding.items() if key not in ("file", "line", "column")}


# -- workers that die ----------------------------------------------------------------------


def _heavy_archive(root: Path, count: int) -> list[str]:
    """``count`` recordings long enough (40,000 events) to keep a worker busy a while."""
    from agui_pipeline.testing.workload import encode_sse, events

    body = encode_sse(events(40_000, seed=3))
    names = []
    for number in range(count):
        path = root / f"run-{number:02}.sse"
        path.write_bytes(body)
        names.append(str(path))
    return names


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_nothing(tmp_path: Path) -> None:
    names = _heavy_archive(tmp_path, 16)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0"
        ) as local,
        Client(local) as client,
    ):
        before = set(client.run(os.getpid).values())
        results = []
        with check_fleet(names, scheduler=client, batch_sources=1) as run:
            for result in run:
                results.append(result)
                if len(results) == 1:  # both workers are busy with the next ones
                    os.kill(next(iter(before)), signal.SIGKILL)
        client.wait_for_workers(2, timeout=60)
        after = set(client.run(os.getpid).values())
    assert len(before - after) == 1  # one was killed, and its nanny started another
    assert sorted(result.position for result in results) == list(range(16))
    assert {result.outcome for result in results} == {"completed"}
    assert {result.events for result in results} == {40_000}


class PoisonFileSystem(LocalFileSystem):
    """Local files under ``poison://``, where a file named ``poison*`` kills its reader:
    what a source that brings down its worker every time looks like to the cluster."""

    protocol = "poison"

    def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        if Path(self._strip_protocol(path)).name.startswith("poison"):
            os._exit(1)
        return super()._open(path, mode, **kwargs)


class RegisterPoison(WorkerPlugin):
    def setup(self, worker: Any) -> None:
        fsspec.register_implementation("poison", PoisonFileSystem, clobber=True)


@pytest.mark.slow
def test_a_source_that_kills_every_worker_is_reported_and_the_rest_are_checked(
    tmp_path: Path,
) -> None:
    import dask

    fsspec.register_implementation("poison", PoisonFileSystem, clobber=True)
    for name in ("a.sse", "b.sse", "poison.sse", "c.sse"):
        (tmp_path / name).write_bytes(encode(CLEAN, "sse"))
    sources = [f"poison://{tmp_path}/{name}" for name in ("a.sse", "b.sse", "poison.sse", "c.sse")]
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 1}),
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0"
        ) as local,
        Client(local) as client,
    ):
        client.register_plugin(RegisterPoison())
        started = time.monotonic()
        with check_fleet(sources, scheduler=client, batch_sources=4) as run:
            results = {Path(result.source).name: result for result in run}
        assert time.monotonic() - started < 120
    assert {name: result.outcome for name, result in results.items()} == {
        "a.sse": "completed",
        "b.sse": "completed",
        "c.sse": "completed",
        "poison.sse": None,
    }
    poisoned = results["poison.sse"]
    assert poisoned.status == 2
    assert poisoned.error is not None and "died" in poisoned.error


def test_the_cli_without_the_extra_says_which_to_install(tmp_path: Path) -> None:
    clean = tmp_path / "clean.sse"
    clean.write_bytes(encode(CLEAN, "sse"))
    script = (
        "import sys; sys.modules['distributed'] = None; sys.modules['fsspec'] = None\n"
        "from agui_pipeline.cli import main; raise SystemExit(main(sys.argv[1:]))"
    )
    import sys

    for argv in (
        [str(clean), "--scheduler", "local:1"],
        ["s3://bucket/runs/", "-q"],
    ):
        completed = subprocess.run(
            [sys.executable, "-c", script, "check", *argv],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert completed.returncode == 2
        assert "pip install 'agui-pipeline[dask]'" in completed.stderr
