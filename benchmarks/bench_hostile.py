"""``agui-pipeline proxy`` attacked on 127.0.0.1, under a lowered descriptor limit.

``agui-pipeline serve`` replays a short run, ``agui-pipeline proxy`` relays to it with
its ``RLIMIT_NOFILE`` lowered (soft and hard) to ``--descriptors``, and this process
attacks it one way, then reports what a client got and what the proxy logged:

- ``silent``: ``--count`` TCP connections that send nothing, then one real request:
  its status and how long it waited;
- ``honest``: ``--count`` real runs at once, the upstream slow enough that all are
  open together: how many got each status, how long the slowest waited for it;
- ``slowloris``: ``--count`` connections each sending its request headers a byte every
  two seconds: how many the proxy still held after ``--seconds``.

    python -m benchmarks.bench_hostile silent --count 1030 --descriptors 1024
    python -m benchmarks.bench_hostile honest --count 1000 --descriptors 1024
    python -m benchmarks.bench_hostile slowloris --count 500 --seconds 30
"""

from __future__ import annotations

import argparse
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import IO

import anyio
import httpx

from .workload import encode_sse, events

INPUT = {"threadId": "t", "runId": "r", "messages": []}


def _start(
    argv: list[str], descriptors: int | None
) -> tuple[subprocess.Popen[str], str, list[str]]:
    def limited() -> None:
        if descriptors is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))

    process = subprocess.Popen(
        [sys.executable, "-m", "agui_pipeline", *argv],
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        preexec_fn=limited,
    )
    assert process.stderr is not None
    url = next(word for word in process.stderr.readline().split() if word.startswith("http"))
    logged: list[str] = []

    def drain(stream: IO[str]) -> None:
        for line in stream:
            logged.append(line)

    threading.Thread(target=drain, args=(process.stderr,), daemon=True).start()
    return process, url, logged


def _address(url: str) -> tuple[str, int]:
    host, port = url.split("//")[1].rstrip("/").rsplit(":", 1)
    return host, int(port)


def silent(url: str, count: int) -> str:
    socks = [socket.create_connection(_address(url), timeout=10) for _ in range(count)]
    try:
        time.sleep(2)
        started = time.monotonic()
        try:
            answer = httpx.post(url, json=INPUT, timeout=30)
            said = f"{answer.status_code}"
        except httpx.HTTPError as error:
            said = f"no answer ({type(error).__name__})"
        waited = time.monotonic() - started
    finally:
        for sock in socks:
            sock.close()
    return f"{count} silent sockets, then a real request: {said} after {waited:.2f} s"


def honest(url: str, count: int) -> str:
    async def main() -> tuple[Counter[str], float]:
        statuses: Counter[str] = Counter()
        slowest = 0.0
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        async with (
            httpx.AsyncClient(timeout=60, limits=limits) as client,
            anyio.create_task_group() as group,
        ):

            async def one() -> None:
                nonlocal slowest
                started = time.monotonic()
                try:
                    async with client.stream("POST", url, json=INPUT) as response:
                        statuses[str(response.status_code)] += 1
                except httpx.HTTPError as error:
                    statuses[type(error).__name__] += 1
                slowest = max(slowest, time.monotonic() - started)

            for _ in range(count):
                group.start_soon(one)
        return statuses, slowest

    statuses, slowest = anyio.run(main)
    got = ", ".join(f"{number} x {status}" for status, number in statuses.most_common())
    return f"{count} streams at once: {got}; the slowest answered after {slowest:.2f} s"


def slowloris(url: str, count: int, seconds: float) -> str:
    socks = [socket.create_connection(_address(url), timeout=10) for _ in range(count)]
    for sock in socks:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        sock.setblocking(False)
    open_socks = set(socks)
    started = time.monotonic()
    while time.monotonic() - started < seconds and open_socks:
        for sock in list(open_socks):
            try:
                if sock.recv(1024) == b"":
                    open_socks.discard(sock)
                    continue
                open_socks.discard(sock)  # answered (408): closed after
            except BlockingIOError:
                try:
                    sock.send(b"x")
                except OSError:
                    open_socks.discard(sock)
            except OSError:
                open_socks.discard(sock)
        time.sleep(2)
    held = len(open_socks)
    for sock in socks:
        sock.close()
    return (
        f"{count} slowloris connections (a byte every 2 s): {held} still held after {seconds:g} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=("silent", "honest", "slowloris"))
    parser.add_argument("--count", type=int, default=1030)
    parser.add_argument("--descriptors", type=int, default=1024)
    parser.add_argument("--seconds", type=float, default=30)
    args = parser.parse_args()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this process holds the sockets
    with tempfile.TemporaryDirectory() as folder:
        recording = Path(folder) / "run.sse"
        recording.write_bytes(encode_sse(events(20)))
        pause = "1.0" if args.case == "honest" else "0"
        agent, agent_url, _ = _start(
            ["serve", str(recording), "--port", "0", "--pause", pause], None
        )
        proxy, url, logged = _start(
            ["proxy", "--upstream", agent_url, "--port", "0"], args.descriptors
        )
        try:
            time.sleep(0.5)
            if args.case == "silent":
                said = silent(url, args.count)
            elif args.case == "honest":
                said = honest(url, args.count)
            else:
                said = slowloris(url, args.count, args.seconds)
            time.sleep(1)
        finally:
            proxy.terminate()
            agent.terminate()
            proxy.wait(timeout=60)
            agent.wait(timeout=60)
    text = "".join(logged)
    blamed = text.count("ConnectError")
    print(
        f"{said}; the proxy's log {len(text):,} bytes, {len(logged):,} lines, "
        f"{text.count('Traceback')} tracebacks, {blamed} upstream ConnectErrors"
    )


if __name__ == "__main__":
    main()
