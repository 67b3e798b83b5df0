"""DOWN, "Debate Only When Necessary" (Eo et al., 2025) — the confidence-gated baseline.

One answer first (the seed response when given, else one call). If its confidence is above θ
(0.8) it is kept; otherwise a debate back-end (all-to-all MAD by default) runs with that answer
as agent 0's opening, so it is not paid for twice. The confidence is the verbal one, or — config
`confidence_source="answer_prob"` with a back-end that returns log-probs — the probability the
model gave its answer option (see `imad.debate.beliefs.option_distribution`). A missing
confidence counts as not confident (flagged). This is what the iMAD router replaces with a
trained predictor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from imad.constraints import Constraints, InstanceOf, Options, Real
from imad.debate.base import AgentConfig, Debate, DebateBackend, Verdict, require
from imad.debate.beliefs import option_distribution
from imad.debate.openings import Opening, seed_from_opening
from imad.debate.protocols import PROTOCOLS

ConfidenceSource = Literal["auto", "verbal", "answer_prob"]


@dataclass(frozen=True)
class DOWNConfig(AgentConfig):
    """theta: θ, debate when confidence ≤ θ (0.8). confidence_source: "auto" (answer_prob when
    the model has log-probs and the question has options, else verbal) | "verbal" |
    "answer_prob". debate_backend / debate_config: the back-end run when unsure (default MAD
    with its own defaults)."""

    temperature: float = 0.0
    theta: float = 0.8
    confidence_source: ConfidenceSource = "auto"
    debate_backend: str = "mad"
    debate_config: AgentConfig | None = None

    constraints: ClassVar[Constraints] = {
        "theta": Real(0.0, 1.0),
        "confidence_source": Options("auto", "verbal", "answer_prob"),
        "debate_backend": Options(*sorted(PROTOCOLS)),
        "debate_config": (None, InstanceOf(AgentConfig)),
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        expected = PROTOCOLS[self.debate_backend][0]
        require(self.debate_config is None or isinstance(self.debate_config, expected),
                "DOWNConfig.debate_config", f"must be a {expected.__name__} for the "
                f"{self.debate_backend!r} back-end, got {type(self.debate_config).__name__}")


class DOWN(DebateBackend[DOWNConfig]):
    """Keep a confident first answer; debate the rest."""

    name = "down"

    def protocol(self, debate: Debate) -> Verdict:
        cfg = self.config
        source = cfg.confidence_source
        if source == "auto":
            scorable = self.model.supports_logprobs and bool(debate.question.answer_options)
            source = "answer_prob" if scorable else "verbal"
        opening = self.open(debate, logprobs=source == "answer_prob", top_logprobs=10)[0]
        confidence = self._confidence(opening, source, debate)
        details = {"confidence": confidence, "confidence_source": source, "theta": cfg.theta}
        if confidence is not None and confidence > cfg.theta and opening.answer:
            return Verdict(opening.answer, [{opening.agent: opening.answer}], "confident", details)
        if confidence is None:
            debate.flag("confidence_missing")
        seed = seed_from_opening(opening) if opening.answer else None
        backend_class = PROTOCOLS[cfg.debate_backend][1]
        inner = backend_class(self.model, cfg.debate_config).run(debate.question, seed)
        debate.recorder.absorb(inner.trace, inner.flags)
        details.update({"debate_backend": cfg.debate_backend, "debate": inner.details})
        return Verdict(inner.final_answer, inner.rounds, f"debated:{inner.stop_reason}", details)

    def _confidence(self, opening: Opening, source: str, debate: Debate) -> float | None:
        if source == "verbal" or opening.from_seed:
            return opening.confidence
        options = debate.question.answer_options
        distribution = option_distribution(opening.token_logprobs, "answer", options)
        if distribution is None or opening.answer not in options:
            debate.flag("answer_prob_unavailable")
            return opening.confidence
        return distribution[options.index(opening.answer)]
