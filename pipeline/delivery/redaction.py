"""URLs as they may be written: without the credentials an upstream URL can carry.

An agent's URL often holds a secret: ``https://user:password@host/`` or
``?api_key=...``. Every message, log line, diagnostic, report and HTTP body that
names a URL writes :func:`redact_url` of it instead: the user information and
every query value and any fragment become ``***``, the rest (scheme, host, port, path, the query's
names) stays, so the reader still knows which endpoint it was.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

HIDDEN = "***"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]*[^\s'\"<>`.,;:)\]]")
"""A URL in running text: up to a space or a quote, less the punctuation that ends a clause."""


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
        f"{name}={HIDDEN}" if sep else name
        for name, sep, _ in (pair.partition("=") for pair in parts.query.split("&"))
    )
    fragment = HIDDEN if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def redact_in(text: str) -> str:
    """``text`` with every URL in it redacted (an HTTP library's error may quote the URL it
    was given)."""
    if "://" not in text:
        return text
    return _URL.sub(lambda found: redact_url(found.group()), text)
