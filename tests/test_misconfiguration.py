"""Misconfiguration refused where it is made, naming what was expected and the name meant:
a handler for an event type that does not exist, and a ``str`` declaration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest
from agui_pipeline import EventType, Handlers, Pipeline, UsageError
from agui_pipeline.declaration import Declaration
from agui_pipeline.subscribers import HandledType

from tests.cli_run import agui
from tests.conftest import ROOT, mypy_strict

WEATHER = ROOT / "examples" / "weather.sse"
DECLARATION = ROOT / "examples" / "weather.capabilities.json"


def ignore(event: Any) -> None:
    pass


# -- handlers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("TEXT_MESAGE_CONTENT", "TEXT_MESSAGE_CONTENT"),  # a letter left out
        ("text_message_content", "TEXT_MESSAGE_CONTENT"),  # another style
        ("TOOL_CALL_ARG", "TOOL_CALL_ARGS"),
    ],
)
def test_a_handler_for_a_misspelt_event_type_is_refused_naming_the_type(
    name: str, meant: str
) -> None:
    with pytest.raises(UsageError, match=f"{name!r}.*did you mean {meant}") as refused:
        Handlers().on(name, ignore)  # type: ignore[call-overload]
    assert "/spec/1.1/basic/processing" in str(refused.value)
    with pytest.raises(UsageError, match=f"did you mean {meant}"):
        Pipeline(handlers={name: ignore})
    with pytest.raises(UsageError, match=f"did you mean {meant}"):
        Handlers().add(name, ignore)


def test_every_event_type_and_the_wildcard_are_accepted() -> None:
    handlers = Handlers()
    for member in EventType:
        handlers.on(member, ignore)
        handlers.add(member.value, ignore)
    handlers.on("*", ignore)
    assert set(handlers.by_type) == {member.value for member in EventType} | {"*"}
    assert set(get_args(HandledType)) == set(handlers.by_type)


MISSPELT = """
from agui_pipeline import Handlers
from agui_pipeline.events import EventType, TextMessageContentEvent

handlers = Handlers()


def show(event: TextMessageContentEvent) -> None: ...


handlers.on("TEXT_MESSAGE_CONTENT")(show)
handlers.on(EventType.TEXT_MESSAGE_CONTENT, show)
handlers.on("*", print)
handlers.on("TEXT_MESAGE_CONTENT")(show)  # line 14
handlers.on("TEXT_MESAGE_CONTENT", show)  # line 15
"""


def test_mypy_refuses_a_misspelt_event_type(tmp_path: Path) -> None:
    script = tmp_path / "misspelt.py"
    script.write_text(MISSPELT)
    done = mypy_strict(script)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["14", "15"], done.stdout
    assert all('No overload variant of "on"' in line for line in errors)


# -- a str declaration is a path, as a str source is ---------------------------------------


def declared(pipeline: Pipeline) -> Declaration:
    declaration = pipeline.options.capabilities
    assert isinstance(declaration, Declaration)  # read once, when the pipeline was made
    return declaration


def test_a_str_declaration_names_a_file_as_a_str_source_does() -> None:
    by_str = declared(Pipeline(capabilities=str(DECLARATION)))
    assert by_str.capabilities is not None
    assert by_str.capabilities == declared(Pipeline(capabilities=DECLARATION)).capabilities


def test_json_text_in_a_str_declaration_is_refused_with_the_rule() -> None:
    text = DECLARATION.read_text()
    with pytest.raises(ValueError, match=r"reads as JSON text, not a file: a str declaration"):
        Pipeline(capabilities=text)
    assert declared(Pipeline(capabilities=text.encode())).capabilities is not None


def test_a_str_declaration_naming_no_file_is_a_note_that_says_the_rule(tmp_path: Path) -> None:
    """The library stays lenient: a declaration that cannot be read never rejects a stream."""
    declaration = declared(Pipeline(capabilities=str(tmp_path / "missing.json")))
    assert declaration.capabilities is None
    assert "a str declaration is a file path" in declaration.notes[0].message
    unnameable = declared(Pipeline(capabilities="run\x00.json"))  # no system names that file
    assert "no file can be named" in unnameable.notes[0].message


# -- the command line: unrecognised members are not a reason to refuse ------------------
# (a declaration it cannot use is a finding, not a refusal: tests/test_unusable_declaration.py)


def test_check_still_takes_a_declaration_with_members_it_does_not_know(tmp_path: Path) -> None:
    """Unrecognised members are kept and noted, not refused (``/spec/1.1/basic/capabilities``)."""
    declaration = json.loads(DECLARATION.read_text()) | {"futureMember": {}}
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(declaration))
    done = agui("check", WEATHER, "--capabilities", newer, "--fail-on", "error")
    assert done.returncode == 0, done.stdout + done.stderr
