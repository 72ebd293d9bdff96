"""The conformance runner: replay corpus fixtures and check every ``expect`` key.

A fixture (the AG-UI conformance corpus format) is one JSON file: ``stream``
(raw events, sent verbatim), optional ``input`` and ``client``
(``maxProtocolVersion``, the peer's era), and ``expect``. For each fixture
the runner

1. builds the run input from ``input`` (``threadId``/``runId`` taken from the
   stream's first ``RUN_STARTED`` when the input lacks them) and passes it
   through the outgoing boundary, :func:`agui_pipeline.model.run_input.prepare_input`,
   with the peer's version — the body that would be sent is what ``request``
   and ``requestAbsentPaths`` check;
2. replays ``stream`` as SSE through the default :class:`~agui_pipeline.Pipeline`
   (``peer_max_protocol_version`` set, ``run_input`` the prepared body) — or
   through any other source the caller supplies, such as a real HTTP server;
3. checks every ``expect`` key, ignoring ``expectOverrides`` (other clients).

``outcome: "failed"`` means the consumer's verdict is rejected or truncated;
``"completed"`` means the stream was consumed (a ``RUN_ERROR`` is a run
reporting its own failure, checked by ``runError``).

Where a fixture pins an admitted gap of the reference client against the
spec, :data:`DEVIATIONS` holds the one deliberate deviation, with its reason
and the spec-correct assertion the runner checks instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import orjson
from agui_pipeline._engine.pipeline import Pipeline
from agui_pipeline._engine.result import Outcome, RunResult
from agui_pipeline._engine.sources import Source
from agui_pipeline.errors import AguiPipelineError, Diagnostic, InputRejected
from agui_pipeline.model.patch import json_equal

# -- the deviation registry ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Deviation:
    """A fixture this project deliberately does not follow, and what it checks instead."""

    reason: str
    spec: str
    """The page whose rule the replacement assertion follows."""
    pinned: dict[str, Any]
    """The fixture's own ``expect`` as it stood when the deviation was recorded: if the
    corpus changes it, the deviation is stale and the fixture fails until it is reviewed."""
    expect: dict[str, Any]
    """The spec-correct assertion, checked in place of the fixture's ``expect``."""


DEVIATIONS: dict[str, Deviation] = {
    "unknown-enum-value-role-fatal": Deviation(
        reason=(
            "the fixture pins an admitted gap of the reference client (an unrecognised member "
            "of a closed string set is fatal there); processing.mdx says it is unrecognised "
            "material, stripped with a warning naming its path, and an absent role means "
            "assistant"
        ),
        spec="/spec/1.1/basic/processing",
        pinned={"outcome": "failed", "errorContains": "role"},
        expect={
            "outcome": "completed",
            "warnings": ["/role"],
            "eventTypes": [
                "RUN_STARTED",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "RUN_FINISHED",
            ],
            "eventAbsentPaths": ["1.role"],
            "messageCount": 1,
            "messages": [
                {
                    "id": "m-unknown-role",
                    "role": "assistant",
                    "content": "the role above is the only defect in this stream",
                }
            ],
        },
    ),
}


# -- fixtures ----------------------------------------------------------------------------


class FixtureError(AguiPipelineError):
    """A fixture file that cannot be read as a fixture."""


@dataclass(frozen=True, slots=True)
class Fixture:
    """One corpus fixture, as loaded."""

    name: str
    stream: list[dict[str, Any]]
    expect: dict[str, Any]
    input: dict[str, Any] | None = None
    client: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @property
    def peer_max_protocol_version(self) -> str | None:
        version = self.client.get("maxProtocolVersion")
        return version if isinstance(version, str) else None

    def sse(self) -> bytes:
        """The stream as SSE frames, one ``data:`` line per event, events verbatim."""
        return b"".join(b"data: " + orjson.dumps(event) + b"\n\n" for event in self.stream)

    def raw_input(self) -> dict[str, Any]:
        """The run input before the outgoing boundary: ``input`` completed with the ids."""
        raw = dict(self.input or {})
        started = next((e for e in self.stream if e.get("type") == "RUN_STARTED"), {})
        raw.setdefault("threadId", started.get("threadId", f"t-{self.name}"))
        raw.setdefault("runId", started.get("runId", f"r-{self.name}"))
        raw.setdefault("messages", [])
        return raw


def load_fixture(path: str | Path) -> Fixture:
    """Read one fixture file; :class:`FixtureError` when it is not one."""
    path = Path(path)
    try:
        document = path.read_bytes()
    except OSError as exc:
        raise FixtureError(f"{path}: cannot read a JSON document: {exc}") from None
    return parse_fixture(document, str(path), path)


def parse_fixture(document: bytes, where: str, path: Path | None = None) -> Fixture:
    """The fixture in ``document``, read from ``where`` (a path or a URL)."""
    try:
        data = orjson.loads(document)
    except orjson.JSONDecodeError as exc:
        raise FixtureError(f"{where}: cannot read a JSON document: {exc}") from None
    if type(data) is not dict:
        raise FixtureError(f"{where}: a fixture is a JSON object")
    stream, expect = data.get("stream"), data.get("expect")
    if type(stream) is not list or not all(type(e) is dict for e in stream):
        raise FixtureError(f"{where}: 'stream' must be an array of event objects")
    if type(expect) is not dict:
        raise FixtureError(f"{where}: 'expect' must be an object")
    run_input, client = data.get("input"), data.get("client") or {}
    if run_input is not None and type(run_input) is not dict:
        raise FixtureError(f"{where}: 'input' must be an object")
    if type(client) is not dict:
        raise FixtureError(f"{where}: 'client' must be an object")
    name = data["name"] if isinstance(data.get("name"), str) else PurePosixPath(where).stem
    return Fixture(name, stream, expect, run_input, client, path)


def fixture_paths(paths: Iterable[str | Path]) -> list[Path]:
    """The fixture files named: files as given, folders' ``*.json`` sorted by name."""
    found: list[Path] = []
    for entry in map(Path, paths):
        if entry.is_dir():
            found.extend(sorted(entry.glob("*.json")))
        elif entry.is_file():
            found.append(entry)
        else:
            raise FixtureError(f"no such file or folder: {entry}")
    return found


# -- replaying ------------------------------------------------------------------------


@dataclass(slots=True)
class FixtureReplay:
    """What one fixture produced: the request sent, and the stream's result."""

    fixture: Fixture
    request: dict[str, Any] | None
    """The body the outgoing boundary produced (``None`` when it rejected the input)."""
    input_diagnostics: list[Diagnostic]
    input_error: InputRejected | None = None
    """The boundary rejected the input: nothing was sent, and there is no result."""
    result: RunResult | None = None
    crash: str | None = None
    """The pipeline raised something other than a verdict (a bug, reported as a failure)."""

    @property
    def warnings(self) -> list[Diagnostic]:
        """Warnings from the outgoing boundary and from the stream."""
        stream = self.result.diagnostics if self.result is not None else []
        return [d for d in [*self.input_diagnostics, *stream] if d.severity == "warning"]


async def replay_fixture(fixture: Fixture, source: Source | None = None) -> FixtureReplay:
    """Prepare the request and replay the stream (``source`` replaces the in-memory SSE)."""
    from agui_pipeline.model.run_input import (
        prepare_input,  # pydantic: imported by a replay, not by `check`
    )

    version = fixture.peer_max_protocol_version
    try:
        prepared = prepare_input(fixture.raw_input(), peer_max_protocol_version=version)
    except InputRejected as error:
        return FixtureReplay(fixture, None, [], input_error=error)
    replay = FixtureReplay(fixture, prepared.body, list(prepared.diagnostics))
    pipeline = Pipeline(peer_max_protocol_version=version)
    try:
        if source is None:
            source = fixture.sse()
            if expectations(fixture)[0].keys() <= VERDICT_KEYS:
                from agui_pipeline._engine.judge import judge_file

                replay.result = judge_file(pipeline, source, prepared.body)
        if replay.result is None:
            replay.result = await pipeline.run(source, run_input=prepared.body)
    except Exception as exc:  # a bug in a stage: report it on this fixture, go on
        replay.crash = f"{type(exc).__name__}: {exc}"
    return replay


VERDICT_KEYS = frozenset(
    {"outcome", "errorContains", "warnings", "noWarnings", "request", "requestAbsentPaths"}
)
"""The ``expect`` keys that read no event and no Conversation: a fixture that asks only
these is replayed in judge mode where the native core is built (``_engine/judge.py``: no
event built when the judge finds the stream clean, the pipeline otherwise)."""


def run_fixture(fixture: Fixture, source: Source | None = None) -> FixtureReplay:
    """:func:`replay_fixture` from synchronous code (starts an event loop)."""
    from agui_pipeline._engine.incremental import run_in_loop

    return run_in_loop(replay_fixture, fixture, source)


# -- checking -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Failure:
    """One ``expect`` key that did not hold, with what was seen."""

    key: str
    detail: str

    def __str__(self) -> str:
        return f"{self.key}: {self.detail}"


@dataclass(slots=True)
class FixtureReport:
    """One fixture's verdict."""

    name: str
    failures: list[Failure]
    deviation: Deviation | None = None

    @property
    def passed(self) -> bool:
        return not self.failures

    def line(self) -> str:
        if self.failures:
            return f"FAIL {self.name}: " + "; ".join(map(str, self.failures))
        note = f" (deviation: follows {self.deviation.spec})" if self.deviation else ""
        return f"ok {self.name}{note}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "failures": [{"key": f.key, "detail": f.detail} for f in self.failures],
            "deviation": None
            if self.deviation is None
            else {"reason": self.deviation.reason, "spec": self.deviation.spec},
        }


def expectations(fixture: Fixture) -> tuple[dict[str, Any], Deviation | None]:
    """The assertions to check for ``fixture``: its ``expect``, or its registered deviation's."""
    deviation = DEVIATIONS.get(fixture.name)
    return (fixture.expect, None) if deviation is None else (deviation.expect, deviation)


def check_fixture(replay: FixtureReplay) -> FixtureReport:
    """Check every ``expect`` key of the replayed fixture (``expectOverrides`` ignored)."""
    fixture = replay.fixture
    expect, deviation = expectations(fixture)
    failures: list[Failure] = []
    if deviation is not None and not json_equal(fixture.expect, deviation.pinned):
        failures.append(
            Failure(
                "deviation",
                f"the corpus changed this fixture's expect to {_show(fixture.expect)}; the "
                "registered deviation is stale and needs review",
            )
        )
    if replay.crash is not None:
        failures.append(Failure("run", f"the pipeline raised {replay.crash}"))
        return FixtureReport(fixture.name, failures, deviation)
    for key, expected in expect.items():
        checker = CHECKS.get(key)
        if checker is None:
            failures.append(Failure(key, "this runner does not know the key"))
            continue
        problem = checker(replay, expected)
        if problem is not None:
            failures.append(Failure(key, problem))
    return FixtureReport(fixture.name, failures, deviation)


def check_paths(paths: Iterable[str | Path]) -> list[FixtureReport]:
    """Load, replay and check every fixture under ``paths``."""
    reports = []
    for path in fixture_paths(paths):
        try:
            fixture = load_fixture(path)
        except FixtureError as error:
            reports.append(FixtureReport(path.stem, [Failure("fixture", str(error))]))
            continue
        reports.append(check_fixture(run_fixture(fixture)))
    return reports


# -- one checker per expect key ----------------------------------------------------------
# Each returns None when the key holds, or what was seen instead.


def _outcome(replay: FixtureReplay, expected: Any) -> str | None:
    seen = _verdict(replay)
    wanted = {"completed": {"completed"}, "failed": {"rejected", "truncated", "input rejected"}}
    if seen in wanted.get(expected, set()):
        return None
    message = _error_message(replay)
    return f"expected {expected}, saw {seen}" + (f" ({message})" if message else "")


def _error_contains(replay: FixtureReplay, expected: Any) -> str | None:
    """A substring of the rejection message — read as written, or JSON-escaped: the
    reference lane surfaces its validator's text inside a JSON string, so a fixture may
    spell a quote in the message as ``\\"``."""
    message = _error_message(replay)
    if message is None:
        return f"expected a rejection containing {expected!r}, saw {_verdict(replay)}"
    escaped = orjson.dumps(message).decode()[1:-1]
    if str(expected) in message or str(expected) in escaped:
        return None
    return f"{expected!r} not in {message!r}"


def _run_error(replay: FixtureReplay, expected: Any) -> str | None:
    errors = [e for e in _events(replay) if e.get("type") == "RUN_ERROR"]
    if expected is False:
        return None if not errors else f"expected no RUN_ERROR, saw {len(errors)}"
    if not errors:
        return "expected a RUN_ERROR to be delivered, saw none"
    if expected is True:
        return None
    messages = [str(e.get("message")) for e in errors]
    if any(str(expected) in m for m in messages):
        return None
    return f"no RUN_ERROR message contains {expected!r}; saw {messages}"


def _event_types(replay: FixtureReplay, expected: Any) -> str | None:
    seen = [e.get("type") for e in _events(replay)]
    return None if seen == expected else f"expected {expected}, saw {seen}"


def _event_types_absent(replay: FixtureReplay, expected: Any) -> str | None:
    seen = [e.get("type") for e in _events(replay)]
    present = [t for t in expected if t in seen]
    return None if not present else f"delivered {present}"


def _event_paths(replay: FixtureReplay, expected: Any) -> str | None:
    events = _events(replay)
    problems = []
    for path, value in expected.items():
        found, seen = _lookup(events, path)
        if not found:
            problems.append(f"{path} is absent (expected {_show(value)})")
        elif not json_equal(seen, value):
            problems.append(f"{path} is {_show(seen)}, expected {_show(value)}")
    return "; ".join(problems) or None


def _event_absent_paths(replay: FixtureReplay, expected: Any) -> str | None:
    events = _events(replay)
    present = [
        f"{path} = {_show(seen)}"
        for path in expected
        for found, seen in [_lookup(events, path)]
        if found
    ]
    return None if not present else "present: " + "; ".join(present)


def _warnings(replay: FixtureReplay, expected: Any) -> str | None:
    texts = [str(d) for d in replay.warnings]
    missing = [w for w in expected if not any(w in text for text in texts)]
    if not missing:
        return None
    return f"no warning contains {missing}; warnings were {texts or 'none'}"


def _no_warnings(replay: FixtureReplay, expected: Any) -> str | None:
    if not expected:
        return None
    texts = [str(d) for d in replay.warnings]
    return None if not texts else f"expected no warning, saw {texts}"


def _message_count(replay: FixtureReplay, expected: Any) -> str | None:
    messages = _messages(replay)
    if messages is None:
        return "no Conversation was materialised"
    return None if len(messages) == expected else f"expected {expected}, saw {len(messages)}"


def _messages_match(replay: FixtureReplay, expected: Any) -> str | None:
    messages = _messages(replay)
    if messages is None:
        return "no Conversation was materialised"
    return subset_mismatch(expected, messages, "")


def _state_match(replay: FixtureReplay, expected: Any) -> str | None:
    result = replay.result
    if result is None or result.materialised is None:
        return "no Conversation was materialised"
    return subset_mismatch(expected, result.materialised.state, "")


def _request_match(replay: FixtureReplay, expected: Any) -> str | None:
    if replay.request is None:
        return f"no request was sent ({replay.input_error})"
    return subset_mismatch(expected, replay.request, "")


def _request_absent_paths(replay: FixtureReplay, expected: Any) -> str | None:
    if replay.request is None:
        return f"no request was sent ({replay.input_error})"
    present = [
        f"{path} = {_show(seen)}"
        for path in expected
        for found, seen in [_walk(replay.request, path.split("."))]
        if found
    ]
    return None if not present else "present: " + "; ".join(present)


CHECKS = {
    "outcome": _outcome,
    "errorContains": _error_contains,
    "runError": _run_error,
    "eventTypes": _event_types,
    "eventTypesAbsent": _event_types_absent,
    "eventPaths": _event_paths,
    "eventAbsentPaths": _event_absent_paths,
    "warnings": _warnings,
    "noWarnings": _no_warnings,
    "messageCount": _message_count,
    "messages": _messages_match,
    "state": _state_match,
    "request": _request_match,
    "requestAbsentPaths": _request_absent_paths,
}
"""``expect`` key → its checker (``README.upstream.md``, "expect")."""


def subset_mismatch(expected: Any, actual: Any, where: str) -> str | None:
    """The corpus's subset match: objects compare only the keys named, arrays must have the
    same length and match element by element, other values are equal. Returns where and how
    it first fails, or ``None``."""
    if type(expected) is dict:
        if type(actual) is not dict:
            return f"at {where or '/'}: expected an object, saw {_show(actual)}"
        for key, value in expected.items():
            if key not in actual:
                return f"at {where}/{key}: absent (expected {_show(value)})"
            problem = subset_mismatch(value, actual[key], f"{where}/{key}")
            if problem is not None:
                return problem
        return None
    if type(expected) is list:
        if type(actual) is not list or len(actual) != len(expected):
            return f"at {where or '/'}: expected {len(expected)} elements, saw {_show(actual)}"
        for position, (value, seen) in enumerate(zip(expected, actual, strict=True)):
            problem = subset_mismatch(value, seen, f"{where}/{position}")
            if problem is not None:
                return problem
        return None
    if json_equal(expected, actual):
        return None
    return f"at {where or '/'}: expected {_show(expected)}, saw {_show(actual)}"


def _verdict(replay: FixtureReplay) -> str:
    if replay.input_error is not None:
        return "input rejected"
    assert replay.result is not None
    return str(replay.result.verdict.outcome)


def _error_message(replay: FixtureReplay) -> str | None:
    if replay.input_error is not None:
        return str(replay.input_error)
    if replay.result is None or replay.result.verdict.outcome is Outcome.COMPLETED:
        return None
    return replay.result.verdict.message


def _events(replay: FixtureReplay) -> Sequence[Mapping[str, Any]]:
    return [] if replay.result is None else replay.result.events


def _messages(replay: FixtureReplay) -> list[dict[str, Any]] | None:
    result = replay.result
    if result is None or result.materialised is None:
        return None
    messages: list[dict[str, Any]] = result.materialised.messages
    return messages


def _lookup(events: Sequence[Any], path: str) -> tuple[bool, Any]:
    """``"<index>.<dotted path>"`` inside the delivered events."""
    return _walk(events, path.split("."))


def _walk(value: Any, segments: Sequence[str]) -> tuple[bool, Any]:
    for segment in segments:
        if type(value) is dict and segment in value:
            value = value[segment]
        elif type(value) is list and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return False, None
    return True, value


def _show(value: Any) -> str:
    text = orjson.dumps(value, default=str).decode()
    return text if len(text) <= 200 else text[:197] + "..."
