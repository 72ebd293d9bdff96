"""How many runs ``agui-pipeline proxy`` holds at once.

Three processes on 127.0.0.1: ``agui-pipeline serve`` replays the benchmark
workload with a pause between frames (so every run stays open for seconds),
``agui-pipeline proxy`` relays to it, and this process opens ``--runs`` runs
at once through the proxy (plain httpx streams, counting frames: the client
does no checking of its own). Reported: runs that ended with every frame and
no RUN_ERROR, the wall time, the proxy's peak RSS and the size of its log.

    python -m benchmarks.bench_proxy [--runs 500] [--events 50] [--pause 0.05]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

import anyio
import httpx
from agui_pipeline.testing.workload import encode_sse, events


def start(*argv: str) -> tuple[subprocess.Popen[str], str, list[int]]:
    """A command started with its stderr drained by a thread (a run log left unread fills
    the pipe and stalls the process on its next write), its URL, and its log's size."""
    process = subprocess.Popen(
        [sys.executable, "-m", "agui_pipeline", *argv], stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    url = next(word for word in line.split() if word.startswith("http://"))
    logged = [0]

    def drain(stream: IO[str]) -> None:
        for text in stream:
            logged[0] += len(text)

    threading.Thread(target=drain, args=(process.stderr,), daemon=True).start()
    return process, url, logged


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def one(client: httpx.AsyncClient, url: str, index: int, expected: int) -> bool:
    body = {"threadId": f"t-{index}", "runId": f"r-{index}", "messages": []}
    async with client.stream("POST", url, json=body) as response:
        if response.status_code != 200:
            return False
        content = b"".join([chunk async for chunk in response.aiter_bytes()])
    return content.count(b"data: ") == expected and b"RUN_ERROR" not in content


async def many(url: str, runs: int, expected: int) -> int:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    ok = 0
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(120), limits=limits) as client,
        anyio.create_task_group() as group,
    ):

        async def counted(index: int) -> None:
            nonlocal ok
            whole = await one(client, url, index, expected)  # awaited before ok is read
            ok += whole

        for index in range(runs):
            group.start_soon(counted, index)
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--pause", type=float, default=0.05)
    args = parser.parse_args()
    workload = events(args.events)
    with tempfile.TemporaryDirectory() as folder:
        recording = Path(folder) / "run.sse"
        recording.write_bytes(encode_sse(workload))
        agent, agent_url, _ = start(
            "serve", str(recording), "--port", "0", "--pause", str(args.pause)
        )
        proxy, proxy_url, logged = start("proxy", "--upstream", agent_url, "--port", "0")
        try:
            started = time.monotonic()
            ok = anyio.run(many, proxy_url, args.runs, len(workload))
            wall = time.monotonic() - started
            rss = peak_rss_mb(proxy.pid)
        finally:
            proxy.terminate()
            agent.terminate()
    print(
        f"{ok}/{args.runs} runs relayed whole ({len(workload)} events each, "
        f"{args.pause:g} s apart) in {wall:.1f} s; proxy peak RSS {rss:.0f} MB, "
        f"its log {logged[0] / 1024:.0f} kB"
    )


if __name__ == "__main__":
    main()
