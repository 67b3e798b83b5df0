"""Hostile values for the policy constructors: every τ goes through `imad.policy.check_tau`."""

from __future__ import annotations

import math

import pytest

from imad.errors import ConfigError, ServeError
from imad.policy import FixedThreshold, check_tau
from imad.router.config import Threshold
from imad.serve.model_names import parse_model_name
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
    with pytest.raises(ConfigError, match="tau_source: must be one of checkpoint, request"):
        FixedThreshold(0.5, source="budget")


@pytest.mark.parametrize("name", ["imad-acemad-2", "imad-1.5", "imad-svrmad-" + "9" * 400])
def test_model_name_suffix_out_of_range_is_a_400(name):
    with pytest.raises(ServeError) as raised:
        parse_model_name(name, default_backend="acemad", default_tau=None)
    assert raised.value.status == 400 and raised.value.code == "invalid_threshold"
