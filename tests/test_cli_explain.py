"""Codes that explain themselves: `explain CODE`, the catalog as pages, where the corpus is."""

from __future__ import annotations

from pathlib import Path

from agui_pipeline import catalog

from tests.cli_run import agui
from tests.conftest import ROOT
from tests.streams import encode
from tests.test_cli_gate import FINISH, START


def test_explain_prints_title_severity_spec_page_and_what_to_do() -> None:
    completed = agui("explain", "enforce.stripped", "verify.truncated")
    assert completed.returncode == 0
    assert completed.stdout.splitlines()[:4] == [
        "enforce.stripped (warning by default)",
        "  an undescribed property or an unrecognised union member or value was stripped",
        "  spec: https://ag-ui.com/spec/1.1/basic/processing",
        "  what to do: " + catalog.ALL["enforce.stripped"].what_to_do,
    ]
    assert "verify.truncated (error: a rejection, it ends the stream; cannot be tuned)" in (
        completed.stdout
    )


def test_explain_an_unknown_code_suggests_the_near_ones() -> None:
    completed = agui("explain", "enforce.strip")
    assert completed.returncode == 2
    assert "did you mean enforce.stripped" in completed.stderr


def test_every_code_has_something_to_do() -> None:
    for entry in catalog.ALL.values():
        assert entry.what_to_do, entry.id
        assert entry.url.startswith("https://ag-ui.com/spec/1.1/"), entry.id


def test_explain_markdown_lists_every_code() -> None:
    """The docs site's page of diagnostic codes (docs/hooks/reference.py builds it from this)."""
    generated = agui("explain", "--markdown").stdout
    for code in catalog.ALL:
        assert f"**`{code}`**" in generated


def test_explain_rejections_lists_every_rejection_and_its_sentence() -> None:
    """The docs site's page of rejections (docs/hooks/reference.py builds it from this)."""
    generated = agui("explain", "--rejections").stdout
    rows = [line for line in generated.splitlines() if line.startswith("| `")]
    rejecting = [c for c in catalog.ALL.values() if c.severity is catalog.Severity.ERROR]
    assert [row.split("`")[1] for row in rows] == [c.id for c in rejecting]
    assert "“A consumer MUST reject any other event that arrives after a run has closed.”" in (
        next(row for row in rows if "`verify.after-close`" in row)
    )


def test_explain_names_the_ground_of_a_rejection() -> None:
    text = agui("explain", "verify.first-event", "lint.result-before-call-end").stdout
    assert "rejected because (spec): A producer MUST NOT emit any other event first" in text
    assert text.count("rejected because") == 1  # a finding is not a rejection


def test_conformance_help_says_where_the_corpus_lives() -> None:
    text = agui("conformance", "--help").stdout
    assert "where the corpus lives:" in text
    assert "ag-ui-protocol/ag-ui" in text and "spec/1.1/conformance" in text
    guide = (ROOT / "docs" / "guides" / "conformance.md").read_text(encoding="utf-8")
    assert "ag-ui-protocol/ag-ui" in guide and "spec/1.1/conformance" in guide


def test_did_you_mean_only_one_edit_away(tmp_path: Path) -> None:
    def stripped(member: str) -> str:
        start = {"type": "TEXT_MESSAGE_START", "messageId": "m", member: "m", "role": "assistant"}
        stream = tmp_path / "run.sse"
        end = {"type": "TEXT_MESSAGE_END", "messageId": "m"}
        stream.write_bytes(encode([START, start, end, FINISH], "sse"))
        (line,) = [x for x in agui("check", stream).stdout.splitlines() if "stripped /" in x]
        return line

    assert "(did you mean messageId?)" in stripped("messageID")  # a substitution
    assert "(did you mean messageId?)" in stripped("mesageId")  # a deletion
    assert "(did you mean role?)" in stripped("roles")  # an insertion
    assert "did you mean" not in stripped("msgID")  # further away: no guess
