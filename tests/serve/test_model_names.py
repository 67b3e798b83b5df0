"""Model names select back-end and τ: `imad`, `imad-acemad`, `imad-svrmad-0.7`, `imad-0.5`."""

from __future__ import annotations

import pytest

from imad.errors import ServeError
from imad.serve.openai.model_names import ModelChoice, listed_model_names, parse_model_name


@pytest.mark.parametrize(("name", "expected"), [
    ("imad", ModelChoice("imad", "acemad", 0.6)),
    ("imad-acemad", ModelChoice("imad-acemad", "acemad", 0.6)),
    ("imad-svrmad", ModelChoice("imad-svrmad", "svrmad", 0.6)),
    ("imad-svrmad-0.7", ModelChoice("imad-svrmad-0.7", "svrmad", 0.7)),
    ("imad-acemad-0", ModelChoice("imad-acemad-0", "acemad", 0.0)),
    ("imad-acemad-1", ModelChoice("imad-acemad-1", "acemad", 1.0)),
    ("imad-0.25", ModelChoice("imad-0.25", "acemad", 0.25)),
])
def test_names_select_backend_and_tau(name, expected):
    assert parse_model_name(name, default_backend="acemad", default_tau=0.6) == expected


def test_default_tau_none_keeps_the_checkpoint_threshold():
    assert parse_model_name("imad-svrmad", default_backend="acemad", default_tau=None).tau is None


@pytest.mark.parametrize("name", ["gpt-4o", "imad-cot", "imad-mad-0.5", "imad-svrmad-x", "IMAD", "imad-",
                                  "imad-acemad-0.7-extra", "imadacemad", ""])
def test_unknown_names_are_404_naming_what_exists(name):
    with pytest.raises(ServeError) as caught:
        parse_model_name(name, default_backend="acemad", default_tau=None)
    assert (caught.value.status, caught.value.code, caught.value.param) == (404, "model_not_found", "model")
    assert "imad-acemad" in caught.value.message and "imad-svrmad-0.7" in caught.value.message


@pytest.mark.parametrize("name", ["imad-acemad-1.5", "imad-2"])
def test_tau_outside_0_1_is_a_400(name):
    with pytest.raises(ServeError) as caught:
        parse_model_name(name, default_backend="acemad", default_tau=None)
    assert (caught.value.status, caught.value.code) == (400, "invalid_threshold")
    assert "[0, 1]" in caught.value.message


def test_listed_names():
    assert listed_model_names() == ["imad", "imad-acemad", "imad-svrmad"]
