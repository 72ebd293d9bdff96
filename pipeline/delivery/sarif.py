"""A ``check`` result as SARIF 2.1.0, so findings show up in code-scanning tools.

One SARIF run per checked stream. Every diagnostic becomes a result whose
rule is its catalog code; the rejection that ended the stream, if any, is an
``error`` result. A result about an event points at the line its frame starts
on in the stream file (found by re-reading the file's framing), with the event
index and JSON pointer as a logical location; a reconcile finding also points
at the field of the capabilities declaration it is about.

Fit for code scanning: file URIs are relative to a root folder (the current
directory, or ``--sarif-root``) through the ``SRCROOT`` base id, a file
outside it gets an absolute ``file://`` URI; rules carry ``help`` and
``helpUri`` (the spec page); the driver carries the package version; and a
result has a ``region`` only where its line is known.
"""

from __future__ import annotations

import os
from importlib.metadata import version
from pathlib import Path
from typing import Any

from agui_pipeline import catalog
from agui_pipeline._engine.result import RunResult
from agui_pipeline.errors import Diagnostic

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
ROOT_ID = "SRCROOT"
"""The ``uriBaseId`` relative URIs are resolved against (``--sarif-root``, or the cwd)."""


def sarif_report(
    source: str,
    result: RunResult,
    *,
    stream: bytes | None = None,
    declaration: str | None = None,
    root: str | None = None,
) -> dict[str, Any]:
    """The SARIF log for one checked stream (see :func:`sarif_run`)."""
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [sarif_run(source, result, stream=stream, declaration=declaration, root=root)],
    }


def sarif_log_open(many: bool) -> str:
    """The start of a log written one run at a time (``check`` with several sources)."""
    return f'{{\n  "$schema": "{SARIF_SCHEMA}",\n  "version": "2.1.0",\n  "runs": [\n'


def sarif_log_close(many: bool) -> str:
    return "\n  ]\n}\n"


def sarif_run(
    source: str,
    result: RunResult | None,
    *,
    stream: bytes | None = None,
    declaration: str | None = None,
    root: str | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """One SARIF run for one checked stream.

    ``source`` is the stream's path as given (``"-"`` for stdin), ``stream``
    its bytes when they can be re-read for line numbers, ``declaration`` the
    path of the capabilities (or agent resource) file, ``root`` the folder
    file URIs are relative to (default the current directory). ``result`` is
    ``None`` when the source could not be read: ``error`` says why, as a tool
    execution notification.
    """
    base = Path(root or os.getcwd()).resolve()
    artifact = _artifact(source, base)
    driver: dict[str, Any] = {
        "name": "agui-pipeline",
        "version": version("agui-pipeline"),
        "informationUri": catalog.SPEC_SITE,
        "rules": [],
    }
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "originalUriBaseIds": {ROOT_ID: {"uri": base.as_uri() + "/"}},
        "artifacts": [{"location": artifact}],
        "results": [],
    }
    if result is None:
        run["invocations"] = [
            {
                "executionSuccessful": False,
                "toolExecutionNotifications": [
                    {"level": "error", "message": {"text": error or "not checked"}}
                ],
            }
        ]
        return run
    lines = frame_lines(stream, result.transport) if stream is not None else []
    diagnostics = list(result.diagnostics)
    verdict_error = result.verdict.error
    if verdict_error is not None:
        code = getattr(verdict_error, "code", catalog.HANDLER_FAILED.id)
        diagnostics.append(
            Diagnostic(
                code,
                catalog.Severity.ERROR,
                getattr(verdict_error, "detail", str(verdict_error)),
                verdict_error.event_index,
                getattr(verdict_error, "pointer", None),
                getattr(verdict_error, "spec", ""),
            )
        )
    rules: dict[str, dict[str, Any]] = {}
    declared_at = None if declaration is None else _artifact(declaration, base)
    for diagnostic in diagnostics:
        rules.setdefault(diagnostic.code, _rule(diagnostic))
        run["results"].append(_result(diagnostic, artifact, lines, declared_at))
    driver["rules"] = list(rules.values())
    if declared_at is not None:
        run["artifacts"].append({"location": declared_at})
    run["properties"] = {"verdict": result.verdict.to_dict(), "transport": result.transport}
    return run


def _artifact(path: str, base: Path) -> dict[str, Any]:
    """A file's artifact location: relative to ``base`` when inside it, else a file:// URI.

    Stdin has no file: it is named ``stdin``, relative to nothing.
    """
    if path == "-":
        return {"uri": "stdin"}
    absolute = Path(path).resolve()
    if absolute.is_relative_to(base):
        return {"uri": absolute.relative_to(base).as_posix(), "uriBaseId": ROOT_ID}
    return {"uri": absolute.as_uri()}


def _rule(diagnostic: Diagnostic) -> dict[str, Any]:
    code = catalog.ALL.get(diagnostic.code)
    title = code.title if code is not None else diagnostic.code
    spec = diagnostic.spec or (code.spec if code is not None else "")
    rule: dict[str, Any] = {
        "id": diagnostic.code,
        "shortDescription": {"text": title},
        "fullDescription": {"text": f"{title} ({spec})" if spec else title},
        "defaultConfiguration": {
            "level": _LEVEL[str(code.severity if code else diagnostic.severity)]
        },
    }
    if spec:
        url = catalog.spec_url(spec)
        advice = code.what_to_do if code is not None else ""
        rule["helpUri"] = url
        rule["help"] = {
            "text": f"{advice} See {url}".strip(),
            "markdown": f"{advice} See [{spec}]({url}).".strip(),
        }
        rule["properties"] = {"spec": spec}
    return rule


def _result(
    diagnostic: Diagnostic,
    artifact: dict[str, Any],
    lines: list[int],
    declaration: dict[str, Any] | None,
) -> dict[str, Any]:
    index, pointer, declared = diagnostic.event_index, diagnostic.pointer, diagnostic.declared
    physical: dict[str, Any] = {"artifactLocation": artifact}
    location: dict[str, Any] = {"physicalLocation": physical}
    if index is not None:
        # A line only where the frame's line is known: past the last frame (a
        # truncation), stdin or a JSON array there is none, and none is made up.
        if index < len(lines):
            physical["region"] = {"startLine": lines[index]}
        location["logicalLocations"] = [
            {"fullyQualifiedName": f"event[{index}]{pointer or ''}", "kind": "element"}
        ]
    elif declared is not None and declaration is not None:
        location = _declaration_location(declaration, declared)
    result: dict[str, Any] = {
        "ruleId": diagnostic.code,
        "level": _LEVEL[str(diagnostic.severity)],
        "message": {"text": diagnostic.message},
        "locations": [location],
        "properties": {
            "eventIndex": index,
            "pointer": pointer,
            "spec": diagnostic.spec,
            "declared": declared,
        },
    }
    if declared is not None and declaration is not None and index is not None:
        result["relatedLocations"] = [{"id": 1, **_declaration_location(declaration, declared)}]
    return result


def _declaration_location(declaration: dict[str, Any], declared: str) -> dict[str, Any]:
    return {
        "physicalLocation": {"artifactLocation": declaration},
        "logicalLocations": [{"fullyQualifiedName": declared, "kind": "member"}],
        "message": {"text": f"declared at {declared}"},
    }


def frame_lines(data: bytes, framing: str | None) -> list[int]:
    """The 1-based line each frame starts on, in frame order (the parse stage's framings).

    A JSON array document is one value whose elements are not tracked: every
    frame is placed on line 1.
    """
    text = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    rows = text.split(b"\n")
    if framing == "jsonl":
        return [number for number, row in enumerate(rows, 1) if row.strip()]
    if framing != "sse":
        return []
    starts: list[int] = []
    block_start: int | None = None
    for number, row in enumerate(rows, 1):
        if not row:
            block_start = None
            continue
        if row.startswith(b"data") and row[4:5] in (b":", b"") and block_start is None:
            block_start = number
            starts.append(number)
    return starts
