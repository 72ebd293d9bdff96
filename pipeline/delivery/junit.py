"""A ``check`` result as JUnit XML, the report CI systems read from ``pytest --junitxml``.

The document is ``<testsuites>`` with one ``<testsuite>`` per source. Each
suite has a ``stream`` test case, failed when the source fails the check
(its verdict, or the ``--fail-on`` gate), errored when it could not be read;
and one test case per run, failed when the run ended with ``RUN_ERROR`` and
``--fail-on run-error`` (or stricter) is in force. The text report goes in
the ``stream`` case's ``<system-out>``. Element and attribute names are the ones pytest
writes, so whatever reads pytest's reports reads these.
"""

from __future__ import annotations

import re
import socket
from datetime import UTC, datetime
from typing import TextIO
from xml.sax.saxutils import escape, quoteattr

from agui_pipeline._engine.result import Outcome, RunResult
from agui_pipeline.stage import RunStatus

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters XML 1.0 cannot carry at all, even escaped (a producer's message may hold any)."""


def _text(value: str) -> str:
    return escape(_NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", value))


def _attr(value: str) -> str:
    return quoteattr(_NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", value))


_NO_OUTCOME = (RunStatus.OPEN, RunStatus.TRUNCATED)


def document_open(many: bool) -> str:
    return '<?xml version="1.0" encoding="utf-8"?>\n<testsuites name="agui-pipeline check">\n'


def document_close(many: bool) -> str:
    return "</testsuites>\n"


def write_suite(
    out: TextIO,
    name: str,
    result: RunResult | None,
    *,
    failures: list[str],
    error: str | None,
    fail_on_run_error: bool,
    text: str,
) -> None:
    """One source's ``<testsuite>``."""
    cases: list[tuple[str, str | None, str | None]] = []
    """(name, failure message, error message) per test case."""
    if result is None:
        cases.append(("stream", None, error or "not checked"))
    else:
        cases.append(("stream", "; ".join(failures) or None, None))
        for position, run in enumerate(result.runs):
            run_name = f"run {run.run_id}" if run.run_id is not None else f"run #{position}"
            failed = None
            if run.status is RunStatus.ERROR and fail_on_run_error:
                failed = f"the run ended with RUN_ERROR: {run.error}"
            elif run.status in _NO_OUTCOME and result.verdict.outcome is not Outcome.COMPLETED:
                failed = f"the run has no outcome: the stream was {result.verdict.outcome}"
            cases.append((run_name, failed, None))
    failed_count = sum(1 for _, failure, _ in cases if failure)
    errored = sum(1 for _, _, problem in cases if problem)
    out.write(
        f'  <testsuite name={_attr(name)} errors="{errored}" failures="{failed_count}" '
        f'skipped="0" tests="{len(cases)}" time="0" '
        f'timestamp="{datetime.now(UTC).isoformat(timespec="seconds")}" '
        f"hostname={_attr(socket.gethostname())}>\n"
    )
    for position, (case, failure, problem) in enumerate(cases):
        out.write(f'    <testcase classname={_attr(name)} name={_attr(case)} time="0">\n')
        if position == 0:
            out.write(f"      <system-out>{_text(text)}</system-out>\n")
        if failure is not None:
            out.write(f"      <failure message={_attr(failure)}>{_text(failure)}</failure>\n")
        if problem is not None:
            out.write(f"      <error message={_attr(problem)}>{_text(problem)}</error>\n")
        out.write("    </testcase>\n")
    out.write("  </testsuite>\n")
