"""The built-in stages in one table, from which their order, their names, the stage list
a :class:`~agui_pipeline.Pipeline` starts with and the middleware slot all derive.

The order is the spec's processing model (``/spec/1.1/basic/processing``: compatibility
boundary, middleware, enforcement, expansion, verification, application) with three
stages of this project's between verification and the application (``ARCHITECTURE.md``).
"""

from __future__ import annotations

from functools import cache

from agui_pipeline.stage import Decoder, Stage

MIDDLEWARE = None
"""The row of the table where a user's stages go: after the compatibility boundary, before
enforcement ("Where middleware sits")."""


@cache
def _table() -> tuple[type[Decoder], tuple[type[Stage] | None, ...]]:
    """The decoder, then the stages after it in order (``MIDDLEWARE`` in its place).

    Imported on first use: ``import agui_pipeline`` does not pay for every stage module.
    """
    from agui_pipeline.stages.compat import Compat
    from agui_pipeline.stages.dispatch import Dispatch
    from agui_pipeline.stages.enforce import Enforce
    from agui_pipeline.stages.expand import Expand
    from agui_pipeline.stages.lint import Lint
    from agui_pipeline.stages.metadata import Metadata
    from agui_pipeline.stages.parse import Parse
    from agui_pipeline.stages.reconcile import Reconcile
    from agui_pipeline.stages.verify import Verify

    stages = (Compat, MIDDLEWARE, Enforce, Expand, Verify, Reconcile, Lint, Metadata, Dispatch)
    return Parse, stages


def default_decoder() -> type[Decoder]:
    """The decoder a pipeline reads bytes with (parse)."""
    return _table()[0]


def default_stages() -> list[tuple[str, type[Stage]]]:
    """The built-in stages after the decoder, by name, in order."""
    return [(stage.name, stage) for stage in _table()[1] if stage is not MIDDLEWARE]


@cache
def built_in_stages() -> frozenset[type[Stage]]:
    """The stages known never to change events in place without saying so (``Batch.changed``)."""
    return frozenset(stage for _, stage in default_stages())


@cache
def canonical_order() -> tuple[str, ...]:
    """Every built-in stage's name in order, the decoder's first."""
    return (default_decoder().name, *(name for name, _ in default_stages()))


@cache
def middleware_slot() -> str:
    """The stage a user's stages go before (enforce)."""
    stages = _table()[1]
    after = stages[stages.index(MIDDLEWARE) + 1]
    assert after is not None
    return after.name
