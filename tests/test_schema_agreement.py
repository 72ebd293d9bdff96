"""The pydantic models of the documents agree, field by field, with the ``TypedDict``\\ s.

``agui_pipeline.events`` is the one statement of structure (enforce compiles
it). The run input and the capability declaration are also pydantic models,
for their validation errors and a typed public ``RunAgentInput`` /
``AgentCapabilities``; a statically typed class must spell its fields, so
those shapes are written twice. This test is what keeps the two spellings one
schema: every model names the ``TypedDict`` it mirrors, and they must have the
same members, the same required ones, and members of the same shape.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, NotRequired, Required, Union

import pytest
from agui_pipeline import events
from agui_pipeline.model import capabilities, run_input
from pydantic import BaseModel, JsonValue

MIRRORS: dict[type[BaseModel], Any] = {
    run_input.RunAgentInputModel: events.RunAgentInput,
    run_input.InputTextPart: events.TextPart,
    run_input.InputImagePart: events.ImagePart,
    run_input.InputAudioPart: events.AudioPart,
    run_input.InputVideoPart: events.VideoPart,
    run_input.InputDocumentPart: events.DocumentPart,
    run_input.InputDataSource: events.DataSource,
    run_input.InputUrlSource: events.UrlSource,
    run_input.InputFileSource: events.FileSource,
    run_input.InputFunctionCall: events.FunctionCall,
    run_input.InputToolCall: events.ToolCall,
    run_input.InputDeveloperMessage: events.DeveloperMessage,
    run_input.InputSystemMessage: events.SystemMessage,
    run_input.InputAssistantMessage: events.AssistantMessage,
    run_input.InputUserMessage: events.UserMessage,
    run_input.InputToolMessage: events.ToolMessage,
    run_input.InputActivityMessage: events.ActivityMessage,
    run_input.InputReasoningMessage: events.ReasoningMessage,
    run_input.InputTool: events.Tool,
    run_input.InputContext: events.Context,
    run_input.InputResumeEntry: events.ResumeEntry,
    capabilities.DeclaredTool: events.Tool,
    capabilities.DeclaredSubagent: events.SubagentInfo,
}
"""Each pydantic model and the ``TypedDict`` it spells again."""


def typed_dict_shape(hint: Any) -> Any:
    """An annotation of ``agui_pipeline.events`` as a comparable value."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Required, NotRequired):
        return typed_dict_shape(args[0])
    if origin is Annotated:
        if args[0] is Any:
            return "json"  # NonNullJSON: any value but null
        return typed_dict_shape(args[0])
    if hint is Any:
        return "json or null"  # JSON
    if typing.is_typeddict(hint):
        return ("object", hint.__name__)
    return _common_shape(hint, origin, args, typed_dict_shape)


def model_shape(hint: Any) -> Any:
    """A pydantic field annotation as a comparable value, named by the ``TypedDict`` mirrored."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        return model_shape(args[0])
    if hint is JsonValue or hint is Any:
        return "json or null"
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return ("object", MIRRORS[hint].__name__)
    if origin in (Union, types.UnionType) and type(None) in args:
        # ``X | None = None``: the way an optional member is spelled on a model.
        rest = tuple(arg for arg in args if arg is not type(None))
        return model_shape(rest[0] if len(rest) == 1 else Union[rest])  # noqa: UP007
    return _common_shape(hint, origin, args, model_shape)


def _common_shape(hint: Any, origin: Any, args: tuple[Any, ...], shape: Any) -> Any:
    if hint is str:
        return "string"
    if hint is bool:
        return "boolean"
    if hint is int:
        return "integer"
    if origin is Literal:
        return ("literal", frozenset(args))
    if origin is list:
        return ("array", shape(args[0]))
    if origin is dict:
        return "open object"
    if origin in (Union, types.UnionType):
        return ("one of", frozenset(shape(arg) for arg in args))
    raise AssertionError(f"no shape for {hint!r}")


def members(typed_dict: Any) -> dict[str, Any]:
    return typing.get_type_hints(typed_dict, include_extras=True)


@pytest.mark.parametrize(
    ("model", "typed_dict"), list(MIRRORS.items()), ids=[m.__name__ for m in MIRRORS]
)
def test_a_model_has_the_members_of_its_typed_dict(model: type[BaseModel], typed_dict: Any) -> None:
    assert set(model.model_fields) == set(members(typed_dict))
    required = {name for name, field in model.model_fields.items() if field.is_required()}
    assert required == set(typed_dict.__required_keys__)


@pytest.mark.parametrize(
    ("model", "typed_dict"), list(MIRRORS.items()), ids=[m.__name__ for m in MIRRORS]
)
def test_each_member_has_the_same_shape(model: type[BaseModel], typed_dict: Any) -> None:
    hints = members(typed_dict)
    model_hints = typing.get_type_hints(model, include_extras=True)
    for name, field in model.model_fields.items():
        shape = model_shape(model_hints[name])
        if shape == "json or null" and not field.is_required():
            shape = "json"  # the models' base validator refuses null for an optional field
        assert shape == typed_dict_shape(hints[name]), name


def reachable(hint: Any, seen: set[Any]) -> set[Any]:
    """The ``TypedDict``\\ s and models a document's members lead to."""
    if typing.is_typeddict(hint) or (isinstance(hint, type) and issubclass(hint, BaseModel)):
        if hint in seen:
            return seen
        seen.add(hint)
        for member in typing.get_type_hints(hint, include_extras=True).values():
            reachable(member, seen)
        return seen
    for arg in typing.get_args(hint):
        reachable(arg, seen)
    return seen


def test_every_shape_of_the_run_input_has_a_model() -> None:
    typed_dicts = reachable(events.RunAgentInput, set())
    models = reachable(run_input.RunAgentInputModel, set())
    assert {MIRRORS[model] for model in models} == typed_dicts
