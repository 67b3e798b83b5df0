"""Belief parsing, log-prob option scoring, tolerant reply parsing, peer lines and the vote."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from imad.debate.beliefs import (
    min_logprob_prior,
    option_distribution,
    parse_distribution,
    perplexity_prior,
)
from imad.debate.parsing import argument_from, parse_answer, parse_confidence, parse_json_object
from imad.debate.prompts import PeerMessage, format_peer, parse_peers
from imad.debate.voting import majority_vote
from imad.llm.types import TokenLogprob
from imad.question import Question, TaskType
from tests.debate.helpers import MCQ

KEYS = ("A", "B", "C", "D")


@pytest.mark.parametrize(("value", "expected"), [
    ({"A": 20, "B": 30, "C": 50, "D": 0}, (0.2, 0.3, 0.5, 0.0)),
    ({"a": 0.5, "d": "50%"}, (0.5, 0.0, 0.0, 0.5)),  # case-insensitive, missing keys are 0
    ([1, 1, 1, 1], (0.25, 0.25, 0.25, 0.25)),
    ({"A": 100, "B": 100, "C": 0, "D": 0, "E": 9}, (0.5, 0.5, 0.0, 0.0)),  # unknown key ignored
])
def test_parse_distribution_renormalises(value, expected):
    assert parse_distribution(value, KEYS) == pytest.approx(expected)


@pytest.mark.parametrize("value", [None, "high", {"A": 0, "B": 0}, {"A": -1, "B": 3},
                                   [1, 2], {"A": float("nan")}, {"A": True}, 0.7])
def test_parse_distribution_rejects_unusable_values(value):
    assert parse_distribution(value, KEYS) is None


@given(st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=4, max_size=4))
def test_parsed_distributions_are_proper(values):
    parsed = parse_distribution(dict(zip(KEYS, values, strict=True)), KEYS)
    if sum(values) > 0:
        assert parsed is not None and math.isclose(sum(parsed), 1.0) and min(parsed) >= 0
    else:
        assert parsed is None


def test_option_distribution_handles_a_quote_glued_to_the_letter():
    tokens = (TokenLogprob('{"answer":', -0.1),
              TokenLogprob(' "B', math.log(0.5), {' "B': math.log(0.5), ' "A': math.log(0.3),
                                                   ' "\n': math.log(0.1)}),
              TokenLogprob('"}', -0.1))
    assert option_distribution(tokens, "answer", KEYS) == pytest.approx((0.375, 0.625, 0, 0))


def test_option_distribution_maps_prefixes_of_word_options():
    tokens = (TokenLogprob('{"answer":"', -0.1),
              TokenLogprob("may", math.log(0.4), {"may": math.log(0.4), "yes": math.log(0.4),
                                                  "n": math.log(0.2)}),
              TokenLogprob('be"}', -0.1))
    assert option_distribution(tokens, "answer", ("yes", "no", "maybe")) == pytest.approx(
        (0.4, 0.2, 0.4))


def test_option_distribution_is_none_without_the_field_or_logprobs():
    tokens = (TokenLogprob('{"other":"A"}', -0.1),)
    assert option_distribution(tokens, "answer", KEYS) is None
    assert option_distribution(None, "answer", KEYS) is None


def test_logprob_priors():
    tokens = tuple(TokenLogprob("t", lp) for lp in (-0.2, -2.0, -0.1))
    assert min_logprob_prior(tokens) == pytest.approx(math.exp(-2.0))
    assert perplexity_prior(tokens) == pytest.approx(math.exp(-2.3 / 3))
    assert min_logprob_prior(()) is None and perplexity_prior(None) is None
    # With fields, only the tokens of those values count (a glued quote counts with its letter).
    json_tokens = (TokenLogprob('{"answer":', -8.0), TokenLogprob(' "B', -0.4),
                   TokenLogprob('"}', -8.0))
    assert perplexity_prior(json_tokens, fields=("answer",)) == pytest.approx(math.exp(-0.4))
    assert perplexity_prior(json_tokens, fields=("missing",)) == pytest.approx(
        math.exp(-16.4 / 3))


@pytest.mark.parametrize(("text", "expected"), [("0.8", 0.8), ("80", 0.8), ("85%", 0.85),
                                                (100, 1.0), (250, 1.0), ("high", None),
                                                (-3, None), (True, None)])
def test_parse_confidence(text, expected):
    assert parse_confidence(text) == (pytest.approx(expected) if expected is not None else None)


def test_tolerant_reply_parsing():
    text = 'Sure! {"argument": "It is an opioid.", "answer": "(d)", "confidence": "90%"} Done.'
    data = parse_json_object(text)
    assert data is not None and parse_answer(text, MCQ, data) == "D"
    assert parse_answer("My answer is: Morphine", MCQ) == "D"  # option text → letter
    assert parse_answer("no idea", MCQ) == ""
    numeric = Question("How many?", TaskType.NUMERIC)
    assert parse_answer('{"answer": "1,024"}', numeric, parse_json_object('{"answer": "1,024"}')) \
        == "1024"
    assert parse_json_object("[1, 2]") is None


def test_argument_survives_broken_json():
    assert argument_from('{"argument": "Opioid receptor agonist", "answer": "D"', None) \
        == "Opioid receptor agonist"
    assert argument_from("just prose", None) == "just prose"


def test_peer_lines_round_trip():
    peers = [PeerMessage("agent_1", "B", "Because  of\nX", 0.25), PeerMessage("judge", "C", "y")]
    text = "\n".join(format_peer(p, 100) for p in peers)
    parsed = parse_peers("Question: q\n" + text + "\nYour last answer: A.")
    assert parsed == [PeerMessage("agent_1", "B", "Because of X", 0.25),
                      PeerMessage("judge", "C", "y")]


def test_majority_vote_tie_breaks():
    assert majority_vote(["B", "A", "A", "B"]) == "B"  # first occurrence, not string order
    assert majority_vote(["B", "A", "A", "B"], tie_break=["A", "A", "B"]) == "A"
    assert majority_vote(["", "", "C"]) == "C"
    assert majority_vote(["", ""]) == ""


@pytest.mark.parametrize("text", ["[" * 3000, "{" * 3000 + "}" * 3000, '{"a": ' * 5000 + "1" + "}" * 5000])
def test_nesting_too_deep_is_no_object_not_a_crash(text):
    assert parse_json_object(text) is None
    assert parse_answer(text, MCQ, parse_json_object(text)) == ""
