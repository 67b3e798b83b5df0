"""A population simulator: synthetic agents, no LLM, driving the real debate back-ends.

Each simulated question gets a fresh population whose agents answer through a `ScriptedChat`:
they read the real prompts (the question, the peer lines of `imad.debate.prompts`, the JSON
schema) and write the JSON an LLM agent would. So vote, MAD, AceMAD and SVR-MAD run their real
protocol code — prompts, parsing, scoring, weights, receiver choice, stopping, token and message
counts — and only the agents are synthetic. Tokens are the scripted model's word counts.

The agent model (every number is a `PopulationConfig` field):
- A question has `n_options` options, one true answer and one *attractor*: a wrong answer that
  looks right (correlated errors). `round(truth_share · n_agents)` agents, placed at random, are
  *truth-holders*; the others are the *crowd*.
- Opening answers: truth-holders answer the truth with confidence c ~ U(confidence_truth) —
  right but unsure. A crowd agent falls for the attractor with probability `correlation`, else
  picks any other option uniformly (possibly the truth, by luck); its confidence is
  c ~ U(confidence_crowd) — confidently wrong, the SVR-MAD paper's premise. An agent's belief is
  c on its answer and (1 − c) spread evenly over the rest.
- Persuasion: an agent reading peers' answers feels pressure P_y toward each other answer y,
  the share of the shown peers (weighted by their shown influence, when the protocol shows one)
  that state y, and switches to y with probability α · P_y, keeping its confidence level.
  Truth-holders, who hold the argument, are harder to move (α = `conformity_truth`) than the
  crowd (α = `conformity_crowd`). Arguments carry no other signal: a crowd agent is as easily
  pulled to a wrong answer as to the truth.
- Peer predictions (AceMAD's q̂): the crowd suffers the false-consensus effect — it predicts its
  own belief, mixed (weight 1 − `false_consensus`) with uniform in round 0 and with what it saw
  last round later. With `second_order=True`, truth-holders predict the crowd: in round 0 from
  a noisy model of it (attractor rate ρ and truth share, each ± N(0, `prediction_noise`)), later
  from the answers they saw last round. With `second_order=False` they predict like the crowd.

Everything is seeded: question k of a run uses seed `seed + k`, and the opening answers depend
only on it, so every method meets the same agents (paired comparisons).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from imad.debate.base import AgentConfig
from imad.debate.beliefs import Distribution
from imad.debate.prompts import AGENT_IN_SYSTEM, letters, parse_peers
from imad.debate.registry import create_backend, make_config
from imad.debate.result import DebateResult
from imad.debate.voting import majority_vote
from imad.errors import ConfigError
from imad.llm.scripted import ScriptedChat
from imad.llm.types import ChatRequest
from imad.question import Question, TaskType


@dataclass(frozen=True)
class PopulationConfig:
    """The synthetic population (see the module docstring for what each number means)."""

    n_agents: int = 5
    truth_share: float = 0.2
    n_options: int = 4
    correlation: float = 0.7
    second_order: bool = True
    confidence_truth: tuple[float, float] = (0.5, 0.8)
    confidence_crowd: tuple[float, float] = (0.7, 0.95)
    conformity_truth: float = 0.2
    conformity_crowd: float = 0.6
    false_consensus: float = 0.8
    prediction_noise: float = 0.1

    def __post_init__(self) -> None:
        checks = [
            (self.n_agents >= 2, "n_agents", "must be >= 2"),
            (0.0 <= self.truth_share <= 1.0, "truth_share", "must be in [0, 1]"),
            (2 <= self.n_options <= 26, "n_options", "must be in [2, 26]"),
            (0.0 <= self.correlation <= 1.0, "correlation", "must be in [0, 1]"),
            (0.0 <= self.conformity_truth <= 1.0, "conformity_truth", "must be in [0, 1]"),
            (0.0 <= self.conformity_crowd <= 1.0, "conformity_crowd", "must be in [0, 1]"),
            (0.0 <= self.false_consensus <= 1.0, "false_consensus", "must be in [0, 1]"),
            (self.prediction_noise >= 0.0, "prediction_noise", "must be >= 0"),
        ]
        for low, high in (self.confidence_truth, self.confidence_crowd):
            checks.append((0.0 < low <= high <= 1.0, "confidence_*", "must be 0 < low <= high <= 1"))
        for ok, name, message in checks:
            if not ok:
                raise ConfigError(f"PopulationConfig.{name}", message)

    @property
    def n_truth_holders(self) -> int:
        return round(self.truth_share * self.n_agents)


@dataclass
class _Agent:
    truth_holder: bool
    answer: int
    confidence: float
    calls: int = 0


def _spread(index: int, confidence: float, n: int) -> list[float]:
    rest = (1.0 - confidence) / (n - 1)
    return [confidence if y == index else rest for y in range(n)]


@dataclass
class SimulatedQuestion:
    """One question and its population; `respond` is the scripted model's reply function."""

    config: PopulationConfig
    seed: int
    question: Question = field(init=False)
    truth: int = field(init=False)
    attractor: int = field(init=False)
    agents: dict[int, _Agent] = field(init=False, default_factory=dict)
    _holders: set[int] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        cfg = self.config
        rng = random.Random(f"question:{self.seed}")
        self.truth = rng.randrange(cfg.n_options)
        self.attractor = rng.choice([y for y in range(cfg.n_options) if y != self.truth])
        holders = set(rng.sample(range(cfg.n_agents), cfg.n_truth_holders))
        choices = tuple(f"option {letter}" for letter in letters(cfg.n_options))
        self.question = Question(f"Simulated question {self.seed}", TaskType.MULTIPLE_CHOICE,
                                 choices, id=f"sim-{self.seed}", gold=letters(cfg.n_options)[self.truth])
        self._holders = holders

    @property
    def gold(self) -> str:
        return letters(self.config.n_options)[self.truth]

    def model(self) -> ScriptedChat:
        return ScriptedChat(self.respond, model_id="synthetic-population")

    def agent(self, index: int) -> _Agent:
        if index not in self.agents:
            self.agents[index] = self._opening(index)
        return self.agents[index]

    def _opening(self, index: int) -> _Agent:
        cfg = self.config
        rng = random.Random(f"opening:{self.seed}:{index}")
        if index in self._holders:
            return _Agent(True, self.truth, rng.uniform(*cfg.confidence_truth))
        if rng.random() < cfg.correlation:
            answer = self.attractor
        else:
            answer = rng.choice([y for y in range(cfg.n_options) if y != self.attractor])
        return _Agent(False, answer, rng.uniform(*cfg.confidence_crowd))

    # --- the scripted model ---------------------------------------------------------------------

    def respond(self, request: ChatRequest) -> str:
        system = request.messages[0].text
        match = AGENT_IN_SYSTEM.search(system)
        if match is None or not match["agent"].startswith("agent_"):
            raise ConfigError("simulate", f"the simulator only plays agents named agent_i, not {system!r}")
        index = int(match["agent"].removeprefix("agent_"))
        agent = self.agent(index)
        rng = random.Random(f"call:{self.seed}:{index}:{agent.calls}")
        agent.calls += 1
        keys = letters(self.config.n_options)
        peers = [(keys.index(p.answer), p.influence) for p in parse_peers(request.messages[-1].text)
                 if p.answer in keys]
        if peers:
            self._persuade(agent, peers, rng)
        properties = (request.json_schema or {}).get("properties", {})
        reply: dict[str, Any] = {"argument": f"I think {keys[agent.answer]} fits best here.",
                                 "answer": keys[agent.answer]}
        if "self_belief" in properties:
            belief = _spread(agent.answer, agent.confidence, self.config.n_options)
            prediction = self._predict(agent, belief, [y for y, _ in peers], rng)
            reply["self_belief"] = {k: round(100 * p, 3) for k, p in zip(keys, belief, strict=True)}
            reply["peer_prediction"] = {k: round(100 * q, 3)
                                        for k, q in zip(keys, prediction, strict=True)}
        else:
            reply["confidence"] = round(100 * agent.confidence)
        return json.dumps(reply)

    def _persuade(self, agent: _Agent, peers: Sequence[tuple[int, float | None]],
                  rng: random.Random) -> None:
        cfg = self.config
        alpha = cfg.conformity_truth if agent.truth_holder else cfg.conformity_crowd
        weights = [1.0 if influence is None else influence for _, influence in peers]
        total = sum(weights) or 1.0
        pressure = [0.0] * cfg.n_options
        for (answer, _), weight in zip(peers, weights, strict=True):
            if answer != agent.answer:
                pressure[answer] += weight / total
        draw = rng.random()
        for y, share in enumerate(pressure):
            draw -= alpha * share
            if draw < 0:
                agent.answer = y
                return

    def _predict(self, agent: _Agent, belief: Sequence[float], seen: Sequence[int],
                 rng: random.Random) -> Distribution:
        cfg = self.config
        n = cfg.n_options
        typical = sum(cfg.confidence_crowd) / 2
        if seen:
            observed = [sum(_spread(y, typical, n)[k] for y in seen) / len(seen) for k in range(n)]
        else:
            observed = [1.0 / n] * n
        if agent.truth_holder and cfg.second_order:
            if seen:
                return tuple(observed)
            return tuple(self._crowd_model(rng))
        mix = cfg.false_consensus
        return tuple(mix * b + (1 - mix) * o for b, o in zip(belief, observed, strict=True))

    def _crowd_model(self, rng: random.Random) -> list[float]:
        """A truth-holder's round-0 forecast of the others' average belief."""
        cfg = self.config
        n = cfg.n_options
        rho = min(1.0, max(0.0, rng.gauss(cfg.correlation, cfg.prediction_noise)))
        share = min(1.0, max(0.0, rng.gauss(cfg.truth_share, cfg.prediction_noise)))
        crowd_confidence = sum(cfg.confidence_crowd) / 2
        truth_confidence = sum(cfg.confidence_truth) / 2
        others = [y for y in range(n) if y != self.attractor]
        crowd = [0.0] * n
        for y in range(n):
            p_answer = rho if y == self.attractor else (1 - rho) / len(others)
            for k, mass in enumerate(_spread(y, crowd_confidence, n)):
                crowd[k] += p_answer * mass
        holders = _spread(self.truth, truth_confidence, n)
        return [(1 - share) * c + share * h for c, h in zip(crowd, holders, strict=True)]


# --- Running methods over many questions -------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """A back-end name and its config, under a display name."""

    label: str
    backend: str
    config: AgentConfig


@dataclass(frozen=True)
class MethodStats:
    label: str
    accuracy: float
    tokens_per_question: float
    messages_per_question: float
    calls_per_question: float
    n_questions: int


def default_methods(n_agents: int = 5, n_rounds: int = 3) -> list[Method]:
    """Majority vote, all-to-all MAD, AceMAD (η = 1 and η = 0) and SVR-MAD at equal N.

    SVR-MAD's consensus rule "≥ 5 of 6 agree" becomes "at most one dissenter" at other N.
    """
    return [
        Method("majority vote", "self_consistency", make_config("self_consistency",
                                                                n_samples=n_agents)),
        Method("all-to-all MAD", "mad", make_config("mad", n_agents=n_agents, n_rounds=n_rounds)),
        Method("AceMAD", "acemad", make_config("acemad", n_agents=n_agents, n_rounds=n_rounds,
                                               belief_source="json")),
        Method("AceMAD (eta=0)", "acemad", make_config("acemad", n_agents=n_agents,
                                                       n_rounds=n_rounds, eta=0.0,
                                                       belief_source="json")),
        Method("SVR-MAD", "svrmad", make_config("svrmad", n_agents=n_agents,
                                                consensus_agree=n_agents - 1,
                                                prior_source="verbal")),
    ]


def run_method(method: Method, population: PopulationConfig, seeds: Sequence[int]
               ) -> tuple[MethodStats, list[tuple[SimulatedQuestion, DebateResult]]]:
    """Run one method on the simulated questions with these seeds."""
    runs = []
    for seed in seeds:
        simulated = SimulatedQuestion(population, seed)
        result = create_backend(method.backend, simulated.model(), method.config).run(simulated.question)
        runs.append((simulated, result))
    n = len(runs)
    stats = MethodStats(
        label=method.label,
        accuracy=sum(r.final_answer == s.gold for s, r in runs) / n,
        tokens_per_question=sum(r.total_tokens for _, r in runs) / n,
        messages_per_question=sum(r.messages for _, r in runs) / n,
        calls_per_question=sum(r.n_calls for _, r in runs) / n,
        n_questions=n,
    )
    return stats, runs


def simulate(population: PopulationConfig, n_questions: int = 1000, seed: int = 0,
             methods: Sequence[Method] | None = None) -> list[MethodStats]:
    """Accuracy, tokens, messages and calls per question of each method on the same questions."""
    seeds = range(seed, seed + n_questions)
    methods = default_methods(population.n_agents) if methods is None else methods
    return [run_method(method, population, seeds)[0] for method in methods]


def opening_vote_accuracy(population: PopulationConfig, seeds: Sequence[int]) -> float:
    """Accuracy of the vote over the opening answers, computed from the agent model directly
    (a cross-check of the "majority vote" method, which gets them through the back-end)."""
    hits = 0
    for seed in seeds:
        simulated = SimulatedQuestion(population, seed)
        keys = letters(population.n_options)
        answers = [keys[simulated.agent(i).answer] for i in range(population.n_agents)]
        hits += majority_vote(answers) == simulated.gold
    return hits / len(seeds)


def format_table(rows: Sequence[tuple[str, MethodStats]]) -> str:
    """A Markdown table of (setting, stats) rows."""
    lines = ["| setting | method | accuracy | tokens/q | messages/q | calls/q |",
             "|---|---|---:|---:|---:|---:|"]
    for setting, s in rows:
        lines.append(f"| {setting} | {s.label} | {s.accuracy:.3f} | {s.tokens_per_question:.0f} | "
                     f"{s.messages_per_question:.1f} | {s.calls_per_question:.1f} |")
    return "\n".join(lines)
