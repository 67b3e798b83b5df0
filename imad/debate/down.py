"""DOWN, "Debate Only When Necessary" (Eo et al., 2025) — the confidence-gated baseline (SPEC §8).

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
from typing import Literal

from imad.critique.schema import CritiqueResponse
from imad.debate.base import (
    AgentConfig,
    DebateBackend,
    Opening,
    check_question,
    collect_openings,
    require,
    seed_from_opening,
)
from imad.debate.beliefs import option_distribution
from imad.debate.calls import CallRecorder
from imad.debate.result import DebateResult
from imad.question import Question

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

    def __post_init__(self) -> None:
        super().__post_init__()
        require(0.0 <= self.theta <= 1.0, "DOWNConfig.theta",
                f"must be in [0, 1], got {self.theta}")
        require(self.confidence_source in ("auto", "verbal", "answer_prob"),
                "DOWNConfig.confidence_source",
                f"must be 'auto', 'verbal' or 'answer_prob', got {self.confidence_source!r}")
        from imad.debate.registry import BACKENDS  # the registry imports this module

        require(self.debate_backend in BACKENDS and self.debate_backend != "down",
                "DOWNConfig.debate_backend", f"must be one of {sorted(set(BACKENDS) - {'down'})}, "
                f"got {self.debate_backend!r}")
        expected = BACKENDS[self.debate_backend][0]
        require(self.debate_config is None or isinstance(self.debate_config, expected),
                "DOWNConfig.debate_config", f"must be a {expected.__name__} for the "
                f"{self.debate_backend!r} back-end, got {type(self.debate_config).__name__}")


class DOWN(DebateBackend):
    """Keep a confident first answer; debate the rest."""

    name = "down"
    config_class = DOWNConfig
    config: DOWNConfig

    def run(self, question: Question,
            seed_response: CritiqueResponse | None = None) -> DebateResult:
        from imad.debate.registry import create_backend

        question = check_question(question)
        cfg = self.config
        recorder = CallRecorder(self.model)
        source = cfg.confidence_source
        if source == "auto":
            scorable = self.model.supports_logprobs and bool(question.answer_options)
            source = "answer_prob" if scorable else "verbal"
        opening = collect_openings(self, recorder, question, ["agent_0"], seed_response,
                                   logprobs=source == "answer_prob", top_logprobs=10)[0]
        confidence = self._confidence(opening, source, question, recorder)
        details = {"confidence": confidence, "confidence_source": source, "theta": cfg.theta}
        if confidence is not None and confidence > cfg.theta and opening.answer:
            return DebateResult(self.name, opening.answer, ({"agent_0": opening.answer},),
                                tuple(recorder.trace), "confident", tuple(recorder.flags), details)
        if confidence is None:
            recorder.flag("confidence_missing")
        seed = seed_from_opening(opening) if opening.answer else None
        debate = create_backend(cfg.debate_backend, self.model, cfg.debate_config)
        inner = debate.run(question, seed)
        details.update({"debate_backend": cfg.debate_backend, "debate": inner.details})
        flags = tuple(dict.fromkeys((*recorder.flags, *inner.flags)))
        return DebateResult(self.name, inner.final_answer, inner.rounds,
                            (*recorder.trace, *inner.trace), f"debated:{inner.stop_reason}",
                            flags, details)

    def _confidence(self, opening: Opening, source: str, question: Question,
                    recorder: CallRecorder) -> float | None:
        if source == "verbal" or opening.from_seed:
            return opening.confidence
        options = question.answer_options
        distribution = option_distribution(opening.token_logprobs, "answer", options)
        if distribution is None or opening.answer not in options:
            recorder.flag("answer_prob_unavailable")
            return opening.confidence
        return distribution[options.index(opening.answer)]
