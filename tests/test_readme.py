"""Every Python block of the README runs as written, unless it is marked as a fragment.

A fragment is a block preceded by the line ``<!-- fragment -->``: a few lines
shown in the middle of a story (``await`` at top level, names from the prose).
Each other block runs in a fresh interpreter from the repository's root, so
one that needs a name it does not define, or a file that is not there, fails.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import ROOT

FRAGMENT = "<!-- fragment -->\n"
BLOCK = re.compile(r"(<!-- fragment -->\n)?```python\n(.*?)```", flags=re.DOTALL)


def runnable_blocks() -> list[Any]:
    readme = (ROOT / "README.md").read_text()
    blocks = []
    for found in BLOCK.finditer(readme):
        if found[1] is None:
            line = readme.count("\n", 0, found.start(2)) + 1
            blocks.append(pytest.param(line, found[2], id=f"line-{line}"))
    return blocks


def test_the_readme_has_runnable_blocks_and_fragments_are_few() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(runnable_blocks()) >= 9
    assert readme.count(FRAGMENT) <= 7


@pytest.mark.parametrize(("line", "code"), runnable_blocks())
def test_a_readme_block_runs_as_written(line: int, code: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, f"README.md line {line}:\n{done.stderr}"
