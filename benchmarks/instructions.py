"""Instructions per event under callgrind: the measure that settles a few-percent question.

Wall and CPU time on a shared 2-core VM drift by more than the changes worth
deciding, so speed work here is decided on instruction counts. The method:
run the same child process twice under ``valgrind --tool=callgrind`` with
``PYTHONHASHSEED=0`` (a random seed moves dict probing by a few percent) —
once doing everything but the measured pass (imports, reading the workload
file, building the pipeline, starting the event loop, a short warm-up stream
through the same pipeline), once doing it too — and divide the difference
by the number of events, so start-up and imports cancel out::

    python -m benchmarks.instructions                   # whole default pipeline
    python -m benchmarks.instructions --upto verify     # parse .. verify only
    python -m benchmarks.instructions --upto parse --events 20000
    python -m benchmarks.instructions --without lint    # the whole pipeline but lint
    python -m benchmarks.instructions --live            # one frame per read, as a live run
    python -m benchmarks.instructions --live --source-timeout 300   # ... as HttpAgent reads
    python -m benchmarks.instructions --live --backend trio         # ... under trio
    python -m benchmarks.instructions --startup         # a whole `check` on 20 events
    python -m benchmarks.instructions --versus-sdk      # `check` and the SDK as processes
    python -m benchmarks.instructions --proto --upto parse   # the protobuf reader alone
    python -m benchmarks.instructions --deliver         # a handler's pipeline, native and pure
    python -m benchmarks.instructions --deliver --live  # ... one frame per read

``--live`` feeds the stream from an async generator, one SSE frame per read, and
reads it event by event (``async for event in stream``): the engine's cost per
read, which a live run pays for every event, on top of the per-event work. The
default idle window applies (a live source can stall); ``--source-timeout`` says
the source bounds its own reads, as ``HttpAgent``'s body does; ``--backend trio`` runs
it under trio instead of asyncio (a cancel scope per read there). ``--proto`` feeds
the same events as HTTP + Protobuf frames (the ``proto`` extra), in 64 KiB reads.
``--deliver`` measures delivery to a handler in process (issue 36's measure of deliver mode):
``Pipeline(handlers={"*": handler})``, no declaration, in 64 KiB reads, with the Conversation
(the default), without it (``conversation=False``), with a middleware stage that hands each
batch on unchanged (the native run split around it), and the default pipeline drained for its
verdict alone (``drain(conversation=False)``, as ``check -`` and the proxy's tap read a stream:
no event built on the native core), each on the native core and on the pure
one (``AGUI_PIPELINE_PURE=1``), beside the SDK's parse-only pass over the same frames in
process (``TypeAdapter(Event).validate_json``) and a floor under any delivery to a Python
handler: each frame, cut out beforehand, built by ``orjson.loads`` and handed to the same
empty handler, with nothing checked.

The pipeline is the one every figure is for (``suite.default_pipeline``:
a full declaration for reconcile, the Conversation on); ``--upto STAGE``
drops the stages after ``STAGE``, ``--without STAGE`` drops that one. The workload
file (``workload.py``, SSE)
is written once to ``--file``'s path and fed from memory in 64 KiB reads, a
realistic socket read; the count of events is read back from it.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

import orjson
from agui_pipeline import Batch, Pipeline, Stage
from agui_pipeline.testing.workload import DECLARATION

ROOT = Path(__file__).resolve().parents[1]


def _child(
    path: Path,
    upto: str,
    without: str | None,
    measured: bool,
    live: bool,
    source_timeout: float | None,
    proto: bool,
    backend: str,
    deliver: str | None,
) -> None:
    """What runs under valgrind: a short warm-up stream always (so the event loop's start
    and every first-call cost are in both runs), the workload's pass when ``measured``."""
    import anyio

    from .suite import default_pipeline
    from .workload import chunks, encode_sse, events

    if deliver == "sdk":
        _sdk_child(path, measured)
        return
    if deliver == "floor":
        _floor_child(path, measured)
        return
    pipeline = default_pipeline()
    if deliver is not None:

        def handler(event: object) -> None:
            """What a handler that looks at each event costs at least."""

        pipeline = Pipeline(handlers={"*": handler}, conversation=deliver != "bare")
        if deliver == "verdict":  # drained for its verdict alone: nothing is delivered
            pipeline = Pipeline()
        if deliver == "middleware":
            pipeline = pipeline.insert_before("enforce", Unchanged)
    names = pipeline.stage_names
    for later in reversed(names[names.index(upto) + 1 :]):
        pipeline = pipeline.without(later)
    if without is not None:
        pipeline = pipeline.without(without)
    warm_up = [encode_sse(events(500, seed=1))]
    reads = chunks(path.read_bytes())  # in both runs: reading the file is not the pass
    if live:
        warm_up = frames(warm_up[0])
        reads = frames(path.read_bytes())
    if proto:
        pipeline = pipeline.with_options(framing="proto")
        warm_up = [proto_body(warm_up[0])]
        reads = chunks(proto_body(path.read_bytes()))

    async def one_by_one(source: list[bytes]) -> AsyncIterator[bytes]:
        for read in source:
            yield read

    async def consume(source: list[bytes]) -> None:
        if deliver == "verdict":
            stream = pipeline.open(one_by_one(source) if live else source)
            await stream.drain(conversation=False)
        elif not live:
            async with pipeline.open(source) as stream:
                async for _batch in stream.batches():
                    pass
        else:
            if source_timeout is None:
                stream = pipeline.open(one_by_one(source))
            else:
                from agui_pipeline import EventStream

                stream = EventStream(
                    pipeline, one_by_one(source), pipeline.context(), source_timeout=source_timeout
                )
            async with stream:
                async for _event in stream:
                    pass
        assert stream.verdict is not None and stream.verdict.completed, stream.verdict

    async def passes() -> None:
        await consume(warm_up)
        if measured:
            await consume(reads)

    anyio.run(passes, backend=backend)


class Unchanged(Stage):
    """A user's middleware that hands every batch on as it came: what splitting the native
    run around a stage of the user's costs, and no more."""

    name: ClassVar[str] = "unchanged"

    async def process(self, batch: Batch) -> Batch:
        return batch


def _sdk_child(path: Path, measured: bool) -> None:
    """The SDK's parse-only pass in process: each frame's JSON validated into an event."""
    from ag_ui.core import Event
    from pydantic import TypeAdapter

    from .workload import encode_sse, events

    validate = TypeAdapter(Event).validate_json
    warm_up = encode_sse(events(500, seed=1)).split(b"\n\n")[:-1]
    reads = path.read_bytes().split(b"\n\n")[:-1]
    for frame in warm_up:
        validate(frame.removeprefix(b"data: "))
    if measured:
        for frame in reads:
            validate(frame.removeprefix(b"data: "))


def _floor_child(path: Path, measured: bool) -> None:
    """The least any delivery to a Python handler costs: each frame's JSON, cut out
    beforehand, built by ``orjson.loads`` and handed to the handler. No framing, no check."""
    import orjson

    from .workload import encode_sse, events

    def handler(event: object) -> None:
        """The same empty handler as the pipeline's."""

    warm_up = encode_sse(events(500, seed=1)).split(b"\n\n")[:-1]
    sse_frames = path.read_bytes().split(b"\n\n")[:-1]
    payloads = [frame.removeprefix(b"data: ") for frame in sse_frames]  # cut out beforehand
    for frame in warm_up:
        handler(orjson.loads(frame.removeprefix(b"data: ")))
    if measured:
        for payload in payloads:
            handler(orjson.loads(payload))


def frames(body: bytes) -> list[bytes]:
    """Each SSE frame of ``body`` as its own read."""
    return [frame + b"\n\n" for frame in body.split(b"\n\n") if frame]


def proto_body(body: bytes) -> bytes:
    """The events of an SSE ``body`` (one ``data:`` line each) as protobuf frames."""
    import orjson
    from agui_pipeline._proto.codec import encode_frames

    return encode_frames(orjson.loads(frame[len(b"data: ") :]) for frame in frames(body))


@contextmanager
def own_bytecode() -> Iterator[None]:
    """Every child started in this block on a bytecode cache of this run's own
    (``PYTHONPYCACHEPREFIX``, written on first import). A count is the difference of two
    children; where one loaded bytecode that the other compiled — another process (a test
    run) writing the package's bytecode between them, or a source edited — the difference
    moved by the compile cost: 25,611 instead of 49,709 an event once."""
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["PYTHONPYCACHEPREFIX"] = cache
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)


def _instructions(
    path: Path,
    stages: list[str],
    measured: bool,
    reading: list[str],
    env: dict[str, str] | None = None,
) -> int:
    """Instructions callgrind counts for one child run (``reading``: how the child reads;
    ``env``: its environment, this process's by default), on bytecode of this process's own
    (:func:`own_bytecode`): the baseline's run first runs the measured pass without valgrind,
    so that neither counted run compiles a module."""
    child = [sys.executable, "-m", "benchmarks.instructions", "--child", "--file", str(path)]
    env = dict(os.environ if env is None else env, PYTHONHASHSEED="0")
    if not measured:
        warm = [*child, *stages, "--measured", *reading]
        subprocess.run(warm, cwd=ROOT, env=env, capture_output=True, check=True)
    with tempfile.TemporaryDirectory() as scratch:
        command = (
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/callgrind.out"]
            + child
            + stages
            + (["--measured"] if measured else [])
            + reading
        )
        finished = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, check=False
        )
    found = re.search(r"Collected : (\d+)", finished.stderr)
    if finished.returncode != 0 or found is None:
        raise RuntimeError(f"the callgrind run failed:\n{finished.stderr[-2000:]}")
    return int(found.group(1))


def _process_instructions(command: list[str], env: dict[str, str]) -> int:
    """Instructions callgrind counts for one whole process running ``command``."""
    with tempfile.TemporaryDirectory() as scratch:
        finished = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/out", *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    found = re.search(r"Collected : (\d+)", finished.stderr)
    if finished.returncode not in (0, 1) or found is None:
        raise RuntimeError(f"the callgrind run failed:\n{finished.stderr[-2000:]}")
    return int(found.group(1))


def startup() -> str:
    """``--startup``: a whole ``agui-pipeline check`` process on a 20-event file of the
    workload, against ``python -c pass`` — start-up, which the per-event figure cancels
    out. Run from bytecode, as an installed package is: a first run writes it."""
    from .workload import encode_sse, events

    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONHASHSEED"] = "0"
    with tempfile.TemporaryDirectory() as scratch:
        small = Path(scratch) / "small.sse"
        small.write_bytes(encode_sse(events(20)))
        check = [sys.executable, "-m", "agui_pipeline", "check", str(small)]
        subprocess.run(check, cwd=ROOT, env=env, capture_output=True, check=False)
        bare = _process_instructions([sys.executable, "-c", "pass"], env)
        whole = _process_instructions(check, env)
    return (
        f"agui-pipeline check on 20 events, whole process: {whole / 1e6:,.1f} M instructions "
        f"(python -c pass: {bare / 1e6:,.1f} M)"
    )


def versus_sdk(path: Path) -> str:
    """``--versus-sdk``: instructions per event of whole processes, each run on the workload
    and on its first 20 events (start-up and imports cancel out): ``agui-pipeline check``,
    the same on the pure Python core, each also held to the workload's declaration
    (``--capabilities``: reconcile's findings, placed by line), and the SDK's parse-only pass
    (``benchmarks/sdk_check.py``) — issue 36's measure of the native core."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONHASHSEED"] = "0"
    env.pop("AGUI_PIPELINE_PURE", None)
    pure = {**env, "AGUI_PIPELINE_PURE": "1"}
    body = path.read_bytes()
    count = body.count(b"\n\n")
    per_event: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        declaration = Path(scratch) / "declaration.json"
        declaration.write_bytes(orjson.dumps(DECLARATION))
        check = [sys.executable, "-m", "agui_pipeline", "check"]
        declared = [*check, "--capabilities", str(declaration)]
        contenders = {
            "check": (check, env),
            "check, pure core": (check, pure),
            "check --capabilities": (declared, env),
            "check --capabilities, pure core": (declared, pure),
            "SDK parse-only": ([sys.executable, str(Path(__file__).parent / "sdk_check.py")], env),
        }
        small = Path(scratch) / "small.sse"
        small.write_bytes(b"".join(body.split(b"\n\n")[i] + b"\n\n" for i in range(20)))
        for name, (command, environment) in contenders.items():
            subprocess.run([*command, str(small)], cwd=ROOT, env=environment, capture_output=True)
            whole = _process_instructions([*command, str(path)], environment)
            start = _process_instructions([*command, str(small)], environment)
            per_event[name] = (whole - start) / (count - 20)
    sdk = per_event["SDK parse-only"]
    lines = [f"whole processes, {count:,} events ({path}), start-up subtracted:"]
    lines += [
        f"  {name}: {cost:,.0f} instructions/event (the SDK's ÷ this: {sdk / cost:.2f}x)"
        for name, cost in per_event.items()
    ]
    return "\n".join(lines)


def delivery(path: Path, live: bool) -> str:
    """``--deliver``: instructions per event delivered to a handler in process, native and
    pure, beside the SDK's parse-only pass in process (``live``: one frame per read)."""
    count = path.read_bytes().count(b"\n\n")
    env = {name: value for name, value in os.environ.items() if name != "AGUI_PIPELINE_PURE"}
    pure = {**env, "AGUI_PIPELINE_PURE": "1"}
    contenders = {
        "native core": (["--deliver", "handler"], env),
        "pure core": (["--deliver", "handler"], pure),
        "native core, no Conversation": (["--deliver", "bare"], env),
        "pure core, no Conversation": (["--deliver", "bare"], pure),
        "native core, a middleware stage": (["--deliver", "middleware"], env),
        "pure core, a middleware stage": (["--deliver", "middleware"], pure),
        "native core, drained for its verdict alone": (["--deliver", "verdict"], env),
        "pure core, drained for its verdict alone": (["--deliver", "verdict"], pure),
        "SDK parse-only": (["--deliver", "sdk"], env),
        "orjson.loads to the handler, nothing else": (["--deliver", "floor"], env),
    }
    per_event = {}
    for name, (reading, environment) in contenders.items():
        if live and reading[1] in ("handler", "bare", "middleware", "verdict"):
            reading = [*reading, "--live"]
        baseline = _instructions(path, [], False, reading, environment)
        total = _instructions(path, [], True, reading, environment)
        per_event[name] = (total - baseline) / count
    sdk = per_event["SDK parse-only"]
    reads = "one frame per read" if live else "64 KiB reads"
    lines = [f"delivery to a handler in process, {count:,} events, {reads} ({path}):"]
    lines += [
        f"  {name}: {cost:,.0f} instructions/event ({cost / sdk:.2f}x the SDK's)"
        for name, cost in per_event.items()
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--upto", default="dispatch", help="the last stage run (default: all)")
    parser.add_argument("--without", help="a stage left out (e.g. lint, for its cost)")
    parser.add_argument("--file", type=Path, help="the workload file (written if absent)")
    parser.add_argument("--live", action="store_true", help="one frame per read, event by event")
    parser.add_argument(
        "--source-timeout", type=float, help="with --live: the source bounds its own reads"
    )
    parser.add_argument(
        "--proto", action="store_true", help="the events as protobuf frames (64 KiB reads)"
    )
    parser.add_argument(
        "--startup", action="store_true", help="a whole check process on 20 events instead"
    )
    parser.add_argument(
        "--versus-sdk",
        action="store_true",
        help="whole check processes (native, pure) and the SDK's parse-only pass",
    )
    parser.add_argument(
        "--backend", choices=("asyncio", "trio"), default="asyncio", help="the event loop"
    )
    parser.add_argument(
        "--deliver",
        nargs="?",
        const="handler",
        choices=("handler", "bare", "middleware", "verdict", "sdk", "floor"),
        help="delivery to a handler in process, native and pure, beside the SDK and a floor",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measured", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    path: Path = args.file or Path(tempfile.gettempdir()) / f"agui-workload-{args.events}.sse"
    if args.child:
        _child(
            path,
            args.upto,
            args.without,
            args.measured,
            args.live,
            args.source_timeout,
            args.proto,
            args.backend,
            args.deliver,
        )
        return
    with own_bytecode():
        if args.startup:
            print(startup())
            return
        if not path.exists():
            from .workload import encode_sse, events

            path.write_bytes(encode_sse(events(args.events)))
        if args.versus_sdk:
            print(versus_sdk(path))
            return
        if args.deliver:
            print(delivery(path, args.live))
            return
        count = path.read_bytes().count(b"\n\n")  # one blank line ends each SSE event
        if args.proto and args.live:
            parser.error("--proto reads in 64 KiB reads only, not --live")
        reading = ["--live"] if args.live else []
        if args.source_timeout is not None:
            reading += ["--source-timeout", str(args.source_timeout)]
        if args.proto:
            reading.append("--proto")
        if args.backend != "asyncio":
            reading += ["--backend", args.backend]
        stages = ["--upto", args.upto] + (["--without", args.without] if args.without else [])
        baseline = _instructions(path, stages, False, reading)
        total = _instructions(path, stages, True, reading)
        mode = (
            "protobuf frames, 64 KiB reads" if args.proto else " ".join(reading) or "64 KiB reads"
        )
        but = f" but {args.without}" if args.without else ""
        print(
            f"pipeline up to {args.upto}{but}, {count:,} events, {mode} ({path}): "
            f"{(total - baseline) / count:,.0f} instructions/event"
        )


if __name__ == "__main__":
    main()
