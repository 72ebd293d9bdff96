"""A deterministic, realistic AG-UI 1.1 event stream of any length.

What an LLM agent streams: several runs on one thread, each a sequence of
turns — a step, a reasoning span with a reasoning message, an assistant text
message streamed token by token, tool calls whose arguments arrive in pieces
followed by their results, state snapshot and JSON Patch deltas — with
token-sized ``TEXT_MESSAGE_CONTENT`` deltas by far the most common event.

Every event is valid against ``schema.json`` and every sequence is legal
(``/spec/1.1/events/lifecycle``: runs closed before the next opens, steps
matched; ``/spec/1.1/events/text-messages``, ``/spec/1.1/events/tool-calls``,
``/spec/1.1/events/reasoning``: triads opened, extended, closed; results after
their call; ``/spec/1.1/events/state``: every patch applies). The same
``(n, seed)`` always gives the same stream, and runs have the same shape at
any ``n``, so events/s can be compared across stream lengths::

    from agui_pipeline.testing.workload import events, encode_jsonl, encode_sse

    stream = events(100_000)          # list of event dicts, exactly 100,000
    body = encode_sse(stream)         # bytes, one "data: {...}" event each
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import orjson

Event = dict[str, Any]

MIN_EVENTS = 5
"""The shortest stream that holds a whole run: started, a message triad, finished."""

_WORDS = (
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "is",
    "that",
    "for",
    "it",
    "on",
    "with",
    "as",
    "this",
    "be",
    "are",
    "at",
    "by",
    "from",
    "or",
    "an",
    "weather",
    "forecast",
    "temperature",
    "city",
    "today",
    "tomorrow",
    "rain",
    "sunny",
    "wind",
    "humidity",
    "search",
    "result",
    "invoice",
    "order",
    "customer",
    "account",
    "balance",
    "report",
    "summary",
    "table",
    "I",
    "will",
    "check",
    "let",
    "me",
    "look",
    "up",
    "here",
    "are",
    "found",
    "three",
    "items",
    "please",
    "note",
    "that",
    "résumé",
    "café",
    "naïve",
    "über",
    "Zürich",
    "東京",
    "données",
    "👍",
    "✅",
)
_PUNCTUATION = (".", ",", "!", "?", ":", "\n\n", "\n- ")
_TOOLS = ("get_weather", "search_documents", "lookup_order", "create_ticket")
_CITIES = ("Paris", "Zürich", "São Paulo", "Tokyo", "Nairobi", "Oslo")


DECLARATION: dict[str, Any] = {
    "identity": {"name": "workload-agent", "type": "assistant", "version": "1.0.0"},
    "transport": {"streaming": True},
    "tools": {
        "supported": True,
        "parallelCalls": False,
        "items": [
            {
                "name": name,
                "description": f"The workload's {name} tool.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                },
            }
            for name in _TOOLS
        ],
    },
    "state": {"snapshots": True, "deltas": True},
    "reasoning": {"supported": True, "streaming": True, "encrypted": False},
    "multiAgent": {"supported": False},
    "humanInTheLoop": {"supported": False, "interrupts": False},
}
"""The ``AgentCapabilities`` of the agent that streams this workload: every group that
applies, declared in full, so reconcile has everything to compare (and nothing to report)."""


class _Stream:
    """Builds events into one list, holding the ids and state that must stay consistent."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.out: list[Event] = []
        self.clock = 1_767_225_600_000  # milliseconds; every event carries a timestamp
        self.ids = 0
        self.todos = 0  # length of state["todos"], so every patch applies

    def emit(self, event: Event) -> None:
        self.clock += self.rng.randint(1, 40)
        event["timestamp"] = self.clock
        self.out.append(event)

    def new_id(self, prefix: str) -> str:
        self.ids += 1
        return f"{prefix}-{self.ids:06d}"

    # -- pieces -------------------------------------------------------------

    def token(self) -> str:
        rng = self.rng
        if rng.random() < 0.12:
            return rng.choice(_PUNCTUATION)
        word = rng.choice(_WORDS)
        return word if rng.random() < 0.1 else " " + word

    def text_message(self, deltas: int) -> str:
        message_id = self.new_id("msg")
        self.emit({"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"})
        for _ in range(deltas):
            self.emit(
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": self.token()}
            )
        end: Event = {"type": "TEXT_MESSAGE_END", "messageId": message_id}
        if self.rng.random() < 0.5:
            end["metadata"] = {
                "acme.finishReason": "stop",
                "acme.latencyMs": self.rng.randint(50, 3000),
            }
        self.emit(end)
        return message_id

    def reasoning(self, deltas: int) -> None:
        span_id, message_id = self.new_id("think"), self.new_id("rmsg")
        self.emit({"type": "REASONING_START", "messageId": span_id})
        self.emit({"type": "REASONING_MESSAGE_START", "messageId": message_id, "role": "reasoning"})
        content = {"type": "REASONING_MESSAGE_CONTENT", "messageId": message_id}
        for _ in range(deltas):
            self.emit({**content, "delta": self.token()})
        self.emit({"type": "REASONING_MESSAGE_END", "messageId": message_id})
        self.emit({"type": "REASONING_END", "messageId": span_id})

    def tool_call(self, parent_id: str, pieces: int) -> None:
        rng = self.rng
        call_id, name = self.new_id("call"), rng.choice(_TOOLS)
        arguments = orjson.dumps(
            {"city": rng.choice(_CITIES), "days": rng.randint(1, 7), "units": "metric"}
        ).decode()
        start: Event = {
            "type": "TOOL_CALL_START",
            "toolCallId": call_id,
            "toolCallName": name,
            "parentMessageId": parent_id,
        }
        if rng.random() < 0.5:
            start["metadata"] = {"acme.provider": "example-llm", "acme.model": "large-2"}
        self.emit(start)
        size = max(1, -(-len(arguments) // pieces))
        for at in range(0, len(arguments), size):
            piece = arguments[at : at + size]
            self.emit({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": piece})
        self.emit({"type": "TOOL_CALL_END", "toolCallId": call_id})
        content: Any
        if rng.random() < 0.7:
            content = f"{name}: {rng.randint(1, 40)} results, first at {rng.choice(_CITIES)}."
        else:
            content = [
                {"type": "text", "text": f"{name} returned {rng.randint(1, 9)} rows."},
                {"type": "text", "text": "See the attached summary.", "metadata": {"rank": 1}},
            ]
        self.emit(
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": self.new_id("tool"),
                "toolCallId": call_id,
                "content": content,
                "role": "tool",
            }
        )

    def state_snapshot(self) -> None:
        todos = [{"title": f"task {i}", "done": i % 3 == 0} for i in range(self.todos)]
        snapshot = {"status": "working", "progress": 0, "todos": todos, "user": {"locale": "fr-CH"}}
        self.emit({"type": "STATE_SNAPSHOT", "snapshot": snapshot})

    def state_delta(self) -> None:
        rng = self.rng
        ops: list[Event] = [{"op": "replace", "path": "/progress", "value": rng.randint(0, 100)}]
        if self.todos >= 20:  # keep the state bounded, so per-event cost stays flat
            ops.append({"op": "remove", "path": "/todos/0"})
            self.todos -= 1
        if rng.random() < 0.6:
            ops.append(
                {"op": "add", "path": "/todos/-", "value": {"title": self.token(), "done": False}}
            )
            self.todos += 1
        elif self.todos:
            index = rng.randrange(self.todos)
            ops.append({"op": "replace", "path": f"/todos/{index}/done", "value": True})
        self.emit({"type": "STATE_DELTA", "delta": ops})

    # -- a run ----------------------------------------------------------------

    def run(self, thread_id: str, size: int) -> None:
        """One run of exactly ``size`` events (``size >= MIN_EVENTS``)."""
        rng = self.rng
        run_id = self.new_id("run")
        stop = len(self.out) + size - 1  # where RUN_FINISHED goes in self.out
        started = {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id}
        self.emit({**started, "protocolVersion": "1.1"})
        if stop - len(self.out) >= 4:
            self.state_snapshot()
        while True:
            left = stop - len(self.out)
            # A turn here costs at most ~90 + 60 + 3*14 + 4 events; below that, finish
            # with one text message that takes exactly what is left.
            if left < 220:
                if left >= 3:
                    self.text_message(left - 2)
                break
            self.turn(rng)
        finished: Event = {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id}
        if rng.random() < 0.5:
            finished["outcome"] = {"type": "success"}
        self.emit(finished)

    def turn(self, rng: random.Random) -> None:
        step = rng.choice(("plan", "act", "answer"))
        self.emit({"type": "STEP_STARTED", "stepName": step})
        if rng.random() < 0.6:
            self.reasoning(rng.randint(5, 60))
        parent = self.text_message(rng.randint(10, 90))
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
            self.tool_call(parent, rng.randint(4, 12))
        if rng.random() < 0.5:
            self.state_delta()
        self.emit({"type": "STEP_FINISHED", "stepName": step})


def events(n: int, seed: int = 0) -> list[Event]:
    """Exactly ``n`` events: several valid runs (n = 0, or n >= ``MIN_EVENTS``)."""
    return list(iter_events(n, seed))


def iter_events(n: int, seed: int = 0) -> Iterator[Event]:
    """The same events as :func:`events`, made one run at a time (for streams too big to hold)."""
    if 0 < n < MIN_EVENTS:
        raise ValueError(f"a valid stream needs at least {MIN_EVENTS} events, not {n}")
    stream = _Stream(random.Random(seed))
    thread_id = f"thread-{seed}"
    made = 0
    while made < n:
        left = n - made
        size = stream.rng.randint(400, 4000)
        if left - size < 400:  # too little would be left for a realistic last run
            size = left
        stream.run(thread_id, size)
        made += size
        yield from stream.out
        stream.out.clear()


def encode_jsonl(stream: list[Event]) -> bytes:
    """JSON lines: one compact object per line."""
    dumps = orjson.dumps
    return b"".join([dumps(event) + b"\n" for event in stream])


def encode_sse(stream: list[Event]) -> bytes:
    """SSE as the HTTP binding sends it: ``data: {...}`` and a blank line per event."""
    dumps = orjson.dumps
    return b"".join([b"data: " + dumps(event) + b"\n\n" for event in stream])


READ_SIZE = 64 * 1024
"""A realistic read: what one socket or file read delivers under load."""


def chunks(data: bytes, size: int = READ_SIZE) -> list[bytes]:
    """``data`` cut into reads of ``size`` bytes, as a socket or file would deliver it."""
    return [data[at : at + size] for at in range(0, len(data), size)]


def iter_sse_chunks(n: int, seed: int = 0, size: int = READ_SIZE) -> Iterator[bytes]:
    """The SSE bytes of :func:`iter_events` in reads of ``size``, never all in memory."""
    dumps = orjson.dumps
    pending = bytearray()
    for event in iter_events(n, seed):
        pending += b"data: " + dumps(event) + b"\n\n"
        if len(pending) >= size:
            yield bytes(pending[:size])
            del pending[:size]
    while pending:
        yield bytes(pending[:size])
        del pending[:size]
