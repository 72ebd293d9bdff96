"""Where a finding is in a file (agui_pipeline.delivery.locate): the line and column every report
leads a finding with, counted in the file for every framing that has lines."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agui_pipeline.catalog import Severity
from agui_pipeline.delivery import locate
from agui_pipeline.delivery.locate import Position, locate_findings, locate_pointer
from agui_pipeline.errors import Diagnostic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def at(index: int | None, pointer: str | None = None, code: str = "x.y") -> Diagnostic:
    return Diagnostic(code, Severity.WARNING, "m", index, pointer)


def places(tmp_path: Path, data: bytes, framing: str, *findings: Diagnostic) -> list[Any]:
    path = tmp_path / "stream"
    path.write_bytes(data)
    return [
        None if p is None else (p.line, p.column)
        for p in locate_findings(path, framing, list(findings))
    ]


def test_sse_frames_are_counted_as_parse_counts_them(tmp_path: Path) -> None:
    data = (
        b"event: x\ndata: {}\n\n"  # frame 0 on line 2
        b": a comment\n\n"  # no frame
        b"data:   \n\n"  # a data field of blanks: no frame
        b'data: {"a":\r\ndata: 1}\r\n\r\n'  # frame 1, two data lines, CRLF
        b'data:{"b": [1, {"c": 2}]}\n\n'  # frame 2 on line 11, no space after the colon
    )
    assert places(
        tmp_path, data, "sse", at(0), at(1, "/a"), at(2, "/b/1/c"), at(2, "/b/1"), at(3)
    ) == [(2, 7), (8, 8), (11, 17), (11, 16), None]


def test_a_position_inside_a_later_data_line(tmp_path: Path) -> None:
    data = b'data: {"type": "X",\ndata:  "deep": {"k": 1}}\n\n'  # one space is the field's
    assert places(tmp_path, data, "sse", at(0, "/deep/k")) == [(2, 17)]


def test_a_byte_order_mark_and_wide_characters_count_as_an_editor_counts(
    tmp_path: Path,
) -> None:
    data = '\ufeffdata: {"é": "ü", "b": 1}\n\n'.encode()
    assert places(tmp_path, data, "sse", at(0, "/b")) == [(1, 18)]


def test_json_lines(tmp_path: Path) -> None:
    data = b'{"a": 1}\n\n   \n  {"x": {"y/z": 1, "t~": 2}}\n'
    findings = [at(0, ""), at(1, "/x/y~1z"), at(1, "/x/t~0"), at(2)]
    assert places(tmp_path, data, "jsonl", *findings) == [(1, 1), (4, 10), (4, 20), None]


def test_a_json_array_document(tmp_path: Path) -> None:
    data = b'[\n  {"type": "A"},\n  {"type": "B", "list": [0, {"k": 1}]}\n]'
    findings = [at(0), at(1, "/list/1/k"), at(5)]
    assert places(tmp_path, data, "json", *findings) == [(2, 3), (3, 30), None]


def test_an_absent_member_is_placed_at_the_object_that_lacks_it(tmp_path: Path) -> None:
    data = b'data: {"type": "TEXT_MESSAGE_START", "inner": {}}\n\n'
    findings = [at(0, "/messageId"), at(0, "/inner/missing"), at(0, "/type/deeper")]
    # The object lacking the member; past a value that is no container, that value.
    assert places(tmp_path, data, "sse", *findings) == [(1, 7), (1, 47), (1, 16)]


def test_where_a_frame_stopped_being_json(tmp_path: Path) -> None:
    not_json = "parse.not-json"
    jsonl = b'{"a": 1}\n{"type": "X", "b": \n'
    assert places(tmp_path, jsonl, "jsonl", at(1, None, not_json)) == [(2, 20)]
    sse = b'data: {"a": 1}\n\ndata: {"x":\ndata:  oops}\n\n'
    assert places(tmp_path, sse, "sse", at(1, None, not_json)) == [(4, 8)]
    document = b'[{"a": 1},\n {"b": x}]'
    assert places(tmp_path, document, "json", at(0, None, not_json)) == [(2, 8)]


def test_the_event_a_stream_ended_inside(tmp_path: Path) -> None:
    data = b'data: {}\n\nevent: late\ndata: {"cut'
    incomplete = "parse.incomplete-frame"
    assert places(tmp_path, data, "sse", at(1, None, incomplete)) == [(3, 1)]
    assert places(tmp_path, b"data: {}\n\n: only a comment", "sse", at(1)) == [None]


@pytest.mark.parametrize("framing", ["proto", None])
def test_no_lines_for_a_framing_without_them(tmp_path: Path, framing: str | None) -> None:
    assert places(tmp_path, b"data: {}\n\n", framing or "", at(0)) == [None]


def test_a_missing_file_places_nothing(tmp_path: Path) -> None:
    assert locate_findings(tmp_path / "gone.sse", "sse", [at(0)]) == [None]
    assert locate_pointer(tmp_path / "gone.json", "/a") is None


def test_a_pointer_in_a_declaration(tmp_path: Path) -> None:
    declaration = tmp_path / "capabilities.json"
    declaration.write_text('{\n  "tools": {\n    "parallelCals": false\n  }\n}\n')
    assert locate_pointer(declaration, "/tools/parallelCals") == Position(3, 5)
    assert locate_pointer(declaration, "") == Position(1, 1)
    declaration.write_text("{not json")  # as far as it is JSON: its start
    assert locate_pointer(declaration, "/tools") == Position(1, 1)
    declaration.write_text('{"a": [1, }')
    assert locate_pointer(declaration, "/b") is None  # not JSON on the way: nowhere


def test_a_report_places_findings_without_holding_the_file(tmp_path: Path) -> None:
    """SARIF once read the whole stream file (and split it into lines) to number its
    findings: 387 MB for a 109 MB file. Placed line by line, a long file costs no more
    than checking it does."""
    from agui_pipeline.testing.workload import iter_sse_chunks

    big = tmp_path / "big.sse"
    with big.open("wb") as file:
        for chunk in iter_sse_chunks(300_000):
            file.write(chunk)
        file.write(b'data: {"type": "RUN_STARTED", "threadId": "t", "runId": "late"}\n\n')
    size_mb = big.stat().st_size / 2**20
    script = (
        "import io, sys\n"
        "from agui_pipeline.cli import main\n"
        "status = main(['check', sys.argv[1], '--format', 'sarif'], out=io.StringIO())\n"
        "hwm = next(l for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
        "print(status, int(hwm.split()[1]) // 1024)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(big)], capture_output=True, text=True, timeout=300
    )
    status, peak_mb = map(int, done.stdout.split())
    assert status == 1  # a late RUN_STARTED, placed on the file's last lines
    checked = subprocess.run(
        [sys.executable, "-c", script.replace("'--format', 'sarif'", "'-q'"), str(big)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    plain_mb = int(checked.stdout.split()[1])
    assert peak_mb < plain_mb + size_mb / 4, (peak_mb, plain_mb, size_mb)


@pytest.mark.parametrize("framing", ["sse", "jsonl", "json"])
def test_a_byte_that_is_not_utf8_is_placed_where_it_is(tmp_path: Path, framing: str) -> None:
    # orjson places every UTF-8 error at the frame's start; the parse stage and the report
    # both name the bad byte (issue 34).
    from agui_pipeline import Pipeline, run_sync

    event = b'{"type":"RUN_STARTED","threadId":"t","runId":"r","x":"ab\xffcd"}'
    data = {"sse": b"data: " + event + b"\n\n", "jsonl": event + b"\n", "json": event}[framing]
    column = 57 + (6 if framing == "sse" else 0)
    path = tmp_path / "stream"
    path.write_bytes(data)
    result = run_sync(path, Pipeline(framing=framing))
    rejection = result.verdict.error
    assert rejection is not None and rejection.code == "parse.not-json"
    if framing != "json":  # a document is refused before it is decoded frame by frame
        assert "byte 0xff is not UTF-8, at character 57 of the frame" in str(rejection)
    finding = Diagnostic(rejection.code, Severity.ERROR, "m", rejection.event_index)
    assert places(tmp_path, data, framing, finding) == [(1, column)]


@pytest.mark.parametrize("framing", ["sse", "jsonl", "json"])
def test_a_line_longer_than_any_frame_is_read_in_bounded_memory(
    tmp_path: Path, framing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 34: a 1 GB single-line file peaked at 3.1 GB. A frame past max_frame_bytes was
    # refused where it began, so placement holds no more of a line than that (here 1,000).
    import tracemalloc

    from agui_pipeline.delivery import locate

    monkeypatch.setattr(locate, "MAX_LINE", 1_000, raising=False)
    monkeypatch.setattr(locate, "MAX_TEXT", 1_000, raising=False)
    head = b"data: " if framing == "sse" else b""
    data = head + b'{"type": "X", "pad": "' + b"x" * 4_000_000 + b'"}\n\n' + head + b"{}\n\n"
    tracemalloc.start()
    try:
        placed = places(tmp_path, data, framing, at(0), at(1))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200_000, peak
    column = len(head) + 1
    expected = {"sse": [(1, column), (3, 7)], "jsonl": [(1, 1), (3, 1)], "json": [None, None]}
    assert placed == expected[framing]


def test_findings_are_not_placed_in_a_file_that_is_no_longer_the_one_judged(
    tmp_path: Path,
) -> None:
    # issue 34: a file rewritten between the check and the re-read had its findings placed
    # on other events. The report places nothing then, and says why.
    from agui_pipeline import Pipeline, run_sync
    from agui_pipeline._checking.source import check_source
    from agui_pipeline.cli import build_parser
    from agui_pipeline.cli.check import _settings
    from agui_pipeline.cli.output import REPORTS
    from agui_pipeline.delivery.locate import CHANGED, changed_since, stamp
    from agui_pipeline.delivery.report import findings

    path = tmp_path / "run.jsonl"
    judged_text = b'{"type": "RUN_STARTED", "threadId": "t", "runId": "r", "extra": 1}\n'
    path.write_bytes(judged_text)
    result = run_sync(path, Pipeline())
    judged = stamp(path)
    assert any(f.position for f in findings(result, stream=str(path), judged=judged))
    path.write_bytes(b"\n\n\n" + judged_text)  # the same event, three lines later
    said = changed_since(path, judged)
    assert said == f"{path} changed after it was checked (size or modification time)"
    assert not any(f.position for f in findings(result, stream=str(path), judged=judged))
    assert changed_since(path, CHANGED) == f"{path} changed while it was checked"

    out = io.StringIO()
    settings = _settings(build_parser("check").parse_args(["check", str(path)]), out)
    checked = check_source(str(path), settings.check)
    assert checked.judged == stamp(path)
    path.write_bytes(judged_text)
    REPORTS["text"].write(checked, settings, out)
    assert f"note: {path} changed after it was checked" in out.getvalue()
    assert f"{path}:" not in out.getvalue().replace(f"{path}: ", "")  # no line:column


def test_a_long_line_that_opens_like_a_fixture_is_not_read_whole(tmp_path: Path) -> None:
    # A 300 MB JSON line starting with '{' was read whole as a possible fixture: 942 MB.
    import tracemalloc

    from agui_pipeline._checking.source import _fixture
    from agui_pipeline._json import MAX_DOCUMENT

    path = tmp_path / "long.jsonl"
    with path.open("wb") as file:
        file.write(b'{"type": "RUN_STARTED", "pad": "')
        file.truncate(MAX_DOCUMENT + 1)  # sparse: no disk
    tracemalloc.start()
    try:
        assert _fixture(path) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak


def lines_one_by_one(path: Path, framing: str, longest: int) -> list[str]:
    """The file's lines as an editor numbers them, read one ``readline`` at a time: the
    model ``locate`` reads by blocks instead (LF, CRLF or CR for SSE, LF for JSON lines;
    a byte order mark off the first; a line held to ``longest`` characters)."""
    found: list[str] = []
    newline = None if framing == "sse" else "\n"
    with path.open(encoding="utf-8", errors="surrogateescape", newline=newline) as file:
        while line := file.readline(longest):
            if not line.endswith("\n"):
                while (rest := file.readline(longest)) and not rest.endswith("\n"):
                    pass
            if not found:
                line = line.removeprefix("\ufeff")
            found.append(line.removesuffix("\n"))
    return found


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.lists(
        st.sampled_from(
            [b"a", b"data: {}", b"\n", b"\r", b"\r\n", b"\xef\xbb\xbf", b"\xff", "é".encode()]
        ),
        max_size=40,
    ).map(b"".join),
    framing=st.sampled_from(["sse", "jsonl"]),
    block=st.integers(1, 9),
    longest=st.integers(1, 12),
)
def test_lines_read_by_blocks_are_the_lines_read_one_by_one(
    data: bytes,
    framing: str,
    block: int,
    longest: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """However the blocks cut the file and its line breaks, and however long its lines."""
    path = tmp_path / "stream"
    path.write_bytes(data)
    with monkeypatch.context() as patched:
        patched.setattr(locate, "_BLOCK", block)
        patched.setattr(locate, "MAX_LINE", longest)
        read = [line for lines in locate._lines(path, framing) for line in lines]
    assert read == lines_one_by_one(path, framing, longest)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pieces=st.lists(
        st.sampled_from(
            [
                *(b'data: {"a": [1, {"b": 2}]}', b"data:", b"data:  ", b": note", b"event: x"),
                *(b"\n", b"\r\n", b"\r", b"\n\n", b"\r\n\r\n"),
            ]
        ),
        max_size=30,
    ),
    framing=st.sampled_from(["sse", "jsonl"]),
    block=st.integers(1, 9),
)
def test_findings_are_placed_alike_however_the_blocks_cut_the_file(
    pieces: list[bytes], framing: str, block: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = b"".join(pieces)
    findings = [at(index, pointer) for index in range(8) for pointer in (None, "/a/1/b")]
    whole = places(tmp_path, data, framing, *findings)
    with monkeypatch.context() as patched:
        patched.setattr(locate, "_BLOCK", block)
        assert places(tmp_path, data, framing, *findings) == whole


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pieces=st.lists(
        st.sampled_from(
            [
                *(b'data: {"a": [1, {"b": 2}]}\n\n',) * 4,
                *(b'{"a": [1, {"b": 2}]}\n',) * 4,
                *(b'data: {"a": 1}', b"data:", b"data:  ", b": note", b"event: x", b"{", b" "),
                *(b"\n", b"\r\n", b"\r", b"\n\n", b"\r\n\r\n"),
                *(b"\xef\xbb\xbf", b"\xff", "é".encode()),
            ]
        ),
        max_size=60,
    ),
    framing=st.sampled_from(["sse", "jsonl"]),
    block=st.sampled_from([3, 17, 64, locate._BLOCK]),
    longest=st.sampled_from([4, 30, locate.MAX_LINE]),
    wanted=st.sets(st.integers(0, 40), min_size=1, max_size=4),
)
def test_regular_frames_counted_in_c_are_placed_as_lines_read_one_by_one(
    pieces: list[bytes],
    framing: str,
    block: int,
    longest: int,
    wanted: set[int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The file read in regions of bytes, with the runs of regular frames between the wanted
    ones counted without reading their lines, leaves every finding where the text reader,
    reading each line, puts it: however the blocks cut the file, with CRs, byte order marks,
    bytes that are not UTF-8, and lines too long to hold."""
    data = b"".join(pieces)
    findings = [at(index, pointer) for index in sorted(wanted) for pointer in (None, "/a/1/b")]
    monkeypatch.setattr(locate, "_BLOCK", block)
    monkeypatch.setattr(locate, "MAX_LINE", longest)
    counted = places(tmp_path, data, framing, *findings)
    monkeypatch.setattr(locate, "_read_regions", lambda *_: 0)  # the text reader from byte 0
    monkeypatch.setattr(locate, "_regular_frames", lambda *_: 0)
    assert places(tmp_path, data, framing, *findings) == counted


def test_what_is_not_a_regular_frame_is_read_line_by_line(tmp_path: Path) -> None:
    """Two ``data`` lines with a field between them are one event, not two; an event that
    opens with another field before its regular frame ends there, so the event the stream
    ends inside begins on its own first line; a blank JSON line among regular ones is no
    frame; a CR ends an SSE line; a byte order mark past the file's start is no mark."""
    data = b'data: {"a": 1}\nevent: x\ndata: {"b": 2}\n\ndata: {"c": 3}\n\n'
    assert places(tmp_path, data, "sse", at(1, "/c")) == [(5, 8)]
    data = b'event: x\ndata: {"a": 1}\n\ndata: {"b"'
    assert places(tmp_path, data, "sse", at(1, None, "parse.incomplete-frame")) == [(4, 1)]
    data = b'{"a": 1}\n   \n{"b": 2}\n{"c": 3}\n'  # a blank JSON line is no frame
    assert places(tmp_path, data, "jsonl", at(2, "/c")) == [(4, 2)]
    data = b'data: {"a": 1}\rdata: {"b": 2}\n\ndata: {"c": 3}\n\n'  # a CR ends a line
    assert places(tmp_path, data, "sse", at(1, "/c")) == [(4, 8)]
    bom = "\ufeff".encode()  # only the file's first line may open with one
    data = b'data: {"a": 1}\n\n' + bom + b'data: {"b": 2}\n\ndata: {"c": 3}\n\n'
    assert places(tmp_path, data, "sse", at(1, "/c")) == [(5, 8)]


def test_a_read_that_ends_between_an_event_and_its_blank_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A region of whole lines that holds an event's data line but not yet its blank line
    counts no regular frame: the event is read with its blank line, in the next region."""
    monkeypatch.setattr(locate, "_BLOCK", 15)  # the first read ends after the first LF
    data = b'data: {"a": 1}\n\ndata: {"b": 2}\n\ndata: {"c": 3}\n\n'
    assert places(tmp_path, data, "sse", at(2, "/c")) == [(5, 8)]


@pytest.mark.parametrize(
    ("framing", "first_read", "data", "index", "expected"),
    [
        # a blank JSON line among regular ones, where the count of line breaks is no more
        # than the frames wanted before the next finding
        ("jsonl", 13, b'{"a": 1}\n   \n{"b": 2}\n{"c": 3}\n', 2, [(4, 2)]),
        # an event with a second line: one frame, three lines
        ("sse", 25, b'data: {"a": 1}\nevent: x\n\ndata: {"c": 3}\n\n', 1, [(4, 8)]),
    ],
)
def test_a_region_is_counted_in_bulk_only_when_every_line_break_is_a_regular_frame_s(
    framing: str,
    first_read: int,
    data: bytes,
    index: int,
    expected: list[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(locate, "_BLOCK", first_read)  # the first region: the lines before "c"
    assert places(tmp_path, data, framing, at(index, "/c")) == expected


def test_a_late_finding_in_a_long_regular_stream_is_placed_without_reading_each_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The frames before a run summary at the last event are counted in runs, most of them
    in bytes and the rest in lines, not read line by line; the summary lands on the last
    event's line."""
    events = 5000
    data = b"".join(b'data: {"type": "X", "n": %d}\n\n' % n for n in range(events))
    in_bytes: list[int] = []
    in_lines: list[int] = []
    regular, regular_frames = locate._Placer.regular, locate._regular_frames

    def counting_bytes(placer: Any, region: bytes) -> int:
        before = placer.index
        taken = regular(placer, region)
        in_bytes.append(placer.index - before)
        return taken

    def counting_lines(*arguments: Any) -> int:
        in_lines.append(counted := regular_frames(*arguments))
        return counted

    monkeypatch.setattr(locate._Placer, "regular", counting_bytes)
    monkeypatch.setattr(locate, "_regular_frames", counting_lines)
    assert places(tmp_path, data, "sse", at(events - 1, "/n")) == [(2 * events - 1, 21)]
    assert sum(in_bytes) + sum(in_lines) == events - 1
    assert sum(in_bytes) > events / 2 and len(in_bytes) + len(in_lines) < events / 50
