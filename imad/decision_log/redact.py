"""A decision-log URL as it may be shown: the password hidden, in the URL and in every message.

A `postgresql://user:secret@host/db?password=…` URL carries a password; an error that quoted
the URL, or a driver message that echoed part of it, would print it into a terminal, a log
line or a CI transcript. Everything imad shows about a database log passes through here.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

HIDDEN = "***"
_QUERY_SECRET = re.compile(r"([?&](?:password|sslpassword)=)([^&#]*)", re.IGNORECASE)
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://[^:@/?#]*:)(.*)(@[^@]*)$", re.DOTALL)
_KEYWORD_SECRET = re.compile(r"\b((?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def redact_url(url: str) -> str:
    """`url` with the password of its user part and of its query replaced by `HIDDEN`."""
    shown = _QUERY_SECRET.sub(lambda found: found.group(1) + HIDDEN, url)
    found = _USERINFO.match(shown)
    if found is not None:
        shown = found.group(1) + HIDDEN + found.group(3)
    return shown


def secrets_of(url: str) -> list[str]:
    """The passwords `url` holds, as written and percent-decoded (longest first)."""
    found = [match.group(2) for match in _QUERY_SECRET.finditer(url)]
    userinfo = _USERINFO.match(_QUERY_SECRET.sub(lambda match: match.group(1), url))
    if userinfo is not None:
        found.append(userinfo.group(2))
    secrets = {text for value in found for text in (value, unquote(value)) if text}
    return sorted(secrets, key=len, reverse=True)


def redact_text(text: str, url: str | None = None) -> str:
    """`text` (an error message) without `url`'s passwords, with any `password=…` keyword
    hidden and the URL itself shown redacted."""
    if url:
        text = text.replace(url, redact_url(url))
        for secret in secrets_of(url):
            text = text.replace(secret, HIDDEN)
    return _KEYWORD_SECRET.sub(lambda found: found.group(1) + HIDDEN, text)
