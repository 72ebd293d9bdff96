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
import stat
import string
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

import orjson
from agui_pipeline._json import not_a_file
from agui_pipeline.delivery.redaction import redact_in, redact_source

RECORDING_SUFFIXES = (".sse", ".jsonl", ".ndjson", ".json")
"""The files a directory is checked for; a ``.json`` one only when it holds a stream (any
file is taken when named or globbed)."""

_GLOB = re.compile(r"[*?[]")
_HEAD = 1 << 16
"""How much of a ``.json`` file is read to tell a recording from a declaration or an input."""


class NothingFound(FileNotFoundError):
    """A directory with no recording under it, or a glob that matches no file."""


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
        with storage_errors(name):
            filesystem, path = _filesystem(name)
            return bool(_GLOB.search(path)) or bool(filesystem.isdir(path))
    return os.path.isdir(name) or (bool(_GLOB.search(name)) and not os.path.exists(name))


def expand(name: str) -> Iterator[tuple[str, int | None]]:
    """The recordings ``name`` stands for, with their sizes where a listing gave them.

    A file is itself. A directory is, as a linter takes one, every file under it named
    for a stream (``*.sse``, ``*.jsonl``, ``*.ndjson``) and every ``*.json`` one that holds
    a stream (a JSON array, JSON lines of events, a conformance fixture), not a
    declaration or a run input beside them. A glob (``*``, ``?``, ``[...]``, and ``**``
    for any depth of directories) is every file it matches. Names are in path order
    (each directory's entries sorted), hidden files and directories are left out, and a
    directory or glob that names nothing raises :class:`NothingFound` once listed.

    Each directory is listed once, however many links lead to it (``ln -s . again`` is no
    loop), and at any depth (the walk keeps its own stack). A directory that cannot be
    listed, and a FIFO or a device among the files, is named with the recordings, so
    checking it says why and the rest are checked.
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
    place = _Stored(root) if is_stored(name) else _Local()
    matches, depth = _matcher(rest) if pattern else (None, None)

    def keep(relative: str, path: str) -> bool:
        if matches is not None:  # a glob takes any file it matches
            return matches(relative)
        if not relative.endswith(RECORDING_SUFFIXES):
            return False
        return not relative.endswith(".json") or _holds_a_stream(place, path)

    found = False
    with storage_errors(name):
        for recording in _walk(place, root, keep, depth):
            found = True
            yield recording
    if not found:
        if pattern:
            raise NothingFound(f"no file matches {redact_source(name)}")
        raise NothingFound(
            f"no recordings under {redact_source(name)} (files named "
            f"{', '.join(RECORDING_SUFFIXES)}; a .json one holding a stream or a fixture)"
        )


class _Local:
    """This machine's file system, for :func:`expand`."""

    def entries(self, directory: str) -> list[tuple[str, bool, int | None]]:
        """A directory's entries: name, whether it is a directory, size (``None``: unknown,
        or not a regular file). A link is what it leads to."""
        found: list[tuple[str, bool, int | None]] = []
        with os.scandir(directory or ".") as entries:
            for entry in entries:
                try:
                    status = entry.stat()
                except OSError:  # a dangling link: checking it says why
                    found.append((entry.name, False, None))
                    continue
                if stat.S_ISDIR(status.st_mode):
                    found.append((entry.name, True, None))
                elif not_a_file(entry.path, status.st_mode) is None:
                    found.append((entry.name, False, status.st_size))
                else:  # a FIFO, a device: never opened here, checking it says what it is
                    found.append((entry.name, False, None))
        return found

    def identity(self, directory: str) -> object:
        """What two paths to one directory share (its device and inode)."""
        status = os.stat(directory or ".")
        return status.st_dev, status.st_ino

    def head(self, path: str) -> bytes:
        kind = not_a_file(path)  # a FIFO is never opened: it may have no writer
        if kind is not None:
            raise OSError(f"{path} is {kind}")
        with open(path, "rb") as file:
            return file.readline(_HEAD)

    def whole(self, path: str) -> bytes:
        from agui_pipeline._json import read_document

        return read_document(path)


class _Stored:
    """A filesystem fsspec reaches, for :func:`expand`: paths are URLs below ``root_url``."""

    def __init__(self, root_url: str) -> None:
        self.root_url = root_url
        self.filesystem, self.root_path = _filesystem(root_url)

    def path(self, url: str) -> str:
        return self.root_path + url[len(self.root_url) :]

    def identity(self, directory: str) -> object:
        """Object storage has no links: a directory is its path."""
        return self.path(directory).rstrip("/")

    def entries(self, directory: str) -> list[tuple[str, bool, int | None]]:
        path = self.path(directory)
        try:
            entries = self.filesystem.ls(path, detail=True)
        except FileNotFoundError:
            return []
        self.filesystem.invalidate_cache(path)  # s3fs would keep every listing otherwise
        return [
            (
                entry["name"].rstrip("/").rsplit("/", 1)[-1],
                entry["type"] == "directory",
                entry.get("size") if entry["type"] != "directory" else None,
            )
            for entry in entries
        ]

    def head(self, url: str) -> bytes:
        data: bytes = self.filesystem.cat_file(self.path(url), start=0, end=_HEAD)
        return data.split(b"\n", 1)[0]

    def whole(self, url: str) -> bytes:
        from agui_pipeline._json import MAX_DOCUMENT

        data: bytes = self.filesystem.cat_file(self.path(url), start=0, end=MAX_DOCUMENT + 1)
        if len(data) > MAX_DOCUMENT:
            raise OSError(f"{url} holds more than {MAX_DOCUMENT:,} bytes")
        return data


def _walk(
    place: _Local | _Stored,
    root: str,
    keep: Callable[[str, str], bool],
    depth: int | None,
) -> Iterator[tuple[str, int | None]]:
    """Depth first, each directory's entries in name order: the files ``keep`` takes,
    named as ``root`` is spelt plus their path below it.

    Iterative (a stack of the directories being listed, not recursion), and each
    directory is listed once: one reached again by a link is skipped. A directory that
    cannot be listed below the root is yielded itself, for its check to say why.
    """
    visited = {place.identity(root)}
    # Each level: the entries still to visit, the directory's path and relative name, and
    # how many more levels a glob reaches below it (None: any).
    stack = [(iter(sorted(place.entries(root))), root, "", depth)]
    while stack:
        entries, directory, relative, left = stack[-1]
        step = next(entries, None)
        if step is None:
            stack.pop()
            continue
        entry, is_directory, size = step
        if entry.startswith("."):
            continue
        path = entry if directory == "" else f"{directory.rstrip('/')}/{entry}"
        if not is_directory:
            if keep(relative + entry, path):
                yield path, size
            continue
        if left is not None and left <= 1:
            continue
        try:
            seen = place.identity(path)
            if seen in visited:
                continue
            visited.add(seen)
            below = sorted(place.entries(path))
        except OSError:  # what is under it is unknown: checking it says why
            yield path, None
            continue
        stack.append((iter(below), path, f"{relative}{entry}/", None if left is None else left - 1))


def _holds_a_stream(place: _Local | _Stored, path: str) -> bool:
    """Whether a ``.json`` file is a recording: a JSON array, JSON lines of events, or a
    conformance fixture (a declaration or a run input is none of these)."""
    from agui_pipeline.testing import conformance

    try:
        first = place.head(path).strip()
        if first.startswith(b"["):
            return True
        try:
            head = orjson.loads(first)
        except orjson.JSONDecodeError:
            head = None
        if type(head) is dict and "type" in head:
            return True  # JSON lines, an event on its first line
        if not first.startswith(b"{"):
            return False
        conformance.parse_fixture(place.whole(path), path)
    except OSError:
        return True  # unreadable: checking it says why
    except conformance.FixtureError:
        return False
    return True


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


@contextmanager
def storage_errors(url: str) -> Iterator[None]:
    """What the storage library raises while it works on ``url``, as an :class:`OSError`
    whose text is redacted (:func:`redact_in`): botocore quotes the part of a URL it
    choked on (``Invalid bucket name "KEY:SECRET@bucket"``) with no scheme to find it by.
    A missing extra (``ImportError``) and :class:`NothingFound` pass as they are."""
    try:
        yield
    except (ImportError, NothingFound):
        raise
    except FileNotFoundError as error:
        raise FileNotFoundError(redact_in(str(error), url)) from None
    except Exception as error:  # OSError, or the storage library's own (botocore's, aiohttp's)
        said = str(error) if isinstance(error, OSError) else f"{type(error).__name__}: {error}"
        raise OSError(redact_in(said, url)) from None


def open_stored(url: str) -> IO[bytes]:
    """Open the recording at ``url`` for reading. The storage library retries what may
    pass (s3fs: throttling, timeouts, dropped connections); what it gives up on, or
    an error that says the object cannot be read, raises :class:`OSError` naming it."""
    with storage_errors(url):
        filesystem, path = _filesystem(url)
        file: IO[bytes] = filesystem.open(path, "rb")
    return file


def read_stored(url: str) -> Iterator[bytes]:
    """The recording at ``url``, one read (``READ_SIZE``) at a time."""
    from agui_pipeline._engine.sources import READ_SIZE

    with open_stored(url) as file:
        while True:
            with storage_errors(url):  # the storage library gave up on a read
                chunk = file.read(READ_SIZE)
            if not chunk:
                return
            yield chunk


def read_stored_document(url: str, cap: int) -> bytes:
    """The document at ``url`` (a run input), refused past ``cap`` bytes."""
    with open_stored(url) as file, storage_errors(url):
        data = file.read(cap + 1)
    if len(data) > cap:
        raise OSError(
            f"{redact_source(url)} holds more than {cap:,} bytes, over the cap on a run input"
        )
    return data


PATTERN_FIELDS = ("dir", "name", "stem")
"""What a ``--run-input`` pattern may name, and nothing else (no attribute, index,
conversion or format: ``{dir.__class__}`` is refused, not evaluated)."""


def paired(pattern: str, recording: str) -> str:
    """Where ``recording``'s run input is, by ``--run-input``'s ``pattern``: ``{dir}`` is
    the recording's directory, ``{name}`` its file name, ``{stem}`` that name without
    its last suffix (``runs/a.sse`` with ``{dir}/{stem}.input.json`` → ``runs/a.input.json``);
    ``{{`` and ``}}`` are braces."""
    directory, _, name = recording.rpartition("/")
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    values = {"dir": directory or ".", "name": name, "stem": stem}
    out = []
    try:
        for text, field, spec, conversion in string.Formatter().parse(pattern):
            out.append(text)
            if field is None:
                continue
            if field not in values or spec or conversion:
                shown = "{" + field + (f"!{conversion}" if conversion else "")
                shown += (f":{spec}" if spec else "") + "}"
                raise ValueError(f"{shown} is none of them")
            out.append(values[field])
    except ValueError as error:
        raise ValueError(
            f"--run-input {redact_source(pattern)!r}: expected a pattern with {{dir}}, "
            f"{{name}} or {{stem}} ({error})"
        ) from None
    return "".join(out)
