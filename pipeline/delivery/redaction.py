"""URLs as they may be written: without the credentials a URL can carry.

An agent's URL often holds a secret (``https://user:password@host/``, ``?api_key=...``),
and so does a storage URL (``s3://KEY:SECRET@bucket/``, a presigned
``?X-Amz-Security-Token=...``). Every message, log line, diagnostic, report and HTTP
body that names a URL of any scheme writes :func:`redact_url` of it instead: the user
information, every query value (a query token with no ``=`` is a value) and any fragment
become ``***``; the rest (scheme, host, port, path, the query's names) stays, so the
reader still knows which endpoint or object it was. :func:`redact_source` names a
``check`` source, and :func:`redact_in` redacts the text of an error, which may quote a
URL whole or, as a storage library does, only the part of it it choked on.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit, urlunsplit

HIDDEN = "***"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
"""A URL in running text, up to a space or a quote (:func:`_trimmed` drops the punctuation
that ends the clause around it)."""
_CLOSING = {")": "(", "]": "["}
_ENDS_A_CLAUSE = ".,;:!?"
SHORTEST_SECRET = 4
"""A secret shorter than this is not searched for in an error's text on its own: it would
blank unrelated words (``?page=2``), and no credential is that short. It is still hidden
wherever the URL is quoted whole."""


def redact_url(url: str) -> str:
    """``url`` with its userinfo, query values and fragment replaced by ``***``."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:  # not a URL urllib can take apart: say nothing of it
        return HIDDEN
    if not parts.netloc or (parts.username is None and not parts.query and not parts.fragment):
        return url
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    if parts.username is not None or parts.password is not None:
        netloc = f"{HIDDEN}@{netloc}"
    query = "&".join(
        f"{name}={HIDDEN}" if sep else HIDDEN if name else ""
        for name, sep, _ in (pair.partition("=") for pair in parts.query.split("&"))
    )
    fragment = HIDDEN if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def redact_source(name: str) -> str:
    """A source as a report names it: a URL of any scheme (``http``, ``s3``, ``gs``...)
    redacted, a path or ``-`` as it is (a ``?`` in a path is a glob, not a query)."""
    return redact_url(name) if "://" in name else name


def redact_in(text: str, *urls: str) -> str:
    """``text`` with every URL in it redacted, and every secret of ``urls`` hidden wherever
    it stands alone (botocore says ``Invalid bucket name "KEY:SECRET@bucket"``, quoting no
    scheme): their userinfo, query values and fragment, as written and percent-decoded."""
    for secret in sorted({s for url in urls for s in _secrets(url)}, key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    if "://" not in text:
        return text
    return _URL.sub(lambda found: _redact_found(found.group()), text)


def _redact_found(found: str) -> str:
    url = _trimmed(found)
    return redact_url(url) + found[len(url) :]


def _trimmed(found: str) -> str:
    """A URL as running text holds it: without the clause's punctuation after it, nor a
    closing bracket it did not open (``(see http://h/x)``, but ``http://[::1]`` whole)."""
    end = len(found)
    while end:
        last = found[end - 1]
        opener = _CLOSING.get(last)
        if last in _ENDS_A_CLAUSE or (
            opener is not None and found.count(opener, 0, end) < found.count(last, 0, end)
        ):
            end -= 1
            continue
        break
    return found[:end]


def _secrets(url: str) -> set[str]:
    """What of ``url`` is secret, long enough to look for in text on its own."""
    _, separator, rest = url.partition("://")
    if not separator:
        return set()
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    found = {authority.rpartition("@")[0]} if "@" in authority else set()
    tail = rest[len(authority) :]
    query = tail.partition("#")[0].partition("?")[2]
    found.update(
        value if sep else name for name, sep, value in (p.partition("=") for p in query.split("&"))
    )
    found.add(tail.partition("#")[2])
    found |= {unquote(secret) for secret in found}
    return {secret for secret in found if len(secret) >= SHORTEST_SECRET}
