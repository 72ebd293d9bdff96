"""Protocol versions: what this consumer speaks, and how two versions compare.

``/spec/1.1/basic/versioning`` ("Version negotiation"): a declaration is the
``MAJOR.MINOR`` segment a frozen version lives under, compared numerically
component by component, so ``1.10`` is newer than ``1.9``. The pre-1.0 line
never carried a declaration; its releases are spelled ``0.0.N`` (the spelling
the corpus uses to pin a peer's era), which sorts below every ``MAJOR.MINOR``
of the versioned line under the same component-wise comparison.
"""

from __future__ import annotations

import re

Version = tuple[int, ...]

PROTOCOL_VERSION = "1.1"
"""The version this consumer speaks and declares on ``RunAgentInput.protocolVersion``."""
SPOKEN: Version = (1, 1)

VERSIONED_SINCE: Version = (1, 0)
"""The first version whose peers read ``protocolVersion``; an older peer is not sent one."""
GATE_CONTENT_PARTS: Version = (0, 0, 39)
"""At or below: user and tool content travels as a string (the 0.0.39 shim)."""
GATE_MEDIA_PARTS: Version = (0, 0, 47)
"""At or below: no media parts; an upgraded legacy binary part may be stranded."""
GATE_SUBAGENTS: Version = (0, 0, 57)
"""At or below: no subagents — no ``SUBAGENT_*`` events, no ``subagentRunId`` (0.0.57)."""

# Bounded components: a declaration is a producer's string, and int() of a
# huge run of digits raises past Python's digit limit.
_COMPONENT = r"(?:0|[1-9][0-9]{0,8})"
_MAJOR_MINOR = re.compile(rf"{_COMPONENT}\.{_COMPONENT}")
_PRE_1_0 = re.compile(rf"0\.0\.{_COMPONENT}")


def parse_version(text: str) -> Version | None:
    """``"1.1"`` → ``(1, 1)``, ``"0.0.57"`` → ``(0, 0, 57)``; anything else → ``None``.

    Only the two published spellings are interpreted: ``"1"``, ``"v2"``,
    ``"1.x"``, ``"1.1.0"`` or ``"01.1"`` are not versions this specification
    publishes, and a caller treats them as uninterpretable.
    """
    if _MAJOR_MINOR.fullmatch(text) or _PRE_1_0.fullmatch(text):
        return tuple(int(part) for part in text.split("."))
    return None


def peer_version(setting: str | None) -> Version | None:
    """The configured peer ceiling (``Options.peer_max_protocol_version``), checked.

    ``None`` means the peer's version is not known, and the consumer behaves
    as though the peer were current: "guessing downward would degrade streams
    for no reason" (``/spec/1.1/basic/versioning``).
    """
    if setting is None:
        return None
    version = parse_version(setting) if isinstance(setting, str) else None
    if version is None:
        raise ValueError(
            f"peer_max_protocol_version must be a protocol version such as '1.0' or a pre-1.0 "
            f"release such as '0.0.57', not {setting!r}"
        )
    return version


def at_or_below(peer: Version | None, gate: Version) -> bool:
    """Whether a version-gated shim applies: the peer is known and no newer than its gate."""
    return peer is not None and peer <= gate
