"""The proxy as a service: load shed honestly, hostile clients timed out, health, metrics,
a graceful shutdown (``agui-pipeline proxy``; the ``serve`` extra).

:class:`Gateway` wraps a :class:`~agui_pipeline.http.relay.Relay` and :func:`serve_gateway`
serves it with uvicorn. What it adds:

- **A descriptor budget.** At start the soft ``RLIMIT_NOFILE`` is raised to the hard one.
  Every client connection holds a descriptor and every relayed run one more (its upstream
  connection); the descriptors open at start, the upstream pool's idle connections and
  ``headroom`` are set aside. A connection that does not fit first evicts the oldest
  connection still waiting for its request headers; a run that does not fit, or one past
  ``max_concurrency``, is answered ``503`` at once with ``Retry-After``. So the process
  never runs out of descriptors, and never blames the upstream for what was local.
- **Timeouts.** Request headers must arrive within ``header_timeout`` of the connection
  (or of their first byte, between keep-alive requests), the body within
  ``body_timeout`` (``408`` past either), and an idle keep-alive connection is closed
  after ``idle_timeout``.
- **A summarised error log.** Each cause (``descriptor budget``, ``concurrency limit``,
  ``header timeout``, …) is written once when it first happens, then counted: one line per
  cause per ``log_interval`` says how many more there were.
- **Endpoints.** ``GET /healthz`` (alive), ``GET /readyz`` (``503`` while draining, while
  the budget is spent or while the upstream does not accept a connection) and
  ``GET /metrics`` (Prometheus text, :mod:`agui_pipeline.http.gateway_metrics`). Every
  ``POST`` is a run for the relay.
- **A graceful shutdown.** On SIGTERM or SIGINT the listener closes, new requests are
  answered ``503``, and the runs in flight have the ``grace`` period to finish. Those still
  running ``ENDING`` seconds before its end (at most half of it) are ended with a
  ``RUN_ERROR`` (``relay.shutdown``) saying so, queued at once however slowly their
  client reads, and the rest of the period lets it reach them. A connection still
  holding bytes for its client when the period is over is reset, not cut at a random
  byte. A second SIGINT ends the runs at once, with the same ``RUN_ERROR``.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import os
import resource
import signal
import socket
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any, TextIO
from urllib.parse import urlsplit

import anyio
import h11
import orjson
import uvicorn
from agui_pipeline._engine.result import Verdict
from agui_pipeline.delivery.escaping import inert
from agui_pipeline.errors import Diagnostic
from agui_pipeline.http.gateway_metrics import GatewayMetrics
from agui_pipeline.http.relay import RETRY_AFTER, Relay, _json
from agui_pipeline.http.serve import run_until_stopped
from starlette.types import Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

POOL_KEEPALIVE = 100
"""Idle upstream connections the relay's pool keeps (``Upstream``'s httpx limits)."""
DESCRIPTORS_PER_RUN = 1
"""What a relayed run holds besides its client's connection: the upstream connection."""
ACCEPT_BURST = 8
"""Connections the event loop accepts per wake-up (asyncio's accept loop takes up to its
``backlog``); the gateway counts them a few turns of the loop later."""
LAST_MARGIN = 4 * ACCEPT_BURST + 8
"""Descriptors left free when a connection past the budget is kept to be answered ``503``:
the accept bursts that may come before the next connection is counted (asyncio makes a
transport one turn after accepting it, and its protocol learns of it one turn later), and
a few for the process."""
EVICT_AFTER = 1.0
"""Seconds a connection must have sent no whole request headers before it may be closed to
make room: an honest client sends them at once."""
LISTEN_BACKLOG = 2048
"""Connections the kernel queues before they are accepted (``serve.bind``'s)."""
WRITE_BUFFER = 16 * 1024
"""Bytes of a response held for a client that reads slower than its run goes, past those
on their way to it: in the process, and again in the kernel as bytes not yet sent
(``TCP_NOTSENT_LOWAT``, where the platform has it; the kernel would otherwise queue
megabytes). Past them the run waits for its client. A fast reader loses nothing by it,
and at shutdown little stands between a slow reader and its run's ending."""
ENDING = 5.0
"""Seconds at the end of the grace period kept for the endings of the runs ended then
(at most half the period): time for each ``RUN_ERROR`` to reach a slow reader."""


@dataclass(frozen=True, slots=True)
class GatewaySettings:
    """How the gateway sheds load and times clients out: the proxy's flags.

    docs/guides/gateway.md describes each.
    """

    max_concurrency: int | None = None
    """Runs relayed at once; past it, ``503``. ``None``: the descriptor budget alone."""
    header_timeout: float = 10.0
    """Seconds for a request's headers to arrive whole; past it, ``408`` and closed."""
    body_timeout: float = 30.0
    """Seconds for a request's body to arrive whole; past it, ``408``."""
    idle_timeout: float = 5.0
    """Seconds a keep-alive connection may sit idle between requests before it is closed."""
    grace: float = 30.0
    """Seconds runs in flight get to finish at shutdown before they are ended."""
    headroom: int = 64
    """Descriptors kept free besides those open at start and the upstream pool's."""
    log_interval: float = 10.0
    """Seconds over which repeated errors of one cause are summarised in one line."""


def raise_descriptor_limit() -> int:
    """Raise the soft limit on open files to the hard one; the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass  # kept as it was: the budget is computed from what is in force
    return soft


def _open_descriptors() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:  # no /proc: a generous guess
        return 32


class DescriptorBudget:
    """The descriptors connections and runs may use: the limit less ``spare``.

    The count is cheap and pessimistic: the descriptors open at start, the upstream pool
    full, every connection and every run (its upstream connection counted from the moment
    it is admitted, before it connects). A run is admitted on that count alone, so no
    upstream connection ever fails for want of a descriptor. A connection past it, which
    already holds its descriptor, is kept while the descriptors actually open
    (``/proc/self/fd``) leave ``LAST_MARGIN`` free: its request is then answered ``503``.
    """

    def __init__(self, limit: int, at_start: int, max_concurrency: int | None, spare: int) -> None:
        self.limit = limit
        self.at_start = at_start
        self.max_concurrency = max_concurrency
        self.spare = spare
        self.connections = 0
        self.runs = 0

    def fits(self, more: int = 0) -> bool:
        """Whether ``more`` descriptors fit the pessimistic count, ``spare`` kept free."""
        counted = self.at_start + POOL_KEEPALIVE + self.connections + self.runs
        return counted + more + self.spare <= self.limit

    def room_left(self) -> bool:
        """Whether the descriptors actually open, with those the admitted runs are still to
        open, leave ``LAST_MARGIN`` free: the last resort's test. Past the pessimistic
        count no run is admitted, so nothing but ``accept`` opens a descriptor there."""
        try:
            open_now = len(os.listdir("/proc/self/fd"))
        except OSError:  # no /proc: the pessimistic count
            return self.fits()
        return open_now + self.runs + LAST_MARGIN <= self.limit

    def run_refusal(self) -> str | None:
        """Why one more run cannot start now (``None``: it can)."""
        if self.max_concurrency is not None and self.runs >= self.max_concurrency:
            return "concurrency limit"
        if not self.fits(DESCRIPTORS_PER_RUN):
            return "descriptor budget"
        return None

    def describe(self) -> str:
        return (
            f"limit {self.limit} descriptors: {self.connections} connections, "
            f"{self.runs} runs, {self.spare} kept spare"
        )


class SummarisedLog:
    """Errors of one cause in one line per interval: the first said at once, the rest
    counted and summarised when the interval is over (:meth:`flush`)."""

    def __init__(self, out: TextIO, *, json: bool = False, interval: float = 10.0) -> None:
        self.out = out
        self.json = json
        self.interval = interval
        self._counted: dict[str, int] = {}
        self._since = time.monotonic()

    def note(self, cause: str, detail: str) -> bool:
        """Count one error of ``cause``; True when it is the first of the interval (and so
        was written)."""
        if time.monotonic() - self._since >= self.interval:
            self.flush()
        counted = self._counted.get(cause)
        if counted is None:
            self._counted[cause] = 0
            self._write(cause, inert(detail), None)
            return True
        self._counted[cause] = counted + 1
        return False

    def flush(self) -> None:
        """Write how many more of each cause came since its first line, and start again."""
        for cause, more in self._counted.items():
            if more:
                self._write(cause, None, more)
        self._counted.clear()
        self._since = time.monotonic()

    def _write(self, cause: str, detail: str | None, more: int | None) -> None:
        if self.json:
            record = {"gateway": cause, "detail": detail, "more": more, "seconds": self.interval}
            line = orjson.dumps({key: value for key, value in record.items() if value is not None})
            self.out.write(line.decode() + "\n")
        elif more is None:
            self.out.write(f"gateway: {cause}: {detail}\n" if detail else f"gateway: {cause}\n")
        else:
            self.out.write(f"gateway: {cause}: {more} more in the last {self.interval:g} s\n")
        self.out.flush()


_ANSWER: contextvars.ContextVar[_Answer] = contextvars.ContextVar("agui_gateway_answer")


class _Answer:
    """What became of one request, gathered for the counters as it is answered."""

    __slots__ = ("body", "first_event", "started", "status", "verdict")

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.first_event: float | None = None
        """When the first event's bytes went to the client (``monotonic``)."""
        self.status: int | None = None
        self.verdict: Verdict | None = None
        self.body = b""


class Gateway:
    """An ASGI app: ``relay`` behind a descriptor budget, health and metrics endpoints and a
    graceful shutdown (see the module docstring). ``upstream`` is the URL readiness probes;
    ``log`` gets the summarised errors; ``metrics`` the counters (``None``: no ``/metrics``).

    The relay's ``on_diagnostic`` and ``on_end`` are wrapped so the counters see each run;
    what they did before they still do, and its ``body_timeout`` becomes the settings'.
    ``descriptor_limit`` is the limit budgeted against; by default the process's soft
    ``RLIMIT_NOFILE`` is raised to the hard one, and that is it.
    """

    def __init__(
        self,
        relay: Relay,
        *,
        settings: GatewaySettings | None = None,
        log: SummarisedLog | None = None,
        metrics: GatewayMetrics | None = None,
        descriptor_limit: int | None = None,
    ) -> None:
        self.relay = relay
        self.settings = settings = settings or GatewaySettings()
        self.log = log or SummarisedLog(sys.stderr, interval=settings.log_interval)
        self.metrics = metrics
        limit = raise_descriptor_limit() if descriptor_limit is None else descriptor_limit
        self.budget = DescriptorBudget(
            limit,
            _open_descriptors(),
            settings.max_concurrency,
            spare=ACCEPT_BURST + settings.headroom,
        )
        self.draining = False
        self._hurried = anyio.Event()
        """Set by a second SIGINT: the runs in flight are ended without waiting further."""
        self._connections: set[_GuardedH11Protocol] = set()
        self._waiting: OrderedDict[_GuardedH11Protocol, float] = OrderedDict()
        """Connections still waiting for request headers, since when, oldest first."""
        self._reachable: tuple[float, str | None] = (-1e9, None)
        relay.body_timeout = settings.body_timeout
        self._wrap_callbacks(relay)

    def _wrap_callbacks(self, relay: Relay) -> None:
        on_diagnostic, on_end = relay.on_diagnostic, relay.on_end

        def diagnostic(run_input: Mapping[str, Any], found: Diagnostic) -> None:
            if on_diagnostic is not None:
                on_diagnostic(run_input, found)
            if self.metrics is not None:
                self.metrics.finding(found.code, str(found.severity))

        def ended(run_input: Mapping[str, Any], verdict: Verdict | None, cause: str | None) -> None:
            if on_end is not None:
                on_end(run_input, verdict, cause)
            answer = _ANSWER.get(None)
            if answer is not None:
                answer.verdict = verdict

        relay.on_diagnostic, relay.on_end = diagnostic, ended

    # -- ASGI ------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            raise RuntimeError(f"the gateway serves HTTP, not {scope['type']}")
        if _framed_twice(scope):
            await self._refuse_smuggling(send)
            return
        if scope["method"] in ("GET", "HEAD"):
            await self._endpoint(scope["path"], send)
            return
        if scope["method"] != "POST":
            await self.relay(scope, receive, send)  # its own 405
            return
        refusal = "draining" if self.draining else self.budget.run_refusal()
        if refusal == "descriptor budget" and self._evict("to admit a run"):
            refusal = self.budget.run_refusal()
        if refusal is not None:
            await self._shed(send, refusal)
            return
        await self._relay(scope, receive, send)

    async def _refuse_smuggling(self, send: Send) -> None:
        """RFC 9112 section 6.3: a request with both ``Transfer-Encoding`` and
        ``Content-Length`` may be an attempt at request smuggling; it is answered 400 and
        the connection closed, so nothing read after it is taken as a request."""
        self.log.note("smuggling", "a request with Transfer-Encoding and Content-Length (400)")
        if self.metrics is not None:
            self.metrics.run("refused")
        content = orjson.dumps(
            {"error": "Transfer-Encoding and Content-Length together (RFC 9112, 6.3)"}
        )
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(content)).encode()),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": content, "more_body": False})

    async def _relay(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer = _Answer()
        token = _ANSWER.set(answer)
        budget, metrics = self.budget, self.metrics

        async def observed(message: Message) -> None:
            if message["type"] == "http.response.start":
                answer.status = message["status"]
                if answer.status == 200 and metrics is not None:
                    metrics.stream_opened()
            elif answer.status == 200 and answer.first_event is None and message.get("body"):
                answer.first_event = time.monotonic()
            elif answer.status == 502:
                answer.body += message.get("body", b"")
            await send(message)

        budget.runs += 1
        try:
            await self.relay(scope, receive, observed)
        finally:
            budget.runs -= 1
            _ANSWER.reset(token)
            if answer.status == 408:
                wait = f"{self.settings.body_timeout:g} s"
                self.log.note("body timeout", f"request body not whole within {wait} (408)")
            if metrics is not None:
                self._count(answer, metrics)

    def _count(self, answer: _Answer, metrics: GatewayMetrics) -> None:
        status = answer.status
        if status == 200:
            metrics.stream_closed()
        verdict = answer.verdict
        if answer.first_event is not None:
            metrics.first_event(answer.first_event - answer.started)
        if verdict is not None:
            outcome = str(verdict.outcome)
            if not verdict.completed and verdict.code is not None:
                metrics.rejection(verdict.code)
        elif status == 502:
            outcome = "upstream-error"
            upstream = orjson.loads(answer.body).get("upstreamStatus") if answer.body else None
            metrics.upstream_error(upstream if isinstance(upstream, int) else None)
        elif status == 408:
            metrics.shed("body timeout")
            return
        elif status is not None and 400 <= status < 500:
            outcome = "refused"
        else:
            outcome = "ended"  # the client went away, or the shutdown ended it
        metrics.run(outcome, time.monotonic() - answer.started)

    async def _shed(self, send: Send, cause: str) -> None:
        self.log.note(cause, f"answered 503 ({self.budget.describe()})")
        if self.metrics is not None:
            self.metrics.shed(cause)
        said = {
            "draining": "the gateway is shutting down",
            "concurrency limit": f"{self.budget.runs} runs at once, the concurrency limit",
            "descriptor budget": "no descriptor left for another run",
        }[cause]
        await _json(send, 503, {"error": f"{said}; retry later"}, retry_after=RETRY_AFTER)

    async def _endpoint(self, path: str, send: Send) -> None:
        if path == "/healthz":
            await _json(send, 200, {"live": True})
        elif path == "/readyz":
            why = await self.unready()
            if why is None:
                await _json(send, 200, {"ready": True})
            else:
                await _json(send, 503, {"ready": False, "why": why}, retry_after=RETRY_AFTER)
        elif path == "/metrics":
            exposition = None if self.metrics is None else self.metrics.exposition()
            if exposition is None:
                error = "no metrics: pip install 'agui-pipeline[metrics]'"
                await _json(send, 404, {"error": error})
                return
            body, content_type = exposition
            headers = [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
            ]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
        else:
            await _json(
                send, 405, {"error": "POST a RunAgentInput; GET /healthz, /readyz, /metrics"}
            )

    async def unready(self) -> str | None:
        """Why the gateway should get no traffic now (``None``: it is ready)."""
        if self.draining:
            return "shutting down"
        refusal = self.budget.run_refusal()
        if refusal is not None:
            return f"{refusal} spent ({self.budget.describe()})"
        return await self._upstream_unreachable()

    async def _upstream_unreachable(self) -> str | None:
        """Whether the upstream accepts a TCP connection, asked at most once a second."""
        checked_at, why = self._reachable
        if time.monotonic() - checked_at < 1.0:
            return why
        url = urlsplit(self.relay.upstream.url)
        port = url.port or (443 if url.scheme == "https" else 80)
        why = None
        try:
            with anyio.fail_after(2):
                connection = await anyio.connect_tcp(url.hostname or "", port)
            await connection.aclose()
        except (OSError, TimeoutError) as error:
            why = f"the upstream does not accept a connection ({type(error).__name__})"
        self._reachable = (time.monotonic(), why)
        return why

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as group:
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    asyncio.get_running_loop().set_exception_handler(self._loop_error)
                    group.start_soon(self._summarise)
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    group.cancel_scope.cancel()
                    self.log.flush()
                    await self.relay.upstream.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return

    async def _summarise(self) -> None:
        while True:
            await anyio.sleep(self.settings.log_interval)
            self.log.flush()

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """The event loop's errors, summarised: running out of descriptors at ``accept``
        once said, then counted, instead of a traceback each time."""
        error = context.get("exception")
        message = str(context.get("message", "event loop error"))
        if isinstance(error, OSError) and "accept" in message:
            cause = "out of descriptors at accept"
            self.log.note(cause, f"{error} ({self.budget.describe()})")
            return
        if self.log.note(f"event loop: {message}", repr(error)):
            loop.default_exception_handler(context)

    # -- shutdown --------------------------------------------------------------------------

    async def drain(self) -> None:
        """Refuse new runs; give those in flight the grace period to finish, and end those
        still running ``ENDING`` seconds before its end (or at :meth:`hurry`) with a
        ``RUN_ERROR`` saying why; at the end of the period, reset the connections still
        open, whose clients have not read all (runs until cancelled, or until all is said)."""
        self.draining = True
        grace = self.settings.grace
        ending = min(ENDING, grace / 2)
        with anyio.move_on_after(grace - ending):
            while self.relay.running and not self._hurried.is_set():
                await anyio.sleep(0.05)
        reason = (
            f"the gateway is shutting down: the run was ended within the {grace:g} s grace "
            "period; retry it"
        )
        ended = self.relay.end_runs(reason)
        if ended:
            after = f"{grace - ending:g} s into the {grace:g} s grace period"
            self.log.note("shutdown", f"ended {ended} runs still in flight {after}")
        # Each ending goes straight into its connection's buffer, behind what its client
        # has yet to read, however slowly it reads: no run waits on its client any more.
        for connection in list(self._connections):
            connection.let_the_ending_through()
        with anyio.move_on_after(ending):
            while self._connections:
                await anyio.sleep(0.05)
        if self._connections:
            self.log.note(
                "shutdown reset",
                f"reset {len(self._connections)} connections whose clients had not read "
                f"their run's end by the end of the {grace:g} s grace period",
            )
        for connection in list(self._connections):
            connection.transport.abort()

    def hurry(self) -> None:
        """End the runs in flight now, each with its ``RUN_ERROR`` (a second SIGINT)."""
        self._hurried.set()

    # -- connections (called by the protocol) ----------------------------------------------

    def connection_made(self, connection: _GuardedH11Protocol) -> None:
        """Count a new connection; past the budget, close connections silent for a second
        or more (oldest first) to make room; with none, keep this one while there is room
        (its request is answered ``503``), else close it (``503``)."""
        budget = self.budget
        budget.connections += 1
        self._connections.add(connection)
        self._waiting[connection] = time.monotonic()
        while not budget.fits() and self._evict("to admit a connection"):
            pass
        if not budget.fits() and not budget.room_left():
            # The last resort, the spare about to be eaten: no descriptor for this one.
            self._shed_connection("descriptor budget", "refused a connection (503)")
            connection.refuse(503, "Service Unavailable", retry_after=RETRY_AFTER)

    def _evict(self, why: str) -> bool:
        """Close the oldest connection still without its request headers, if it has waited
        ``EVICT_AFTER`` seconds or more (a client that sends nothing); False with none."""
        oldest = next(iter(self._waiting.items()), None)
        if oldest is None or time.monotonic() - oldest[1] < EVICT_AFTER:
            return False
        self._shed_connection(
            "descriptor budget", f"closed the oldest connection still without headers {why}"
        )
        oldest[0].refuse(408, "Request Timeout")
        return True

    def _shed_connection(self, cause: str, detail: str) -> None:
        self.log.note(cause, f"{detail} ({self.budget.describe()})")
        if self.metrics is not None:
            self.metrics.shed(cause)

    def connection_lost(self, connection: _GuardedH11Protocol) -> None:
        self.budget.connections -= 1
        self._connections.discard(connection)
        self._waiting.pop(connection, None)

    def headers_awaited(self, connection: _GuardedH11Protocol, waiting: bool) -> None:
        if waiting:
            self._waiting.setdefault(connection, time.monotonic())
        else:
            self._waiting.pop(connection, None)

    def header_timeout(self) -> None:
        wait = f"{self.settings.header_timeout:g} s"
        self.log.note("header timeout", f"request headers not whole within {wait}: closed (408)")
        if self.metrics is not None:
            self.metrics.shed("header timeout")


def _framed_twice(scope: Scope) -> bool:
    """Whether the request says both how it is chunked and how long it is."""
    names = {name.lower() for name, _ in scope["headers"]}
    return b"transfer-encoding" in names and b"content-length" in names


class _GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, counted against the gateway's budget, with a deadline for
    each request's headers."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        gateway = config.app
        assert isinstance(gateway, Gateway)
        self.gateway = gateway
        self._deadline: asyncio.TimerHandle | None = None
        self._counted = False
        self._releasing = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        transport.set_write_buffer_limits(high=WRITE_BUFFER)
        connection = transport.get_extra_info("socket")
        if connection is not None and hasattr(socket, "TCP_NOTSENT_LOWAT"):
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT, WRITE_BUFFER)
        self._counted = True
        self._arm()
        self.gateway.connection_made(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._counted:
            self._counted = False
            self.gateway.connection_lost(self)
        self._releasing = False
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._releasing:
            return  # refused and closing: nothing more is read
        super().data_received(data)
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._arm()  # a request begun: its headers are not whole yet
        else:
            self._disarm()

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(
                self.gateway.settings.header_timeout, self._headers_late
            )
            self.gateway.headers_awaited(self, True)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self.gateway.headers_awaited(self, False)

    def _headers_late(self) -> None:
        self._deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.gateway.header_timeout()
            self.refuse(408, "Request Timeout")

    def let_the_ending_through(self) -> None:
        """Take a run's last frames without waiting for the client to read what is
        queued before them (they are small: the ``RUN_ERROR`` and the end of the body)."""
        if not self.transport.is_closing():
            self.transport.set_write_buffer_limits(high=64 * WRITE_BUFFER)
            self.resume_writing()

    def refuse(self, status: int, reason: str, *, retry_after: int | None = None) -> None:
        """Answer ``status`` before any request was read, and close at once; the connection
        stops counting against the budget now (its descriptor is freed as the loop turns)."""
        self._disarm()
        if self._counted:
            self._counted = False
            self._releasing = True
            self.gateway.connection_lost(self)
        if not self.transport.is_closing():
            later = "" if retry_after is None else f"retry-after: {retry_after}\r\n"
            head = f"HTTP/1.1 {status} {reason}\r\n{later}content-length: 0\r\n"
            self.transport.write(f"{head}connection: close\r\n\r\n".encode())
            self.transport.close()


class _DrainingServer(uvicorn.Server):
    """uvicorn's server whose shutdown first drains the gateway's runs."""

    def __init__(self, config: uvicorn.Config, gateway: Gateway) -> None:
        super().__init__(config)
        self.gateway = gateway
        self.hurried = False

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        # uvicorn's backlog is also asyncio's accept burst, kept small (ACCEPT_BURST); the
        # kernel's queue is set back to its full length, so a crowd connecting at once waits
        # there instead of retrying its SYNs.
        for sock in sockets or []:
            sock.listen(LISTEN_BACKLOG)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """A second SIGINT ends the runs now, each with its ``RUN_ERROR``, and the server
        stops as it would have (the command then exits 130); a third stops at once."""
        if self.should_exit and sig == signal.SIGINT and not self.hurried:
            self.hurried = True
            self.gateway.hurry()
            return
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(self.gateway.drain)
            await super().shutdown(sockets)
            group.cancel_scope.cancel()


def gateway_server(gateway: Gateway) -> _DrainingServer:
    """The uvicorn server for ``gateway``: its protocol, its timeouts, its shutdown."""
    settings = gateway.settings
    config = uvicorn.Config(
        gateway,
        http=_GuardedH11Protocol,
        backlog=ACCEPT_BURST,
        lifespan="on",
        log_level="warning",
        access_log=False,
        timeout_keep_alive=max(1, round(settings.idle_timeout)),
        # A backstop: the drain has said all it will within the grace period.
        timeout_graceful_shutdown=math.ceil(settings.grace) + 2,
    )
    return _DrainingServer(config, gateway)


def serve_gateway(
    gateway: Gateway, sock: socket.socket, on_listening: Callable[[str], None] | None = None
) -> None:
    """Serve ``gateway`` on the bound ``sock`` in the foreground until SIGTERM or SIGINT,
    after which it drains and returns (a second SIGINT: ``KeyboardInterrupt``);
    ``on_listening`` gets the URL once a stop signal would be heard."""
    server = gateway_server(gateway)
    run_until_stopped(server, sock, on_listening)
    if server.hurried:
        raise KeyboardInterrupt
