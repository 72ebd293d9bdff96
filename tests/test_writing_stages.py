"""The three stages of ``docs/guides/writing-stages.md``, written from the docs alone (a
redaction of ``TOOL_CALL_ARGS``, dropping ``CUSTOM``, counting by type): they pass
``mypy --strict``, and on a chunked stream they do what the page says. The docs test
runs each as a program; here they are also type-checked, and the redaction is shown to
leak without the form it asks for (the test the page's claim rests on)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, mypy_strict
from tests.test_docs_examples import blocks

PAGE = ROOT / "docs" / "guides" / "writing-stages.md"
STAGES = ("redact_arguments", "drop_custom", "count_types")


def program(name: str) -> str:
    """The example ``name`` as the docs test runs it."""
    found = [block.program for block in blocks(PAGE) if block.caption == f"*`{name}.py`*"]
    assert len(found) == 1, f"{PAGE.name} has no example {name}.py"
    return found[0]


def test_the_stages_of_the_page_pass_mypy_strict(tmp_path: Path) -> None:
    files = []
    for name in STAGES:
        files.append(tmp_path / f"{name}.py")
        files[-1].write_text(program(name))
    done = mypy_strict(*files)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("name", STAGES)
def test_each_stage_behaves_as_the_page_says_on_a_chunked_stream(name: str, tmp_path: Path) -> None:
    assert "_CHUNK" in (ROOT / "docs" / "guides" / "chunked.sse").read_text()
    script = tmp_path / f"{name}.py"
    script.write_text(program(name))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr


FORM = "    form: ClassVar[ChunkForm] = ChunkForm.EXPANDED"


def test_without_its_form_the_redaction_leaks_what_a_chunk_carries(tmp_path: Path) -> None:
    """What the page says of a redaction that does not ask for the expanded form."""
    text = program("redact_arguments")
    assert FORM in text
    script = tmp_path / "leaks.py"
    script.write_text("\n".join(line for line in text.splitlines() if FORM not in line))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 1
    assert "hunter2" in done.stdout  # the call's arguments, printed from the Conversation
