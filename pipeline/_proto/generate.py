"""Write the protobuf wire schema for AG-UI 1.1 from ``schema.json`` and the slot freeze.

``/spec/1.1/basic/transports/http-protobuf`` ("The wire schema"): the messages
are generated from the JSON Schema, with every slot number taken from
``proto-freeze.txt``. The freeze is the source of the numbers and of which slots
exist; the schema is the source of each slot's shape (type, presence,
repetition). A slot whose schema member is gone becomes a reserved number; a
schema member with no frozen slot is not on the wire (and is reported).

The wire projects the JSON shapes in a few fixed ways, each a table below:
every event nests the common members as ``base_event``; the message union is
one ``Message`` carrying every role's members; a ``content`` that is a string
*or* parts *or* an object is split over ``content``/``content_parts``/
``activity_content``; a discriminated outcome travels as its discriminator
string with its arms' members lifted beside it. How open JSON is typed follows
the reference package's wire (``@ag-ui/proto`` 1.0.0): an object open by key
is a ``google.protobuf.Struct``, any JSON value a ``google.protobuf.Value``.

Re-run after the schema or the freeze changes (then recompile, see ``--compile``)::

    python -m agui_pipeline._proto.generate            # rewrite agui.proto
    python -m agui_pipeline._proto.generate --compile  # and agui_pb2.py(i) (grpcio-tools)
    python -m agui_pipeline._proto.generate --check    # exit 1 if the committed file drifted
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PROTO_PATH = HERE / "agui.proto"
_REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "agui-1.1"
DEFAULT_SCHEMA = _REFERENCE / "schema.json"
DEFAULT_FREEZE = _REFERENCE / "proto-freeze.txt"

STRUCT = "google.protobuf.Struct"
VALUE = "google.protobuf.Value"

# Which schema definitions each wire message draws its members from. Unlisted
# messages draw from the definition of the same name.
SOURCES: dict[str, tuple[str, ...]] = {
    "Usage": ("TokenUsage",),
    "ToolCall.Function": ("FunctionCall",),
    "TextInputPart": ("TextPart",),
    "ImageInputPart": ("ImagePart",),
    "AudioInputPart": ("AudioPart",),
    "VideoInputPart": ("VideoPart",),
    "DocumentInputPart": ("DocumentPart",),
    "InputContentDataSource": ("DataSource",),
    "InputContentUrlSource": ("UrlSource",),
    "InputContentFileSource": ("FileSource",),
}
"""Wire messages whose schema definition has another name."""

UNIONS = {"Message", "JsonPatchOperation"}
"""Schema unions carried as one wire message holding the members of every arm."""

LIFTED = {"outcome"}
"""Discriminated unions carried as the discriminator string, their arms' members lifted
into the enclosing message (``RunFinishedEvent.interrupts``, ``.pending_tool_call_ids``)."""

MESSAGE_OF_DEF = {
    "BaseEvent": "BaseEvent",
    "TokenUsage": "Usage",
    "FunctionCall": "ToolCall.Function",
    "ContentPart": "InputContent",
    "PartSource": "InputContentSource",
    "Message": "Message",
    "ToolCall": "ToolCall",
    "Interrupt": "Interrupt",
    "ResumeEntry": "ResumeEntry",
    "RunAgentInput": "RunAgentInput",
    "Tool": "Tool",
    "Context": "Context",
    "JsonPatchOperation": "JsonPatchOperation",
}
"""Schema definitions referenced by a member, and the wire message that carries them."""

ONEOF_ARMS = {
    "Event": "{}Event",
    "InputContent": "{}InputPart",
    "InputContentSource": "InputContent{}Source",
}
"""Envelope messages: one oneof whose arm ``x_y`` holds the message named by the pattern."""

SPLIT = {"content_parts": ("content", "array"), "activity_content": ("content", "object")}
"""A member with several JSON shapes spread over several slots: slot -> (member, shape).
``content`` itself keeps the string shape."""

ENUMS = {
    ("BaseEvent", "type"): "EventType",
    ("JsonPatchOperation", "op"): "JsonPatchOperationType",
}
"""Members carried as a frozen enum rather than a string."""

VALUE_NOT_STRUCT = {("Interrupt", "metadata"), ("Interrupt", "response_schema")}
"""Open objects the reference wire (``@ag-ui/proto`` 1.0.0) carries as a ``Value``, not a
``Struct``: the bytes differ, so this wire follows it."""


@dataclass(frozen=True, slots=True)
class Slot:
    message: str
    name: str
    number: int
    oneof: str | None = None


def read_freeze(text: str) -> list[Slot]:
    """``Message.field = N`` and ``Message.oneof.arm = N`` lines; ``#`` comments skipped."""
    slots = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        path, _, number = line.partition("=")
        parts = path.strip().split(".")
        if parts[0] in ONEOF_ARMS and len(parts) == 3:
            slots.append(Slot(parts[0], parts[2], int(number), oneof=parts[1]))
        elif parts[0] == "ToolCall" and parts[1] == "Function":
            slots.append(Slot("ToolCall.Function", parts[2], int(number)))
        else:
            slots.append(Slot(parts[0], parts[1], int(number)))
    return slots


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.title() for part in rest)


def _pascal(snake: str) -> str:
    return "".join(part.title() for part in snake.split("_"))


class Generator:
    def __init__(self, schema: dict[str, Any], slots: list[Slot]) -> None:
        self.defs: dict[str, Any] = schema["$defs"]
        self.slots = slots
        self.warnings: list[str] = []

    # -- the schema side ------------------------------------------------------

    def _ref(self, node: dict[str, Any]) -> str | None:
        ref = node.get("$ref")
        return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None

    def _object_defs(self, name: str) -> list[dict[str, Any]]:
        """The object definitions a wire message draws from (a union: each arm)."""
        names = SOURCES.get(name, (name,))
        found = []
        for def_name in names:
            node = self.defs[def_name]
            if def_name in UNIONS:
                found += [self.defs[self._ref(arm) or ""] for arm in node["oneOf"]]
            else:
                found.append(node)
        return found

    def _members(self, node: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
        """Properties and required names of an object definition, its ``allOf`` merged in."""
        properties: dict[str, Any] = {}
        required: set[str] = set(node.get("required", ()))
        for part in node.get("allOf", ()):
            sub_props, sub_required = self._members(self.defs[self._ref(part) or ""])
            properties.update(sub_props)
            required |= sub_required
        properties.update(node.get("properties", {}))
        return properties, required

    def _lookup(self, message: str, member: str) -> tuple[list[dict[str, Any]], bool] | None:
        """Every schema node for ``member`` of ``message``, and whether every source requires it.

        A lifted union's arms are searched too, and what they carry is never required.
        """
        nodes: list[dict[str, Any]] = []
        required_everywhere = True
        for source in self._object_defs(message):
            properties, required = self._members(source)
            # A union's member is required only when every arm requires it.
            required_everywhere &= member in required
            if member in properties:
                nodes.append(properties[member])
            for lifted in LIFTED & properties.keys():
                union = self.defs[self._ref(properties[lifted]) or ""]
                for arm in union["oneOf"]:
                    arm_props, _ = self._members(self.defs[self._ref(arm) or ""])
                    if member in arm_props and member != "type":
                        nodes.append(arm_props[member])
                        required_everywhere = False
        return (nodes, required_everywhere) if nodes else None

    def _resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        """Follow ``$ref`` to a definition unless the definition is a wire message."""
        while (name := self._ref(node)) is not None and name not in MESSAGE_OF_DEF:
            merged = {key: value for key, value in node.items() if key != "$ref"}
            node = {**self.defs[name], **merged}
        return node

    def _type(self, message: str, slot: str, node: dict[str, Any]) -> tuple[str, bool]:
        """The protobuf type of one JSON shape, and whether it repeats."""
        node = self._resolve(node)
        if (name := self._ref(node)) is not None:
            return MESSAGE_OF_DEF[name], False
        if node.get("type") == "array":
            item, _ = self._type(message, slot, node["items"])
            return item, True
        kind = node.get("type")
        if kind == "string" or isinstance(node.get("const"), str):
            return "string", False
        if kind == "integer":
            return "int64", False
        if kind == "number":
            return "double", False
        if kind == "boolean":
            return "bool", False
        if kind == "object" and node.get("additionalProperties") is True:
            return (VALUE if (message, slot) in VALUE_NOT_STRUCT else STRUCT), False
        if not {"type", "oneOf", "anyOf", "properties"} & node.keys():
            return VALUE, False  # any JSON value: {} or {"not": {"type": "null"}}
        raise ValueError(f"{message}.{slot}: no wire type for the schema shape {node}")

    def _shape(self, node: dict[str, Any], shape: str) -> dict[str, Any]:
        """The arm of a multi-shaped member with JSON type ``shape``."""
        for arm in node.get("oneOf", [node]):
            if shape in self._json_types(arm):
                return dict(arm)
        raise ValueError(f"no {shape} shape in {node}")

    def field(self, slot: Slot) -> str | None:
        """One field line, or ``None`` when the schema no longer has the member."""
        if slot.name == "base_event":
            return f"BaseEvent base_event = {slot.number};"
        if (slot.message, slot.name) in ENUMS:
            return f"{ENUMS[slot.message, slot.name]} {slot.name} = {slot.number};"
        member, shape = SPLIT.get(slot.name, (_camel(slot.name), "string"))
        found = self._lookup(slot.message, member)
        if found is None:
            return None
        nodes, required = found
        if member in LIFTED:
            # The discriminator's empty string is "absent" ("Absent means success").
            return f"string {slot.name} = {slot.number};"
        node = nodes[0]
        multi_shaped = [n for n in nodes if "oneOf" in n]
        if multi_shaped:
            # One JSON member, several wire slots: each slot takes one shape, and none is
            # required, since the others may carry the member instead.
            candidates = [n for n in multi_shaped if shape in self._json_types(n)]
            plain = [n for n in nodes if "oneOf" not in n and shape in self._json_types(n)]
            if candidates:
                node = self._shape(candidates[0], shape)
            elif plain:
                node = plain[0]
            else:
                return None
            required = False
        wire_type, repeated = self._type(slot.message, slot.name, node)
        if repeated:
            label = "repeated "
        elif wire_type in _SCALARS and not required:
            label = "optional "
        else:
            label = ""
        return f"{label}{wire_type} {slot.name} = {slot.number};"

    def _json_types(self, node: dict[str, Any]) -> set[str]:
        arms = node.get("oneOf", [node])
        types = set()
        for arm in arms:
            resolved = self._resolve(arm)
            if isinstance(resolved.get("const"), str):
                types.add("string")
            elif "type" in resolved:
                types.add(resolved["type"])
        return types

    # -- the output -----------------------------------------------------------

    def enum(self, name: str, values: list[Slot]) -> list[str]:
        expected = self._enum_values(name)
        frozen = {slot.name for slot in values}
        for missing in sorted(expected - frozen):
            self.warnings.append(f"{name}.{missing}: in the schema but has no frozen number")
        lines = [f"enum {name} {{"]
        for slot in sorted(values, key=lambda s: s.number):
            if slot.name in expected:
                lines.append(f"  {slot.name} = {slot.number};")
            else:
                lines.append(f"  reserved {slot.number};  // was {slot.name}")
        return [*lines, "}"]

    def _enum_values(self, name: str) -> set[str]:
        if name == "EventType":
            return set(self.defs["EventType"]["enum"])
        arms = self.defs["JsonPatchOperation"]["oneOf"]
        return {
            self.defs[self._ref(arm) or ""]["properties"]["op"]["const"].upper() for arm in arms
        }

    def message(self, name: str, slots: list[Slot], nested: list[str]) -> list[str]:
        short = name.rsplit(".", 1)[-1]
        lines = [f"message {short} {{"]
        lines += [f"  {line}" for line in nested]
        if name in ONEOF_ARMS:
            oneof = slots[0].oneof
            lines.append(f"  oneof {oneof} {{")
            for slot in sorted(slots, key=lambda s: s.number):
                arm_type = ONEOF_ARMS[name].format(_pascal(slot.name))
                lines.append(f"    {arm_type} {slot.name} = {slot.number};")
            return [*lines, "  }", "}"]
        for slot in sorted(slots, key=lambda s: s.number):
            line = self.field(slot)
            if line is None:
                line = f"reserved {slot.number};  // was {slot.name}"
            lines.append(f"  {line}")
        self._report_unfrozen(name, {slot.name for slot in slots})
        return [*lines, "}"]

    def _report_unfrozen(self, name: str, frozen: set[str]) -> None:
        carried = {_camel(slot) for slot in frozen} | {"type", "content"}
        for source in self._object_defs(name):
            properties, _ = self._members(source)
            for member in sorted(properties.keys() - carried - LIFTED):
                if name != "BaseEvent" and member in self._members(self.defs["BaseEvent"])[0]:
                    continue  # carried by base_event
                self.warnings.append(f"{name}.{member}: in the schema but has no frozen slot")

    def render(self) -> str:
        by_message: dict[str, list[Slot]] = defaultdict(list)
        for slot in self.slots:
            by_message[slot.message].append(slot)
        out = [
            "// @generated by agui_pipeline._proto.generate from schema.json and",
            "// proto-freeze.txt (AG-UI 1.1). Do not edit: re-run the generator.",
            "// /spec/1.1/basic/transports/http-protobuf",
            'syntax = "proto3";',
            "",
            "package ag_ui;",
            "",
            'import "google/protobuf/struct.proto";',
            "",
        ]
        for name in sorted(n for n in by_message if n in _ENUM_NAMES):
            out += [*self.enum(name, by_message[name]), ""]
        for name in sorted(n for n in by_message if n not in _ENUM_NAMES and "." not in n):
            nested: list[str] = []
            for inner in sorted(n for n in by_message if n.startswith(name + ".")):
                nested += self.message(inner, by_message[inner], [])
            out += [*self.message(name, by_message[name], nested), ""]
        return "\n".join(out).rstrip("\n") + "\n"


_SCALARS = {"string", "int64", "double", "bool"}
_ENUM_NAMES = set(ENUMS.values())


def generate(schema_path: Path = DEFAULT_SCHEMA, freeze_path: Path = DEFAULT_FREEZE) -> str:
    """The ``.proto`` text; warnings about unfrozen schema members go to stderr."""
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    generator = Generator(schema, read_freeze(freeze_path.read_text(encoding="utf-8")))
    text = generator.render()
    for warning in generator.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return text


def compile_proto() -> None:
    """Compile ``agui.proto`` to ``agui_pb2.py`` and its stub with grpcio-tools' protoc."""
    # The standard toolchain (``pip install grpcio-tools``), needed only to regenerate.
    spec = importlib.util.find_spec("grpc_tools")
    if spec is None or spec.origin is None:
        raise SystemExit("--compile needs grpcio-tools: pip install grpcio-tools")
    includes = Path(spec.origin).parent / "_proto"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{HERE}",
            f"-I{includes}",
            f"--python_out={HERE}",
            f"--pyi_out={HERE}",
            str(PROTO_PATH),
        ],
        check=True,
    )
    for generated in (HERE / "agui_pb2.py", HERE / "agui_pb2.pyi"):
        # protoc stamps no trailing newline policy of its own; keep the files lint-stable.
        generated.write_text(re.sub(r"\s+\Z", "\n", generated.read_text()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agui_pipeline._proto.generate")
    parser.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA)
    parser.add_argument("--freeze", type=Path, default=DEFAULT_FREEZE)
    parser.add_argument("--check", action="store_true", help="exit 1 if agui.proto drifted")
    parser.add_argument("--compile", action="store_true", help="also run protoc (grpcio-tools)")
    args = parser.parse_args(argv)
    text = generate(args.schema, args.freeze)
    if args.check:
        if PROTO_PATH.read_text(encoding="utf-8") != text:
            print(f"{PROTO_PATH} is stale: re-run the generator", file=sys.stderr)
            return 1
        return 0
    PROTO_PATH.write_text(text, encoding="utf-8")
    if args.compile:
        compile_proto()
    return 0


if __name__ == "__main__":
    sys.exit(main())
