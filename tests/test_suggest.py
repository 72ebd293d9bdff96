""" "Did you mean": wherever a name is close to a known one — an event type in any
casing, a member of an event (required or optional), a member of a declaration, a code
in --rule or in pyproject.toml — and nowhere else."""

from __future__ import annotations

from pathlib import Path

import pytest
from agui_pipeline._suggest import closest, did_you_mean
from agui_pipeline.catalog import ALL
from agui_pipeline.events import EventType
from agui_pipeline.model.declared import read_declaration

from tests.cli_run import agui
from tests.streams import encode
from tests.test_enforce import RUN, enforce, rejected

TYPES = [str(kind) for kind in EventType]


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("text_message_start", "TEXT_MESSAGE_START"),  # another case
        ("textMessageStart", "TEXT_MESSAGE_START"),  # camelCase
        ("TextMessageStart", "TEXT_MESSAGE_START"),
        ("text-message-start", "TEXT_MESSAGE_START"),
        ("TEXT_MESAGE_START", "TEXT_MESSAGE_START"),  # a letter left out
        ("TEXT_MESSAGE_STRAT", "TEXT_MESSAGE_START"),  # two letters swapped
        ("TOOL_CALL_RESULTS", "TOOL_CALL_RESULT"),  # a letter added
        ("RUN_FINISHEd", "RUN_FINISHED"),
    ],
)
def test_an_event_type_close_to_a_known_one(name: str, meant: str) -> None:
    assert closest(name, TYPES) == meant


@pytest.mark.parametrize("name", ["RUN_START", "FOO", "", "MESSAGE", "x" * 10_000])
def test_nothing_is_suggested_for_a_name_further_away(name: str) -> None:
    assert closest(name, TYPES) is None
    assert did_you_mean(name, TYPES) == ""


def test_a_known_name_is_never_its_own_suggestion() -> None:
    assert closest("messageId", ["messageId", "messageID"]) == "messageID"
    assert closest("role", ["role"]) is None


def test_an_unknown_event_type_names_the_type_it_misspells() -> None:
    outcome = enforce(RUN, {"type": "textMessageStart", "messageId": "m", "role": "assistant"})
    assert outcome.warnings == [
        'enforce.unknown-event: dropped an event of unknown type "textMessageStart" '
        "(did you mean TEXT_MESSAGE_START?) (event 1, at /) [/spec/1.1/basic/processing]"
    ]
    assert (
        enforce(RUN, {"type": "VENDOR_PING"})
        .warnings[0]
        .endswith('unknown type "VENDOR_PING" (event 1, at /) [/spec/1.1/basic/processing]')
    )


def test_a_required_member_absent_names_the_member_that_misspells_it() -> None:
    error = rejected(RUN, {"type": "TEXT_MESSAGE_START", "messageID": "m", "role": "assistant"})
    assert error.pointer == "/messageId"
    assert error.detail == (
        "TEXT_MESSAGE_START /messageId: expected string (a required field), received nothing "
        '(the field is absent); "messageID" is there: did you mean messageId? '
        "(schema.json#TextMessageStartEvent)"
    )
    far = rejected(RUN, {"type": "TEXT_MESSAGE_START", "msg": "m", "role": "assistant"})
    assert "did you mean" not in far.detail


@pytest.mark.parametrize(
    ("member", "meant"),
    [("MessageID", "messageId"), ("message_id", "messageId"), ("nmae", "name")],
)
def test_an_optional_member_stripped_names_the_member_it_misspells(member: str, meant: str) -> None:
    start = {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "user", member: "x"}
    (warning,) = enforce(RUN, start).warnings
    assert f"stripped /{member} from TEXT_MESSAGE_START" in warning
    assert f"(did you mean {meant}?)" in warning


def test_a_declaration_member_close_to_a_defined_one() -> None:
    declaration = read_declaration(
        {"humaninTheLoop": {}, "tools": {"parallelCall": True, "items": [{"name": "f",
         "description": "d", "paramters": {}}]}, "futureGroup": {}}
    )  # fmt: skip
    messages = sorted(note.message for note in declaration.notes)
    assert messages == [
        "declaration /futureGroup: a member this version of AgentCapabilities does not define; "
        "kept, and not read",
        "declaration /humaninTheLoop: a member this version of AgentCapabilities does not "
        "define; kept, and not read (did you mean humanInTheLoop?)",
        "declaration /tools/items/0/paramters: a member this version of AgentCapabilities "
        "does not define; kept, and not read (did you mean parameters?)",
        "declaration /tools/parallelCall: a member this version of AgentCapabilities does not "
        "define; kept, and not read (did you mean parallelCalls?)",
    ]


def test_rule_names_on_the_command_line_and_in_the_configuration(tmp_path: Path) -> None:
    stream = tmp_path / "run.sse"
    stream.write_bytes(
        encode([RUN, {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}], "sse")
    )
    for argv in (["--rule", "enforce.Stripped=off"], ["--off", "lint.result-call-unsen"]):
        refused = agui("check", stream, *argv)
        assert refused.returncode == 2
        meant = "enforce.stripped" if "Stripped" in argv[1] else "lint.result-call-unseen"
        assert f"(did you mean {meant}?)" in refused.stderr
    assert (
        "did you mean warning?" in agui("check", stream, "--rule", "enforce.stripped=warn").stderr
    )
    (tmp_path / "pyproject.toml").write_text(
        '[tool.agui-pipeline]\nrules = { "lint.run-identiy" = "off" }\n'
    )
    refused = agui("check", stream, cwd=tmp_path)
    assert refused.returncode == 2 and "(did you mean lint.run-identity?)" in refused.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.agui-pipeline]\nfail_on = "error"\n')
    refused = agui("check", stream, cwd=tmp_path)
    assert refused.returncode == 2
    assert "unknown key 'fail_on' (did you mean fail-on?)" in refused.stderr
    assert "lint.run-identity" in ALL and "lint.result-call-unseen" in ALL
