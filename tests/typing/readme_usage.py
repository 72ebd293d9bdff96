"""A user's file that follows every Python example of the README and the docs, under mypy --strict.

``tests/test_public_api.py`` runs mypy on it and checks that every line of the
Python examples of README.md and docs/ appears here, so the two cannot drift apart.
It is never executed: it names files and endpoints that need not exist. The
examples of the docs' pages are at the end, each as the body of a function of its
own, with the imports it makes (``url`` is the address an example runs against).
"""

# The README shows a value by naming it, and loops over events it leaves alone:
# ruff: noqa: B007, B018
# Integrations imports what its examples import, where they do (Any is used above in
# annotations, which are not evaluated):
# ruff: noqa: E402
# The docs' examples import inside their functions what their annotations name, and
# make a value to serve (ruff reads both as unused there):
# ruff: noqa: F401, F841

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import assert_type

import anyio
from agui_pipeline import (
    AgentCapabilities,
    AiohttpTransport,
    AnyEvent,
    BackgroundServer,
    Batch,
    ChunkForm,
    Code,
    Conversation,
    Event,
    Handlers,
    HttpAgent,
    HttpxTransport,
    InputRejected,
    Limits,
    Outcome,
    Pipeline,
    Relay,
    RelayResponse,
    Replay,
    ReplayServer,
    RequestFailed,
    Retries,
    RunResult,
    Severity,
    Source,
    SseSink,
    Stage,
    StreamContext,
    Tap,
    Transport,
    TransportRequest,
    TransportResponse,
    Upstream,
    Verdict,
    capabilities_from_agent_resource,
    check_run_input,
    encode_sse,
    load_fixture,
    prepare_input,
    producer_report,
    reject_after,
    resume_input,
    run_fixture,
    run_sync,
)
from agui_pipeline.events import RunErrorEvent as RunErrorEvent  # the "alert" handler's type
from agui_pipeline.events import TextMessageContentEvent

# -- Library -------------------------------------------------------------------------


async def main() -> None:
    result = await Pipeline().run(Path("examples/weather.sse"))
    print(result.verdict.outcome)  # completed | rejected | truncated | handler-failed
    # each diagnostic: code, severity, message, event index, pointer, spec page
    for diagnostic in result.diagnostics:
        print(diagnostic)


def from_sync_code() -> Outcome:
    anyio.run(main)
    return run_sync("examples/weather.sse").verdict.outcome  # a str is a path


def relay(chunks: list[bytes]) -> RunResult:
    stream = Pipeline().incremental()
    for chunk in chunks:  # any split: half a frame, many frames
        for event in stream.feed(chunk):
            print(event["type"])
        if stream.ended:  # a rejection ended it early: feeding more raises
            break
    return stream.close()


print(relay([Path("examples/weather.sse").read_bytes()]).verdict.outcome)


source = Path("examples/weather.sse")


async def as_they_arrive(source: Source) -> None:
    async with Pipeline().open(source) as stream:
        async for event in stream:  # an AnyEvent; its "type" narrows it
            assert_type(event, AnyEvent)
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                assert_type(event, TextMessageContentEvent)
                print(event["delta"], end="")
    print(stream.verdict.outcome)
    assert_type(stream.verdict, Verdict)


async def judged(source: Source) -> Verdict:
    result = await Pipeline().open(source).drain()
    return result.verdict


class Tagger(Stage):
    name = "tagger"

    async def process(self, batch: Batch) -> Batch:
        for event in batch.events:
            ...  # translate, observe, rewrite
        return batch


pipeline = Pipeline(middleware=[Tagger])


FORBIDDEN = Code("example.forbidden", Severity.ERROR, "", "a name this consumer refuses")


class Redactor(Stage):
    name = "redactor"

    async def process(self, batch: Batch) -> Batch:
        kept = Batch([], [])
        for event, index in zip(batch.events, batch.indices, strict=True):
            if event.get("name") == "secret":
                continue  # removed: never delivered, whatever happens next
            if event.get("name") == "forbidden":
                rejection = self.ctx.reject(FORBIDDEN, "...", event_index=index)
                raise reject_after(kept, rejection)
            kept.events.append(event)
            kept.indices.append(index)
        return kept


# -- Compatibility and versions --------------------------------------------------------


run_input = {"threadId": "t-1", "runId": "r-1", "messages": []}


def outgoing(run_input: dict[str, Any]) -> None:
    pipeline = Pipeline(peer_max_protocol_version="0.0.57")
    try:
        prepared = prepare_input(run_input, peer_max_protocol_version=None)
    except InputRejected as error:
        print(error.pointer, pipeline.options.peer_max_protocol_version)
        return
    prepared.body  # the RunAgentInput to send, with "protocolVersion": "1.1"
    prepared.diagnostics  # what was removed or upgraded, with pointers into run_input


# -- The Conversation -------------------------------------------------------------------


body = {"threadId": "thread-weather", "runId": "run-1", "messages": [], "state": {}}


async def conversation_of(source: Source, body: dict[str, Any]) -> Conversation:
    result = await Pipeline().run(source, run_input=body)
    conversation = result.conversation  # UsageError when the pipeline builds none
    conversation.messages  # plain dicts in the schema's Message shapes, in order
    conversation.state  # any JSON value: STATE_SNAPSHOT replaces, STATE_DELTA patches
    conversation.interrupts  # the interrupts the latest run ended with, until the next run
    return conversation


# -- Handlers and sinks --------------------------------------------------------------


handlers = Handlers()


@handlers.on("TEXT_MESSAGE_CONTENT")
async def show(event: TextMessageContentEvent) -> None:
    print(event["delta"], end="", flush=True)


@handlers.on("*")
def log(event: AnyEvent) -> None:
    print(event["type"])


def alert(event: RunErrorEvent) -> None:
    print(event["message"], event.get("code"))


pipeline = Pipeline(handlers=handlers)  # or handlers={"RUN_ERROR": alert, "*": log}
by_mapping = Pipeline(handlers={"RUN_ERROR": alert, "*": log})


async def send_to_browser(data: bytes) -> None: ...  # the response a gateway is writing


per_request = pipeline.with_options(sinks=[SseSink(send_to_browser)])


class Counting:
    """A sink of one's own: the ``Sink`` protocol."""

    def __init__(self) -> None:
        self.seen = 0

    async def write(self, events: Sequence[AnyEvent]) -> None:
        self.seen += len(events)


counted = Pipeline(sinks=[Counting()], conversation=False)


# -- HTTP client --------------------------------------------------------------------


token = "s3cret"


async def over_http(url: str, token: str, run_input: dict[str, Any]) -> RunResult:
    async with HttpAgent(
        url, headers={"Authorization": f"Bearer {token}"}, pipeline=Pipeline(idle_timeout=60)
    ) as agent:
        result = await agent.run(run_input)  # or: async with agent.open(run_input) as stream
        async with agent.open(run_input) as stream:
            async for event in stream:
                assert_type(event, AnyEvent)
        nxt = resume_input(run_input, result, {"int-1": {"approved": True}}, cancelled=["int-2"])
        result = await agent.run(nxt)
    return result


async def resumed(url: str, run_input: dict[str, Any]) -> RunResult:
    async with HttpAgent(url) as agent:
        result = await agent.run(run_input)  # ends with the interrupts int-1 and int-2
        nxt = resume_input(run_input, result, {"int-1": {"approved": True}}, cancelled=["int-2"])
        result = await agent.run(nxt)
    return result


async def over_aiohttp(url: str, run_input: dict[str, Any]) -> RunResult:
    async with HttpAgent(url, transport=AiohttpTransport()) as agent:
        result = await agent.run(run_input)
    return result


async def resuming() -> None:
    agent = HttpAgent("http://127.0.0.1:8000/", retries=Retries(resume=True))
    await agent.aclose()


class Recording(Transport):
    def __init__(self) -> None:
        self.inner = HttpxTransport()
        self.sent: list[TransportRequest] = []

    async def send(self, request: TransportRequest) -> TransportResponse:
        self.sent.append(request)
        return await self.inner.send(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def recorded(url: str, run_input: dict[str, Any]) -> None:
    recording = Recording()
    async with HttpAgent(url, transport=recording, auth=("ada", "pw")) as agent:
        result = await agent.run(run_input)
    print(result.verdict.outcome, recording.sent[0].headers["Authorization"])


# -- Capabilities and producer diagnostics ---------------------------------------------


async def linted(body: dict[str, Any]) -> None:
    result = await Pipeline().run(Path("run.sse"), run_input=body)
    print(producer_report(result.diagnostics, result.suppressed).render())


async def reconciled(source: Source, body: dict[str, Any]) -> None:
    path = Path("examples/weather.capabilities.json")
    pipeline = Pipeline(capabilities=path)  # or a dict, JSON bytes, a model
    result = await pipeline.run(source, run_input=body)
    [d for d in result.diagnostics if d.code.startswith("reconcile.")]
    # d.declared is the declaration field, d.event_index / d.pointer the evidence

    # before sending: what the run input offers that the declaration refuses
    check_run_input(AgentCapabilities.load(path), body)


# -- Integrations ----------------------------------------------------------------------

from typing import Any

from agui_pipeline.testing.pytest_plugin import assert_clean
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

upstream = Upstream("http://127.0.0.1:9000/agent")  # one connection pool for every run


async def relayed(request: Request) -> Response:
    # your auth here: raise or return a 401 before anything is relayed
    return RelayResponse(upstream, await request.json(), headers={"X-User": "alice"})


gateway = Starlette(
    routes=[Route("/agent", relayed, methods=["POST"]), Mount("/raw", Relay(upstream))]
)

import logging

logging.basicConfig(level=logging.INFO)
agent_app = Starlette()  # your agent's AG-UI app, e.g. one serving pydantic-ai's AGUIAdapter
app = Tap(agent_app)  # serve this one instead: uvicorn yourmodule:app

# needs: pip install 'agui-pipeline[serve,otel]' opentelemetry-instrumentation-asgi
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

traced_app = OpenTelemetryMiddleware(Tap(agent_app, telemetry=True))  # request span: findings


async def answer(request: Request) -> Response:  # stands in for your agent's endpoint
    run = {key: (await request.json())[key] for key in ("threadId", "runId")}
    events = [{"type": "RUN_STARTED", **run}, {"type": "RUN_FINISHED", **run}]
    return Response(encode_sse(events), media_type="text/event-stream")


from starlette.routing import Route

agent_app = Starlette(routes=[Route("/", answer, methods=["POST"])])  # your AG-UI app


def test_my_agent_streams_conformant_ag_ui(agui_run: Any) -> None:
    result = agui_run(agent_app, {"threadId": "t", "runId": "r", "messages": []})
    assert_clean(result)  # fails listing every diagnostic at warning or above


from agui_pipeline.fleet import ProducerFromPath, check_fleet

if __name__ == "__main__":  # local:N starts worker processes, which import this file
    by_folder = ProducerFromPath("examples/{producer}/*.sse")
    with check_fleet(["examples/approval/"], scheduler="local:1", producer=by_folder) as run:
        for result in run:  # a SourceResult as each completes, in any order
            print(result.source, result.outcome, result.version, result.findings.to_dict())
    print(run.report.render())  # a FleetReport; run.report.to_dict() for JSON


# -- the documentation's pages, each example as a function of its own ----------------------


async def _README_1(url: str) -> None:  # README.md
    from agui_pipeline import Handlers, HttpAgent, Pipeline
    from agui_pipeline.events import TextMessageContentEvent

    handlers = Handlers()

    @handlers.on("TEXT_MESSAGE_CONTENT")
    def show(event: TextMessageContentEvent) -> None:
        print(event["delta"], end="", flush=True)

    run_input = {"threadId": "t-1", "runId": "r-1", "messages": []}
    async with HttpAgent(url, pipeline=Pipeline(handlers=handlers)) as agent:
        result = await agent.run(run_input)
    print()
    print(result.verdict.outcome)  # completed
    print(result.conversation.messages[-1]["content"])  # the answer, assembled


async def _README_2(url: str) -> None:  # README.md
    from collections import Counter
    from pathlib import Path

    from agui_pipeline import Batch, Pipeline, Stage, run_sync

    seen: Counter[str] = Counter()

    class CountByType(Stage):
        name = "count-by-type"

        async def process(self, batch: Batch) -> Batch:
            seen.update(batch.types)
            return batch

    result = run_sync(Path("examples/weather.sse"), Pipeline(middleware=[CountByType]))
    print(result.verdict.outcome, seen.most_common(3))


async def _concepts_conversation_1(url: str) -> None:  # docs/concepts/conversation.md
    from pathlib import Path

    from agui_pipeline import run_sync

    body = {"threadId": "thread-weather", "runId": "run-1", "messages": [], "state": {}}
    conversation = run_sync(Path("examples/weather.sse"), run_input=body).conversation
    for message in conversation.messages:  # plain dicts in the schema's Message shapes
        print(message["role"], message["id"])
    print(conversation.state)  # STATE_SNAPSHOT replaces it, STATE_DELTA patches it
    print(conversation.interrupts)  # those the latest run ended with, until the next run


async def _concepts_conversation_2(url: str) -> None:  # docs/concepts/conversation.md
    from agui_pipeline import HttpAgent, resume_input

    run_input = {"threadId": "t-1", "runId": "r-1", "messages": []}
    async with HttpAgent(url) as agent:
        first = await agent.run(run_input)
        print([interrupt["id"] for interrupt in first.conversation.interrupts])
        answered = {"int-1": {"approved": True}}
        second = await agent.run(resume_input(run_input, first, answered, cancelled=["int-2"]))
        print(second.conversation.messages[-1]["content"])


async def _concepts_processing_1(url: str) -> None:  # docs/concepts/processing.md
    from pathlib import Path

    from agui_pipeline import Pipeline, run_sync

    pipeline = Pipeline()
    print(pipeline.stage_names)  # the built-in stages, in order
    for recording in ("examples/weather.sse", "examples/truncated.sse"):
        print(recording, run_sync(Path(recording), pipeline).verdict.outcome)


async def _concepts_processing_2(url: str) -> None:  # docs/concepts/processing.md
    from agui_pipeline import Pipeline

    pipeline = Pipeline(peer_max_protocol_version="0.0.57")
    print(pipeline.options.peer_max_protocol_version)


async def _concepts_verdicts_1(url: str) -> None:  # docs/concepts/verdicts.md
    from pathlib import Path

    from agui_pipeline import run_sync

    for recording in ("weather", "run-error", "truncated", "rejected"):
        result = run_sync(Path(f"examples/{recording}.sse"))
        runs = ", ".join(f"{run.run_id}: {run.status}" for run in result.runs)
        print(f"{recording}: {result.verdict.outcome} ({runs})")


async def _concepts_verdicts_2(url: str) -> None:  # docs/concepts/verdicts.md
    from pathlib import Path

    from agui_pipeline import run_sync

    result = run_sync(Path("examples/misspelt.sse"))
    for diagnostic in result.diagnostics:
        print(diagnostic.code, diagnostic.severity, diagnostic.event_index, diagnostic.pointer)
        print(diagnostic.spec)


async def _getting_started_1(url: str) -> None:  # docs/getting-started.md
    from pathlib import Path

    import anyio
    from agui_pipeline import Pipeline

    async def main() -> None:
        result = await Pipeline().run(Path("examples/weather.sse"))
        print(result.verdict.outcome)  # completed
        print(result.conversation.messages[-1]["content"])  # the answer, assembled

    anyio.run(main)


async def _getting_started_2(url: str) -> None:  # docs/getting-started.md
    from agui_pipeline import Handlers, HttpAgent, Pipeline
    from agui_pipeline.events import TextMessageContentEvent

    handlers = Handlers()

    @handlers.on("TEXT_MESSAGE_CONTENT")
    def show(event: TextMessageContentEvent) -> None:
        print(event["delta"], end="", flush=True)

    run_input = {"threadId": "t-1", "runId": "r-1", "messages": []}
    async with HttpAgent(url, pipeline=Pipeline(handlers=handlers)) as agent:
        result = await agent.run(run_input)
    print()
    print(result.verdict.outcome)


async def _getting_started_3(url: str) -> None:  # docs/getting-started.md
    from collections import Counter
    from pathlib import Path

    from agui_pipeline import Batch, Pipeline, Stage, run_sync

    seen: Counter[str] = Counter()

    class CountByType(Stage):
        name = "count-by-type"

        async def process(self, batch: Batch) -> Batch:
            seen.update(batch.types)
            return batch

    run_sync(Path("examples/weather.sse"), Pipeline(middleware=[CountByType]))
    print(seen.most_common(3))


async def _guides_agent_resource_1(url: str) -> None:  # docs/guides/agent-resource.md
    from pathlib import Path

    from agui_pipeline import Pipeline, run_sync

    declaration = capabilities_from_agent_resource(Path("examples/weather.agent.json"))
    print(declaration.to_json()["tools"])
    result = run_sync(Path("examples/weather.sse"), Pipeline(capabilities=declaration))
    print([d.code for d in result.diagnostics if d.code.startswith("reconcile.")])


async def _guides_conformance_1(url: str) -> None:  # docs/guides/conformance.md
    from pathlib import Path

    from agui_pipeline.testing.conformance import check_fixture

    fixture = load_fixture(Path("examples/fixture.json"))
    replay = run_fixture(fixture)
    print(check_fixture(replay))  # no failures: the replay did what the fixture expects
    assert replay.result is not None  # None when the fixture's input is refused
    print(replay.result.verdict.outcome)  # rejected, as expected


async def _guides_http_client_1(url: str) -> None:  # docs/guides/http-client.md
    from agui_pipeline import HttpAgent, Pipeline

    token = "s3cret"
    run_input = {"threadId": "t-1", "runId": "r-1", "messages": []}
    async with HttpAgent(
        url, headers={"Authorization": f"Bearer {token}"}, pipeline=Pipeline(idle_timeout=60)
    ) as agent:
        result = await agent.run(run_input)  # or: async with agent.open(run_input) as stream
    print(result.verdict.outcome, result.conversation.messages[-1]["content"])


async def _guides_http_client_2(url: str) -> None:  # docs/guides/http-client.md
    import anyio
    from agui_pipeline import HttpAgent

    async def main() -> None:
        async with HttpAgent("http://127.0.0.1:9/", connect_timeout=2) as agent:
            try:
                await agent.run({"threadId": "t-1", "runId": "r-1", "messages": []})
            except RequestFailed as error:
                print("no agent there:", type(error).__name__)

    anyio.run(main)


async def _guides_http_client_3(url: str) -> None:  # docs/guides/http-client.md
    from agui_pipeline import AiohttpTransport, HttpAgent

    run_input = {"threadId": "t-1", "runId": "r-1", "messages": []}
    async with HttpAgent(url, transport=AiohttpTransport()) as agent:
        result = await agent.run(run_input)
    print(result.verdict.outcome)


async def _guides_library_1(url: str) -> None:  # docs/guides/library.md
    from pathlib import Path

    import anyio
    from agui_pipeline import Pipeline

    async def main() -> None:
        result = await Pipeline().run(Path("examples/weather.sse"))
        print(result.verdict.outcome)  # completed | rejected | truncated | handler-failed
        for diagnostic in result.diagnostics:  # code, severity, message, index, pointer, spec
            print(diagnostic)
        print(len(result.events), "events delivered")

    anyio.run(main)


async def _guides_library_2(url: str) -> None:  # docs/guides/library.md
    from pathlib import Path

    from agui_pipeline import Pipeline

    source = Path("examples/weather.sse")
    async with Pipeline().open(source) as stream:
        async for event in stream:  # an AnyEvent; its "type" narrows it
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                print(event["delta"], end="")
    print()
    print(stream.verdict.outcome)


async def _guides_library_3(url: str) -> None:  # docs/guides/library.md
    judged = await Pipeline().open(source).drain()
    print(judged.verdict.outcome, len(judged.events), judged.counters.delivered)
    verdict = await Pipeline().open(source).drain(conversation=False)
    print(verdict.verdict.outcome, verdict.materialised)  # completed None


async def _guides_library_4(url: str) -> None:  # docs/guides/library.md
    from pathlib import Path

    from agui_pipeline import AnyEvent, Handlers, Pipeline, run_sync
    from agui_pipeline.events import TextMessageContentEvent

    handlers = Handlers()
    types: list[str] = []

    @handlers.on("TEXT_MESSAGE_CONTENT")
    async def show(event: TextMessageContentEvent) -> None:
        print(event["delta"], end="", flush=True)

    @handlers.on("*")
    def log(event: AnyEvent) -> None:
        types.append(event["type"])

    pipeline = Pipeline(handlers=handlers)  # or handlers={"RUN_ERROR": alert, "*": log}
    run_sync(Path("examples/weather.sse"), pipeline)
    print()
    print(len(types), "events")


async def _guides_library_5(url: str) -> None:  # docs/guides/library.md
    from agui_pipeline import SseSink

    written: list[bytes] = []

    async def send_to_browser(data: bytes) -> None:  # the response you are writing
        written.append(data)

    per_request = pipeline.with_options(sinks=[SseSink(send_to_browser)])
    run_sync(Path("examples/weather.sse"), per_request)
    print(sum(map(len, written)), "bytes of SSE written")


async def _guides_library_6(url: str) -> None:  # docs/guides/library.md
    from agui_pipeline import prepare_input

    run_input = {"threadId": "t-1", "runId": "r-1", "messages": [], "extra": 1}
    prepared = prepare_input(run_input, peer_max_protocol_version=None)
    print(prepared.body)  # the RunAgentInput to send, with "protocolVersion": "1.1"
    print([d.code for d in prepared.diagnostics])  # what was removed, with pointers


async def _guides_producer_lint_1(url: str) -> None:  # docs/guides/producer-lint.md
    import json
    from pathlib import Path

    from agui_pipeline import producer_report, run_sync

    run_input = json.loads(Path("examples/frontend.input.json").read_text())
    alone = run_sync(Path("examples/frontend.sse"))
    paired = run_sync(Path("examples/frontend.sse"), run_input=run_input)
    print([d.code for d in alone.diagnostics if d.severity == "warning"])  # nothing to see
    print([d.code for d in paired.diagnostics if d.severity == "warning"])
    print(producer_report(paired.diagnostics, paired.suppressed).render())


async def _guides_producer_lint_2(url: str) -> None:  # docs/guides/producer-lint.md
    from pathlib import Path

    from agui_pipeline import AgentCapabilities, Pipeline, check_run_input, run_sync

    declared = Path("examples/weather.capabilities.json")
    pipeline = Pipeline(capabilities=declared)  # or a dict, JSON bytes, an AgentCapabilities
    result = run_sync(Path("examples/weather.sse"), pipeline)
    for diagnostic in result.diagnostics:
        if diagnostic.code.startswith("reconcile."):
            # diagnostic.declared is the declaration field; event_index and pointer the evidence
            print(diagnostic.code, diagnostic.declared, diagnostic.event_index)

    # before sending: what a run input offers that the declaration refuses
    body = {"threadId": "t-1", "runId": "r-1", "messages": [], "tools": []}
    print(check_run_input(AgentCapabilities.load(declared), body))


async def _guides_protobuf_1(url: str) -> None:  # docs/guides/protobuf.md
    from agui_pipeline import HttpAgent

    run_input = {"threadId": "t-1", "runId": "r-1", "messages": []}
    async with HttpAgent(url, binary=True) as agent:
        result = await agent.run(run_input)
    print(result.verdict.outcome, result.conversation.messages[-1]["content"])


async def _guides_pytest_plugin_1(url: str) -> None:  # docs/guides/pytest-plugin.md
    from typing import Any

    from agui_pipeline import encode_sse
    from agui_pipeline.testing.pytest_plugin import assert_clean
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def answer(request: Request) -> Response:  # stands in for your agent's endpoint
        run = {key: (await request.json())[key] for key in ("threadId", "runId")}
        events = [{"type": "RUN_STARTED", **run}, {"type": "RUN_FINISHED", **run}]
        return Response(encode_sse(events), media_type="text/event-stream")

    agent_app = Starlette(routes=[Route("/", answer, methods=["POST"])])

    def test_my_agent_streams_conformant_ag_ui(agui_run: Any) -> None:
        result = agui_run(agent_app, {"threadId": "t", "runId": "r", "messages": []})
        assert_clean(result)


async def _guides_pytest_plugin_2(url: str) -> None:  # docs/guides/pytest-plugin.md
    from pathlib import Path
    from typing import Any

    def test_the_client_reads_a_stream_cut_into_bytes(agui_replay: Any, agui_run: Any) -> None:
        agent = agui_replay(Path("examples/weather.sse"), split=1, echo_ids=True)
        result = agui_run(agent.url, {"threadId": "t", "runId": "r", "messages": []})
        assert result.verdict.completed
        assert result.conversation.messages[-1]["content"].startswith("Clear skies")

    def test_a_cut_connection_is_a_truncated_run(agui_replay: Any, agui_run: Any) -> None:
        agent = agui_replay(Path("examples/weather.sse"), drop_after=3)
        result = agui_run(agent.url, {"threadId": "t", "runId": "r", "messages": []})
        assert result.verdict.outcome == "truncated"


async def _guides_serve_1(url: str) -> None:  # docs/guides/serve.md
    from pathlib import Path

    from agui_pipeline import HttpAgent

    events = run_sync(Path("examples/weather.sse")).events  # or any list of event dicts
    with ReplayServer(Replay(events, split=1, echo_ids=True)) as server:
        async with HttpAgent(server.url) as agent:
            result = await agent.run({"threadId": "t-1", "runId": "r-1", "messages": []})
    print(result.verdict.outcome, result.counters.read)


async def _guides_tap_1(url: str) -> None:  # docs/guides/tap.md
    import logging
    from pathlib import Path

    from agui_pipeline import HttpAgent, Tap
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    shown = logging.StreamHandler()
    shown.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logging.getLogger("agui_pipeline.http.tap").addHandler(shown)
    logging.getLogger("agui_pipeline.http.tap").setLevel(logging.INFO)

    async def answer(request: Request) -> Response:  # stands in for your agent's endpoint
        recorded = Path("examples/misspelt.sse").read_bytes()
        return Response(recorded, media_type="text/event-stream")

    agent_app = Starlette(routes=[Route("/", answer, methods=["POST"])])
    with BackgroundServer(Tap(agent_app)) as server:  # in production: uvicorn module:app
        async with HttpAgent(server.url) as client:
            await client.run({"threadId": "t1", "runId": "r1", "messages": []})


async def _guides_tap_2(url: str) -> None:  # docs/guides/tap.md
    from agui_pipeline import Tap
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
    from starlette.applications import Starlette

    agent_app = Starlette()  # your agent's AG-UI app, e.g. one serving pydantic-ai's AGUIAdapter
    traced_app = OpenTelemetryMiddleware(Tap(agent_app, telemetry=True))  # serve this one


async def _limits_1(url: str) -> None:  # docs/limits.md
    from pathlib import Path

    from agui_pipeline import Pipeline, run_sync

    strict = Pipeline(limits=Limits(max_items=2))  # at most 2 messages and tool calls
    result = run_sync(Path("examples/weather.sse"), strict)
    print(result.verdict.outcome, result.verdict.error)


def _guides_writing_stages_1() -> None:  # docs/guides/writing-stages.md
    from functools import partial
    from pathlib import Path
    from typing import ClassVar

    from agui_pipeline import Batch, ChunkForm, Event, Pipeline, Stage, StreamContext, run_sync

    class RedactArguments(Stage):
        """Hides the arguments of calls to the tools named, before any handler sees them."""

        name: ClassVar[str] = "redact-arguments"
        form: ClassVar[ChunkForm] = ChunkForm.EXPANDED  # TOOL_CALL_CHUNK arrives as TOOL_CALL_ARGS

        def __init__(self, ctx: StreamContext, tools: frozenset[str]) -> None:
            super().__init__(ctx)
            self.tools = tools
            self.hidden: dict[str, bool] = {}  # call id -> whether its "{}" has been sent

        async def process(self, batch: Batch) -> Batch:
            events: list[Event] = []
            for event in batch.events:
                if event["type"] == "TOOL_CALL_START" and event.get("toolCallName") in self.tools:
                    self.hidden[event["toolCallId"]] = False
                elif event["type"] == "TOOL_CALL_ARGS" and event.get("toolCallId") in self.hidden:
                    said = self.hidden[event["toolCallId"]]
                    self.hidden[event["toolCallId"]] = True
                    # A new event, not the producer's changed: and without its rawEvent,
                    # which holds the chunk it was made from, password and all.
                    event = {"type": "TOOL_CALL_ARGS", "toolCallId": event["toolCallId"]}
                    event["delta"] = "" if said else "{}"
                events.append(event)
            return Batch(events, batch.indices)

    pipeline = Pipeline(middleware=[partial(RedactArguments, tools=frozenset({"login"}))])
    result = run_sync(Path("docs/guides/chunked.sse"), pipeline)
    assert result.conversation is not None
    message = result.conversation.message("m1")  # the assistant message the call is on
    assert message is not None and message["role"] == "assistant"
    print(message["toolCalls"])  # [{'id': 'c1', ..., 'arguments': '{}'}]
    assert "hunter2" not in str(result.events) and "hunter2" not in str(message)


def _guides_writing_stages_2() -> None:  # docs/guides/writing-stages.md
    from pathlib import Path
    from typing import ClassVar

    from agui_pipeline import Batch, Pipeline, Stage, run_sync

    class DropCustom(Stage):
        """Removes CUSTOM events: this application has no use for them."""

        name: ClassVar[str] = "drop-custom"

        async def process(self, batch: Batch) -> Batch:
            keep = [i for i, kind in enumerate(batch.types) if kind != "CUSTOM"]
            if len(keep) == len(batch):
                return batch
            return Batch([batch.events[i] for i in keep], [batch.indices[i] for i in keep])

    result = run_sync(Path("docs/guides/chunked.sse"), Pipeline(middleware=[DropCustom]))
    print(result.counters.dropped, [event["type"] for event in result.events][-2:])
    assert result.counters.dropped == 1
    assert "CUSTOM" not in [event["type"] for event in result.events]


def _guides_writing_stages_3() -> None:  # docs/guides/writing-stages.md
    from collections import Counter
    from functools import partial
    from pathlib import Path
    from typing import ClassVar

    from agui_pipeline import Batch, ChunkForm, Pipeline, Stage, StreamContext, run_sync

    class CountTypes(Stage):
        """Counts the events of each type the producer sent, into ``counts``."""

        name: ClassVar[str] = "count-types"
        form: ClassVar[ChunkForm] = ChunkForm.AS_SENT

        def __init__(self, ctx: StreamContext, counts: Counter[str]) -> None:
            super().__init__(ctx)
            self.counts = counts

        async def process(self, batch: Batch) -> Batch:
            self.counts.update(kind for kind in batch.types if isinstance(kind, str))
            return batch

    counts: Counter[str] = Counter()
    stage = partial(CountTypes, counts=counts)
    run_sync(Path("docs/guides/chunked.sse"), Pipeline(middleware=[stage]))
    print(counts["TOOL_CALL_CHUNK"], counts["TEXT_MESSAGE_CHUNK"])  # 2 2
    assert counts["TOOL_CALL_CHUNK"] == 2 and counts["TOOL_CALL_ARGS"] == 0


async def readme_agent(handlers: Handlers) -> RunResult:
    pipeline = Pipeline(handlers=handlers)
    async with HttpAgent("http://127.0.0.1:8000/", pipeline=pipeline) as agent:
        return await agent.run({"threadId": "t-1", "runId": "r-1", "messages": []})
