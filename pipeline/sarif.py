"""A ``check`` result as SARIF 2.1.0, so findings show up in code-scanning tools.

One SARIF run per checked stream. Every diagnostic becomes a result whose
rule is its catalog code; the rejection that ended the stream, if any, is an
``error`` result. A result about an event points at the line its frame starts
on in the stream file (found by re-reading the file's framing), with the event
index and JSON pointer as a logical location; a reconcile finding also points
at the field of the capabilities declaration it is about.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import catalog
from .engine import RunResult
from .errors import Diagnostic

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def sarif_report(
    source: str,
    result: RunResult,
    *,
    stream: bytes | None = None,
    declaration: str | None = None,
) -> dict[str, Any]:
    """The SARIF log for one checked stream.

    ``source`` is the stream's path as given (``"-"`` for stdin), ``stream``
    its bytes when they can be re-read for line numbers, ``declaration`` the
    path of the capabilities (or agent resource) file.
    """
    lines = frame_lines(stream, result.transport) if stream is not None else []
    uri = "stdin" if source == "-" else Path(source).as_posix()
    diagnostics = list(result.diagnostics)
    error = result.verdict.error
    if error is not None:
        code = getattr(error, "code", catalog.HANDLER_FAILED.id)
        diagnostics.append(
            Diagnostic(
                code,
                catalog.Severity.ERROR,
                str(error),
                error.event_index,
                getattr(error, "pointer", None),
                getattr(error, "spec", ""),
            )
        )
    rules: dict[str, dict[str, Any]] = {}
    results = []
    for diagnostic in diagnostics:
        rules.setdefault(diagnostic.code, _rule(diagnostic))
        results.append(_result(diagnostic, uri, lines, declaration))
    artifacts = [{"location": {"uri": uri}}]
    if declaration is not None:
        artifacts.append({"location": {"uri": Path(declaration).as_posix()}})
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "agui-pipeline",
                        "informationUri": "https://docs.ag-ui.com",
                        "rules": list(rules.values()),
                    }
                },
                "artifacts": artifacts,
                "results": results,
                "properties": {"verdict": result.verdict.to_dict(), "transport": result.transport},
            }
        ],
    }


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
        rule["properties"] = {"spec": spec}
    return rule


def _result(
    diagnostic: Diagnostic, uri: str, lines: list[int], declaration: str | None
) -> dict[str, Any]:
    index, pointer, declared = diagnostic.event_index, diagnostic.pointer, diagnostic.declared
    location: dict[str, Any] = {"physicalLocation": {"artifactLocation": {"uri": uri}}}
    if index is not None:
        line = lines[index] if index < len(lines) else 1
        location["physicalLocation"]["region"] = {"startLine": line}
        location["logicalLocations"] = [
            {"fullyQualifiedName": f"event[{index}]{pointer or ''}", "kind": "element"}
        ]
    elif declared is not None and declaration is not None:
        location = _declaration_location(declaration, declared)
    else:
        location["physicalLocation"]["region"] = {"startLine": 1}
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


def _declaration_location(declaration: str, declared: str) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": Path(declaration).as_posix()},
            "region": {"startLine": 1},
        },
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
