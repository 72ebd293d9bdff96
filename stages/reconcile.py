"""reconcile — the stream against the agent's capabilities declaration: producer diagnostics.

``/spec/1.1/basic/capabilities``: declarations are informative, the stream is
authoritative. A consumer MUST NOT reject a stream, or fail a run, because an
event arrives that the declaration did not anticipate — but what is declared
SHOULD hold, and a producer whose stream contradicts its declaration is worth
a complaint. This stage makes that complaint and nothing else: it never drops,
alters, delays or rejects an event, and an omitted field (undeclared, not
unsupported) never produces a finding.

Findings, each at most once per run per field (or per name, up to
``MAX_NAMES`` names), with the event index and pointer of the first evidence
and the declaration field:

- an explicit ``false`` contradicted (``reconcile.false-contradicted``):
  ``tools.supported`` by a tool call; ``reasoning.supported`` by any reasoning
  event, ``reasoning.streaming`` by a second content delta to one reasoning
  message, ``reasoning.encrypted`` by ``REASONING_ENCRYPTED_VALUE``;
  ``state.snapshots`` / ``state.deltas`` by ``STATE_SNAPSHOT`` / ``STATE_DELTA``;
  ``multiAgent.supported`` by a ``SUBAGENT_*`` event and ``multiAgent.delegation``
  by ``SUBAGENT_STARTED``; ``humanInTheLoop.supported`` / ``interrupts`` by an
  interrupt outcome, ``humanInTheLoop.approvals`` by an interrupt naming a tool
  call (``/spec/1.1/basic/patterns/interrupt-resume``);
- a tool in neither ``tools.items`` nor the run input's tools
  (``reconcile.unlisted-tool``) — judged only when both lists are known, or
  when ``clientProvided: false`` rules the application's tools out;
- one of the application's tools called under ``clientProvided: false``;
- tool calls in flight at once (started, not yet answered by a result) under
  ``parallelCalls: false``, per owner (a subagent's calls are its own);
- ``SUBAGENT_STARTED`` under a name ``multiAgent.subagents`` does not list;
- the transport the stream arrived on against ``transport``;
- the run input against the declaration, as the sending side can check it
  before sending with :func:`agui_pipeline.check_run_input`: media
  parts against ``multimodal.input``; tools, resume entries and edited
  arguments against ``clientProvided``, ``interrupts``, ``approveWithEdits``.

At the end of each run an informational summary lists the declared fields the
run exercised, those it did not (which is fine), and the undeclared ones it
used. Fields no standard event can show (``output``, ``execution``,
``state.memory``, ``multimodal.output``, ``transport.resumable`` ...) are
neither judged nor summarised.

Cost: one dict lookup by event type per event, done for a whole batch at C
speed; only the event types that can be evidence have a handler, and once a
run has shown what a type can show, its handler is set aside until the next
run.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from functools import lru_cache
from itertools import compress
from typing import TYPE_CHECKING, Any, ClassVar

from agui_pipeline._json import shown
from agui_pipeline.batch import Batch, Event, empty_batch, type_table
from agui_pipeline.catalog import (
    ALL,
    RECONCILE_CLIENT_TOOL,
    RECONCILE_FALSE_CONTRADICTED,
    RECONCILE_PARALLEL_CALLS,
    RECONCILE_RUN_SUMMARY,
    RECONCILE_TRANSPORT,
    RECONCILE_UNLISTED_SUBAGENT,
    RECONCILE_UNLISTED_TOOL,
    Code,
)
from agui_pipeline.model.declared import (
    check_run_input,
    declared_value,
    input_modalities,
    model_of,
)
from agui_pipeline.stage import Stage, StreamContext

if TYPE_CHECKING:
    from agui_pipeline.declaration import Declaration
    from agui_pipeline.model.capabilities import AgentCapabilities  # pydantic: the model, for types

from agui_pipeline.model.declared import read_declaration
from agui_pipeline.stages._checks import would_deliver

OBSERVABLE = (
    "/transport/streaming",
    "/transport/httpBinary",
    "/transport/websocket",
    "/tools/supported",
    "/tools/items",
    "/tools/parallelCalls",
    "/tools/clientProvided",
    "/state/snapshots",
    "/state/deltas",
    "/multiAgent/supported",
    "/multiAgent/delegation",
    "/multiAgent/subagents",
    "/reasoning/supported",
    "/reasoning/streaming",
    "/reasoning/encrypted",
    "/multimodal/input/image",
    "/multimodal/input/audio",
    "/multimodal/input/video",
    "/multimodal/input/pdf",
    "/humanInTheLoop/supported",
    "/humanInTheLoop/interrupts",
    "/humanInTheLoop/approvals",
)
"""The declaration fields a stream (or its run input) can show evidence for."""

MAX_NAMES = 1000
"""Unlisted tool or subagent names reported per run; a hostile stream cannot grow the set."""

_REASONING = (
    "REASONING_START",
    "REASONING_END",
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_END",
    "REASONING_MESSAGE_CHUNK",
)
_SUBAGENT_END = ("SUBAGENT_FINISHED", "SUBAGENT_ERROR")
_HANDLERS: dict[str, str] = {
    "RUN_STARTED": "_run_started",
    "RUN_FINISHED": "_run_finished",
    "RUN_ERROR": "_run_error",
    "TOOL_CALL_START": "_tool_call_start",
    "TOOL_CALL_CHUNK": "_tool_call_chunk",
    "TOOL_CALL_RESULT": "_tool_call_result",
    "REASONING_MESSAGE_CONTENT": "_reasoning_content",
    "REASONING_ENCRYPTED_VALUE": "_reasoning_encrypted",
    "STATE_SNAPSHOT": "_state_snapshot",
    "STATE_DELTA": "_state_delta",
    "SUBAGENT_STARTED": "_subagent_started",
    **{kind: "_reasoning" for kind in _REASONING},
    **{kind: "_subagent_end" for kind in _SUBAGENT_END},
}
"""Event type → the method that records what it shows; every other type costs one lookup."""

EVIDENCE_TYPES = frozenset(_HANDLERS)
"""The event types reconcile reads: every other passes it unread, so judge mode builds only
these for it (``_engine/judge.py``)."""


def transport_field(transport: str | None) -> str | None:
    """The ``transport`` field a binding name stands for (``"http+sse"`` → ``streaming``)."""
    if not transport:
        return None
    name = transport.lower()
    if "sse" in name:
        return "/transport/streaming"
    if "proto" in name or "binary" in name:
        return "/transport/httpBinary"
    if "websocket" in name or name.startswith("ws"):
        return "/transport/websocket"
    return None  # a file's framing (JSON lines, a JSON array) is no binding


class Reconcile(Stage):
    """Compare each run with the declaration in ``Options.capabilities``; report, never reject."""

    name: ClassVar[str] = "reconcile"

    def __init__(self, ctx: StreamContext) -> None:
        super().__init__(ctx)
        declaration = read_declaration(ctx.options.capabilities)
        for note in declaration.notes:
            ctx.report(note.code, note.message, declared=note.pointer)
        said = _said(declaration)
        self._active = self._unseen = said is not None
        """``_unseen``: no event read yet, of a stream held to a declaration (its transport
        is checked with the first)."""
        self._handlers: dict[Any, Handler | None] = _NO_HANDLERS
        if said is None:
            return
        self._declared, self._items, self._client_provided, self._subagents = said
        self._all_handlers = type_table(
            {kind: getattr(type(self), method) for kind, method in _HANDLERS.items()}
        )
        self._stream_used: dict[str, int | None] = {}
        """Evidence that holds for every run on the stream: transport, run input."""
        self._run_open = self._seen_run = False
        self._reset(None)
        self._retable = False
        """Set when a new run restored the handler table in the middle of a batch."""
        if ctx.run_input is not None:
            capabilities = model_of(declaration)
            assert capabilities is not None
            self._check_input(capabilities, ctx.run_input)

    # -- per batch ----------------------------------------------------------------

    async def process(self, batch: Batch) -> Batch:
        if not self._active:
            return batch
        if self._unseen:
            self._check_transport(batch.indices[0] if batch.indices else None)
        start: int | None = 0
        while start is not None:
            start = self._dispatch(batch, start)
        return batch

    def step(self, event: Event, kind: Any, index: int) -> Event:
        """One event of the engine's fused pass (``_engine/chain.py``): seen as
        :meth:`process` sees a batch of this event alone; reconcile never changes it."""
        if self._unseen:
            self._check_transport(index)
        try:
            handler = self._handlers[kind]  # every AG-UI type is there (``type_table``)
        except (KeyError, TypeError):  # another type, or an unhashable one: enforce's to judge
            return event
        if handler is not None:
            self._retable = False
            try:
                handler(self, event, index)
            except (AttributeError, TypeError, KeyError, ValueError):
                if would_deliver(event):  # as in _dispatch
                    raise
        return event

    def _dispatch(self, batch: Batch, start: int) -> int | None:
        """Hand ``batch.events[start:]`` to their handlers; where a new run restores the
        handler table, the position to look the rest of the batch up again from."""
        events, indices = batch.events, batch.indices
        found: Sequence[Any] = batch.by_type(self._handlers, start)  # compress skips the Nones
        for offset in compress(range(len(found)), found):
            position = start + offset
            try:
                found[offset](self, events[position], indices[position])
            except (AttributeError, TypeError, KeyError, ValueError):
                # What reading a malformed event raises: material enforce would have
                # rejected, in a pipeline without it. Reconcile has nothing to say about
                # that and never fails the stream; on any other event it is a bug.
                if would_deliver(events[position]):
                    raise
                continue
            if self._retable:
                self._retable = False
                return position + 1
        return None

    def _done(self, *kinds: str) -> None:
        """This run can show nothing more through ``kinds``: stop looking at them until the next."""
        for kind in kinds:
            self._handlers[kind] = None

    async def finish(self) -> Batch:
        if self._active and self._run_open:
            self._summarise(None, "the stream ended before the run did")
        return empty_batch()

    # -- runs ---------------------------------------------------------------------

    def _reset(self, run_id: Any) -> None:
        self._run_id = run_id
        self._handlers = dict(self._all_handlers)
        self._used: dict[str, int | None] = dict(self._stream_used)
        self._in_flight: dict[Any, dict[Any, int]] | None = {}
        """Tool calls started and not yet answered, by owner; ``None`` once calls overlapped."""
        self._reasoning_deltas: set[Any] = set()
        self._reasoning_streamed = False
        self._named: set[Any] = set()
        self._app_tools: set[Any] | None = None

    def _run_started(self, event: Event, index: int) -> None:
        self._reset(event.get("runId"))
        self._retable = True
        self._run_open = self._seen_run = True
        echo = event.get("input")
        run_input = self.ctx.run_input
        if type(echo) is dict:
            self._app_tools = _tool_names(echo)
        elif run_input is not None and run_input.get("runId") in (None, self._run_id):
            self._app_tools = _tool_names(run_input)

    def _run_finished(self, event: Event, index: int) -> None:
        outcome = event.get("outcome")
        if type(outcome) is dict and outcome.get("type") == "interrupt":
            what = "the run ended with an interrupt outcome"
            self._use("/humanInTheLoop/supported", index, "/outcome", what)
            self._use("/humanInTheLoop/interrupts", index, "/outcome", what)
            for position, interrupt in enumerate(outcome.get("interrupts") or ()):
                if type(interrupt) is dict and "toolCallId" in interrupt:
                    self._use(
                        "/humanInTheLoop/approvals",
                        index,
                        f"/outcome/interrupts/{position}/toolCallId",
                        "an interrupt asks for approval of a tool call",
                    )
                    break
        self._summarise(index, None)

    def _run_error(self, event: Event, index: int) -> None:
        # A late RUN_ERROR, after the run closed, was already summarised with that run.
        if self._run_open or not self._seen_run:
            self._summarise(index, "failed")

    # -- evidence -----------------------------------------------------------------

    def _use(self, field: str, index: int | None, pointer: str | None, what: str) -> None:
        """Record the run's first evidence for ``field``; complain if it was declared false."""
        used = self._used
        if field in used:
            return
        used[field] = index
        if self._declared.get(field) is False:
            self._complain(RECONCILE_FALSE_CONTRADICTED, field, index, pointer, evidence=what)

    def _complain(
        self, code: Code, field: str, index: int | None, pointer: str | None, **evidence: str
    ) -> None:
        """Report ``code``, a declared ``false`` the run contradicts; ``evidence`` fills the
        code's own words for what the run did."""
        self.ctx.report(
            code(field=field, declared=shown(self._declared.get(field)), **evidence),
            event_index=index,
            pointer=pointer,
            declared=field,
        )

    def _tool_call_start(self, event: Event, index: int) -> None:
        if "/tools/supported" not in self._used:
            self._use("/tools/supported", index, "/type", "the agent called a tool")
        if self._in_flight is not None:
            call_id = event.get("toolCallId")
            calls = self._in_flight.setdefault(event.get("subagentRunId"), {})
            if calls and call_id not in calls:
                self._overlap(call_id, calls, index)
            else:
                calls[call_id] = index
        self._tool_name(event.get("toolCallName"), index)

    def _tool_call_chunk(self, event: Event, index: int) -> None:
        # Only seen in a pipeline without expand; a name marks the chunk that opens a call.
        self._use("/tools/supported", index, "/type", "the agent called a tool")
        if "toolCallName" in event:
            self._tool_name(event["toolCallName"], index)

    def _tool_call_result(self, event: Event, index: int) -> None:
        if self._in_flight is not None:
            call_id = event.get("toolCallId")
            for calls in self._in_flight.values():
                calls.pop(call_id, None)

    def _overlap(self, call_id: Any, calls: dict[Any, int], index: int) -> None:
        """The run's first overlap: record it, and stop tracking calls for the rest of the run."""
        field = "/tools/parallelCalls"
        self._in_flight = None
        self._done("TOOL_CALL_RESULT")
        self._used[field] = index
        if self._declared.get(field) is False:
            others = ", ".join(shown(other) for other in list(calls)[:3])
            self._complain(
                RECONCILE_PARALLEL_CALLS,
                field,
                index,
                "/toolCallId",
                call_id=shown(call_id),
                others=others,
            )

    def _tool_name(self, name: Any, index: int) -> None:
        items, app = self._items, self._app_tools
        if items is not None and name in items:
            self._use("/tools/items", index, "/toolCallName", "")
        elif app is not None and name in app:
            field = "/tools/clientProvided"
            if field not in self._used:
                self._used[field] = index
                if self._client_provided is False:
                    self._complain(
                        RECONCILE_CLIENT_TOOL,
                        field,
                        index,
                        "/toolCallName",
                        name=shown(name),
                    )
        else:
            if app is not None:
                self._use("/tools/items", index, "/toolCallName", "")
            if (
                items is not None
                and (app is not None or self._client_provided is False)
                and self._first_unlisted(name)
            ):
                self.ctx.report(
                    RECONCILE_UNLISTED_TOOL(name=shown(name), listed=_names(items), app=_names(app))
                    if app is not None
                    else RECONCILE_UNLISTED_TOOL(
                        "no-input", name=shown(name), listed=_names(items)
                    ),
                    event_index=index,
                    pointer="/toolCallName",
                    declared="/tools/items",
                )

    def _reasoning(self, event: Event, index: int) -> None:
        if "/reasoning/supported" in self._used:
            return
        self._use("/reasoning/supported", index, "/type", f"the stream carries {event['type']}")
        self._done(*_REASONING)

    def _reasoning_content(self, event: Event, index: int) -> None:
        if self._reasoning_streamed:
            return
        message_id = event.get("messageId")
        seen = self._reasoning_deltas
        if message_id in seen:
            self._reasoning_streamed = True
            self._reasoning_deltas = set()
            self._done("REASONING_MESSAGE_CONTENT")
            self._use(
                "/reasoning/streaming",
                index,
                "/delta",
                f"reasoning message {shown(message_id)} was streamed in more than one delta",
            )
        else:
            seen.add(message_id)
            self._reasoning(event, index)

    def _reasoning_encrypted(self, event: Event, index: int) -> None:
        self._reasoning(event, index)
        self._use(
            "/reasoning/encrypted",
            index,
            "/encryptedValue",
            "the stream carries an encrypted reasoning value",
        )
        self._done("REASONING_ENCRYPTED_VALUE")

    def _state_snapshot(self, event: Event, index: int) -> None:
        self._use("/state/snapshots", index, "/type", "the stream carries STATE_SNAPSHOT")
        self._done("STATE_SNAPSHOT")

    def _state_delta(self, event: Event, index: int) -> None:
        self._use("/state/deltas", index, "/type", "the stream carries STATE_DELTA")
        self._done("STATE_DELTA")

    def _first_unlisted(self, name: Any) -> bool:
        """Whether an unlisted tool or subagent ``name`` is reported: the first time this run
        names it, while fewer than ``MAX_NAMES`` were (the one cap on ``_named``)."""
        if name in self._named or len(self._named) >= MAX_NAMES:
            return False
        self._named.add(name)
        return True

    def _subagent_started(self, event: Event, index: int) -> None:
        what = "the agent started a subagent"
        self._use("/multiAgent/supported", index, "/type", what)
        self._use("/multiAgent/delegation", index, "/type", what)
        name, names = event.get("name"), self._subagents
        if names is None or name in names:
            self._use("/multiAgent/subagents", index, "/name", "")
        elif self._first_unlisted(name):
            self.ctx.report(
                RECONCILE_UNLISTED_SUBAGENT(name=shown(name), listed=_names(names)),
                event_index=index,
                pointer="/name",
                declared="/multiAgent/subagents",
            )

    def _subagent_end(self, event: Event, index: int) -> None:
        if "/multiAgent/supported" not in self._used:
            what = f"the stream carries {event['type']}"
            self._use("/multiAgent/supported", index, "/type", what)
        self._done(*_SUBAGENT_END)

    # -- the stream as a whole ----------------------------------------------------------

    def _check_transport(self, index: int | None) -> None:
        self._unseen = False
        transport = self.ctx.transport
        field = transport_field(transport)
        if field is None:
            return
        self._stream_used[field] = None
        self._used.setdefault(field, None)
        if self._declared.get(field) is False:
            self.ctx.report(
                RECONCILE_TRANSPORT(transport=transport, field=field),
                declared=field,
            )

    def _check_input(self, capabilities: AgentCapabilities, run_input: dict[str, Any]) -> None:
        for field, _ in input_modalities(run_input):
            self._stream_used[field] = None
        self._used.update(self._stream_used)
        for diagnostic in check_run_input(capabilities, run_input):
            self.ctx.report(
                ALL[diagnostic.code],
                diagnostic.message,
                pointer=diagnostic.pointer,
                declared=diagnostic.declared,
            )

    def _summarise(self, index: int | None, ending: str | None) -> None:
        declared, used = self._declared, self._used
        exercised = [f for f in OBSERVABLE if f in used and f in declared]
        contradicted = [f for f in exercised if declared[f] is False]
        exercised = [f for f in exercised if declared[f] is not False]
        idle = [f for f in declared if f not in used and declared[f] is not False]
        undeclared = [f for f in OBSERVABLE if f in used and f not in declared]
        run = "a run with no RUN_STARTED"
        if self._run_id is not None:
            run = f"run {shown(self._run_id)}"
        parts = [
            f"exercised {_list(exercised)}",
            f"declared but not exercised (fine) {_list(idle)}",
            f"used without a declaration {_list(undeclared)}",
        ]
        if contradicted:
            parts.append(f"declared false yet used {_list(contradicted)}")
        self.ctx.report(
            RECONCILE_RUN_SUMMARY(
                run=run, ending=" (" + ending + ")" if ending else "", parts="; ".join(parts)
            ),
            event_index=index,
        )
        self._run_open = False
        self._reset(None)


Handler = Callable[["Reconcile", Event, int], None]
Said = tuple[dict[str, Any], frozenset[Any] | None, bool | None, frozenset[Any] | None]
"""What a declaration says that reconcile compares a stream with: each observable field's
declared value, the tools it lists, ``tools.clientProvided``, the subagents it lists."""


@lru_cache(maxsize=64)
def _said(declaration: Declaration) -> Said | None:
    """What ``declaration`` says (``None``: nothing usable), read once for every stream of a
    pipeline, which holds one :class:`Declaration` (a stream's set-up read it field by field:
    about 20 µs)."""
    capabilities = model_of(declaration)
    if capabilities is None:
        return None
    declared = {
        field: value
        for field in OBSERVABLE
        if (value := declared_value(capabilities, field)) is not None
    }
    tools, agents = capabilities.tools, capabilities.multiAgent
    items = None if tools is None or tools.items is None else frozenset(t.name for t in tools.items)
    client_provided = None if tools is None else tools.clientProvided
    subagents = (
        None
        if agents is None or agents.subagents is None
        else frozenset(s.name for s in agents.subagents)
    )
    return declared, items, client_provided, subagents


_NO_HANDLERS: dict[Any, Handler | None] = type_table({})
"""The table of a reconcile with no declaration to hold a stream to: nothing to look at."""


def _tool_names(run_input: dict[str, Any]) -> set[Any]:
    """The application's tool names; an absent list means none (``/spec/1.1/basic/run-input``)."""
    tools = run_input.get("tools")
    if type(tools) is not list:
        return set()
    return {tool.get("name") for tool in tools if type(tool) is dict}


def _names(names: Collection[Any]) -> str:
    quoted = sorted(shown(name) for name in names)
    if not quoted:
        return "none"
    return ", ".join(quoted[:8]) + (f" and {len(quoted) - 8} more" if len(quoted) > 8 else "")


def _list(fields: list[str]) -> str:
    return ", ".join(fields) if fields else "none"
