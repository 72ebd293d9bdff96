"""The live path: runs arriving one frame per write, many at once, from a real local server.

A gateway rarely sees a batch: an LLM run arrives one token, one SSE frame,
per network read. ``agui-pipeline serve`` replays a realistic run (the
benchmark workload) from its own process on 127.0.0.1, one ``data:`` write
per event with ``--pause`` seconds between writes; this process reads
``--runs`` runs at once with each contender in turn, in the same rounds:

- ``transport floor``: httpx ``aiter_raw``, counting frames (``\\n\\n``);
- ``httpx-sse + orjson``: httpx-sse's ``aiter_sse``, ``orjson.loads`` per event;
- ``httpx-sse + SDK``: the same with ag-ui-protocol's ``TypeAdapter(Event).validate_json``
  (the official Python SDK's consumer path: parse and validate, nothing more);
- ``agui-pipeline``: ``HttpAgent`` with the default pipeline, fully declared,
  Conversation included, read event by event;
- over aiohttp's client (the ``aiohttp`` extra): its floor (``iter_any``, counting
  frames), and ``HttpAgent`` with the same pipeline over
  ``transport=AiohttpTransport(session)`` (no latency probe for these two: the probe
  is an httpx transport).

Reported per contender: client CPU per event (this process's CPU time over the
round / events; the median of the rounds, and the median of the per-round
ratios to the SDK contender), events per read (how much the reads coalesced),
and p50/p99 added latency per event — from the moment httpx handed over the
read that carried it to the moment the consumer's loop has it — measured in a
separate round through a timing transport, so the CPU rounds carry no probe.

    python -m benchmarks.bench_live [--runs 100] [--events 450] [--pause 0.005] [--repeat 5]

The server shares the machine (2 cores here); its writes are pure Python too,
so when it cannot keep up the reads coalesce — the events-per-read column says
when that happened. The cyclic collector is off during a round, as in the
rest of the suite.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import orjson

from .workload import DECLARATION, encode_sse, events

if TYPE_CHECKING:
    import aiohttp

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SDK = "httpx-sse + SDK validate_json"
OURS = "agui-pipeline HttpAgent (default + Conversation)"
FLOOR = "httpx aiter_raw (transport floor)"


@dataclass
class Clients:
    """The round's connection pools: httpx's, and aiohttp's session when installed."""

    client: httpx.AsyncClient
    aiohttp_session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        assert self.aiohttp_session is not None, "the round opened no aiohttp session"
        return self.aiohttp_session


Consume = Callable[[Clients, str, dict[str, Any], "Probe | None"], Awaitable[int]]
"""One run read by one contender: returns the events it saw."""


# -- the probe: when each read arrived, per task -------------------------------------------


class Probe:
    """Arrival times of reads and latencies of events, keyed by the reading task."""

    def __init__(self) -> None:
        self.arrived: dict[object, float] = {}
        self.latencies: list[float] = []
        self.reads = 0

    def event(self, count: int = 1) -> None:
        task = asyncio.current_task()
        latency = time.perf_counter() - self.arrived[task]
        self.latencies.extend([latency] * count)


class _TimedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, probe: Probe) -> None:
        self.inner = inner
        self.probe = probe

    async def __aiter__(self) -> AsyncIterator[bytes]:
        probe = self.probe
        async for chunk in self.inner:
            probe.reads += 1
            probe.arrived[asyncio.current_task()] = time.perf_counter()
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class _TimedTransport(httpx.AsyncBaseTransport):
    """httpx's own transport, with each response body noting when its reads arrive."""

    def __init__(self, probe: Probe, limits: httpx.Limits) -> None:
        self.inner = httpx.AsyncHTTPTransport(limits=limits)
        self.probe = probe

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_TimedStream(response.stream, self.probe),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


# -- the contenders ------------------------------------------------------------------------

ACCEPT = {"Accept": "text/event-stream"}


async def floor(clients: Clients, url: str, body: dict[str, Any], probe: Probe | None) -> int:
    frames = 0
    async with clients.client.stream("POST", url, json=body, headers=ACCEPT) as response:
        async for chunk in response.aiter_raw():
            count = chunk.count(b"\n\n")
            frames += count
            if probe is not None and count:
                probe.event(count)
    return frames


def sse_contender(decode: Callable[[str], object]) -> Consume:
    from httpx_sse import aconnect_sse

    async def consume(clients: Clients, url: str, body: dict[str, Any], probe: Probe | None) -> int:
        seen = 0
        client = clients.client
        async with aconnect_sse(client, "POST", url, json=body, headers=ACCEPT) as source:
            async for sse in source.aiter_sse():
                decode(sse.data)
                seen += 1
                if probe is not None:
                    probe.event()
        return seen

    return consume


def ours() -> Consume:
    from agui_pipeline import HttpAgent, Pipeline

    pipeline = Pipeline(capabilities=DECLARATION)

    async def consume(clients: Clients, url: str, body: dict[str, Any], probe: Probe | None) -> int:
        seen = 0
        async with (
            HttpAgent(url, pipeline=pipeline, client=clients.client) as agent,
            agent.open(body) as stream,
        ):
            async for _event in stream:
                seen += 1
                if probe is not None:
                    probe.event()
        if not stream.verdict.completed:
            raise RuntimeError(f"the live run was not accepted: {stream.verdict}")
        return seen

    return consume


def aiohttp_contenders() -> dict[str, Consume]:
    """The floor and the pipeline over aiohttp's client, when it is installed: one session
    per round, a connection per run (none kept alive), as the httpx contenders have."""
    try:
        from agui_pipeline import AiohttpTransport
    except ImportError:
        return {}
    from agui_pipeline import HttpAgent, Pipeline

    pipeline = Pipeline(capabilities=DECLARATION)

    async def raw(clients: Clients, url: str, body: dict[str, Any], probe: Probe | None) -> int:
        frames = 0
        async with clients.session().post(url, json=body, headers=ACCEPT) as response:
            async for chunk in response.content.iter_any():
                frames += chunk.count(b"\n\n")
        return frames

    async def piped(clients: Clients, url: str, body: dict[str, Any], probe: Probe | None) -> int:
        seen = 0
        transport = AiohttpTransport(clients.session())
        async with (
            HttpAgent(url, pipeline=pipeline, transport=transport) as agent,
            agent.open(body) as stream,
        ):
            async for _event in stream:
                seen += 1
        if not stream.verdict.completed:
            raise RuntimeError(f"the live run was not accepted: {stream.verdict}")
        return seen

    return {AIOHTTP_FLOOR: raw, AIOHTTP_OURS: piped}


AIOHTTP_FLOOR = "aiohttp iter_any (its transport floor)"
AIOHTTP_OURS = "agui-pipeline HttpAgent over aiohttp (AiohttpTransport)"


def contenders() -> tuple[dict[str, Consume], list[str]]:
    """The contenders available here, and a note for each one that is not."""
    found: dict[str, Consume] = {FLOOR: floor}
    notes: list[str] = []
    try:
        import httpx_sse  # noqa: F401
    except ImportError:
        notes.append(
            "httpx-sse not installed (pip install -e . --group bench): its contenders skipped"
        )
    else:
        found["httpx-sse + orjson.loads"] = sse_contender(orjson.loads)
        try:
            from ag_ui.core import Event
            from pydantic import TypeAdapter
        except ImportError:
            notes.append(
                "ag-ui-protocol not installed (pip install -e . --group bench): SDK skipped"
            )
        else:
            found[SDK] = sse_contender(TypeAdapter(Event).validate_json)
    found[OURS] = ours()
    found.update(aiohttp_contenders())
    return found, notes


# -- rounds --------------------------------------------------------------------------------


@contextmanager
def replay_server(per_run: int, pause: float) -> Any:
    """``agui-pipeline serve`` on a port of its choosing; yields its URL."""
    with tempfile.TemporaryDirectory() as folder:
        recording = Path(folder) / "run.sse"
        recording.write_bytes(encode_sse(events(per_run)))
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agui_pipeline",
                "serve",
                str(recording),
                "--port",
                "0",
                "--pause",
                str(pause),
            ],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stderr is not None
            line = process.stderr.readline()
            if " at " not in line:
                raise RuntimeError(f"the replay server did not start: {line!r}")
            yield line.rsplit(" at ", 1)[1].strip()
        finally:
            process.terminate()
            process.wait(timeout=30)


async def one_round(
    clients: Clients, url: str, consume: Consume, runs: int, probe: Probe | None
) -> tuple[float, int]:
    """``runs`` runs at once through ``consume``: (CPU seconds, events)."""
    seen = 0

    async def one(number: int) -> None:
        nonlocal seen
        body = {"threadId": f"t-{number}", "runId": f"r-{number}", "messages": []}
        count = await consume(clients, url, body, probe)  # not `seen += await`: a race
        seen += count

    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        async with anyio.create_task_group() as group:
            for number in range(runs):
                group.start_soon(one, number)
        return time.process_time() - started, seen
    finally:
        gc.enable()


@dataclass
class Figures:
    name: str
    us_per_event: list[float] = field(default_factory=list)
    ratio_to_sdk: float | None = None
    events_per_read: float | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    """``None``: not probed (the aiohttp contenders)."""

    def row(self) -> dict[str, Any]:
        return {
            "contender": self.name,
            "CPU µs/event (median)": round(statistics.median(self.us_per_event), 2),
            "CPU µs/event (min–max)": [
                round(min(self.us_per_event), 2),
                round(max(self.us_per_event), 2),
            ],
            "÷ SDK contender (median of rounds)": (
                None if self.ratio_to_sdk is None else round(self.ratio_to_sdk, 3)
            ),
            "events/read": _rounded(self.events_per_read, 2),
            "p50 added latency ms": _rounded(self.p50_ms, 3),
            "p99 added latency ms": _rounded(self.p99_ms, 3),
        }


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _cell(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


async def _measure(
    url: str, runs: int, repeat: int, chosen: dict[str, Consume]
) -> dict[str, Figures]:
    # A connection per run, as a gateway opening runs would (and the server closes idle
    # kept-alive connections after 5 s, which would fail the next round's requests).
    limits = httpx.Limits(max_connections=runs, max_keepalive_connections=0)
    timeout = httpx.Timeout(None, connect=60)
    figures = {name: Figures(name) for name in chosen}
    async with AsyncExitStack() as stack:
        clients = Clients(
            await stack.enter_async_context(httpx.AsyncClient(limits=limits, timeout=timeout))
        )
        if AIOHTTP_FLOOR in chosen:
            import aiohttp

            connector = aiohttp.TCPConnector(limit=runs, force_close=True)
            session = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=None, connect=60)
            )
            clients.aiohttp_session = await stack.enter_async_context(session)
        for consume in chosen.values():  # warm-up: code paths hot
            await one_round(clients, url, consume, runs, None)
        for _ in range(repeat):
            for name, consume in chosen.items():
                cpu, seen = await one_round(clients, url, consume, runs, None)
                figures[name].us_per_event.append(cpu / seen * 1e6)
    probe_limits = limits
    for name, consume in chosen.items():
        if name in (AIOHTTP_FLOOR, AIOHTTP_OURS):
            continue  # read through aiohttp: the httpx timing transport cannot see them
        probe = Probe()
        transport = _TimedTransport(probe, probe_limits)
        async with httpx.AsyncClient(transport=transport, timeout=timeout) as client:
            _, seen = await one_round(Clients(client), url, consume, runs, probe)
        latencies = sorted(probe.latencies)
        figures[name].events_per_read = seen / max(probe.reads, 1)
        figures[name].p50_ms = latencies[len(latencies) // 2] * 1e3
        figures[name].p99_ms = latencies[int(len(latencies) * 0.99)] * 1e3
    if SDK in figures:
        sdk = figures[SDK].us_per_event
        for each in figures.values():
            each.ratio_to_sdk = statistics.median(
                a / b for a, b in zip(each.us_per_event, sdk, strict=True)
            )
    return figures


def measure(runs: int, per_run: int, pause: float, repeat: int) -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * runs + 256)), hard))
    chosen, notes = contenders()
    with replay_server(per_run, pause) as url:
        figures = anyio.run(_measure, url, runs, repeat, chosen)
    return {
        "runs": runs,
        "events per run": per_run,
        "pause s": pause,
        "rounds": repeat,
        "rows": [each.row() for each in figures.values()],
        "notes": notes,
    }


def render(result: dict[str, Any]) -> str:
    lines = [
        f"Live: {result['runs']} runs at once, {result['events per run']} events each, one "
        f"frame per write, {result['pause s'] * 1e3:g} ms apart, from `agui-pipeline serve` "
        f"on 127.0.0.1; client CPU per event, median of {result['rounds']} paired rounds.",
        "",
        "| contender | CPU µs/event | min–max | ÷ SDK contender | events/read | "
        "p50 added ms | p99 added ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in result["rows"]:
        low, high = row["CPU µs/event (min–max)"]
        ratio = row["÷ SDK contender (median of rounds)"]
        lines.append(
            f"| {row['contender']} | {row['CPU µs/event (median)']:.1f} | {low:.1f}–{high:.1f} | "
            f"{'' if ratio is None else f'{ratio:.2f}×'} | {_cell(row['events/read'], 2)} | "
            f"{_cell(row['p50 added latency ms'], 3)} | {_cell(row['p99 added latency ms'], 3)} |"
        )
    lines += [f"- {note}" for note in result["notes"]]
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], path: Path) -> bool:
    """A bar per contender: the median CPU µs/event, the rounds' range as the error bar."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = result["rows"]
    names = [row["contender"] for row in rows]
    medians = [row["CPU µs/event (median)"] for row in rows]
    low = [m - row["CPU µs/event (min–max)"][0] for m, row in zip(medians, rows, strict=True)]
    high = [row["CPU µs/event (min–max)"][1] - m for m, row in zip(medians, rows, strict=True)]
    figure, axes = plt.subplots(figsize=(8, 4), dpi=110)
    axes.barh(names, medians, xerr=[low, high], color="tab:blue", capsize=4)
    axes.invert_yaxis()
    axes.set_xlabel("client CPU µs per event (lower is better)")
    axes.set_title(
        f"Live path: {result['runs']} runs at once, one frame per write, "
        f"{result['pause s'] * 1e3:g} ms apart",
        fontsize=10,
    )
    axes.grid(True, axis="x", alpha=0.3)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100, help="simultaneous runs (100)")
    parser.add_argument("--events", type=int, default=450, help="events per run (450)")
    parser.add_argument("--pause", type=float, default=0.005, help="seconds between writes")
    parser.add_argument("--repeat", type=int, default=5, help="paired rounds (5)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"results folder ({RESULTS})")
    args = parser.parse_args(argv)
    result = measure(args.runs, args.events, args.pause, args.repeat)
    args.out.mkdir(parents=True, exist_ok=True)
    plot(result, args.out / "live.png")
    (args.out / "live.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
