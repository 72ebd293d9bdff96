"""The switch between the native core and the pure Python reference, as a user sees it."""

from __future__ import annotations

import os
import subprocess
import sys

from agui_pipeline import _cores

from tests.conftest import ROOT
from tests.cores import native_module


def _without_the_setting() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != _cores.PURE_SETTING}


def _version(**env: str) -> str:
    completed = subprocess.run(
        [sys.executable, "-m", "agui_pipeline", "--version"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_without_the_setting() | env,
        check=True,
    )
    return completed.stdout


def test_version_names_the_native_core_when_it_is_built() -> None:
    native_module()
    assert _version().endswith(" (native core)\n")


def test_the_pure_setting_switches_to_the_python_core_and_says_so() -> None:
    assert _version(AGUI_PIPELINE_PURE="1").endswith(" (pure Python core: AGUI_PIPELINE_PURE=1)\n")
    if _cores.native is not None:
        assert _version(AGUI_PIPELINE_PURE="0").endswith(" (native core)\n")


def test_without_the_extension_the_python_core_runs_and_says_why() -> None:
    hidden = "import sys; sys.modules['agui_pipeline._native'] = None; "
    completed = subprocess.run(
        [sys.executable, "-c", hidden + "from agui_pipeline import _cores; print(_cores.ACTIVE)"],
        capture_output=True,
        text=True,
        env=_without_the_setting(),
        check=True,
    )
    assert completed.stdout == "pure Python core: extension not built\n"


def test_a_panic_in_the_native_core_is_an_ordinary_exception() -> None:
    """A panic arrives as the module's InternalError (its message names the stage: the
    crate's own test, ``a_panic_becomes_a_message_naming_the_stage``), never as PyO3's
    PanicException, a BaseException the engine would not note with the stage."""
    assert issubclass(native_module().InternalError, RuntimeError)
