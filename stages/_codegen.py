"""Python generated for enforce's checks (the batch scan at import, each object's check on
first use): the one place ``exec`` runs.

What it buys: enforce's checks are written once, as the event ``TypedDict``\\ s
(``agui_pipeline.events``), and compiled into straight-line functions — each
member read by subscript with its test inlined, the delta events checked
inside the batch loop without a call — instead of walking the schema's nodes
per event. Measured on the benchmark workload (``python -m
benchmarks.instructions --upto enforce``, less ``--upto compat``): enforce
costs 3,178 instructions an event with the generated checks, 21,915 walking
the nodes.

Every generated function's source is kept, to read or debug::

    python -m agui_pipeline.stages.enforce            # all of it
    python -m agui_pipeline.stages.enforce scan       # the functions named scan*
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

generated: dict[str, str] = {}
"""The source of each generated function, by a name saying what it checks."""


def define(label: str, lines: list[str], namespace: dict[str, Any]) -> Callable[..., Any]:
    """Compile ``lines`` — one ``def`` of the function named by the first — in ``namespace``
    (the names it uses), and return the function. ``label`` names it in :data:`generated`."""
    source = "\n".join(lines)
    name = lines[0].removeprefix("def ").partition("(")[0]
    exec(compile(source, f"<generated {label}>", "exec"), namespace)
    generated[label] = source
    function: Callable[..., Any] = namespace[name]
    return function
