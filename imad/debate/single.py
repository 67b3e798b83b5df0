"""Single-model baselines: chain-of-thought and self-consistency.

CoT makes one call (argument, then answer); self-consistency samples k such answers at a
positive temperature and takes the majority vote. A seed response is already a CoT answer: CoT
returns it without a call, and self-consistency counts it as one of its k samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imad.constraints import Constraints, Integer
from imad.debate.base import (
    MAX_AGENTS,
    AgentConfig,
    Debate,
    DebateBackend,
    Verdict,
    agent_names,
    require,
)
from imad.debate.voting import majority_vote


@dataclass(frozen=True)
class CoTConfig(AgentConfig):
    """One call; greedy decoding by default."""

    temperature: float = 0.0


@dataclass(frozen=True)
class SelfConsistencyConfig(AgentConfig):
    """n_samples: k independent answers (sampled at `temperature`), then a majority vote."""

    n_samples: int = 5

    constraints: ClassVar[Constraints] = {"n_samples": Integer(1, MAX_AGENTS)}

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.n_samples == 1 or self.temperature > 0, "SelfConsistencyConfig.temperature",
                "must be > 0 when n_samples > 1, or every sample is the same")


class CoT(DebateBackend[CoTConfig]):
    """Chain-of-thought: one answer from one call."""

    name = "cot"

    def protocol(self, debate: Debate) -> Verdict:
        opening = self.open(debate)[0]
        if not opening.answer:
            debate.flag("no_answer")
        stop = "seed" if opening.from_seed else "single_call"
        details = {"confidence": opening.confidence, "argument": opening.argument}
        return Verdict(opening.answer, [{opening.agent: opening.answer}], stop, details)


class SelfConsistency(DebateBackend[SelfConsistencyConfig]):
    """k sampled answers, majority vote (ties: the earliest sample's answer)."""

    name = "self_consistency"

    def agents(self) -> tuple[str, ...]:
        return agent_names(self.config.n_samples)

    def protocol(self, debate: Debate) -> Verdict:
        answers = [o.answer for o in self.open(debate, role="sample")]
        final = majority_vote(answers)
        if not final:
            debate.flag("no_answer")
        return Verdict(final, [dict(zip(debate.agents, answers, strict=True))], "vote")
