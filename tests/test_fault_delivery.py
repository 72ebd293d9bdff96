"""The engine's fault-delivery rule (``engine._after_fault``): one test per row of its table,
the redaction that must not leak, and bugs that surface as themselves."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import orjson
import pytest
from agui_pipeline import Outcome, Pipeline
from agui_pipeline._engine.order import canonical_order
from agui_pipeline.batch import Batch, Event
from agui_pipeline.catalog import PARSE_NOT_JSON
from agui_pipeline.stage import Stage, reject_after
from agui_pipeline.stages.parse import Parse
from agui_pipeline.stages.reconcile import Reconcile
from agui_pipeline.stages.verify import Verify
from hypothesis import HealthCheck, given, settings

from benchmarks.workload import DECLARATION
from benchmarks.workload import events as workload
from tests.conftest import run, spec_artifacts
from tests.streams import valid_stream

pytestmark = pytest.mark.usefixtures("built_in_run")  # every rule on every path (conftest)

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
END = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
SECRET = {"type": "CUSTOM", "name": "secret", "value": "the password"}
LATER = {"type": "CUSTOM", "name": "bad", "value": 1}
TEXT = [
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
]


def sse(*events: Event) -> bytes:
    return b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)


def rejection(stage: Stage, event_index: int) -> Any:
    return stage.ctx.reject(PARSE_NOT_JSON, f"{stage.name} rejects", event_index=event_index)


class Recorder(Stage):
    """After the stage under test: every event that went on from it."""

    name: ClassVar[str] = "recorder"
    seen: ClassVar[list[Event]] = []

    async def process(self, batch: Batch) -> Batch:
        Recorder.seen += batch.events
        return batch


class Redact(Stage):
    """Removes the "secret" CUSTOM event, and rejects the "bad" one (without ``reject_after``)."""

    name: ClassVar[str] = "redact"

    async def process(self, batch: Batch) -> Batch:
        out: list[Event] = []
        out_indices: list[int] = []
        for event, index in zip(batch.events, batch.indices, strict=True):
            if event.get("name") == "secret":
                continue
            if event.get("name") == "bad":
                raise rejection(self, index)
            out.append(event)
            out_indices.append(index)
        return Batch(out, out_indices)


class RedactAndSay(Redact):
    """The same redaction, saying what it kept before the rejection (``reject_after``)."""

    name: ClassVar[str] = "redact-and-say"

    async def process(self, batch: Batch) -> Batch:
        out: list[Event] = []
        out_indices: list[int] = []
        for event, index in zip(batch.events, batch.indices, strict=True):
            if event.get("name") == "secret":
                continue
            if event.get("name") == "bad":
                raise reject_after(Batch(out, out_indices), rejection(self, index))
            out.append(event)
            out_indices.append(index)
        return Batch(out, out_indices)


def with_recorder(*middleware: type[Stage]) -> Pipeline:
    Recorder.seen = []
    return Pipeline(middleware=[*middleware, Recorder])


# -- row 3 and the redaction case ----------------------------------------------------------


def test_a_redaction_then_a_rejection_never_delivers_the_redacted_event() -> None:
    result = run(sse(START, SECRET, *TEXT, LATER, END), with_recorder(Redact))
    assert result.verdict.outcome is Outcome.REJECTED
    assert result.verdict.event_index == 5
    assert SECRET not in result.events
    assert SECRET not in Recorder.seen
    # Row 3: the stage did not say what it kept, so nothing of that batch goes on.
    assert result.events == [] and Recorder.seen == []
    counters = result.counters
    assert counters.discarded == 7  # the whole read
    assert counters.read + counters.synthesized == (
        counters.delivered + counters.dropped + counters.expanded + counters.discarded
    )


def test_a_rejection_without_kept_events_fails_closed_for_its_batch_only() -> None:
    earlier = sse(START, *TEXT)
    result = run([earlier, sse(SECRET, LATER, END)], with_recorder(Redact))
    assert result.verdict.event_index == 5
    assert result.events == [START, *TEXT]  # the earlier read stays delivered


# -- row 2 ---------------------------------------------------------------------------------


def test_row_2_a_rejection_with_reject_after_delivers_what_the_stage_kept() -> None:
    result = run(sse(START, SECRET, *TEXT, LATER, END), with_recorder(RedactAndSay))
    assert result.verdict.event_index == 5
    assert result.events == [START, *TEXT] == Recorder.seen
    assert result.counters.discarded == 2  # the rejected event and the one after it


# -- row 1 ---------------------------------------------------------------------------------


def test_row_1_a_parse_rejection_delivers_the_frames_before_it_through_every_stage() -> None:
    data = sse(START, *TEXT) + b"data: {nope\n\n" + sse(END)
    result = run(data, with_recorder())
    assert result.verdict.code == "parse.not-json"
    assert result.verdict.event_index == 4
    assert result.events == [START, *TEXT] == Recorder.seen


# -- row 2, a checking stage -------------------------------------------------------------


def test_row_2_a_checking_stage_rejecting_delivers_the_events_before_the_fault() -> None:
    # verify keeps its batch before the fault: a nested RUN_STARTED rejects at its index.
    result = run(sse(START, *TEXT, START, END), with_recorder())
    assert result.verdict.code == "verify.nested-run"
    assert result.verdict.event_index == 4
    assert result.events == [START, *TEXT]


# -- row 4 ---------------------------------------------------------------------------------


class TailThenReject(Stage):
    """At end of stream: a tail event kept, then a rejection."""

    name: ClassVar[str] = "tail"

    async def finish(self) -> Batch:
        tail = Batch([{"type": "CUSTOM", "name": "tail", "value": 0}], [99])
        raise reject_after(tail, rejection(self, 99))


def test_row_4_a_rejection_at_finish_keeps_everything_passed_and_its_tail() -> None:
    # verify's own finish: a truncated run, every event delivered.
    truncated = run(sse(START, *TEXT))
    assert truncated.verdict.outcome is Outcome.TRUNCATED
    assert truncated.events == [START, *TEXT]
    result = run(sse(START, *TEXT, END), Pipeline().insert_after("dispatch", TailThenReject))
    assert result.verdict.event_index == 99
    assert result.events == [START, *TEXT, END, {"type": "CUSTOM", "name": "tail", "value": 0}]


# -- row 5 ---------------------------------------------------------------------------------


def test_row_5_a_handler_failure_delivers_the_events_handled_before_it() -> None:
    def fails(event: Event) -> None:
        raise RuntimeError("the application's bug")

    result = run(sse(START, *TEXT, END), Pipeline(handlers={"TEXT_MESSAGE_END": fails}))
    assert result.verdict.outcome is Outcome.HANDLER_FAILED
    assert result.verdict.event_index == 3
    assert result.events == [START, *TEXT[:2]]
    assert isinstance(result.verdict.error, Exception)
    assert isinstance(result.verdict.error.__cause__, RuntimeError)


# -- the run records after a fault ------------------------------------------------------


LATE_ERROR = {"type": "RUN_ERROR", "message": "late"}


class RejectsType(Stage):
    """Rejects the first event of type ``rejected``, keeping the events before it (row 2)."""

    rejected: ClassVar[str]

    async def process(self, batch: Batch) -> Batch:
        for event, index in zip(batch.events, batch.indices, strict=True):
            if event["type"] == self.rejected:
                raise reject_after(batch.before(index), rejection(self, index))
        return batch


class RejectsRunError(RejectsType):
    """After verify: rejects every RUN_ERROR."""

    name: ClassVar[str] = "rejects-run-error"
    rejected: ClassVar[str] = "RUN_ERROR"


def _handler_fails(event: Event) -> None:
    raise RuntimeError("the application's bug")


@pytest.mark.parametrize("same_read", [True, False], ids=["same-read", "later-read"])
@pytest.mark.parametrize(
    "pipeline",
    [
        Pipeline().insert_after("verify", RejectsRunError),
        Pipeline(handlers={"RUN_ERROR": _handler_fails}),
    ],
    ids=["rejected", "handler-failed"],
)
def test_a_discarded_late_run_error_leaves_the_delivered_finish_listed(
    pipeline: Pipeline, same_read: bool
) -> None:
    # The run's RUN_FINISHED was delivered; the late RUN_ERROR after it was not: the run
    # ended as its finish says, neither failed (the consumer never saw the error) nor open.
    reads = [sse(START, *TEXT, END, LATE_ERROR)]
    if not same_read:
        reads = [sse(START, *TEXT, END), sse(LATE_ERROR)]
    result = run(reads, pipeline)
    assert not result.verdict.completed
    assert result.events[-1] == END
    assert [(r.run_id, str(r.status), r.error) for r in result.runs] == [("r", "finished", None)]
    assert result.run_counts == {"finished": 1}
    # A delivered late error is the run's end, as before.
    delivered = run(reads, Pipeline())
    assert [(str(r.status), r.error) for r in delivered.runs] == [("error", "late")]


# -- row 6 ---------------------------------------------------------------------------------


class RejectsTextStart(RejectsType):
    """After RedactAndSay: rejects the TEXT_MESSAGE_START it kept (an earlier fault)."""

    name: ClassVar[str] = "rejects-text-start"
    rejected: ClassVar[str] = "TEXT_MESSAGE_START"


def test_row_6_a_later_stage_finding_an_earlier_fault_in_the_kept_events_wins() -> None:
    result = run(
        sse(START, SECRET, *TEXT, LATER, END), with_recorder(RedactAndSay, RejectsTextStart)
    )
    assert result.verdict.event_index == 2
    assert "rejects-text-start rejects" in str(result.verdict.message)
    assert result.events == [START] == Recorder.seen


# -- row 7: bugs are bugs -------------------------------------------------------------------


class Typo(Stage):
    name: ClassVar[str] = "typo"

    async def process(self, batch: Batch) -> Batch:
        return Batch([event["tpye"] for event in batch.events], batch.indices)


@pytest.mark.anyio
async def test_row_7_a_keyerror_in_a_stage_surfaces_with_its_name_and_no_verdict() -> None:
    pipeline = Pipeline(middleware=[Typo])
    stream = pipeline.open(sse(START, END))
    with pytest.raises(KeyError) as raised:
        async with stream:
            async for _event in stream:
                pass
    assert "raised in the 'typo' stage" in raised.value.__notes__
    assert not stream.ended  # no verdict: a bug is not a judgement on the stream


@pytest.mark.usefixtures("python_stages")
def test_a_typo_in_verify_surfaces_instead_of_rejecting(monkeypatch: pytest.MonkeyPatch) -> None:
    def typo(self: Verify, event: Event, index: int, tag: Any) -> None:
        event["messageID"]  # the typo

    monkeypatch.setattr(Verify, "_text_end", typo)
    verify = Verify(Pipeline().context())  # the handler table is built per stream
    assert verify._handlers["TEXT_MESSAGE_END"].__func__ is typo  # type: ignore[attr-defined]
    with pytest.raises(KeyError, match="messageID") as raised:
        run(sse(START, *TEXT, END))
    assert "raised in the 'verify' stage" in raised.value.__notes__


def test_a_typo_in_reconcile_surfaces_instead_of_vanishing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def typo(self: Reconcile, event: Event, index: int) -> None:
        event["runID"]  # the typo

    monkeypatch.setattr(Reconcile, "_run_started", typo)
    with pytest.raises(KeyError, match="runID") as raised:
        run(sse(START, *TEXT, END), Pipeline(capabilities=DECLARATION))
    assert "raised in the 'reconcile' stage" in raised.value.__notes__


def test_a_malformed_event_reconcile_cannot_read_is_passed_over_without_enforce() -> None:
    # Only reachable with enforce (and verify) removed: the producer's fault, not a bug.
    unhashable = {
        "type": "TOOL_CALL_START",
        "toolCallId": "c",
        "toolCallName": "get_weather",
        "subagentRunId": ["not", "hashable"],
    }
    pipeline = Pipeline(capabilities=DECLARATION).without("enforce").without("verify")
    result = run(sse(START, unhashable, END), pipeline)
    assert result.verdict.completed
    assert result.events == [START, unhashable, END]


@pytest.mark.usefixtures("python_stages")
def test_a_decoder_bug_surfaces_with_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Parse, chunk: bytes) -> Batch:
        raise AttributeError("a decoder's own bug")

    monkeypatch.setattr(Parse, "feed", broken)
    with pytest.raises(AttributeError) as raised:
        run(sse(START, END))
    assert "raised in the 'parse' stage (the decoder)" in raised.value.__notes__


def test_what_stages_share_is_declared_on_the_context_not_attached() -> None:
    ctx = Pipeline().context()
    with pytest.raises(AttributeError):
        ctx.read_at = 1.0  # type: ignore[attr-defined]


# -- Batch.types and Batch.objects after each built-in stage ---------------------------------


class CachesAreFresh(Stage):
    """Inserted after a built-in stage: what the batch says it knows must be what a fresh
    read finds (it runs before the engine forgets the caches after it, a user's stage)."""

    name: ClassVar[str] = "caches-are-fresh"
    checked: ClassVar[int] = 0

    async def process(self, batch: Batch) -> Batch:
        known = batch._types  # the cache itself, not a fresh read
        if known is not None:
            assert known == [e.get("type") for e in batch.events], self.after
        if batch.objects:
            assert all(type(e) is dict for e in batch.events), self.after
        CachesAreFresh.checked += 1
        return batch

    after: ClassVar[str] = ""


def checking_pipeline(**options: Any) -> Pipeline:
    pipeline = Pipeline(**options)
    for name in canonical_order()[1:]:
        checker = type(f"After{name}", (CachesAreFresh,), {"after": name})
        pipeline = pipeline.insert_after(name, checker, name=f"check-{name}")
    return pipeline


def test_caches_stay_fresh_through_every_built_in_stage_on_the_workload() -> None:
    CachesAreFresh.checked = 0
    stream = workload(3_000)
    result = run(
        [sse(*stream[at : at + 97]) for at in range(0, len(stream), 97)],
        checking_pipeline(capabilities=DECLARATION),
    )
    assert result.verdict.completed
    assert CachesAreFresh.checked >= 7 * 30
    # compat retypes retired events in place: it must say so (Batch.changed).
    retired = [{"type": "THINKING_START"}, {"type": "THINKING_END"}]
    assert run(sse(START, *retired, END), checking_pipeline()).verdict.completed


def test_caches_stay_fresh_through_every_built_in_stage_on_the_corpus() -> None:
    pipeline = checking_pipeline()
    for path in spec_artifacts().fixtures():
        case = json.loads(path.read_text())
        run(sse(*case["stream"]), pipeline)  # any verdict: the checkers assert


@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
@given(valid_stream())
def test_caches_stay_fresh_through_every_built_in_stage_on_generated_streams(
    stream: list[Event],
) -> None:
    result = run(sse(*stream), checking_pipeline())
    assert result.verdict.completed, result.verdict
