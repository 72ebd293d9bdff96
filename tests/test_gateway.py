"""The proxy as a service, attacked on 127.0.0.1: silent sockets under a lowered descriptor
limit, slowloris on headers and bodies, more runs than it may hold, a SIGTERM mid-run; its
endpoints, counters and logs. Each case is bounded in count and time and asserts the answer
and how soon it came, not only that the process survived."""

from __future__ import annotations

import os
import re
import resource
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
from agui_pipeline import BackgroundServer, Relay, Replay, ReplayServer, Upstream
from agui_pipeline.http.gateway import Gateway, GatewaySettings, SummarisedLog
from agui_pipeline.http.gateway_metrics import GatewayMetrics

from tests.test_relay import INPUT, RUN, frames

SLOW_RUN = Replay(RUN, pause=0.5)
"""Five events half a second apart: a run stays open about two seconds."""


@pytest.fixture
def agent() -> Iterator[ReplayServer]:
    with ReplayServer(Replay(RUN)) as running:
        yield running


class Proxy:
    """``agui-pipeline proxy`` in a process of its own, its stderr in a file."""

    def __init__(self, process: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.process = process
        self.url = url
        self.log = log
        self.address = (url.split("//")[1].split(":")[0], int(url.rsplit(":", 1)[1].strip("/")))

    def logged(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def proxy(
    tmp_path: Path, upstream: str, *flags: str, descriptors: int | None = None
) -> Iterator[Proxy]:
    """The proxy relaying to ``upstream``; ``descriptors`` lowers its RLIMIT_NOFILE, soft and
    hard, as a host with that common limit would have it."""

    def limited() -> None:
        if descriptors is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))

    log = tmp_path / "proxy.log"
    command = [sys.executable, "-m", "agui_pipeline", "proxy", "--upstream", upstream]
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [*command, "--port", "0", *flags], stderr=stderr, preexec_fn=limited
        )
    try:
        deadline = time.monotonic() + 30
        while not (first := log.read_text().split("\n")[0]).startswith("relaying ") or (
            "\n" not in log.read_text()
        ):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield Proxy(process, first.split()[1], log)
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=30)


def own_descriptors_at_least(count: int) -> None:
    """This process holds the attackers' sockets: raise its own soft limit, or skip."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < count:
        pytest.skip(f"needs a hard RLIMIT_NOFILE of {count}, this machine's is {hard}")
    if soft != resource.RLIM_INFINITY and soft < count:
        resource.setrlimit(resource.RLIMIT_NOFILE, (count, hard))


# -- overload: answered, never hung ----------------------------------------------------------


def test_1030_silent_sockets_under_1024_descriptors_leave_a_real_request_answered(
    tmp_path: Path, agent: ReplayServer
) -> None:
    own_descriptors_at_least(2048)
    with proxy(tmp_path, agent.url, descriptors=1024) as running:
        silent = [socket.create_connection(running.address, timeout=10) for _ in range(1030)]
        try:
            time.sleep(2.0)  # the proxy accepts what it can; the silent ones age past 1 s
            started = time.monotonic()
            answer = httpx.post(running.url, json=INPUT, timeout=10)
            waited = time.monotonic() - started
        finally:
            for sock in silent:
                sock.close()
        time.sleep(0.5)
        logged = running.logged()
    # Answered, and relayed: the request took the descriptors of the oldest silent sockets.
    assert answer.status_code == 200 and waited < 5, (answer.status_code, waited)
    assert frames(answer.content) == RUN
    # The log stays small and names the local cause; nothing blames the upstream.
    assert len(logged) < 10_000, len(logged)
    assert "descriptor budget" in logged
    assert "Traceback" not in logged and "Too many open files" not in logged


def test_honest_streams_past_a_lowered_descriptor_limit_get_503_not_502(tmp_path: Path) -> None:
    """200 streams at once through a proxy allowed 512 descriptors: those past its budget are
    answered 503 with Retry-After, at once, and none 502.

    Honest clients send their request the moment they connect. Each socket here is opened
    and written in one step, one after another, so none waits on this process's scheduling:
    200 clients in one event loop of a loaded machine can leave a connection a second and
    more without its headers, and the proxy rightly closes such a one with 408 to make room
    (the silent sockets' case above)."""
    own_descriptors_at_least(2048)
    with (
        ReplayServer(Replay(RUN, pause=2.0)) as slow,
        proxy(tmp_path, slow.url, descriptors=512) as running,
    ):
        body = orjson.dumps(INPUT)
        host, port = running.address
        request = (
            f"POST / HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
            f"accept: text/event-stream\r\ncontent-length: {len(body)}\r\n\r\n"
        ).encode() + body
        clients: list[socket.socket] = []
        try:
            started = time.monotonic()
            for _ in range(200):
                client = socket.create_connection(running.address, timeout=10)
                client.sendall(request)
                clients.append(client)
            answers = [(*_response_head(client), time.monotonic() - started) for client in clients]
        finally:
            for client in clients:
                client.close()
        logged = running.logged()
    statuses = [status for status, _, _ in answers]
    assert set(statuses) == {200, 503} and len(statuses) == 200, sorted(statuses)
    assert all(retry == "1" for status, retry, _ in answers if status == 503)
    assert max(waited for _, _, waited in answers) < 5
    assert "descriptor budget" in logged and "ConnectError" not in logged
    assert logged.count("gateway: descriptor budget") == 1  # summarised, not one per request


def _response_head(client: socket.socket) -> tuple[int, str | None]:
    """The status and the ``Retry-After`` of the response ``client`` reads (its head only)."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = client.recv(4096)
        assert chunk, f"closed after {head!r}"
        head += chunk
    lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    fields = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), fields.get("retry-after")


def test_past_max_concurrency_runs_are_answered_503_at_once(tmp_path: Path) -> None:
    with (
        ReplayServer(SLOW_RUN) as slow,
        proxy(tmp_path, slow.url, "--max-concurrency", "4") as running,
    ):

        async def twelve() -> list[tuple[int, float, bytes, dict[str, str]]]:
            answers: list[tuple[int, float, bytes, dict[str, str]]] = []
            async with httpx.AsyncClient(timeout=20) as client, anyio.create_task_group() as group:

                async def one() -> None:
                    started = time.monotonic()
                    async with client.stream("POST", running.url, json=INPUT) as response:
                        waited = time.monotonic() - started
                        body = await response.aread()
                    answers.append((response.status_code, waited, body, dict(response.headers)))

                for _ in range(12):
                    group.start_soon(one)
            return answers

        answers = anyio.run(twelve)
        metrics = httpx.get(running.url + "metrics", timeout=10).text
        logged = running.logged()
    shed = [answer for answer in answers if answer[0] == 503]
    relayed = [answer for answer in answers if answer[0] == 200]
    assert len(relayed) == 4 and len(shed) == 8
    assert all(frames(body) == RUN for _, _, body, _ in relayed)
    assert all(waited < 1.0 and headers["retry-after"] == "1" for _, waited, _, headers in shed)
    assert "concurrency limit" in orjson.loads(shed[0][2])["error"]
    assert 'agui_gateway_shed_total{cause="concurrency limit"} 8.0' in metrics
    assert 'agui_gateway_runs_total{outcome="completed"} 4.0' in metrics
    assert logged.count("gateway: concurrency limit") == 1


# -- slowloris ------------------------------------------------------------------------------


def drip(
    address: tuple[str, int], connections: int, opening: bytes, for_seconds: float
) -> list[float | None]:
    """``connections`` sockets each sending ``opening`` then one byte every 0.3 s; when each
    was answered or closed by the server, in seconds from its own connection (``None``: still
    open at the end). Each is timed from its own connect: on a loaded machine opening a hundred
    can take longer than the header timeout, which runs from each accept."""
    socks: list[socket.socket] = []
    opened: list[float] = []
    for _ in range(connections):
        sock = socket.create_connection(address, timeout=5)
        opened.append(time.monotonic())
        sock.sendall(opening)
        sock.setblocking(False)
        socks.append(sock)
    started = time.monotonic()
    closed: list[float | None] = [None] * connections
    try:
        next_drip = started
        while time.monotonic() - started < for_seconds and None in closed:
            if time.monotonic() >= next_drip:
                next_drip += 0.3
                for index, sock in enumerate(socks):
                    if closed[index] is None:
                        try:
                            sock.send(b"x")
                        except OSError:
                            closed[index] = time.monotonic() - opened[index]
            readable, _, _ = select.select(
                [sock for index, sock in enumerate(socks) if closed[index] is None], [], [], 0.05
            )
            for sock in readable:
                index = socks.index(sock)
                try:
                    answer = sock.recv(1024)
                except OSError:
                    answer = b""
                assert answer == b"" or answer.startswith(b"HTTP/1.1 408"), answer
                closed[index] = time.monotonic() - opened[index]
    finally:
        for sock in socks:
            sock.close()
    return closed


def test_slowloris_on_the_headers_is_cut_at_the_header_timeout(
    tmp_path: Path, agent: ReplayServer
) -> None:
    with proxy(tmp_path, agent.url, "--header-timeout", "1") as running:
        closed = drip(running.address, 100, b"POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ", 6)
        answer = httpx.post(running.url, json=INPUT, timeout=5)
        logged = running.logged()
    assert None not in closed and max(t for t in closed if t is not None) < 3.0, closed
    assert min(t for t in closed if t is not None) > 0.8  # the timeout, not at once
    assert answer.status_code == 200 and frames(answer.content) == RUN
    assert logged.count("gateway: header timeout") == 1


def test_the_next_request_on_a_kept_alive_connection_has_the_header_timeout_too(
    tmp_path: Path, agent: ReplayServer
) -> None:
    with (
        proxy(tmp_path, agent.url, "--header-timeout", "1", "--idle-timeout", "30") as running,
        socket.create_connection(running.address, timeout=5) as sock,
    ):
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        first = b""
        while not first.endswith(b'{"live":true}'):
            first += sock.recv(4096)
        assert first.startswith(b"HTTP/1.1 200")
        time.sleep(1.5)  # idle, kept alive: longer than the header timeout, not an error
        started = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        answer = b""
        while time.monotonic() - started < 4:
            sock.sendall(b"X")  # a header that never ends
            readable, _, _ = select.select([sock], [], [], 0.3)
            if readable:
                answer = sock.recv(4096)
                break
        cut = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408") and 0.8 < cut < 2.5, (answer, cut)


def test_slowloris_on_the_body_is_answered_408_at_the_body_timeout(
    tmp_path: Path, agent: ReplayServer
) -> None:
    opening = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"
    with proxy(tmp_path, agent.url, "--body-timeout", "1") as running:
        closed = drip(running.address, 50, opening, 6)
        logged = running.logged()
    assert None not in closed and max(t for t in closed if t is not None) < 3.0, closed
    assert min(t for t in closed if t is not None) > 0.8
    assert agent.replay.requests == []  # nothing reached the upstream
    assert logged.count("gateway: body timeout") == 1


# -- operators -----------------------------------------------------------------------------


def test_sigterm_ends_a_run_in_flight_with_a_run_error_after_the_grace(tmp_path: Path) -> None:
    with (
        ReplayServer(Replay(RUN, pause=1.0)) as slow,
        proxy(tmp_path, slow.url, "--grace", "1") as running,
        httpx.Client(timeout=10) as client,
        client.stream("POST", running.url, json=INPUT) as response,
    ):
        chunks = response.iter_bytes()
        first = next(chunks)
        running.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        rest = b"".join(chunks)
        ended = time.monotonic() - signalled
        assert running.process.wait(timeout=10) == 0
        exited = time.monotonic() - signalled
        logged = running.logged()
    relayed = frames(first + rest)
    assert relayed[0] == RUN[0] and len(relayed) < len(RUN) + 1
    error = relayed[-1]
    assert error["type"] == "RUN_ERROR" and error["code"] == "relay.shutdown"
    assert "shutting down" in error["message"] and "1 s grace" in error["message"]
    # The run is ended half-way through a 1 s grace (ENDING, at most half of it), its
    # RUN_ERROR delivered within the grace.
    assert 0.4 < ended < 1.0 and exited < 3.0, (ended, exited)
    assert "gateway: shutdown: ended 1 runs" in logged


def test_a_run_that_ends_within_the_grace_is_relayed_whole(tmp_path: Path) -> None:
    with (
        ReplayServer(Replay(RUN, pause=0.2)) as slow,
        proxy(tmp_path, slow.url, "--grace", "5") as running,
        httpx.Client(timeout=10) as client,
        client.stream("POST", running.url, json=INPUT) as response,
    ):
        chunks = response.iter_bytes()
        first = next(chunks)
        running.process.send_signal(signal.SIGTERM)
        rest = b"".join(chunks)
        assert running.process.wait(timeout=10) == 0
    assert frames(first + rest) == RUN


def test_ctrl_c_drains_as_sigterm_does_and_a_second_one_stops_at_once(tmp_path: Path) -> None:
    """The documented statuses (`proxy --help`): a stop by SIGINT is a normal end (0) after
    the drain; a second SIGINT ends the runs at once with their RUN_ERROR (130); no
    traceback either way."""
    for presses, status in ((1, 0), (2, 130)):
        with (
            ReplayServer(Replay(RUN, pause=1.0)) as slow,
            proxy(tmp_path, slow.url, "--grace", "20") as running,
            httpx.Client(timeout=30) as client,
            client.stream("POST", running.url, json=INPUT) as response,
        ):
            chunks = response.iter_bytes()
            next(chunks)
            for _ in range(presses):
                running.process.send_signal(signal.SIGINT)
                time.sleep(0.3)
            pressed = time.monotonic()
            rest = b"".join(chunks)
            ended = time.monotonic() - pressed
            assert running.process.wait(timeout=30) == status
            logged = running.logged()
        if presses == 1:
            assert frames(rest)[-1] == RUN[-1]  # the run finished within the grace
        else:
            assert frames(rest)[-1]["code"] == "relay.shutdown" and ended < 2.0, ended
        assert "Traceback" not in logged, (presses, logged)


def test_a_slow_readers_run_ends_with_its_run_error_within_the_grace(tmp_path: Path) -> None:
    """A client reading 32 KB/s while a fast run fills every buffer on the way: at SIGTERM
    its stream still ends with the relay.shutdown RUN_ERROR and the end of the body,
    within the grace period, and no cancelled task reaches the log."""
    # Runs end min(5, grace / 2) s before the grace ends, leaving the rest to drain: 8 s
    # leaves 4, room for a loaded machine's late timers (with 4 s, 2 were seen to be short).
    grace = 8
    delta = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "x" * 2000}
    fast = Replay([*RUN[:2], *[delta] * 20_000, *RUN[2:]], pause=0.002)
    with (
        ReplayServer(fast) as upstream,
        proxy(tmp_path, upstream.url, "--grace", str(grace)) as running,
        socket.create_connection(running.address) as client,
    ):
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
        body = orjson.dumps(INPUT)
        client.sendall(
            b"POST / HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(body), body)
        )
        received = bytearray(client.recv(4096))
        reading_until = time.monotonic() + 3  # the run fills the buffers meanwhile
        while time.monotonic() < reading_until:
            received += client.recv(2048)
            time.sleep(2048 / 32_000)
        running.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        while not received.endswith(b"\r\n0\r\n\r\n"):
            chunk = client.recv(2048)
            assert chunk, bytes(received[-300:])
            received += chunk
            time.sleep(2048 / 32_000)
        ended = time.monotonic() - signalled
        assert running.process.wait(timeout=15) == 0
        logged = running.logged()
    last = bytes(received[-400:]).split(b"data: ")[-1].split(b"\n")[0]
    assert orjson.loads(last)["code"] == "relay.shutdown"
    assert ended < grace, ended
    assert "Traceback" not in logged and "Cancel" not in logged, logged


def test_a_request_with_both_framings_is_answered_400_and_the_connection_closed(
    tmp_path: Path, agent: ReplayServer
) -> None:
    """RFC 9112, 6.3: Transfer-Encoding with Content-Length may be request smuggling. The
    request after the chunked body (inside what Content-Length counts) is never served."""
    body = orjson.dumps(INPUT)
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    smuggled = b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n"
    request = (
        b"POST / HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n"
        b"transfer-encoding: chunked\r\ncontent-length: %d\r\n\r\n%s%s"
        % (len(chunked) + len(smuggled), chunked, smuggled)
    )
    with (
        proxy(tmp_path, agent.url) as running,
        socket.create_connection(running.address, timeout=10) as client,
    ):
        client.sendall(request)
        answered = bytearray()
        while chunk := client.recv(65536):  # until the gateway closes the connection
            answered += chunk
        logged = running.logged()
    assert answered.startswith(b"HTTP/1.1 400 "), bytes(answered[:200])
    assert answered.count(b"HTTP/1.1 ") == 1, bytes(answered)
    assert b"connection: close" in answered.lower()
    assert "gateway: smuggling:" in logged


def in_process(upstream: str, **settings: Any) -> tuple[Gateway, GatewayMetrics]:
    metrics = GatewayMetrics()
    relay = Relay(Upstream(upstream))
    log = SummarisedLog(open(os.devnull, "w"))  # noqa: SIM115  (closed with the process)
    gateway = Gateway(
        relay,
        settings=GatewaySettings(**settings),
        log=log,
        metrics=metrics,
        descriptor_limit=4096,
    )
    return gateway, metrics


def test_liveness_and_readiness_follow_the_upstream(agent: ReplayServer) -> None:
    gateway, _ = in_process(agent.url)
    with BackgroundServer(gateway, lifespan=True) as served:
        live = httpx.get(served.url + "healthz", timeout=5)
        ready = httpx.get(served.url + "readyz", timeout=5)
    assert live.status_code == 200 and ready.status_code == 200
    unreachable, _ = in_process("http://127.0.0.1:9/")
    with BackgroundServer(unreachable, lifespan=True) as served:
        live = httpx.get(served.url + "healthz", timeout=5)
        ready = httpx.get(served.url + "readyz", timeout=5)
    assert live.status_code == 200
    assert ready.status_code == 503 and "upstream" in ready.json()["why"]
    assert ready.headers["retry-after"] == "1"


def test_readiness_fails_while_the_budget_is_spent(agent: ReplayServer) -> None:
    gateway, _ = in_process(agent.url, max_concurrency=1)
    gateway.budget.runs = 1  # one run in flight, as the relay counts it
    with BackgroundServer(gateway, lifespan=True) as served:
        ready = httpx.get(served.url + "readyz", timeout=5)
        refused = httpx.post(served.url, json=INPUT, timeout=5)
    assert ready.status_code == 503 and "concurrency limit" in ready.json()["why"]
    assert refused.status_code == 503 and agent.replay.requests == []


def test_metrics_count_runs_rejections_findings_and_upstream_errors(agent: ReplayServer) -> None:
    gateway, _ = in_process(agent.url)
    orphan = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "nobody", "delta": "x"}
    with BackgroundServer(gateway, lifespan=True) as served:
        assert httpx.post(served.url, json=INPUT, timeout=10).status_code == 200
        agent.replay.events = [{**RUN[0], "rogue": 1}, *RUN[1:3], orphan, *RUN[3:]]
        assert httpx.post(served.url, json=INPUT, timeout=10).status_code == 200
        agent.replay.status = 500
        assert httpx.post(served.url, json=INPUT, timeout=10).status_code == 502
        bad = httpx.post(served.url, content=b'{"threadId": 1, "runId": "r", "messages": []}')
        assert bad.status_code == 422
        scraped = httpx.get(served.url + "metrics", timeout=10)
    text = scraped.text
    assert scraped.headers["content-type"].startswith("text/plain")
    for line in (
        'agui_gateway_runs_total{outcome="completed"} 1.0',
        'agui_gateway_runs_total{outcome="rejected"} 1.0',
        'agui_gateway_runs_total{outcome="upstream-error"} 1.0',
        'agui_gateway_runs_total{outcome="refused"} 1.0',
        'agui_gateway_upstream_errors_total{status="500"} 1.0',
        'agui_gateway_findings_total{code="enforce.stripped",severity="warning"} 1.0',
        "agui_gateway_open_streams 0.0",
    ):
        assert line in text, line
    assert re.search(r'agui_gateway_rejections_total\{code="verify\.[a-z-]+"\} 1\.0', text)


def test_the_same_counters_reach_the_opentelemetry_meter(agent: ReplayServer) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint

    reader = InMemoryMetricReader()
    metrics = GatewayMetrics(prometheus=False, opentelemetry=MeterProvider([reader]))
    gateway = Gateway(Relay(Upstream(agent.url)), metrics=metrics, descriptor_limit=4096)
    with BackgroundServer(gateway, lifespan=True) as served:
        assert httpx.post(served.url, json=INPUT, timeout=10).status_code == 200
        agent.replay.status = 503
        assert httpx.post(served.url, json=INPUT, timeout=10).status_code == 502
        no_metrics = httpx.get(served.url + "metrics", timeout=5)
    data = reader.get_metrics_data()
    assert data is not None
    points = {
        (metric.name, tuple(sorted(dict(point.attributes or {}).items()))): point.value
        for resource_metrics in data.resource_metrics
        for scope in resource_metrics.scope_metrics
        for metric in scope.metrics
        for point in metric.data.data_points
        if isinstance(point, NumberDataPoint)
    }
    assert points[("agui.gateway.runs", (("agui.outcome", "completed"),))] == 1
    assert points[("agui.gateway.runs", (("agui.outcome", "upstream-error"),))] == 1
    assert points[("agui.gateway.upstream_errors", (("agui.status", "503"),))] == 1
    assert points[("agui.gateway.open_streams", ())] == 0
    assert no_metrics.status_code == 404 and "metrics" in no_metrics.json()["error"]


def test_every_run_without_a_verdict_logs_its_cause_and_metrics_time_the_runs(
    tmp_path: Path, agent: ReplayServer
) -> None:
    with proxy(tmp_path, agent.url, "--log-format", "json") as running:
        assert httpx.post(running.url, json=INPUT, timeout=10).status_code == 200
        refused = httpx.post(running.url, json={"threadId": "t", "messages": []}, timeout=10)
        agent.replay.status = 503
        failed = httpx.post(running.url, json={**INPUT, "runId": "busy"}, timeout=10)
        agent.replay.status, agent.replay.pause = 200, 5.0
        with httpx.stream("POST", running.url, json={**INPUT, "runId": "gone"}, timeout=10) as left:
            assert left.status_code == 200
            next(left.iter_lines())  # the first event came; the client leaves mid-run
        deadline = time.monotonic() + 10
        while '"gone"' not in running.logged() and time.monotonic() < deadline:
            time.sleep(0.05)
        scraped = httpx.get(running.url + "metrics", timeout=10).text
        ends = [orjson.loads(line) for line in running.logged().splitlines() if '"cause"' in line]
    assert refused.status_code == 422 and failed.status_code == 502
    causes = {end["runId"]: (end["verdict"] is None, end["cause"]) for end in ends}
    assert causes == {
        INPUT["runId"]: (False, None),
        None: (True, "refused 422 input.malformed"),
        "busy": (True, "upstream error HttpStatusError (status 503)"),
        "gone": (True, "client gone"),
    }
    for line in (
        'agui_gateway_run_duration_seconds_count{outcome="completed"} 1.0',
        'agui_gateway_run_duration_seconds_count{outcome="refused"} 1.0',
        'agui_gateway_run_duration_seconds_count{outcome="upstream-error"} 1.0',
        'agui_gateway_run_duration_seconds_count{outcome="ended"} 1.0',
        'agui_gateway_run_duration_seconds_bucket{le="1800.0",outcome="completed"} 1.0',
        "agui_gateway_first_event_seconds_count 2.0",
    ):
        assert line in scraped, line
    assert "gone" not in scraped and "busy" not in scraped  # no run id is a label


def test_the_text_log_names_an_unreachable_upstreams_error_class(tmp_path: Path) -> None:
    with proxy(tmp_path, "http://127.0.0.1:9/") as running:
        assert httpx.post(running.url, json=INPUT, timeout=10).status_code == 502
        time.sleep(0.3)
        logged = running.logged()
    assert "no verdict: upstream error RequestFailed (ConnectError)" in logged, logged


# -- nothing secret leaves, nothing forged -------------------------------------------------


def test_the_upstreams_credentials_reach_no_client_and_no_log(tmp_path: Path) -> None:
    secret = "http://alice:hunter2@127.0.0.1:9/agent?api_key=s3cret"
    with BackgroundServer(Relay(secret), lifespan=True) as relay:
        failed = httpx.post(relay.url, json=INPUT, timeout=10)
    assert failed.status_code == 502
    assert failed.json()["upstream"] == "http://***@127.0.0.1:9/agent?api_key=***"
    with proxy(tmp_path, secret) as running:
        through = httpx.post(running.url, json=INPUT, timeout=10)
        logged = running.logged()
    for said in (failed.text, through.text, logged):
        assert "hunter2" not in said and "s3cret" not in said and "alice" not in said
    assert through.status_code == 502 and "http://***@127.0.0.1:9/agent" in logged


def test_a_client_cannot_forge_a_log_line(tmp_path: Path, agent: ReplayServer) -> None:
    forged = 'r\nrun "x" (thread "t"): completed'
    with proxy(tmp_path, agent.url) as running:
        refused = httpx.post(
            running.url, json={"threadId": 1, "runId": forged, "messages": []}, timeout=10
        )
        missing = httpx.post(running.url, json={"threadId": "t", "messages": []}, timeout=10)
        time.sleep(0.3)
        lines = running.logged().splitlines()[1:]
    assert refused.status_code == 422 and missing.status_code == 422
    assert not any(line.startswith('run "x"') for line in lines)
    assert lines[0] == (
        'run "r\\x0arun \\"x\\" (thread \\"t\\"): completed" (thread "1"): no verdict: '
        "refused 422 input.malformed"
    )
    assert lines[1].startswith('run (no runId) (thread "t")') and len(lines) == 2


# -- a producer trickling its frames a byte at a time ---------------------------------------


def test_a_trickling_producer_is_read_at_most_once_a_pause_over_aiohttp() -> None:
    from agui_pipeline import AiohttpTransport, HttpAgent, Pipeline
    from agui_pipeline.http.aiohttp_transport import COALESCE_PAUSE
    from agui_pipeline.stages.parse import Parse

    reads: list[int] = []

    class CountedParse(Parse):
        def feed(self, chunk: bytes) -> Any:
            reads.append(len(chunk))
            return super().feed(chunk)

    # Every byte its own write, a fraction of a millisecond apart.
    with ReplayServer(Replay(RUN, split=1, pause=0.0002)) as trickle:

        async def main() -> Any:
            pipeline = Pipeline().replace("parse", CountedParse)  # type: ignore[arg-type]
            async with HttpAgent(
                trickle.url, pipeline=pipeline, transport=AiohttpTransport()
            ) as agent:
                started = time.monotonic()
                result = await agent.run(INPUT)
                return result, time.monotonic() - started

        result, wall = anyio.run(main)
    assert result.events == RUN
    sent = sum(reads)
    # One read per pause at most (and a few whole ones): not one per byte.
    assert len(reads) <= wall / COALESCE_PAUSE * 1.2 + 10, (len(reads), sent, wall)
    assert len(reads) < sent / 2, (len(reads), sent)


def test_the_servers_own_warnings_are_summarised(tmp_path: Path, agent: ReplayServer) -> None:
    with proxy(tmp_path, agent.url) as running:
        for _ in range(20):
            with socket.create_connection(running.address, timeout=5) as sock:
                sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
                assert sock.recv(100).startswith(b"HTTP/1.1 400")
        time.sleep(0.3)
        lines = running.logged().splitlines()
    said = [line for line in lines if "Invalid HTTP request" in line]
    assert said == ["gateway: server: Invalid HTTP request received."], lines


# -- the descriptor budget at its edges ------------------------------------------------


def _budget(headroom: int, *, max_concurrency: int | None = None) -> Any:
    """A budget whose pessimistic count leaves exactly ``headroom`` descriptors."""
    from agui_pipeline.http.gateway import POOL_KEEPALIVE, DescriptorBudget

    at_start, spare = 10, 5
    return DescriptorBudget(
        at_start + POOL_KEEPALIVE + spare + headroom, at_start, max_concurrency, spare
    )


@pytest.mark.parametrize(("more", "fits"), [(2, True), (3, True), (4, False)])
def test_the_budget_fits_up_to_its_headroom_and_no_further(more: int, fits: bool) -> None:
    budget = _budget(3)
    assert budget.fits(more) is fits
    budget.connections, budget.runs = 1, 1  # each counted connection and run takes one
    assert budget.fits(more - 2) is fits


@pytest.mark.parametrize(("headroom", "refusal"), [(0, "descriptor budget"), (1, None), (2, None)])
def test_a_run_is_admitted_while_its_descriptor_fits(headroom: int, refusal: str | None) -> None:
    from agui_pipeline.http.gateway import DESCRIPTORS_PER_RUN

    assert DESCRIPTORS_PER_RUN == 1
    assert _budget(headroom).run_refusal() == refusal


@pytest.mark.parametrize(
    ("runs", "refusal"), [(1, None), (2, "concurrency limit"), (3, "concurrency limit")]
)
def test_the_concurrency_limit_admits_exactly_max_concurrency_runs(
    runs: int, refusal: str | None
) -> None:
    budget = _budget(100, max_concurrency=2)
    budget.runs = runs
    assert budget.run_refusal() == refusal


@pytest.mark.parametrize(("open_now", "left"), [(49, True), (50, True), (51, False)])
def test_the_last_resort_keeps_last_margin_free(
    open_now: int, left: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the pessimistic count a connection is kept while the descriptors open, with
    those the admitted runs will open, leave ``LAST_MARGIN`` free."""
    from agui_pipeline.http import gateway

    budget = gateway.DescriptorBudget(50 + 2 + gateway.LAST_MARGIN, 10, None, 5)
    budget.runs = 2
    monkeypatch.setattr(os, "listdir", lambda path: ["fd"] * open_now)
    assert budget.room_left() is left


def test_uvicorn_and_h11_are_within_the_declared_bounds_and_the_protocol_is_as_used() -> None:
    """The gateway subclasses uvicorn's HTTP/1.1 protocol (no public hook counts or times a
    connection): the serve extra bounds uvicorn to the releases tested and declares h11.
    Outside the bounds, or with the protocol changed, this fails before the gateway does."""
    import tomllib
    from importlib.metadata import version

    import h11
    from packaging.requirements import Requirement
    from packaging.version import Version
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from tests.conftest import ROOT

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {
        (requirement := Requirement(text)).name: requirement.specifier
        for text in extras["optional-dependencies"]["serve"]
    }
    assert list(declared["uvicorn"].filter([Version("0.30"), Version("1.0")])) == [Version("0.30")]
    for name in ("uvicorn", "h11"):
        assert version(name) in declared[name], (name, version(name), declared[name])
    for used in ("connection_made", "connection_lost", "data_received", "resume_writing"):
        assert callable(getattr(H11Protocol, used, None)), used
    assert isinstance(h11.IDLE, type)  # the state the gateway reads
