"""The one checker that applies a constraints table (`imad.constraints`): a value, a setting's
text, every field of a config dataclass, or a set of `KEY=VALUE` settings; each refusal is a
`ConfigError(field, "must be <what the row allows>, got <value>")`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from imad.constraints.kinds import Allowed, Integer, Refused
from imad.constraints.rows import admit_row, alternatives, describe, show
from imad.errors import ConfigError


def check_value(value: Any, allowed: Allowed, where: str, *, advice: str = "") -> Any:
    """`value` as stored, or ConfigError(where, "must be …, got …[; advice]"); `advice` says
    what to do instead, where the row alone cannot ("a non-finite p escalates as unparsed")."""
    try:
        return admit_row(value, allowed)
    except Refused:
        raise ConfigError(where, f"must be {describe(allowed)}, got {show(value)}"
                          + (f"; {advice}" if advice else "")) from None


def parse_text(text: str, allowed: Allowed, where: str) -> Any:
    """The value the text of a setting stands for, checked, or ConfigError naming `where`.

    `none` / `null` mean None where the row allows None; otherwise the alternatives are tried
    in order, each reading the text by its own type."""
    options = alternatives(allowed)
    if None in options and text.strip().lower() in ("none", "null"):
        return None
    for constraint in options:
        if constraint is None:
            continue
        try:
            return constraint.admit(constraint.parse(text))
        except Refused:
            continue
    raise ConfigError(where, f"must be {describe(allowed)}, got {show(text)}")


def ascii_int(text: str) -> int:
    """An argparse `type=` for integer flags: ASCII digits only (`int()` alone reads '١٢' as 12)."""
    try:
        return Integer().admit(Integer().parse(text))
    except Refused:
        raise ValueError(text) from None  # argparse turns it into "invalid ascii_int value"


def table_of(config_class: type) -> dict[str, Allowed]:
    """The merged `constraints` rows of a class and its bases (a subclass's row wins)."""
    table: dict[str, Allowed] = {}
    for klass in reversed(config_class.__mro__):
        table.update(vars(klass).get("constraints", {}))
    return table


def settable_fields(config_class: type) -> tuple[str, ...]:
    """The dataclass fields a caller may pass (init=True), in declaration order."""
    return tuple(f.name for f in dataclasses.fields(config_class) if f.init)


def default_label(config_class: type) -> Callable[[str], str]:
    return lambda name: f"{config_class.__name__}.{name}"


def check_fields(instance: Any, label: Callable[[str], str] | None = None) -> None:
    """Apply the class's table to every settable field of a dataclass instance (frozen or not),
    storing each admitted value (an int in a float field becomes a float).

    `label(field)` names a field in errors (default `ClassName.field`). A field with no row is a
    bug in imad, not bad input: TypeError, so a new field cannot go unchecked."""
    config_class = type(instance)
    table = table_of(config_class)
    name_of = label or default_label(config_class)
    for name in settable_fields(config_class):
        if name not in table:
            raise TypeError(f"{config_class.__name__}.{name} has no row in its constraints table")
        value = getattr(instance, name)
        admitted = check_value(value, table[name], name_of(name))
        if admitted is not value:
            object.__setattr__(instance, name, admitted)


def parse_settings(config_class: type, texts: Mapping[str, str],
                   label: Callable[[str], str]) -> dict[str, Any]:
    """KEY → text settings as typed, checked field values of `config_class`.

    An unknown key is a ConfigError listing the known fields; `label(key)` names a key in errors
    (e.g. `--set n_agents`)."""
    table = table_of(config_class)
    known = settable_fields(config_class)
    values: dict[str, Any] = {}
    for key, text in texts.items():
        if key not in known:
            raise ConfigError(label(key), f"unknown setting of {config_class.__name__}; known: "
                              + ", ".join(known))
        values[key] = parse_text(text, table[key], label(key))
    return values
