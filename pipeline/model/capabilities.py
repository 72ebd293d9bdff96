"""``AgentCapabilities``: what an agent declares about itself, read under the page's rules.

``/spec/1.1/basic/capabilities`` and ``schema.json#/$defs/AgentCapabilities``:

- every group and every field is optional, and an omitted one is *undeclared*
  — ``None`` here, never read as ``False``;
- an unrecognised group or field never causes rejection: it is kept (in the
  model's extras, and listed in :attr:`Declaration.unrecognised`) and named in
  a diagnostic;
- a known field carrying a value the schema rejects (a string where a boolean
  belongs, ``null`` anywhere) makes the whole declaration unusable, and the
  consumer proceeds exactly as for an agent that declared nothing;
- ``identity.metadata`` and ``custom`` are open by key and kept whole.

A declaration is a document read rarely, so it is a pydantic model (strict: a
JSON ``"true"`` is not ``true``). Field names are the schema's own camelCase
names, so a declaration reads the same in Python as in JSON. ``DeclaredTool``
and ``DeclaredSubagent`` spell again ``events.Tool`` and ``events.SubagentInfo``;
``tests/test_schema_agreement.py`` holds them to those ``TypedDict``\\ s.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

from agui_pipeline._json import (
    DuplicateMember,
    describe,
    escape,
    join_pointer,
    load_document,
    read_document,
    unescape,
)
from agui_pipeline.declaration import CapabilitiesSource
from agui_pipeline.errors import DeclarationUnusable
from agui_pipeline.events import MAX_SAFE_INTEGER, OpenObject
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
    field_validator,
)


def _json_integer(value: Any) -> Any:
    """JSON Schema's ``integer`` is a number with no fraction: ``3.0`` is one, ``true`` is not."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


JsonInteger = Annotated[
    int, BeforeValidator(_json_integer), Field(ge=0, le=MAX_SAFE_INTEGER, strict=True)
]


class _Declared(BaseModel):
    """Base of every capability object: strict, extras kept, ``null`` never accepted."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        # Only values that were sent get here (defaults are not validated):
        # an explicit null is a wrong-typed value, not a way to say "undeclared".
        if value is None:
            raise ValueError("null is not a value this field takes; omit the field instead")
        return value


class DeclaredTool(_Declared):
    """A tool the agent provides (``schema.json#/$defs/Tool``)."""

    name: StrictStr
    description: StrictStr
    parameters: Any = None
    """A JSON Schema for the arguments, carried opaquely."""
    metadata: OpenObject | None = None


class DeclaredSubagent(_Declared):
    """A subagent the agent can invoke (``schema.json#/$defs/SubagentInfo``)."""

    name: StrictStr
    description: StrictStr | None = None


class IdentityCapabilities(_Declared):
    name: StrictStr | None = None
    type: StrictStr | None = None
    description: StrictStr | None = None
    version: StrictStr | None = None
    provider: StrictStr | None = None
    documentationUrl: StrictStr | None = None
    metadata: OpenObject | None = None


class TransportCapabilities(_Declared):
    streaming: StrictBool | None = None
    websocket: StrictBool | None = None
    httpBinary: StrictBool | None = None
    pushNotifications: StrictBool | None = None
    resumable: StrictBool | None = None


class ToolsCapabilities(_Declared):
    supported: StrictBool | None = None
    items: list[DeclaredTool] | None = None
    parallelCalls: StrictBool | None = None
    clientProvided: StrictBool | None = None


class OutputCapabilities(_Declared):
    structuredOutput: StrictBool | None = None
    supportedMimeTypes: list[StrictStr] | None = None


class StateCapabilities(_Declared):
    snapshots: StrictBool | None = None
    deltas: StrictBool | None = None
    memory: StrictBool | None = None
    persistentState: StrictBool | None = None


class MultiAgentCapabilities(_Declared):
    supported: StrictBool | None = None
    delegation: StrictBool | None = None
    handoffs: StrictBool | None = None
    subagents: list[DeclaredSubagent] | None = None


class ReasoningCapabilities(_Declared):
    supported: StrictBool | None = None
    streaming: StrictBool | None = None
    encrypted: StrictBool | None = None


class MultimodalInputCapabilities(_Declared):
    image: StrictBool | None = None
    audio: StrictBool | None = None
    video: StrictBool | None = None
    pdf: StrictBool | None = None
    file: StrictBool | None = None


class MultimodalOutputCapabilities(_Declared):
    image: StrictBool | None = None
    audio: StrictBool | None = None


class MultimodalCapabilities(_Declared):
    input: MultimodalInputCapabilities | None = None
    output: MultimodalOutputCapabilities | None = None


class ExecutionCapabilities(_Declared):
    codeExecution: StrictBool | None = None
    sandboxed: StrictBool | None = None
    maxIterations: JsonInteger | None = None
    maxExecutionTime: JsonInteger | None = None
    """Milliseconds."""


class HumanInTheLoopCapabilities(_Declared):
    supported: StrictBool | None = None
    approvals: StrictBool | None = None
    interventions: StrictBool | None = None
    feedback: StrictBool | None = None
    interrupts: StrictBool | None = None
    approveWithEdits: StrictBool | None = None


class AgentCapabilities(_Declared):
    """An agent's declaration (``/spec/1.1/basic/capabilities``).

    ``AgentCapabilities.load(source)`` reads one from a file (a ``Path`` or a ``str``),
    JSON bytes, or a dict, and raises :class:`DeclarationUnusable` naming the field
    when a known field is malformed or a member is named twice. Unrecognised members
    are kept in each object's ``model_extra``. :class:`Declaration` is the lenient reader the
    pipeline uses.
    """

    identity: IdentityCapabilities | None = None
    transport: TransportCapabilities | None = None
    tools: ToolsCapabilities | None = None
    output: OutputCapabilities | None = None
    state: StateCapabilities | None = None
    multiAgent: MultiAgentCapabilities | None = None
    reasoning: ReasoningCapabilities | None = None
    multimodal: MultimodalCapabilities | None = None
    execution: ExecutionCapabilities | None = None
    humanInTheLoop: HumanInTheLoopCapabilities | None = None
    custom: OpenObject | None = None

    @classmethod
    def load(cls, source: CapabilitiesSource) -> AgentCapabilities:
        """Read and validate a declaration; :class:`DeclarationUnusable` if it cannot be used."""
        if isinstance(source, AgentCapabilities):
            return source
        try:
            document = _document(source)
        except DuplicateMember as exc:
            raise DeclarationUnusable(exc.pointer, exc.reason) from None
        if type(document) is not dict:
            raise DeclarationUnusable("", f"expected a JSON object, found {describe(document)}")
        try:
            return cls.model_validate(document)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            reason = (
                "a required member is missing"
                if error["type"] == "missing"
                else f"{error['msg']}, found {describe(error['input'])}"
            )
            raise DeclarationUnusable(_pointer(error["loc"]), reason) from None

    def to_json(self) -> dict[str, Any]:
        """The declaration as a JSON object: what was declared, unrecognised members included."""
        return self.model_dump(mode="json", exclude_unset=True)

    def unrecognised(self) -> list[str]:
        """JSON Pointers of the members this version does not define (nested ones first)."""
        return list(_unrecognised(self, ""))


def defined_members(capabilities: AgentCapabilities, pointer: str) -> list[str]:
    """The members this version defines in the object that holds ``pointer``'s last one
    (an unrecognised member's known neighbours, one of which it may misspell)."""
    value: Any = capabilities
    for token in pointer.split("/")[1:-1]:
        name = unescape(token)
        if isinstance(value, list) and name.isdigit() and int(name) < len(value):
            value = value[int(name)]
        else:
            value = getattr(value, name, None) if isinstance(value, BaseModel) else None
    return list(type(value).model_fields) if isinstance(value, BaseModel) else []


def _document(source: object) -> Any:
    """The decoded JSON value; a value that is neither JSON bytes nor a path is taken as
    decoded. A ``str`` is a file path, as a ``str`` source is for ``Pipeline.run``."""
    if isinstance(source, Mapping):
        return dict(source)
    if isinstance(source, bytes):
        return load_document(source)
    if isinstance(source, str):
        return load_document(_read_path(source))
    if isinstance(source, os.PathLike):
        return load_document(read_document(source))
    return source


_PATH_RULE = (
    "a str declaration is a file path, as a str source is for run(); pass JSON as bytes "
    "(text.encode()) or a dict"
)


def _read_path(path: str) -> bytes:
    """The file ``path`` names; a ``str`` that is JSON text is refused with the rule, and a
    file that is not there says it too (a note on the declaration, which stays lenient)."""
    if path.lstrip().startswith(("{", "[")) or "\n" in path:
        excerpt = path if len(path) <= 40 else path[:40] + "…"
        raise ValueError(f"{excerpt!r} reads as JSON text, not a file: {_PATH_RULE}")
    try:
        return read_document(path)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, f"no such file ({_PATH_RULE})", path) from None
    except ValueError as error:  # a path the system refuses (a NUL byte in it)
        raise OSError(f"no file can be named {path!r}: {error} ({_PATH_RULE})") from None


def _unrecognised(model: BaseModel, at: str) -> Iterator[str]:
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from _unrecognised(value, f"{at}/{name}")
        elif isinstance(value, list):
            for position, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from _unrecognised(item, f"{at}/{name}/{position}")
    for name in model.model_extra or ():
        yield f"{at}/{escape(name)}"


def _pointer(location: tuple[int | str, ...]) -> str:
    # pydantic appends the name of a failing constraint function to the path;
    # only keys and positions of the document belong in a pointer.
    return join_pointer(part for part in location if not _is_validator(part))


def _is_validator(part: int | str) -> bool:
    return isinstance(part, str) and part.startswith(("function-", "constrained-"))
