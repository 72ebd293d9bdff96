"""The ASGI relay and ``agui-pipeline proxy``: agent → relay → client, real HTTP on both sides."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import httpx
import orjson
import pytest
from agui_pipeline import BackgroundServer, HttpAgent, Relay, Replay, ReplayServer, Upstream
from agui_pipeline.http.relay import read_body
from agui_pipeline.http.serve import read_recording

from tests.conftest import ROOT

RUN: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t-1", "runId": "r-1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m-1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "hello"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m-1"},
    {"type": "RUN_FINISHED", "threadId": "t-1", "runId": "r-1"},
]
INPUT = {"threadId": "t-1", "runId": "r-1", "messages": []}


@pytest.fixture
def agent() -> Iterator[ReplayServer]:
    with ReplayServer(Replay(RUN)) as running:
        yield running


def upstream(url: str, transport: str) -> Upstream:
    """The relay's upstream, read through ``transport`` (its pool closed with the relay)."""
    if transport == "aiohttp":
        from agui_pipeline import AiohttpTransport

        return Upstream(url, transport=AiohttpTransport())
    return Upstream(url)


def relay_run(url: str, run_input: dict[str, Any] = INPUT) -> Any:
    async def main() -> Any:
        async with HttpAgent(url) as client:
            return await client.run(run_input)

    return anyio.run(main)


def frames(body: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: ")]


def test_a_clean_run_is_relayed_event_for_event(agent: ReplayServer, transport: str) -> None:
    seen: list[Any] = []
    relay = Relay(
        upstream(agent.url, transport),
        on_end=lambda run_input, verdict, cause: seen.append(verdict),
    )
    with BackgroundServer(relay, lifespan=True) as gateway:
        result = relay_run(gateway.url)
    assert result.verdict.completed and result.events == RUN
    assert result.transport == "http+sse"
    assert agent.replay.requests[-1][1]["threadId"] == "t-1"
    assert len(seen) == 1 and seen[0].completed


def test_what_the_pipeline_strips_upstream_is_not_relayed(agent: ReplayServer) -> None:
    agent.replay.events = [{**RUN[0], "rogue": 1}, *RUN[1:]]
    pointers: list[str | None] = []
    relay = Relay(agent.url, on_diagnostic=lambda _input, d: pointers.append(d.pointer))
    with BackgroundServer(relay) as gateway:
        result = relay_run(gateway.url)
    assert result.events == RUN and result.diagnostics == []
    assert pointers == ["/rogue"]  # said live, at the relay


def test_an_upstream_error_status_is_answered_502_before_any_stream(
    agent: ReplayServer, transport: str
) -> None:
    agent.replay.status = 500
    with BackgroundServer(Relay(upstream(agent.url, transport)), lifespan=True) as gateway:
        answer = httpx.post(gateway.url, json=INPUT, timeout=10)
    assert answer.status_code == 502
    assert answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert body["upstreamStatus"] == 500 and "this replay answers 500" in body["excerpt"]


def test_an_unreachable_upstream_is_answered_502(transport: str) -> None:
    with BackgroundServer(
        Relay(upstream("http://127.0.0.1:9/", transport)), lifespan=True
    ) as gateway:
        answer = httpx.post(gateway.url, json=INPUT, timeout=10)
    assert answer.status_code == 502 and answer.json()["upstreamStatus"] is None


def test_a_rejected_upstream_stream_ends_with_a_run_error_naming_it(
    agent: ReplayServer, transport: str
) -> None:
    orphan = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "nobody", "delta": "x"}
    agent.replay.events = [*RUN[:3], orphan, *RUN[3:]]
    with BackgroundServer(Relay(upstream(agent.url, transport)), lifespan=True) as gateway:
        answer = httpx.post(gateway.url, json=INPUT, timeout=10)
        result = relay_run(gateway.url)
    relayed = frames(answer.content)
    assert answer.status_code == 200 and relayed[:3] == RUN[:3]
    error = relayed[-1]
    assert error["type"] == "RUN_ERROR" and len(relayed) == 4
    assert error["code"].startswith("verify.") and "nobody" in error["message"]
    # The client sees a well-formed stream whose run failed: within the spec, not a success.
    assert result.verdict.completed and result.runs[-1].status == "error"


def test_a_truncated_upstream_stream_ends_with_a_run_error(
    agent: ReplayServer, transport: str
) -> None:
    agent.replay.drop_after = 2
    with BackgroundServer(Relay(upstream(agent.url, transport)), lifespan=True) as gateway:
        relayed = frames(httpx.post(gateway.url, json=INPUT, timeout=10).content)
    assert relayed[:2] == RUN[:2]
    assert relayed[2]["type"] == "RUN_ERROR" and "truncat" in relayed[2]["code"]


def test_an_input_the_run_input_rules_refuse_is_answered_422(agent: ReplayServer) -> None:
    with BackgroundServer(Relay(agent.url, max_body=1000)) as gateway:
        wrong = httpx.post(gateway.url, content=b'{"threadId":1,"runId":"r","messages":[]}')
        big = httpx.post(gateway.url, json={**INPUT, "state": {"x": "y" * 2000}})
        chunked = httpx.post(gateway.url, content=iter([b"[" + b" " * 2000 + b"]"]))
    assert wrong.status_code == 422 and wrong.json()["pointer"] == "/threadId"
    assert big.status_code == 413 and chunked.status_code == 413
    assert agent.replay.requests == []  # nothing was sent upstream


def test_a_client_that_disconnects_cancels_the_upstream_request(
    agent: ReplayServer, transport: str
) -> None:
    # Ten seconds between frames: only the relay's watch on the client, not a failed write
    # to it at the next frame, can close the upstream request within the five seconds below.
    agent.replay.pause = 10.0
    with BackgroundServer(Relay(upstream(agent.url, transport)), lifespan=True) as gateway:
        with (
            httpx.Client(timeout=10) as client,
            client.stream("POST", gateway.url, json=INPUT) as response,
        ):
            first = next(response.iter_bytes())
            assert first.startswith(b"data: ")
        deadline = time.monotonic() + 5
        while agent.replay.disconnects == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert agent.replay.disconnects == 1  # the relay closed its upstream request
        assert agent.replay.active == 0


def test_many_runs_at_once_share_one_upstream_pool(agent: ReplayServer, transport: str) -> None:
    with BackgroundServer(Relay(upstream(agent.url, transport)), lifespan=True) as gateway:

        async def main() -> list[Any]:
            results: list[Any] = []
            async with HttpAgent(gateway.url) as client, anyio.create_task_group() as group:
                for _ in range(50):

                    async def one() -> None:
                        results.append(await client.run(INPUT))

                    group.start_soon(one)
            return results

        results = anyio.run(main)
    assert len(results) == 50 and all(r.events == RUN for r in results)


# -- FastAPI: the example gateway -----------------------------------------------------------


def load_example(name: str) -> ModuleType:
    path = ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_fastapi_gateway_example_relays_behind_its_own_auth(agent: ReplayServer) -> None:
    example = load_example("fastapi_gateway")
    app = example.build_app(agent.url, tokens={"alice-token": "alice"})
    with BackgroundServer(app) as gateway:
        url = gateway.url + "agent"
        refused = httpx.post(url, json=INPUT, timeout=10)
        answer = httpx.post(
            url, json=INPUT, headers={"Authorization": "Bearer alice-token"}, timeout=10
        )
        agent.replay.status = 503
        failed = httpx.post(
            url, json=INPUT, headers={"Authorization": "Bearer alice-token"}, timeout=10
        )
    assert refused.status_code == 401
    assert answer.status_code == 200 and frames(answer.content) == RUN
    assert agent.replay.requests[-1][0]["x-user"] == "alice"  # the gateway's own header
    assert failed.status_code == 502 and failed.json()["upstreamStatus"] == 503


# -- the command -------------------------------------------------------------------------


def test_the_proxy_command_relays_and_logs_each_run_live(
    agent: ReplayServer, transport: str
) -> None:
    agent.replay.events = [{**RUN[0], "rogue": 1}, *RUN[1:]]
    command = [
        sys.executable,
        "-m",
        "agui_pipeline",
        "proxy",
        "--upstream",
        agent.url,
        "--port",
        "0",
        "--log-format",
        "json",
        "--transport",
        transport,
    ]
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as proxy:
        try:
            assert proxy.stderr is not None
            line = proxy.stderr.readline()
            assert line.startswith("relaying "), line
            url = line.split()[1]
            result = relay_run(url)
        finally:
            proxy.terminate()
        logged = [json.loads(line) for line in proxy.stderr.read().splitlines()]  # all of it
    assert result.events == RUN
    assert logged[0]["runId"] == "r-1" and logged[0]["diagnostic"]["pointer"] == "/rogue"
    assert logged[1]["verdict"]["outcome"] == "completed" and len(logged) == 2


def test_the_proxy_command_refuses_a_url_that_is_not_http(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agui_pipeline", "proxy", "--upstream", "ftp://x"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and "argument --upstream: expected an http" in done.stderr


def test_the_proxy_reconciles_with_the_declaration_and_logs_text() -> None:
    recording = (ROOT / "examples" / "weather.sse").read_bytes()
    with ReplayServer(Replay(read_recording(recording), echo_ids=True)) as weather:
        command = [
            sys.executable,
            "-m",
            "agui_pipeline",
            "proxy",
            "--upstream",
            weather.url,
            "--port",
            "0",
            "--capabilities",
            str(ROOT / "examples" / "weather.capabilities.json"),
        ]
        with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as proxy:
            try:
                assert proxy.stderr is not None
                url = proxy.stderr.readline().split()[1]
                result = relay_run(url)
            finally:
                proxy.terminate()
            logged = proxy.stderr.read().splitlines(keepends=True)  # all of it, once it exits
    assert result.verdict.completed and len(result.events) == 21
    assert logged[0].startswith('run "r-1" (thread "t-1"): reconcile.false-contradicted')
    assert "/state/deltas" in logged[0] and "reconcile.run-summary" in logged[1]
    assert logged[2:] == ['run "r-1" (thread "t-1"): completed\n']


class _CountingReceive:
    """An ASGI ``receive`` that counts its calls, handing out ``body`` in one message."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.calls = 0

    async def __call__(self) -> dict[str, Any]:
        self.calls += 1
        return {"type": "http.request", "body": self.body, "more_body": False}


@pytest.mark.parametrize(("declared", "refused"), [(9, False), (10, False), (11, True)])
def test_a_declared_length_over_the_cap_is_refused_before_a_byte_is_read(
    declared: int, refused: bool
) -> None:
    receive = _CountingReceive(b"x" * min(declared, 10))
    body = anyio.run(read_body, receive, 10, str(declared))
    assert (body is None) is refused
    assert receive.calls == (0 if refused else 1)


@pytest.mark.parametrize(("size", "refused"), [(9, False), (10, False), (11, True)])
def test_a_body_over_the_cap_is_refused_as_it_arrives(size: int, refused: bool) -> None:
    receive = _CountingReceive(b"x" * size)
    body = anyio.run(read_body, receive, 10, None)
    assert body == (None if refused else b"x" * size)
