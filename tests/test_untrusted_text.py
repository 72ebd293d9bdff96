"""Untrusted text is inert wherever it is written, and no URL leaks its credentials:
the escaping (fuzzed), the text report, the proxy's log lines, file names in reports,
URLs in errors, and the cut of an overlong message."""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from agui_pipeline import BackgroundServer, Pipeline
from agui_pipeline._json import MAX_DOCUMENT, DocumentTooLarge
from agui_pipeline.catalog import TRANSPORT_CONNECTION_LOST
from agui_pipeline.cli import main
from agui_pipeline.delivery.escaping import inert, inert_json, printable_name, quoted
from agui_pipeline.delivery.redaction import redact_in, redact_url
from agui_pipeline.errors import MAX_MESSAGE, Diagnostic, cut_message
from agui_pipeline.http.tap import Tap
from agui_pipeline.model.agent_resource import read_agent_resource
from agui_pipeline.model.declared import read_declaration
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.cli_run import agui
from tests.streams import encode

# What a terminal acts on: C0 controls, DEL, C1 controls, the bidi controls, the line and
# paragraph separators. The test's own list, written out, not the module's pattern.
ACTED_ON = (
    {chr(code) for code in range(0x20)}
    | {chr(code) for code in range(0x7F, 0xA0)}
    | set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    | set("\u2028\u2029")
)
HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m\u202eevil\r\nrun 'x' (thread 't'): completed"
text_with_controls = st.text(
    alphabet=st.one_of(st.sampled_from(sorted(ACTED_ON)), st.characters(codec="utf-8"))
)


@given(text_with_controls)
def test_inert_text_holds_nothing_a_terminal_acts_on(text: str) -> None:
    made = inert(text)
    assert not ACTED_ON & set(made)
    assert set(text) & ACTED_ON or made == text  # text without any is left as it is


@given(text_with_controls)
def test_a_json_line_stays_the_same_value_and_inert(text: str) -> None:
    line = inert_json(orjson.dumps({"message": text}).decode())
    assert orjson.loads(line) == {"message": text}
    assert not ACTED_ON & set(line)


@given(text_with_controls)
def test_a_quoted_value_is_one_quoted_token(text: str) -> None:
    said = quoted(text)
    assert said.startswith('"') and said.endswith('"') and '"' not in said[1:-1].replace('\\"', "")
    assert not ACTED_ON & set(said)


def run_error_stream(message: str, member: str) -> bytes:
    events: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant", f"x{member}": 1},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "RUN_ERROR", "message": message, "code": message},
    ]
    return encode(events, "jsonl")


@settings(deadline=None)  # a file written and a whole check per example: seconds on a busy box
@given(message=text_with_controls, member=text_with_controls)
def test_the_text_report_writes_a_producers_strings_inert(
    tmp_path_factory: pytest.TempPathFactory, message: str, member: str
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "hostile.jsonl"
    path.write_bytes(run_error_stream(message, member))
    out = io.StringIO()
    main(["check", str(path), "--color", "never"], out)
    report = out.getvalue()
    assert not (ACTED_ON - {"\n"}) & set(report), report
    lines = report.splitlines()
    # The status line, then indented detail and `path:line:col:` finding lines: no line of
    # the producer's making (its newlines are escaped).
    assert lines[0].startswith(f"{path}: run-error")
    assert all(line.startswith((" ", f"{path}:")) for line in lines[1:]), report


def test_a_hostile_run_error_cannot_clear_the_terminal_or_forge_a_line(tmp_path: Path) -> None:
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(run_error_stream(HOSTILE, "bad\x1b[2Jname"))
    done = agui("check", path, "--color", "never")
    assert "\x1b" not in done.stdout and "\x9b" not in done.stdout
    assert "\u202e" not in done.stdout and "\r" not in done.stdout
    assert "\\x1b]0;owned\\x07" in done.stdout  # shown, as an escape
    assert "/xbad\\x1b[2Jname" in done.stdout


CHECK = (sys.executable, "-m", "agui_pipeline", "check")


def test_a_file_name_that_is_not_utf8_is_reported_in_every_format(tmp_path: Path) -> None:
    name = os.fsdecode(b"caf\xe9.jsonl")  # Latin-1, surrogate-escaped by Python
    (tmp_path / name).write_bytes(run_error_stream("fine", "extra"))
    for format in ("text", "json", "sarif", "junit"):
        done = subprocess.run(
            # The gate aside (the run ended with RUN_ERROR): the name, in every format.
            [*CHECK, name, "--format", format, "--fail-on", "verdict"],
            capture_output=True,
            cwd=tmp_path,
            timeout=60,
        )
        assert done.returncode == 0, (format, done.stderr)
        assert b"Traceback" not in done.stderr
        assert re.search(rb"caf\\{1,2}xe9\.jsonl", done.stdout), format  # JSON doubles it
    report = orjson.loads(
        subprocess.run(
            [sys.executable, "-m", "agui_pipeline", "check", name, "--format", "json"],
            capture_output=True,
            cwd=tmp_path,
            timeout=60,
        ).stdout
    )
    assert report["source"] == "caf\\xe9.jsonl" and report["verdict"]["outcome"] == "completed"
    assert printable_name("plain.sse") == "plain.sse"


def test_a_missing_file_with_such_a_name_is_a_usage_error_not_a_crash(tmp_path: Path) -> None:
    name = os.fsdecode(b"gone\xff.sse")
    done = subprocess.run(
        [sys.executable, "-m", "agui_pipeline", "check", name, "--format", "json"],
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 2 and b"Traceback" not in done.stderr
    assert orjson.loads(done.stdout)["error"] == "no such file: gone\\xff.sse"


# -- URLs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "http://user:pw@agent:8/run?api_key=s3cret&v=1&flag",
            "http://***@agent:8/run?api_key=***&v=***&***",
        ),
        ("https://agent/run", "https://agent/run"),
        ("https://[::1]:9/a?token=t#access=x", "https://[::1]:9/a?token=***#***"),
        ("http://token@agent/", "http://***@agent/"),
        ("http://agent:99999/?k=v", "***"),  # not a URL urllib can take apart: nothing of it
    ],
)
def test_a_url_is_written_without_userinfo_or_query_values(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_urls_in_running_text_are_redacted_and_the_punctuation_kept() -> None:
    said = "failed for 'http://u:pw@h/x?key=1' and https://a/b?c=d, then (http://x/y)."
    assert redact_in(said) == (
        "failed for 'http://***@h/x?key=***' and https://a/b?c=***, then (http://x/y)."
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:9/run?BARE_SECRET", "http://127.0.0.1:9/run?***"),
        (
            "s3://KEY1:SECRET@bucket/r.sse?X-Amz-Security-Token=TOKEN",
            "s3://***@bucket/r.sse?X-Amz-Security-Token=***",
        ),
        ("gs://bucket/r.sse#sig", "gs://bucket/r.sse#***"),
        ("file:///runs/a.sse", "file:///runs/a.sse"),
    ],
)
def test_every_scheme_and_a_bare_query_token_are_redacted(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        # A closing bracket the URL did not open ends it; one it opened is its own.
        ("(see http://h/x?k=v)", "(see http://h/x?k=***)"),
        ("[http://u:pw@h/]", "[http://***@h/]"),
        ("at http://[::1]:8/a?k=v.", "at http://[::1]:8/a?k=***."),
        ("at http://[::1]] and", "at http://[::1]] and"),
        ("http://h/w_(x)?a=b, then", "http://h/w_(x)?a=***, then"),
        ("http://h/?t=v);:!?", "http://h/?t=***);:!?"),
    ],
)
def test_a_url_ends_before_the_punctuation_and_brackets_around_it(said: str, shown: str) -> None:
    assert redact_in(said) == shown


def test_a_storage_librarys_text_quoting_part_of_the_url_is_redacted() -> None:
    url = "s3://KEY1:SECRET@bucket/a.sse?X-Amz-Security-Token=TOKEN1&page=2"
    said = 'Invalid bucket name "KEY1:SECRET@bucket"; token TOKEN1, page 2'
    assert redact_in(said, url) == 'Invalid bucket name "***@bucket"; token ***, page 2'


@pytest.mark.parametrize("report_format", ["text", "json", "sarif", "junit"])
def test_no_source_of_any_scheme_prints_its_secrets(report_format: str) -> None:
    sources = [
        "http://127.0.0.1:9/run?BARE_SECRET",
        "s3://KEY1:SECRET1@bucket/runs/a.sse",
        "s3://bucket/runs/*.sse?X-Amz-Security-Token=SECRET2",
    ]
    for source in sources:
        done = agui("check", source, "--format", report_format, env=_NO_AWS)
        everything = done.stdout + done.stderr
        assert done.returncode == 2, everything
        assert "Traceback" not in everything, everything
        for secret in ("BARE_SECRET", "KEY1", "SECRET1", "SECRET2"):
            assert secret not in everything, (source, everything)
        assert "***" in everything


_NO_AWS = {
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_ACCESS_KEY_ID": "x",
    "AWS_SECRET_ACCESS_KEY": "x",
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
    "AWS_MAX_ATTEMPTS": "1",
}
"""No storage service: an s3:// source fails at once, on this machine."""


def test_a_url_sources_sarif_uri_is_the_url() -> None:
    done = agui("check", "http://127.0.0.1:9/run?k=v", "--format", "sarif")
    (run,) = orjson.loads(done.stdout)["runs"]
    assert run["artifacts"][0]["location"] == {"uri": "http://127.0.0.1:9/run?k=***"}


def test_check_url_never_prints_the_credentials(tmp_path: Path) -> None:
    url = "http://alice:hunter2@127.0.0.1:9/agent?api_key=s3cret"
    for format in ("text", "json"):
        done = agui("check", url, "--format", format)
        assert done.returncode == 2
        everything = done.stdout + done.stderr
        assert (
            "hunter2" not in everything and "s3cret" not in everything and "alice" not in everything
        )
        assert "http://***@127.0.0.1:9/agent?api_key=***" in everything


# -- bounded messages --------------------------------------------------------------------------


def test_an_overlong_diagnostic_message_is_cut_and_says_how_long_it_was() -> None:
    diagnostic = Diagnostic("x.y", TRANSPORT_CONNECTION_LOST.severity, "e" * 100_153)
    assert len(diagnostic.message) < MAX_MESSAGE + 60
    assert diagnostic.message.endswith(f"(cut at {MAX_MESSAGE} of 100,153 characters)")
    assert cut_message("short") == "short"
    ctx = Pipeline().context()
    said = ctx.report(TRANSPORT_CONNECTION_LOST, "x" * (MAX_MESSAGE + 1))
    assert re.search(r"cut at 2000 of 2,001 characters\)$", said.message)


def test_documents_over_the_cap_are_refused_with_a_clear_error(tmp_path: Path) -> None:
    stream = tmp_path / "run.jsonl"
    stream.write_bytes(run_error_stream("fine", "extra"))
    big = tmp_path / "big.json"
    with big.open("wb") as file:
        file.truncate(MAX_DOCUMENT + 1)  # sparse: no disk, no memory
    done = agui("check", stream, "--input", big)  # the operator's run input: a usage error
    assert done.returncode == 2, done.stderr
    assert "16,777,217 bytes, over the 16,777,216-byte cap" in done.stderr, done.stderr
    for option in ("--capabilities", "--agent-resource"):  # the producer's: a finding (seed 000)
        done = agui("check", stream, option, big)
        assert done.returncode == 1, (option, done.stderr)
        assert "over the 16,777,216-byte cap" in done.stdout, done.stdout
    with pytest.raises(DocumentTooLarge, match="over the 16,777,216-byte cap"):
        read_agent_resource(big)
    unusable = read_declaration(big)
    assert not unusable.usable and "16,777,216-byte cap" in unusable.notes[0].message
    fits = tmp_path / "fits.json"
    fits.write_bytes(b'{"tools": {"items": []}}'.ljust(MAX_DOCUMENT, b" "))
    assert read_declaration(fits).usable  # the cap itself is allowed


def test_a_network_errors_diagnostic_is_cut_and_redacted() -> None:
    from agui_pipeline.http.reconnect import connection_lost

    ctx = Pipeline().context()
    said = "for http://alice:hunter2@agent/run?key=s3cret: " + "x" * 100_000
    connection_lost(ctx, OSError(said))
    message = ctx.diagnostics[0].message
    assert message.endswith(f"(cut at {MAX_MESSAGE} of 100,133 characters)"), message[-80:]
    assert "hunter2" not in message and "http://***@agent/run?key=***" in message


def test_the_taps_log_messages_are_inert() -> None:
    hostile = run_error_stream(HOSTILE, "\x1b[2Jname")[:-1].replace(b"\n", b"\n\ndata: ")
    stream = (
        b"data: " + hostile + b"\n\n" + b'data: {"type":"TEXT_MESSAGE_END","messageId":"z"}\n\n'
    )

    async def endpoint(request: Request) -> Response:
        await request.body()
        return Response(stream, media_type="text/event-stream")

    seen: list[logging.LogRecord] = []

    class Kept(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler = Kept()
    logger = logging.getLogger("agui_pipeline.http.tap")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        app = Starlette(routes=[Route("/", endpoint, methods=["POST"])])
        with BackgroundServer(Tap(app)) as tapped:
            httpx.post(tapped.url, json={"threadId": "t", "runId": "r", "messages": []})
            deadline = time.monotonic() + 5
            while not any("agui_outcome" in vars(r) for r in seen) and time.monotonic() < deadline:
                time.sleep(0.02)
    finally:
        logger.removeHandler(handler)
    messages = [record.getMessage() for record in seen]
    assert any("\\x1b[2Jname" in message for message in messages), messages
    assert not any(ACTED_ON & set(message) for message in messages), messages
