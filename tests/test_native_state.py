"""The native state mirror (``native/src/patch.rs``) against the Python reference.

The judge's mirror of the Conversation's state (STATE_SNAPSHOT, STATE_DELTA) may answer a
document only when the reference — ``PatchedDocuments.take_state`` and ``patch_state`` over a
StreamContext, as the Conversation drives them — takes every step with no diagnostic and no
rejection, without recounting the state (which the mirror does not model), and then holds that
same document. Otherwise it must be unsure (``state_probe`` answers ``None``). Random states
and patches, good paths and bad, under limits small enough to trip, go through both, the
same JSON text read by orjson for the reference and by serde_json for the mirror; then each
limit is lowered to the least the reference takes the steps in, where the mirror must vouch,
and one below, where it must not, so that its budgets are the reference's to the unit. A
table of operations just inside and just outside what they apply to, and each budget spent
exactly and overdrawn by one, are checked the same way every run.

Documents are compared as orjson writes them with sorted keys, not by Python's ``==``, which
says 1 == 1.0 == True and 0 == -0.0: a number of the wrong kind would change what ``size``
and a later ``test`` make of it. Key order is no part of a JSON object (serde_json keeps
keys sorted, Python in insertion order), and nothing the reference decides depends on it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from agui_pipeline import Options, StreamContext, StreamRejected
from agui_pipeline._json import escape
from agui_pipeline.model.documents import PatchedDocuments
from agui_pipeline.model.patch import (
    WORK_PER_OPERATION,
    PatchBudget,
    PatchFailed,
    apply_patch,
    size,
)
from agui_pipeline.options import Limits
from agui_pipeline.testing.workload import events
from hypothesis import event, given
from hypothesis import strategies as st

from tests.cores import native_module


class _Counted(PatchedDocuments):
    """The reference, counting the times it recounts the state (its size budget ran out):
    a recount says nothing, but the mirror never recounts, so it may not vouch for one."""

    recounts = 0

    def _recounted(
        self, document: Any, patch: Any, budget: PatchBudget, index: int, *, state: bool
    ) -> Any:
        self.recounts += 1
        return super()._recounted(document, patch, budget, index, state=state)


def _no_activities(limit: int) -> int:
    raise AssertionError("the state's patches never measure the activities")


class Reference:
    """The Conversation's state as the reference holds it; ``clean`` while every step has
    applied with no diagnostic (a failed patch is CONVERSATION_STATE_PATCH) and no rejection."""

    def __init__(self, limits: Limits) -> None:
        self.ctx = StreamContext(Options(limits=limits))
        self.documents = _Counted(self.ctx, _no_activities)
        self.state: Any = {}
        self.clean = True

    def take(self, snapshot: bytes) -> None:
        try:
            self.state = self.documents.take_state(orjson.loads(snapshot), 0)
        except StreamRejected:
            self.clean = False

    def patch(self, delta: bytes, index: int) -> None:
        try:
            self.state = self.documents.patch_state(self.state, orjson.loads(delta), index)
        except (PatchFailed, StreamRejected):
            self.clean = False
        self.clean = self.clean and not self.ctx.diagnostics

    @property
    def vouchable(self) -> bool:
        return self.clean and self.documents.recounts == 0


def probe(snapshot: bytes | None, deltas: list[bytes], limits: Limits) -> bytes | None:
    """The mirror's document after the same steps, or ``None`` when it is unsure."""
    native = native_module()
    answer: bytes | None = native.state_probe(
        snapshot, deltas, limits.max_state_bytes, limits.max_patch_work, limits.max_depth
    )
    return answer


def canonical(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


# -- what the streams hold ------------------------------------------------------------

KEYS = ["a", "b", "", "~", "/", "a~1", "0", "é"]
"""Member names: some to escape (``~0``, ``~1``), one that reads as an index, one empty."""


def weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies, each drawn about as often as its weight says."""
    spread = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.integers(0, len(spread) - 1).flatmap(lambda n: spread[n])


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 300),
    st.sampled_from([2**63 - 1, -(2**63), 2**64 - 1]),
    # Eighths: serde_json's default parse can be a unit in the last place off orjson's for
    # a float of 16 or 17 digits. No verdict depends on it (a `test` comparing floats is
    # unsure), but the documents compared here would differ. -0.0, which makes the mirror
    # unsure from there on, now and then.
    weighted((15, st.integers(-(2**20), 2**20).map(lambda i: i / 8)), (1, st.just(-0.0))),
    st.text(alphabet="ab~/é✅𝄞", max_size=4),
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=8,
)
_big = st.sampled_from(["x" * 20_000, list(range(70)), [0] * 9000])
"""Values whose copy or shift costs work: a long string, arrays past 64 and well past 4,096."""


values = weighted((3, _json), (1, _big))
_holding_big = st.builds(
    lambda big, rest: {**rest, "big": big},
    _big,
    st.dictionaries(st.sampled_from(KEYS), _json, max_size=3),
)
"""A snapshot with a large value among others."""

limits = st.builds(
    Limits,
    max_state_bytes=weighted((1, st.integers(0, 1500)), (1, st.just(16 * 1024 * 1024))),
    max_patch_work=weighted((1, st.integers(0, 5000)), (1, st.just(256 * 1024 * 1024))),
    max_depth=weighted((1, st.integers(0, 6)), (2, st.just(128))),
)


def pointers(value: Any) -> dict[str, Any]:
    """Pointers into ``value`` (its root, ``""``, first), each to what it points at."""
    found: dict[str, Any] = {}
    pending = [("", value)]
    while pending and len(found) < 100:
        pointer, node = pending.pop()
        found[pointer] = node
        if type(node) is dict:
            pending.extend((f"{pointer}/{escape(k)}", v) for k, v in node.items())
        elif type(node) is list:
            # The first few elements and the last (a long array is walked no further).
            shown = {*range(min(len(node), 8)), len(node) - 1} - {-1}
            pending.extend((f"{pointer}/{i}", node[i]) for i in sorted(shown))
    return found


BROKEN = st.sampled_from(["a", "/~2", "/a~", "/x/y", "/-", "/0/-", "/b/~~01", 7, None])
"""Pointers that are not pointers (not a string, no leading "/", a bare "~"), or name nothing."""


def existing(state: Any, costly: bool = False) -> st.SearchStrategy[Any]:
    """A pointer to what is in ``state``: mostly below the root, now and then broken; when
    ``costly``, mostly the largest value (copied or moved deeper, it costs work)."""
    found = pointers(state)
    below = list(found)[1:] or [""]
    largest = max(below, key=lambda at: size(found[at], 2**62))
    return weighted(
        (4 if costly else 16, st.sampled_from(below)),
        (16 if costly else 4, st.just(largest)),
        (1, st.just("")),
        (1, BROKEN),
    )


def new(state: Any) -> st.SearchStrategy[Any]:
    """A pointer to add at in ``state``: a member of an object, a position in an array or
    its end (``-``), with a leading zero now and then; or one that exists, or broken."""
    places: list[str] = []
    for at, node in pointers(state).items():
        if type(node) is dict:
            places.extend(f"{at}/{escape(key)}" for key in KEYS)
        elif type(node) is list:
            places.extend(f"{at}/{i}" for i in {0, len(node) // 2, len(node)})
            places.extend([f"{at}/-", f"{at}/01"])
    ok = st.sampled_from(places) if places else st.just("")
    return weighted((8, ok), (2, existing(state)), (1, BROKEN))


OPS = ["add", "remove", "replace", "move", "copy", "test"]


def operation(data: st.DataObject, state: Any, costly: bool) -> dict[str, Any]:
    """An operation for ``state``; when ``costly``, one that may cost work (a copy, a move,
    an insert or a removal that shifts an array)."""
    kinds = st.sampled_from(["add", "remove", "move", "copy"]) if costly else st.sampled_from(OPS)
    op = data.draw(weighted((20, kinds), (1, st.just("x"))))
    # Mostly where the operation applies (a place to add at, a value to remove), but also
    # where it does not (a member to replace that is not there).
    adds = op in ("add", "move", "copy", "x")
    path = weighted(
        (3, new(state) if adds else existing(state)), (1, existing(state) if adds else new(state))
    )
    operation: dict[str, Any] = {"op": op, "path": data.draw(path)}
    if op in ("move", "copy"):
        operation["from"] = data.draw(existing(state, costly))
    if op in ("add", "replace", "test", "x"):
        at = pointers(state).get(operation["path"]) if type(operation["path"]) is str else None
        found = op == "test" and at is not None and data.draw(st.booleans())
        operation["value"] = at if found else data.draw(values)
    if data.draw(weighted((40, st.just(False)), (1, st.just(True)))):
        del operation[data.draw(st.sampled_from(sorted(operation)))]
    return operation


def delta(data: st.DataObject, state: Any, costly: bool) -> Any:
    """A STATE_DELTA's patch for ``state``: each operation drawn for the state the ones
    before it made (when they apply); now and then no patch at all."""
    junk = st.sampled_from([None, {"op": "add", "path": "/a", "value": 1}])
    if data.draw(weighted((40, st.just(False)), (1, st.just(True)))):
        return data.draw(junk)
    scratch = orjson.loads(orjson.dumps(state))
    operations = []
    for _ in range(data.draw(st.integers(1, 3))):
        operations.append(operation(data, scratch, costly))
        with contextlib.suppress(PatchFailed):  # the next one is drawn for the same state
            scratch = apply_patch(scratch, operations[-1:])
    return operations


def floats_in(value: Any) -> bool:
    pending = [value]
    while pending:
        node = pending.pop()
        if type(node) is float:
            return True
        if type(node) is dict:
            pending.extend(node.values())
        elif type(node) is list:
            pending.extend(node)
    return False


def depth(value: Any) -> int:
    deepest, pending = 0, [(value, 1)]
    while pending:
        node, level = pending.pop()
        if type(node) is dict or type(node) is list:
            deepest = max(deepest, level)
            pending.extend((child, level + 1) for child in _children(node))
    return deepest


def _children(node: dict[str, Any] | list[Any]) -> list[Any]:
    return list(node.values()) if type(node) is dict else list(node)


# -- the properties ---------------------------------------------------------------------


def replay(chosen: Limits, snapshot: bytes | None, deltas: list[bytes]) -> Reference:
    """The reference after ``snapshot`` (when given) and then ``deltas``."""
    reference = Reference(chosen)
    if snapshot is not None:
        reference.take(snapshot)
    for index, patch in enumerate(deltas, 1):
        reference.patch(patch, index)
    return reference


def check(chosen: Limits, snapshot: bytes | None, deltas: list[bytes]) -> tuple[Reference, str]:
    """The mirror and the reference over the same steps: where the mirror answers, the
    reference took every step cleanly and holds that document; and where the mirror should
    be exact (the only unsure answers it may give for steps the reference takes cleanly are
    for floats and for a snapshot deeper than max_depth), it answers whenever the reference
    was clean. The reference, and what was seen (for the statistics)."""
    reference = replay(chosen, snapshot, deltas)
    native = probe(snapshot, deltas, chosen)
    if native is not None:
        assert reference.clean, "vouched for a step the reference did not take cleanly"
        assert reference.documents.recounts == 0, "vouched where the reference recounted"
        assert canonical(orjson.loads(native)) == canonical(reference.state)
        return reference, "vouched"
    # Exact: no floats (a `test` comparing them is unsure) and no snapshot deeper than
    # max_depth (the reference takes it, the mirror does not hold it).
    inputs = [orjson.loads(text) for text in [*deltas, snapshot or b"{}"]]
    exact = not floats_in(inputs) and depth(inputs[-1]) <= chosen.max_depth
    assert not (exact and reference.vouchable), "unsure where the mirror is exact"
    return (
        reference,
        f"unsure: reference {'clean' if reference.vouchable else 'not'}, exact {exact}",
    )


def least(vouchable: Callable[[int], bool], high: int) -> int:
    """The least limit up to ``high`` (where ``vouchable`` holds) at which it holds: each limit
    only ever refuses less as it grows."""
    low = -1  # below every limit
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if vouchable(middle) else (middle, high)
    return high


@given(data=st.data())
def test_the_mirror_answers_only_the_references_clean_document(data: st.DataObject) -> None:
    """A snapshot, then patches drawn one by one for the state the reference holds: each
    candidate is checked after the patches taken cleanly before it, and kept when it was
    taken cleanly too (a failed patch leaves the reference's allowance spent, so the next
    candidate is checked on a reference that never saw it). Then each limit is lowered to
    the least in which the reference takes the steps kept, and one below: the budgets are
    the reference's to the unit."""
    native_module()
    chosen = data.draw(limits)
    # One run in three is about the work allowance: a large value in the state, room to hold
    # it and to work on it (the least allowance the steps take is found below), and
    # operations that copy, move and shift it.
    costly = data.draw(weighted((2, st.just(False)), (1, st.just(True))))
    if costly:
        chosen = dataclasses.replace(chosen, max_state_bytes=2**24, max_patch_work=2**28)
    taken = data.draw(_holding_big if costly else weighted((1, st.just(None)), (2, values)))
    snapshot = None if taken is None else orjson.dumps(taken)
    reference, seen = check(chosen, snapshot, [])
    event(seen)
    deltas: list[bytes] = []
    for _ in range(data.draw(st.integers(1, 10)) if reference.vouchable else 0):
        candidate = [*deltas, orjson.dumps(delta(data, reference.state, costly))]
        tried, seen = check(chosen, snapshot, candidate)
        event(seen)
        if tried.vouchable:
            reference, deltas = tried, candidate
    if not reference.vouchable:
        return
    for name in ("max_state_bytes", "max_patch_work", "max_depth"):

        def lowered(limit: int, name: str = name) -> Limits:
            return dataclasses.replace(chosen, **{name: limit})

        edge = least(
            lambda n: replay(lowered(n), snapshot, deltas).vouchable, getattr(chosen, name)
        )
        event(f"{name} at an edge above 0: {edge > 0}")
        for limit in (edge, edge - 1) if edge > 0 else (edge,):
            at, _ = check(lowered(limit), snapshot, deltas)
            assert at.vouchable is (limit == edge)


DOC: dict[str, Any] = {"a": [1, 2], "b": {"c": "x"}, "l": [{}, {}], "n": 3, "~/": 0}

EDGES: list[dict[str, Any]] = [
    # Each operation where it applies and just where it does not: every one is checked
    # both ways (a failure must leave the mirror unsure, a success must be vouched for).
    {"op": "add", "path": "/a/2", "value": 0},
    {"op": "add", "path": "/a/3", "value": 0},
    {"op": "add", "path": "/a/-", "value": 0},
    {"op": "add", "path": "/a/01", "value": 0},
    {"op": "add", "path": "/n/x", "value": 0},
    {"op": "add", "path": "/x/y", "value": 0},
    {"op": "add", "path": "", "value": [0]},
    {"op": "add", "path": "/~0~1", "value": 1},
    {"op": "add", "path": "/~/", "value": 1},
    {"op": "add", "path": "/~2", "value": 1},
    {"op": "remove", "path": "/a/1"},
    {"op": "remove", "path": "/a/2"},
    {"op": "remove", "path": "/a/-"},
    {"op": "remove", "path": "/b/d"},
    {"op": "remove", "path": ""},
    {"op": "replace", "path": "/b/c", "value": 0},
    {"op": "replace", "path": "/b/d", "value": 0},
    {"op": "replace", "path": "/a/2", "value": 0},
    {"op": "replace", "path": "/a/-", "value": 0},
    {"op": "replace", "path": "", "value": 0},
    {"op": "move", "from": "/a/0", "path": "/b/d"},
    {"op": "move", "from": "/a/0", "path": "/a/-"},
    {"op": "move", "from": "/a/0", "path": "/a/2"},
    {"op": "move", "from": "/b", "path": "/b/c"},
    {"op": "move", "from": "/l/0", "path": "/l/0/x"},  # once /l/0 is out, /l/0 is /l/1
    {"op": "move", "from": "/l/0", "path": "/l/1"},
    {"op": "move", "from": "/a", "path": "/a"},
    {"op": "move", "from": "/x", "path": "/x"},
    {"op": "move", "from": "", "path": "/x"},
    {"op": "copy", "from": "/b", "path": "/b/e"},
    {"op": "copy", "from": "", "path": "/b/e"},
    {"op": "copy", "from": "/x", "path": "/y"},
    {"op": "copy", "from": "/b", "path": "/n/x"},
    {"op": "test", "path": "/n", "value": 3},
    {"op": "test", "path": "/n", "value": 4},
    {"op": "test", "path": "/n", "value": 3.0},
    {"op": "test", "path": "/n", "value": True},
    {"op": "test", "path": "/a", "value": [1, 2]},
    {"op": "test", "path": "/b", "value": {"c": "x"}},
    {"op": "test", "path": "/b", "value": {}},
    {"op": "test", "path": "", "value": DOC},
    {"op": "x", "path": "/a"},
    {"op": "add", "value": 0},
    {"op": "add", "path": 7, "value": 0},
]


@pytest.mark.parametrize("operation", EDGES, ids=orjson.dumps)
def test_each_operation_at_its_edges(operation: dict[str, Any]) -> None:
    native_module()
    check(Limits(), orjson.dumps(DOC), [orjson.dumps([operation])])


@pytest.mark.parametrize("slack", [0, -1])
def test_the_budgets_at_their_edges(slack: int) -> None:
    """Each budget exactly spent (vouched for), and overdrawn by one (the reference rejects
    or recounts; the mirror is unsure): the size of a snapshot and of what a patch inserts,
    the work of a copy, a shift and a move deeper, the depth of an insert and of a move."""
    native_module()
    insert = {"op": "add", "path": "/b/x", "value": {"y": [1, "z"]}}  # makes it 4 deep
    weight = size(DOC, 2**62)
    big = {"s": "x" * 5000}
    copied = size(big["s"], 2**62) - WORK_PER_OPERATION  # what a copy costs beyond its own
    copy = {"op": "copy", "from": "/s", "path": "/t"}
    deep = {"a": [{}], "b": [[]]}  # 3 deep; the move makes it 5
    move = {"op": "move", "from": "/b", "path": "/a/0/b"}
    # Work beyond what each operation adds: an array's elements shifted, a value moved deeper.
    shifted = {"l": [0] * 5000, "s": "x" * 5000, "o": {}}
    head = {"op": "add", "path": "/l/0", "value": 0}
    out = {"op": "remove", "path": "/l/0"}
    deeper = {"op": "move", "from": "/s", "path": "/o/s"}
    cases = [
        (Limits(max_state_bytes=weight + slack), DOC, []),
        (Limits(max_state_bytes=weight + size(insert["value"], 2**62) + slack), DOC, [insert]),
        (Limits(max_patch_work=2 * copied + slack), big, [copy, copy]),
        (Limits(max_patch_work=5000 - WORK_PER_OPERATION + slack), shifted, [head]),
        (Limits(max_patch_work=5000 - WORK_PER_OPERATION + slack), shifted, [out]),
        (Limits(max_patch_work=copied + slack), shifted, [deeper]),
        (Limits(max_depth=4 + slack), DOC, [insert]),
        (Limits(max_depth=5 + slack), deep, [move]),
    ]
    for chosen, snapshot, operations in cases:
        deltas = [orjson.dumps(operations)] if operations else []
        _, seen = check(chosen, orjson.dumps(snapshot), deltas)
        assert (seen == "vouched") is (slack == 0), (chosen, operations, seen)


def test_the_workload_state_events_are_vouched_for() -> None:
    """The benchmark workload's STATE_SNAPSHOT and STATE_DELTAs (``replace`` a number, append
    to a list, ``replace`` inside an element) come back as the reference's document."""
    native_module()
    state = [e for e in events(3000) if e["type"] in ("STATE_SNAPSHOT", "STATE_DELTA")]
    assert state[0]["type"] == "STATE_SNAPSHOT"
    assert [e["type"] for e in state[1:]] == ["STATE_DELTA"] * (len(state) - 1)
    assert len(state) > 5
    snapshot = orjson.dumps(state[0]["snapshot"])
    deltas = [orjson.dumps(e["delta"]) for e in state[1:]]
    reference = replay(Limits(), snapshot, deltas)
    assert reference.vouchable
    native = probe(snapshot, deltas, Limits())
    assert native is not None
    assert canonical(orjson.loads(native)) == canonical(reference.state)


@pytest.mark.parametrize(
    ("snapshot", "deltas"),
    [
        (b'{"a": -0}', []),
        (None, [b'[{"op": "add", "path": "/a", "value": -0}]']),
    ],
)
def test_minus_zero_is_unsure(snapshot: bytes | None, deltas: list[bytes]) -> None:
    """orjson reads ``-0`` as the integer 0, serde_json as the float -0.0: the mirror cannot
    know which the reference holds, nor so its size."""
    native_module()
    reference = replay(Limits(), snapshot, deltas)
    assert reference.vouchable and canonical(reference.state) == b'{"a":0}'
    assert probe(snapshot, deltas, Limits()) is None
    assert probe(b'{"a": 0}', [], Limits()) == b'{"a":0}'
