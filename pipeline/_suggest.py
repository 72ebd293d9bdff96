"""'Did you mean': the known name a wrong one most likely stands for.

Used wherever a name is compared with a fixed list of known ones and misses — an
event type, a member of an event or of a declaration, a diagnostic code in
``--rule`` or the configuration — and only then: a miss is already the slow path,
so nothing here is built for a clean event.

Two kinds of slip are caught, once case and word separators are set aside
(``text_message_start``, ``textMessageStart`` and ``TEXT_MESSAGE_START`` are one
name; so are ``messageID`` and ``messageId``, ``humaninTheLoop`` and
``humanInTheLoop``): the same name in another style, and a typo of one
character — one inserted, left out, changed, or two neighbours swapped
(``TEXT_MESAGE_START``, ``verify.trunctaed``). Anything further away suggests
nothing, so ``msgID`` is not taken for ``messageId``.

The test is a few comparisons of strings of about the same length, so a
hostile producer's stream of unknown names costs microseconds each, not the
quadratic matching of :mod:`difflib`.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

_SEPARATORS = str.maketrans("", "", "_-. ")


def _squash(name: str) -> str:
    """``name`` without case or word separators: ``text_message_start`` → ``textmessagestart``."""
    return name.translate(_SEPARATORS).casefold()


_squash_known = lru_cache(maxsize=4096)(_squash)
""":func:`_squash` of the known names, which are this package's own and few: worked
out once each (a producer's unknown names are never kept)."""


def closest(name: str, known: Iterable[str]) -> str | None:
    """The name of ``known`` that ``name`` most likely misspells, or ``None``.

    ``name`` itself is never suggested: a caller asks about a name that missed.
    """
    squashed = _squash(name)
    typo: str | None = None
    for candidate in known:
        if candidate == name:
            continue
        other = _squash_known(candidate)
        if other == squashed:
            return candidate  # the same name, spelt in another style: the best guess
        if typo is None and _one_slip(squashed, other):
            typo = candidate
    return typo


def did_you_mean(name: str, known: Iterable[str], *, loosely: bool = False) -> str:
    """``" (did you mean messageId?)"``, or ``""`` when nothing known is close to ``name``.

    ``loosely``, for a name a person typed on the command line or in a configuration
    file (never a producer's): also a name :mod:`difflib` finds similar, such as the
    start of one (``enforce.strip`` for ``enforce.stripped``).
    """
    candidates = list(known)
    near = closest(name, candidates)
    if near is None and loosely:
        import difflib

        similar = difflib.get_close_matches(name, candidates, n=1)
        near = similar[0] if similar else None
    return "" if near is None else f" (did you mean {near}?)"


def _one_slip(a: str, b: str) -> bool:
    """Whether one insertion, deletion, substitution or swap of neighbours turns ``a``
    into ``b`` (neither empty: an empty name is no typo of anything)."""
    if not a or not b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    for position, (x, y) in enumerate(zip(a, b, strict=False)):
        if x == y:
            continue
        if len(a) < len(b):  # b has one character more, here
            return a[position:] == b[position + 1 :]
        if a[position + 1 :] == b[position + 1 :]:  # one character changed
            return True
        swapped = a[position + 1 : position + 2] + x
        return swapped == b[position : position + 2] and a[position + 2 :] == b[position + 2 :]
    return True  # b is a with one character added at the end
