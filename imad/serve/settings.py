"""The routing server's settings: limits, auth and defaults, validated once at start-up.

Every field maps to one `imad serve` flag, and a bad value raises a `ConfigError` naming that
flag, so a misconfigured server fails before it binds a port rather than on the first request.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from imad.errors import ConfigError
from imad.question import MAX_QUESTION_CHARS
from imad.routing_options import DEFAULT_BUDGET_WINDOW, OOD_POLICIES
from imad.serve.model_names import SERVE_BACKENDS


QUEUE_PER_SLOT = 4
"""Default queue length per concurrency slot: a burst of four times the slots waits, no more."""
MAX_CONCURRENCY = 4096
MAX_QUEUE = 65_536
MAX_WORKERS = 256
MAX_WAIT_S = 86_400.0
"""Upper bounds no real deployment needs (threads, waiting requests, processes, one day)."""


@dataclass(frozen=True)
class ServeSettings:
    """How `imad serve` answers requests. Every number must be finite (NaN and inf are refused).

    api_key: when set, every /v1 request needs `Authorization: Bearer <api_key>`.
    max_request_bytes: largest request body read; larger bodies get 413 before parsing.
    max_question_chars: longest question (+ `imad.context`) accepted; longer ones get 413.
    max_concurrency: pipelines running at once (per process). The upstream client's own limit
        follows it unless the `--llm` spec sets one (then the smaller wins; /health shows both).
    max_queue: requests waiting for a slot beyond those; one more gets 429 with
        `Retry-After: retry_after_s` at once. None: `QUEUE_PER_SLOT` × max_concurrency.
    queue_timeout_s: a request still waiting after this gets 429 (`queue_timeout`).
    workers: server processes on the port (uvicorn's workers); limits, queue and budgets are
        per process.
    metrics_public: serve `GET /metrics` without the API key (for a scraper inside the network).
    request_timeout_s: a pipeline still running after this gets 504 and is cancelled at its next
        LLM call (its slot stays taken until then, so timed-out work cannot pile up beyond
        `max_concurrency`).
    default_backend / default_tau: what the model name `imad` means; `default_tau=None` keeps
        the router checkpoint's τ.
    log_prompts: put the question text into the JSON log lines (off: logs carry sizes only).
    shutdown_timeout_s: on SIGTERM/SIGINT, how long in-flight requests may run before the
        server closes them anyway.
    target_trigger_rate / budget_window: hold each model name's escalation rate with a trigger
        budget over its last `budget_window` answers (`imad.serve.budgets`); None: a fixed τ.
    ood_policy: "flag" or "escalate" for answers unlike the router's training rows; None keeps
        the checkpoint's.
    """

    api_key: str | None = field(default=None, repr=False)
    max_request_bytes: int = 262_144
    max_question_chars: int = MAX_QUESTION_CHARS
    max_concurrency: int = 4
    max_queue: int | None = None
    queue_timeout_s: float = 10.0
    workers: int = 1
    metrics_public: bool = False
    request_timeout_s: float = 300.0
    retry_after_s: int = 2
    default_backend: str = "acemad"
    default_tau: float | None = None
    log_prompts: bool = False
    shutdown_timeout_s: float = 30.0
    target_trigger_rate: float | None = None
    budget_window: int = DEFAULT_BUDGET_WINDOW
    ood_policy: str | None = None

    def __post_init__(self) -> None:
        if self.api_key is not None and not self.api_key.strip():
            raise ConfigError("--api-key-env", "the API key is empty; set a non-empty key or none")
        if self.max_request_bytes < 1024:
            raise ConfigError("--max-request-bytes", f"must be >= 1024, got {self.max_request_bytes}")
        if not 1 <= self.max_question_chars <= MAX_QUESTION_CHARS:
            raise ConfigError("--max-question-chars",
                              f"must be in [1, {MAX_QUESTION_CHARS}], got {self.max_question_chars}")
        if self.max_concurrency < 1:
            raise ConfigError("--max-concurrency", f"must be >= 1, got {self.max_concurrency}")
        if self.max_concurrency > MAX_CONCURRENCY:
            raise ConfigError("--max-concurrency", f"must be <= {MAX_CONCURRENCY}, got {self.max_concurrency}")
        if self.max_queue is not None and not 0 <= self.max_queue <= MAX_QUEUE:
            raise ConfigError("--max-queue", f"must be in [0, {MAX_QUEUE}], got {self.max_queue}")
        if not math.isfinite(self.queue_timeout_s) or not 0 < self.queue_timeout_s <= MAX_WAIT_S:
            raise ConfigError("--queue-timeout", f"must be a number of seconds in (0, {MAX_WAIT_S:g}], "
                                                 f"got {self.queue_timeout_s}")
        if not 1 <= self.workers <= MAX_WORKERS:
            raise ConfigError("--workers", f"must be in [1, {MAX_WORKERS}], got {self.workers}")
        if not math.isfinite(self.request_timeout_s) or self.request_timeout_s <= 0:
            raise ConfigError("--request-timeout",
                              f"must be a finite number of seconds > 0, got {self.request_timeout_s}")
        if self.retry_after_s < 1:
            raise ConfigError("--retry-after", f"must be >= 1 second, got {self.retry_after_s}")
        if self.default_backend not in SERVE_BACKENDS:
            raise ConfigError("--backend", f"must be one of {', '.join(SERVE_BACKENDS)}, "
                                           f"got {self.default_backend!r}")
        if self.default_tau is not None and not 0.0 <= self.default_tau <= 1.0:  # NaN fails too
            raise ConfigError("--tau", f"must be in [0, 1], got {self.default_tau}")
        if not math.isfinite(self.shutdown_timeout_s) or self.shutdown_timeout_s < 0:
            raise ConfigError("--shutdown-timeout",
                              f"must be a finite number of seconds >= 0, got {self.shutdown_timeout_s}")
        if self.target_trigger_rate is not None and not 0.0 < self.target_trigger_rate < 1.0:
            raise ConfigError("--target-trigger-rate", "must be a number strictly between 0 and 1 "
                              f"(the share of answers to escalate), got {self.target_trigger_rate}")
        if self.budget_window < 1:
            raise ConfigError("--budget-window", f"must be an integer >= 1, got {self.budget_window}")
        if self.ood_policy is not None and self.ood_policy not in OOD_POLICIES:
            raise ConfigError("--ood-policy", f"must be one of {', '.join(OOD_POLICIES)}, got "
                              f"{self.ood_policy!r}")

    @property
    def queue_limit(self) -> int:
        """The queue length in force (`max_queue`, or its default for `max_concurrency`)."""
        return QUEUE_PER_SLOT * self.max_concurrency if self.max_queue is None else self.max_queue
