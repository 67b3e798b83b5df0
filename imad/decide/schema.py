"""Every field of a decision, declared once; each view of a decision is derived from it.

A decision travels beside its answer in many places. Each `Field` of `FIELDS` says once what it
is — its name, JSON type, one line of meaning, unit, who gives its value (`origin`) — and which
views carry it. `VIEWS` names each view and where it appears; nothing lists a view's fields by
hand:

- `decision`: `RouterDecision.to_dict()`, the `decision` object of `imad ask --json`.
- `answer`: the top level of `imad ask --json` (`PipelineAnswer.to_dict()`), beside the
  question id, the self-critique, the debate and the trace (`ANSWER_EXTRAS`).
- `text`: `imad ask`'s report, its `decision:` line and the reasons below it (`imad.cli.ask`).
- `body`: the server's `imad` object, a pydantic model built by `pydantic_fields`.
- `header`: the server's `X-Imad-Decision` header (compact JSON).
- `log_line`: the server's `chat_completion` log line (beside the request's own fields).
- `span`: the `imad.decision` span's attributes, each key prefixed `imad.router.`.
- `metrics`: the `outcome` label of the server's decisions counter (`imad.serve.metrics`).
- `log`: one row of the decision log: `fields_of("log")`, with `Field.sqlite_type`,
  gives its columns.

The API: `fields_of(view)` (the `Field`s, in declaration order), `keys_of(view)` (the key each
has there: its name unless `Field.keys` renames it), `view(view, values)` (a view's dict from the
values by field name; a missing value raises `KeyError`, so no view drops a field silently) and
`FIELD[name]`. Values come from three places, one per `origin`: `RouterDecision.values()`
("decision"), `PipelineAnswer.values()` ("answer", with the decision's) and the caller that
knows the request ("request": the server, the CLI, the decision log).

Adding a field: one `Field` here, and its value where its origin makes values. Torch-free, and
free of pydantic (`pydantic_fields` returns plain annotations).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from imad.routing_options import OOD_POLICIES

# --- the closed sets a decision's strings take --------------------------------------------------

PARSED, UNPARSED = "parsed", "unparsed"
PARSE_STATUSES = (PARSED, UNPARSED)
SCORED, UNSCORED, NON_FINITE = "scored", "unscored", "non_finite"
SCORE_STATUSES = (SCORED, UNSCORED, NON_FINITE)
"""Scored; unscored (the self-critique was unparsed); non_finite (NaN or ±inf: p withheld)."""
TAU_SOURCES = ("checkpoint", "request", "budget")
"""Where a decision's τ came from: the checkpoint, a per-request or per-pipeline override (`--tau`,
a model-name suffix), or a trigger budget's window quantile (during its warm-up the budget uses
its initial τ, and the decision names that τ's source)."""
KEPT, BELOW_TAU, OOD_ESCALATED = "kept", "below_tau", "ood"
CERTIFICATE_VIOLATED = "certificate_violated"
OUTCOMES = (KEPT, BELOW_TAU, UNPARSED, NON_FINITE, OOD_ESCALATED, CERTIFICATE_VIOLATED)
"""A decision's `outcome`: kept, or escalated because p < τ, the self-critique was unparsed, the
score was not finite, the OOD policy escalated an unfamiliar answer, or the router's
certificate is violated and the server escalates every answer (`--on-violation escalate-all`)."""
ANSWER_SOURCES = ("single_agent", "debate", "single_agent_fallback", "none")
"""Which answer was served: the kept self-critique's, the debate's, the self-critique's after the
debate gave none, or none (no usable answer: `imad ask` exits 3, the server answers 502)."""

# --- the views ------------------------------------------------------------------------------------

VIEWS = {
    "decision": "RouterDecision.to_dict(): the decision object of `imad ask --json`",
    "answer": "the top level of `imad ask --json` (PipelineAnswer.to_dict())",
    "text": "`imad ask`'s report: the decision line and its reasons",
    "body": "the `imad` object of the server's chat completion",
    "header": "the server's X-Imad-Decision header",
    "log_line": "the server's chat_completion log line",
    "span": "the imad.decision span's attributes (prefixed imad.router.)",
    "metrics": "the outcome label of the server's decisions counter",
    "log": "one row of the decision log",
}
ORIGINS = ("decision", "answer", "request")
"""Who gives a field's value: `RouterDecision.values()`, `PipelineAnswer.values()`, the caller."""
JSON_TYPES = {"number": float, "integer": int, "string": str, "boolean": bool, "array": list,
              "object": dict}
SQLITE_TYPES = {"number": "REAL", "integer": "INTEGER", "string": "TEXT", "boolean": "INTEGER",
                "array": "TEXT", "object": "TEXT"}
"""A column per JSON type; arrays and objects are stored as JSON text."""
ANSWER_EXTRAS = ("question_id", "decision", "critique", "debate", "trace")
"""`PipelineAnswer.to_dict()` keys that are no field here: the records it was made from (its
`decision` is the `decision` view)."""
SPAN_PREFIX = "imad.router."

ALL = frozenset(VIEWS) - {"metrics"}


@dataclass(frozen=True)
class Field:
    """One field of a decision: declared here once, carried by the views in `views`."""

    name: str
    type: str
    """Its JSON type, a key of `JSON_TYPES`."""
    meaning: str
    views: frozenset[str]
    origin: str = "decision"
    nullable: bool = False
    """null is a value (e.g. p of an unparsed answer)."""
    unit: str | None = None
    items: str | None = None
    """An array's item type (a key of `JSON_TYPES`)."""
    values: tuple[str, ...] = ()
    """The closed set a string field takes (empty: any string)."""
    keys: Mapping[str, str] = field(default_factory=dict)
    """Its key in a view where that differs from `name`."""

    def __post_init__(self) -> None:
        unknown = self.views - VIEWS.keys() | self.keys.keys() - self.views
        if self.type not in JSON_TYPES or self.origin not in ORIGINS or unknown:
            raise ValueError(f"schema field {self.name!r}: type {self.type!r}, origin "
                             f"{self.origin!r}, views or keys {sorted(unknown)} (a declaration bug)")

    def key(self, view: str) -> str:
        return self.keys.get(view, self.name)

    @property
    def sqlite_type(self) -> str:
        """Its column type in a SQLite table (`SQLITE_TYPES`)."""
        return SQLITE_TYPES[self.type]

    @property
    def python_type(self) -> Any:
        """The annotation of its value (`float | None`, `list[str]`, …), e.g. for pydantic."""
        base: Any = JSON_TYPES[self.type]
        if self.items is not None:
            base = list[JSON_TYPES[self.items]]  # type: ignore[index]
        return base | None if self.nullable else base


def _views(*names: str) -> frozenset[str]:
    return frozenset(names)


ESCALATED = {"answer": "escalated", "body": "escalated", "header": "escalated",
             "log_line": "escalated", "log": "escalated"}
"""Beside an answer, `escalate` reads as the answer's past."""

FIELDS: tuple[Field, ...] = (
    # --- the decision: RouterDecision.values() ---------------------------------------------------
    Field("id", "string", "the question's id (the server's: the completion id)",
          _views("decision", "log"), keys={"log": "response_id"}),
    Field("p", "number", "P(answer correct) after the calibrator; null when unparsed or not finite",
          _views("decision", "text", "body", "header", "log_line", "span", "log"), nullable=True,
          unit="probability"),
    Field("raw", "number", "the network's own score before the calibrator", _views("log"),
          nullable=True, unit="probability"),
    Field("uncertainty", "number", "the auxiliary uncertainty head u; null when unscored",
          _views("decision", "log"), nullable=True),
    Field("tau", "number", "the threshold: a scored answer escalates when p < tau",
          _views("decision", "text", "body", "header", "log_line", "span", "log"),
          unit="probability"),
    Field("tau_source", "string", "where tau came from", ALL - {"answer"}, values=TAU_SOURCES),
    Field("escalate", "boolean", "the policy sent the answer to a debate",
          ALL, keys=ESCALATED),
    Field("outcome", "string", "why it was kept or escalated (the metrics' outcome)",
          _views("span", "metrics", "log"), values=OUTCOMES),
    Field("reasons", "array", "short human-readable reasons, the deciding one first",
          _views("decision", "text", "body", "header", "log"), items="string"),
    Field("parse_status", "string", "whether the self-critique could be parsed",
          _views("decision", "body", "span"), values=PARSE_STATUSES),
    Field("parse_error", "string", "why the self-critique could not be parsed",
          _views("decision"), nullable=True),
    Field("score_status", "string", "scored, unscored (unparsed) or non_finite (p withheld)",
          _views("decision", "span"), values=SCORE_STATUSES),
    Field("cues", "array", "the features that moved p most toward the decision",
          _views("decision"), items="object"),
    Field("features", "object", "every feature's value, by name; null when unscored",
          _views("log"), nullable=True),
    Field("ood_score", "number", "how unlike the router's training answers (the detector's "
          "distance); null without OOD statistics or a score", _views("decision", "text", "body",
          "span", "log"), nullable=True),
    Field("ood", "boolean", "ood_score is above the checkpoint's OOD threshold (or not finite)",
          ALL - {"answer"}, nullable=True),
    Field("ood_policy", "string", "what ood does: flag reports it, escalate debates it",
          _views("decision", "text", "body", "span", "log"), values=OOD_POLICIES),
    Field("would_escalate", "boolean", "in shadow mode, what the policy decided (the single "
          "answer was served, no debate ran); null outside shadow mode", ALL, nullable=True),
    # --- the answer: PipelineAnswer.values() -----------------------------------------------------
    Field("answer", "string", "the answer served", _views("answer"), origin="answer"),
    Field("source", "string", "which answer was served", _views("answer", "body", "header",
          "log_line", "log"), origin="answer", values=ANSWER_SOURCES, keys={"log": "served"}),
    Field("single_answer", "string", "the self-critique's answer; null when it failed",
          _views("log"), origin="answer", nullable=True),
    Field("debate_answer", "string", "the debate's answer; null when no debate answered",
          _views("log"), origin="answer", nullable=True),
    Field("error", "string", "a recorded non-fatal failure (e.g. the debate's)",
          _views("answer", "body", "log"), origin="answer", nullable=True),
    Field("llm_calls", "integer", "LLM calls made for the question", _views("answer", "body",
          "log_line"), origin="answer", unit="calls"),
    Field("upstream_model", "string", "the chat model behind the router", _views("body", "log"),
          origin="answer"),
    Field("prompt_tokens", "integer", "prompt tokens of every call", _views("answer", "log_line"),
          origin="answer", unit="tokens"),
    Field("completion_tokens", "integer", "completion tokens of every call",
          _views("answer", "log_line"), origin="answer", unit="tokens"),
    Field("total_tokens", "integer", "prompt plus completion tokens", _views("answer"),
          origin="answer", unit="tokens"),
    *(Field(f"{phase}_{kind}_tokens", "integer", f"{kind} tokens of the {phase} calls",
            _views("log"), origin="answer", unit="tokens")
      for phase in ("critique", "debate") for kind in ("prompt", "completion")),
    # --- the request: given by the server, the CLI or the decision log -------------------------------
    Field("backend", "string", "the debate back-end an escalation goes to",
          _views("text", "body", "header", "log_line", "log"), origin="request"),
    Field("served_model", "string", "the model name the client asked for (e.g. imad-svrmad-0.6)",
          _views("log"), origin="request"),
    Field("time", "number", "when the decision was made (UTC); the log's windows and --since "
          "read it", _views("log"), origin="request", unit="unix seconds"),
    Field("router_name", "string", "the checkpoint name of the router that scored the answer "
          "(after a hot reload, the one the request started on)", _views("body", "log_line", "log"),
          origin="request"),
    Field("router_version", "string", "the checkpoint's version, from its name (imad-router-v2.1 "
          "→ 2.1); null when the name has none", _views("body", "log"), origin="request",
          nullable=True),
    Field("router_hash", "string", "SHA-256 of the checkpoint's config.json (the weights' hash, "
          "the calibrator, τ): a recalibrated copy hashes differently",
          _views("body", "log_line", "log"), origin="request", nullable=True),
    Field("certificate", "string", "SHA-256 of the certificate the router's τ was certified under "
          "(imad calibrate --certify); null when τ is not certified", _views("body", "log"),
          origin="request", nullable=True),
    Field("router_weights", "string", "SHA-256 of the checkpoint's weights file, as its config.json "
          "records it (weights.sha256): the network that made the raw score, shared by copies that "
          "differ only in τ, calibrator or name", _views("log"), origin="request", nullable=True),
    Field("calibrator", "string", "the calibrator that made p from the raw score", _views("log"),
          origin="request"),
    Field("policy_rule", "string", "the threshold rule: fixed or budget", _views("log"),
          origin="request", values=("fixed", "budget")),
    Field("question_sha256", "string", "SHA-256 of the question text (the decision log keeps it "
          "instead of the text)", _views("log"), origin="request", nullable=True),
    Field("question", "string", "the question text; null unless the log keeps text (--log-text)",
          _views("log"), origin="request", nullable=True),
    Field("shadow_debate", "boolean", "the debate ran in shadow, after the response",
          _views("log"), origin="request"),
    Field("confidence_initial", "number", "the self-critique's verbal confidence in its initial "
          "answer, `confidence_initial` (the report card's baseline, as in training.evaluate); null "
          "when it failed", _views("log"), origin="request", nullable=True,
          unit="probability"),
    Field("host", "string", "the machine (host name) whose imad process wrote the row: with a "
          "log in PostgreSQL, which replica; null in rows of an older imad", _views("log"),
          origin="request", nullable=True),
    Field("process", "integer", "the id of the process that wrote the row, on its host",
          _views("log"), origin="request", nullable=True),
)

FIELD = {spec.name: spec for spec in FIELDS}
if len(FIELD) != len(FIELDS):
    raise ValueError("a decision field is declared twice")


def fields_of(view_name: str) -> tuple[Field, ...]:
    """The fields `view_name` carries, in declaration order (`KeyError` for an unknown view)."""
    if view_name not in VIEWS:
        raise KeyError(f"no decision view {view_name!r}; the views are {', '.join(VIEWS)}")
    return tuple(spec for spec in FIELDS if view_name in spec.views)


def keys_of(view_name: str) -> tuple[str, ...]:
    """The key of each of `view_name`'s fields there, in declaration order."""
    return tuple(spec.key(view_name) for spec in fields_of(view_name))


def names_from(origin: str) -> frozenset[str]:
    """The fields whose values `origin` gives (`ORIGINS`)."""
    return frozenset(spec.name for spec in FIELDS if spec.origin == origin)


def view(view_name: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """`view_name`'s dict from `values` (by field name); `KeyError` names a missing value."""
    try:
        return {spec.key(view_name): values[spec.name] for spec in fields_of(view_name)}
    except KeyError as error:
        raise KeyError(f"the {view_name} view needs the value of {error.args[0]!r}") from None


def pydantic_fields(view_name: str) -> dict[str, Any]:
    """(annotation, ...) by key for `pydantic.create_model`: every field required."""
    return {spec.key(view_name): (spec.python_type, ...) for spec in fields_of(view_name)}
