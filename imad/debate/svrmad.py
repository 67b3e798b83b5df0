"""SVR-MAD: survival-rate-guided pairwise debate.

1. N agents answer independently. Each gets a prior π_i: exp(min token log-prob) or
   1/perplexity of its argument and answer tokens when the back-end returns log-probs, else its
   verbal confidence (config `prior_source`; "auto" = perplexity when available, else verbal).
2. If at least `consensus_agree` agents agree (5 of 6 by default), stop.
3. Within a budget of `max_debates` pairwise debates: the receiver R is the agent with the
   highest score; the challengers are the top-S agents by score whose answers differ from R's.
   R debates each challenger j in turn: both see the other's answer and argument and answer
   again. A party that kept its canonical answer gets r+1, one that changed gets c+1, and
   SVR = (r − c) / D with D = r + c. The score is π while D = 0; once D > 0 it follows config
   `score_rule`:
   - "beta" (default): the Beta posterior mean (κπ + D(SVR+1)/2) / (κ + D) = (κπ + r) / (κ + D),
     which tends to the survival share as D grows;
   - "survival", the paper's own statement ("once debate evidence exists, the SVR dominates the
     prior"): the survival share (SVR+1)/2 = r / D itself, on the prior's [0, 1] scale, with the
     prior only breaking ties between equal scores (receiver, challengers and acceptance).
4. As soon as an agent that has debated reaches a score ≥ `accept_threshold`, its current answer
   is accepted (named so, not τ, to keep it apart from the router's τ).
   Otherwise (budget spent, or no new pair left to debate) the answer is the majority vote of the
   post-debate answers, ties broken by the pre-debate answers.

Choices where the paper is silent: a pair of agents never debates twice while both hold the same
answers (it would only repeat itself); when the top receiver has no new challenger left, the next
receiver by score is tried. A debate call that fails or gives no parseable answer is no evidence:
that party keeps its answer and its r and c are unchanged (flagged). Acceptance needs D ≥ 1, so a
confident prior alone never ends the debate — the failure mode of prior-based pruning that the
paper sets out to avoid.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from imad.constraints import Constraints, Integer, Options, Real
from imad.debate.base import MAX_AGENTS, AgentConfig, Debate, DebateBackend, Verdict, require
from imad.debate.beliefs import min_logprob_prior, perplexity_prior
from imad.debate.calls import CallSpec
from imad.debate.openings import Opening
from imad.debate.parsing import argument_from, parse_answer, parse_json_object
from imad.debate.prompts import (
    ANSWER_REPLY,
    PeerMessage,
    answer_instruction,
    build_messages,
    format_peer,
    format_question,
)
from imad.debate.schemas import answer_schema, argument_schema, object_schema
from imad.debate.voting import majority_vote, vote_share

PriorSource = Literal["auto", "min_logprob", "perplexity", "verbal"]
ScoreRule = Literal["beta", "survival"]
PRIOR_FIELDS = ("argument", "answer")
"""The reply fields whose tokens a log-prob prior is computed over."""


@dataclass(frozen=True)
class SVRMADConfig(AgentConfig):
    """SVR-MAD parameters.

    n_agents: N agents answering independently (6).
    consensus_agree: stop before any debate when at least this many agree (5 of 6).
    n_challengers: S, challengers per receiver (2).
    kappa: κ, the prior's weight in pseudo-debates in the "beta" score (2).
    score_rule: "beta" (the Beta posterior mean) | "survival" (the survival share decides once
        D > 0, the prior breaks ties); see the module docstring.
    accept_threshold: accept an agent that has debated once its score reaches this (0.75).
    max_debates: the communication budget in pairwise debates (2 calls, 2 messages each).
    prior_source: "auto" | "min_logprob" | "perplexity" | "verbal".
    default_prior: the prior of an agent whose chosen source gave nothing (flagged).
    """

    n_agents: int = 6
    consensus_agree: int = 5
    n_challengers: int = 2
    kappa: float = 2.0
    score_rule: ScoreRule = "beta"
    accept_threshold: float = 0.75
    max_debates: int = 8
    prior_source: PriorSource = "auto"
    default_prior: float = 0.5

    constraints: ClassVar[Constraints] = {
        "n_agents": Integer(2, MAX_AGENTS),
        "consensus_agree": Integer(2, MAX_AGENTS),
        "n_challengers": Integer(1, MAX_AGENTS - 1),
        "kappa": Real(0.0, 1_000.0, closed="right"),
        "score_rule": Options("beta", "survival"),
        "accept_threshold": Real(0.0, 1.0, closed="right"),
        "max_debates": Integer(0, 256),  # more pairs than 64 agents' opening disagreements need
        "prior_source": Options("auto", "min_logprob", "perplexity", "verbal"),
        "default_prior": Real(0.0, 1.0),
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.consensus_agree <= self.n_agents, "SVRMADConfig.consensus_agree",
                f"must be in [2, n_agents={self.n_agents}], got {self.consensus_agree}")


# --- The protocol arithmetic ---------------------------------------------------------------------


def survival_rate(kept: int, changed: int) -> float | None:
    """SVR = (r − c) / D, None before any debate."""
    debates = kept + changed
    return None if debates == 0 else (kept - changed) / debates


def posterior_score(prior: float, kept: int, changed: int, kappa: float,
                    rule: ScoreRule = "beta") -> float:
    """π when D = 0; else "beta": (κπ + D(SVR+1)/2) / (κ + D), "survival": r / D = (SVR+1)/2."""
    debates = kept + changed
    if debates == 0:
        return prior
    if rule == "survival":
        return kept / debates
    svr = (kept - changed) / debates
    return (kappa * prior + debates * (svr + 1) / 2) / (kappa + debates)


def pair_key(a: int, b: int, answers: Sequence[str]) -> frozenset[tuple[int, str]]:
    return frozenset({(a, answers[a]), (b, answers[b])})


def rank_key(scores: Sequence[float], tie_break: Sequence[float] = ()
             ) -> Callable[[int], tuple[float, float, int]]:
    """Agent i's sort key: higher score first, then higher `tie_break` (the priors under the
    "survival" rule; none under "beta"), then the lower agent index."""
    return lambda i: (-scores[i], -tie_break[i] if tie_break else 0.0, i)


def select_debates(scores: Sequence[float], answers: Sequence[str], n_challengers: int,
                   debated: set[frozenset[tuple[int, str]]], tie_break: Sequence[float] = ()
                   ) -> tuple[int, list[int]] | None:
    """(receiver, challengers): the best-scored agent with a new disagreeing challenger, and the
    top `n_challengers` such challengers by score (ties: see `rank_key`)."""
    ranking = sorted((i for i, a in enumerate(answers) if a), key=rank_key(scores, tie_break))
    for receiver in ranking:
        challengers = [j for j in ranking if answers[j] != answers[receiver]
                       and pair_key(receiver, j, answers) not in debated]
        if challengers:
            return receiver, challengers[:n_challengers]
    return None


def accepted_agent(scores: Sequence[float], kept: Sequence[int], changed: Sequence[int],
                   accept_threshold: float, tie_break: Sequence[float] = ()) -> int | None:
    """The best-scored agent (ties: see `rank_key`) that has debated and reached the threshold,
    or None."""
    eligible = [i for i in range(len(scores))
                if kept[i] + changed[i] > 0 and scores[i] >= accept_threshold]
    return min(eligible, key=rank_key(scores, tie_break)) if eligible else None


# --- The back-end -------------------------------------------------------------------------------


@dataclass
class Debater:
    """One SVR-MAD agent: its prior, its opening and current answer and argument, and its record
    of pairwise debates (r kept, c changed)."""

    index: int
    name: str
    prior: float
    opening_answer: str
    answer: str
    argument: str
    kept: int = 0
    changed: int = 0


class SVRMAD(DebateBackend[SVRMADConfig]):
    """Survival-rate debate (see the module docstring)."""

    name = "svrmad"

    def protocol(self, debate: Debate) -> Verdict:
        cfg = self.config
        source = cfg.prior_source
        if source == "auto":
            source = "perplexity" if self.model.supports_logprobs else "verbal"
        openings = self.open(debate, logprobs=source != "verbal")
        debaters = [Debater(i, o.agent, self._prior(o, source, debate), o.answer, o.answer,
                            o.argument) for i, o in enumerate(openings)]
        rounds = [_answers(debaters)]
        debated: set[frozenset[tuple[int, str]]] = set()
        n_debates = 0
        final, stop = "", ""
        majority, count = vote_share([d.answer for d in debaters])
        if not majority:
            debate.flag("no_answer")
            stop = "no_answer"
        elif count >= cfg.consensus_agree:
            final, stop = majority, "consensus"
        while not stop:
            answers = [d.answer for d in debaters]
            pick = select_debates(self._scores(debaters), answers, cfg.n_challengers, debated,
                                  self._tie_break(debaters))
            if pick is None:
                stop = "no_challengers"
                break
            receiver, challengers = (debaters[pick[0]], [debaters[j] for j in pick[1]])
            for challenger in challengers:
                if n_debates >= cfg.max_debates:
                    break
                n_debates += 1
                debated.add(pair_key(receiver.index, challenger.index,
                                     [d.answer for d in debaters]))
                receiver_answer = receiver.answer
                self._debate(debate, n_debates, receiver, challenger)
                rounds.append(_answers(debaters))
                winner = accepted_agent(self._scores(debaters), [d.kept for d in debaters],
                                        [d.changed for d in debaters], cfg.accept_threshold,
                                        self._tie_break(debaters))
                majority, count = vote_share([d.answer for d in debaters])
                if winner is not None:
                    final, stop = debaters[winner].answer, "accepted"
                elif count >= cfg.consensus_agree:
                    final, stop = majority, "consensus"
                if stop or receiver.answer != receiver_answer:
                    break  # decided, or the receiver changed sides: choose again
            if not stop and n_debates >= cfg.max_debates:
                stop = "budget_exhausted"
        if stop in ("no_challengers", "budget_exhausted"):
            final = majority_vote([d.answer for d in debaters],
                                  tie_break=[d.opening_answer for d in debaters])
            debate.flag("fallback_vote")
        return Verdict(final, rounds, stop, self._details(debaters, source, n_debates))

    def _scores(self, debaters: Sequence[Debater]) -> list[float]:
        cfg = self.config
        return [posterior_score(d.prior, d.kept, d.changed, cfg.kappa, cfg.score_rule)
                for d in debaters]

    def _tie_break(self, debaters: Sequence[Debater]) -> list[float]:
        """The priors under the "survival" rule (they only break ties); none under "beta"."""
        return [d.prior for d in debaters] if self.config.score_rule == "survival" else []

    def _details(self, debaters: Sequence[Debater], source: str,
                 n_debates: int) -> dict[str, object]:
        scores = self._scores(debaters)
        return {
            "prior_source": source, "score_rule": self.config.score_rule, "debates": n_debates,
            "priors": {d.name: d.prior for d in debaters},
            "scores": {d.name: score for d, score in zip(debaters, scores, strict=True)},
            "kept": {d.name: d.kept for d in debaters},
            "changed": {d.name: d.changed for d in debaters},
            "svr": {d.name: survival_rate(d.kept, d.changed) for d in debaters},
            "pre_debate_answers": {d.name: d.opening_answer for d in debaters},
        }

    def _prior(self, opening: Opening, source: str, debate: Debate) -> float:
        if opening.from_seed or source == "verbal":
            if opening.from_seed and source != "verbal":
                debate.flag("seed_prior_verbal")
            value = opening.confidence
        else:
            prior = min_logprob_prior if source == "min_logprob" else perplexity_prior
            value = prior(opening.token_logprobs, fields=PRIOR_FIELDS)
            if value is None:
                debate.flag(f"prior_fallback_verbal:{opening.agent}")
                value = opening.confidence
        if value is None:
            if opening.answer:
                debate.flag(f"prior_default:{opening.agent}")
            value = self.config.default_prior
        return value

    def _debate(self, debate: Debate, number: int, receiver: Debater,
                challenger: Debater) -> None:
        """One pairwise debate; updates both parties' answers, arguments and r/c in place."""
        question = debate.question
        schema = object_schema({"argument": argument_schema(self.config.argument_chars),
                                "answer": answer_schema(question)})
        specs = []
        for me, other in ((receiver, challenger), (challenger, receiver)):
            peer = PeerMessage(other.name, other.answer, other.argument)
            body = "\n".join([
                format_question(question),
                f"Your answer: {me.answer}. "
                f"Your argument: {me.argument[:self.config.peer_chars]}",
                "Another agent disagrees:",
                format_peer(peer, self.config.peer_chars),
                "Keep your answer if you still think it is right, otherwise change it. "
                + answer_instruction(question)
                + " " + ANSWER_REPLY,
            ])
            request = self.request(me.index, number, build_messages(me.name, body), schema)
            specs.append(CallSpec(me.name, number, "debate", request, messages_in=1))
        for me, outcome in zip((receiver, challenger), debate.recorder.run(specs), strict=True):
            data = parse_json_object(outcome.text)
            new_answer = parse_answer(outcome.text, question, data)
            if not new_answer:
                debate.flag(f"no_evidence:{me.name}:r{number}")
                continue
            if new_answer == me.answer:
                me.kept += 1
            else:
                me.changed += 1
            me.answer = new_answer
            me.argument = argument_from(outcome.text, data)


def _answers(debaters: Sequence[Debater]) -> dict[str, str]:
    return {d.name: d.answer for d in debaters}
