"""Judge mode against the pipeline: a stream the native judge calls clean is one the pipeline
completes without a word, with the same counters and runs.

The judge (``native/src/judge.rs``, ``pipeline/_engine/judge.py``) stands in for the whole
pipeline when ``check`` wants only the verdict. It never words a diagnostic: it answers
"clean" or leaves the stream to the pipeline. So the one way it can be wrong is to call a
stream clean that the pipeline would say something about, or to count it otherwise; each
input here is judged both ways and compared. The inputs are those of the whole-pipeline
differential tier (``tests/test_core_differential.py``): the conformance corpus, the shipped
streams, and random streams, valid and broken, under small limits. Streams the judge must
find clean (the benchmark workload, a plain run) are held to that, so the comparison is
never vacuous.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from agui_pipeline import Pipeline
from agui_pipeline._checking.source import _drain
from agui_pipeline._engine import judge as judge_module
from agui_pipeline._engine.judge import judge_file, judge_reads, judges
from agui_pipeline._engine.result import RunResult
from agui_pipeline.batch import Batch
from agui_pipeline.errors import InputRejected
from agui_pipeline.events import AnyEvent
from agui_pipeline.options import Limits
from agui_pipeline.stage import Stage
from agui_pipeline.testing.conformance import load_fixture
from agui_pipeline.testing.workload import DECLARATION, encode_jsonl, encode_sse, events
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import streams
from tests.conftest import corpus_paths
from tests.cores import native_module, seen
from tests.test_core_differential import SHIPPED, SMALL_LIMITS, framing_pieces, random_input
from tests.test_deliver import CALLING, DECLARED, answered_input, declaration


@pytest.fixture(autouse=True)
def _native(python_stages: None) -> None:
    """The native core for the judge; the Python stages from the first read for the
    pipeline it is held to (not deliver mode, which runs the same judge)."""
    native_module()  # skips (full tier: fails) without the native core


def judged_alike(path: Path, pipeline: Pipeline, run_input: Any = None) -> bool:
    """Judge ``path`` (answering ``run_input``) and read it through ``pipeline``; when the
    judge calls it clean, the two results must agree, and only reconcile, holding the stream
    to a declaration, may have said anything. Whether the judge did."""
    judged = judge_file(pipeline, path, copy.deepcopy(run_input))
    if judged is None:
        return False
    read = _drain(pipeline, path, copy.deepcopy(run_input), [])
    assert seen(judged) == seen(read), f"the judge called {path.name} clean"
    assert judged.verdict.completed
    declared = pipeline.options.capabilities is not None
    assert all(declared and d.code.startswith("reconcile.") for d in judged.diagnostics)
    return True


def test_the_workload_is_judged_clean(tmp_path: Path) -> None:
    """The benchmark workload, as SSE and as JSON lines: the judge finds it clean, with the
    pipeline's counters and runs (what makes the comparisons below worth running)."""
    workload = events(3000)
    for name, data in (("w.sse", encode_sse(workload)), ("w.jsonl", encode_jsonl(workload))):
        path = tmp_path / name
        path.write_bytes(data)
        assert judged_alike(path, Pipeline()), f"the judge was unsure of {name}"


def test_a_stream_answering_its_run_input_is_judged_clean(tmp_path: Path) -> None:
    """The workload against the input it answers (its thread and run, a history, the
    application's tools, a state): clean with the pipeline's result; against another
    thread's input, the pipeline's to read (it warns)."""
    from agui_pipeline.model.run_input import prepare_input

    workload = events(3000)
    path = tmp_path / "w.sse"
    path.write_bytes(encode_sse(workload))
    raw = {
        "threadId": workload[0]["threadId"],
        "runId": workload[0]["runId"],
        "messages": [{"id": "h-1", "role": "user", "content": "the weather?"}],
        "tools": [{"name": "not_called", "description": "", "parameters": {}}],
        "state": {"from": "the input"},
        "context": [],
        "forwardedProps": {},
    }
    run_input = prepare_input(raw).body
    assert judged_alike(path, Pipeline(), run_input)
    elsewhere = {**run_input, "threadId": "another thread"}
    assert judge_file(Pipeline(), path, elsewhere) is None
    assert _drain(Pipeline(), path, elsewhere, []).diagnostics


class _Reads:
    """A stream that can be read once, in reads of ``size`` bytes, counting the reads taken
    and whether it was closed (as a recording in object storage is read)."""

    def __init__(self, data: bytes, size: int) -> None:
        self.pieces = [data[at : at + size] for at in range(0, len(data), size)]
        self.taken = 0
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        try:
            for piece in self.pieces:
                self.taken += 1
                yield piece
        finally:
            self.closed = True


def test_reads_judged_clean_have_the_pipelines_result(tmp_path: Path) -> None:
    """A stream read once, cut into reads anywhere, is judged as its file is."""
    path = tmp_path / "w.sse"
    path.write_bytes(encode_sse(events(3000)))
    read = _drain(Pipeline(), path, None, [])
    for size in (1, 7, 4096, 1 << 20):
        reads = _Reads(path.read_bytes(), size)
        judged = judge_reads(Pipeline(), iter(reads))
        assert isinstance(judged, RunResult), size
        assert seen(judged) == seen(read)
        assert reads.closed


def test_reads_the_judge_gives_up_on_go_to_the_pipeline_from_the_first(tmp_path: Path) -> None:
    """The judge gives up on a broken run after reading some of it: the pipeline is handed
    every read, those the judge took first, and reports what it reports of the file."""
    data = encode_sse(_broken(_plain_run(), "a second result"))
    path = tmp_path / "broken.sse"
    path.write_bytes(data)
    reads = _Reads(data, 16)
    replay = judge_reads(Pipeline(), iter(reads))
    assert isinstance(replay, Iterator)
    assert 0 < reads.taken < len(reads.pieces)  # given up on before the end
    read = _drain(Pipeline(), replay, None, [])
    assert read.diagnostics
    assert seen(read) == seen(_drain(Pipeline(), path, None, []))
    assert reads.closed


def test_reads_past_the_held_bound_go_to_the_pipeline_at_the_bound(tmp_path: Path) -> None:
    """What the judge holds for the pipeline is bounded by ``max_held_bytes``: a longer clean
    stream is handed over at the read that passes it, whole, and the pipeline completes it."""
    data = encode_sse(events(3000))
    path = tmp_path / "w.sse"
    path.write_bytes(data)
    limits = Limits(max_held_bytes=64 * 1024)
    reads = _Reads(data, 4096)
    replay = judge_reads(Pipeline(limits=limits), iter(reads))
    assert isinstance(replay, Iterator)
    assert reads.taken == limits.max_held_bytes // 4096 + 1
    assert b"".join(replay) == data
    replayed = _drain(Pipeline(limits=limits), iter(_Reads(data, 4096)), None, [])
    assert seen(replayed) == seen(_drain(Pipeline(limits=limits), path, None, []))


def _spy(monkeypatch: pytest.MonkeyPatch, name: str) -> list[object]:
    """What the judge module's function ``name`` answers, each call's answer in turn (the
    function still answers: the spy only listens)."""
    answers: list[object] = []
    judged = getattr(judge_module, name)

    def spied(*args: Any) -> object:
        answers.append(answer := judged(*args))
        return answer

    monkeypatch.setattr(judge_module, name, spied)
    return answers


def test_a_recording_in_storage_is_judged_as_its_file_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check`` on an fsspec URL (what a ``--scheduler`` worker reads) gives the judge the
    recording's reads; clean, the judge's result is the report, and broken, the pipeline's."""
    from agui_pipeline._checking.source import CheckSettings, check_source

    answers = _spy(monkeypatch, "judge_reads")
    clean, broken = tmp_path / "clean.sse", tmp_path / "broken.sse"
    clean.write_bytes(encode_sse(events(300)))
    broken.write_bytes(encode_sse(_broken(_plain_run(), "a second result")))
    for path, judged in ((clean, True), (broken, False)):
        stored = check_source(f"file://{path}", CheckSettings())
        local = check_source(str(path), CheckSettings())
        assert stored.result is not None and local.result is not None
        assert isinstance(answers.pop(), RunResult) is judged, path.name
        assert seen(stored.result) == seen(local.result)
        assert stored.status == local.status


@pytest.mark.parametrize(("what", "declaration", "said"), DECLARED, ids=[d[0] for d in DECLARED])
@pytest.mark.parametrize("framing", ["sse", "jsonl"])
def test_a_declared_stream_is_judged_with_reconcile_s_findings(
    what: str, declaration: dict[str, Any], said: list[str], framing: str, tmp_path: Path
) -> None:
    """With a declaration the judge builds the events reconcile reads, where they stood in
    the stream, and reconcile holds them to it: the stream is judged clean with the
    pipeline's findings word for word, in one read or in many."""
    path = tmp_path / f"calling.{framing}"
    path.write_bytes(encode_sse(CALLING) if framing == "sse" else encode_jsonl(CALLING))
    pipeline = Pipeline(capabilities=copy.deepcopy(declaration))
    assert judged_alike(path, pipeline), f"{what}: the judge was unsure"
    read = _drain(pipeline, path, None, [])
    for code in said:
        if code == "reconcile.transport" and framing == "jsonl":
            continue  # a file of JSON lines names no transport to hold to the declaration
        assert any(d.code.startswith(code) for d in read.diagnostics), f"{what}: no {code}"
    for size in (1, 4096):
        judged = judge_reads(pipeline, iter(_Reads(path.read_bytes(), size)))
        assert isinstance(judged, RunResult), size
        assert seen(judged) == seen(read)


def test_a_declared_stream_s_last_line_without_its_newline_is_reconciled(tmp_path: Path) -> None:
    """The end of a JSON-lines stream passes its last line, a run's finish: reconcile sums the
    run up from it, as the pipeline does."""
    path = tmp_path / "calling.jsonl"
    path.write_bytes(encode_jsonl(CALLING).rstrip(b"\n"))
    pipeline = Pipeline(capabilities=DECLARATION)
    assert judged_alike(path, pipeline)
    judged = judge_file(pipeline, path)
    assert judged is not None
    summaries = [d for d in judged.diagnostics if d.code == "reconcile.run-summary"]
    assert len(summaries) == sum(1 for event in CALLING if event["type"] == "RUN_STARTED")
    assert summaries[-1].event_index == len(CALLING) - 1


def test_the_judge_builds_only_the_types_it_is_asked_for() -> None:
    """Judge mode with a declaration builds the events of reconcile's types alone, and says
    where each stood among those the read passed."""
    from agui_pipeline._engine.judging import new_judge

    judge = new_judge("sse", Limits(), delivers=False, only={"RUN_STARTED", "TOOL_CALL_START"})
    built = judge.feed(encode_sse(_plain_run()))
    assert built is not None
    assert [event["type"] for event in built] == ["RUN_STARTED", "TOOL_CALL_START"]
    assert judge.take_marked() == [0, 5]
    assert judge.unsure is None and judge.finish()


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_random_declared_streams_judged_clean_are_clean(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    stream = data.draw(streams.valid_stream(max_runs=2, max_items=4))
    declared = data.draw(declaration(stream))
    run_input = data.draw(st.none() | answered_input(stream))
    path = tmp_path_factory.mktemp("judge") / "stream.sse"
    path.write_bytes(encode_sse(stream))
    judged_alike(path, Pipeline(capabilities=declared), run_input)


def test_check_with_a_declaration_is_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check --capabilities`` on a file: the judge's result is the report, the same as the
    pipeline's."""
    from agui_pipeline._checking.source import CheckSettings, check_source
    from agui_pipeline.model.declared import read_declaration

    answers = _spy(monkeypatch, "judge_file")
    path = tmp_path / "calling.sse"
    path.write_bytes(encode_sse(CALLING))
    settings = CheckSettings(declaration=read_declaration(DECLARATION))
    checked = check_source(str(path), settings)
    assert isinstance(answers.pop(), RunResult)
    assert checked.result is not None
    read = _drain(Pipeline(capabilities=DECLARATION), path, None, [])
    assert seen(checked.result) == seen(read)


def test_a_pipeline_that_asks_for_more_is_never_judged() -> None:
    assert judges(Pipeline())
    assert judges(Pipeline(conversation=False, limits=Limits(max_depth=9)))
    assert judges(Pipeline(peer_max_protocol_version="0.0.57"))
    assert judges(Pipeline(capabilities={"tools": {"supported": True}}))
    assert judges(Pipeline(on_diagnostic=print))
    for asks in (
        # reconcile's findings would be heard twice if the pipeline read the stream again
        Pipeline(capabilities={"tools": {"supported": True}}, on_diagnostic=print),
        Pipeline(peer_max_protocol_version="not a version"),
        Pipeline(sinks=[_Sink()]),
        Pipeline(handlers={"RUN_STARTED": lambda event: None}),
        Pipeline(framing="json"),
        Pipeline(middleware=[_Passing]),
        Pipeline().without("lint"),
    ):
        assert not judges(asks), asks.stage_names


class _Passing(Stage):
    name = "passing"

    async def process(self, batch: Batch) -> Batch:
        return batch


class _Sink:
    async def write(self, events: Sequence[AnyEvent]) -> None:
        pass


@pytest.mark.parametrize("path", corpus_paths())
def test_the_corpus_judged_clean_is_clean(path: Path, tmp_path: Path) -> None:
    """Each fixture's stream, as SSE and JSON lines, under the default limits and each small
    one, without its run input and answering it (as the conformance runner prepares it), for
    a current peer, the fixture's and one that knows no subagents."""
    from agui_pipeline.model.run_input import prepare_input

    fixture = load_fixture(path)
    version = fixture.peer_max_protocol_version
    try:
        run_input: Any = prepare_input(fixture.raw_input(), peer_max_protocol_version=version).body
    except InputRejected:
        run_input = None
    frames = [orjson.dumps(event) for event in fixture.stream]
    for framing in ("sse", "jsonl"):
        stream = tmp_path / f"stream.{framing}"
        stream.write_bytes(streams.join_frames(frames, framing))
        for limits in (Limits(), *SMALL_LIMITS):
            for peer in {None, version, "0.0.57"}:
                pipeline = Pipeline(limits=limits, peer_max_protocol_version=peer)
                judged_alike(stream, pipeline)
                if run_input is not None:
                    judged_alike(stream, pipeline, run_input)


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_the_shipped_streams_judged_clean_are_clean(path: Path) -> None:
    for limits in (Limits(), *SMALL_LIMITS):
        judged_alike(path, Pipeline(limits=limits))


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    drawn=st.one_of(random_input(), random_input(), random_input(), framing_pieces()),
    limits=st.sampled_from([Limits(), Limits(), Limits(max_patch_work=64), *SMALL_LIMITS]),
)
def test_random_streams_judged_clean_are_clean(
    drawn: tuple[str, bytes, bool], limits: Limits, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, data, _ = drawn
    path = tmp_path_factory.mktemp("judge") / "stream"
    path.write_bytes(data)
    judged_alike(path, Pipeline(limits=limits))


@pytest.mark.parametrize(
    "change",
    [
        "a result before its call ends",
        "a second result",
        "a step finished twice",
        "a run id reused",
        "arguments that are not JSON",
        "a rawEvent sent as null",
        "an unknown member",
        "usage that does not add up",
        "a run finished with a step open",
        "a call carried by a user message",
        "a second run on another thread",
        "content after the run",
    ],
)
def test_a_plain_run_broken_is_left_to_the_pipeline(change: str, tmp_path: Path) -> None:
    """A plain run is judged clean; each break of it, one the pipeline reports, is not."""
    plain = _plain_run()
    path = tmp_path / "plain.sse"
    path.write_bytes(encode_sse(plain))
    assert judged_alike(path, Pipeline())
    broken = _broken(plain, change)
    path.write_bytes(encode_sse(broken))
    assert judge_file(Pipeline(), path) is None, change
    read = _drain(Pipeline(), path, None, [])
    assert read.diagnostics or not read.verdict.completed, f"the pipeline is silent on {change}"


def _plain_run() -> list[dict[str, Any]]:
    run = {"threadId": "t", "runId": "r"}
    call = {"toolCallId": "c"}
    return [
        {"type": "RUN_STARTED", **run},
        {"type": "STEP_STARTED", "stepName": "s"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "TOOL_CALL_START", **call, "toolCallName": "f", "parentMessageId": "m"},
        {"type": "TOOL_CALL_ARGS", **call, "delta": '{"a": 1}'},
        {"type": "TOOL_CALL_END", **call},
        {"type": "TOOL_CALL_RESULT", **call, "messageId": "tm", "content": "ok"},
        {"type": "STEP_FINISHED", "stepName": "s"},
        {"type": "RUN_FINISHED", **run},
    ]


def _broken(plain: list[dict[str, Any]], change: str) -> list[dict[str, Any]]:
    events = [dict(event) for event in plain]
    if change == "a result before its call ends":
        events[7], events[8] = events[8], events[7]
    elif change == "a second result":
        events.insert(9, {**events[8], "messageId": "tm2"})
    elif change == "a step finished twice":
        events.insert(9, dict(events[9]))
    elif change == "a run id reused":
        events += [dict(events[0]), dict(events[-1])]
    elif change == "arguments that are not JSON":
        events[6]["delta"] = '{"a": '
    elif change == "a rawEvent sent as null":
        events[3]["rawEvent"] = None
    elif change == "an unknown member":
        events[3]["colour"] = "blue"
    elif change == "usage that does not add up":
        events[-1]["usage"] = [{"inputTokens": 3, "outputTokens": 4, "totalTokens": 8}]
    elif change == "a run finished with a step open":
        del events[9]
    elif change == "a call carried by a user message":
        events[2]["role"] = "user"
    elif change == "a second run on another thread":
        events += [{**events[0], "runId": "r2", "threadId": "t2"}, {**events[-1], "runId": "r2"}]
        events[-1]["threadId"] = "t2"
    elif change == "content after the run":
        events.append(dict(events[3]))
    return events
