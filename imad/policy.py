"""The policy of score → calibrate → decide: a `RouterScore` becomes a `RouterDecision` (SPEC §14).

A `Policy` is a threshold rule composed with an OOD policy. The rule says which τ decides an
answer and where that τ came from (`tau_source`): `FixedThreshold` (the checkpoint's τ or a
caller's) or `imad.TriggerBudget` (τ follows the traffic; it observes every answer, an unscored
one as unparsed). The OOD policy says what an unfamiliar answer does: "flag" reports it,
"escalate" also sends it to a debate. `Policy.decide` owns everything a decision says: τ's range
check, `tau_source` (set here, where τ is chosen, and never overwritten downstream), the
reasons, the cues reported, and the fail-safe (SPEC §13): an unparsed answer, a score that is
not finite, and — under "escalate" — an OOD score that is not finite always escalate, with the
reason recorded.

`check_tau` is the one range check of τ in the runtime: the checkpoint's `threshold.tau`, a
`FixedThreshold`, `imad ask --tau`, `imad serve --tau`, a model-name suffix and every τ a rule
returns go through it, so they accept and refuse the same values with the same message.
`chosen_threshold` is the one place that picks "the request's τ, else the checkpoint's" (the
pipeline, the CLI, the server and the trigger budgets' warm-up τ use it).

Importable without torch (the server's settings and model names need it before a model loads):
the router's modules are imported when a policy first decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from imad.constraints import Constraints, InstanceOf, Integer, Options, Real, check_fields, check_value
from imad.errors import ConfigError
from imad.routing_options import OOD_POLICIES

if TYPE_CHECKING:
    from imad.router import Router, RouterDecision
    from imad.router.score import RouterScore

MIN_CUE_DELTA = 0.005
"""A cue is reported only if it moves p by at least this much."""

DEFAULT_MAX_CUES = 3
MAX_CUES_LIMIT = 1000
"""More cues than features are never reported; this bounds a hostile `max_cues`."""

FIXED_TAU_SOURCES = ("checkpoint", "request")
"""Where a fixed τ can come from; a trigger budget's τ is the third source, "budget"."""


@dataclass(frozen=True)
class Tau(Real):
    """τ's row in a constraints table: a finite number in [0, 1] (0: never escalate a scored
    answer, 1: always escalate), stored as a float; booleans, strings and integers too large for
    a float are refused."""

    low: float = 0.0
    high: float = 1.0

    def __str__(self) -> str:
        return "a number in [0, 1]"


TAU = Tau()
FIXED_SOURCE = Options(*FIXED_TAU_SOURCES)


def check_tau(value: object, field: str = "tau") -> float:
    """`value` as a float τ (`Tau`), or a `ConfigError` naming `field` (a CLI passes its flag,
    e.g. "--tau")."""
    return check_value(value, TAU, field)


@dataclass(frozen=True)
class FixedThreshold:
    """Escalate a scored answer when p < `tau`; `source` says where τ was chosen.

    `FixedThreshold(0.6)` is a caller's own τ (source "request"); a checkpoint's τ is
    `FixedThreshold(tau, source="checkpoint")`."""

    tau: float
    source: str = "request"
    method: str = "set by the caller"

    constraints: ClassVar[Constraints] = {
        "tau": TAU,
        "source": FIXED_SOURCE,
        "method": InstanceOf(str, "a string saying how τ was chosen"),
    }

    def __post_init__(self) -> None:
        check_fields(self, label=lambda name: "tau_source" if name == "source" else name)

    def threshold_for(self, p: float | None) -> tuple[float, str]:
        """τ and its source for an answer scored `p` (None: unscored): always this τ."""
        return self.tau, self.source


@runtime_checkable
class ThresholdRule(Protocol):
    """What a policy asks a threshold rule: τ for this answer and where it came from
    ("checkpoint", "request" or "budget"). An unscored answer is passed as None (a trigger
    budget counts it as unparsed)."""

    def threshold_for(self, p: float | None) -> tuple[float, str]: ...


RULE = InstanceOf(ThresholdRule, "a threshold rule (imad.FixedThreshold or imad.TriggerBudget)")


@dataclass(frozen=True, eq=False)
class Policy:
    """Turns a `RouterScore` into a keep/escalate `RouterDecision` (module docstring).

    `Policy(FixedThreshold(0.6), ood_policy="escalate")`, `Policy(imad.TriggerBudget(0.2))`;
    `router.default_policy()` is the checkpoint's. `max_cues`: how many feature cues a decision
    reports (those that moved p most toward it)."""

    rule: ThresholdRule
    ood_policy: str = "flag"
    max_cues: int = DEFAULT_MAX_CUES

    constraints: ClassVar[Constraints] = {
        "rule": RULE,
        "ood_policy": Options(*OOD_POLICIES),
        "max_cues": Integer(0, MAX_CUES_LIMIT),
    }

    def __post_init__(self) -> None:
        check_fields(self, label=str)

    def check_router(self, router: Router) -> None:
        """Refuse a router this policy cannot follow: "escalate" needs OOD statistics."""
        if self.ood_policy == "escalate" and router.ood_detector is None:
            raise ConfigError("ood_policy", f"'escalate' needs OOD statistics, which router "
                                            f"{router.name!r} lacks; add them with `python -m "
                                            "training.export --add-ood ROUTER`")

    def decide(self, score: RouterScore) -> RouterDecision:
        """Keep the answer (p ≥ τ, and not escalated as unfamiliar) or escalate it, with reasons."""
        from dataclasses import replace

        from imad.router.decision import (  # lazy: imad.router loads torch
            PARSED,
            RouterDecision,
            non_finite_decision,
            ood_reason,
            threshold_reason,
            unparsed_decision,
        )

        if score.parse_status != PARSED or not score.scored:
            tau, source = self._threshold(None)
            if score.parse_status != PARSED:
                unscored = unparsed_decision(score.id, tau, score.parse_error or "no response")
            else:
                seen = score.raw if score.p is None else score.p
                unscored = non_finite_decision(score.id, tau, seen, score.uncertainty)
            return replace(unscored, tau_source=source, ood_policy=self.ood_policy)
        p = float(score.p)  # type: ignore[arg-type]  # scored: a finite number
        tau, source = self._threshold(p)
        below_tau = p < tau
        escalate = below_tau or (score.ood is True and self.ood_policy == "escalate")
        # Cues that pushed p toward the decision: down when escalating, up when keeping.
        sign = -1.0 if below_tau else 1.0
        ranked = sorted(
            (cue for cue in score.cues if sign * cue.delta_p >= MIN_CUE_DELTA),
            key=lambda cue: (-abs(cue.delta_p), cue.feature),
        )[:self.max_cues]
        reasons = [threshold_reason(p, tau), *(cue.describe() for cue in ranked)]
        if score.ood:
            reasons.insert(1, ood_reason(score.ood_score, score.ood_threshold, self.ood_policy,
                                         escalate and not below_tau))
        return RouterDecision(
            id=score.id, p=p, tau=tau, escalate=escalate, reasons=tuple(reasons),
            parse_status=PARSED, uncertainty=score.uncertainty, cues=tuple(ranked),
            tau_source=source, ood_score=score.ood_score, ood=score.ood, ood_policy=self.ood_policy,
        )

    def _threshold(self, p: float | None) -> tuple[float, str]:
        """The rule's τ for this answer, range-checked, and its source."""
        from imad.router.decision import TAU_SOURCES

        tau, source = self.rule.threshold_for(p)
        check_value(source, Options(*TAU_SOURCES), "tau_source",
                    advice=f"the rule {type(self.rule).__name__} gave it")
        return check_tau(tau), source


def checkpoint_threshold(router: Router) -> FixedThreshold:
    """The τ stored in the router's checkpoint, as a rule (source "checkpoint")."""
    return FixedThreshold(router.config.threshold.tau, source="checkpoint",
                          method=router.config.threshold.method)


def chosen_threshold(router: Router, tau: float | None, *,
                     method: str = "set for this request (--tau)") -> FixedThreshold:
    """The request's τ when given (source "request"), else the checkpoint's."""
    if tau is None:
        return checkpoint_threshold(router)
    return FixedThreshold(tau, source="request", method=method)


def choose_policy(router: Router, *, tau: float | None = None, rule: ThresholdRule | None = None,
                  ood_policy: str | None = None) -> Policy:
    """The policy of one pipeline or request: `rule` (e.g. a trigger budget) when given, else the
    request's τ, else the checkpoint's; `ood_policy` when given, else the checkpoint's. Checked
    against the router (`Policy.check_router`)."""
    if rule is None:
        rule = chosen_threshold(router, tau)
    policy = Policy(rule, ood_policy=router.config.ood_policy if ood_policy is None else ood_policy)
    policy.check_router(router)
    return policy


def as_policy(router: Router, policy: Policy | ThresholdRule | None) -> Policy:
    """`policy` itself, a bare rule with the checkpoint's OOD policy, or (None) the checkpoint's."""
    policy = check_value(policy, (InstanceOf(Policy, "an imad.policy.Policy"), RULE, None), "policy")
    if isinstance(policy, Policy):
        policy.check_router(router)
        return policy
    return choose_policy(router, rule=policy)

