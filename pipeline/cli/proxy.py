"""``proxy``: a validating gateway, each POSTed run relayed to an agent through the
pipeline (:mod:`agui_pipeline.http.proxy`; the ``http`` and ``serve`` extras, imported
only when the command runs)."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Mapping
from typing import Any, TextIO

from agui_pipeline._checking import missing_extra
from agui_pipeline._checking.source import declaration_from_files
from agui_pipeline._checking.url import TRANSPORTS, transport_named
from agui_pipeline.cli.common import (
    EXIT_OK,
    CommandError,
    add_transport_option,
    listen_host,
    listen_port,
)
from agui_pipeline.delivery.escaping import inert

PROXY_EXIT_STATUSES = """\
exit status:
  0  stopped by SIGTERM or Ctrl-C (SIGINT), once the runs in flight are drained
     (each finished, or ended with a relay.shutdown RUN_ERROR within --grace)
  2  a usage or I/O error: a bad option or AGUI_PROXY_ variable, an --upstream that
     is not an http(s) URL, a port in use, a missing extra, a closed pipe
  130  a second Ctrl-C, which stops at once: the runs in flight are cut"""


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
    "host": (listen_host, "127.0.0.1"),
    "port": (listen_port, 8000),
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


def register(commands: Any) -> None:
    """Add ``agui-pipeline proxy --upstream URL``."""
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
    proxy.add_argument("--host", type=listen_host, help="address to listen on (127.0.0.1)")
    proxy.add_argument("--port", type=listen_port, help="port (8000; 0 picks a free one)")
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
    declared = proxy.add_mutually_exclusive_group()
    declared.add_argument(
        "--capabilities",
        metavar="FILE",
        help="the agent's AgentCapabilities declaration (JSON): report where a stream "
        "contradicts it (never rejects; one it cannot use is a finding, and the stream is "
        "judged as undeclared)",
    )
    declared.add_argument(
        "--agent-resource",
        metavar="FILE",
        help="a Customer Engagement Suite agent resource (JSON) to derive the declaration from",
    )
    # --transport unset: the environment's, else httpx.
    proxy.set_defaults(transport=None, handler=_proxy)


def _proxy(args: argparse.Namespace, out: TextIO) -> int:
    declaration = declaration_from_files(args.capabilities, args.agent_resource)
    if declaration is not None and not declaration.usable:
        # The producer's mistake never stops the proxy: said once now, and on every run.
        print(f"agui-pipeline: {inert(declaration.notes[0].message)}", file=sys.stderr)
    try:
        _run(args, declaration)
    except ModuleNotFoundError as error:
        raise missing_extra(error, "serve", "proxy") from None
    except (ValueError, OSError) as exc:
        raise CommandError(str(exc)) from exc
    return EXIT_OK


def _run(args: argparse.Namespace, capabilities: Any) -> None:
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
