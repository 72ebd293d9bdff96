"""What a capabilities declaration says, read without pydantic until there is one.

:func:`read_declaration` reads one leniently into the
:class:`~agui_pipeline.declaration.Declaration` a pipeline holds;
:func:`declared_value` reads a field of it; :func:`check_run_input` warns the
application before it sends a run input the declaration refuses. The model,
:class:`~agui_pipeline.AgentCapabilities` (:mod:`agui_pipeline.model.capabilities`),
is a pydantic model whose import costs about 0.2 s of start-up: it is imported
when there is a declaration to read, so ``agui-pipeline check FILE`` never pays for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from agui_pipeline._json import unescape
from agui_pipeline._suggest import did_you_mean
from agui_pipeline.catalog import (
    RECONCILE_DECLARATION_UNRECOGNISED,
    RECONCILE_DECLARATION_UNUSABLE,
    RECONCILE_INPUT_MODALITY,
    RECONCILE_INPUT_REFUSED,
    Message,
)
from agui_pipeline.declaration import (
    CapabilitiesModel,
    CapabilitiesSource,
    Declaration,
    DeclarationNote,
)
from agui_pipeline.errors import DeclarationUnusable, Diagnostic

if TYPE_CHECKING:
    from agui_pipeline.model.capabilities import AgentCapabilities


def read_declaration(source: Declaration | CapabilitiesSource | None) -> Declaration:
    """A declaration as the pipeline holds it, read leniently: never raises for the content.

    What cannot be used as a declaration — a file that cannot be read or is over
    ``MAX_DOCUMENT``, text that is not JSON, JSON that is not an object, a member named
    twice, a malformed known field — makes it unusable (``capabilities`` is ``None``) with a
    note naming the file, the field and what was wrong; unrecognised members are kept and
    noted (``/spec/1.1/basic/capabilities``, Error Handling).
    """
    if source is None:
        return Declaration.NONE
    if isinstance(source, Declaration):
        return source
    from agui_pipeline.model.capabilities import AgentCapabilities  # pydantic: only now

    named = "declaration"
    if isinstance(source, str | os.PathLike):
        named += f" {os.fsdecode(source)}"
    return _lenient(lambda: AgentCapabilities.load(source), named)


def derive_declaration(resource: str | os.PathLike[str]) -> Declaration:
    """The declaration derived from the CES agent resource in the file ``resource``, read as
    leniently as :func:`read_declaration`: a resource no declaration can be derived from is a
    declaration the consumer cannot use (seed 004), never a reason to stop."""
    from agui_pipeline.model.agent_resource import capabilities_from_agent_resource

    path = Path(resource)
    named = f"the declaration derived from agent resource {path}"
    return _lenient(lambda: capabilities_from_agent_resource(path), named)


def _lenient(load: Callable[[], AgentCapabilities], named: str) -> Declaration:
    """What ``load`` reads, as a :class:`Declaration`: unusable, with the note saying why,
    when it raises for what the document holds; ``named`` is what the note calls it."""
    try:
        capabilities = load()
    except DeclarationUnusable as exc:  # a malformed field, a member named twice
        return Declaration(None, (_unusable(named, exc.pointer, exc.reason),))
    except orjson.JSONDecodeError as exc:
        return Declaration(None, (_unusable(named, "", f"not JSON: {exc}"),))
    except OSError as exc:  # a file that cannot be read, or is over MAX_DOCUMENT
        return Declaration(None, (_unusable(named, "", f"cannot be read: {exc}"),))
    notes = tuple(
        DeclarationNote(
            RECONCILE_DECLARATION_UNRECOGNISED,
            RECONCILE_DECLARATION_UNRECOGNISED(
                pointer=pointer,
                reason=_unrecognised_reason(pointer),
                suggestion=_suggestion(capabilities, pointer),
            ).text,
            pointer,
        )
        for pointer in capabilities.unrecognised()
    )
    return Declaration(capabilities, notes)


def model_of(declaration: Declaration | CapabilitiesModel | None) -> AgentCapabilities | None:
    """The ``AgentCapabilities`` a declaration holds (``None``: none, or unusable)."""
    model = declaration.capabilities if isinstance(declaration, Declaration) else declaration
    if model is None:
        return None
    from agui_pipeline.model.capabilities import AgentCapabilities  # loaded with the model

    if isinstance(model, AgentCapabilities):
        return model
    raise TypeError(f"a Declaration holds an AgentCapabilities, not {type(model).__name__}")


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
    declaration: Declaration | CapabilitiesModel | None, run_input: Mapping[str, Any]
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
    capabilities = model_of(declaration)
    if capabilities is None:
        return []
    return [
        Diagnostic(
            message.code.id,
            message.code.severity,
            message.text,
            None,
            pointer,
            message.code.spec,
            field,
        )
        for message, field, pointer in (
            *_refused_modalities(capabilities, run_input),
            *_refused_members(capabilities, run_input),
        )
    ]


_Refusal = tuple[Message, str, str]
"""(the finding, the declaration field, the pointer into the run input)."""


def _refused_modalities(
    capabilities: AgentCapabilities, run_input: Mapping[str, Any]
) -> Iterator[_Refusal]:
    """Media parts under ``multimodal.input.<modality>: false``."""
    if capabilities.multimodal is None:
        return
    for field, pointer in input_modalities(run_input):
        if declared_value(capabilities, field) is False:
            modality = field.rsplit("/", 1)[1]
            yield (
                RECONCILE_INPUT_MODALITY(pointer=pointer, modality=modality, field=field),
                field,
                pointer,
            )


def _refused_members(
    capabilities: AgentCapabilities, run_input: Mapping[str, Any]
) -> Iterator[_Refusal]:
    """Tools, resume entries and edited arguments the declaration says it does not take."""
    tools, resume = run_input.get("tools"), run_input.get("resume")
    if tools and declared_value(capabilities, "/tools/clientProvided") is False:
        yield RECONCILE_INPUT_REFUSED(), "/tools/clientProvided", "/tools"
    if resume and declared_value(capabilities, "/humanInTheLoop/interrupts") is False:
        yield RECONCILE_INPUT_REFUSED("resume"), "/humanInTheLoop/interrupts", "/resume"
    if type(resume) is not list:
        return
    if declared_value(capabilities, "/humanInTheLoop/approveWithEdits") is not False:
        return
    for position, entry in enumerate(resume):
        payload = entry.get("payload") if type(entry) is dict else None
        if type(payload) is dict and "editedArgs" in payload:
            pointer = f"/resume/{position}/payload/editedArgs"
            yield (
                RECONCILE_INPUT_REFUSED("edited-args", pointer=pointer),
                "/humanInTheLoop/approveWithEdits",
                pointer,
            )


def _unusable(named: str, pointer: str, reason: str) -> DeclarationNote:
    """``declaration caps.json is unusable at /reasoning/supported (...)``."""
    return DeclarationNote(
        RECONCILE_DECLARATION_UNUSABLE,
        RECONCILE_DECLARATION_UNUSABLE(named=named, at=pointer or "/", reason=reason).text,
        pointer,
    )


def _suggestion(capabilities: AgentCapabilities, pointer: str) -> str:
    """``" (did you mean humanInTheLoop?)"`` for an unrecognised member close to a known one."""
    from agui_pipeline.model.capabilities import defined_members

    name = unescape(pointer.rpartition("/")[2])
    return did_you_mean(name, defined_members(capabilities, pointer))


def _unrecognised_reason(pointer: str) -> str:
    if pointer == "/multiAgent/subAgents":
        return "the retired spelling of subagents, which this version does not read"
    return "a member this version of AgentCapabilities does not define"
