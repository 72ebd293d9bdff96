"""``check``'s reports, one writer per ``--format``: text (``path:line:col: severity code:``
lines with the fix), JSON, SARIF and JUnit, each source's part written as it is checked."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TextIO

import orjson
from agui_pipeline import catalog
from agui_pipeline._checking.gate import FAIL_ON
from agui_pipeline._checking.source import Checked
from agui_pipeline._engine.result import Outcome, RunResult
from agui_pipeline.catalog import Severity
from agui_pipeline.cli.common import Settings, Style
from agui_pipeline.delivery.escaping import inert
from agui_pipeline.delivery.locate import changed_since
from agui_pipeline.delivery.report import Finding, findings, producer_report
from agui_pipeline.stage import RunRecord, RunStatus

# The SARIF and JUnit writers are imported by the formats that use them: `check` on a
# short file pays for neither.

# -- check: the reports ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Report:
    """A report format: what opens and closes the document, and one source's part."""

    write: Callable[[Checked, Settings, TextIO], None]
    open: Callable[[bool], str] = lambda many: ""
    between: str = ""
    close: Callable[[bool], str] = lambda many: ""


def _verdict_line(checked: Checked, style: Style) -> str:
    """``NAME: OUTCOME`` and, for a stream that was read to its end, why it fails the check.

    A completed stream on which a run ended with ``RUN_ERROR`` reads ``run-error``: the
    stream is sound, the run failed (as a relay reports an upstream it lost).
    """
    name = inert(checked.name)
    if checked.result is None:
        return f"{name}: {style.paint('error', 'bad')}: {inert(checked.error or '')}"
    result = checked.result
    completed = result.verdict.outcome is Outcome.COMPLETED
    outcome = str(result.verdict.outcome)
    if completed and result.run_counts.get(str(RunStatus.ERROR)):
        outcome = "run-error"
    tone = "good" if outcome == str(Outcome.COMPLETED) else "bad"
    line = f"{name}: {style.paint(outcome, tone)}"
    if checked.failures and completed:
        line += f", {style.paint('failed', 'bad')}: " + "; ".join(checked.failures)
    return line


def _text_report(checked: Checked, settings: Settings, out: TextIO) -> None:
    style = settings.style
    out.write(_verdict_line(checked, style) + "\n")
    result = checked.result
    if result is None or settings.quiet:
        return
    counters = result.counters
    out.write(
        f"  events: {counters.read} read, {counters.delivered} delivered, "
        f"{counters.dropped} dropped, {counters.stripped} members stripped, "
        f"{counters.expanded} chunks expanded into {counters.synthesized}"
        + (f", {counters.discarded} discarded at the rejection" if counters.discarded else "")
        + f" ({result.transport or 'no framing'})\n"
    )
    listed = len(result.runs)
    for position, run in enumerate(result.runs):
        if position == listed // 2 and sum(result.run_counts.values()) > listed:
            unlisted = sum(result.run_counts.values()) - listed
            out.write(f"  ... {unlisted} more runs not listed (limit max_run_records)\n")
        out.write(f"  {_run_line(run)}\n")
    if sum(result.run_counts.values()) > listed:
        counted = ", ".join(f"{count} {status}" for status, count in result.run_counts.items())
        out.write(f"  runs: {counted}\n")
    unplaced = _unplaced(checked)
    if unplaced:
        out.write(f"  note: {inert(unplaced)}: findings are named by event, not placed by line\n")
    for finding in _placed(checked, settings):
        out.write(_finding_text(checked.name, finding, style))
    for code, count in result.suppressed.items():
        out.write(f"  ... and {count} more {code} (limit max_diagnostics)\n")
    report = producer_report(result.diagnostics, result.suppressed)
    if any(group.count > 1 for group in report.groups):  # the grouping says something new
        out.write("  " + "\n  ".join(inert(line) for line in report.render().split("\n")) + "\n")


def _unplaced(checked: Checked) -> str | None:
    """Why the findings are not placed in the stream file, when it is no longer the one
    judged (it changed after, or while, it was checked)."""
    if checked.stream_file is None:
        return None
    return changed_since(checked.stream_file, checked.judged)


def _placed(checked: Checked, settings: Settings) -> list[Finding]:
    """The checked source's findings, placed in the stream file and the declaration."""
    assert checked.result is not None
    return findings(
        checked.result,
        stream=checked.stream_file,
        declaration=settings.capabilities,
        judged=checked.judged,
    )


def _finding_text(source: str, finding: Finding, style: Style) -> str:
    """A finding as a compiler prints one, for editors and CI annotations to pick up::

        run.sse:3:51: warning verify.tool-result-unseen: TOOL_CALL_RESULT answers ...
          event 1, at /toolCallId; spec: https://ag-ui.com/spec/1.1/events/tool-calls
          fix: Pass the run input ... (agui-pipeline explain verify.tool-result-unseen)

    The place is the stream file's line and column (or the declaration's, for a finding
    about it); without one, the source's name alone.
    """
    diagnostic, position = finding.diagnostic, finding.position
    place = inert(source)
    if position is not None:
        place = f"{inert(finding.file or source)}:{position.line}:{position.column}"
    severity = str(diagnostic.severity)
    message = inert(diagnostic.message)  # the producer's text: inert on a terminal
    text = f"{place}: {style.paint(severity, severity)} {diagnostic.code}: {message}\n"
    where = []
    if diagnostic.event_index is not None:
        where.append(f"event {diagnostic.event_index}")
    if diagnostic.pointer is not None:
        where.append(f"at {inert(diagnostic.pointer) or '/'}")
    if diagnostic.declared is not None:
        where.append(f"declaration {diagnostic.declared}")
    said = [", ".join(where)] if where else []
    if diagnostic.spec:
        said.append(f"spec: {style.link(catalog.spec_url(diagnostic.spec))}")
    if said:
        text += "  " + "; ".join(said) + "\n"
    if finding.fix and diagnostic.severity is not Severity.INFO:
        text += f"  fix: {finding.fix} (agui-pipeline explain {diagnostic.code})\n"
    return text


def _run_line(run: RunRecord) -> str:
    """One run: its ids and how it ended (``run 'r1' (thread 't1'): interrupted, 2 interrupts``)."""
    name = "(failed before it began)" if run.run_id is None else repr(run.run_id)
    thread = "" if run.thread_id is None else f" (thread {run.thread_id!r})"
    detail = ""
    if run.status is RunStatus.ERROR:
        detail = f": {run.error}"
    elif run.status is RunStatus.INTERRUPTED and run.outcome is not None:
        detail = f", {len(run.outcome['interrupts'])} interrupt(s)"
    return inert(f"run {name}{thread}: {run.status}{detail}")


def _json_report(checked: Checked, settings: Settings, out: TextIO) -> None:
    """One source's JSON object; the Conversation, when asked for, is written piece by
    piece, so a huge one is never held a second time as one serialised document."""
    result = checked.result
    report: dict[str, Any] = {"source": checked.name, "status": checked.status}
    if result is None:
        report["error"] = checked.error
        out.write(_dumps(report))
        return
    counters = result.counters
    placed = _placed(checked, settings)
    report |= {
        "failures": checked.failures,
        "verdict": _verdict_fields(result, placed),
        "transport": result.transport,
        "counters": {
            "read": counters.read,
            "delivered": counters.delivered,
            "dropped": counters.dropped,
            "stripped": counters.stripped,
            "expanded": counters.expanded,
            "synthesized": counters.synthesized,
            "discarded": counters.discarded,
        },
        "diagnostics": [finding.to_dict() for finding in placed if not finding.ended_stream],
        "suppressed": result.suppressed,
        "producerReport": producer_report(result.diagnostics, result.suppressed).to_dict(),
        "runs": [run.to_dict() for run in result.runs],
        "runCounts": result.run_counts,
    }
    head = _dumps(report)
    conversation = result.materialised
    if not settings.conversation or conversation is None:
        out.write(head)
        return
    out.write(head[:-2] + ',\n  "conversation": {\n    "messages": [')
    activity = []
    for position, message in enumerate(conversation.messages):
        out.write(("," if position else "") + "\n      " + _dumps(message, 6))
        if message.get("role") == "activity":
            activity.append(message.get("id"))
    out.write("\n    ],\n")
    out.write(f'    "state": {_dumps(conversation.state, 4)},\n')
    out.write(f'    "interrupts": {_dumps(conversation.interrupts, 4)},\n')
    out.write(f'    "activity": {_dumps(activity, 4)}\n  }}\n}}')


def _verdict_fields(result: RunResult, placed: list[Finding]) -> dict[str, Any]:
    """The verdict as separate fields: the outcome, then what the rejection (if any) said,
    where, why and how to fix it, as each diagnostic has them."""
    fields: dict[str, Any] = {"outcome": str(result.verdict.outcome)}
    for finding in placed:
        if finding.ended_stream:
            said = finding.to_dict()
            return fields | {name: said[name] for name in _FINDING_FIELDS}
    return fields | dict.fromkeys(_FINDING_FIELDS)


_FINDING_FIELDS = (
    "code",
    "message",
    "spec",
    "fix",
    "file",
    "line",
    "column",
    "eventIndex",
    "pointer",
)


def _dumps(value: Any, indent: int = 0) -> str:
    text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    return text.replace("\n", "\n" + " " * indent) if indent else text


def _sarif_report(checked: Checked, settings: Settings, out: TextIO) -> None:
    from agui_pipeline.delivery.sarif import sarif_run

    if checked.result is None:
        run = sarif_run(checked.name, None, error=checked.error, root=settings.sarif_root)
    else:
        run = sarif_run(
            checked.name,
            checked.result,
            stream_file=checked.stream_file,
            judged=checked.judged,
            declaration=settings.capabilities or settings.agent_resource,
            derived=settings.agent_resource is not None,
            root=settings.sarif_root,
        )
    out.write(orjson.dumps(run, option=orjson.OPT_INDENT_2).decode())


def _junit_report(checked: Checked, settings: Settings, out: TextIO) -> None:
    from agui_pipeline.delivery import junit

    junit.write_suite(
        out,
        checked.name,
        checked.result,
        failures=checked.failures,
        error=checked.error,
        fail_on_run_error=FAIL_ON.index(settings.check.gate.fail_on) >= FAIL_ON.index("error"),
        text=_plain_text(checked, settings),
    )


def _plain_text(checked: Checked, settings: Settings) -> str:
    buffer = io.StringIO()
    _text_report(checked, replace(settings, style=Style(), quiet=False), buffer)
    return buffer.getvalue()


def _sarif_open(many: bool) -> str:
    from agui_pipeline.delivery.sarif import sarif_log_open

    return sarif_log_open(many)


def _sarif_close(many: bool) -> str:
    from agui_pipeline.delivery.sarif import sarif_log_close

    return sarif_log_close(many)


def _junit_open(many: bool) -> str:
    from agui_pipeline.delivery.junit import document_open

    return document_open(many)


def _junit_close(many: bool) -> str:
    from agui_pipeline.delivery.junit import document_close

    return document_close(many)


REPORTS: dict[str, Report] = {
    "text": Report(_text_report),
    "json": Report(
        _json_report,
        open=lambda many: "[\n" if many else "",
        between=",\n",
        close=lambda many: "\n]\n" if many else "\n",
    ),
    "sarif": Report(_sarif_report, open=_sarif_open, between=",\n", close=_sarif_close),
    "junit": Report(_junit_report, open=_junit_open, close=_junit_close),
}
