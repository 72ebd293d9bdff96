"""The command line's HTTP half: ``check URL``, ``serve FILE`` and ``proxy``.

Kept apart from :mod:`agui_pipeline.cli` so the file commands never import the
``http`` and ``serve`` extras.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agui_pipeline.delivery.escaping import inert
from agui_pipeline.errors import Diagnostic
from agui_pipeline.events import AnyEvent

if TYPE_CHECKING:
    from agui_pipeline.http.transport import Transport
    from agui_pipeline.stage import StageFactory

TRANSPORTS = ("httpx", "aiohttp")
"""What ``--transport`` names: the HTTP client a URL is read through (httpx, the default)."""


def add_transport_option(parser: Any, what: str) -> None:
    parser.add_argument(
        "--transport",
        choices=TRANSPORTS,
        default="httpx",
        help=f"the HTTP client {what} is read through: httpx (the default) or aiohttp, "
        "about half the CPU per live read (needs the 'aiohttp' extra)",
    )


def transport_named(name: str) -> Transport | None:
    """The transport ``--transport NAME`` asks for (``None``: the agent's default, httpx);
    raises ``ValueError`` naming the extra when aiohttp is not installed."""
    if name == "httpx":
        return None
    if name not in TRANSPORTS:
        raise ValueError(f"--transport expects one of {', '.join(TRANSPORTS)}, got {name!r}")
    try:
        from agui_pipeline.http.aiohttp_transport import AiohttpTransport
    except ModuleNotFoundError as error:
        raise ValueError(
            f"--transport aiohttp needs the 'aiohttp' extra (no module {error.name!r}): "
            "pip install 'agui-pipeline[aiohttp]'"
        ) from None
    return AiohttpTransport()


def parse_headers(values: Sequence[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values:
        name, colon, content = value.partition(":")
        if not colon or not name.strip():
            raise ValueError(f"--header expects NAME:VALUE, got {value!r}")
        headers[name.strip()] = content.strip()
    return headers


class StreamMeter:
    """A one-line status on stderr while a stream runs: events/s, current run, diagnostics.

    Used as a sink, so it costs one call per batch, and redraws at most every
    ``interval`` seconds.
    """

    def __init__(self, out: TextIO, interval: float = 0.5, *, forced: bool = False) -> None:
        self.out = out
        self.interval = interval
        self.forced = forced
        """Draw the last line even when the stream ended before the first redraw."""
        self.shown = False
        self.events = 0
        self.diagnostics = 0
        self.run_id = "-"
        self.started = self.drawn = time.monotonic()

    def diagnostic(self, _diagnostic: Diagnostic) -> None:
        self.diagnostics += 1

    async def write(self, events: Sequence[AnyEvent]) -> None:
        self.events += len(events)
        for event in events:
            if event.get("type") == "RUN_STARTED":
                self.run_id = inert(str(event.get("runId")))[:80]
        now = time.monotonic()
        if now - self.drawn >= self.interval:
            self.drawn = now
            self.draw(now)

    def draw(self, now: float) -> None:
        self.shown = True
        rate = self.events / max(now - self.started, 1e-9)
        self.out.write(
            f"\r{self.events} events, {rate:,.0f}/s, run {self.run_id}, "
            f"{self.diagnostics} diagnostics\x1b[K"
        )
        self.out.flush()

    def close(self) -> None:
        if not (self.shown or self.forced):
            return  # a short stream: no line to finish
        self.draw(time.monotonic())
        self.out.write("\n")
        self.out.flush()


def check_url(
    url: str,
    *,
    framing: str | None,
    peer_version: str | None,
    headers: Sequence[str],
    run_input: dict[str, Any] | None,
    capabilities: Any = None,
    progress: StreamMeter | None = None,
    idle_timeout: float | None = 300.0,
    max_duration: float | None = None,
    transport: str = "httpx",
    middleware: Sequence[StageFactory] = (),
) -> Any:
    """Run ``check`` against an agent URL; returns the RunResult (raises ValueError on misuse).

    ``run_input`` is POSTed (a minimal one for a fresh thread when ``None``);
    ``capabilities`` is the agent's declaration, to reconcile the stream with;
    ``idle_timeout`` and ``max_duration`` are the pipeline's (``--idle-timeout``,
    ``--max-duration``); ``transport`` names the HTTP client (``--transport``);
    ``middleware`` runs before enforce (``--middleware``).
    """
    from agui_pipeline._engine.pipeline import Pipeline
    from agui_pipeline.http.client import HttpAgent
    from agui_pipeline.subscribers import Sink

    sinks: list[Sink] = [progress] if progress else []
    # --framing proto asks the agent for the binary binding; the response's Content-Type
    # then picks the parser (an agent without the binding answers SSE).
    binary = framing == "proto"
    pipeline = Pipeline(
        middleware=middleware,
        framing=None if binary else framing,
        peer_max_protocol_version=peer_version,
        capabilities=capabilities,
        sinks=sinks,
        on_diagnostic=progress.diagnostic if progress else None,
        idle_timeout=idle_timeout,
        max_duration=max_duration,
    )
    body = run_input if run_input is not None else fresh_input()
    chosen = transport_named(transport)

    async def main() -> Any:
        async with (
            HttpAgent(
                url,
                pipeline=pipeline,
                headers=parse_headers(headers),
                binary=binary,
                transport=chosen,
            ) as agent,
            agent.open(body) as stream,
        ):
            return await stream.drain()  # the report needs no events: keep none

    import anyio  # only a URL needs an event loop: `check FILE` never imports it

    try:
        return anyio.run(main)
    finally:
        if progress is not None:
            progress.close()


def fresh_input() -> dict[str, Any]:
    """A minimal run input for a fresh thread (``check URL`` without ``--input``)."""
    import uuid

    return {"threadId": f"thread-{uuid.uuid4()}", "runId": f"run-{uuid.uuid4()}", "messages": []}


SERVE_EXIT_STATUSES = """\
exit status:
  0  stopped by SIGTERM or Ctrl-C (SIGINT), once the responses in flight are sent
  2  a usage or I/O error: a bad option, a recording that does not parse whole,
     a port in use, a missing extra, a closed pipe
  130  a second Ctrl-C, which stops at once: the responses in flight are cut"""

PROXY_EXIT_STATUSES = """\
exit status:
  0  stopped by SIGTERM or Ctrl-C (SIGINT), once the runs in flight are drained
     (each finished, or ended with a relay.shutdown RUN_ERROR within --grace)
  2  a usage or I/O error: a bad option or AGUI_PROXY_ variable, an --upstream that
     is not an http(s) URL, a port in use, a missing extra, a closed pipe
  130  a second Ctrl-C, which stops at once: the runs in flight are cut"""


def add_serve(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="replay a recorded stream as an HTTP + SSE agent endpoint",
        description="Answer every POST with the recorded stream FILE (any framing check "
        "reads), as text/event-stream. Needs the 'serve' extra.",
        epilog=SERVE_EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "file",
        help="a recorded stream (SSE, JSON lines or a JSON array); or a conversation, "
        "answered turn by turn: a directory of recordings (in name order) or a JSON list "
        "of runs",
    )
    serve.add_argument(
        "--host", type=_host, default="127.0.0.1", help="address to listen on (127.0.0.1)"
    )
    serve.add_argument("--port", type=_port, default=8000, help="port (8000; 0 picks a free one)")
    serve.add_argument("--split", type=int, metavar="N", help="write frames in pieces of N bytes")
    serve.add_argument(
        "--pause",
        type=float,
        default=0.0,
        metavar="S",
        help="seconds to wait between writes (frames, or pieces with --split)",
    )
    serve.add_argument(
        "--keepalive",
        type=float,
        metavar="S",
        help="send ': keep-alive' every S seconds while pausing between frames",
    )
    serve.add_argument(
        "--drop-after", type=int, metavar="N", help="drop the connection after N events"
    )
    serve.add_argument("--status", type=int, default=200, help="answer with this HTTP status")
    serve.add_argument(
        "--content-type", default="text/event-stream", help="the response Content-Type"
    )
    serve.add_argument("--token", help="require 'Authorization: Bearer TOKEN'")
    serve.add_argument(
        "--echo-ids",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="serve the recording under the request's ids, as the run-input page says a "
        "producer answers (the default): every run's threadId, and the requested (last) run's "
        "runId on RUN_STARTED, RUN_FINISHED, an echoed input and any parentRunId naming it; "
        "earlier runs keep their runIds. --no-echo-ids serves the recording's own ids",
    )
    serve.add_argument(
        "--max-body",
        type=int,
        default=1024 * 1024,
        metavar="BYTES",
        help="answer a larger request body with 413, unread (1048576)",
    )
    serve.add_argument(
        "--proto",
        action="store_true",
        help="answer in protobuf frames when the request's Accept admits "
        "application/vnd.ag-ui.event+proto (SSE otherwise); needs the 'proto' extra",
    )


def run_serve(args: argparse.Namespace) -> None:
    from agui_pipeline.http.serve import Replay, read_conversation, serve

    path = Path(args.file)
    if not path.exists():
        raise ValueError(f"no such file: {args.file}")
    if args.split is not None and args.split < 1:
        raise ValueError("--split must be at least 1")
    try:
        turns = read_conversation(path)
    except ValueError as error:
        raise ValueError(f"{args.file}: {error}") from None
    events = [event for turn in turns for event in turn]
    replay = Replay(
        turns[0],
        turns=turns if len(turns) > 1 else (),
        echo_ids=args.echo_ids,
        max_body=args.max_body,
        split=args.split,
        pause=args.pause,
        keepalive=args.keepalive,
        drop_after=args.drop_after,
        status=args.status,
        content_type=args.content_type,
        token=args.token,
        proto=args.proto,
    )

    for turn in turns:  # encoded here, once, before the first client waits on it
        replay.frames(False, turn)

    def listening(url: str) -> None:
        played = f"{len(turns)} turns, " if len(turns) > 1 else ""
        print(
            f"serving {args.file} ({played}{len(events)} events) at {url}",
            file=sys.stderr,
            flush=True,
        )

    serve(replay, args.host, args.port, on_listening=listening)


PROXY_ENV = "AGUI_PROXY_"
"""Every ``proxy`` option but the declaration can also be set by the environment:
``--max-concurrency`` by ``AGUI_PROXY_MAX_CONCURRENCY``, and so on; the command line wins."""


def _upstream_url(text: str) -> str:
    from agui_pipeline.delivery.redaction import redact_url

    if not text.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(
            f"expected an http:// or https:// URL, got {redact_url(text)!r}"
        )
    return text


def _host(text: str) -> str:
    """An address to listen on: never empty, which the socket layer reads as every
    interface; that is said as ``0.0.0.0`` or ``::``."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "expected an address to listen on, got an empty one "
            "(every interface is 0.0.0.0, or :: for IPv6)"
        )
    return text


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text!r}")
    return port


def _count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {count}")
    return count


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds > 0, got {text!r}")
    return seconds


def _one_of(*names: str) -> Any:
    def named(text: str) -> str:
        if text not in names:
            raise argparse.ArgumentTypeError(f"expected one of {', '.join(names)}, got {text!r}")
        return text

    return named


_SWITCH = {"1": True, "true": True, "yes": True, "on": True}
_SWITCH.update({"0": False, "false": False, "no": False, "off": False})


def _switch(text: str) -> bool:
    """An on/off setting from the environment (the flags are ``--otel``/``--no-otel``)."""
    try:
        return _SWITCH[text.strip().lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(
            f"expected 1, true, yes or on, or 0, false, no or off, got {text!r}"
        ) from None


PROXY_SETTINGS: dict[str, tuple[Any, Any]] = {
    "upstream": (_upstream_url, None),
    "host": (_host, "127.0.0.1"),
    "port": (_port, 8000),
    "log_format": (_one_of("text", "json"), "text"),
    "transport": (_one_of(*TRANSPORTS), "httpx"),
    "max_concurrency": (_count, None),
    "header_timeout": (_positive_seconds, 10.0),
    "body_timeout": (_positive_seconds, 30.0),
    "idle_timeout": (_positive_seconds, 5.0),
    "grace": (_positive_seconds, 30.0),
    "otel": (_switch, False),
}
"""Each ``proxy`` setting (its ``args`` name): how its environment variable is parsed (the
flag's own parser) and its value when neither the flag nor the variable sets it."""


def proxy_settings(args: argparse.Namespace, environ: Mapping[str, str]) -> None:
    """Fill in each proxy setting the command line left unset (``None``): from its
    ``AGUI_PROXY_`` variable, parsed as strictly as the flag, else the default.

    An empty variable is unset. A value its flag would refuse is a ``ValueError`` naming
    the variable and the value.
    """
    for name, (parse, default) in PROXY_SETTINGS.items():
        if getattr(args, name) is not None:
            continue  # the command line wins
        variable = PROXY_ENV + name.upper()
        text = environ.get(variable, "")
        if not text:
            setattr(args, name, default)
            continue
        try:
            setattr(args, name, parse(text))
        except argparse.ArgumentTypeError as error:
            raise ValueError(f"{variable}: {error}") from None
    if args.upstream is None:
        raise ValueError(f"proxy needs --upstream URL (or {PROXY_ENV}UPSTREAM)")


def add_proxy(commands: Any) -> None:
    proxy = commands.add_parser(
        "proxy",
        help="a validating gateway: relay each POSTed run to an agent through the pipeline",
        description=textwrap.fill(
            "Relay every POSTed RunAgentInput to the agent at --upstream, read its stream "
            "through the default pipeline, and answer with what the pipeline delivered, as "
            "text/event-stream; a rejected or truncated stream ends with a RUN_ERROR naming "
            "the rejection, an upstream error status is answered 502. Each run's diagnostics "
            "are printed on stderr as they happen. Past the descriptor budget or "
            "--max-concurrency a run is answered 503 with Retry-After; GET /healthz, /readyz "
            "and /metrics serve operators; SIGTERM drains. Every option but the declaration "
            f"can be set by the environment too ({PROXY_ENV}UPSTREAM, "
            f"{PROXY_ENV}MAX_CONCURRENCY, ...; an empty variable is unset), parsed as its "
            "flag is. Needs the 'http' and 'serve' extras (and 'metrics' for /metrics).",
            78,
        ),
        epilog=PROXY_EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    proxy.add_argument(
        "--upstream",
        type=_upstream_url,
        metavar="URL",
        help=f"the agent's URL (required, here or as {PROXY_ENV}UPSTREAM)",
    )
    proxy.add_argument("--host", type=_host, help="address to listen on (127.0.0.1)")
    proxy.add_argument("--port", type=_port, help="port (8000; 0 picks a free one)")
    proxy.add_argument(
        "--log-format",
        type=_one_of("text", "json"),
        metavar="{text,json}",
        help="each diagnostic and verdict (or, without one, its cause) on stderr as a text "
        "line or a JSON line (text)",
    )
    proxy.add_argument(
        "--max-concurrency",
        type=_count,
        metavar="N",
        help="runs relayed at once; past it a run is answered 503 with Retry-After "
        "(default: as many as the descriptor budget holds)",
    )
    for option, default, what in (
        ("header-timeout", "10", "for a request's headers to arrive whole (408 past it)"),
        ("body-timeout", "30", "for a request's body to arrive whole (408 past it)"),
        ("idle-timeout", "5", "a keep-alive connection may stay idle between requests"),
        ("grace", "30", "runs in flight get at SIGTERM before each is ended with a RUN_ERROR"),
    ):
        proxy.add_argument(
            f"--{option}",
            type=_positive_seconds,
            metavar="S",
            help=f"seconds {what} ({default})",
        )
    proxy.add_argument(
        "--otel",
        action=argparse.BooleanOptionalAction,
        help="count through OpenTelemetry's global meter too, as the tap does (the 'otel' "
        "extra; the SDK is yours to configure, e.g. with opentelemetry-instrument); off by "
        f"default, {PROXY_ENV}OTEL takes 1, true, yes, on or 0, false, no, off",
    )
    add_transport_option(proxy, "each upstream run")
    proxy.set_defaults(transport=None)  # unset: the environment's, else httpx


def run_proxy(args: argparse.Namespace, capabilities: Any) -> None:
    from agui_pipeline._engine.pipeline import Pipeline
    from agui_pipeline.delivery.redaction import redact_url
    from agui_pipeline.http.gateway import GatewaySettings
    from agui_pipeline.http.proxy import RunLog, proxy

    proxy_settings(args, os.environ)

    def listening(url: str) -> None:
        print(f"relaying {url} to {redact_url(args.upstream)}", file=sys.stderr, flush=True)

    transport = transport_named(args.transport)
    settings = GatewaySettings(
        max_concurrency=args.max_concurrency,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        idle_timeout=args.idle_timeout,
        grace=args.grace,
    )
    proxy(
        args.upstream,
        transport=transport,
        host=args.host,
        port=args.port,
        pipeline=Pipeline(capabilities=capabilities),
        log=RunLog(sys.stderr, args.log_format),
        on_listening=listening,
        settings=settings,
        metrics=_proxy_metrics(args.otel),
    )


def _proxy_metrics(otel: bool) -> Any:
    """The proxy's counters: Prometheus text at /metrics when prometheus-client is installed
    (the 'metrics' extra), OpenTelemetry's global meter too with ``--otel``."""
    from agui_pipeline.http.gateway_metrics import GatewayMetrics

    try:
        import prometheus_client  # noqa: F401
    except ModuleNotFoundError:
        prometheus = False
    else:
        prometheus = True
    if not (prometheus or otel):
        return None
    try:
        return GatewayMetrics(prometheus=prometheus, opentelemetry=otel)
    except ModuleNotFoundError as error:
        raise ValueError(
            f"--otel needs the 'otel' extra (no module {error.name!r}): "
            "pip install 'agui-pipeline[otel]'"
        ) from None
