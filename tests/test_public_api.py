"""The public surface: typed, introspectable, immutable where it says so, hard to misuse."""

from __future__ import annotations

import dataclasses
import gc
import inspect
import os
import re
import sys
import typing
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import agui_pipeline
import pytest
from agui_pipeline import (
    AgentResourceError,
    AguiPipelineError,
    DeclarationUnusable,
    EventType,
    HandlerFailed,
    Handlers,
    HttpStatusError,
    InputRejected,
    Limits,
    Options,
    Outcome,
    Pipeline,
    RequestFailed,
    StreamRejected,
    StreamTruncated,
    UsageError,
    run_sync,
)
from agui_pipeline.catalog import HANDLER_FAILED
from agui_pipeline.declaration import Declaration
from agui_pipeline.subscribers import encode_sse
from agui_pipeline.testing.conformance import FixtureError

from tests.conftest import ROOT, mypy_strict, run

WEATHER = ROOT / "examples" / "weather.sse"
USAGE = Path(__file__).parent / "typing" / "readme_usage.py"
RUN = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]
STREAM = encode_sse(RUN)


# -- introspection -------------------------------------------------------------------


def _public_callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    """Every exported function, and every exported class's own public methods and properties."""
    for name in agui_pipeline.__all__:
        value = getattr(agui_pipeline, name)
        if inspect.isfunction(value):
            yield name, value
        if not inspect.isclass(value):
            continue
        for attribute, member in vars(value).items():
            if attribute.startswith("_") and attribute != "__init__":
                continue
            if isinstance(member, property) and member.fget is not None:
                yield f"{name}.{attribute}", member.fget
            elif isinstance(member, classmethod | staticmethod):
                yield f"{name}.{attribute}", member.__func__
            elif inspect.isfunction(member):
                yield f"{name}.{attribute}", member
                for overload in typing.get_overloads(member):
                    yield f"{name}.{attribute} (overload)", overload


def test_type_hints_resolve_on_every_public_class_and_callable() -> None:
    classes = [getattr(agui_pipeline, n) for n in agui_pipeline.__all__]
    for value in classes:
        if inspect.isclass(value):
            typing.get_type_hints(value)
    names = []
    for name, function in _public_callables():
        typing.get_type_hints(function)
        names.append(name)
    # The walk reached the entry points the NameError used to break.
    assert {"Pipeline.run", "Pipeline.open", "run_sync", "Pipeline.__init__"} <= set(names)


def test_the_handler_overloads_name_each_event_with_its_own_typed_dict() -> None:
    """One overload per event type, whose handler takes that type's ``TypedDict``."""
    covered = {}
    for overload in typing.get_overloads(Handlers.on):
        hints = typing.get_type_hints(overload)
        literals = typing.get_args(hints["event_type"])
        if len(literals) != 2:
            continue  # "*", and the overloads for any string
        name, member = literals
        register = hints["return"]
        handler = typing.get_args(register)[0][0]  # Callable[[EventHandler[E]], ...]
        event = typing.get_args(handler)[0][0]
        assert member is EventType(name)
        assert typing.get_args(typing.get_type_hints(event)["type"]) == (name,)
        covered[name] = event
    assert set(covered) == {member.value for member in EventType}


def test_the_exported_events_are_the_schema_typed_dicts() -> None:
    members = typing.get_args(agui_pipeline.AnyEvent)
    assert len(members) == len(EventType) == 31
    for event in members:
        assert typing.is_typeddict(event)
        assert getattr(agui_pipeline.events, event.__name__) is event


# -- settings ----------------------------------------------------------------------


def test_pipeline_takes_every_option_by_name() -> None:
    """``Pipeline(...)`` and ``with_options(...)`` take one ``Settings``: the ``Options``
    fields, by the same names and types."""
    from agui_pipeline.options import Settings

    assert typing.get_type_hints(Settings) == typing.get_type_hints(Options)
    parameters = inspect.signature(Pipeline).parameters
    assert list(parameters) == ["middleware", "options", "settings"]
    assert all(
        p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)
        for p in parameters.values()
    )
    hints = typing.get_type_hints(Pipeline.__init__)
    assert hints["settings"] == typing.Unpack[Settings]
    assert typing.get_type_hints(Pipeline.with_options)["settings"] == hints["settings"]


def test_a_setting_that_does_not_exist_is_refused_with_the_one_meant() -> None:
    with pytest.raises(TypeError, match=r"no setting 'idle_timout'.*idle_timeout"):
        Pipeline(idle_timout=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="no setting 'sink'"):
        Pipeline().with_options(sink=[])  # type: ignore[call-arg]


def test_settings_override_the_options_given_and_none_is_a_value() -> None:
    base = Options(idle_timeout=5.0, framing="jsonl")
    pipeline = Pipeline(options=base, idle_timeout=None)
    assert pipeline.options.idle_timeout is None
    assert pipeline.options.framing == "jsonl"
    assert pipeline.with_options(framing=None).options.framing is None
    assert pipeline.with_options(limits=Limits(max_depth=9)).options.idle_timeout is None


def test_copies_of_a_pipeline_share_nothing_that_can_change() -> None:
    original = Pipeline(idle_timeout=10.0)
    copy = original.with_options(conversation=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        original.options.idle_timeout = 1.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        original.options.limits.max_depth = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        original.options = Options()  # type: ignore[misc]
    assert original.options.conversation and not copy.options.conversation
    assert isinstance(original.options.sinks, tuple)


def test_the_declaration_is_read_once_when_the_pipeline_is_made(tmp_path: Path) -> None:
    declaration = tmp_path / "capabilities.json"
    declaration.write_bytes(b'{"state": {"deltas": false}}')
    pipeline = Pipeline(capabilities=declaration)
    assert isinstance(pipeline.options.capabilities, Declaration)
    declaration.unlink()  # a second read would find no file
    delta = {"type": "STATE_DELTA", "delta": []}
    result = run(encode_sse([*RUN[:1], delta, RUN[-1]]), pipeline)
    assert [d.code for d in result.diagnostics if d.code == "reconcile.false-contradicted"]


def test_a_registry_given_to_a_pipeline_is_closed() -> None:
    handlers = Handlers()
    seen: list[str] = []
    handlers.on("*", lambda event: seen.append(event["type"]))
    pipeline = Pipeline(handlers=handlers)
    with pytest.raises(UsageError, match="register every handler before"):
        handlers.on("RUN_ERROR", print)
    run(STREAM, pipeline)
    assert seen == [event["type"] for event in RUN]


# -- results and verdicts ----------------------------------------------------------------


def test_the_conversation_says_why_it_is_missing() -> None:
    assert run(STREAM).conversation.messages[0]["content"] == "hi"
    result = run(STREAM, Pipeline(conversation=False))
    assert result.materialised is None
    with pytest.raises(UsageError, match="conversation=False"):
        result.conversation  # noqa: B018


@pytest.mark.anyio
async def test_the_verdict_is_there_after_the_loop_and_refused_before() -> None:
    async with Pipeline().open(STREAM) as stream:
        with pytest.raises(UsageError, match="has not ended: read it to the end or use drain"):
            stream.verdict  # noqa: B018
        types = [event["type"] async for event in stream]
    assert stream.ended and stream.verdict.outcome is Outcome.COMPLETED
    assert types == [event["type"] for event in RUN]


def test_a_handler_failure_has_the_catalog_code() -> None:
    def fail(event: Any) -> None:
        raise LookupError("boom")

    verdict = run(STREAM, Pipeline(handlers={"TEXT_MESSAGE_CONTENT": fail})).verdict
    assert verdict.outcome is Outcome.HANDLER_FAILED
    assert verdict.code == HANDLER_FAILED.id
    assert verdict.to_dict()["code"] == HANDLER_FAILED.id


def test_every_error_raised_on_purpose_has_one_root() -> None:
    for error in (
        StreamRejected,
        StreamTruncated,
        HandlerFailed,
        InputRejected,
        DeclarationUnusable,
        AgentResourceError,
        RequestFailed,
        HttpStatusError,
        UsageError,
        FixtureError,
    ):
        assert issubclass(error, AguiPipelineError), error
    # The bases users may already catch stay.
    assert issubclass(DeclarationUnusable, ValueError)
    assert issubclass(AgentResourceError, ValueError)
    assert issubclass(UsageError, RuntimeError)


# -- sources: a str is a path ---------------------------------------------------------


def test_a_str_is_a_path_like_open() -> None:
    by_str = run_sync(str(WEATHER))
    assert by_str.verdict.outcome is Outcome.COMPLETED
    assert by_str.events == run(WEATHER).events == run(WEATHER.read_bytes()).events
    assert by_str.events


def test_stream_text_passed_as_str_is_refused_with_the_rule() -> None:
    text = STREAM.decode()
    with pytest.raises(
        ValueError, match=r"a str source is a file path.*pass stream content as bytes"
    ):
        run(text)
    with pytest.raises(ValueError, match="reads as stream text"):
        run('{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}')


def test_a_str_naming_no_file_says_the_rule(tmp_path: Path) -> None:
    missing = str(tmp_path / "run.sse")
    with pytest.raises(FileNotFoundError, match="a str source is a file path") as raised:
        run(missing)
    assert raised.value.filename == missing


def test_chunks_of_str_are_content_not_paths() -> None:
    text = STREAM.decode()
    assert run([text[:10], text[10:]]).verdict.outcome is Outcome.COMPLETED


# -- open() without async with ---------------------------------------------------------


def _open_descriptors(path: Path) -> int:
    """How many of this process's file descriptors are open on ``path`` (Linux)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        count += target == str(path)
    return count


class _Unraisable:
    """Collects what Python would print as "Exception ignored in ..."."""

    def __enter__(self) -> list[Any]:
        self.seen: list[Any] = []
        self._previous = sys.unraisablehook
        sys.unraisablehook = self.seen.append
        return self.seen

    def __exit__(self, *exc_info: object) -> None:
        sys.unraisablehook = self._previous


@pytest.mark.anyio
async def test_iterating_outside_async_with_is_refused_and_opens_nothing(tmp_path: Path) -> None:
    path = tmp_path / "run.sse"
    path.write_bytes(STREAM)
    with warnings.catch_warnings(record=True) as caught, _Unraisable() as unraisable:
        warnings.simplefilter("always")
        with pytest.raises(UsageError, match=re.escape("inside `async with pipeline.open")):
            async for _event in Pipeline().open(path):
                break
        assert _open_descriptors(path) == 0
        gc.collect()
    assert not caught and not unraisable


@pytest.mark.anyio
async def test_a_loop_that_stops_early_closes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "run.sse"
    path.write_bytes(STREAM)
    with warnings.catch_warnings(record=True) as caught, _Unraisable() as unraisable:
        warnings.simplefilter("always")
        async with Pipeline().open(path) as stream:
            async for _event in stream:
                assert _open_descriptors(path) == 1  # the check sees an open file
                break
        assert _open_descriptors(path) == 0
        with pytest.raises(UsageError, match="closed"):
            async for _event in stream:
                pass
        del stream
        gc.collect()
    assert not caught and not unraisable


# -- the README and the docs, as a user's typed file ------------------------------------


def _readme_examples() -> list[str]:
    """The Python examples of the README and of every page of the docs."""
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [
        example
        for document in documents
        for example in re.findall(r"```python\n(.*?)```", document.read_text(), flags=re.DOTALL)
    ]


_IMPORT = re.compile(r"from agui_pipeline import (.*)")


def test_every_readme_example_is_in_the_typed_usage_file() -> None:
    """Each line of each Python example, and each name an example imports, is in the file."""
    text = USAGE.read_text()
    usage = {line.strip() for line in text.splitlines()}
    imported = set(re.findall(r"^    (\w+),$", text, flags=re.MULTILINE))
    examples = _readme_examples()
    assert len(examples) >= 30
    missing = []
    for example in examples:
        for line in filter(None, map(str.strip, example.splitlines())):
            names = _IMPORT.fullmatch(line)
            if names:
                missing += [n for n in names[1].split(", ") if n not in imported]
            elif line not in usage:
                missing.append(line)
    assert not missing, f"lines of the docs' examples not in {USAGE.name}: {missing}"


def test_the_readme_examples_pass_mypy_strict() -> None:
    done = mypy_strict(USAGE)
    assert done.returncode == 0, done.stdout + done.stderr


MISTYPED = """
from agui_pipeline import Handlers
from agui_pipeline.events import RunErrorEvent

handlers = Handlers()


@handlers.on("TEXT_MESSAGE_CONTENT")
def show(event: RunErrorEvent) -> None:
    print(event["message"])
"""


def test_mypy_refuses_a_handler_typed_for_another_event(tmp_path: Path) -> None:
    """The overloads are what make a typed handler pass; they also make a wrong one fail."""
    mistyped = tmp_path / "mistyped.py"
    mistyped.write_text(MISTYPED)
    done = mypy_strict(mistyped)
    assert done.returncode == 1, done.stdout + done.stderr
    assert '"Callable[[RunErrorEvent], None]"' in done.stdout
    assert "TextMessageContentEvent" in done.stdout
