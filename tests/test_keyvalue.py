"""The one KEY=VALUE reader (`imad.keyvalue`), alone and through every flag that uses it.

Values are typed by the field's row in its constraints table (issue 24), not guessed."""

from __future__ import annotations

import pytest

from imad.cli.debate import parse_overrides
from imad.errors import ConfigError
from imad.keyvalue import parse_assignments, split_assignment
from imad.llm.spec import chat_model_from_spec
from training.evaluate import parse_backend_options


@pytest.mark.parametrize("item", ["nonsense", "=3", " =3"])
def test_an_assignment_needs_a_key_and_an_equals_sign(item):
    with pytest.raises(ConfigError, match=r"^--set: expected KEY=VALUE, e\.g\. n_agents=3"):
        split_assignment(item, "--set", "n_agents=3")


def test_parse_assignments_keeps_the_last_of_a_repeated_key_as_text():
    assert parse_assignments(["a=1", "b = x", "a=false"], "--set", "a=1") == {"a": "false", "b": " x"}


@pytest.mark.parametrize(("field", "raw", "expected"), [
    ("show_influence", "true", True), ("show_influence", "False", False),
    ("n_agents", "3", 3), ("n_agents", " 7 ", 7), ("n_agents", "1_0", 10),
    ("eta", "0.5", 0.5), ("eta", "1e-3", 0.001), ("eta", "2", 2.0),
    ("aggregation", "hard", "hard"),
])
def test_set_reads_each_field_by_its_type(field, raw, expected):
    value = parse_overrides([f"{field}={raw}"])[field]
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(("field", "raw"), [
    ("n_agents", "abc"), ("n_agents", "2.5"), ("n_agents", "3.0"), ("n_agents", "١٢"),
    ("n_agents", "none"), ("n_agents", "[]"), ("n_agents", "1e400"), ("n_agents", "inf"),
    ("show_influence", "maybe"), ("show_influence", "1"), ("top_logprobs", "5.5"),
    ("eta", "nan"), ("eta", "inf"), ("eta", "1e308"), ("aggregation", "Hard"),
])
def test_set_refuses_text_its_field_does_not_allow(field, raw):
    with pytest.raises(ConfigError, match=f"^--set {field}: must be ") as caught:
        parse_overrides([f"{field}={raw}"])
    assert repr(raw)[:20] in str(caught.value)


def test_set_names_an_unknown_field_and_the_known_ones():
    with pytest.raises(ConfigError, match="^--set n_agent: unknown setting of AceMADConfig; known: "):
        parse_overrides(["n_agent=3"])


def test_set_is_typed_by_the_chosen_backend():
    assert parse_overrides(["n_samples=4"], "self_consistency") == {"n_samples": 4}
    with pytest.raises(ConfigError, match="^--set n_samples: unknown setting of AceMADConfig"):
        parse_overrides(["n_samples=4"])


def test_the_same_text_gives_the_same_value_through_set_and_backend_option():
    for raw, expected in (("False", False), ("true", True)):
        assert parse_overrides([f"show_influence={raw}"]) == {"show_influence": expected}
        assert parse_backend_options([f"acemad.show_influence={raw}"]) == {
            "acemad": {"show_influence": expected}}


def test_llm_options_are_typed_by_the_backend_class():
    model = chat_model_from_spec("openai:m@http://127.0.0.1:9/v1?api_key=123&max_retries=0"
                                 "&context_window=none&supports_logprobs=false")
    assert (model.api_key, model.max_retries, model.context_window, model.supports_logprobs) == (
        "123", 0, None, False)


@pytest.mark.parametrize("option", ["timeout=1e308", "max_retries=1000000000", "max_retries=1.5",
                                    "context_window=0", "structured_output=xml",
                                    "extra_headers=%5B%5B%5B%5B%5B%5B%5B%5B%5B1%5D%5D%5D%5D%5D%5D%5D%5D%5D"])
def test_llm_options_out_of_their_row_are_config_errors(option):
    key = option.split("=")[0]
    with pytest.raises(ConfigError, match=f"^--llm option {key}: must be "):
        chat_model_from_spec(f"openai:m@http://127.0.0.1:9/v1?{option}")


def test_flag_errors_name_the_flag_and_key():
    with pytest.raises(ConfigError, match=r"^--backend-option acemad\.eta: must be "):
        parse_backend_options(["acemad.eta=[1,"])
    with pytest.raises(ConfigError, match="^--backend-option: write BACKEND.FIELD=VALUE"):
        parse_backend_options(["eta=1"])
    with pytest.raises(ConfigError, match="^--backend-option nope.eta: unknown debate back-end|^backend: "):
        parse_backend_options(["nope.eta=1"])
