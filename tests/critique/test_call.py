"""The self-critique call: with the real embedded model, and outcomes of every failure kind."""

from __future__ import annotations

import json

import pytest

from imad.critique.call import SelfCritique, answer_token_probabilities
from imad.errors import ConfigError, LLMServerError, TruncatedResponseError
from imad.llm.scripted import ScriptedChat
from imad.llm.types import ChatResponse, TokenLogprob
from imad.question import Question, TaskType
from training.data import load_questions

MCQ = Question("Which drug is an opioid?", TaskType.MULTIPLE_CHOICE,
               ("Aspirin", "Ibuprofen", "Paracetamol", "Morphine"), id="q1")
GOOD = {"initial_answer": "D", "initial_reasoning": "Morphine binds opioid receptors.",
        "critique": "C is a painkiller too.", "alternative_answer": "C", "final_answer": "D",
        "confidence_initial": 80, "confidence_critique": 30}


@pytest.mark.llm
@pytest.mark.long_e2e
def test_real_model_on_a_pubmedqa_question(embedded_model, data_dir):
    question = load_questions("pubmedqa", data_dir=data_dir, limit=1)[0]
    result = SelfCritique(embedded_model, confidence_source="token_probability").run(question)
    assert result.status == "ok", result.error
    response = result.response
    assert response.initial_answer in ("yes", "no", "maybe")
    assert response.final_answer in ("yes", "no", "maybe")
    assert len(response.initial_reasoning) >= 30 and len(response.critique) >= 30
    assert 0.0 <= response.confidence_initial <= 1.0 and 0.0 <= response.confidence_critique <= 1.0
    assert result.prompt_tokens > 100 and result.completion_tokens > 10
    assert 0.0 < result.answer_probabilities["initial_answer"] <= 1.0


def test_parse_failure_is_a_result_not_an_exception():
    chat = ScriptedChat(lambda request: "I refuse to answer in JSON.")
    result = SelfCritique(chat).run(MCQ)
    assert result.status == "parse_error" and not result.ok
    assert result.raw_text == "I refuse to answer in JSON."
    assert "not valid JSON" in result.error


def test_truncation_is_reported_and_keeps_the_text():
    class Cut(ScriptedChat):
        def chat(self, request):
            raise TruncatedResponseError(ChatResponse('{"initial_answer": "D", "initial_re',
                                                      "scripted", 50, 512, "length", 1.0))

    result = SelfCritique(Cut(lambda r: "")).run(MCQ)
    assert result.status == "truncated"
    assert result.raw_text.startswith('{"initial_answer"')
    assert result.completion_tokens == 512


def test_llm_failure_is_recorded():
    def fail(request):
        raise LLMServerError("HTTP 503")

    result = SelfCritique(ScriptedChat(fail)).run(MCQ)
    assert result.status == "llm_error" and "LLMServerError" in result.error


def test_schema_is_sent_when_supported_and_strict_parsing_used():
    chat = ScriptedChat(lambda request: json.dumps(GOOD))
    result = SelfCritique(chat).run(MCQ)
    assert result.ok and result.response.confidence_initial == pytest.approx(0.8)
    schema = chat.calls[0].json_schema
    assert schema["properties"]["final_answer"]["enum"] == ["A", "B", "C", "D"]


def test_token_probability_confidence_source():
    text = json.dumps(GOOD)
    # one token per character, each with probability 0.5, so "D" (one character) has p = 0.5
    tokens = tuple(TokenLogprob(ch, -0.6931471805599453) for ch in text)
    chat = ScriptedChat(lambda request: (text, tokens))
    result = SelfCritique(chat, confidence_source="token_probability").run(MCQ)
    assert result.confidence_source == "token_probability"
    assert result.response.confidence_initial == pytest.approx(0.5)
    assert result.response.confidence_critique == pytest.approx(0.5)


def test_answer_token_probabilities_need_aligned_tokens():
    assert answer_token_probabilities('{"initial_answer": "D"}', None) == {}
    assert answer_token_probabilities('{"initial_answer": "D"}', (TokenLogprob("x", -1.0),)) == {}


def test_config_is_validated():
    with pytest.raises(ConfigError, match="confidence_source"):
        SelfCritique(ScriptedChat(lambda r: ""), confidence_source="vibes")
