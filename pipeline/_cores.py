"""Which core runs the built-in stages: the native one (Rust) or the pure Python reference.

The native core is the extension module ``agui_pipeline._native`` (the crate in ``native/``),
built by ``pip install`` when a Rust toolchain is present. The Python implementation stays
the reference: it runs where the extension is not built, and everywhere when
``AGUI_PIPELINE_PURE=1`` is set. Native so far: parse's framing of SSE and JSON lines
(``stages/parse.py``, :func:`~agui_pipeline.stages.parse.native_framer`), enforce's fast
check of each event (``stages/enforce.py``; an event it does not pass is judged by the
reference's walk), judge mode, a whole stream file read natively when ``check`` wants
only its verdict (``_engine/judge.py``; a stream it is unsure of is read by the pipeline),
and deliver mode, the same judge in front of metadata and dispatch while it is sure of a
stream whose events are delivered (``_engine/deliver.py``).
A stage reads :data:`native` when it is built.
``agui-pipeline --version`` says which core is active (:data:`ACTIVE`).
"""

from __future__ import annotations

import os
from importlib import import_module
from types import ModuleType

PURE_SETTING = "AGUI_PIPELINE_PURE"


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get(PURE_SETTING, "") not in ("", "0"):
        return None, f"pure Python core: {PURE_SETTING}={os.environ[PURE_SETTING]}"
    try:
        native = import_module("agui_pipeline._native")  # its absence is ModuleNotFoundError
    except ModuleNotFoundError as missing:
        if missing.name != "agui_pipeline._native":
            raise
        return None, "pure Python core: extension not built"
    except ImportError as broken:  # built, but not loadable here (another platform's build)
        return None, f"pure Python core: the extension did not load ({broken})"
    return native, "native core"


native, ACTIVE = _load()
"""The extension module when the native core runs (``None``: the pure Python core), and
what ``--version`` says of it."""
