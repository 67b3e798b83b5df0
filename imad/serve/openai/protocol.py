"""The wire format of `/v1/chat/completions` and `/v1/models`, as pydantic models.

Requests are read leniently: fields of the OpenAI API that the router does not use
(`temperature`, `max_tokens`, `tools`, …) are accepted and ignored, because the router was
trained on the self-critique call's own fixed decoding; only `n > 1` is refused, since the
pipeline gives one answer. Responses are standard chat completions plus one documented extra
field, `imad`, holding the routing decision (`ImadInfo`, the `body` view of the decision schema,
`imad.decide.schema`; the `X-Imad-Decision` header is its `header` view).

The body must be strict JSON (`imad.jsonio`): `NaN`/`Infinity` literals, integers of more than
100 digits and nesting deeper than 100 levels are a 400 (`invalid_json`); a lone surrogate in
the question is `invalid_question`, and booleans and
integers are not coerced (`"stream": "yes"` or `"n": "1"` is a 400, not true or 1). Responses
are strict JSON too: a non-finite score is written as null (`strict_json`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    create_model,
    field_validator,
)

from imad.decide import schema
from imad.errors import ServeError
from imad.question import TaskType
from imad.serve.openai.strict_json import json_object_body, strict_json

if TYPE_CHECKING:
    from imad.pipeline import PipelineAnswer
    from imad.serve.openai.model_names import ModelChoice

# --- requests ------------------------------------------------------------------------------------


class ChatMessage(BaseModel):
    """One message; `content` is a string or a list of OpenAI content parts."""

    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: StrictBool = False


class ImadOptions(BaseModel):
    """Optional request field `imad` (the SDKs send it with `extra_body={"imad": {...}}`).

    choices: answer options, lettered A, B, C… (makes the question multiple choice).
    task_type: how answers are compared (default: multiple_choice with choices, else short_answer).
    context: supporting text shown before the question, e.g. an abstract.
    """

    model_config = ConfigDict(extra="forbid")

    choices: list[str] = Field(default_factory=list)
    task_type: TaskType | None = None
    context: str = ""


class ChatCompletionRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: StrictBool = False
    stream_options: StreamOptions | None = None
    n: StrictInt | None = None
    imad: ImadOptions | None = None


def parse_chat_request(body: bytes) -> ChatCompletionRequest:
    """The request in `body`, or ServeError 400 saying which field is wrong and why."""
    # the size limit is limits.py's; lone surrogates are refused per field (invalid_question)
    payload = json_object_body(body, "the request body", check_strings=False)
    try:
        request = ChatCompletionRequest.model_validate(payload)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        more = f" ({error.error_count()} errors in all)" if error.error_count() > 1 else ""
        raise ServeError(400, f"invalid request field {where!r}: {first['msg']}{more}",
                         code="invalid_request", param=where) from None
    if request.n not in (None, 1):
        raise ServeError(400, f"n={request.n} is not supported: the router gives one answer per request",
                         code="unsupported_parameter", param="n")
    return request


def check_stream_options(chat: ChatCompletionRequest) -> None:
    """OpenAI refuses `stream_options` on a request that does not stream; so does imad."""
    if chat.stream_options is not None and not chat.stream:
        raise ServeError(400, "The 'stream_options' parameter is only allowed when 'stream' is "
                              "enabled: add \"stream\": true or drop stream_options",
                         code="invalid_request", param="stream_options")


# --- responses -----------------------------------------------------------------------------------


class Usage(BaseModel):
    """Tokens of every LLM call the pipeline made for the request (self-critique and debate)."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class _FiniteScores(BaseModel):
    """The base of `ImadInfo`: unknown fields refused, non-finite scores written as null."""

    model_config = ConfigDict(extra="forbid")  # only the schema's `body` fields

    @field_validator("*", mode="before")
    @classmethod
    def _finite_or_null(cls, value: Any) -> Any:
        """Strict JSON has no NaN: a non-finite score is reported as null (and was escalated)."""
        return None if isinstance(value, float) and not math.isfinite(value) else value


ImadInfo = create_model("ImadInfo", __base__=_FiniteScores, __module__=__name__,
                        __doc__=("The extra `imad` field of a completion: what the router decided "
                                 "and what it cost; its fields are the `body` view of "
                                 "`imad.decide.schema`, where each is described."),
                        **schema.pydantic_fields("body"))


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: str = "stop"
    logprobs: None = None


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    system_fingerprint: str
    choices: list[Choice]
    usage: Usage
    imad: ImadInfo  # type: ignore[valid-type]  # built from the schema


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: Delta
    finish_reason: str | None = None


class ChatCompletionChunk(BaseModel):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    system_fingerprint: str
    choices: list[ChunkChoice]
    usage: Usage | None = None
    imad: ImadInfo | None = None  # type: ignore[valid-type]


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "imad"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


def completion_from_answer(answer: PipelineAnswer, choice: ModelChoice, *, completion_id: str,
                           created: int, fingerprint: str,
                           router: Mapping[str, str | None]) -> ChatCompletion:
    """The chat completion of a pipeline answer; `usage` sums every call in its trace.
    `router`: the identity of the router that scored it (`imad.serve.reload.swap.identity_values`)."""
    info = ImadInfo(**schema.view("body", {**answer.values(), **router, "backend": choice.backend}))
    usage = Usage(prompt_tokens=answer.prompt_tokens, completion_tokens=answer.completion_tokens,
                  total_tokens=answer.total_tokens)
    return ChatCompletion(id=completion_id, created=created, model=choice.name,
                          system_fingerprint=fingerprint,
                          choices=[Choice(message=AssistantMessage(content=answer.answer))],
                          usage=usage, imad=info)


MAX_HEADER_CHARS = 4096
"""Longest X-Imad-Decision header; proxies commonly cap a header line at 8 KiB."""


def decision_header(info: BaseModel) -> str:
    """The compact, ASCII-only JSON of the `X-Imad-Decision` header (τ and ≥ are escaped): the
    schema's `header` view, read from the body (`ImadInfo`), whose keys it shares."""
    body = info.model_dump()
    decision = {key: body[key] for key in schema.keys_of("header")}
    text = strict_json(decision, ensure_ascii=True)
    if len(text) > MAX_HEADER_CHARS:  # a long parse error: keep the gist, the body has it all
        decision["reasons"] = [body["reasons"][0][:200]] if body["reasons"] else []
        text = strict_json(decision, ensure_ascii=True)
    return text

