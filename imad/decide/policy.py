"""The policy of score → calibrate → decide: a `RouterScore` becomes a `RouterDecision`.

A `Policy` is a threshold rule composed with an OOD policy. The rule says which τ decides an
answer and where that τ came from (`tau_source`): `FixedThreshold` (the checkpoint's τ or a
caller's) or `imad.TriggerBudget` (τ follows the traffic; it observes every answer, an unscored
one as unparsed). The OOD policy says what an unfamiliar answer does: "flag" reports it,
"escalate" also sends it to a debate. `Policy.decide` owns everything a decision says: τ's range
check, `tau_source` (set here, where τ is chosen, and never overwritten downstream), the
reasons, the cues reported, and the fail-safe: an unparsed answer, a score that is
not finite, and — under "escalate" — an OOD score that is not finite always escalate, with the
reason recorded.

`check_tau` (`imad.routing_options`, where the checkpoint's config reads it too) is the one range
check of τ in the runtime: the checkpoint's `threshold.tau`, a `FixedThreshold`, `imad ask
--tau`, `imad serve --tau`, a model-name suffix and every τ a rule returns go through it, so they
accept and refuse the same values with the same message. `chosen_threshold` is the one place
that picks "the request's τ, else the checkpoint's" (the pipeline, the CLI, the server and the
trigger budgets' warm-up τ use it).

The checkpoint's τ and OOD policy are data in its config; `checkpoint_policy(config)` turns them
into a policy, here and not in the Router, which only scores. Torch-free: nothing here imports
`imad.router`; what is read of the config is the protocol `StoredRouting`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Protocol, runtime_checkable

from imad.constraints import (
    Boolean,
    Constraints,
    InstanceOf,
    Integer,
    Options,
    check_fields,
    check_value,
)
from imad.decide.decision import (
    RouterDecision,
    non_finite_decision,
    ood_reason,
    threshold_reason,
    unparsed_decision,
)
from imad.decide.schema import PARSED, TAU_SOURCES
from imad.decide.score import RouterScore
from imad.errors import ConfigError
from imad.routing_options import OOD_POLICIES, TAU, check_tau

MIN_CUE_DELTA = 0.005
"""A cue is reported only if it moves p by at least this much."""

DEFAULT_MAX_CUES = 3
MAX_CUES_LIMIT = 1000
"""More cues than features are never reported; this bounds a hostile `max_cues`."""

FIXED_TAU_SOURCES = ("checkpoint", "request")
"""Where a fixed τ can come from; a trigger budget's τ is the third source, "budget"."""


FIXED_SOURCE = Options(*FIXED_TAU_SOURCES)


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


class StoredThreshold(Protocol):
    """A checkpoint's stored τ and how it was chosen (`imad.router.config.Threshold`)."""

    @property
    def tau(self) -> float: ...

    @property
    def method(self) -> str: ...


class StoredRouting(Protocol):
    """What deciding reads of a checkpoint's config (`imad.router.RouterConfig` is one): its
    name, stored τ, stored OOD policy, and whether it holds OOD statistics."""

    @property
    def name(self) -> str: ...

    @property
    def threshold(self) -> StoredThreshold: ...

    @property
    def ood_policy(self) -> str: ...

    @property
    def ood(self) -> Mapping[str, Any] | None: ...


RULE = InstanceOf(ThresholdRule, "a threshold rule (imad.FixedThreshold or imad.TriggerBudget)")


@dataclass(frozen=True, eq=False)
class Policy:
    """Turns a `RouterScore` into a keep/escalate `RouterDecision` (module docstring).

    `Policy(FixedThreshold(0.6), ood_policy="escalate")`, `Policy(imad.TriggerBudget(0.2))`;
    `checkpoint_policy(router.config)` is the checkpoint's. `max_cues`: how many feature cues a decision
    reports (those that moved p most toward it)."""

    rule: ThresholdRule
    ood_policy: str = "flag"
    max_cues: int = DEFAULT_MAX_CUES
    shadow: bool = False
    """Observe only: decide as usual, record the verdict in `would_escalate`, and
    keep the answer (`shadow_decision`)."""
    escalate_all: str | None = None
    """The reason every answer escalates (a server whose router's certificate is violated,
    `imad serve --on-violation escalate-all`); None decides by τ. Applied before shadow mode,
    so a shadow policy records it as a would-escalate."""

    constraints: ClassVar[Constraints] = {
        "rule": RULE,
        "ood_policy": Options(*OOD_POLICIES),
        "max_cues": Integer(0, MAX_CUES_LIMIT),
        "shadow": Boolean(),
        "escalate_all": (None, InstanceOf(str, "a reason (a string)")),
    }

    def __post_init__(self) -> None:
        check_fields(self, label=str)

    def check_router(self, name: str, *, has_ood_statistics: bool) -> None:
        """Refuse a router (named `name`) this policy cannot follow: "escalate" needs OOD
        statistics. Takes what it reads, not the router, so deciding never imports torch."""
        if self.ood_policy == "escalate" and not has_ood_statistics:
            raise ConfigError("ood_policy", f"'escalate' needs OOD statistics, which router "
                                            f"{name!r} lacks; add them with `python -m "
                                            "training.export --add-ood ROUTER`")

    def decide(self, score: RouterScore) -> RouterDecision:
        """Keep the answer (p ≥ τ, and not escalated as unfamiliar) or escalate it, with reasons;
        in shadow mode the verdict is recorded and the answer kept (`shadow_decision`)."""
        if not isinstance(score, RouterScore):  # an AttributeError from deep inside before
            raise ConfigError("score", f"expected an imad.decide.RouterScore (a router's score of "
                              f"one answer), got {type(score).__name__}")
        decision = self._decide(score)
        if self.escalate_all is not None:
            decision = escalate_anyway(decision, self.escalate_all)
        return shadow_decision(decision) if self.shadow else decision

    def _decide(self, score: RouterScore) -> RouterDecision:
        if score.parse_status != PARSED or not score.scored:
            tau, source = self._threshold(None)
            if score.parse_status != PARSED:
                unscored = unparsed_decision(score.id, tau, score.parse_error or "no response")
            else:
                seen = score.raw if score.p is None else score.p
                unscored = non_finite_decision(score.id, tau, seen, score.uncertainty)
            return replace(unscored, tau_source=source, ood_policy=self.ood_policy, score=score)
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
            score=score,
        )

    def _threshold(self, p: float | None) -> tuple[float, str]:
        """The rule's τ for this answer, range-checked, and its source."""
        tau, source = self.rule.threshold_for(p)
        check_value(source, Options(*TAU_SOURCES), "tau_source",
                    advice=f"the rule {type(self.rule).__name__} gave it")
        return check_tau(tau), source


def shadow_decision(decision: RouterDecision) -> RouterDecision:
    """`decision` observed, not acted on: `would_escalate` holds its verdict and a parsed answer
    is kept (served, no debate), with a reason saying so. An unparsed self-critique has no
    answer to serve, so it still escalates (the fail-safe, SPEC §13)."""
    if decision.parse_status != PARSED:
        return replace(decision, would_escalate=True)
    if not decision.escalate:
        return replace(decision, would_escalate=False)
    return replace(decision, escalate=False, would_escalate=True,
                   reasons=(*decision.reasons, "shadow mode: would escalate; the single answer "
                                               "is served and no debate runs"))


def escalate_anyway(decision: RouterDecision, reason: str) -> RouterDecision:
    """`decision`, escalated whatever p says, with `reason` last (outcome `certificate_violated`)."""
    return replace(decision, escalate=True, reasons=(*decision.reasons, reason))


def checkpoint_threshold(config: StoredRouting) -> FixedThreshold:
    """The τ stored in a router's checkpoint config, as a rule (source "checkpoint")."""
    return FixedThreshold(config.threshold.tau, source="checkpoint", method=config.threshold.method)


def checkpoint_policy(config: StoredRouting) -> Policy:
    """The policy a checkpoint's config describes: its stored τ (`FixedThreshold`, source
    "checkpoint") and its stored OOD policy. The config is data; this is where it decides."""
    return Policy(checkpoint_threshold(config), ood_policy=config.ood_policy)


def chosen_threshold(config: StoredRouting, tau: float | None, *,
                     method: str = "set for this request (--tau)") -> FixedThreshold:
    """The request's τ when given (source "request"), else the checkpoint's."""
    if tau is None:
        return checkpoint_threshold(config)
    return FixedThreshold(tau, source="request", method=method)


def choose_policy(config: StoredRouting, *, tau: float | None = None,
                  rule: ThresholdRule | None = None, ood_policy: str | None = None,
                  shadow: bool = False, escalate_all: str | None = None) -> Policy:
    """The policy of one pipeline or request: `rule` (e.g. a trigger budget) when given, else the
    request's τ, else the checkpoint's; `ood_policy` when given, else the checkpoint's. Checked
    against the router's config (`Policy.check_router`)."""
    if rule is None:
        rule = chosen_threshold(config, tau)
    policy = Policy(rule, ood_policy=config.ood_policy if ood_policy is None else ood_policy,
                    shadow=shadow, escalate_all=escalate_all)
    policy.check_router(config.name, has_ood_statistics=config.ood is not None)
    return policy


def as_policy(config: StoredRouting, policy: Policy | ThresholdRule | None) -> Policy:
    """`policy` itself, a bare rule with the checkpoint's OOD policy, or (None) the checkpoint's."""
    policy = check_value(policy, (InstanceOf(Policy, "an imad.decide.Policy"), RULE, None), "policy")
    if isinstance(policy, Policy):
        policy.check_router(config.name, has_ood_statistics=config.ood is not None)
        return policy
    return choose_policy(config, rule=policy)
