"""The one reader of `KEY=VALUE` settings typed on a command line or in a spec string.

Every flag that sets a config field from text uses it (`imad debate --set`, the `--llm SPEC`
options after `?`, `python -m training.evaluate --backend-option`), so the same text gives the
same value everywhere:

- `true` / `false` (any case) → bool; `none` / `null` → None;
- an int (`3`, `-2`, `1_000`), else a float (`0.5`, `1e-3`);
- `[…]` or `{…}` → the JSON list or object; `"…"` → the JSON string inside (to keep `"0"` text);
- anything else → the text itself (`hard`, `False!`).

A bracket or quote that is not valid JSON raises `ConfigError` naming the key rather than
silently becoming text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from imad.errors import ConfigError

_WORDS: dict[str, Any] = {"true": True, "false": False, "none": None, "null": None}
_JSON_OPENERS = ("[", "{", '"')


def parse_value(raw: str, key: str) -> Any:
    """The typed value of one setting's text (see the module docstring); `key` names it in errors."""
    text = raw.strip()
    if text.lower() in _WORDS:
        return _WORDS[text.lower()]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if text.startswith(_JSON_OPENERS):
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise ConfigError(key, f"{text!r} starts like JSON but is not valid JSON "
                              f"({error.msg}); write a list as [1, 2] and text as plain words "
                              "or a JSON string") from error
    return text


def split_assignment(item: str, flag: str, example: str) -> tuple[str, str]:
    """`"KEY=VALUE"` → (KEY, VALUE text); a missing `=` or key raises ConfigError naming `flag`."""
    key, separator, raw = item.partition("=")
    if not separator or not key.strip():
        raise ConfigError(flag, f"expected KEY=VALUE, e.g. {example}; got {item!r}")
    return key.strip(), raw


def parse_assignments(items: Iterable[str], flag: str, example: str) -> dict[str, Any]:
    """`["n_agents=3", "show_influence=false"]` → {"n_agents": 3, "show_influence": False}."""
    fields: dict[str, Any] = {}
    for item in items:
        key, raw = split_assignment(item, flag, example)
        fields[key] = parse_value(raw, f"{flag} {key}")
    return fields
