"""Lone surrogates: the one way a Python `str` can fail to be Unicode text.

A JSON escape such as `"\\ud800"`, or bytes that were not UTF-8 (argv decoded with
`surrogateescape`), leave unpaired surrogate code points in a string. Every later step that
encodes it — hashing a cache key, sending it over HTTP, spaCy, writing UTF-8 — then raises
`UnicodeEncodeError`. imad refuses such text where it enters as input (a question) and writes
it as a visible `\\udXXX` escape where it must be kept (a model's raw response), so nothing is
lost and nothing downstream crashes.
"""

from __future__ import annotations

import re

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def first_lone_surrogate(text: str) -> int | None:
    """The index of the first lone surrogate in `text`, or None when it is valid Unicode text."""
    found = _LONE_SURROGATE.search(text)
    return None if found is None else found.start()


def escape_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate written as its `\\udXXX` escape (valid UTF-8 afterwards)."""
    if first_lone_surrogate(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
