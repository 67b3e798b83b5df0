"""AceMAD: peer-prediction debate with multiplicative influence weights.

Each round every agent writes an argument and privately commits its self-belief p_i (a
distribution over the options) and its peer prediction q̂_i (the average belief it expects the
other agents to hold), before it sees this round's peers: all calls of a round are made at once.
Then, with Q̄₋ᵢ = mean_{j≠i} p_j,

    S_i = 1 − ‖q̂_i − Q̄₋ᵢ‖²,      w_i ← w_i · exp(η S_i)   (normalised, carried across rounds)

and the answer is argmax_y Σ_i w_i^γ p_i(y) ("soft"), or Σ_i w_i^γ [y = answer_i] ("hard")
(the arithmetic is in `imad.debate.peer_prediction`).
From round 1 on, agents see their peers' last arguments with their current influence w_j, so
a well-scored minority is also heard more in the debate itself.

Beliefs (config `belief_source`):
- "json": written in the reply as {option: 0–100} maps (schema-constrained), renormalised;
- "logprobs": read from the model's next-token distribution at the `answer` field (p_i) and at an
  `others_answer` field, "the answer most other agents will give" (q̂_i) — see
  `imad.debate.beliefs.option_distribution`; needs a back-end with log-probs;
- "auto": logprobs when the model provides them, else json.
An unusable self-belief falls back to one-hot on the agent's stated answer (or uniform when it
stated none); an unusable peer prediction to uniform. Every fallback is flagged in the result.
A call that fails outright (an LLMError, flagged `call_failed`) after round 0 leaves the agent
on its last turn with no new prediction (a neutral score, as for the seed).

Open-answer questions (numeric, short answer) have no option list. AceMAD then runs one extra
proposal round first (round 0, no beliefs, the seed response stands in for agent 0): the distinct
canonical answers proposed, most frequent first (at most `max_candidates`), become lettered options
for the T belief rounds that follow (rounds 1…T). A single proposed answer ends the debate
("consensus"); none raises DebateError.

A seed response stands in for agent 0's round-0 argument and belief (its confidence on its
answer, the rest spread evenly). It carries no peer prediction, so agent 0's round-0 score is the
mean of the others' scores: its weight is left neutral rather than penalised.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from imad.constraints import Boolean, Constraints, Integer, Options, Real
from imad.debate.base import MAX_AGENTS, MAX_ROUNDS, AgentConfig, Debate, DebateBackend, Verdict
from imad.debate.beliefs import (
    Distribution,
    one_hot,
    option_distribution,
    parse_distribution,
    uniform,
)
from imad.debate.calls import CallOutcome, CallSpec
from imad.debate.parsing import argument_from, parse_answer, parse_json_object
from imad.debate.peer_prediction import (
    aggregate,
    choose,
    peer_prediction_scores,
    spread_belief,
    update_weights,
)
from imad.debate.prompts import (
    ANSWER_REPLY,
    PeerMessage,
    answer_instruction,
    build_messages,
    format_question,
    letters,
    peers_block,
)
from imad.debate.schemas import CONFIDENCE_SCHEMA, answer_schema, argument_schema, object_schema
from imad.errors import DebateError
from imad.question import Question

BeliefSource = Literal["auto", "json", "logprobs"]
Aggregation = Literal["soft", "hard"]


@dataclass(frozen=True)
class AceMADConfig(AgentConfig):
    """AceMAD parameters.

    n_agents: N agents. n_rounds: T rounds (round 0 is the first, independent one).
    eta: η, the learning rate of the multiplicative weights (0 = no peer prediction: a vote).
    gamma: γ, the exponent on the weights in the final aggregation (1; 2 sharpens).
    aggregation: "soft" sums weighted beliefs, "hard" sums weighted stated answers.
    belief_source: "auto" | "json" | "logprobs" (see the module docstring).
    top_logprobs: alternatives per token requested when beliefs come from log-probs.
    show_influence: show peers' current weights next to their arguments.
    max_candidates: at most this many proposed answers become options of an open question.
    """

    n_agents: int = 5
    n_rounds: int = 3
    eta: float = 1.0
    gamma: float = 1.0
    aggregation: Aggregation = "soft"
    belief_source: BeliefSource = "auto"
    top_logprobs: int = 10
    show_influence: bool = True
    max_candidates: int = 6

    constraints: ClassVar[Constraints] = {
        "n_agents": Integer(2, MAX_AGENTS),
        "n_rounds": Integer(1, MAX_ROUNDS),
        # exp(η·S) with |S| <= 1 is computed stably (peer_prediction); 100 already lets one
        # round decide, and γ <= 100 keeps the heaviest agent's w^γ >= 64^-100 > 0.
        "eta": Real(0.0, 100.0),
        "gamma": Real(0.0, 100.0, closed="right"),
        "aggregation": Options("soft", "hard"),
        "belief_source": Options("auto", "json", "logprobs"),
        "top_logprobs": Integer(1, 20),
        "show_influence": Boolean(),
        "max_candidates": Integer(2, 26),  # lettered A–Z
    }


# --- Open questions -------------------------------------------------------------------------


def propose_candidates(answers: Sequence[str], limit: int) -> tuple[str, ...]:
    """Distinct non-empty answers, most frequent first (ties: first proposed), at most `limit`."""
    counts = Counter(a for a in answers if a)
    order = {a: i for i, a in reversed(list(enumerate(answers)))}
    ranked = sorted(counts, key=lambda a: (-counts[a], order[a]))
    return tuple(ranked[:limit])


# --- The back-end -------------------------------------------------------------------------------


@dataclass
class _Turn:
    """One agent's commitment in one round."""

    answer: str
    argument: str
    belief: Distribution
    prediction: Distribution | None
    belief_fallback: str | None = None


@dataclass(frozen=True)
class _Options:
    """What the belief rounds are over: `labels` (the question's options, or an open question's
    candidate answers), the `keys` replies name them by (the labels, or the candidates' letters),
    the `candidates` (empty for a closed question) and whether beliefs come from log-probs."""

    labels: tuple[str, ...]
    keys: tuple[str, ...]
    candidates: tuple[str, ...]
    use_logprobs: bool


class AceMAD(DebateBackend[AceMADConfig]):
    """Peer-prediction debate (see the module docstring)."""

    name = "acemad"

    def protocol(self, debate: Debate) -> Verdict:
        cfg = self.config
        use_logprobs = cfg.belief_source == "logprobs" or (
            cfg.belief_source == "auto" and self.model.supports_logprobs)
        if cfg.belief_source == "logprobs" and not self.model.supports_logprobs:
            debate.flag("logprobs_unsupported")
        rounds: list[dict[str, str]] = []
        labels = debate.question.answer_options
        options = _Options(labels, labels, (), use_logprobs)
        first_round = 0
        previous: list[_Turn] | None = None
        if not labels:
            openings = self.open(debate, role="propose")
            rounds.append({o.agent: o.answer for o in openings})
            candidates = propose_candidates([o.answer for o in openings], cfg.max_candidates)
            if not candidates:
                raise DebateError("no agent proposed a parseable answer to this open question "
                                  f"({len(openings)} replies, none with an answer)")
            if len(candidates) == 1:
                return Verdict(candidates[0], rounds, "consensus",
                               {"options": list(candidates), "rounds": []})
            options = _Options(candidates, letters(len(candidates)), candidates, use_logprobs)
            first_round = 1
            previous = [_Turn(o.answer, o.argument, uniform(len(candidates)), None)
                        for o in openings]
        weights = uniform(cfg.n_agents)
        round_details: list[dict[str, Any]] = []
        stop_reason = "rounds_done"
        turns: list[_Turn] = []
        agents = debate.agents
        for t in range(first_round, first_round + cfg.n_rounds):
            turns = self._round(debate, options, t, previous, weights)
            if turns is None:
                if previous is None or t == first_round:
                    error = debate.recorder.trace[-1].error
                    raise DebateError(f"every call of AceMAD round {t} to "
                                      f"{self.model.model_id!r} failed (last error: {error}); "
                                      "check the model or server")
                stop_reason = "calls_failed"
                turns = previous
                break
            beliefs = [turn.belief for turn in turns]
            scores = peer_prediction_scores(beliefs, [turn.prediction for turn in turns])
            weights = update_weights(weights, scores, cfg.eta)
            rounds.append({agent: turn.answer for agent, turn in zip(agents, turns, strict=True)})
            round_details.append({
                "round": t,
                "beliefs": {a: list(turn.belief) for a, turn in zip(agents, turns, strict=True)},
                "predictions": {a: None if turn.prediction is None else list(turn.prediction)
                                for a, turn in zip(agents, turns, strict=True)},
                "scores": dict(zip(agents, scores, strict=True)),
                "weights": dict(zip(agents, weights, strict=True)),
            })
            previous = turns
        final_answer, support = self._decide(turns, weights, options.labels)
        if not final_answer:
            debate.flag("no_answer")
        details = {"options": list(options.labels),
                   "belief_source": "logprobs" if use_logprobs else "json",
                   "weights": dict(zip(agents, weights, strict=True)),
                   "support": dict(zip(options.labels, support, strict=True)),
                   "rounds": round_details}
        return Verdict(final_answer, rounds, stop_reason, details)

    def _decide(self, turns: Sequence[_Turn], weights: Sequence[float],
                labels: Sequence[str]) -> tuple[str, tuple[float, ...]]:
        index = {label: y for y, label in enumerate(labels)}
        answers = [index.get(turn.answer) for turn in turns]
        hard = self.config.aggregation == "hard"
        support = aggregate(weights, [turn.belief for turn in turns], self.config.gamma,
                            answers if hard else None)
        informative = [turn for turn in turns if turn.belief_fallback != "uniform"]
        if not informative or not any(support):
            return "", support
        preference = [y for y in answers if y is not None]
        return labels[choose(support, preference)], support

    def _round(self, debate: Debate, options: _Options, t: int,
               previous: Sequence[_Turn] | None, weights: Sequence[float]) -> list[_Turn] | None:
        """One round of private commitments; None when every call failed."""
        cfg = self.config
        agents = debate.agents
        n = len(options.labels)
        turns: dict[int, _Turn] = {}
        seeded = debate.seed_opening(lambda answer: answer in options.labels) if t == 0 else None
        if seeded is not None:
            belief = spread_belief(options.labels.index(seeded.answer), seeded.confidence, n)
            turns[0] = _Turn(seeded.answer, seeded.argument, belief, None)
        schema = self._schema(debate.question, options)
        specs: list[CallSpec] = []
        for i, agent in enumerate(agents):
            if i in turns:
                continue
            body = self._prompt(debate, options, i, previous, weights)
            request = self.request(i, t, build_messages(agent, body), schema,
                                   logprobs=options.use_logprobs, top_logprobs=cfg.top_logprobs)
            specs.append(CallSpec(agent, t, "argue", request,
                                  messages_in=0 if previous is None else len(agents) - 1))
        outcomes = debate.recorder.run(specs)
        if outcomes and all(o.failed for o in outcomes) and not turns:
            return None
        for spec, outcome in zip(specs, outcomes, strict=True):
            i = agents.index(spec.agent)
            if outcome.failed and previous is not None:
                # No reply at all: the agent stands by its last turn and makes no new prediction.
                turns[i] = _Turn(previous[i].answer, previous[i].argument, previous[i].belief,
                                 None, previous[i].belief_fallback)
                continue
            turns[i] = self._parse_turn(debate, options, outcome)
        return [turns[i] for i in range(len(agents))]

    def _schema(self, question: Question, options: _Options) -> dict[str, Any]:
        argument = argument_schema(self.config.argument_chars)
        answer = answer_schema(question, options.keys)
        if options.use_logprobs:
            return object_schema({"argument": argument, "answer": answer, "others_answer": answer})
        distribution = object_schema({key: CONFIDENCE_SCHEMA for key in options.keys})
        return object_schema({"argument": argument, "answer": answer,
                              "self_belief": distribution, "peer_prediction": distribution})

    def _prompt(self, debate: Debate, options: _Options, i: int,
                previous: Sequence[_Turn] | None, weights: Sequence[float]) -> str:
        cfg = self.config
        parts = [format_question(debate.question, options.candidates)]
        if previous is not None:
            peers = [PeerMessage(debate.agents[j], turn.answer, turn.argument,
                                 weights[j] if cfg.show_influence else None)
                     for j, turn in enumerate(previous) if j != i]
            parts += peers_block(peers, previous[i].answer, cfg.peer_chars)
        parts.append(answer_instruction(debate.question, options.candidates) + " " + ANSWER_REPLY)
        if options.use_logprobs:
            parts.append("Then others_answer: the answer you expect most other agents to give.")
        else:
            parts.append("Then, privately: self_belief, your probability (0-100) of each option; "
                         "peer_prediction, the average probability the other agents will give "
                         "each option.")
        return "\n".join(parts)

    def _parse_turn(self, debate: Debate, options: _Options, outcome: CallOutcome) -> _Turn:
        where = f"{outcome.spec.agent}:r{outcome.spec.round}"
        labels, keys, candidates = options.labels, options.keys, options.candidates
        n = len(labels)
        text = outcome.text
        data = parse_json_object(text)
        answer = parse_answer(text, debate.question, data, candidates)
        belief: Distribution | None
        prediction: Distribution | None
        if options.use_logprobs:
            logprobs = outcome.response.token_logprobs if outcome.response else None
            belief = option_distribution(logprobs, "answer", keys)
            prediction = option_distribution(logprobs, "others_answer", keys)
            if prediction is None:
                others = parse_answer(text, debate.question, data, candidates, key="others_answer")
                prediction = one_hot(labels.index(others), n) if others in labels else None
        else:
            section = data or {}
            belief = parse_distribution(section.get("self_belief"), keys)
            prediction = parse_distribution(section.get("peer_prediction"), keys)
        fallback = None
        if belief is None:
            fallback = "one_hot" if answer in labels else "uniform"
            belief = one_hot(labels.index(answer), n) if answer in labels else uniform(n)
            debate.flag(f"belief_fallback_{fallback}:{where}")
        if prediction is None:
            prediction = uniform(n)
            debate.flag(f"peer_prediction_fallback_uniform:{where}")
        if not answer and fallback is None:
            answer = labels[max(range(n), key=lambda y: belief[y])]
            debate.flag(f"answer_from_belief:{where}")
        return _Turn(answer, argument_from(text, data), belief, prediction, fallback)
