"""The routing server's settings: limits, auth and defaults, validated once at start-up.

Every field maps to one `imad serve` flag and one row of the constraints table
(`imad.constraints`); a bad value raises a `ConfigError` naming that flag, so a misconfigured
server fails before it binds a port rather than on the first request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from imad.constraints import MAX_TIMEOUT_S, Boolean, Constraints, Integer, Options, Real, Text, check_fields
from imad.decision_log.encode import MAX_COUNT
from imad.errors import ConfigError
from imad.question import MAX_QUESTION_CHARS
from imad.routing_options import DEFAULT_BUDGET_WINDOW, OOD_POLICIES, Tau
from imad.serve.machine import (
    RESERVED_FDS,
    descriptor_limit,
    descriptors_needed,
    process_budget,
    slot_budget,
    usable_cores,
)
from imad.serve.openai.model_names import SERVE_BACKENDS
from imad.shadow import MAX_SHADOW_SEED, check_shadow_flags

FLAG, ESCALATE_ALL = "flag", "escalate-all"
ON_VIOLATION = (FLAG, ESCALATE_ALL)
"""What `--on-violation` takes (`imad.serve.certificate_watch`)."""
QUEUE_PER_SLOT = 4
"""Default queue length per concurrency slot: a burst of four times the slots waits, no more."""
MAX_CONCURRENCY = 4096
MAX_QUEUE = 65_536
MAX_WORKERS = 256
MAX_WAIT_S = 86_400.0
MAX_SCORING_PROCESSES = 64
"""Upper bounds no real deployment needs (threads, waiting requests, processes, one day); the
machine's own bounds are tighter (`imad.serve.machine`, checked by `check_machine_bounds`)."""
AUTO_SCORING_PROCESSES_CAP = 4
"""Most scoring processes chosen automatically per server process: beyond about four, the
server process itself (HTTP, upstream calls, one GIL) is the limit, and each child holds a
router and a spaCy pipeline (~0.5 GB resident)."""


@dataclass(frozen=True)
class ServeSettings:
    """How `imad serve` answers requests. Every number must be finite (NaN and inf are refused),
    and the processes, slots and queue must fit the machine (`imad.serve.machine`: at most
    max(16, 8 × cores) processes in all, max(64, 256 × cores) slots per process, and
    2 × max_concurrency + queue + 64 within `ulimit -n`).

    api_key: when set, every route needs `Authorization: Bearer <api_key>` but /health (and
        /metrics with metrics_public): `imad.serve.routes.guard`.
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
    scoring_processes: child processes of each server process that score answers (features +
        router), each batch in one of them, so that this work runs outside the server's GIL on
        cores of its own (`imad.serve.scoring.processes`); 0: in a thread of the server process
        (no child; each child holds ~0.5 GB). None: `auto_scoring_processes` (one per
        core of this process's share of the machine, 1 to AUTO_SCORING_PROCESSES_CAP).
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
    decision_log: a SQLite file that gets one row per decision (`imad.decision_log`), shared by
        the workers (each writes through its own connection), or a postgresql:// URL shared by
        every replica of a fleet; None: no log, and
        `POST /v1/imad/feedback` answers 404.
    log_text: keep the question and answer text in the decision log (default: SHA-256 only).
    decision_log_max_rows: keep only the newest rows (older ones pruned and counted).
    shadow: observe only: decide every answer, record `would_escalate`, serve the
        single answer, run no debate on the request.
    shadow_debate_rate / shadow_seed: with `shadow`, a seeded share of requests also gets its
        debate after the response, in a bounded background queue (`imad.serve.shadow_debates`).
    on_violation: what a rejected live check of the router's certificate does: "flag" reports
        it; "escalate-all" escalates every answer until a router with a new certificate is
        loaded (`imad.serve.certificate_watch`). Needs the decision log, where the labels are.
    """

    api_key: str | None = field(default=None, repr=False)
    max_request_bytes: int = 262_144
    max_question_chars: int = MAX_QUESTION_CHARS
    max_concurrency: int = 4
    max_queue: int | None = None
    queue_timeout_s: float = 10.0
    workers: int = 1
    metrics_public: bool = False
    scoring_processes: int | None = None
    request_timeout_s: float = 300.0
    retry_after_s: int = 2
    default_backend: str = "acemad"
    default_tau: float | None = None
    log_prompts: bool = False
    shutdown_timeout_s: float = 30.0
    target_trigger_rate: float | None = None
    budget_window: int = DEFAULT_BUDGET_WINDOW
    ood_policy: str | None = None
    decision_log: str | None = None
    log_text: bool = False
    decision_log_max_rows: int | None = None
    shadow: bool = False
    shadow_debate_rate: float = 0.0
    shadow_seed: int = 0
    on_violation: str = FLAG

    constraints: ClassVar[Constraints] = {
        "api_key": (None, Text(max_chars=4_096)),
        "max_request_bytes": Integer(1_024, 64 * 2**20),
        "max_question_chars": Integer(1, MAX_QUESTION_CHARS),
        "max_concurrency": Integer(1, MAX_CONCURRENCY),
        "max_queue": (None, Integer(0, MAX_QUEUE)),
        "queue_timeout_s": Real(0.0, MAX_WAIT_S, closed="right"),
        "workers": Integer(1, MAX_WORKERS),
        "metrics_public": Boolean(),
        "scoring_processes": (None, Integer(0, MAX_SCORING_PROCESSES)),
        "request_timeout_s": Real(0.0, MAX_TIMEOUT_S, closed="right"),
        "retry_after_s": Integer(1, 3_600),
        "default_backend": Options(*SERVE_BACKENDS),
        "default_tau": (None, Tau()),
        "log_prompts": Boolean(),
        "shutdown_timeout_s": Real(0.0, MAX_TIMEOUT_S),
        "target_trigger_rate": (None, Real(0.0, 1.0, closed="neither")),
        "budget_window": Integer(1, 1_000_000),
        "ood_policy": (None, Options(*OOD_POLICIES)),
        "decision_log": (None, Text(path=True)),
        "log_text": Boolean(),
        "decision_log_max_rows": (None, Integer(1, MAX_COUNT)),
        "shadow": Boolean(),
        "shadow_debate_rate": Real(0.0, 1.0),
        "shadow_seed": Integer(0, MAX_SHADOW_SEED),
        "on_violation": Options(*ON_VIOLATION),
    }
    """Each setting's type and bounds (`imad.constraints`); a new setting adds one row here
    (and, when its flag is not `--` + the field name, one entry in FLAGS)."""

    def __post_init__(self) -> None:
        check_fields(self, label=serve_flag)
        check_machine_bounds(self)
        if self.decision_log is None:
            for name, unset in (("log_text", False), ("decision_log_max_rows", None),
                                ("on_violation", FLAG)):
                if getattr(self, name) != unset:
                    raise ConfigError(serve_flag(name), "applies to the decision log, which "
                                      "--decision-log PATH turns on: add it or drop this flag")
        check_shadow_flags(self.shadow, self.shadow_debate_rate, self.shadow_seed)

    @property
    def queue_limit(self) -> int:
        """The queue length in force (`max_queue`, or its default for `max_concurrency`)."""
        return QUEUE_PER_SLOT * self.max_concurrency if self.max_queue is None else self.max_queue

    @property
    def scoring_process_count(self) -> int:
        """The scoring processes in force (`scoring_processes`, or its default for this
        machine and `workers`)."""
        if self.scoring_processes is not None:
            return self.scoring_processes
        return auto_scoring_processes(usable_cores(), self.workers)


def check_machine_bounds(settings: ServeSettings) -> None:
    """ConfigError when the settings need more processes or file descriptors than this machine
    gives one server (`imad.serve.machine`: the rules and why)."""
    processes = settings.workers * (1 + settings.scoring_process_count)
    budget = process_budget()
    if processes > budget:
        flag = "--scoring-processes" if settings.scoring_processes else "--workers"
        raise ConfigError(flag, f"--workers {settings.workers} with {settings.scoring_process_count} "
                                f"scoring process(es) each start {processes} processes; this machine "
                                f"({usable_cores()} usable cores) runs at most {budget}")
    slots = slot_budget()
    if settings.max_concurrency > slots:
        raise ConfigError("--max-concurrency", f"{settings.max_concurrency} pipelines per server "
                                               f"process is more than this machine ({usable_cores()} "
                                               f"usable cores) runs at once: at most {slots}")
    limit = descriptor_limit()
    needed = descriptors_needed(settings.max_concurrency, settings.queue_limit)
    if limit is not None and needed > limit:
        flag = "--max-queue" if settings.max_queue is not None else "--max-concurrency"
        raise ConfigError(flag, f"--max-concurrency {settings.max_concurrency} and a queue of "
                                f"{settings.queue_limit} need {needed} open files per server process "
                                f"(2 per slot, 1 per waiting request, {RESERVED_FDS} reserved); "
                                f"the limit is {limit}: lower them or raise `ulimit -n`")


def auto_scoring_processes(cores: int, workers: int) -> int:
    """One scoring process per core of a server process's share (cores // workers), 1 to
    AUTO_SCORING_PROCESSES_CAP. The children share those cores with their server process, at a
    lower priority (`imad.serve.scoring.processes`), so its short steps are not queued behind a
    batch; measured on 2 cores, two children answer ~10% more requests/s at 32 clients than
    one, for ~10% more CPU per request (benchmarks/README.md, bench_serve)."""
    return max(1, min(AUTO_SCORING_PROCESSES_CAP, cores // max(1, workers)))


FLAGS = {"api_key": "--api-key-env", "request_timeout_s": "--request-timeout",
         "retry_after_s": "--retry-after", "default_backend": "--backend", "default_tau": "--tau",
         "shutdown_timeout_s": "--shutdown-timeout", "queue_timeout_s": "--queue-timeout"}
"""The `imad serve` flag of each setting whose flag is not `--` + its name with dashes."""


def serve_flag(name: str) -> str:
    """The flag that sets a ServeSettings field, named in its errors."""
    return FLAGS.get(name, "--" + name.replace("_", "-"))
