"""The package's import graph: no cycle, and each layer imports only the layers above it.

Every ``import`` counts — at the top of a module, under ``TYPE_CHECKING``, or inside a
function to defer it — because each is a dependency a reader must hold in mind. The graph
is read from the source (``ast``), so the test costs no imports.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "agui_pipeline"
FOLDERS = {PACKAGE: ROOT / "pipeline", f"{PACKAGE}.stages": ROOT / "stages"}

LAYERS = [
    # The contract, what a stage author and every layer below import, in the order its
    # modules build on one another: one module to a layer, so a cycle between two of
    # them (not only between two files) shows as an import going up.
    {"_json", "_suggest", "events", "catalog"},  # depend on nothing of the package
    {"_native", "_cores"},  # the native core (native/, Rust) when built, and which core runs
    {"batch"},  # events with their frame indices
    {"errors"},  # what a rejection carries: its code, the batch it cut
    {"declaration"},  # where a capabilities declaration comes from
    {"_proto"},  # the protobuf codec the sinks encode with
    {"subscribers"},  # handlers and sinks
    {"options"},  # the settings, which name handlers, sinks and a declaration
    {"stage"},  # the stage contract, built on all of the above
    {"model"},  # the AG-UI data the stages and the Conversation share
    {"stages"},  # one module per stage
    {"_engine"},  # the pipeline that runs the stages over a source
    {"delivery"},  # what leaves it: reports
    {"http"},  # bindings: client, transports, servers
    {"testing"},  # the pytest plugin, the conformance runner, workloads
    {"_checking"},  # checking a source, and many on a cluster: what fleet and check share
    {"fleet"},  # checking archives on a cluster
    {"cli"},  # the command line, on all of the above
    {"__init__", "__main__"},  # the public face
]
"""Top to bottom: a module imports only from its own layer and those above it."""


def modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    found: dict[str, Path] = {}
    for prefix, folder in FOLDERS.items():
        stubs = [stub for stub in folder.rglob("*.pyi") if not stub.with_suffix(".py").exists()]
        for path in [*folder.rglob("*.py"), *stubs]:  # a stub stands for an extension module
            if "_proto" in path.parts and path.name.endswith("_pb2.py"):
                continue  # protoc's output
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join([prefix, *parts])
            if prefix == PACKAGE and parts[:1] == ["stages"]:
                continue
            found[name] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The package's modules ``name`` imports, wherever the import statement stands."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            # ``from pkg import sub`` needs pkg.sub; ``from mod import name`` needs mod.
            submodules = [f"{base}.{alias.name}" for alias in node.names]
            found = [target for target in submodules if target in known]
            targets = found if found else [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: set(imports(name, path, known)) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def layer(name: str) -> int:
    head = name.removeprefix(PACKAGE).lstrip(".").split(".")[0] or "__init__"
    for position, members in enumerate(LAYERS):
        if head in members:
            return position
    raise AssertionError(f"{name} is in no layer: add its package to LAYERS")


def test_no_import_cycle() -> None:
    assert cycles(graph()) == []


def test_each_layer_imports_only_the_layers_above_it() -> None:
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in graph().items()
        for target in targets
        if layer(target) > layer(name)
    )
    assert upward == []


def test_only_the_command_line_imports_the_command_line() -> None:
    """The library stands below the command line: what a command and the library share
    (checking a source, the gate, a cluster's work) lives in ``_checking``, never in
    ``cli`` for the library to reach into. ``__main__`` is the command's other door."""
    cli = f"{PACKAGE}.cli"
    reaching = sorted(
        f"{name} -> {target}"
        for name, targets in graph().items()
        if not (name == cli or name.startswith(f"{cli}.") or name == f"{PACKAGE}.__main__")
        for target in targets
        if target == cli or target.startswith(f"{cli}.")
    )
    assert reaching == []


def test_the_contract_is_ordered_module_by_module() -> None:
    """A package that imports a module which imports the package back is a cycle the
    module graph cannot see (``_proto.framing`` needed ``stage``, which needs ``options``,
    ``subscribers`` and so the codec in ``_proto``): the layers see it."""
    edges = graph()
    edges[f"{PACKAGE}._proto.codec"].add(f"{PACKAGE}.stage")
    upward = [
        f"{name} -> {target}"
        for name, targets in edges.items()
        for target in targets
        if layer(target) > layer(name)
    ]
    assert upward == [f"{PACKAGE}._proto.codec -> {PACKAGE}.stage"]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_every_kind_of_import() -> None:
    edges = graph()
    # A module-level import, and one inside a function (deferred).
    assert f"{PACKAGE}.catalog" in edges[f"{PACKAGE}.errors"]
    assert f"{PACKAGE}.stages.verify" in edges[f"{PACKAGE}._engine.order"]
