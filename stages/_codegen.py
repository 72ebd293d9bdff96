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

    python -m agui_pipeline.stages._codegen            # all of it
    python -m agui_pipeline.stages._codegen scan       # the functions named scan*
"""

from __future__ import annotations

import sys
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


def main(argv: list[str]) -> None:
    # By name: run with -m, this file is __main__, not the module enforce fills.
    from agui_pipeline.stages import _codegen, enforce

    enforce.generate_all()  # each object's check is otherwise made on first use

    for label, source in _codegen.generated.items():
        if not argv or any(label.startswith(prefix) for prefix in argv):
            print(f"# {label}\n{source}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
