"""The conformance corpus through the runner, and the runner's own checks.

Every fixture in the corpus (``AGUI_SPEC_DIR``, see ``tests/conftest.py``) is one case. Each
``expect`` key's checker is then shown to go red: a fixture whose
expectation is mutated must FAIL on that key, with what was seen.
"""

from __future__ import annotations

import copy
import io
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from agui_pipeline.cli import main
from agui_pipeline.testing.conformance import (
    CHECKS,
    DEVIATIONS,
    VERDICT_KEYS,
    Fixture,
    FixtureReport,
    check_fixture,
    expectations,
    fixture_paths,
    load_fixture,
    run_fixture,
    subset_mismatch,
)

from tests.conftest import corpus_file, corpus_paths, never_judged, spec_artifacts

pytestmark = pytest.mark.usefixtures("built_in_run")  # every rule on every path (conftest)


@pytest.mark.parametrize("path", corpus_paths())
def test_corpus_fixture(path: Path) -> None:
    report = check_fixture(run_fixture(load_fixture(path)))
    assert report.passed, report.line()


def test_a_fixture_that_asks_for_its_verdict_alone_is_judged_as_the_pipeline_judges_it(
    built_in_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner replays a fixture whose ``expect`` reads no event in judge mode where the
    native core is on (``deliver``: the engine as it ships), and the report is the one the
    pipeline's replay gives; on the Python paths the pipeline replays every fixture."""
    from agui_pipeline._engine import judge as judge_module

    judged: list[str] = []
    judge_file = judge_module.judge_file

    def spied(*args: Any) -> Any:
        answer = judge_file(*args)
        if answer is not None:
            judged.append(fixture.name)
        return answer

    monkeypatch.setattr(judge_module, "judge_file", spied)
    asking = 0
    for path in spec_artifacts().fixtures():
        fixture = load_fixture(path)
        asking += expectations(fixture)[0].keys() <= VERDICT_KEYS
        replay = run_fixture(fixture)
        report = check_fixture(replay)
        assert report.passed, report.line()
        if fixture.name in judged:
            assert replay.result is not None and replay.result.materialised is None
            with monkeypatch.context() as replayed:
                replayed.setattr(judge_module, "judges", never_judged)
                piped = run_fixture(fixture)
            assert check_fixture(piped).to_dict() == report.to_dict()
            assert [str(d) for d in piped.warnings] == [str(d) for d in replay.warnings]
            assert piped.result is not None and replay.result.counters == piped.result.counters
    assert asking >= 10, "the corpus has few fixtures that ask for a verdict alone"
    if built_in_run == "deliver":  # most of them break a rule: the pipeline says which
        assert judged, f"none of the {asking} fixtures that ask for a verdict was judged"
    else:
        assert not judged, "judge mode stood in on a Python path"


def test_the_corpus_is_all_there_and_each_fixture_is_named_for_its_file() -> None:
    fixtures = spec_artifacts().fixtures()
    assert len(fixtures) >= 52  # the subset in ../shared; the AG-UI repository has them all
    assert all(load_fixture(path).name == path.stem for path in fixtures)


# -- each checker can fail ----------------------------------------------------------------


def mutated(name: str, **expect: Any) -> FixtureReport:
    """Run fixture ``name`` with its ``expect`` changed; the report."""
    fixture = load_fixture(corpus_file(name))
    changed = replace(fixture, expect={**copy.deepcopy(fixture.expect), **expect})
    return check_fixture(run_fixture(changed))


def failed_keys(report: FixtureReport) -> list[str]:
    return [failure.key for failure in report.failures]


MUTATIONS: list[tuple[str, str, Any, str]] = [
    # fixture, key, wrong expectation, text the failure must show
    ("triad-assembles-message", "outcome", "failed", "saw completed"),
    ("nested-run-started-fatal", "outcome", "completed", "saw rejected"),
    ("nested-run-started-fatal", "errorContains", "no such words", "while a run is still active"),
    ("triad-assembles-message", "errorContains", "anything", "saw completed"),
    ("run-error-first-run-continues", "runError", "another message", "the agent was unreachable"),
    ("triad-assembles-message", "runError", True, "saw none"),
    ("unknown-event-dropped", "eventTypes", ["RUN_STARTED", "RUN_FINISHED"], "TEXT_MESSAGE_START"),
    ("unknown-event-dropped", "eventTypesAbsent", ["TEXT_MESSAGE_END"], "TEXT_MESSAGE_END"),
    ("unknown-property-stripped", "eventPaths", {"2.delta": "other"}, '"content survives"'),
    ("unknown-property-stripped", "eventPaths", {"2.nothing": 1}, "absent"),
    ("state-null-snapshot-applies", "eventPaths", {"2.snapshot": False}, "is null"),
    ("unknown-property-stripped", "eventAbsentPaths", ["2.delta"], "content survives"),
    ("unknown-event-dropped", "warnings", ["never said"], "FUTURE_EVENT"),
    ("unknown-event-dropped", "noWarnings", True, "FUTURE_EVENT"),
    ("triad-assembles-message", "messageCount", 2, "saw 1"),
    (
        "metadata-merges-last-write-wins",
        "messages",
        [{"metadata": {"trace": ["one", "two", "three"]}}],
        "/0/metadata/trace",
    ),
    ("triad-assembles-message", "messages", [{"content": "other"}, {}], "expected 2 elements"),
    ("state-snapshot-replaces", "state", {"only-this": True}, "expected an object"),
    ("state-delta-applies", "state", {"plan": {"status": "open"}}, '"closed"'),
    ("state-null-snapshot-applies", "state", False, "saw null"),
    ("current-peer-declares-protocol-version", "request", {"protocolVersion": "1.0"}, '"1.1"'),
    ("current-peer-declares-protocol-version", "requestAbsentPaths", ["protocolVersion"], "1.1"),
]


@pytest.mark.parametrize(
    ("name", "key", "wrong", "seen"), MUTATIONS, ids=[f"{m[1]}-{m[0]}" for m in MUTATIONS]
)
def test_a_wrong_expectation_fails_on_its_key_and_shows_what_was_seen(
    name: str, key: str, wrong: Any, seen: str
) -> None:
    report = mutated(name, **{key: wrong})
    assert failed_keys(report) == [key]
    assert seen in report.line()
    assert report.line().startswith(f"FAIL {name}: {key}: ")


def test_every_expect_key_of_the_format_has_a_checker_and_a_mutation() -> None:
    assert {m[1] for m in MUTATIONS} == set(CHECKS)


def test_an_unknown_expect_key_fails_rather_than_passing_silently() -> None:
    assert failed_keys(mutated("triad-assembles-message", eventCount=6)) == ["eventCount"]


def test_expect_overrides_are_ignored() -> None:
    fixture = load_fixture(corpus_file("metadata-merges-last-write-wins"))
    data = orjson.loads(corpus_file("metadata-merges-last-write-wins").read_bytes())
    assert "expectOverrides" in data and "expectOverrides" not in fixture.expect
    assert check_fixture(run_fixture(fixture)).passed


# -- the subset match -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "actual", "problem"),
    [
        ({"a": 1}, {"a": 1, "b": 2}, None),
        ({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, None),
        ([{"id": "x"}], [{"id": "x", "content": "y"}], None),
        (None, None, None),
        ({"a": 1.0}, {"a": 1}, None),
        ({"a": 1}, {"a": True}, "at /a: expected 1, saw true"),
        ({"a": 1}, {}, "at /a: absent"),
        ([1, 2], [1, 2, 3], "expected 2 elements"),
        ([], [1], "expected 0 elements"),
        ({"a": []}, {"a": {}}, "at /a: expected 0 elements"),
        ({}, [], "expected an object"),
        (None, {}, "expected null"),
    ],
)
def test_subset_match(expected: Any, actual: Any, problem: str | None) -> None:
    found = subset_mismatch(expected, actual, "")
    assert found == problem if problem is None else (found is not None and problem in found)


# -- the deviation registry ---------------------------------------------------------------------


def test_the_one_deviation_asserts_the_spec_and_is_pinned_to_the_corpus() -> None:
    assert set(DEVIATIONS) == {"unknown-enum-value-role-fatal"}
    fixture = load_fixture(corpus_file("unknown-enum-value-role-fatal"))
    deviation = DEVIATIONS[fixture.name]
    assert fixture.expect == deviation.pinned
    report = check_fixture(run_fixture(fixture))
    assert report.passed and report.deviation is deviation
    assert "deviation" in report.line()
    # The corpus's own expectation (the admitted gap) would not hold here.
    replay = run_fixture(fixture)
    assert CHECKS["outcome"](replay, "failed") is not None


def test_a_deviation_goes_stale_when_the_corpus_changes_the_fixture() -> None:
    fixture = load_fixture(corpus_file("unknown-enum-value-role-fatal"))
    changed = replace(fixture, expect={"outcome": "completed", "warnings": ["/role"]})
    report = check_fixture(run_fixture(changed))
    assert failed_keys(report) == ["deviation"]


def test_the_deviation_checks_the_spec_behaviour_and_would_catch_the_gap() -> None:
    fixture = load_fixture(corpus_file("unknown-enum-value-role-fatal"))
    bad_role_kept = replace(
        fixture,
        stream=[
            {**e, "role": "user"} if e["type"] == "TEXT_MESSAGE_START" else e
            for e in fixture.stream
        ],
    )
    assert "messages" in failed_keys(check_fixture(run_fixture(bad_role_kept)))


# -- replay hooks ---------------------------------------------------------------------------------


def test_a_source_replaces_the_in_memory_replay() -> None:
    fixture = load_fixture(corpus_file("triad-assembles-message"))
    other = [e for e in fixture.stream if e["type"] != "TEXT_MESSAGE_CONTENT"]
    jsonl = b"".join(orjson.dumps(e) + b"\n" for e in other)
    report = check_fixture(run_fixture(fixture, source=jsonl))
    assert failed_keys(report) == ["messages"]
    assert report.failures[0].detail == 'at /0/content: expected "Deltas concatenate.", saw ""'


def test_the_request_takes_its_ids_from_the_first_run_started() -> None:
    fixture = load_fixture(corpus_file("era-pinned-peer-omits-protocol-version"))
    replay = run_fixture(fixture)
    assert replay.request is not None
    assert (replay.request["threadId"], replay.request["runId"]) == ("t-erapin", "r-1")
    assert replay.result is not None and replay.result.verdict.completed


def test_a_rejected_input_is_a_failed_outcome_with_its_message() -> None:
    fixture = Fixture(
        "bad-input",
        stream=[],
        expect={"outcome": "failed", "errorContains": "messages"},
        input={"messages": "not a list"},
    )
    report = check_fixture(run_fixture(fixture))
    assert report.passed, report.line()


# -- the command ------------------------------------------------------------------------------


def test_the_command_prints_a_line_per_fixture_and_the_totals(tmp_path: Path) -> None:
    good = corpus_file("triad-assembles-message")
    data = orjson.loads(good.read_bytes())
    data["name"] = "triad-wrong"
    data["expect"]["messageCount"] = 3
    bad = tmp_path / "triad-wrong.json"
    bad.write_bytes(orjson.dumps(data))
    out = io.StringIO()
    assert main(["conformance", str(good), str(tmp_path)], out=out) == 1
    lines = out.getvalue().splitlines()
    assert lines == [
        "ok triad-assembles-message",
        "FAIL triad-wrong: messageCount: expected 3, saw 1",
        "1 passed, 1 failed",
    ]
    out = io.StringIO()
    assert main(["conformance", "--json", str(good)], out=out) == 0
    document = orjson.loads(out.getvalue())
    assert (document["passed"], document["failed"]) == (1, 0)
    assert document["fixtures"][0] == {
        "name": "triad-assembles-message",
        "passed": True,
        "failures": [],
        "deviation": None,
    }


def test_the_command_rejects_a_missing_path(tmp_path: Path) -> None:
    assert main(["conformance", str(tmp_path / "nothing")], out=io.StringIO()) == 2
    assert main(["conformance", str(tmp_path)], out=io.StringIO()) == 2  # no fixtures


def test_a_file_that_is_not_a_fixture_fails_without_stopping_the_rest(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "empty.json").write_text('{"stream": []}')
    out = io.StringIO()
    assert main(["conformance", str(tmp_path)], out=out) == 1
    assert out.getvalue().splitlines()[-1] == "0 passed, 2 failed"
    assert [p.name for p in fixture_paths([tmp_path])] == ["broken.json", "empty.json"]
