"""Turn whatever the caller has into an async iterator of byte chunks.

Each chunk is one read: the engine decodes and processes it at once, so a
chunk is a batch boundary and nothing waits for more bytes than arrived.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Generator,
    Iterable,
    Iterator,
)
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    import anyio

# anyio is imported by the async readers that use it, so the sync shell never needs it.

READ_SIZE = 1 << 20
"""Bytes per read from a file or stdin: large reads mean large batches."""

Source: TypeAlias = (
    bytes
    | bytearray
    | memoryview
    | str
    | os.PathLike[str]
    | Iterable[bytes | str]
    | AsyncIterable[bytes | str]
)
"""What :meth:`agui_pipeline.Pipeline.run` accepts. One rule tells content from a location:

- a ``str`` is a file path, as for :func:`open` (``"run.sse"``), and so is a
  :class:`os.PathLike` such as :class:`pathlib.Path`; the string ``"-"`` is
  standard input;
- the stream's content is ``bytes`` (``bytearray``, ``memoryview``): encode text
  first, ``text.encode()``;
- a sync or async iterable of chunks, ``bytes`` or ``str`` (a ``str`` chunk is
  content, encoded as UTF-8), which includes an anyio byte stream and an httpx
  ``Response.aiter_raw()``.

A ``str`` that names no file raises :class:`FileNotFoundError` saying so; one
that reads as stream text (``"data: {...}"``, JSON, several lines) raises
:class:`ValueError` naming the rule, never being read as content.
"""


class SourceTimedOut(Exception):
    """Raised by a source that bounds its own reads when one waited that long (the
    HTTP client's body, on its read timeout); the engine ends the stream there and
    reports the idle window or the deadline (``EventStream(source_timeout=...)``)."""


def check_source(source: Source) -> None:
    """Refuse, before anything is opened, a value no reader takes."""
    if not isinstance(source, bytes | bytearray | memoryview | str | os.PathLike) and not (
        isinstance(source, AsyncIterable | Iterable)
    ):
        raise TypeError(f"cannot read events from a {type(source).__name__}")


def _as_bytes(chunk: bytes | bytearray | memoryview | str) -> bytes:
    if type(chunk) is bytes:
        return chunk
    if isinstance(chunk, str):
        return chunk.encode("utf-8")
    if isinstance(chunk, bytes | bytearray | memoryview):
        return bytes(chunk)
    raise TypeError(f"a source chunk must be bytes or str, not {type(chunk).__name__}")


async def iter_chunks(source: Source) -> AsyncGenerator[bytes, None]:
    """Yield the source's bytes one read at a time."""
    if isinstance(source, bytes | bytearray | memoryview):
        yield bytes(source)
    elif isinstance(source, str) and source == "-":
        async for chunk in _read_stdin():
            yield chunk
    elif isinstance(source, str | os.PathLike):
        async with await _open(source) as file:
            while chunk := await file.read(READ_SIZE):
                yield chunk
    elif isinstance(source, AsyncIterable):
        # The stream owns the iterator it was given: stopping early closes it
        # (an async generator's finally runs, a response body is released).
        iterator = aiter(source)
        try:
            async for piece in iterator:
                # bytes as they come: no call per read (a live read carries one event)
                yield piece if type(piece) is bytes else _as_bytes(piece)
        finally:
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                await aclose()
    elif isinstance(source, Iterable):
        pieces = _read_iterable(source)
        try:
            for chunk in pieces:
                yield chunk
        finally:
            pieces.close()  # closes the caller's iterator too, as the sync shell does
    else:
        raise TypeError(f"cannot read events from a {type(source).__name__}")


def iter_chunks_sync(source: Source) -> Iterator[bytes]:
    """:func:`iter_chunks` without a loop, for the sync shell; an async iterable
    cannot be read so, and raises ``TypeError`` saying what to call instead."""
    if isinstance(source, bytes | bytearray | memoryview):
        yield bytes(source)
    elif isinstance(source, str) and source == "-":
        stdin: Any = sys.stdin.buffer
        while chunk := stdin.read1(READ_SIZE):
            yield chunk
    elif isinstance(source, str | os.PathLike):
        try:
            file = open(source, "rb")  # noqa: SIM115 - closed below, as the generator ends
        except (OSError, ValueError) as error:
            raise _refused_path(source, error) from None
        with file:
            while chunk := file.read(READ_SIZE):
                yield chunk
    elif isinstance(source, AsyncIterable):
        raise TypeError(
            "an async iterable cannot be read without an event loop: "
            "use `await pipeline.run(source)` in async code"
        )
    elif isinstance(source, Iterable):
        yield from _read_iterable(source)
    else:
        raise TypeError(f"cannot read events from a {type(source).__name__}")


def _read_iterable(source: Iterable[bytes | str]) -> Generator[bytes, None, None]:
    """A sync iterable's chunks as bytes; the stream owns the iterator it was given, so
    stopping early closes it (both shells read a sync iterable through this)."""
    sync_iterator = iter(source)
    try:
        for piece in sync_iterator:
            yield _as_bytes(piece)
    finally:
        close = getattr(sync_iterator, "close", None)
        if close is not None:
            close()


_STREAM_TEXT = ("data:", ":", "{", "[", "event:", "id:", "retry:")
"""How a stream's text starts (SSE fields and comments, JSON): not how a path does."""


async def _open(path: str | os.PathLike[str]) -> anyio.AsyncFile[bytes]:
    """Open a file source; a ``str`` that is stream text, not a path, is told so."""
    import anyio

    try:
        return await anyio.open_file(path, "rb")
    except (OSError, ValueError) as error:
        raise _refused_path(path, error) from None


def _refused_path(path: str | os.PathLike[str], error: OSError | ValueError) -> Exception:
    """The error for a path that cannot be opened; a ``str`` that is stream text is told so."""
    if not isinstance(path, str):
        return error
    rule = "a str source is a file path, like open(); pass stream content as bytes"
    if "\n" in path or path.lstrip().startswith(_STREAM_TEXT):
        excerpt = path if len(path) <= 40 else path[:40] + "…"
        return ValueError(f"{excerpt!r} reads as stream text, not a file: {rule} (text.encode())")
    if isinstance(error, FileNotFoundError):
        return FileNotFoundError(errno.ENOENT, f"no such file ({rule})", path)
    return error


class ByteReads:
    """A live source whose reads are ``bytes`` already and whose generator the stream
    may close: an HTTP client's response body (:class:`~agui_pipeline.HttpAgent`).

    The engine reads the generator itself (:func:`open_reads`), without
    :func:`iter_chunks`'s generator around it: one frame fewer on every read and on
    every wait — 2,700 instructions a live read over httpx
    (``benchmarks/http_instructions.py``).
    """

    __slots__ = ("reads",)

    def __init__(self, reads: AsyncGenerator[bytes, None]) -> None:
        self.reads = reads

    def __aiter__(self) -> AsyncGenerator[bytes, None]:
        return self.reads


def open_reads(source: Source) -> AsyncGenerator[bytes, None]:
    """The source's reads as one async generator, which the reader closes."""
    if type(source) is ByteReads:
        return source.reads
    return iter_chunks(source)


def may_stall(source: Source) -> bool:
    """Whether reading ``source`` can wait on a producer (a pipe, a socket, a generator)."""
    return (isinstance(source, str) and source == "-") or isinstance(source, AsyncIterable)


async def _read_stdin() -> AsyncIterator[bytes]:
    """Reads of stdin as they arrive, so a live pipe (`producer | agui-pipeline check -`)
    is processed as it flows.

    A pipe, socket or terminal is waited on by the event loop (``anyio.wait_readable``)
    and then read once for what is there, so the idle window and the deadline end the
    stream, and the process, while the producer is silent: no thread is left blocked in a
    read. A regular file redirected in cannot stall and is read plainly. Where the loop
    cannot wait on a file descriptor (Windows), the read waits in a worker thread that is
    abandoned when cancelled; that thread then lasts until stdin delivers or closes.
    """
    import anyio

    stdin: Any = sys.stdin.buffer  # a BufferedReader, which has read1
    try:
        fd = stdin.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by something without a descriptor
        fd = -1
    if fd < 0 or sys.platform == "win32" or stat.S_ISREG(os.fstat(fd).st_mode):
        while chunk := await anyio.to_thread.run_sync(
            stdin.read1, READ_SIZE, abandon_on_cancel=True
        ):
            yield chunk
        return
    while True:
        await anyio.wait_readable(fd)
        if not (chunk := os.read(fd, READ_SIZE)):  # readable and empty: the writer closed
            return
        yield chunk
