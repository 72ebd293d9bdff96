"""Every rejection rests on a spec sentence: the catalog's ``Verdict`` of each rejecting code.

A rejection the spec does not call for loses a real agent's answer. So each ``ERROR`` code
names its ground, and where the ground is a quoted sentence, it must stand on the page it
names, word for word (markdown links, emphasis and code spans read as their text).
"""

from __future__ import annotations

import re

import pytest
from agui_pipeline import catalog
from agui_pipeline.catalog import Severity
from agui_pipeline.catalog.code import _code

from tests.conftest import spec_artifacts

REJECTING = [code for code in catalog.ALL.values() if code.severity is Severity.ERROR]


def _plain(markdown: str) -> str:
    """Page text as a reader sees it: links by their text, no emphasis or code marks, one
    space between words."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    text = re.sub(r"[`*]", "", text)
    return " ".join(text.split())


def test_every_rejection_and_only_a_rejection_names_its_ground() -> None:
    assert REJECTING, "the catalog has rejecting codes"
    for code in catalog.ALL.values():
        assert (code.ground is not None) == (code.severity is Severity.ERROR), code.id
    with pytest.raises(ValueError, match="a rejection names its ground"):
        _code("test.unfounded", Severity.ERROR, "/spec/1.1/basic/processing", "x")


@pytest.mark.spec
@pytest.mark.parametrize(
    "code", [c for c in REJECTING if c.ground and c.ground.quoted], ids=lambda c: c.id
)
def test_a_quoted_ground_stands_on_its_page(code: catalog.Code) -> None:
    assert code.ground is not None
    path = spec_artifacts().pages / code.ground.page.removeprefix("/spec/1.1/")
    page = path / "index.mdx" if path.is_dir() else path.with_suffix(".mdx")
    assert page.is_file(), f"{code.id}: no page {code.ground.page}"
    assert _plain(code.ground.sentence) in _plain(page.read_text(encoding="utf-8")), (
        f"{code.id}: the sentence is not on {code.ground.page}"
    )


def test_the_grounds_that_are_not_quotes_say_why_the_consumer_cannot_go_on() -> None:
    unquoted = {c.id for c in REJECTING if c.ground and not c.ground.quoted}
    # Limits (the operator's bounds), an application handler's failure, and the one
    # rule the official corpus holds fatal without a sentence on its page.
    assert unquoted == {
        *(c.id for c in REJECTING if c.id.startswith("limit.")),
        "dispatch.handler-failed",
        "verify.subagent-lifecycle",
    }
