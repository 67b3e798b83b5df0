"""Choose the router's threshold τ and write it into a new checkpoint version.

Used by `imad calibrate` (validation answers from corpus files) and `python -m
training.calibrate` (the router's own validation split, which needs the training code). Two ways
to say what τ should achieve:
- a target trigger rate R: the share of questions escalated to a debate;
- a token budget B (expected tokens per question): with S tokens per self-critique call and D
  extra tokens per debate, a question costs S + r·D on average, so R = (B − S) / D.

Unparsed answers always escalate, so they count as triggered and use up part of R. τ escalates
the largest share of questions that does not exceed R: with the scores sorted,
p_(1) ≤ … ≤ p_(n), escalating the k lowest (p < τ) means p_(k) < τ ≤ p_(k+1), and τ is the
midpoint of that gap (ties can make a rate unreachable; then the next lower one is taken). The
result is saved as a new checkpoint (`imad.router.versions`: `my-router-v1` → `my-router-v1.1`,
`imad-router-v2` → `./imad-router-v2-local.1`, or `--out`) whose
config.json records τ, the method in words, and every number it was chosen from.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from imad.constraints import Constraints, Real, check_fields, check_value
from imad.errors import ConfigError, DatasetError
from imad.router.escalation import refuse_tied_target
from imad.router.registry import resolve_checkpoint
from imad.router.router import Router
from imad.router.versions import (
    CalibrationResult,
    ThresholdChoice,
    new_checkpoint_path,
    next_version_path,
    save_version,
)
from imad.routing_options import TRIGGER_RATE

__all__ = ["CalibrationResult", "CalibrationTarget", "ThresholdChoice", "ValidationSet",
           "calibrate_router", "check_rate", "describe_choice", "new_checkpoint_path",
           "next_version_path", "rate_for_token_budget", "tau_for_trigger_rate"]

TAU_MARGIN = 1e-6
"""τ is kept within [TAU_MARGIN, 1 − TAU_MARGIN]: a checkpoint's τ must lie in (0, 1)."""
MAX_TOKENS = 1e7
"""Bound on a token count per question or per debate: ten million tokens is no real budget."""

TOKENS = Real(0.0, MAX_TOKENS, closed="neither")
TARGET_ROWS = {"target_rate": TRIGGER_RATE, "token_budget": TOKENS, "debate_tokens": TOKENS,
               "single_tokens": TOKENS}
"""What each `CalibrationTarget` field holds when given (a flag's text is read by it)."""
FLAGS = {"target_rate": "--target-trigger-rate", "token_budget": "--token-budget",
         "debate_tokens": "--debate-tokens", "single_tokens": "--single-tokens"}
"""The `imad calibrate` flag of each `CalibrationTarget` field."""


def target_flag(name: str) -> str:
    """`field (--flag)`, how a calibration target's errors name a field."""
    return f"{name} ({FLAGS[name]})"


@dataclass(frozen=True)
class CalibrationTarget:
    """What τ should achieve (module docstring): a target trigger rate, or a token budget per
    question with the extra tokens of one debate (and of one self-critique call: None, the
    validation corpus's mean)."""

    target_rate: float | None = None
    token_budget: float | None = None
    debate_tokens: float | None = None
    single_tokens: float | None = None

    constraints: ClassVar[Constraints] = {name: (None, row) for name, row in TARGET_ROWS.items()}

    def __post_init__(self) -> None:
        check_fields(self, label=target_flag)
        if (self.target_rate is None) == (self.token_budget is None):
            raise ConfigError("target", "give exactly one of --target-trigger-rate and --token-budget")
        if self.token_budget is not None and self.debate_tokens is None:
            raise ConfigError(target_flag("debate_tokens"), "a token budget needs the extra tokens "
                              "one debate costs (e.g. --debate-tokens 4000)")


@dataclass(frozen=True)
class ValidationSet:
    """The router's scores on labelled validation answers, and where they came from."""

    p: np.ndarray
    labels: np.ndarray
    unparsed: int
    source: dict[str, Any]
    mean_call_tokens: float | None = None
    """Mean prompt + completion tokens of one self-critique call (None when not recorded)."""

    @property
    def traffic(self) -> str:
        """What the answers are, in words: "logged decisions" or "validation answers"."""
        return answers_in_words(self.source)


def answers_in_words(source: dict[str, Any]) -> str:
    """What a validation source's answers are, as a report names them."""
    return "logged decisions" if source.get("kind") == "decision log" else "validation answers"


def tau_for_trigger_rate(p: np.ndarray, labels: np.ndarray, rate: float,
                         unparsed: int = 0) -> ThresholdChoice:
    """The τ that escalates the largest share ≤ `rate` of the questions (module docstring)."""
    rate = check_rate(rate)
    scores = np.sort(np.asarray(p, dtype=np.float64).reshape(-1))
    questions = scores.size + unparsed
    if scores.size == 0:
        raise DatasetError("the validation corpus has no parsed answers to choose τ on")
    allowed = math.floor(rate * questions + 1e-9) - unparsed
    if allowed < 0:
        raise DatasetError(f"{unparsed} of {questions} validation answers are unparsed and always "
                           f"escalate ({unparsed / questions:.1%}), more than the target rate "
                           f"{rate:.1%}")
    wanted = k = min(allowed, scores.size)
    while 0 < k < scores.size and scores[k - 1] == scores[k]:
        k -= 1  # ties: τ cannot split equal scores, take the next lower reachable count
    lower = scores[k - 1] if k > 0 else 0.0
    upper = scores[k] if k < scores.size else 1.0
    tau = float(min(max((lower + upper) / 2.0, TAU_MARGIN), 1.0 - TAU_MARGIN))
    probabilities = np.asarray(p, dtype=np.float64).reshape(-1)
    kept = probabilities >= tau
    escalated = unparsed + int((~kept).sum())
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    kept_labels = y[kept][~np.isnan(y[kept])]  # NaN: unlabelled (a decision log's traffic)
    return ThresholdChoice(
        tau=tau, target_rate=rate, achieved_rate=escalated / questions, escalated=escalated,
        questions=questions, unparsed=unparsed,
        kept_accuracy=float(kept_labels.mean()) if kept_labels.size else None, tied_short=wanted - k,
    )


def check_rate(rate: float) -> float:
    """`rate` as a float strictly between 0 and 1 (its `CalibrationTarget` row)."""
    return check_value(rate, TRIGGER_RATE, target_flag("target_rate"))


def rate_for_token_budget(budget: float, single_tokens: float, debate_tokens: float) -> float:
    """R = (B − S) / D: the trigger rate a budget of B tokens per question allows."""
    check_value(debate_tokens, TOKENS, target_flag("debate_tokens"))
    check_value(single_tokens, TOKENS, target_flag("single_tokens"))
    rate = (budget - single_tokens) / debate_tokens
    if not 0.0 < rate < 1.0:
        raise ConfigError(
            "token budget (--token-budget)",
            f"{budget:g} tokens per question with {single_tokens:g} per self-critique and "
            f"{debate_tokens:g} per debate gives a trigger rate of {rate:.3g}; the budget must lie "
            f"strictly between {single_tokens:g} (never debate) and {single_tokens + debate_tokens:g} "
            "(always debate)")
    return rate


def calibrate_router(router_path: str | Path | None, validation: Callable[[Router], ValidationSet], *,
                     target_rate: float | None = None, token_budget: float | None = None,
                     debate_tokens: float | None = None, single_tokens: float | None = None,
                     out: str | Path | None = None, overwrite: bool = False,
                     allow_extreme: bool = False) -> CalibrationResult:
    """Choose τ (by rate or budget) on `validation(router)`, save a new checkpoint version, and
    reload it to check. `router_path` is a shipped name or a directory (None: the default).
    A rate that tied scores miss by more than `TIE_SHORTFALL` is an `ExtremeRateError` unless
    `allow_extreme` (`imad.router.escalation`)."""
    target = CalibrationTarget(target_rate, token_budget, debate_tokens, single_tokens)
    target_rate, token_budget = target.target_rate, target.token_budget
    debate_tokens, single_tokens = target.debate_tokens, target.single_tokens
    source_path = resolve_checkpoint(router_path)
    router = Router.load(source_path)
    destination = new_checkpoint_path(source_path, out, overwrite)
    scores = validation(router)
    budget: dict[str, Any] | None = None
    if token_budget is not None:
        single = single_tokens if single_tokens is not None else scores.mean_call_tokens
        if single is None:
            raise DatasetError("no corpus records to measure the self-critique's token cost; pass "
                               "--single-tokens")
        target_rate = rate_for_token_budget(token_budget, single, float(debate_tokens))
        budget = {"tokens_per_question": token_budget, "single_call_tokens": single,
                  "single_call_tokens_source": "given" if single_tokens is not None else
                  "mean of the corpus records", "debate_tokens": debate_tokens}
    choice = tau_for_trigger_rate(scores.p, scores.labels, float(target_rate), scores.unparsed)
    refuse_tied_target(choice.target_rate, choice.achieved_rate, choice.tied_short,
                       choice.questions, scores.p, allow=allow_extreme)
    method = describe_choice(choice, budget, scores.source)
    record = {"method": method, "choice": asdict(choice), "token_budget": budget,
              "validation": scores.source,
              "parent": {"name": router.name, "path": str(source_path), "tau": router.config.threshold.tau,
                         "tau_method": router.config.threshold.method}}
    sections: dict[str, Any] = {"calibration": record}
    metrics = router.config.record.metrics
    if metrics is not None:  # they stay as measured, at the threshold of that time
        sections["metrics"] = metrics.measured_at(router.config.threshold.tau)
    reloaded = save_version(router, router.config.with_threshold(choice.tau, method).with_record(
        **sections), destination, lambda written: written.config.threshold.tau == choice.tau, "τ")
    return CalibrationResult(destination, reloaded, record, choice=choice)


def describe_choice(choice: ThresholdChoice, budget: dict[str, Any] | None,
                    source: dict[str, Any]) -> str:
    """The one-line `threshold.method` written into config.json."""
    why = f"target trigger rate {choice.target_rate:.4g}"
    if budget is not None:
        why += (f" from a budget of {budget['tokens_per_question']:g} tokens/question "
                f"({budget['single_call_tokens']:.0f} per self-critique + "
                f"{budget['debate_tokens']:g} per debate)")
    reached = ("the largest share not above the target" if choice.achieved_rate <= choice.target_rate
               else "the smallest share reachable (the lowest scores are tied at 0)")
    return (f"chosen by imad calibrate for a {why} on {choice.questions} {answers_in_words(source)} "
            f"({source['kind']}, {choice.unparsed} unparsed): escalates {choice.escalated}/"
            f"{choice.questions} = {choice.achieved_rate:.4g}, {reached}; τ is the midpoint "
            "between neighbouring scores")
