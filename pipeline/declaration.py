"""A capabilities declaration as the pipeline holds it: usable or not, and what was noticed.

:class:`Declaration` is what ``Pipeline(capabilities=...)`` keeps and the
reconcile stage reads. It names no pydantic type: the model,
:class:`~agui_pipeline.AgentCapabilities` (:mod:`agui_pipeline.model.capabilities`),
costs about 0.2 s of start-up to import, so it is read only when there is a
declaration to read (``read_declaration``), and a pipeline without one
(``agui-pipeline check FILE``) never pays for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeAlias

from agui_pipeline.catalog import Code


class CapabilitiesModel(Protocol):
    """An ``AgentCapabilities`` model, as this module needs to know it (structurally)."""

    def to_json(self) -> dict[str, Any]: ...

    def unrecognised(self) -> list[str]: ...


CapabilitiesSource: TypeAlias = (
    CapabilitiesModel | Mapping[str, Any] | bytes | str | os.PathLike[str]
)
"""A declaration as the caller has it: an ``AgentCapabilities`` model, a dict, JSON bytes, or
a file path (``Path`` or ``str``: a ``str`` is a path, as for ``Pipeline.run``; JSON text
in a ``str`` is refused with ``ValueError``)."""


@dataclass(frozen=True, slots=True)
class DeclarationNote:
    """Something to say about the declaration itself, reported into each stream it governs."""

    code: Code
    message: str
    pointer: str
    """Where in the declaration (a JSON Pointer)."""


class Declaration:
    """A declaration as the pipeline holds it: usable or not, with what was noticed reading it.

    Reading never raises for the document's content
    (:func:`~agui_pipeline.model.capabilities.read_declaration`): an unusable
    declaration has ``capabilities = None`` — the run proceeds as for an agent
    that declared nothing (``/spec/1.1/basic/capabilities``, Error Handling) —
    and a note saying which field and why.
    """

    __slots__ = ("capabilities", "notes")

    NONE: ClassVar[Declaration]

    def __init__(
        self, capabilities: CapabilitiesModel | None, notes: tuple[DeclarationNote, ...] = ()
    ) -> None:
        self.capabilities = capabilities
        self.notes = notes

    @property
    def usable(self) -> bool:
        return self.capabilities is not None

    def __repr__(self) -> str:
        return f"Declaration(usable={self.usable}, notes={len(self.notes)})"


Declaration.NONE = Declaration(None)
