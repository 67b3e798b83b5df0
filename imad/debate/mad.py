"""All-to-all multi-agent debate (Du et al., 2023) — the "full MAD" baseline.

N agents answer independently (round 0); in each later round every agent sees all the other
agents' previous answers and arguments and answers again. The final answer is the majority vote
of the last round, ties broken by the earlier rounds' answers. Every agent receives N−1 messages
per later round: N(N−1)(R−1) messages in all — the quadratic cost SVR-MAD avoids.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from imad.constraints import Constraints, Integer
from imad.debate.base import MAX_AGENTS, MAX_ROUNDS, AgentConfig, Debate, DebateBackend, Verdict
from imad.debate.calls import CallSpec
from imad.debate.openings import Opening, parse_opening
from imad.debate.prompts import (
    OPENING_REPLY,
    PeerMessage,
    answer_instruction,
    build_messages,
    format_question,
    peers_block,
)
from imad.debate.schemas import opening_schema
from imad.debate.voting import majority_vote
from imad.question import Question


@dataclass(frozen=True)
class MADConfig(AgentConfig):
    """n_agents: N debaters (3, as in Du et al.). n_rounds: R rounds including the first (2)."""

    n_agents: int = 3
    n_rounds: int = 2

    constraints: ClassVar[Constraints] = {
        "n_agents": Integer(2, MAX_AGENTS),
        "n_rounds": Integer(1, MAX_ROUNDS),
    }


def update_prompt(question: Question, me: int, agents: Sequence[str], previous: Sequence[Opening],
                  peer_chars: int) -> str:
    peers = [PeerMessage(agents[j], o.answer, o.argument) for j, o in enumerate(previous) if j != me]
    parts = [format_question(question), *peers_block(peers, previous[me].answer, peer_chars)]
    parts.append("Use their arguments as advice and answer again. " + answer_instruction(question)
                 + " " + OPENING_REPLY)
    return "\n".join(parts)


class MAD(DebateBackend[MADConfig]):
    """Du et al. all-to-all debate."""

    name = "mad"

    def protocol(self, debate: Debate) -> Verdict:
        cfg = self.config
        current = self.open(debate)
        history = [current]
        stop = "rounds_done"
        schema = opening_schema(debate.question, cfg.argument_chars)
        for t in range(1, cfg.n_rounds):
            specs = []
            for i, agent in enumerate(debate.agents):
                body = update_prompt(debate.question, i, debate.agents, current, cfg.peer_chars)
                request = self.request(i, t, build_messages(agent, body), schema)
                specs.append(CallSpec(agent, t, "update", request, messages_in=cfg.n_agents - 1))
            outcomes = debate.recorder.run(specs)
            if all(o.failed for o in outcomes):
                stop = "calls_failed"
                break
            updated = []
            for previous, outcome in zip(current, outcomes, strict=True):
                opening = parse_opening(outcome, debate.question)
                # A failed or unparseable update leaves the agent where it was.
                updated.append(opening if opening.answer else previous)
            current = updated
            history.append(current)
        answers = [o.answer for o in current]
        earlier = [o.answer for openings in reversed(history[:-1]) for o in openings]
        final = majority_vote(answers, tie_break=earlier)
        if not final:
            debate.flag("no_answer")
        return Verdict(final, [{o.agent: o.answer for o in openings} for openings in history],
                       stop)
