"""A ``check`` result as SARIF 2.1.0, so findings show up in code-scanning tools.

One SARIF run per checked stream. Every diagnostic becomes a result whose
rule is its catalog code; the rejection that ended the stream, if any, is an
``error`` result. A result about an event points at its line and column in the
stream file (where the text and JSON reports place it: :func:`report.findings`),
with the event index and JSON pointer as a logical location; a reconcile finding
also points at the field of the capabilities declaration it is about.

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
from agui_pipeline.delivery.locate import Position, Stamp
from agui_pipeline.delivery.report import Finding, findings
from agui_pipeline.errors import Diagnostic

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
ROOT_ID = "SRCROOT"
"""The ``uriBaseId`` relative URIs are resolved against (``--sarif-root``, or the cwd)."""


def sarif_log_open(many: bool) -> str:
    """The start of a log written one run at a time (``check`` with several sources)."""
    return f'{{\n  "$schema": "{SARIF_SCHEMA}",\n  "version": "2.1.0",\n  "runs": [\n'


def sarif_log_close(many: bool) -> str:
    return "\n  ]\n}\n"


def sarif_run(
    source: str,
    result: RunResult | None,
    *,
    stream_file: str | None = None,
    declaration: str | None = None,
    derived: bool = False,
    root: str | None = None,
    error: str | None = None,
    judged: Stamp | None = None,
) -> dict[str, Any]:
    """One SARIF run for one checked stream.

    ``source`` is the stream's path as given (``"-"`` for stdin), ``stream_file``
    the file to re-read for lines and columns (``None``: stdin, a URL, a fixture,
    which have none), ``declaration`` the
    path of the capabilities (or agent resource: ``derived``) file, ``root`` the folder
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
        "columnKind": "unicodeCodePoints",
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
    rules: dict[str, dict[str, Any]] = {}
    declared_at = None if declaration is None else _artifact(declaration, base)
    # A declaration derived from an agent resource has no lines of its own to point at.
    placed_in = None if derived else declaration
    for finding in findings(result, stream=stream_file, declaration=placed_in, judged=judged):
        rules.setdefault(finding.diagnostic.code, _rule(finding.diagnostic))
        run["results"].append(_result(finding, artifact, declared_at))
    driver["rules"] = list(rules.values())
    if declared_at is not None:
        run["artifacts"].append({"location": declared_at})
    run["properties"] = {"verdict": result.verdict.to_dict(), "transport": result.transport}
    return run


def _artifact(path: str, base: Path) -> dict[str, Any]:
    """A file's artifact location: relative to ``base`` when inside it, else a file:// URI.

    Stdin has no file: it is named ``stdin``, relative to nothing; a URL source is its URL.
    """
    if path == "-":
        return {"uri": "stdin"}
    if "://" in path:  # a URL (an agent's, an fsspec one): itself, already redacted
        return {"uri": path}
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
    finding: Finding, artifact: dict[str, Any], declaration: dict[str, Any] | None
) -> dict[str, Any]:
    diagnostic, position = finding.diagnostic, finding.position
    index, pointer, declared = diagnostic.event_index, diagnostic.pointer, diagnostic.declared
    physical: dict[str, Any] = {"artifactLocation": artifact}
    location: dict[str, Any] = {"physicalLocation": physical}
    if index is not None:
        # A region only where the position is known: past the last frame (a
        # truncation), stdin or a URL there is none, and none is made up.
        if position is not None:
            physical["region"] = {"startLine": position.line, "startColumn": position.column}
        location["logicalLocations"] = [
            {"fullyQualifiedName": f"event[{index}]{pointer or ''}", "kind": "element"}
        ]
    elif declared is not None and declaration is not None:
        location = _declaration_location(declaration, declared, position)
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


def _declaration_location(
    declaration: dict[str, Any], declared: str, position: Position | None = None
) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": declaration}
    if position is not None:
        physical["region"] = {"startLine": position.line, "startColumn": position.column}
    return {
        "physicalLocation": physical,
        "logicalLocations": [{"fullyQualifiedName": declared, "kind": "member"}],
        "message": {"text": f"declared at {declared}"},
    }
