"""The run() skeleton: a back-end that writes only its protocol gets checks, trace and flags."""

from __future__ import annotations

import pytest

from imad.critique.schema import CritiqueResponse
from imad.debate.base import AgentConfig, Debate, DebateBackend, Verdict
from imad.debate.single import CoTConfig
from imad.errors import ConfigError, DebateError
from tests.debate.helpers import MCQ, opening, queued_chat


class FirstAnswer(DebateBackend[CoTConfig]):
    """Three agents open; the first answer wins. Only the protocol step is written here."""

    name = "first_answer"

    def agents(self) -> tuple[str, ...]:
        return ("agent_0", "agent_1", "agent_2")

    def protocol(self, debate: Debate) -> Verdict:
        openings = self.open(debate)
        debate.flag("custom_flag")
        return Verdict(openings[0].answer, [{o.agent: o.answer for o in openings}], "first",
                       {"n": len(openings)})


def test_the_type_argument_is_the_config_class():
    assert FirstAnswer.config_class is CoTConfig
    with pytest.raises(ConfigError, match="takes a CoTConfig, got AgentConfig"):
        FirstAnswer(queued_chat({}), AgentConfig())


def test_run_closes_with_the_recorders_trace_and_flags():
    chat = queued_chat({"agent_0": [opening("B")], "agent_1": ["no answer here"],
                        "agent_2": [opening("D")]})
    result = FirstAnswer(chat).run(MCQ)
    assert (result.backend, result.final_answer, result.stop_reason) == ("first_answer", "B", "first")
    assert result.rounds == ({"agent_0": "B", "agent_1": "", "agent_2": "D"},)
    assert [call.agent for call in result.trace] == ["agent_0", "agent_1", "agent_2"]
    assert result.flags == ("unparseable_answer:agent_1:r0", "custom_flag")
    assert result.details == {"n": 3} and result.n_calls == len(chat.calls) == 3


def test_the_seed_stands_in_for_agent_0_or_is_flagged_unusable():
    seed = CritiqueResponse("C", "seeded", "", "C", "C", 0.9, 0.9)
    chat = queued_chat({"agent_1": [opening("A")], "agent_2": [opening("A")]})
    result = FirstAnswer(chat).run(MCQ, seed_response=seed)
    assert result.final_answer == "C" and result.n_calls == 2
    assert "seed_opening:agent_0" in result.flags
    unusable = CritiqueResponse("", "no answer", "", "", "", 0.1, 0.1)
    chat = queued_chat({f"agent_{i}": [opening("A")] for i in range(3)})
    result = FirstAnswer(chat).run(MCQ, seed_response=unusable)
    assert "seed_unusable" in result.flags and result.n_calls == 3


def test_bad_question_or_seed_fails_before_any_call():
    chat = queued_chat({})
    with pytest.raises(DebateError, match="imad.Question"):
        FirstAnswer(chat).run("What?")  # type: ignore[arg-type]
    with pytest.raises(DebateError, match="seed_response must be a CritiqueResponse, got dict"):
        FirstAnswer(chat).run(MCQ, seed_response={"final_answer": "A"})  # type: ignore[arg-type]
    assert chat.calls == []
