"""The one KEY=VALUE reader (`imad.keyvalue`), alone and through every flag that uses it."""

from __future__ import annotations

import math

import pytest

import imad.llm.spec as spec_module
from imad.cli.debate import parse_overrides
from imad.errors import ConfigError
from imad.keyvalue import parse_assignments, parse_value, split_assignment
from imad.llm.scripted import ScriptedChat
from imad.llm.spec import chat_model_from_spec
from training.evaluate import parse_backend_options


@pytest.mark.parametrize(("raw", "expected"), [
    ("true", True), ("True", True), ("TRUE", True), ("false", False), ("False", False),
    ("none", None), ("None", None), ("null", None),
    ("0", 0), ("3", 3), ("-2", -2), (" 7 ", 7), ("1_000", 1000),
    ("0.5", 0.5), ("1e-3", 0.001), ("-2.25", -2.25),
    ("[1, 2]", [1, 2]), ('["a", true]', ["a", True]), ('{"x": 1}', {"x": 1}),
    ('"0"', "0"), ('"text"', "text"), ('"false"', "false"),
    ("text", "text"), ("hard", "hard"), ("False!", "False!"), ("", ""),
    ("http://h:8/v1", "http://h:8/v1"),
])
def test_parse_value_table(raw, expected):
    value = parse_value(raw, "key")
    assert value == expected and type(value) is type(expected)


def test_nan_is_a_float_for_the_config_to_reject():
    assert math.isnan(parse_value("nan", "eta"))


@pytest.mark.parametrize("raw", ["[1, 2", "{x: 1}", '"unterminated', "[true,]"])
def test_broken_json_is_an_error_naming_the_key(raw):
    with pytest.raises(ConfigError, match="^--set n_agents: ") as caught:
        parse_value(raw, "--set n_agents")
    assert caught.value.field == "--set n_agents"


@pytest.mark.parametrize("item", ["nonsense", "=3", " =3"])
def test_an_assignment_needs_a_key_and_an_equals_sign(item):
    with pytest.raises(ConfigError, match=r"^--set: expected KEY=VALUE, e\.g\. n_agents=3"):
        split_assignment(item, "--set", "n_agents=3")


def test_parse_assignments_keeps_the_last_of_a_repeated_key():
    assert parse_assignments(["a=1", "b = x", "a=false"], "--set", "a=1") == {"a": False, "b": "x"}


# --- the same text gives the same value through every KEY=VALUE flag ---------------------------

TEXTS = {"False": False, "false": False, "0": 0, "text": "text", "none": None, "0.25": 0.25}


def _through_set(raw: str) -> object:
    return parse_overrides([f"show_influence={raw}"])["show_influence"]


def _through_backend_option(raw: str) -> object:
    return parse_backend_options([f"acemad.show_influence={raw}"])["acemad"]["show_influence"]


def _through_llm_spec(raw: str, monkeypatch: pytest.MonkeyPatch) -> object:
    seen: dict[str, object] = {}

    def build(target: str, options: dict[str, object]) -> ScriptedChat:
        seen.update(options)
        return ScriptedChat(lambda request: "")

    monkeypatch.setitem(spec_module.BACKENDS, "fake", build)
    chat_model_from_spec(f"fake:x?flag={raw}")
    return seen["flag"]


@pytest.mark.parametrize(("raw", "expected"), list(TEXTS.items()))
def test_every_key_value_flag_reads_the_same_value(raw, expected, monkeypatch):
    values = [_through_set(raw), _through_backend_option(raw), _through_llm_spec(raw, monkeypatch)]
    assert values == [expected] * 3
    assert all(type(v) is type(expected) for v in values)


def test_backend_option_false_is_false_not_the_truthy_string():
    # Read as JSON, "False" stayed the string "False" and switched the option on.
    assert parse_backend_options(["acemad.show_influence=False"]) == {
        "acemad": {"show_influence": False}}


def test_flag_errors_name_the_flag_and_key():
    with pytest.raises(ConfigError, match=r"^--backend-option acemad\.eta: "):
        parse_backend_options(["acemad.eta=[1,"])
    with pytest.raises(ConfigError, match="^--backend-option: write BACKEND.FIELD=VALUE"):
        parse_backend_options(["eta=1"])
    with pytest.raises(ConfigError, match=r"^--set eta: "):
        parse_overrides(["eta={"])
