"""``serve FILE``: the other side of a URL, a recorded stream (or a conversation of them)
replayed as an HTTP + SSE agent endpoint (:mod:`agui_pipeline.http.serve`, the ``serve``
extra, imported only when the command runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from agui_pipeline._checking import missing_extra
from agui_pipeline.cli.common import EXIT_OK, CommandError, listen_host, listen_port

SERVE_EXIT_STATUSES = """\
exit status:
  0  stopped by SIGTERM or Ctrl-C (SIGINT), once the responses in flight are sent
  2  a usage or I/O error: a bad option, a recording that does not parse whole,
     a port in use, a missing extra, a closed pipe
  130  a second Ctrl-C, which stops at once: the responses in flight are cut"""


def register(commands: Any) -> None:
    """Add ``agui-pipeline serve FILE``."""
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
        "--host", type=listen_host, default="127.0.0.1", help="address to listen on (127.0.0.1)"
    )
    serve.add_argument(
        "--port", type=listen_port, default=8000, help="port (8000; 0 picks a free one)"
    )
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
    serve.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace, out: TextIO) -> int:
    try:
        _run(args)
    except ModuleNotFoundError as error:
        raise missing_extra(error, "serve", "serve") from None
    except (ValueError, OSError) as exc:
        raise CommandError(str(exc)) from exc
    return EXIT_OK


def _run(args: argparse.Namespace) -> None:
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
