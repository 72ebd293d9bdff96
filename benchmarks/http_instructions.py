"""Instructions per event of a live run read over httpx, from a scripted network.

``bench_live`` times the live path over real sockets, where the figures move by
more than a change worth deciding (2 shared cores). This counts it under
callgrind instead: httpx's real client and transport and httpcore's real HTTP/1.1
connection read runs whose network stream is scripted — one HTTP chunk (one SSE
frame) per read, each read yielding to the event loop once, as a wait on a socket
does — so nothing but the socket itself is left out, and the count is the same on
every run. The runs are the ones ``bench_live`` replays (the recording ``serve``
sends, the request's ids echoed), read at once::

    python -m benchmarks.http_instructions                  # HttpAgent, default + Conversation
    python -m benchmarks.http_instructions --contender undeclared   # ... no declaration
    python -m benchmarks.http_instructions --contender sdk  # httpx-sse + SDK validate_json
    python -m benchmarks.http_instructions --contender floor --runs 20 --events 450

Contenders as in ``bench_live``: ``ours``, ``sdk`` and ``floor`` (``aiter_raw``,
counting frames); and ``undeclared``, ``ours`` without the capabilities declaration, which
the native core's deliver mode reads (``docs/performance.md``, "Deliver mode").

The method is ``instructions``': the same child twice under
``valgrind --tool=callgrind`` with ``PYTHONHASHSEED=0``, once with a two-run
warm-up only and once with the measured round too, the difference over the events.
A real socket adds the same cost to every contender (``bench_live``'s floor).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import anyio
import anyio.lowlevel
import httpcore
import httpx
from agui_pipeline.http.serve import _echo_ids, _encode

from .bench_live import ACCEPT
from .instructions import own_bytecode
from .workload import DECLARATION, events

Consume = Callable[[httpx.AsyncClient, int], Awaitable[int]]
HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
)


class _ScriptedStream(httpcore.AsyncNetworkStream):
    """One scripted read at a time, each after one trip through the event loop."""

    def __init__(self, reads: Iterable[bytes]) -> None:
        self._reads = iter(reads)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        await anyio.lowlevel.checkpoint()
        return next(self._reads, b"")

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        pass

    async def aclose(self) -> None:
        pass

    def get_extra_info(self, info: str) -> Any:
        return None


class _ScriptedNetwork(httpcore.AsyncNetworkBackend):
    """Answers a connection to ``run-N`` with run N as ``serve`` sends it, chunked."""

    def __init__(self, per_run: int) -> None:
        self.recorded = events(per_run)
        self.frames = _encode(self.recorded, False)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        frames = _echo_ids(self.frames, self.recorded, _body(int(host.split("-")[1])), False)
        chunks = [b"%x\r\n%s\r\n" % (len(frame), frame) for frame in frames]
        return _ScriptedStream([HEAD, *chunks, b"0\r\n\r\n"])


def _body(number: int) -> dict[str, Any]:
    return {"threadId": f"t-{number}", "runId": f"r-{number}", "messages": []}


def _client(per_run: int) -> httpx.AsyncClient:
    transport = httpx.AsyncHTTPTransport()
    # httpx takes no network backend; its transport's pool is swapped for one that has
    # the scripted network (httpx's own request and response handling stay in the path).
    transport._pool = httpcore.AsyncConnectionPool(
        network_backend=_ScriptedNetwork(per_run), max_keepalive_connections=0
    )
    return httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(None, connect=60))


def _contender(name: str) -> Consume:
    if name in ("ours", "undeclared"):
        from agui_pipeline import HttpAgent, Pipeline

        # Undeclared, the stream takes the native core's deliver mode where it is built.
        pipeline = Pipeline(capabilities=DECLARATION) if name == "ours" else Pipeline()

        async def ours(client: httpx.AsyncClient, number: int) -> int:
            seen = 0
            async with (
                HttpAgent(f"http://run-{number}/", pipeline=pipeline, client=client) as agent,
                agent.open(_body(number)) as stream,
            ):
                async for _event in stream:
                    seen += 1
            if not stream.verdict.completed:
                raise RuntimeError(f"the run was not accepted: {stream.verdict}")
            return seen

        return ours
    if name == "sdk":
        from ag_ui.core import Event
        from httpx_sse import aconnect_sse
        from pydantic import TypeAdapter

        validate = TypeAdapter(Event).validate_json

        async def sdk(client: httpx.AsyncClient, number: int) -> int:
            seen = 0
            url, body = f"http://run-{number}/", _body(number)
            async with aconnect_sse(client, "POST", url, json=body, headers=ACCEPT) as source:
                async for sse in source.aiter_sse():
                    validate(sse.data)
                    seen += 1
            return seen

        return sdk

    async def floor(client: httpx.AsyncClient, number: int) -> int:
        frames = 0
        url, body = f"http://run-{number}/", _body(number)
        async with client.stream("POST", url, json=body, headers=ACCEPT) as response:
            async for chunk in response.aiter_raw():
                frames += chunk.count(b"\n\n")
        return frames

    return floor


def _child(contender: str, runs: int, per_run: int, measured: bool) -> None:
    consume = _contender(contender)

    async def round_of(client: httpx.AsyncClient, count: int) -> int:
        seen = 0

        async def one(number: int) -> None:
            nonlocal seen
            read = await consume(client, number)
            seen += read

        async with anyio.create_task_group() as group:
            for number in range(count):
                group.start_soon(one, number)
        return seen

    async def main() -> None:
        async with _client(per_run) as client:
            await round_of(client, 2)  # in both runs: every first-call cost
            if measured and await round_of(client, runs) != runs * per_run:
                raise RuntimeError("the measured round saw fewer events than it was sent")

    anyio.run(main)


def _instructions(arguments: list[str]) -> int:
    """Instructions callgrind counts for one child run, on bytecode of this process's own
    (``instructions.own_bytecode``): a baseline's run first runs the measured round without
    valgrind, so that neither counted run compiles a module."""
    child = [sys.executable, "-m", "benchmarks.http_instructions", "--child", *arguments]
    env = dict(os.environ, PYTHONHASHSEED="0")
    if "--measured" not in arguments:
        subprocess.run([*child, "--measured"], env=env, capture_output=True, check=True)
    with tempfile.TemporaryDirectory() as scratch:
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/callgrind.out"]
        command += child
        finished = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", finished.stderr)
    if finished.returncode != 0 or found is None:
        raise RuntimeError(f"the callgrind run failed:\n{finished.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--contender", choices=["ours", "undeclared", "sdk", "floor"], default="ours"
    )
    parser.add_argument("--runs", type=int, default=20, help="runs read at once (20)")
    parser.add_argument("--events", type=int, default=450, help="events per run (450)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measured", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.contender, args.runs, args.events, args.measured)
        return
    shared = ["--contender", args.contender, "--runs", str(args.runs), "--events", str(args.events)]
    with own_bytecode():
        baseline = _instructions(shared)
        total = _instructions([*shared, "--measured"])
    count = args.runs * args.events
    print(
        f"{args.contender}: {args.runs} runs of {args.events} events over httpx, one frame "
        f"per read, scripted network: {(total - baseline) / count:,.0f} instructions/event"
    )


if __name__ == "__main__":
    main()
