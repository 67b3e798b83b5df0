"""Single-model baselines (SPEC §8, §10): chain-of-thought and self-consistency.

CoT makes one call (argument, then answer); self-consistency samples k such answers at a
positive temperature and takes the majority vote. A seed response is already a CoT answer: CoT
returns it without a call, and self-consistency counts it as one of its k samples.
"""

from __future__ import annotations

from dataclasses import dataclass

from imad.critique.schema import CritiqueResponse
from imad.debate.base import (
    AgentConfig,
    DebateBackend,
    agent_names,
    check_question,
    collect_openings,
    require,
)
from imad.debate.calls import CallRecorder
from imad.debate.result import DebateResult
from imad.debate.voting import majority_vote
from imad.question import Question


@dataclass(frozen=True)
class CoTConfig(AgentConfig):
    """One call; greedy decoding by default."""

    temperature: float = 0.0


@dataclass(frozen=True)
class SelfConsistencyConfig(AgentConfig):
    """n_samples: k independent answers (sampled at `temperature`), then a majority vote."""

    n_samples: int = 5

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.n_samples >= 1, "SelfConsistencyConfig.n_samples",
                f"must be >= 1, got {self.n_samples}")
        require(self.n_samples == 1 or self.temperature > 0, "SelfConsistencyConfig.temperature",
                "must be > 0 when n_samples > 1, or every sample is the same")


class CoT(DebateBackend):
    """Chain-of-thought: one answer from one call."""

    name = "cot"
    config_class = CoTConfig

    def run(self, question: Question,
            seed_response: CritiqueResponse | None = None) -> DebateResult:
        question = check_question(question)
        recorder = CallRecorder(self.model)
        opening = collect_openings(self, recorder, question, ["agent_0"], seed_response)[0]
        if not opening.answer:
            recorder.flag("no_answer")
        stop = "seed" if opening.from_seed else "single_call"
        details = {"confidence": opening.confidence, "argument": opening.argument}
        return DebateResult(self.name, opening.answer, ({"agent_0": opening.answer},),
                            tuple(recorder.trace), stop, tuple(recorder.flags), details)


class SelfConsistency(DebateBackend):
    """k sampled answers, majority vote (ties: the earliest sample's answer)."""

    name = "self_consistency"
    config_class = SelfConsistencyConfig
    config: SelfConsistencyConfig

    def run(self, question: Question,
            seed_response: CritiqueResponse | None = None) -> DebateResult:
        question = check_question(question)
        recorder = CallRecorder(self.model)
        agents = agent_names(self.config.n_samples)
        openings = collect_openings(self, recorder, question, agents, seed_response, role="sample")
        answers = [o.answer for o in openings]
        final = majority_vote(answers)
        if not final:
            recorder.flag("no_answer")
        rounds = (dict(zip(agents, answers, strict=True)),)
        return DebateResult(self.name, final, rounds, tuple(recorder.trace), "vote",
                            tuple(recorder.flags), {})
