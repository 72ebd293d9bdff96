"""A user's file that follows every Python example of the README, checked with ``mypy --strict``.

``tests/test_public_api.py`` runs mypy on it and checks that every line of the
README's Python examples appears here, so the two cannot drift apart. It is
never executed: it names files and endpoints that need not exist.
"""

# The README shows a value by naming it, and loops over events it leaves alone:
# ruff: noqa: B007, B018
# Integrations imports what its examples import, where they do (Any is used above in
# annotations, which are not evaluated):
# ruff: noqa: E402

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import assert_type

import anyio
from agui_pipeline import (
    AgentCapabilities,
    AiohttpTransport,
    AnyEvent,
    Batch,
    Code,
    Conversation,
    Handlers,
    HttpAgent,
    InputRejected,
    Outcome,
    Pipeline,
    Relay,
    RelayResponse,
    RunResult,
    Severity,
    Source,
    SseSink,
    Stage,
    Tap,
    Upstream,
    Verdict,
    check_run_input,
    encode_sse,
    prepare_input,
    producer_report,
    reject_after,
    resume_input,
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
