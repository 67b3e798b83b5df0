"""The columns of the decision log: one row per decision (issue 32, SPEC §17).

The log's table is derived from a list of `LogColumn`s, never written out by hand: the store
builds its `CREATE TABLE`, its insert and its readers from the list, and the export and the
report read the same names. The list below is interim: once the one decision schema exists
(issue 33, `imad.decide`), its `log` view supplies the columns and this module keeps only
`LogColumn` and the codecs.

A codec says how a Python value travels into SQLite and back: `plain` as is, `bool` as 0/1,
`json` as JSON text (dicts and lists: reasons, features, tokens by phase).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from imad.jsonio import loads_untrusted

ID = "response_id"
"""The column holding the completion id: unique, what labels and feedback name."""
TIME = "time"
"""When the decision was made, unix seconds (UTC): windows, --since and pruning read it."""
MODEL = "served_model"
"""The served model name (the report's by-model rows, --model)."""
ESCALATED = "escalated"
"""True when the debate's answer was served."""
RAW = "raw"
"""The network's score before the calibrator (what a recalibration fits on)."""
SERVED = "served"
"""Which answer was served; "debate" for the debate's (a label then is about the debate)."""

CODECS = ("plain", "bool", "json")
SQLITE_TYPES = ("TEXT", "REAL", "INTEGER")


@dataclass(frozen=True)
class LogColumn:
    """One column of the decision table: its name, SQLite type, one-line meaning and codec."""

    name: str
    sqlite_type: str
    meaning: str
    codec: str = "plain"

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or not self.name.islower():
            raise ValueError(f"log column name {self.name!r} must be a lower-case identifier")
        if self.sqlite_type not in SQLITE_TYPES:
            raise ValueError(f"log column {self.name}: sqlite_type {self.sqlite_type!r} is not one "
                             f"of {SQLITE_TYPES}")
        if self.codec not in CODECS:
            raise ValueError(f"log column {self.name}: codec {self.codec!r} is not one of {CODECS}")

    def encode(self, value: Any) -> Any:
        """The value as SQLite stores it (None stays NULL)."""
        if value is None:
            return None
        if self.codec == "bool":
            return int(bool(value))
        if self.codec == "json":
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return value

    def decode(self, value: Any) -> Any:
        """The stored value back as the Python value it was written from (`UntrustedJSONError`
        for JSON text imad would not have written)."""
        if value is None:
            return None
        if self.codec == "bool":
            return bool(value)
        if self.codec == "json":  # a log file may come from anywhere: read it as untrusted
            return loads_untrusted(value, max_bytes=max(len(value), 1) * 4)
        return value


def _column(name: str, sqlite_type: str, meaning: str, codec: str = "plain") -> LogColumn:
    return LogColumn(name, sqlite_type, meaning, codec)


LOG_COLUMNS: tuple[LogColumn, ...] = (
    _column("response_id", "TEXT", "the completion id the response carried (unique)"),
    _column("p", "REAL", "P(answer correct) after calibration; NULL when not scored"),
    _column("raw", "REAL", "the network's score before calibration"),
    _column("uncertainty", "REAL", "the uncertainty head u"),
    _column("tau", "REAL", "the threshold τ the decision compared p with"),
    _column("tau_source", "TEXT", "where τ came from: checkpoint, request or budget"),
    _column("escalated", "INTEGER", "true when the policy sent the answer to a debate", "bool"),
    _column("outcome", "TEXT", "kept, below_tau, unparsed, non_finite or ood"),
    _column("reasons", "TEXT", "the decision's reasons, a JSON list of strings", "json"),
    _column("features", "TEXT", "the features, a JSON object name → value", "json"),
    _column("ood_score", "REAL", "how unlike the training rows the answer is"),
    _column("ood", "INTEGER", "true when ood_score is above the checkpoint's threshold", "bool"),
    _column("ood_policy", "TEXT", "what ood does: flag or escalate"),
    _column("served", "TEXT", "which answer was served: single_agent, debate, "
            "single_agent_fallback or none"),
    _column("single_answer", "TEXT", "the self-critique's answer"),
    _column("debate_answer", "TEXT", "the debate's answer, served or shadow; NULL without one"),
    _column("error", "TEXT", "a recorded non-fatal failure (e.g. the debate's)"),
    _column("upstream_model", "TEXT", "the chat model behind the router"),
    *(_column(f"{phase}_{kind}_tokens", "INTEGER", f"{kind} tokens of the {phase} calls")
      for phase in ("critique", "debate") for kind in ("prompt", "completion")),
    _column("backend", "TEXT", "the debate back-end an escalation goes to"),
    _column("served_model", "TEXT", "the served model name the request asked for"),
    _column("time", "REAL", "when the decision was made, unix seconds (UTC)"),
    _column("router_name", "TEXT", "the router checkpoint's name"),
    _column("router_version", "TEXT", "the router checkpoint's version"),
    _column("router_hash", "TEXT", "SHA-256 of the router's config (weights' hash, calibrator, τ)"),
    _column("calibrator", "TEXT", "the calibrator mapping the raw score to p"),
    _column("policy_rule", "TEXT", "the threshold rule: fixed or budget"),
    _column("would_escalate", "INTEGER", "in shadow mode, what the policy decided (the single "
            "answer was served anyway); NULL when it decided", "bool"),
    _column("question_sha256", "TEXT", "SHA-256 of the question text"),
    _column("question", "TEXT", "the question text (only with --log-text)"),
    _column("shadow_debate", "INTEGER", "true when the debate ran in shadow, after the response",
            "bool"),
    _column("confidence", "REAL", "the verbal confidence of the self-critique (the report's "
            "baseline)"),
)
"""The interim column list (issue 32 item 2), named as the decision schema's `log` view names
them (issue 33); `response_id` and `time` are required in every list."""

REQUIRED_COLUMNS = (ID, TIME)


def check_columns(columns: Sequence[LogColumn]) -> tuple[LogColumn, ...]:
    """The list as a tuple, or ValueError when a name repeats or `ID`/`TIME` is missing."""
    names = [column.name for column in columns]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"log columns named twice: {', '.join(repeated)}")
    missing = [name for name in REQUIRED_COLUMNS if name not in names]
    if missing:
        raise ValueError(f"log columns lack {', '.join(missing)}")
    return tuple(columns)
