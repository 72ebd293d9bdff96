"""Where a finding is in a file: the line and column a report leads it with.

A diagnostic says *which* frame (its event index) and *where in it* (a JSON
Pointer); an editor, a CI annotation and a person want a line and a column in the
file. :func:`locate_findings` re-reads a stream file with the parse stage's
framing rules (the same frames, counted the same way: a blank SSE ``data`` or JSON
line is no frame, an SSE event with no blank line after it is none either) and
turns each finding into a :class:`Position`:

- a finding with a pointer, at the member it names (its key) or the element,
  or — when the pointer names something absent, such as a required field — at
  the object that lacks it;
- ``parse.not-json``, at the character where decoding failed;
- a finding about a whole frame, at the frame's first character;
- ``parse.incomplete-frame``, at the event the stream ended inside.

Lines count from 1 as editors count them (LF, CRLF or CR), columns from 1 in
characters, after a byte-order mark. :func:`locate_pointer` does the same for a
JSON document, such as a capabilities declaration.

Only the report's slow path reads this: a file is re-read when it has findings to
place, a region at a time and only as far as the last of them, so a long file costs no
memory and a clean one no time. The regular frames between two findings are counted in
bytes, without decoding them; the rest is read line by line. No line is held past
``MAX_LINE`` characters (nor a JSON
document past ``MAX_TEXT``): the parse stage refused a longer frame where it began, so
nothing past that length is placed, and a 1 GB line costs no more than the cap. A stream
with no file (stdin, a URL), a conformance fixture and protobuf frames have no lines to
give.
"""

from __future__ import annotations

import io
import json
import re
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import compress, count, islice, repeat
from operator import ne, not_
from pathlib import Path
from typing import BinaryIO

import orjson
from agui_pipeline._json import MAX_DOCUMENT, read_document, unescape
from agui_pipeline.catalog import PARSE_INCOMPLETE_FRAME, PARSE_NOT_JSON
from agui_pipeline.errors import Diagnostic
from agui_pipeline.options import Limits

FRAMINGS = ("sse", "jsonl", "json")
"""The framings whose files have lines (not ``proto``, a binary framing)."""

_BOM = "\ufeff"
_BLANK = " \t\n\r\x0b\x0c"
"""What ``bytes.isspace`` counts as blank, as the parse stage tests a frame."""
_SPACE = re.compile(r"[ \t\n\r]*")
_SCAN = json.JSONDecoder()
MAX_LINE = Limits().max_frame_bytes + 2
"""The longest line held: a frame longer than ``max_frame_bytes`` was rejected where it
began, so no finding lies further into it (the line break and a CR beside)."""
_BLOCK = 1 << 15
"""Characters read at a time (at most four bytes each, once a line holds one past Latin-1)."""
MAX_TEXT = max(Limits().max_document_bytes, MAX_DOCUMENT) + 1
"""The longest JSON document held whole: a longer one was refused before it was decoded."""
_OPENS_LINE = repeat("{")
_OPENS_EVENT = repeat("data: {")
_LF, _NOT_FOUND = repeat(b"\n"), repeat(-1)
"""How a regular JSON line and a regular SSE event open, as text (:func:`_regular_frames`),
and the line break a regular frame in bytes has none of (:meth:`_Placer._regular_run`;
``bytes.find``, not ``in``, which first tries the needle as an integer)."""
_HELD = 1 << 20
"""The most bytes held of a line whose end has not been read yet: past it, the text reader
reads the rest of the file (:func:`_read_regions`)."""
_NOT_UTF8 = re.compile("[\udc80-\udcff]")
"""A byte that is not UTF-8, as the file is read (``errors="surrogateescape"``)."""


Stamp = tuple[int, int]
"""A file as it was judged: its size and modification time (ns)."""


def stamp(path: str | Path) -> Stamp:
    """``path``'s :data:`Stamp` now."""
    status = Path(path).stat()
    return status.st_size, status.st_mtime_ns


CHANGED: Stamp = (-1, -1)
"""The stamp of a file that changed while it was being checked: no file has it."""


def changed_since(path: str | Path, judged: Stamp | None) -> str | None:
    """Why the findings of ``path`` cannot be placed in it, if it is not the file judged
    (``None`` when it is, or when ``judged`` is unknown): placing them by line would put
    them on other events."""
    if judged is None:
        return None
    if judged == CHANGED:
        return f"{path} changed while it was checked"
    try:
        now = stamp(path)
    except OSError as error:
        return f"{path} cannot be read again ({error.strerror or error})"
    if now != judged:
        return f"{path} changed after it was checked (size or modification time)"
    return None


@dataclass(frozen=True, slots=True)
class Position:
    """A place in a file: 1-based line and column (in characters)."""

    line: int
    column: int


@dataclass(frozen=True, slots=True)
class _Frame:
    """A frame's text, from ``start``, and how an offset in it maps to the file.

    ``pieces`` holds, for each line the text came from, the line number, the
    0-based column the piece starts at and its length: the text is the pieces
    joined with ``\\n`` (SSE ``data`` lines), or one piece (a JSON line).
    ``None`` is a whole document, whose own line breaks are the file's.
    """

    text: str
    pieces: list[tuple[int, int, int]] | None
    start: int = 0

    def position(self, offset: int) -> Position:
        """The file position of character ``offset`` of :attr:`text`."""
        if self.pieces is None:
            line_start = self.text.rfind("\n", 0, offset) + 1
            return Position(self.text.count("\n", 0, offset) + 1, offset - line_start + 1)
        for line, column, length in self.pieces:
            if offset <= length:
                return Position(line, column + offset + 1)
            offset -= length + 1
        line, column, length = self.pieces[-1]
        return Position(line, column + length + 1)


def locate_findings(
    path: Path, framing: str | None, findings: Sequence[Diagnostic]
) -> list[Position | None]:
    """Each finding's position in the stream file ``path`` read as ``framing``
    (``None`` for one that is not about an event, or whose event has no line)."""
    wanted = {d.event_index for d in findings if d.event_index is not None}
    if framing not in FRAMINGS or not wanted:
        return [None] * len(findings)
    try:
        if framing == "json":
            document = _read_text(path)
            frames = _elements_wanted(document, wanted)
            whole = _Frame(document, None, _skip_space(document, 0))
        else:
            frames = _delimited_frames(path, framing, wanted)
    except (OSError, UnicodeError):
        return [None] * len(findings)
    positions: list[Position | None] = []
    for finding in findings:
        index = finding.event_index
        frame = None if index is None else frames.get(index)
        if framing == "json" and finding.code == PARSE_NOT_JSON.id:
            frame = whole  # the document as a whole did not decode
        positions.append(None if frame is None else _place(finding, frame))
    return positions


def locate_pointer(path: Path, pointer: str) -> Position | None:
    """Where ``pointer`` leads in the JSON document ``path`` (as far as it exists); a file
    over ``MAX_DOCUMENT`` is not read, as a declaration that large was not read either."""
    try:
        text = read_document(path).decode("utf-8", "surrogateescape")
        text = text.replace("\r\n", "\n").replace("\r", "\n").removeprefix(_BOM)  # as open()
        frame = _Frame(text, None, _skip_space(text, 0))
        return frame.position(_find(text, frame.start, _tokens(pointer)))
    except (OSError, ValueError, RecursionError):  # unreadable, not JSON, or too deep on the way
        return None


def _place(finding: Diagnostic, frame: _Frame) -> Position:
    text, start = frame.text, _skip_space(frame.text, frame.start)
    if finding.code == PARSE_NOT_JSON.id:
        undecodable = _NOT_UTF8.search(text, frame.start)
        if undecodable is not None:  # read as surrogate escapes; orjson would say 0
            return frame.position(undecodable.start())
        try:
            orjson.loads(text[frame.start :] if frame.start else text)
        except orjson.JSONDecodeError as error:
            return frame.position(frame.start + error.pos)
    elif finding.pointer and finding.code != PARSE_INCOMPLETE_FRAME.id:
        try:
            return frame.position(_find(text, start, _tokens(finding.pointer)))
        except ValueError:  # not JSON on the way: the finding is about the frame's bytes
            pass
    return frame.position(start)


# -- frames ------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    """The whole document, or ``OSError`` past ``MAX_TEXT`` characters (refused unread)."""
    with path.open(encoding="utf-8", errors="surrogateescape", newline=None) as file:
        text = file.read(MAX_TEXT)
        if file.read(1):
            raise OSError(f"{path} is longer than a document that can be decoded")
    return text.removeprefix(_BOM)


def _lines(path: Path, framing: str, start: int = 0) -> Iterator[list[str]]:
    """The file's lines without their line breaks, as an editor counts them, a list per
    block read (from byte ``start``, a line's first, on).

    SSE lines end at LF, CRLF or CR, as the parse stage reads them; a JSON line
    ends at LF only (a CR before it is whitespace inside the frame). The file is read a
    block at a time and cut into lines by ``str.split``, not line by line: a finding late
    in a long file (a declaration's run summary is one) is placed at the cost of the
    reading, not of a call per line. A line is held to ``MAX_LINE`` characters: the rest
    of a longer one is read and dropped.
    """
    newline = None if framing == "sse" else "\n"
    with path.open("rb") as raw:
        raw.seek(start)
        file = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline=newline)
        held = ""  # the start of the line the last block ended inside
        first = start == 0
        while block := file.read(_BLOCK):
            lines = block.split("\n")
            lines[0] = held + lines[0]
            held = lines.pop()[:MAX_LINE]
            if not lines:
                continue
            # Only the line the block began inside can be longer than the block.
            if len(lines[0]) > MAX_LINE or (
                len(block) > MAX_LINE and max(map(len, lines)) > MAX_LINE
            ):
                lines = [line[:MAX_LINE] for line in lines]
            if first:
                lines[0], first = lines[0].removeprefix(_BOM), False
            yield lines
        if held:
            yield [held.removeprefix(_BOM) if first else held]


def _delimited_frames(path: Path, framing: str, wanted: set[int]) -> dict[int, _Frame]:
    """The frames of an SSE or JSON-lines file whose index is ``wanted``, read no further
    than the last of them.

    The file is read in bytes, a region of whole lines at a time. Between two wanted
    frames, the regular frames a region opens with are counted in C, without decoding them
    (:meth:`_Placer.regular`); the rest is decoded and read line by line
    (:meth:`_Placer.read`). A declaration's run summary sits at a stream's last event, so
    placing it used to cost a pass in Python over every line before it. A line too long to
    hold sends the rest of the file to the text reader (:func:`_lines`), which keeps
    ``MAX_LINE`` characters of each line.
    """
    placer = _Placer(framing, wanted)
    with path.open("rb") as file:
        rest = _read_regions(file, placer)
    if rest is not None:
        for lines in _lines(path, framing, rest):
            if placer.read(lines):
                break
    return placer.end()


def _read_regions(file: BinaryIO, placer: _Placer) -> int | None:
    """``file`` to ``placer``, a region of whole lines at a time (the last perhaps without
    its line break); ``None`` at the end or once the last wanted frame is found, else the
    byte offset of a line too long to hold, for the text reader to go on from."""
    held = b""  # the start of the line the last read ended inside
    offset = 0  # where ``held`` starts in the file
    first = True
    most = min(_HELD, 4 * MAX_LINE + 4)  # bytes enough for MAX_LINE characters
    while block := file.read(_BLOCK):
        held += block
        cut = held.rfind(b"\n") + 1
        if not cut:
            if len(held) > most:
                return offset
            continue
        region, held = held[:cut], held[cut:]
        if placer.region(region, first):
            return None
        first, offset = False, offset + cut
    if held:
        placer.region(held, first)
    return None


class _Placer:
    """The wanted frames of a stream file, found as its lines go by, counted as parse
    counts frames (a blank SSE ``data`` or JSON line is no frame, an SSE event with no blank
    line after it is none either)."""

    def __init__(self, framing: str, wanted: set[int]) -> None:
        self.framing = framing
        self.wanted = wanted
        self.ahead = sorted(wanted)
        self.found: dict[int, _Frame] = {}
        self.index = 0  # the next frame's
        self.data: list[tuple[int, int, str]] = []  # the data lines of the SSE event being read
        self.event_start = 0  # its first line
        self.counted = 0  # the lines read so far

    def _before_next(self) -> int:
        """The frames before the next one wanted."""
        return self.ahead[bisect_left(self.ahead, self.index)] - self.index

    def region(self, region: bytes, first: bool) -> bool:
        """A region of whole lines (``first``: the file's first); whether the last frame
        wanted has been found. Its regular frames are counted in bytes up to the next frame
        wanted, that frame's lines are read, and so on, until the region is irregular."""
        end = b"\n" if self.framing == "jsonl" else b"\n\n"  # after one frame, when regular
        while True:
            taken = 0 if self.data else self.regular(region)  # none of a BOM's line
            if taken:
                region, first = region[taken:], False
            if self.data or self._before_next():  # irregular from here, or wholly counted
                return self.decoded(region, first)
            cut = region.find(end) + len(end)  # the frame wanted, if it is regular
            if cut < len(end):
                return self.decoded(region, first)
            if self.decoded(region[:cut], first):
                return True
            region, first = region[cut:], False

    def decoded(self, region: bytes, first: bool) -> bool:
        """``region``'s lines, read (:meth:`read`); whether the last frame wanted is found."""
        text = region.decode("utf-8", "surrogateescape")
        if self.framing == "sse":  # LF, CRLF or CR, as the text reader reads SSE
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        if not lines[-1]:
            lines.pop()  # the region ended with its line break
        if len(text) > MAX_LINE and max(map(len, lines)) > MAX_LINE:
            lines = [line[:MAX_LINE] for line in lines]
        if first and lines:
            lines[0] = lines[0].removeprefix(_BOM)
        return self.read(lines)

    def regular(self, region: bytes) -> int:
        """The bytes of the regular frames ``region`` opens with, before the next frame
        wanted, counted without decoding them: JSON lines that open an object, or SSE events
        of one ``data: {`` line and a blank line (a region with a CR, which may end an SSE
        line, has none).

        The commonest case, frames that are all regular up to the region's last one and none
        wanted, is told by counting line breaks, in C, over the whole region: every line
        break then belongs to a frame's end or to the opening of the next one. Otherwise the
        frames are looked at one by one (:meth:`_regular_run`)."""
        most = self._before_next()
        if not most:
            return 0
        if self.framing == "jsonl":
            if not region.startswith(b"{"):
                return 0
            whole = region.rfind(b"\n") + 1
            if not whole:
                return 0
            frames = region.count(b"\n", 0, whole)
            breaks_per_frame = 1
            if frames > most or region.count(b"\n{", 0, whole) != frames - 1:
                whole, frames = self._regular_run(region.split(b"\n", most)[:-1], b"{", 1)
        else:
            if not region.startswith(b"data: {") or b"\r" in region:
                return 0
            whole = region.rfind(b"\n\n") + 2
            if whole < 2:
                return 0  # not one event's end yet
            frames = region.count(b"\n\ndata: {", 0, whole) + 1
            breaks_per_frame = 2
            if frames > most or region.count(b"\n", 0, whole) != 2 * frames:
                events = region.split(b"\n\n", most)[:-1]
                whole, frames = self._regular_run(events, b"data: {", 2)
        if frames:
            self.index += frames
            self.counted += breaks_per_frame * frames
            self.event_start = 0  # the last line counted ended an event
        return whole

    @staticmethod
    def _regular_run(frames: list[bytes], opening: bytes, breaks: int) -> tuple[int, int]:
        """The bytes and the number of the regular frames ``frames`` (each followed by
        ``breaks`` line breaks) open with: up to the first that does not open with
        ``opening`` or holds a line break."""
        whole = next(compress(count(), map(ne, map(bytes.find, frames, _LF), _NOT_FOUND)), None)
        run = frames if whole is None else frames[:whole]
        opens = map(bytes.startswith, run, repeat(opening))
        regular = next(compress(count(), map(not_, opens)), len(run))
        return sum(map(len, run[:regular])) + breaks * regular, regular

    def read(self, lines: list[str]) -> bool:
        """The next ``lines``, read one by one but for runs of regular frames between the
        wanted ones (:func:`_regular_frames`); whether the last frame wanted is found."""
        framing, wanted, ahead, found = self.framing, self.wanted, self.ahead, self.found
        index, data, event_start, counted = self.index, self.data, self.event_start, self.counted
        last = ahead[-1]
        per_frame, opens = (1, "{") if framing == "jsonl" else (2, "data: {")  # a regular frame
        position = 0  # the next line to read
        done = False
        while position < len(lines):
            if not data and lines[position].startswith(opens):
                # Between SSE events (or JSON lines): count the regular frames that come
                # before the next frame wanted.
                before = ahead[bisect_left(ahead, index)] - index
                regular = _regular_frames(lines, position, framing, before)
                if regular:
                    index += regular
                    position += regular * per_frame
                    event_start = 0  # the last line counted was an event's blank line
                    if position == len(lines):
                        break
            number, line = counted + position + 1, lines[position]
            position += 1
            if framing == "jsonl":
                if line.strip(_BLANK):
                    if index in wanted:
                        found[index] = _Frame(line, [(number, 0, len(line))])
                    index += 1
            elif line:
                event_start = event_start or number
                value = _sse_data(line)
                if value is not None:
                    data.append((number, len(line) - len(value), value))
            elif data:  # a blank line dispatches the event
                text = data[0][2] if len(data) == 1 else "\n".join(v for _, _, v in data)
                if not text or text.strip(_BLANK):  # a data field of blanks is no frame
                    if index in wanted:
                        found[index] = _Frame(text, [(n, at, len(v)) for n, at, v in data])
                    index += 1
                data, event_start = [], 0
            else:
                event_start = 0
            if index > last:
                done = True
                break
        self.index, self.data, self.event_start = index, data, event_start
        self.counted = counted + len(lines)
        return done

    def end(self) -> dict[int, _Frame]:
        """The frames found, once the file is read as far as it needs to be."""
        if self.data and self.index in self.wanted:
            # The stream ended inside an event (parse.incomplete-frame names this index).
            self.found[self.index] = _Frame("", [(self.event_start, 0, 0)])
        return self.found


def _regular_frames(lines: list[str], at: int, framing: str, most: int) -> int:
    """How many frames, up to ``most``, open at ``lines[at]`` in the commonest form, each
    sure to be one frame: a JSON line that opens an object, or an SSE event of one
    ``data: {`` line and the blank line after it. Counted in C, and lazily: an irregular
    line ends the count where it stands, so no line is looked at more than twice."""
    if framing == "jsonl":
        run = islice(lines, at, at + most)
        whole = min(most, len(lines) - at)
        return next(compress(count(), map(not_, map(str.startswith, run, _OPENS_LINE))), whole)
    events = min(most, (len(lines) - at) // 2)  # one whose blank line is in the next block: no
    blanks = islice(lines, at + 1, at + 2 * events, 2)
    unbroken = next(compress(count(), blanks), events)  # up to an event's second line
    data = islice(lines, at, at + 2 * unbroken, 2)
    return next(compress(count(), map(not_, map(str.startswith, data, _OPENS_EVENT))), unbroken)


def _sse_data(line: str) -> str | None:
    """The value of a ``data`` field line (one leading space dropped), else ``None``."""
    if line[:1] == ":":
        return None
    name, colon, value = line.partition(":")
    if name != "data":
        return None
    return value[1:] if colon and value[:1] == " " else value


def _elements_wanted(text: str, wanted: set[int]) -> dict[int, _Frame]:
    """The elements of the JSON array document ``text`` whose index is ``wanted``, each
    the whole document read from the element's offset (so positions count in the file)."""
    found: dict[int, _Frame] = {}
    position = _skip_space(text, 0)
    try:
        if text[position : position + 1] == "[":
            for index, start in enumerate(_elements(text, position)):
                if index in wanted:
                    found[index] = _Frame(text, None, start)
                if index >= max(wanted):
                    break
    except ValueError:
        pass  # the document breaks after the elements found
    if 0 in wanted and 0 not in found:  # not an array: the finding is about the document
        found[0] = _Frame(text, None, position)
    return found


# -- a JSON Pointer in JSON text -------------------------------------------------------


def _tokens(pointer: str) -> list[str]:
    return [unescape(token) for token in pointer.split("/")[1:]] if pointer else []


def _skip_space(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    return match.end() if match else position


def _find(text: str, start: int, tokens: list[str]) -> int:
    """The offset of what ``tokens`` name in the JSON value at ``start``: a member's key,
    an element's value; as far as the path exists (the container lacking the rest).

    Values are skipped by the standard library's C scanner, so only the containers on
    the path are walked here. ``ValueError`` when the text is not JSON on the way.
    """
    position = start
    for depth, token in enumerate(tokens, 1):
        opener = text[position : position + 1]
        if opener == "{":
            found = _member(text, position, token)
        elif opener == "[" and token.isdigit():
            found = _element(text, position, int(token))
        else:
            return position
        if found is None:
            return position
        key, value = found
        if depth == len(tokens):
            return key
        position = value
    return position


def _member(text: str, position: int, name: str) -> tuple[int, int] | None:
    """``(key offset, value offset)`` of member ``name`` of the object at ``position``."""
    position = _skip_space(text, position + 1)
    while text[position : position + 1] == '"':
        key, end = _SCAN.raw_decode(text, position)
        value = _skip_space(text, _skip_space(text, end) + 1)  # past the colon
        if key == name:
            return position, value
        _, end = _SCAN.raw_decode(text, value)
        position = _skip_space(text, end)
        if text[position : position + 1] != ",":
            return None
        position = _skip_space(text, position + 1)
    return None


def _element(text: str, position: int, wanted: int) -> tuple[int, int] | None:
    for index, start in enumerate(_elements(text, position)):
        if index == wanted:
            return start, start
    return None


def _elements(text: str, position: int) -> Iterator[int]:
    """The offset of each element of the array at ``position``."""
    position = _skip_space(text, position + 1)
    if text[position : position + 1] == "]":
        return
    while position < len(text):
        yield position
        _, end = _SCAN.raw_decode(text, position)
        position = _skip_space(text, end)
        if text[position : position + 1] != ",":
            return
        position = _skip_space(text, position + 1)
