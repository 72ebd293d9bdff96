"""Checking one source: a stream file, a directory's recording, stdin (``-``), a conformance
fixture, an fsspec URL or an agent's URL, read through the default pipeline and judged by
the gate. ``check`` and :mod:`agui_pipeline.fleet` both check a source with
:func:`check_source`; only what they make of the :class:`Checked` differs.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from agui_pipeline._checking import (
    FAILED,
    PASSED,
    UNCHECKED,
    CheckError,
    missing_extra,
    recordings,
)
from agui_pipeline._checking.gate import Gate
from agui_pipeline._engine.incremental import run_in_loop
from agui_pipeline._engine.pipeline import Pipeline
from agui_pipeline._engine.result import RunResult
from agui_pipeline._engine.sources import Source, iter_chunks_sync, may_stall
from agui_pipeline.declaration import Declaration
from agui_pipeline.delivery.escaping import printable_name
from agui_pipeline.delivery.locate import CHANGED, Stamp, stamp
from agui_pipeline.delivery.redaction import redact_in, redact_source
from agui_pipeline.errors import Diagnostic, InputRejected, UsageError
from agui_pipeline.model.declared import derive_declaration, read_declaration
from agui_pipeline.options import Options
from agui_pipeline.stage import Stage, StageFactory, StreamContext
from agui_pipeline.subscribers import Sink

if TYPE_CHECKING:
    from agui_pipeline._checking.meter import StreamMeter
    from agui_pipeline.testing.conformance import Fixture

# Start-up is most of `check` on a short file, so what only some paths need is imported
# there: pydantic (the run input's and a declaration's models), the HTTP client for a URL,
# anyio (with asyncio under it) for a URL or stdin — a file is checked through the sync
# shell — and the conformance runner for a file that may be a fixture.


@dataclass(frozen=True, slots=True)
class CheckSettings:
    """How every source of a check is read and judged (picklable: a worker process or a
    cluster's worker checks with it)."""

    gate: Gate = field(default_factory=Gate)
    framing: str | None = None
    peer_version: str | None = None
    declaration: Declaration | None = None
    """The agent's declaration, read once (:func:`declaration_from_files`) and carried to
    every process."""
    input: str | None = None
    """The run input's file, the same for every source (``--input``)."""
    run_input: str | None = None
    """The pattern that names each recording's own run input (``--run-input``)."""
    headers: tuple[str, ...] = ()
    """A URL's request headers, as ``NAME:VALUE``."""
    idle_timeout: float | None = 300.0
    max_duration: float | None = None
    transport: str = "httpx"
    middleware: tuple[str, ...] = ()
    """The stage factories to insert, as ``MODULE:FACTORY`` (each process loads them itself)."""
    conversation: bool = False
    """Whether the report shows each stream's Conversation (``--conversation``): then every
    stream is read by the pipeline, which builds it, never by the native judge alone."""


@dataclass(slots=True)
class Checked:
    """One source, checked: the result (``None`` when it could not be read) and its status."""

    name: str
    result: RunResult | None
    status: int
    """:data:`~agui_pipeline._checking.PASSED`, ``FAILED`` or ``UNCHECKED``."""
    failures: list[str] = field(default_factory=list)
    """Why the source fails the check (empty when it passes)."""
    error: str | None = None
    """The usage or I/O error that kept the source from being checked."""
    stream_file: str | None = None
    """The stream's file, which findings are placed in by line and column (``None`` for
    stdin, a URL or a conformance fixture)."""
    judged: tuple[int, int] | None = None
    """The stream file's size and modification time as it was checked (``locate.CHANGED``:
    it changed while it was read): findings are placed only in that same file."""


def check_source(
    name: str,
    settings: CheckSettings,
    *,
    meter: StreamMeter | None = None,
    sink: Sink | None = None,
) -> Checked:
    """Check one source; what keeps it from being checked (a :class:`CheckError`) becomes
    a :class:`Checked` with status ``UNCHECKED`` and the error.

    The source is named in the report as it may be written: a URL of any scheme redacted,
    a file name that is not UTF-8 with its bytes escaped; so is any error about it.
    ``meter`` draws the progress line while the source is read (and is closed when it
    ends); ``sink`` sees the delivered events (the fleet's run fields).
    """
    shown = printable_name(redact_source(name))
    try:
        result, stream_file, judged = _run_source(name, settings, meter, sink)
    except CheckError as error:
        said = printable_name(redact_in(str(error), name))
        return Checked(shown, None, UNCHECKED, error=said)
    settings.gate.tune(result)
    failures = settings.gate.failures(result)
    status = FAILED if failures else PASSED
    return Checked(shown, result, status, failures, stream_file=stream_file, judged=judged)


def _run_source(
    name: str, settings: CheckSettings, meter: StreamMeter | None, sink: Sink | None
) -> tuple[RunResult, str | None, Stamp | None]:
    """The result, the file its findings are placed in, and that file's stamp as it was
    read (``CHANGED`` when it changed under the read)."""
    raw_input, input_name = _run_input(name, settings)
    sinks: list[Sink] = [meter] if meter else []
    if sink is not None:
        sinks.append(sink)
    if name.startswith(("http://", "https://")):
        return _check_url(name, settings, raw_input, meter), None, None
    source, stream_file, fixture = _local_source(name)
    peer = settings.peer_version
    if fixture is not None:
        # A conformance fixture: its stream, its input unless --input overrides it.
        source = fixture.sse()
        raw_input = raw_input if raw_input is not None else fixture.raw_input()
        peer = peer or fixture.peer_max_protocol_version
    pipeline = build_pipeline(replace(settings, peer_version=peer), sinks, meter)
    body, outgoing = _outgoing(raw_input, input_name, peer)
    try:
        before = stamp(stream_file) if stream_file is not None else None
        judged = _judged(pipeline, source, settings, body, outgoing)
        if isinstance(judged, RunResult):
            result = judged
        else:
            result = _drain(pipeline, judged, body, outgoing, conversation=settings.conversation)
        if stream_file is None:
            return result, None, None
        return result, stream_file, before if stamp(stream_file) == before else CHANGED
    except OSError as error:
        raise CheckError(f"cannot read {redact_source(name)}: {error}") from error
    finally:
        if meter is not None:
            meter.close()


def _check_url(
    url: str,
    settings: CheckSettings,
    raw_input: dict[str, Any] | None,
    meter: StreamMeter | None,
) -> RunResult:
    """An agent's URL, checked with the run input POSTed to it."""
    try:
        from agui_pipeline._checking.url import check_url
        from agui_pipeline.http.client import RequestFailed
    except ModuleNotFoundError as error:
        raise missing_extra(error, "http", "checking a URL") from None
    try:
        result: RunResult = check_url(
            url,
            framing=settings.framing,
            peer_version=settings.peer_version,
            headers=settings.headers,
            run_input=raw_input,
            capabilities=settings.declaration,
            progress=meter,
            idle_timeout=settings.idle_timeout,
            max_duration=settings.max_duration,
            transport=settings.transport,
            middleware=[load_middleware(spec) for spec in settings.middleware],
            conversation=settings.conversation,
        )
    except (ValueError, InputRejected, RequestFailed) as error:
        raise CheckError(str(error)) from error
    return result


def _local_source(name: str) -> tuple[Source, str | None, Fixture | None]:
    """What ``name`` (a file, an fsspec URL or ``-``) is read from, the file findings are
    placed in (``None``: placed by event), and the conformance fixture it holds, if any."""
    if name == "-":
        return "-", None, None
    if recordings.is_stored(name):
        # Findings in object storage are placed by event, not line (no second read).
        source, fixture = _open_stored(name)
        return source, None, fixture
    path = Path(name)
    _is_a_file(name)
    fixture = _fixture(path)
    return path, None if fixture is not None else name, fixture


def _is_a_file(name: str, what: str = "") -> None:
    """Refuse ``name`` unless it is a regular file, saying what it is: a FIFO or a device
    is never opened (it may never end, or never begin), a directory found in a listing
    is one that could not be listed."""
    from agui_pipeline._json import not_a_file

    try:
        kind = not_a_file(name)
    except FileNotFoundError:
        raise CheckError(f"{what}no such file: {name}") from None
    except OSError as error:
        raise CheckError(f"{what}cannot read {name}: {error.strerror or error}") from None
    if kind == "a directory":
        try:
            os.scandir(name).close()
        except OSError as error:
            kind += f" that cannot be listed ({error.strerror or error})"
    if kind is not None:
        raise CheckError(f"{what}{name} is {kind}, not a file: it is not read")


def _outgoing(
    raw_input: dict[str, Any] | None, input_name: str | None, peer: str | None
) -> tuple[dict[str, Any] | None, list[Diagnostic]]:
    """The run input as it would be sent, and what the outgoing boundary said of it: the
    same boundary a live run's input crosses, so a file and a URL judge alike."""
    if raw_input is None:
        return None, []
    from agui_pipeline.model.run_input import prepare_input

    try:
        prepared = prepare_input(raw_input, peer_max_protocol_version=peer)
    except InputRejected as error:
        raise CheckError(f"the run input {input_name}: {error}") from error
    return prepared.body, list(prepared.diagnostics)


def build_pipeline(
    settings: CheckSettings, sinks: Sequence[Sink] = (), meter: StreamMeter | None = None
) -> Pipeline:
    """The pipeline a file or stdin is checked with; ``--middleware`` loaded (a usage error
    when it does not load, or asks for a chunk form its place cannot give)."""
    try:
        return Pipeline(
            middleware=[load_middleware(spec) for spec in settings.middleware],
            framing=settings.framing,
            peer_max_protocol_version=settings.peer_version,
            capabilities=settings.declaration,
            sinks=sinks,
            on_diagnostic=meter.diagnostic if meter else None,
            idle_timeout=settings.idle_timeout,
            max_duration=settings.max_duration,
        )
    except UsageError as error:
        raise CheckError(f"--middleware: {error}") from None


def _drain(
    pipeline: Pipeline,
    source: Source,
    run_input: dict[str, Any] | None,
    said: list[Diagnostic],
    *,
    conversation: bool = False,
) -> RunResult:
    """Judge one stream keeping none of its events (so a stream of any length fits), with
    ``said`` — the outgoing boundary's diagnostics on the run input — reported first.

    A file or bytes cannot stall, so they go through the sync shell: the same stages and
    verdict as :meth:`EventStream.drain`, without an event loop, so ``check FILE`` never
    imports anyio or asyncio (a fifth of its start-up). Stdin can stall, and its idle
    window and deadline are the async shell's clock; its Conversation is kept only for a
    report that shows it (``conversation``), so the native core may judge it without
    building its events.
    """
    if may_stall(source):
        stream = pipeline.open(source, run_input=run_input)
        stream.context.diagnostics.extend(said)
        return run_in_loop(partial(stream.drain, conversation=conversation))
    incremental = pipeline.incremental(run_input=run_input)
    incremental.context.diagnostics.extend(said)
    for chunk in iter_chunks_sync(source):
        incremental.feed(chunk)
        if incremental.ended:
            break
    result = incremental.close()
    result.events = []  # as drain(): the report needs no events
    return result


def _judged(
    pipeline: Pipeline,
    source: Source,
    settings: CheckSettings,
    run_input: dict[str, Any] | None,
    said: list[Diagnostic],
) -> RunResult | Source:
    """The result of a stream the native judge finds clean, judged without building its
    events (``_engine/judge.py``); otherwise what the pipeline reads, from the stream's start
    (and reports what the outgoing boundary ``said`` of the run input, if anything).

    A file or a document's bytes are read again; a recording in object storage is read once,
    the judge holding its reads for the pipeline. Stdin is not judged: it may stall, and its
    idle window is the async shell's.
    """
    if settings.conversation or said or may_stall(source):
        return source
    from agui_pipeline._engine.judge import judge_file, judge_reads

    if isinstance(source, Path | bytes):
        return judge_file(pipeline, source, run_input) or source
    if isinstance(source, Iterator):
        return judge_reads(pipeline, source, run_input)
    return source


def _fixture(path: Path) -> Fixture | None:
    """The conformance fixture in ``path``, when it holds one (a JSON object with ``stream``).

    A fixture is a document, read whole: a file past ``MAX_DOCUMENT`` is none (a 300 MB
    line that opens like one would otherwise be read into memory before it is judged)."""
    from agui_pipeline._json import MAX_DOCUMENT

    with path.open("rb") as file:
        first = file.readline(1 << 16).strip()
        too_long = os.fstat(file.fileno()).st_size > MAX_DOCUMENT
    if too_long or not _may_be_fixture(first):
        return None
    from agui_pipeline.testing import conformance

    try:
        return conformance.load_fixture(path)
    except conformance.FixtureError:
        return None


def _may_be_fixture(first_line: bytes) -> bool:
    """A stream file never starts with a line that is not a whole value, while a fixture
    is a pretty-printed document: only then is the whole file read and parsed."""
    if not first_line.startswith(b"{"):
        return False
    try:
        head = orjson.loads(first_line)
    except orjson.JSONDecodeError:
        return True
    return not (type(head) is dict and "stream" not in head)  # else a JSON-lines stream


def _open_stored(name: str) -> tuple[Source, Fixture | None]:
    """A recording named by an fsspec URL, read once from its start: the stream to check,
    and the fixture it holds (if it is one)."""
    try:
        reads = recordings.read_stored(name)
        first = next(reads, b"")
        if not _may_be_fixture(first.split(b"\n", 1)[0][: 1 << 16].strip()):
            return _resumed(first, reads), None
        data = first + b"".join(reads)
    except ModuleNotFoundError as error:
        raise missing_extra(error, "dask", f"reading {name}") from None
    except FileNotFoundError:
        raise CheckError(f"no such file: {redact_source(name)}") from None
    except (OSError, ImportError, ValueError) as error:
        raise CheckError(f"cannot read {redact_source(name)}: {error}") from None
    from agui_pipeline.testing import conformance

    try:
        return data, conformance.parse_fixture(data, name)
    except conformance.FixtureError:
        return data, None


def _resumed(first: bytes, reads: Iterator[bytes]) -> Iterator[bytes]:
    """``first`` and the reads after it, closing the reader however the stream ends."""
    try:
        yield first
        yield from reads
    finally:
        close = getattr(reads, "close", None)
        if close is not None:
            close()


def read_input(path: Path) -> dict[str, Any]:
    """The run input in ``path`` (``--input``): a JSON object."""
    from agui_pipeline._json import read_document

    try:
        data = read_document(path)
    except OSError as error:
        raise CheckError(f"cannot read the run input {path}: {error}") from None
    return _input_document(data, str(path))


def _input_document(data: bytes, where: str) -> dict[str, Any]:
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise CheckError(f"cannot read the run input {where}: {error}") from None
    if type(document) is not dict:
        raise CheckError(f"the run input {where} is not a JSON object")
    return document


def _run_input(name: str, settings: CheckSettings) -> tuple[dict[str, Any] | None, str | None]:
    """The run input ``name`` is judged against, and where it was read: ``--input``'s for
    every source, or the one ``--run-input`` pairs with this recording by its name."""
    if settings.input is not None:
        return read_input(Path(settings.input)), settings.input
    if settings.run_input is None:
        return None, None
    if name == "-" or name.startswith(("http://", "https://")):
        raise CheckError(f"--run-input pairs recordings with their inputs by name: {name} is none")
    where = recordings.paired(settings.run_input, name)
    if not recordings.is_stored(where):
        _is_a_file(where, f"no run input for {name}: ")
        return read_input(Path(where)), where
    from agui_pipeline._json import MAX_DOCUMENT

    try:
        data = recordings.read_stored_document(where, MAX_DOCUMENT)
    except ModuleNotFoundError as error:
        raise missing_extra(error, "dask", f"reading {where}") from None
    except FileNotFoundError:
        said = f"no such file: {redact_source(where)}"
        raise CheckError(f"no run input for {redact_source(name)}: {said}") from None
    except (OSError, ImportError, ValueError) as error:
        said = redact_in(str(error), where)
        raise CheckError(f"cannot read the run input {redact_source(where)}: {said}") from None
    return _input_document(data, redact_source(where)), where


def declaration_from_files(
    capabilities: str | None, agent_resource: str | None
) -> Declaration | None:
    """The declaration ``--capabilities`` or ``--agent-resource`` names, read once.

    Who made the mistake decides the answer. A file the operator named that is not there,
    is a directory or cannot be opened is a usage error naming it (exit 2). A file that
    opens but cannot be used as a declaration — not JSON, not an object, a malformed
    field, a member named twice, over the size or depth limit — is the producer's: it is
    read as the library reads it, unusable, and every stream is judged as undeclared with
    ``reconcile.declaration-unusable`` saying why, for "a rejected or absent declaration
    MUST NOT prevent a run" (``/spec/1.1/basic/capabilities``, Error Handling).
    """
    path = capabilities or agent_resource
    if path is None:
        return None
    _openable(path)
    if capabilities:
        return read_declaration(Path(path))
    return derive_declaration(path)


def _openable(path: str) -> None:
    """Refuse, naming it, a file the command line was given that cannot be opened."""
    try:
        kind = os.stat(path).st_mode
        if stat.S_ISDIR(kind):
            raise CheckError(f"{path} is a directory, not a file")
        if not stat.S_ISREG(kind):
            raise CheckError(f"{path} is not a regular file")
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise CheckError(f"no such file: {path}") from None
    except OSError as error:
        raise CheckError(f"cannot open {path}: {error.strerror or error}") from None


def load_middleware(spec: str) -> StageFactory:
    """The stage factory ``--middleware MODULE:FACTORY`` names, built once to see that it
    builds: a failure is a usage error naming the spec and the cause, not a traceback.

    The current directory is searched first, as ``python -m`` would (the installed
    ``agui-pipeline`` script does not put it on the path), so a module of the project
    the command runs in is found.
    """
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise CheckError(
            f"--middleware expects MODULE:FACTORY (a Stage class, or a function from the "
            f"StreamContext to a stage), got {spec!r}"
        )
    import importlib

    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # whatever the user's module raises on import
        raise CheckError(
            f"--middleware {spec}: importing {module_name} failed: {_cause(error)}"
        ) from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        found = "no attribute" if factory is None else f"a {type(factory).__name__}"
        raise CheckError(
            f"--middleware {spec}: module {module_name} has {found} {attribute!r}, "
            "not a stage factory"
        )
    try:
        stage = factory(StreamContext(Options()))
    except Exception as error:  # whatever the user's factory raises
        raise CheckError(
            f"--middleware {spec}: the factory failed when given a StreamContext: "
            f"{_cause(error)} (a factory takes the stream's context and returns a Stage; "
            "one that takes arguments of its own is a function or functools.partial that "
            "supplies them)"
        ) from None
    if not isinstance(stage, Stage):
        raise CheckError(
            f"--middleware {spec}: the factory returned a {type(stage).__name__}, not a Stage"
        )
    return factory  # type: ignore[no-any-return]


def _cause(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
