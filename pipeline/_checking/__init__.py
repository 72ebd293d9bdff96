"""Checking sources, below the command line: one source read and judged
(:mod:`.source`), by the gate (:mod:`.gate`); the recordings a directory, glob or fsspec
URL names (:mod:`.recordings`); many sources on a Dask cluster (:mod:`.cluster`).
``check`` and :mod:`agui_pipeline.fleet` are both built on it; it imports nothing of the
command line.
"""

from __future__ import annotations

PASSED = 0
"""A source's status when it completed and nothing failed the gate."""
FAILED = 1
"""A source's status when it failed: its verdict, or the gate."""
UNCHECKED = 2
"""A source's status when it could not be checked (a :class:`CheckError`)."""
# Each is the exit status ``check`` gives for that source alone (cli.common).


class CheckError(Exception):
    """What keeps a source from being checked, or a check from starting: a file that
    cannot be read, a run input the outgoing boundary rejects, a missing extra, a
    middleware that does not load, an agent's error status."""


def missing_extra(error: ModuleNotFoundError, extra: str, doing: str) -> CheckError:
    """What to say when ``doing`` needs an extra that is not installed."""
    return CheckError(
        f"{doing} needs the '{extra}' extra (no module {error.name!r}): "
        f"pip install 'agui-pipeline[{extra}]'"
    )
