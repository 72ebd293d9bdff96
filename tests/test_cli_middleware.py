"""``check --middleware`` and ``bench --middleware``: a user's stage factory loaded from the
current directory, and every way loading it can fail answered as a usage error (exit 2)
naming the spec and the cause, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.cli_run import agui

STAGES = """
from typing import ClassVar

from agui_pipeline import Batch, ChunkForm, Stage, StreamContext


class DropCustom(Stage):
    name: ClassVar[str] = "drop-custom"

    async def process(self, batch: Batch) -> Batch:
        keep = [i for i, event in enumerate(batch.events) if event["type"] != "CUSTOM"]
        return Batch([batch.events[i] for i in keep], [batch.indices[i] for i in keep])


class Expanded(Stage):
    name: ClassVar[str] = "expanded"
    form: ClassVar[ChunkForm] = ChunkForm.EXPANDED


class AsSent(Stage):
    name: ClassVar[str] = "as-sent"
    form: ClassVar[ChunkForm] = ChunkForm.AS_SENT


def needs_arguments(ctx: StreamContext, names: list[str]) -> Stage:
    return DropCustom(ctx)


def not_a_stage(ctx: StreamContext) -> object:
    return 1


NOT_CALLABLE = 3
"""

STREAM = (
    'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
    'data: {"type":"CUSTOM","name":"n","value":1}\n\n'
    'data: {"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"hi"}\n\n'
    'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A directory holding the user's stages (``mystages.py``) and a recording."""
    (tmp_path / "mystages.py").write_text(STAGES)
    (tmp_path / "broken.py").write_text("raise RuntimeError('no configuration found')\n")
    (tmp_path / "run.sse").write_text(STREAM)
    return tmp_path


def test_check_runs_the_middleware_found_in_the_current_directory(project: Path) -> None:
    done = agui(
        "check", "run.sse", "run.sse", "--middleware", "mystages:DropCustom", "--format",
        "json", "--jobs", "2", cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for source in json.loads(done.stdout):
        assert source["counters"]["dropped"] == 1  # the CUSTOM, counted by the engine
        assert source["counters"]["delivered"] == 5


def test_the_installed_script_finds_the_middleware_in_the_current_directory(
    project: Path,
) -> None:
    """``python -m`` puts the current directory on the path; the console script does not."""
    script = Path(sys.executable).parent / "agui-pipeline"
    done = subprocess.run(
        [script, "check", "run.sse", "--middleware", "mystages:DropCustom", "-q"],
        capture_output=True, text=True, cwd=project, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("spec", "cause"),
    [
        ("mystages", "expects MODULE:FACTORY"),
        ("nowhere:Stage", "importing nowhere failed: ModuleNotFoundError: No module named"),
        ("broken:Stage", "importing broken failed: RuntimeError: no configuration found"),
        ("mystages:Missing", "module mystages has no attribute 'Missing', not a stage factory"),
        ("mystages:NOT_CALLABLE", "module mystages has a int 'NOT_CALLABLE'"),
        (
            "mystages:needs_arguments",
            "the factory failed when given a StreamContext: TypeError: needs_arguments()",
        ),
        ("mystages:not_a_stage", "the factory returned a int, not a Stage"),
    ],
)
@pytest.mark.parametrize("command", ["check", "bench"])
def test_a_middleware_that_does_not_load_is_a_usage_error(
    project: Path, command: str, spec: str, cause: str
) -> None:
    done = agui(command, "run.sse", "--middleware", spec, cwd=project)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert f"agui-pipeline: --middleware {spec}" in done.stderr or "MODULE:FACTORY" in cause
    assert cause in done.stderr
    assert "Traceback" not in done.stderr


def test_a_middleware_placed_where_its_form_cannot_be_met_is_a_usage_error(
    project: Path,
) -> None:
    done = agui(
        "check", "run.sse", "--middleware", "mystages:Expanded", "--middleware",
        "mystages:AsSent", cwd=project,
    )  # fmt: skip
    assert done.returncode == 2
    assert "the 'as-sent' stage asks for chunks as sent" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_middleware_option_is_described(project: Path) -> None:
    done = agui("check", "--help", cwd=project)
    assert "--middleware MODULE:FACTORY" in done.stdout
    assert textwrap.fill("a stage of yours to run as middleware", 200) in " ".join(
        done.stdout.split()
    )
