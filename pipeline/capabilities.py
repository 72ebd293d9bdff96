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

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

import orjson
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

from ._json import describe, escape, join_pointer
from .catalog import (
    RECONCILE_DECLARATION_UNRECOGNISED,
    RECONCILE_DECLARATION_UNUSABLE,
    RECONCILE_INPUT_MODALITY,
    RECONCILE_INPUT_REFUSED,
    Code,
)
from .errors import AguiPipelineError, Diagnostic
from .events import MAX_SAFE_INTEGER, OpenObject


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

    ``AgentCapabilities.load(source)`` reads one from a file, JSON bytes or
    text, or a dict, and raises :class:`DeclarationUnusable` naming the field
    when a known field is malformed. Unrecognised members are kept in each
    object's ``model_extra``. :class:`Declaration` is the lenient reader the
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
        document = _document(source)
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


CapabilitiesSource = AgentCapabilities | Mapping[str, Any] | bytes | str | os.PathLike[str]
"""A declaration as the caller has it: a model, a dict, JSON bytes or text, or a file path."""


class DeclarationUnusable(AguiPipelineError, ValueError):
    """A known field of the declaration carries a value the schema rejects."""

    def __init__(self, pointer: str, reason: str) -> None:
        self.pointer = pointer
        self.reason = reason
        super().__init__(f"declaration {pointer or '/'}: {reason}")


@dataclass(frozen=True, slots=True)
class DeclarationNote:
    """Something to say about the declaration itself, reported into each stream it governs."""

    code: Code
    message: str
    pointer: str
    """Where in the declaration (a JSON Pointer)."""


class Declaration:
    """A declaration as the pipeline holds it: usable or not, with what was noticed reading it.

    Reading never raises for the document's content: an unusable declaration
    has ``capabilities = None`` — the run proceeds as for an agent that
    declared nothing (``/spec/1.1/basic/capabilities``, Error Handling) — and a
    note saying which field and why.
    """

    __slots__ = ("capabilities", "notes")

    NONE: ClassVar[Declaration]

    def __init__(
        self, capabilities: AgentCapabilities | None, notes: tuple[DeclarationNote, ...] = ()
    ) -> None:
        self.capabilities = capabilities
        self.notes = notes

    @classmethod
    def read(cls, source: Declaration | CapabilitiesSource | None) -> Declaration:
        if source is None:
            return cls.NONE
        if isinstance(source, Declaration):
            return source
        try:
            capabilities = AgentCapabilities.load(source)
        except DeclarationUnusable as exc:
            return cls(None, (_unusable(exc.pointer, exc.reason),))
        except (OSError, orjson.JSONDecodeError) as exc:
            return cls(None, (_unusable("", f"cannot be read: {exc}"),))
        notes = tuple(
            DeclarationNote(
                RECONCILE_DECLARATION_UNRECOGNISED,
                f"declaration {pointer}: {_unrecognised_reason(pointer)}; kept, and not read",
                pointer,
            )
            for pointer in capabilities.unrecognised()
        )
        return cls(capabilities, notes)

    @property
    def usable(self) -> bool:
        return self.capabilities is not None

    def __repr__(self) -> str:
        return f"Declaration(usable={self.usable}, notes={len(self.notes)})"


Declaration.NONE = Declaration(None)


def declared_value(capabilities: AgentCapabilities, field: str) -> Any:
    """The value at ``field`` (``/tools/parallelCalls``); ``None`` when undeclared."""
    value: Any = capabilities
    for name in field.split("/")[1:]:
        value = getattr(value, name, None)
        if value is None:
            return None
    return value


# -- the run input against multimodal.input -------------------------------------------

_PART_MODALITY = {"image": "image", "audio": "audio", "video": "video"}
_PDF = "application/pdf"


def input_modalities(run_input: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``(declaration field, pointer into the run input)`` for each media part it carries.

    User messages and the tool messages answering frontend calls carry parts
    (``/spec/1.1/basic/run-input``, messages). A ``document`` part counts as
    ``pdf`` only when its source says ``application/pdf``; no part type is an
    "arbitrary file", so ``file`` is never inferred.
    """
    messages = run_input.get("messages")
    if type(messages) is not list:
        return
    for m, message in enumerate(messages):
        content = message.get("content") if type(message) is dict else None
        if type(content) is not list:
            continue
        for p, part in enumerate(content):
            if type(part) is not dict:
                continue
            kind = part.get("type")
            modality = _PART_MODALITY.get(kind) if type(kind) is str else None
            if modality is None and kind == "document":
                source = part.get("source")
                if type(source) is dict and source.get("mimeType") == _PDF:
                    modality = "pdf"
            if modality is not None:
                yield f"/multimodal/input/{modality}", f"/messages/{m}/content/{p}"


def check_run_input(
    declaration: Declaration | AgentCapabilities | None, run_input: Mapping[str, Any]
) -> list[Diagnostic]:
    """Warnings for the application *before it sends* ``run_input``: what it offers that the
    agent declared it does not take.

    - a media part under ``multimodal.input.<modality>: false``
      (``reconcile.input-modality``): an agent that cannot use a part skips it
      rather than failing the run (``/spec/1.1/basic/run-input``), so it would
      be silently ignored;
    - tools under ``tools.clientProvided: false``, resume entries under
      ``humanInTheLoop.interrupts: false``, an ``editedArgs`` answer under
      ``humanInTheLoop.approveWithEdits: false`` (``reconcile.input-refused``).

    Only an explicit ``false`` is warned about, never an omitted field; nothing
    is changed or blocked.
    """
    capabilities = declaration.capabilities if isinstance(declaration, Declaration) else declaration
    if capabilities is None:
        return []
    found: list[Diagnostic] = []

    def warn(code: Code, field: str, pointer: str, message: str) -> None:
        found.append(Diagnostic(code.id, code.severity, message, None, pointer, code.spec, field))

    if capabilities.multimodal is not None:
        for field, pointer in input_modalities(run_input):
            if declared_value(capabilities, field) is False:
                modality = field.rsplit("/", 1)[1]
                warn(
                    RECONCILE_INPUT_MODALITY,
                    field,
                    pointer,
                    f"run input {pointer} is a {modality} part, but the declaration sets "
                    f"{field} to false: the agent will likely skip it",
                )
    tools, resume = run_input.get("tools"), run_input.get("resume")
    if tools and declared_value(capabilities, "/tools/clientProvided") is False:
        warn(
            RECONCILE_INPUT_REFUSED,
            "/tools/clientProvided",
            "/tools",
            "run input /tools offers the application's tools, but the declaration sets "
            "/tools/clientProvided to false: the agent does not take them",
        )
    if resume and declared_value(capabilities, "/humanInTheLoop/interrupts") is False:
        warn(
            RECONCILE_INPUT_REFUSED,
            "/humanInTheLoop/interrupts",
            "/resume",
            "run input /resume answers interrupts, but the declaration sets "
            "/humanInTheLoop/interrupts to false: the agent does not take part in "
            "interrupt and resume",
        )
    if (
        type(resume) is list
        and declared_value(capabilities, "/humanInTheLoop/approveWithEdits") is False
    ):
        for position, entry in enumerate(resume):
            payload = entry.get("payload") if type(entry) is dict else None
            if type(payload) is dict and "editedArgs" in payload:
                pointer = f"/resume/{position}/payload/editedArgs"
                warn(
                    RECONCILE_INPUT_REFUSED,
                    "/humanInTheLoop/approveWithEdits",
                    pointer,
                    f"run input {pointer} edits a tool call's arguments, but the declaration "
                    "sets /humanInTheLoop/approveWithEdits to false",
                )
    return found


def _unusable(pointer: str, reason: str) -> DeclarationNote:
    return DeclarationNote(
        RECONCILE_DECLARATION_UNUSABLE,
        f"declaration {pointer or '/'} is malformed ({reason}); the declaration is not used "
        "and the run proceeds as for an agent that declared nothing",
        pointer,
    )


def _unrecognised_reason(pointer: str) -> str:
    if pointer == "/multiAgent/subAgents":
        return "the retired spelling of subagents, which this version does not read"
    return "a member this version of AgentCapabilities does not define"


def _document(source: object) -> Any:
    """The decoded JSON value; a value that is neither text nor a path is taken as decoded."""
    if isinstance(source, Mapping):
        return dict(source)
    if isinstance(source, bytes | str):
        return orjson.loads(source)
    if isinstance(source, os.PathLike):
        return orjson.loads(Path(source).read_bytes())
    return source


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
