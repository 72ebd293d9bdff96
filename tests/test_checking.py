"""Checking one source as a library function (``agui_pipeline._checking``): what
``check`` and ``fleet`` both run, called without the command line."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pytest
from agui_pipeline._checking import FAILED, PASSED, UNCHECKED, CheckError
from agui_pipeline._checking.gate import Gate
from agui_pipeline._checking.meter import StreamMeter
from agui_pipeline._checking.source import CheckSettings, check_source, load_middleware
from agui_pipeline.cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from agui_pipeline.events import AnyEvent

from tests.cli_run import agui
from tests.conftest import ROOT

EXAMPLES = ROOT / "examples"


class _Seen:
    """A sink that counts the events delivered."""

    def __init__(self) -> None:
        self.events = 0

    async def write(self, events: Sequence[AnyEvent]) -> None:
        self.events += len(events)


def test_a_source_gets_the_status_check_exits_with_for_it() -> None:
    assert (PASSED, FAILED, UNCHECKED) == (EXIT_OK, EXIT_FAILED, EXIT_USAGE)
    for name in ("weather.sse", "rejected.sse", "misspelt.sse"):
        checked = check_source(str(EXAMPLES / name), CheckSettings())
        assert checked.status == agui("check", EXAMPLES / name).returncode, name
        assert checked.result is not None
        assert (checked.status == FAILED) == bool(checked.failures), name


def test_the_gate_in_the_settings_judges() -> None:
    source = str(EXAMPLES / "misspelt.sse")
    warned = check_source(source, CheckSettings())
    assert warned.status == FAILED
    assert any("warning" in failure for failure in warned.failures)
    lenient = check_source(source, CheckSettings(gate=Gate(fail_on="verdict")))
    assert (lenient.status, lenient.failures) == (PASSED, [])


def test_what_keeps_a_source_from_being_checked_is_its_result(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sse"
    checked = check_source(str(missing), CheckSettings())
    assert (checked.status, checked.result) == (UNCHECKED, None)
    assert checked.error == f"no such file: {missing}"
    said = check_source(str(tmp_path), CheckSettings()).error
    assert said == f"{tmp_path} is a directory, not a file: it is not read"


def test_the_sink_sees_the_events_and_the_meter_is_closed() -> None:
    seen, line = _Seen(), io.StringIO()
    meter = StreamMeter(line, forced=True)
    checked = check_source(str(EXAMPLES / "weather.sse"), CheckSettings(), meter=meter, sink=seen)
    assert checked.result is not None
    assert seen.events == meter.events == checked.result.counters.read > 0
    assert line.getvalue().endswith("\n")  # closed: its line ended


def test_a_middleware_that_does_not_load_is_a_check_error() -> None:
    with pytest.raises(CheckError, match="expects MODULE:FACTORY"):
        load_middleware("no-colon")
    checked = check_source(
        str(EXAMPLES / "weather.sse"), CheckSettings(middleware=("no_such_module:Stage",))
    )
    assert checked.status == UNCHECKED
    assert checked.error is not None
    assert "importing no_such_module failed" in checked.error
