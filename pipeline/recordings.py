"""Recorded runs wherever they are kept: naming them, and reading one.

``check`` takes paths, directories, globs and fsspec URLs (``s3://bucket/runs/*.sse``,
``file:///archive/``). :func:`expand` turns each into the recordings it names, in one
order every way of checking them shares (one process, ``--jobs``, ``--scheduler``), so
their reports agree. It lists lazily, one directory at a time, so an archive of millions
of files is never held as one list. :func:`open_stored` reads a recording named by a URL
through fsspec (the ``dask`` extra), on whichever machine checks it.

An ``http://`` or ``https://`` URL is not a recording but an agent (``check URL``), and
``-`` is standard input: both pass through as they are.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from typing import IO, Any

RECORDING_SUFFIXES = (".sse", ".jsonl", ".ndjson")
"""The files a directory is checked for (any other file is taken when named or globbed)."""

_GLOB = re.compile(r"[*?[]")


def is_stored(name: str) -> bool:
    """Whether ``name`` is an fsspec URL (``s3://``, ``file://``...) rather than a path,
    ``-`` or an agent's ``http(s)://`` URL."""
    scheme, separator, _ = name.partition("://")
    return bool(separator) and scheme.isidentifier() and scheme not in ("http", "https")


def is_collection(name: str) -> bool:
    """Whether ``name`` stands for several recordings: a directory or a glob."""
    if name == "-" or name.startswith(("http://", "https://")):
        return False
    if is_stored(name):
        filesystem, path = _filesystem(name)
        return bool(_GLOB.search(path)) or bool(filesystem.isdir(path))
    return os.path.isdir(name) or (bool(_GLOB.search(name)) and not os.path.exists(name))


def expand(name: str) -> Iterator[tuple[str, int | None]]:
    """The recordings ``name`` stands for, with their sizes where a listing gave them.

    A file is itself; a directory is every ``*.sse``, ``*.jsonl`` and ``*.ndjson`` file
    under it; a glob (``*``, ``?``, ``[...]``, and ``**`` for any depth of directories)
    is every file it matches. Names are in path order (each directory's entries sorted),
    hidden files and directories are left out, and a directory or glob that names nothing
    is given back as it is, for the check to say so.
    """
    if not is_collection(name):
        yield name, None
        return
    pattern = _GLOB.search(name)
    cut = name.rfind("/", 0, pattern.start()) if pattern else len(name.rstrip("/"))
    # The part before the first wildcard's directory is listed; the rest is matched.
    root, rest = (name[:cut], name[cut + 1 :]) if cut >= 0 else ("", name)
    if root == "" and name.startswith("/"):
        root = "/"
    if pattern:
        keep, depth = _matcher(rest)
    else:
        keep, depth = (lambda relative: relative.endswith(RECORDING_SUFFIXES)), None
    listing = _stored_listing(root) if is_stored(name) else _local_listing
    found = False
    for found_name in _walk(listing, root, "", keep, depth):
        found = True
        yield found_name
    if not found:
        yield name, None


Listing = Callable[[str], list[tuple[str, bool, int | None]]]
"""A directory's entries: name, whether it is a directory, size (``None`` unknown)."""


def _walk(
    listing: Listing, directory: str, relative: str, keep: Callable[[str], bool], depth: int | None
) -> Iterator[tuple[str, int | None]]:
    """Depth first, each directory's entries in name order: the files ``keep`` takes,
    named as ``directory`` is spelt plus their path below it."""
    for entry, is_directory, size in sorted(listing(directory)):
        if entry.startswith("."):
            continue
        path = entry if directory == "" else f"{directory.rstrip('/')}/{entry}"
        if is_directory:
            if depth is None or depth > 1:
                below = None if depth is None else depth - 1
                yield from _walk(listing, path, f"{relative}{entry}/", keep, below)
        elif keep(relative + entry):
            yield path, size


def _local_listing(directory: str) -> list[tuple[str, bool, int | None]]:
    found: list[tuple[str, bool, int | None]] = []
    with os.scandir(directory or ".") as entries:
        for entry in entries:
            if entry.is_dir():
                found.append((entry.name, True, None))
                continue
            try:
                size: int | None = entry.stat().st_size
            except OSError:  # a dangling link: checking it says why
                size = None
            found.append((entry.name, False, size))
    return found


def _stored_listing(root_url: str) -> Listing:
    """A :data:`Listing` of the filesystem ``root_url`` is on; URLs are relative to it."""
    filesystem, root_path = _filesystem(root_url)

    def listing(directory: str) -> list[tuple[str, bool, int | None]]:
        path = root_path + directory[len(root_url) :]
        try:
            entries = filesystem.ls(path, detail=True)
        except FileNotFoundError:
            return []
        filesystem.invalidate_cache(path)  # s3fs would keep every listing otherwise
        return [
            (
                entry["name"].rstrip("/").rsplit("/", 1)[-1],
                entry["type"] == "directory",
                entry.get("size") if entry["type"] != "directory" else None,
            )
            for entry in entries
        ]

    return listing


def _matcher(pattern: str) -> tuple[Callable[[str], bool], int | None]:
    """A glob's test on a path relative to its listed root, and how deep it reaches
    (``None``: any depth, for ``**``)."""
    segments = pattern.split("/")
    regex = ""
    for position, segment in enumerate(segments):
        last = position == len(segments) - 1
        if segment == "**":
            regex += ".*" if last else "(?:[^/]+/)*"
            continue
        regex += _segment(segment) + ("" if last else "/")
    compiled = re.compile(regex)
    depth = None if "**" in segments else len(segments)
    return (lambda relative: compiled.fullmatch(relative) is not None), depth


def _segment(segment: str) -> str:
    """One path segment of a glob as a regular expression: ``*``, ``?`` and ``[...]``
    (``[!...]`` negated) never cross a ``/``."""
    out, position = "", 0
    while position < len(segment):
        char = segment[position]
        position += 1
        if char == "*":
            out += "[^/]*"
        elif char == "?":
            out += "[^/]"
        elif char == "[" and (close := segment.find("]", position + 1)) > 0:
            members = segment[position:close]
            negated = members.startswith("!")
            members = members[1:] if negated else members
            out += "[" + ("^" if negated else "") + members.replace("\\", "\\\\") + "]"
            position = close + 1
        else:
            out += re.escape(char)
    return out


# -- reading a stored recording ----------------------------------------------------------


def _filesystem(url: str) -> tuple[Any, str]:
    """fsspec's filesystem for ``url`` and the path on it (the ``dask`` extra)."""
    import fsspec  # the dask extra: imported only when a URL is named

    filesystem, path = fsspec.core.url_to_fs(url)
    return filesystem, str(path)


def open_stored(url: str) -> IO[bytes]:
    """Open the recording at ``url`` for reading. The storage library retries what may
    pass (s3fs: throttling, timeouts, dropped connections); what it gives up on, or
    an error that says the object cannot be read, raises :class:`OSError` naming it."""
    filesystem, path = _filesystem(url)
    try:
        file: IO[bytes] = filesystem.open(path, "rb")
    except OSError:
        raise
    except Exception as error:  # the storage library's own (botocore's, aiohttp's)
        raise OSError(f"{type(error).__name__}: {error}") from error
    return file


def read_stored(url: str) -> Iterator[bytes]:
    """The recording at ``url``, one read (``READ_SIZE``) at a time."""
    from .sources import READ_SIZE

    with open_stored(url) as file:
        while True:
            try:
                chunk = file.read(READ_SIZE)
            except OSError:
                raise
            except Exception as error:  # the storage library gave up on a read
                raise OSError(f"{type(error).__name__}: {error}") from error
            if not chunk:
                return
            yield chunk


def paired(pattern: str, recording: str) -> str:
    """Where ``recording``'s run input is, by ``--run-input``'s ``pattern``: ``{dir}`` is
    the recording's directory, ``{name}`` its file name, ``{stem}`` that name without
    its last suffix (``runs/a.sse`` with ``{dir}/{stem}.input.json`` → ``runs/a.input.json``)."""
    directory, _, name = recording.rpartition("/")
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    try:
        return pattern.format(dir=directory or ".", name=name, stem=stem)
    except (KeyError, IndexError, ValueError) as error:
        raise ValueError(
            f"--run-input {pattern!r}: expected a pattern with {{dir}}, {{name}} or {{stem}} "
            f"({error})"
        ) from None
