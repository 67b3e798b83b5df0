"""imad: a trainable debate router for LLM pipelines.

Public names are imported lazily (PEP 562) so `import imad` loads no model, spaCy pipeline or
network client.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Any


def _installed_version() -> str:
    """The version of the installed `imad` distribution (pyproject.toml is the one source)."""
    try:
        return metadata.version("imad")
    except metadata.PackageNotFoundError:  # a bare checkout on sys.path, never installed
        return "0+unknown"


__version__ = _installed_version()

_EXPORTS = {
    "Question": "imad.question",
    "TaskType": "imad.question",
    "CritiqueResponse": "imad.critique.schema",
    "SelfCritique": "imad.critique.call",
    "ChatRequest": "imad.llm.types",
    "ChatResponse": "imad.llm.types",
    "Message": "imad.llm.types",
    "OpenAICompatibleChat": "imad.llm.openai_http",
    "LocalGGUFChat": "imad.llm.local_gguf",
    "CachedChat": "imad.llm.cache",
    "chat_model_from_spec": "imad.llm.spec",
    "Router": "imad.router.router",
    "RouterConfig": "imad.router.config",
    "RouterDecision": "imad.decide",
    "TriggerBudget": "imad.decide",
    "FixedThreshold": "imad.decide",
    "Policy": "imad.decide",
    "fit_calibrator": "imad.router.calibrators",
    "available_routers": "imad.router",
    "Pipeline": "imad.pipeline",
    "PipelineAnswer": "imad.pipeline",
    "create_backend": "imad.debate",
    "DebateResult": "imad.debate",
    "AceMAD": "imad.debate",
    "SVRMAD": "imad.debate",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'imad' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
