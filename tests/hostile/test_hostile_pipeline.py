"""Hostile input to the pipeline (issue 14, items 1, 2, 3, 10): too large, non-finite, invalid text.

The rules under test: a prompt that cannot fit the model's context is an `InputTooLargeError`
before any call (choices count); a non-finite router score never keeps an answer; a response
that is not valid Unicode is a recorded parse failure whose raw text can still be saved; a
question that is not valid Unicode is refused where it enters; a cancelled request stops at its
next LLM call. The property drives the pipeline with hostile model output and checks that only
typed outcomes come back and that nothing non-finite leaves it.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imad.decide.policy import FixedThreshold
from imad.errors import InputTooLargeError, InvalidQuestionError, RequestCancelledError
from imad.llm.cancel import CancellableChat
from imad.llm.scripted import ScriptedChat
from imad.pipeline import Pipeline
from imad.question import Question, TaskType
from tests.router.router_helpers import make_router
from tests.support.nan_router import NaNRouter

YNM = Question("Does exercise lower blood pressure?", TaskType.YES_NO_MAYBE, id="q")
CRITIQUE = {"initial_answer": "yes", "initial_reasoning": "Trials show a drop of a few mmHg.",
            "critique": "No, the effect may be too small to matter.", "alternative_answer": "no",
            "final_answer": "yes", "confidence_initial": 80, "confidence_critique": 20}
SMALL_SVRMAD = {"n_agents": 3, "consensus_agree": 3}


def answer_all(text: str):
    """A scripted reply: `text` to the self-critique, a valid "yes" to every debate call."""

    def respond(request):
        properties = (request.json_schema or {}).get("properties", {})
        if "critique" in properties or not properties:
            return text
        return json.dumps({name: ("yes" if name == "answer" else 90 if "confidence" in name
                                  else "Because yes.") for name in properties})

    return respond


def pipeline(chat, tau: float = 0.0, router=None) -> Pipeline:
    return Pipeline(router or make_router(), chat, "svrmad",
                    policy=None if tau is None else FixedThreshold(tau), backend_options=SMALL_SVRMAD)


def with_raw(field: str, literal: str) -> str:
    data = dict(CRITIQUE, **{field: "@@"})
    return json.dumps(data).replace('"@@"', literal)


# --- too large for the context window (item 1) ---------------------------------------------------

TOO_LARGE = [
    ("context of 1,000 words in a 600-token window", 600,
     Question("Is it?", TaskType.YES_NO_MAYBE, context="word " * 1000)),
    ("26 choices of 150 words each in a 4,096-token window", 4096,
     Question("Which one?", TaskType.MULTIPLE_CHOICE,
              tuple(f"option {i} " + "word " * 150 for i in range(26)))),
    ("a question that fits but leaves no room for the 512 reserved tokens", 700,
     Question("Is it " + "really " * 300 + "so?", TaskType.YES_NO_MAYBE)),
]


@pytest.mark.parametrize(("name", "window", "question"), TOO_LARGE, ids=[c[0] for c in TOO_LARGE])
def test_too_large_is_refused_before_any_call(name, window, question):
    chat = ScriptedChat(answer_all(json.dumps(CRITIQUE)), context_window=window)
    with pytest.raises(InputTooLargeError) as caught:
        pipeline(chat).answer(question)
    assert chat.calls == []
    error = caught.value
    assert error.context_tokens == window and error.reserved_tokens == 512
    assert error.prompt_tokens + error.reserved_tokens > window
    assert f"context window of {window:,} tokens" in str(error)


@pytest.mark.llm
def test_issue_reproduction_with_the_embedded_model(embedded_model):
    """'word ' * 3998 as context: 4,185 prompt tokens by llama.cpp's own count, refused unasked."""
    question = Question("Is it?", TaskType.YES_NO_MAYBE, context="word " * 3998)
    with pytest.raises(InputTooLargeError) as caught:
        Pipeline(make_router(), embedded_model, "svrmad", policy=FixedThreshold(0.0)).answer(question)
    assert (caught.value.prompt_tokens, caught.value.context_tokens) == (4185, 4096)


# --- non-finite scores, invalid text, cancellation (items 2, 3, 10) --------------------------------


def test_non_finite_score_escalates_with_the_reason():
    chat = ScriptedChat(answer_all(json.dumps(CRITIQUE)))
    result = pipeline(chat, tau=None, router=NaNRouter()).answer(YNM)
    assert result.escalated and result.decision.p is None and result.source == "debate"
    assert result.decision.reasons[0].startswith("router score is not finite (p nan, u ")
    assert result.decision.score_status == "non_finite"
    json.dumps(result.to_dict(), allow_nan=False)


RESPONSES_NOT_UNICODE = [
    ("raw lone surrogate after the JSON", json.dumps(CRITIQUE) + "\ud800"),
    ("JSON escape of a lone surrogate in the reasoning",
     with_raw("initial_reasoning", '"Trials \\ud800 show."')),
    ("5,000-digit confidence", with_raw("confidence_initial", "9" * 5000)),
]


@pytest.mark.parametrize(("name", "text"), RESPONSES_NOT_UNICODE, ids=[c[0] for c in RESPONSES_NOT_UNICODE])
def test_bad_response_is_a_recorded_parse_failure(name, text):
    chat = ScriptedChat(answer_all(text))
    result = pipeline(chat).answer(YNM)
    assert result.critique.status == "parse_error" and result.escalated and result.answer == "yes"
    assert result.decision.p is None and result.decision.parse_status == "unparsed"
    record = json.dumps(result.to_dict(), ensure_ascii=False, allow_nan=False)
    record.encode("utf-8")  # a corpus or log can store it; the surrogate is kept as its escape
    assert result.critique.raw_text.startswith(text[:20])


@pytest.mark.parametrize("field", ["text", "context", "choices"])
def test_question_with_a_lone_surrogate_is_refused_where_it_enters(field):
    values = {"text": "Which one?", "context": "", "choices": ("red", "blue")}
    values[field] = ("red", "bl\udc80ue") if field == "choices" else values[field] + "\udc80"
    with pytest.raises(InvalidQuestionError, match="not valid Unicode text: a lone surrogate U\\+DC80"):
        Question(values["text"], TaskType.MULTIPLE_CHOICE, values["choices"], context=values["context"])


def test_cancelled_pipeline_stops_at_its_next_call():
    cancellable: list[CancellableChat] = []

    def respond(request):
        cancellable[0].cancel("the client disconnected")  # the client leaves during the first call
        return answer_all(json.dumps(CRITIQUE))(request)

    chat = ScriptedChat(respond)
    cancellable.append(CancellableChat(chat))
    with pytest.raises(RequestCancelledError, match="the client disconnected"):
        pipeline(cancellable[0], tau=1.0).answer(YNM)  # τ 1: a debate would follow
    assert len(chat.calls) == 1


# --- property ------------------------------------------------------------------------------------

HOSTILE_TEXT = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=()), max_size=200),
    st.builds(with_raw, st.sampled_from(sorted(CRITIQUE)),
              st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "9" * 500, '"\\ud800"', "null",
                               "[[[[1]]]]", '"There is no doubt: yes"', '"12:30"', '"1e5"'])),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=HOSTILE_TEXT, tau=st.sampled_from([0.0, 1.0]))
def test_property_hostile_model_output_gives_a_typed_outcome(text, tau):
    result = pipeline(ScriptedChat(answer_all(text)), tau=tau).answer(YNM)
    assert result.source in ("single_agent", "debate", "single_agent_fallback", "none")
    assert result.decision.p is None or math.isfinite(result.decision.p)
    assert result.escalated or result.critique.ok
    json.dumps(result.to_dict(), ensure_ascii=False, allow_nan=False).encode("utf-8")
