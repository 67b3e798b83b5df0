"""The one reader of `KEY=VALUE` settings typed on a command line or in a spec string.

Every flag that sets a config field from text uses it (`imad debate --set`, the `--llm SPEC`
options after `?`, `python -m training.evaluate --backend-option`), so the same text gives the
same value everywhere. The text is converted by the field's row in its config's constraints
table (`imad.constraints.parse_text`), never guessed: `n_agents=3` is an int because n_agents
is one, `api_key=123` stays the string "123", `show_influence=maybe` and `n_agents=abc` are
refused with the allowed values named. `none` / `null` mean None where a field allows None.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from imad.constraints import parse_settings
from imad.errors import ConfigError


def split_assignment(item: str, flag: str, example: str) -> tuple[str, str]:
    """`"KEY=VALUE"` → (KEY, VALUE text); a missing `=` or key raises ConfigError naming `flag`."""
    key, separator, raw = item.partition("=")
    if not separator or not key.strip():
        raise ConfigError(flag, f"expected KEY=VALUE, e.g. {example}; got {item!r}")
    return key.strip(), raw


def parse_assignments(items: Iterable[str], flag: str, example: str) -> dict[str, str]:
    """`["n_agents=3", "eta=x", "n_agents=4"]` → {"n_agents": "4", "eta": "x"} (texts; last wins)."""
    texts: dict[str, str] = {}
    for item in items:
        key, raw = split_assignment(item, flag, example)
        texts[key] = raw
    return texts


def typed_assignments(config_class: type, items: Iterable[str], flag: str,
                      example: str) -> dict[str, Any]:
    """`KEY=VALUE` items as the checked field values of `config_class`; errors name `flag KEY`."""
    return parse_settings(config_class, parse_assignments(items, flag, example),
                          label=lambda key: f"{flag} {key}")
