"""Turn whatever the caller has into an async iterator of byte chunks.

Each chunk is one read: the engine decodes and processes it at once, so a
chunk is a batch boundary and nothing waits for more bytes than arrived.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable
from typing import Any, Union

import anyio

READ_SIZE = 1 << 20
"""Bytes per read from a file or stdin: large reads mean large batches."""

Source = Union[
    bytes,
    bytearray,
    memoryview,
    str,
    "os.PathLike[str]",
    Iterable[bytes | str],
    AsyncIterable[bytes | str],
]
"""What :meth:`agui_pipeline.Pipeline.run` accepts.

- ``bytes`` / ``str``: the stream itself (``str`` is encoded as UTF-8);
- the string ``"-"``: standard input;
- a path (:class:`os.PathLike`, e.g. :class:`pathlib.Path`): a file;
- a sync or async iterable of ``bytes`` or ``str`` chunks, which includes an
  anyio byte stream and an httpx ``Response.aiter_raw()``.
"""


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
    elif isinstance(source, str):
        if source == "-":
            async for chunk in _read_stdin():
                yield chunk
        else:
            yield source.encode("utf-8")
    elif isinstance(source, os.PathLike):
        async with await anyio.open_file(os.fspath(source), "rb") as file:
            while chunk := await file.read(READ_SIZE):
                yield chunk
    elif isinstance(source, AsyncIterable):
        # The stream owns the iterator it was given: stopping early closes it
        # (an async generator's finally runs, a response body is released).
        iterator = aiter(source)
        try:
            async for piece in iterator:
                yield _as_bytes(piece)
        finally:
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                await aclose()
    elif isinstance(source, Iterable):
        sync_iterator = iter(source)
        try:
            for piece in sync_iterator:
                yield _as_bytes(piece)
        finally:
            close = getattr(sync_iterator, "close", None)
            if close is not None:
                close()
    else:
        raise TypeError(f"cannot read events from a {type(source).__name__}")


def may_stall(source: Source) -> bool:
    """Whether reading ``source`` can wait on a producer (a pipe, a socket, a generator)."""
    return source == "-" or isinstance(source, AsyncIterable)


async def _read_stdin() -> AsyncIterator[bytes]:
    # read1 returns what is available rather than waiting to fill the buffer,
    # so a live pipe (`producer | agui-pipeline check -`) is processed as it flows.
    stdin: Any = sys.stdin.buffer  # a BufferedReader, which has read1
    while chunk := await anyio.to_thread.run_sync(stdin.read1, READ_SIZE):
        yield chunk
