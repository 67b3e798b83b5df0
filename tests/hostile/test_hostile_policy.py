"""Hostile values for the policy constructors: every τ goes through `imad.routing_options.check_tau`."""

from __future__ import annotations

import math

import pytest

from imad.decide import FixedThreshold, check_tau
from imad.errors import ConfigError, ServeError
from imad.router.config import Threshold
from imad.serve.openai.model_names import parse_model_name
from imad.serve.settings import ServeSettings

HOSTILE_TAUS = [
    pytest.param(math.nan, id="nan"),
    pytest.param(math.inf, id="inf"),
    pytest.param(-math.inf, id="-inf"),
    pytest.param(float("1e999"), id="1e999"),
    pytest.param(2, id="two"),
    pytest.param(-0.01, id="negative"),
    pytest.param("x", id="string"),
    pytest.param("0.5", id="numeric-string"),
    pytest.param(True, id="bool"),
    pytest.param(None, id="none"),
    pytest.param([0.5], id="list"),
    pytest.param(10**400, id="400-digit-integer"),
    pytest.param("\ud800", id="lone-surrogate"),
]


@pytest.mark.parametrize("value", HOSTILE_TAUS)
def test_check_tau_refuses_with_the_field_named(value):
    with pytest.raises(ConfigError, match=r"^--tau: must be a number in \[0, 1\]"):
        check_tau(value, "--tau")


def test_a_huge_integer_is_described_not_printed():
    with pytest.raises(ConfigError, match="an integer of 401 digits") as raised:
        check_tau(10**400)
    assert len(str(raised.value)) < 120


@pytest.mark.parametrize("value", HOSTILE_TAUS)
def test_every_entry_point_uses_the_same_check(value):
    builders = [FixedThreshold, lambda tau: Threshold(tau)]
    if value is not None:  # None is the server's "the checkpoint's τ"
        builders.append(lambda tau: ServeSettings(default_tau=tau))
    for build in builders:
        with pytest.raises(ConfigError, match=r"must be (none or )?a number in \[0, 1\]"):
            build(value)


@pytest.mark.parametrize("value, expected", [(0, 0.0), (1, 1.0), (0.7, 0.7)])
def test_the_bounds_are_inclusive_and_give_floats(value, expected):
    tau = check_tau(value)
    assert tau == expected and type(tau) is float
    assert FixedThreshold(value).tau == expected


def test_fixed_threshold_source_is_checked():
    assert FixedThreshold(0.5, source="checkpoint").source == "checkpoint"
    with pytest.raises(ConfigError, match="tau_source: must be one of 'checkpoint', 'request', got 'budget'"):
        FixedThreshold(0.5, source="budget")


@pytest.mark.parametrize("name", ["imad-acemad-2", "imad-1.5", "imad-svrmad-" + "9" * 400])
def test_model_name_suffix_out_of_range_is_a_400(name):
    with pytest.raises(ServeError) as raised:
        parse_model_name(name, default_backend="acemad", default_tau=None)
    assert raised.value.status == 400 and raised.value.code == "invalid_threshold"


# --- every policy constructor argument (issue 21): a typed ConfigError naming the argument --------

HOSTILE_VALUES = [
    pytest.param(math.nan, id="nan"),
    pytest.param(math.inf, id="inf"),
    pytest.param(-math.inf, id="-inf"),
    pytest.param(1e308, id="1e308"),
    pytest.param(10**400, id="400-digit-integer"),
    pytest.param(True, id="bool"),
    pytest.param("0.5", id="numeric-string"),
    pytest.param("\ud800", id="lone-surrogate"),
    pytest.param(None, id="none"),
    pytest.param([0.5], id="list"),
    pytest.param({"tau": 0.5}, id="dict"),
]


def _policy_builders():
    """Every argument of the policy's constructors. TriggerBudget's numeric settings have their
    own table (tests/hostile/test_hostile_trigger_budget.py); its warm-up τ and source are here."""
    from imad.decide.budget import TriggerBudget
    from imad.decide.policy import Policy

    rule = FixedThreshold(0.5)
    return {
        "FixedThreshold.tau": (lambda v: FixedThreshold(v), "tau"),
        "FixedThreshold.source": (lambda v: FixedThreshold(0.5, source=v), "tau_source"),
        "FixedThreshold.method": (lambda v: FixedThreshold(0.5, method=v), "method"),
        "Policy.rule": (lambda v: Policy(v), "rule"),
        "Policy.ood_policy": (lambda v: Policy(rule, ood_policy=v), "ood_policy"),
        "Policy.max_cues": (lambda v: Policy(rule, max_cues=v), "max_cues"),
        "TriggerBudget.initial_source": (lambda v: TriggerBudget(0.2, initial_source=v),
                                         "initial_source"),
        "TriggerBudget.initial_threshold": (lambda v: TriggerBudget(0.2, initial_threshold=v),
                                            "initial_threshold"),
    }


@pytest.mark.parametrize("argument", sorted(_policy_builders()))
@pytest.mark.parametrize("value", HOSTILE_VALUES)
def test_every_policy_argument_refuses_hostile_values_naming_itself(argument, value):
    build, field = _policy_builders()[argument]
    if argument == "FixedThreshold.method" and isinstance(value, str):
        assert build(value).method == value  # any text says how τ was chosen
        return
    if argument == "TriggerBudget.initial_threshold" and value is None:
        assert build(value).initial_threshold is None  # no warm-up τ: the quantile from the start
        return
    with pytest.raises(ConfigError) as raised:
        build(value)
    assert raised.value.field == field
    assert len(str(raised.value)) < 400  # a 400-digit integer is described, not printed


def test_a_rule_that_returns_a_hostile_tau_or_source_is_refused_when_deciding():
    from imad.decide import RouterScore
    from imad.decide.policy import Policy

    class Broken:
        def __init__(self, tau, source):
            self.tau, self.source = tau, source

        def threshold_for(self, p):
            return self.tau, self.source

    score = RouterScore(id="q", p=0.5)
    for tau, source, field in [(math.nan, "request", "tau"), (10**400, "request", "tau"),
                               (0.5, "elsewhere", "tau_source"), (0.5, None, "tau_source")]:
        with pytest.raises(ConfigError) as raised:
            Policy(Broken(tau, source)).decide(score)
        assert raised.value.field == field


@pytest.mark.parametrize("value", [FixedThreshold, 0.5, "budget", math.nan, 10**400, True])
def test_pipeline_policy_argument_refuses_what_is_not_a_policy(value):
    from imad.llm.scripted import ScriptedChat
    from imad.pipeline import Pipeline
    from tests.router.router_helpers import make_router

    with pytest.raises(ConfigError) as raised:
        Pipeline(make_router(), ScriptedChat(lambda request: "{}"), "svrmad", policy=value)
    assert raised.value.field == "policy"


@pytest.mark.parametrize("score", ["x", None, 0.5, {"p": 0.5}], ids=["text", "None", "a float", "a dict"])
def test_decide_refuses_what_is_not_a_router_score(score):
    """Each was an AttributeError ('… has no attribute parse_status') from inside the policy."""
    from imad.decide import Policy

    with pytest.raises(ConfigError, match="^score: expected an imad.decide.RouterScore"):
        Policy(FixedThreshold(0.5)).decide(score)


HOSTILE_SCORES = [  # (field, value): a RouterScore built by hand
    ("p", "0.5"),      # a TypeError when deciding
    ("p", 1.5),        # kept under a fixed τ, refused by a trigger budget
    ("p", -1.0),
    ("p", True),       # decided as p = 1.0
    ("raw", "0.5"),
    ("raw", 2.0),
    ("cues", None),    # a TypeError when deciding
    ("cues", [("q_tokens", 1.0)]),
]


@pytest.mark.parametrize(("field", "value"), HOSTILE_SCORES, ids=[f"{f}={v!r}" for f, v in HOSTILE_SCORES])
def test_a_router_score_refuses_hostile_values_naming_the_field(field, value):
    from imad.decide import RouterScore

    with pytest.raises(ConfigError, match=f"^{field}: must be"):
        RouterScore(**{"id": "a", "p": 0.5, field: value})


@pytest.mark.parametrize("p", [math.nan, math.inf, None, 0.0, 1.0])
def test_a_non_finite_or_edge_score_is_still_a_router_score(p):
    from imad.decide import Policy, RouterScore

    decision = Policy(FixedThreshold(0.5)).decide(RouterScore("a", p))
    assert decision.escalate is (p is None or not math.isfinite(p) or p < 0.5)
