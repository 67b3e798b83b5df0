"""The debate back-end registry: name → (config class, back-end class), checked on creation.

The protocols (`imad.debate.protocols`) and DOWN, the confidence gate in front of one of them."""

from __future__ import annotations

from typing import Any

from imad.constraints import settable_fields
from imad.debate.base import AgentConfig, DebateBackend
from imad.debate.down import DOWN, DOWNConfig
from imad.debate.protocols import PROTOCOLS
from imad.errors import ConfigError
from imad.llm.types import ChatModel

BACKENDS: dict[str, tuple[type[AgentConfig], type[DebateBackend]]] = {
    **PROTOCOLS, "down": (DOWNConfig, DOWN),
}


def config_class_of(name: str) -> type[AgentConfig]:
    """The config class of back-end `name` (ConfigError naming the known back-ends)."""
    return _entry(name)[0]


def make_config(name: str, **fields: Any) -> AgentConfig:
    """The config of back-end `name` with `fields` overriding the defaults (validated)."""
    config_class, _ = _entry(name)
    known = settable_fields(config_class)
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise ConfigError(f"{config_class.__name__}.{unknown[0]}",
                          f"unknown field; known: {sorted(known)}")
    return config_class(**fields)


def create_backend(name: str, model: ChatModel, config: AgentConfig | None = None,
                   **fields: Any) -> DebateBackend:
    """Back-end `name` on `model`, with `config` or a default config updated with `fields`."""
    _, backend_class = _entry(name)
    if config is not None and fields:
        raise ConfigError("config", "pass either a config object or field overrides, not both")
    return backend_class(model, config if config is not None else make_config(name, **fields))


def _entry(name: str) -> tuple[type[AgentConfig], type[DebateBackend]]:
    if name not in BACKENDS:
        raise ConfigError("backend", f"unknown debate back-end {name!r}; choose one of "
                          f"{', '.join(BACKENDS)}")
    return BACKENDS[name]
