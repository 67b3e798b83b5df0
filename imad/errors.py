"""Every exception imad raises on purpose, in one place.

Each error says what was wrong and, where there is one, what to do about it. Errors that
concern an LLM response carry that response (or its raw text), so nothing is lost when a call
fails half-way: the caller can log it, retry, or escalate.
"""

from __future__ import annotations

from typing import Any, Protocol


class TruncatedText(Protocol):
    """What `TruncatedResponseError` reads of the chat response it carries (a `ChatResponse`)."""

    model: str
    completion_tokens: int


class ImadError(Exception):
    """Base class of every error raised by imad on purpose."""


class ConfigError(ImadError, ValueError):
    """A configuration value (dataclass field, CLI flag, spec string) is invalid."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class MissingDependencyError(ImadError, ImportError):
    """An optional package is needed for this feature; the message names the install command."""

    def __init__(self, package: str, install: str, purpose: str) -> None:
        super().__init__(f"{purpose} needs the package {package!r}. Install it with: {install}")
        self.package = package
        self.install = install


class InvalidQuestionError(ImadError, ValueError):
    """A question is empty, too long, or its choices do not fit its task type."""


class InputTooLargeError(InvalidQuestionError):
    """A prompt cannot fit the model's context window; raised before any call.

    `prompt_tokens` is the prompt's size as the back-end counts it, `reserved_tokens` the
    completion tokens the call keeps free, `context_tokens` the model's window.
    """

    def __init__(self, message: str, *, prompt_tokens: int, reserved_tokens: int,
                 context_tokens: int) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.reserved_tokens = reserved_tokens
        self.context_tokens = context_tokens


# --- LLM back-ends -------------------------------------------------------------------------


class LLMError(ImadError):
    """A chat-model call failed. `retryable` tells whether the same call may succeed later."""

    retryable = False

    def __init__(self, message: str, *, model: str | None = None, status: int | None = None,
                 body: str | None = None) -> None:
        super().__init__(message)
        self.model = model
        self.status = status
        self.body = body


class LLMAuthError(LLMError):
    """The server refused the credentials (HTTP 401/403)."""


class LLMBadRequestError(LLMError):
    """The server rejected the request itself (HTTP 400/404/422): retrying will not help."""


class LLMRateLimitError(LLMError):
    """HTTP 429 after all retries; `retry_after` is the server's last hint in seconds."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class LLMServerError(LLMError):
    """HTTP 5xx after all retries."""

    retryable = True


class LLMTimeoutError(LLMError):
    """No complete answer within the configured timeout, after all retries."""

    retryable = True


class LLMConnectionError(LLMError):
    """The server could not be reached or dropped the connection, after all retries."""

    retryable = True


class LLMMalformedResponseError(LLMError):
    """The server answered 2xx with a body that is not a chat completion."""


class TruncatedResponseError(LLMError):
    """The model stopped at the token limit (finish_reason == "length").

    The partial response is kept in `response`: it is reported, never repaired silently.
    """

    def __init__(self, response: TruncatedText) -> None:
        super().__init__(
            f"model {response.model!r} hit the token limit after {response.completion_tokens} "
            "completion tokens; raise max_tokens or shorten the prompt",
            model=response.model,
        )
        self.response = response


class ReplayMissError(LLMError):
    """A replay-only cache had no recorded response for this request."""

    def __init__(self, key: str, cache_path: str) -> None:
        super().__init__(
            f"no recorded response for request {key[:16]}… in {cache_path} (replay-only mode); "
            "record it first with mode='record'"
        )
        self.key = key
        self.cache_path = cache_path


class ModelFileError(LLMError, FileNotFoundError):
    """A GGUF model file is missing or unreadable."""


class RequestCancelledError(ImadError):
    """The caller cancelled the work (e.g. an HTTP client disconnected); no further LLM call is made.

    Not an `LLMError`: a cancelled pipeline must stop, not escalate to a debate.
    """


# --- Self-critique ---------------------------------------------------------------------------


class CritiqueParseError(ImadError, ValueError):
    """A self-critique response could not be parsed. Carries the raw text and the reason."""

    def __init__(self, reason: str, raw_text: str) -> None:
        preview = raw_text[:200].replace("\n", "\\n")
        super().__init__(f"unparseable self-critique response: {reason} (raw text starts: {preview!r})")
        self.reason = reason
        self.raw_text = raw_text


# --- Features, router, checkpoints ---------------------------------------------------------------


class FeatureError(ImadError, ValueError):
    """Features could not be computed (wrong input type, wrong vector shape)."""


class CheckpointError(ImadError):
    """A router checkpoint is missing, corrupt or does not match this version of imad."""


class NotCertifiableError(ImadError):
    """No threshold can be certified for the asked error on these labels (`imad.decide.certify`):
    the message is the reason in one line; `answer` is the whole `Infeasible` answer."""

    def __init__(self, message: str, answer: object = None) -> None:
        super().__init__(message)
        self.answer = answer


# --- Debate --------------------------------------------------------------------------------------


class DebateError(ImadError):
    """A debate could not run (no options, no agents, every agent failed)."""


class NoAnswerError(ImadError):
    """A run produced no answer (every call failed or nothing usable came back): a failed run."""


class DatasetError(ImadError, ValueError):
    """A dataset file is missing or a record in it is malformed (the message names file and line)."""


class ExtremeRateError(DatasetError):
    """A new router version would escalate or keep nearly all of the answers it was made on, or
    tied scores cannot meet the target trigger rate (`imad.router.escalation`): not written."""


class UnknownEventError(ImadError, KeyError):
    """A count was asked for by a name its `EventCounts` does not declare (a misspelt event)."""

    def __init__(self, name: str, declared: tuple[str, ...]) -> None:
        super().__init__(f"no count named {name!r}; the declared ones are {', '.join(declared)}")
        self.name = name
        self.declared = declared

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


# --- Serving -------------------------------------------------------------------------------------


class ServeError(ImadError):
    """`imad serve` refused or could not finish a request.

    Carries what the HTTP response needs: the status, the OpenAI error `type` and `code`, the
    offending request field (`param`) and extra headers (e.g. `Retry-After` with a 429).
    """

    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error",
                 code: str | None = None, param: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param
        self.headers = dict(headers or {})

    def to_body(self) -> dict[str, Any]:
        """The OpenAI error shape: {"error": {"message", "type", "param", "code"}}."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param,
                          "code": self.code}}


# --- Decision log ---------------------------------------------------------------------


class DecisionLogError(ImadError):
    """A decision log cannot be opened or read (the message names the file and what to do)."""


class DecisionLogFormatError(DecisionLogError):
    """The file is not an imad decision log: not SQLite at all, damaged, or another program's
    SQLite database."""


class DecisionLogVersionError(DecisionLogError):
    """The log was written by a newer imad (a schema version this one does not know)."""

    def __init__(self, path: str, found: int, supported: int) -> None:
        super().__init__(f"decision log {path} has schema version {found}, newer than the version "
                         f"{supported} this imad reads; upgrade imad, or give another file")
        self.found = found
        self.supported = supported


class DecisionLogDatabaseError(DecisionLogError):
    """The database a decision-log URL names cannot be reached, logged into or used, or holds
    tables that are not a log this imad can use (the message never holds the password).

    `kind` says what it means for a writer: "unreachable", "unwritable", "busy", "damaged" or
    "other" (the drop reason of the rows it costs)."""

    def __init__(self, message: str, kind: str = "other") -> None:
        super().__init__(message)
        self.kind = kind


class UnknownDecisionError(DecisionLogError, KeyError):
    """A label names a completion id the log holds no decision for."""

    def __init__(self, decision_id: str) -> None:
        super().__init__(f"no decision with id {decision_id!r} in the log")
        self.decision_id = decision_id

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class LabelFileError(DecisionLogError, ValueError):
    """A bulk label file was refused as a whole; `problems` lists `(line, what was wrong)`."""

    def __init__(self, path: str, problems: list[tuple[int, str]], shown: int = 20) -> None:
        lines = [f"  line {line}: {what}" for line, what in problems[:shown]]
        if len(problems) > shown:
            lines.append(f"  … and {len(problems) - shown} more")
        super().__init__(f"label file {path}: {len(problems)} bad line(s), no label was written "
                         "(the file is applied all or nothing):\n" + "\n".join(lines))
        self.problems = problems
