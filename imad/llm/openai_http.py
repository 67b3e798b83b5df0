"""Any `/v1/chat/completions` server: vLLM, Ollama, llama.cpp server, TGI, OpenAI.

Failures are retried only when a retry can help (429, 5xx, timeouts, dropped connections), a
bounded number of times, with exponential backoff that defers to the server's `Retry-After`.
Everything else becomes a typed `LLMError` at once. Servers disagree on how to ask for
schema-constrained JSON, so the wire format is a per-server `structured_output` choice.
"""

from __future__ import annotations

import base64
import email.utils
import mimetypes
import os
import random
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import httpx

from imad.constraints import (
    MAX_TIMEOUT_S,
    URL,
    Boolean,
    Constraints,
    Integer,
    Options,
    Real,
    StringMap,
    Text,
    check_fields,
    check_value,
)
from imad.errors import (
    ConfigError,
    LLMAuthError,
    LLMBadRequestError,
    LLMConnectionError,
    LLMError,
    LLMMalformedResponseError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
    TruncatedResponseError,
)
from imad.jsonio import UntrustedJSONError, loads_untrusted
from imad.llm.batch import run_batch
from imad.llm.context import estimate_prompt_tokens, refuse_if_too_large
from imad.llm.local_gguf import parse_llama_completion
from imad.llm.types import ChatRequest, ChatResponse, Message

STRUCTURED_OUTPUT_MODES = ("json_schema", "json_object_schema", "guided_json", "none")
"""How a JSON schema goes on the wire:
- json_schema: OpenAI's `response_format={"type": "json_schema", ...}` (OpenAI, vLLM, Ollama);
- json_object_schema: `{"type": "json_object", "schema": ...}` (llama-cpp-python's server, which
  answers HTTP 500 to the OpenAI form);
- guided_json: vLLM's `guided_json` extra field;
- none: no constraint; the prompt asks for JSON and the tolerant parser reads what comes back.
"""


HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP header name (RFC 9110 token)."""


def check_headers(headers: dict[str, str]) -> None:
    """ConfigError for a header httpx would refuse at the first call, or that would smuggle a
    second header into the request: a name that is not a token, a value with a control
    character (a newline, NUL) or outside ASCII. Covers `extra_headers` and the API key."""
    for name, value in headers.items():
        where = "api_key" if name == "Authorization" else f"extra_headers[{name!r}]"
        if not HEADER_NAME.fullmatch(name):
            raise ConfigError(where, "is not an HTTP header name (letters, digits and "
                                     "!#$%&'*+-.^_`|~ only)")
        if not all(" " <= char <= "~" or char == "\t" for char in value):
            raise ConfigError(where, "holds a control character (newline, NUL…) or non-ASCII "
                                     "text, which an HTTP header cannot carry")


@dataclass
class OpenAICompatibleChat:
    """Chat client for an OpenAI-compatible HTTP server.

    `base_url` and `api_key` default to `OPENAI_BASE_URL` / `OPENAI_API_KEY`. Timeouts are in
    seconds: `connect_timeout` to open the connection, `timeout` for the whole answer.
    `context_window`: the served model's context in tokens (e.g. `?context_window=8192` in a
    `--llm` spec). When set, a prompt whose conservative estimate (1 token per 3 UTF-8 bytes,
    `imad.llm.context`) plus `max_tokens` exceeds it is an `InputTooLargeError` before the call;
    when unset, the server is the judge and its refusal is an `LLMBadRequestError`.
    """

    model: str
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    connect_timeout: float = 5.0
    max_retries: int = 3
    backoff_base: float = 0.5
    max_backoff: float = 30.0
    max_concurrency: int = 4
    structured_output: str = "json_schema"
    supports_logprobs: bool = True
    extra_headers: dict[str, str] = field(default_factory=dict)
    context_window: int | None = None

    constraints: ClassVar[Constraints] = {
        "model": Text(max_chars=256),
        "base_url": (None, URL()),
        "api_key": (None, Text(max_chars=4_096, blank=True)),
        "timeout": Real(0.0, MAX_TIMEOUT_S, closed="right"),
        "connect_timeout": Real(0.0, MAX_TIMEOUT_S, closed="right"),
        "max_retries": Integer(0, 20),  # ~9 min of capped backoff; 10⁹ retried forever
        "backoff_base": Real(0.0, 60.0),
        "max_backoff": Real(0.0, 3_600.0),
        "max_concurrency": Integer(1, 1_024),
        "structured_output": Options(*STRUCTURED_OUTPUT_MODES),
        "supports_logprobs": Boolean(),
        "extra_headers": StringMap(),
        "context_window": (None, Integer(1, 16_777_216)),
    }
    """Each option's type and bounds (`imad.constraints`); `--llm openai:M@URL?KEY=VALUE` reads
    its values by this table."""

    def __post_init__(self) -> None:
        check_fields(self, label=str)
        self.base_url = check_value((self.base_url or os.environ.get("OPENAI_BASE_URL")
                                     or "https://api.openai.com/v1").rstrip("/"), URL(), "base_url")
        self.api_key = self.api_key if self.api_key is not None else os.environ.get("OPENAI_API_KEY")
        check_headers({**self.extra_headers, "Authorization": self.api_key or ""})
        self.model_id = self.model
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.max_concurrency)

    @property
    def supports_json_schema(self) -> bool:
        return self.structured_output != "none"

    def _http(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                headers = {"Content-Type": "application/json", **self.extra_headers}
                if self.api_key:
                    headers["Authorization"] = f"Bearer {self.api_key}"
                timeout = httpx.Timeout(self.timeout, connect=self.connect_timeout)
                # Every slot keeps its connection: httpx keeps only 20 alive by default, so a
                # client of 32 slots would open and close connections under steady load.
                limits = httpx.Limits(max_connections=self.max_concurrency,
                                      max_keepalive_connections=self.max_concurrency)
                self._client = httpx.Client(base_url=self.base_url, headers=headers,
                                            timeout=timeout, limits=limits)
            return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def check_fits(self, request: ChatRequest) -> None:
        """Raise InputTooLargeError when the estimated prompt cannot fit `context_window`."""
        if self.context_window is not None:
            refuse_if_too_large(estimate_prompt_tokens(request.messages), request, self.context_window,
                                model_id=self.model, counted_by="estimated at 3 UTF-8 bytes per token")

    def chat(self, request: ChatRequest) -> ChatResponse:
        self.check_fits(request)
        body = self.request_body(request)
        with self._slots:
            response = self._post_with_retries(body)
        if response.truncated:
            raise TruncatedResponseError(response)
        return response

    def chat_batch(self, requests: Sequence[ChatRequest]) -> list[ChatResponse | Exception]:
        return run_batch(self.chat, requests, max_concurrency=self.max_concurrency)

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body sent to /chat/completions for `request`."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(m) for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if request.stop:
            body["stop"] = list(request.stop)
        if request.logprobs:
            body["logprobs"] = True
            if request.top_logprobs:
                body["top_logprobs"] = request.top_logprobs
        schema = request.json_schema
        if schema is not None and self.structured_output == "json_schema":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "response", "schema": schema}}
        elif schema is not None and self.structured_output == "json_object_schema":
            body["response_format"] = {"type": "json_object", "schema": schema}
        elif schema is not None and self.structured_output == "guided_json":
            body["guided_json"] = schema
        return body

    def _post_with_retries(self, body: dict[str, Any]) -> ChatResponse:
        attempt = 0
        while True:
            started = time.perf_counter()
            try:
                http_response = self._send(body)
                return self._read(http_response, time.perf_counter() - started)
            except LLMError as error:
                if not error.retryable or attempt >= self.max_retries:
                    raise
                time.sleep(self._delay(attempt, getattr(error, "retry_after", None)))
                attempt += 1

    def _send(self, body: dict[str, Any]) -> httpx.Response:
        """POST once; transport failures become typed, retryable errors."""
        try:
            return self._http().post("/chat/completions", json=body)
        except httpx.TimeoutException as error:
            raise LLMTimeoutError(f"{self.base_url} gave no complete answer within "
                                  f"{self.timeout:g} s ({type(error).__name__})",
                                  model=self.model) from error
        except httpx.TransportError as error:
            raise LLMConnectionError(f"connection to {self.base_url} failed: "
                                     f"{type(error).__name__}: {error}", model=self.model) from error

    def _read(self, response: httpx.Response, latency_s: float) -> ChatResponse:
        """Map one HTTP exchange to a ChatResponse or a typed error."""
        status = response.status_code
        text = response.text
        if status in (401, 403):
            raise LLMAuthError(f"{self.base_url} refused the credentials (HTTP {status}); "
                               "check OPENAI_API_KEY", model=self.model, status=status, body=text)
        if status == 429:
            raise LLMRateLimitError(f"{self.base_url} is rate limiting (HTTP 429)",
                                    retry_after=parse_retry_after(response.headers.get("Retry-After")),
                                    model=self.model, status=status, body=text)
        if status >= 500:
            raise LLMServerError(f"{self.base_url} failed with HTTP {status}: {text[:200]}",
                                 model=self.model, status=status, body=text)
        if status >= 400:
            raise LLMBadRequestError(f"{self.base_url} rejected the request (HTTP {status}): "
                                     f"{text[:300]}", model=self.model, status=status, body=text)
        try:
            payload = loads_untrusted(response.content)
        except UntrustedJSONError as error:
            raise LLMMalformedResponseError(
                f"{self.base_url} answered HTTP {status} with a body that is not JSON: {text[:200]!r} "
                f"({error})", model=self.model, status=status, body=text) from error
        if not isinstance(payload, dict):
            raise LLMMalformedResponseError(f"expected a JSON object, got {text[:200]!r}",
                                            model=self.model, status=status, body=text)
        return parse_llama_completion(payload, self.model, latency_s)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry `attempt` (0-based): Retry-After wins when given."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_backoff)
        exponential = self.backoff_base * (2**attempt)
        return min(exponential * (0.5 + random.random() / 2), self.max_backoff)


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: either delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _wire_message(message: Message) -> dict[str, Any]:
    if not message.images:
        return {"role": message.role, "content": message.text}
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}]
    parts += [{"type": "image_url", "image_url": {"url": image_url(image)}} for image in message.images]
    return {"role": message.role, "content": parts}


def image_url(image: str) -> str:
    """A URL as is; a local file as a base64 data URI (what OpenAI-style servers accept)."""
    if image.startswith(("http://", "https://", "data:")):
        return image
    path = Path(image)
    if not path.is_file():
        raise ConfigError("images", f"image file not found: {path}")
    mime = mimetypes.guess_type(path.name)[0] or "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"
