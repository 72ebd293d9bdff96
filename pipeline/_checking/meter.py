"""The progress line a check draws on stderr while a stream runs."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TextIO

from agui_pipeline.delivery.escaping import inert
from agui_pipeline.errors import Diagnostic
from agui_pipeline.events import AnyEvent


class StreamMeter:
    """A one-line status on stderr while a stream runs: events/s, current run, diagnostics.

    Used as a sink, so it costs one call per batch, and redraws at most every
    ``interval`` seconds.
    """

    def __init__(self, out: TextIO, interval: float = 0.5, *, forced: bool = False) -> None:
        self.out = out
        self.interval = interval
        self.forced = forced
        """Draw the last line even when the stream ended before the first redraw."""
        self.shown = False
        self.events = 0
        self.diagnostics = 0
        self.run_id = "-"
        self.started = self.drawn = time.monotonic()

    def diagnostic(self, _diagnostic: Diagnostic) -> None:
        self.diagnostics += 1

    async def write(self, events: Sequence[AnyEvent]) -> None:
        self.events += len(events)
        for event in events:
            if event.get("type") == "RUN_STARTED":
                self.run_id = inert(str(event.get("runId")))[:80]
        now = time.monotonic()
        if now - self.drawn >= self.interval:
            self.drawn = now
            self.draw(now)

    def draw(self, now: float) -> None:
        self.shown = True
        rate = self.events / max(now - self.started, 1e-9)
        self.out.write(
            f"\r{self.events} events, {rate:,.0f}/s, run {self.run_id}, "
            f"{self.diagnostics} diagnostics\x1b[K"
        )
        self.out.flush()

    def close(self) -> None:
        if not (self.shown or self.forced):
            return  # a short stream: no line to finish
        self.draw(time.monotonic())
        self.out.write("\n")
        self.out.flush()
