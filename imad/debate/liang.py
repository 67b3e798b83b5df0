"""Liang et al. (2023) multi-agent debate: affirmative, negative and a judge.

Round 0: the affirmative answers (the seed response stands in for it), and the negative, having
read it, argues for a different answer (for a closed question its answer schema excludes the
affirmative's). In each later round each debater reads the other's last argument and answers
again. After every round the judge reads both debaters' latest arguments and returns a verdict
and whether the debate is decided; it ends when the judge says so or after `max_rounds`.
If the judge gives no usable answer, the affirmative's last answer stands (flagged).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imad.constraints import Constraints, Integer, Real
from imad.debate.base import MAX_ROUNDS, AgentConfig, Debate, DebateBackend, Verdict
from imad.debate.calls import CallSpec
from imad.debate.openings import Opening, parse_opening
from imad.debate.parsing import parse_answer, parse_json_object
from imad.debate.prompts import (
    OPENING_REPLY,
    PeerMessage,
    answer_instruction,
    build_messages,
    format_peer,
    format_question,
)
from imad.debate.schemas import answer_schema, argument_schema, object_schema, opening_schema

AFFIRMATIVE, NEGATIVE, JUDGE = "affirmative", "negative", "judge"


@dataclass(frozen=True)
class LiangConfig(AgentConfig):
    """max_rounds: debate rounds including the first (3). judge_temperature: the judge's (0)."""

    max_rounds: int = 3
    judge_temperature: float = 0.0

    constraints: ClassVar[Constraints] = {
        "max_rounds": Integer(1, MAX_ROUNDS),
        "judge_temperature": Real(0.0, 2.0),
    }


class LiangMAD(DebateBackend[LiangConfig]):
    """Affirmative vs negative, refereed by a judge."""

    name = "liang"

    def agents(self) -> tuple[str, ...]:
        return (AFFIRMATIVE, NEGATIVE, JUDGE)

    def protocol(self, debate: Debate) -> Verdict:
        cfg = self.config
        affirmative = self.open(debate, 1, role=AFFIRMATIVE)[0]
        negative = self._negative_opening(debate, affirmative)
        rounds = [{AFFIRMATIVE: affirmative.answer, NEGATIVE: negative.answer}]
        verdict, stop, decided_round = "", "rounds_done", None
        for t in range(cfg.max_rounds):
            if t > 0:
                affirmative, negative = self._exchange(debate, t, affirmative, negative)
                rounds.append({AFFIRMATIVE: affirmative.answer, NEGATIVE: negative.answer})
            verdict, decided = self._judge(debate, t, affirmative, negative)
            rounds[-1][JUDGE] = verdict
            if decided and verdict:
                stop, decided_round = "judge_decided", t
                break
        final = verdict
        if not final:
            final = affirmative.answer
            debate.flag("judge_fallback_affirmative")
        return Verdict(final, rounds, stop, {"decided_round": decided_round})

    def _negative_opening(self, debate: Debate, affirmative: Opening) -> Opening:
        question = debate.question
        others = tuple(o for o in question.answer_options if o != affirmative.answer)
        schema = opening_schema(question, self.config.argument_chars, enum=others)
        body = "\n".join([
            format_question(question),
            format_peer(PeerMessage(AFFIRMATIVE, affirmative.answer, affirmative.argument),
                        self.config.peer_chars),
            "You are the negative side: argue for a different answer. "
            + answer_instruction(question) + " " + OPENING_REPLY,
        ])
        request = self.request(1, 0, build_messages(NEGATIVE, body), schema)
        outcome = debate.recorder.run_one(CallSpec(NEGATIVE, 0, NEGATIVE, request, messages_in=1))
        return parse_opening(outcome, question)

    def _exchange(self, debate: Debate, t: int, affirmative: Opening,
                  negative: Opening) -> tuple[Opening, Opening]:
        question = debate.question
        schema = opening_schema(question, self.config.argument_chars)
        specs = []
        for index, (me, other) in enumerate(((affirmative, negative), (negative, affirmative))):
            body = "\n".join([
                format_question(question),
                f"Your answer: {me.answer or '?'}.",
                "The other side says:",
                format_peer(PeerMessage(other.agent, other.answer, other.argument),
                            self.config.peer_chars),
                "Reply to it. " + answer_instruction(question)
                + " " + OPENING_REPLY,
            ])
            request = self.request(index, t, build_messages(me.agent, body), schema)
            specs.append(CallSpec(me.agent, t, me.agent, request, messages_in=1))
        replies = [parse_opening(o, question) for o in debate.recorder.run(specs)]
        # A failed or unparseable turn leaves that side's previous answer standing.
        return (replies[0] if replies[0].answer else affirmative,
                replies[1] if replies[1].answer else negative)

    def _judge(self, debate: Debate, t: int, affirmative: Opening,
               negative: Opening) -> tuple[str, bool]:
        question = debate.question
        schema = object_schema({"reasoning": argument_schema(self.config.argument_chars),
                                "decided": {"type": "boolean"},
                                "answer": answer_schema(question)})
        body = "\n".join([
            format_question(question),
            "Two debaters argued:",
            format_peer(PeerMessage(AFFIRMATIVE, affirmative.answer, affirmative.argument),
                        self.config.peer_chars),
            format_peer(PeerMessage(NEGATIVE, negative.answer, negative.argument),
                        self.config.peer_chars),
            "You are the judge. " + answer_instruction(question) + " Reply in JSON: a short "
            "reasoning, decided (true if the right answer is clear), and the answer.",
        ])
        request = self.request(2, t, build_messages(JUDGE, body), schema,
                               temperature=self.config.judge_temperature)
        outcome = debate.recorder.run_one(CallSpec(JUDGE, t, JUDGE, request, messages_in=2))
        data = parse_json_object(outcome.text)
        decided = bool(data.get("decided")) if data is not None and isinstance(
            data.get("decided"), bool) else False
        return parse_answer(outcome.text, question, data), decided
