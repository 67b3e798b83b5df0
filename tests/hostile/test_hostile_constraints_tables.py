"""Every config's constraints table, fed the same hostile values through every door (issue 24).

The cases are generated from the tables themselves (`imad.constraints.table_of`): for each
field of each config, each hostile value its row's kind must refuse goes in through the
constructor, and each hostile text through that config's `KEY=VALUE` reader or command-line
flag. Every one must be a `ConfigError` naming the field (or, for a flag argparse reads first,
a usage error naming the flag); a row whose bounds let a huge count or 1e308 through fails.
"""

from __future__ import annotations

import argparse
import math
from typing import Any
from urllib.parse import quote

import pytest

from imad.cli.calibrate import add_arguments as add_calibrate_arguments
from imad.cli.debate import parse_overrides
from imad.commandline.calibration import target_from_args
from imad.constraints import (
    Boolean,
    Constraint,
    InstanceOf,
    Integer,
    Options,
    Real,
    StringMap,
    Text,
    Texts,
    check_value,
    table_of,
)
from imad.critique.call import SelfCritique
from imad.debate.peer_prediction import aggregate, update_weights
from imad.debate.registry import BACKENDS
from imad.errors import ConfigError
from imad.llm.cache import CachedChat
from imad.llm.local_gguf import LocalGGUFChat
from imad.llm.openai_http import OpenAICompatibleChat
from imad.llm.scripted import ScriptedChat
from imad.llm.spec import chat_model_from_spec
from imad.router.threshold import FLAGS as CALIBRATE_FLAGS
from imad.router.threshold import CalibrationTarget
from imad.serve.settings import ServeSettings, serve_flag
from training.config import FitConfig
from training.corpus import config_from_args as corpus_config_from_args
from training.corpus_config import CorpusConfig, corpus_flag
from training.e2e.config import E2EConfig
from training.evaluate import parse_backend_options
from training.evaluation.config import EvaluateConfig

DEEP_LIST: Any = []
for _ in range(200):
    DEEP_LIST = [DEEP_LIST]

HOSTILE_VALUES: dict[str, Any] = {
    "nan": math.nan, "inf": math.inf, "-inf": -math.inf, "1e308": 1e308, "400 digits": 10**400,
    "huge count": 10**12, "negative": -1, "list": [1], "deep list": DEEP_LIST,
    "lone surrogate": "\ud800", "dict": {"acemad": {"n_agents": {"b": {}}}},
}
"""Python values no row of any table may admit (whatever its type)."""

HOSTILE_TEXTS: dict[str, str] = {
    "nan": "nan", "inf": "inf", "-inf": "-inf", "1e308": "1e308", "1e400": "1e400",
    "400 digits": "1" * 400, "huge count": "1000000000000", "negative": "-1", "list": "[1]",
    "deep json": "[" * 3000, "arabic digits": "١٢", "word": "abc", "empty": "",
}
"""Texts no numeric, boolean or options row may admit (text rows take any text as a string)."""

CONFIGS: dict[type, dict[str, Any]] = {
    **{config_class: {} for config_class, _ in BACKENDS.values()},
    OpenAICompatibleChat: {"model": "m", "base_url": "http://127.0.0.1:9/v1"},
    LocalGGUFChat: {},
    CachedChat: {"inner": ScriptedChat(lambda request: ""), "path": "unused.sqlite"},
    ServeSettings: {},
    FitConfig: {},
    EvaluateConfig: {"datasets": ("medqa",)},
    E2EConfig: {"datasets": ("medqa",)},
    CorpusConfig: {"datasets": ("medqa",)},
    SelfCritique: {"model": ScriptedChat(lambda request: "")},
    CalibrationTarget: {},
}


def _kinds(allowed: Any) -> tuple[Constraint, ...]:
    alternatives = allowed if isinstance(allowed, tuple) else (allowed,)
    return tuple(c for c in alternatives if c is not None)


def _wrong_type(allowed: Any) -> Any:
    kinds = _kinds(allowed)
    if any(isinstance(c, (Text, Texts, Options, InstanceOf, StringMap)) for c in kinds):
        return 3.5
    return "3"


def _constructor_cases() -> list[Any]:
    cases = []
    for config_class in CONFIGS:
        for name, allowed in table_of(config_class).items():
            values = dict(HOSTILE_VALUES, **{"wrong type": _wrong_type(allowed)})
            if all(isinstance(c, Integer) for c in _kinds(allowed)):
                values.update({"2.5": 2.5, "3.0": 3.0, "true": True})
            for label, value in values.items():
                cases.append(pytest.param(config_class, name, value,
                                          id=f"{config_class.__name__}.{name}-{label}"))
    return cases


def _text_cases(config_classes: list[type]) -> list[Any]:
    cases = []
    for config_class in config_classes:
        for name, allowed in table_of(config_class).items():
            kinds = _kinds(allowed)
            if not kinds or not all(isinstance(c, (Integer, Real, Boolean, Options)) for c in kinds):
                continue
            texts = dict(HOSTILE_TEXTS)
            if any(isinstance(c, Integer) for c in kinds):
                texts.update({"2.5": "2.5", "3.0": "3.0"})
            if any(isinstance(c, Options) for c in kinds):
                texts.pop("word")  # an option could be a word; "abc" is none of ours, though
            for label, text in texts.items():
                cases.append(pytest.param(config_class, name, text,
                                          id=f"{config_class.__name__}.{name}-{label}"))
    return cases


@pytest.mark.parametrize("config_class", list(CONFIGS), ids=lambda c: c.__name__)
def test_every_settable_field_has_a_row_and_the_defaults_pass(config_class):
    import dataclasses

    table = table_of(config_class)
    assert {f.name for f in dataclasses.fields(config_class) if f.init} == set(table)
    for name, allowed in table.items():
        field = config_class.__dataclass_fields__[name]
        if field.default is not dataclasses.MISSING:
            check_value(field.default, allowed, name)


@pytest.mark.parametrize(("config_class", "name", "value"), _constructor_cases())
def test_constructor_refuses_every_hostile_value(config_class, name, value, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="must be ") as caught:
        config_class(**{**CONFIGS[config_class], name: value})
    assert name in caught.value.field or caught.value.field == serve_flag(name)


DEBATE_CLASSES = {config_class: backend for backend, (config_class, _) in BACKENDS.items()}


@pytest.mark.parametrize(("config_class", "name", "text"), _text_cases(list(DEBATE_CLASSES)))
def test_set_and_backend_option_refuse_every_hostile_text(config_class, name, text):
    backend = DEBATE_CLASSES[config_class]
    with pytest.raises(ConfigError, match=f"^--set {name}: must be "):
        parse_overrides([f"{name}={text}"], backend)
    with pytest.raises(ConfigError, match=rf"^--backend-option {backend}\.{name}: must be "):
        parse_backend_options([f"{backend}.{name}={text}"])


def _calibrate_flags(name: str, text: str) -> None:
    """`imad calibrate` (and `python -m training.calibrate`) with one target flag's text."""
    parser = argparse.ArgumentParser()
    add_calibrate_arguments(parser)
    flag = CALIBRATE_FLAGS[name]
    other = [] if flag in ("--target-trigger-rate", "--token-budget") else ["--target-trigger-rate=0.2"]
    target_from_args(parser.parse_args([f"{flag}={text}", *other]))


def _corpus_flags(name: str, text: str) -> None:
    """`python -m training.corpus` with one flag's text (read, checked, nothing answered)."""
    corpus_config_from_args(["--dataset", "medqa", f"{corpus_flag(name)}={text}"])


FLAG_DOORS = {CalibrationTarget: (_calibrate_flags, CALIBRATE_FLAGS.__getitem__),
              CorpusConfig: (_corpus_flags, corpus_flag)}


@pytest.mark.parametrize(("config_class", "name", "text"), _text_cases(list(FLAG_DOORS)))
def test_corpus_and_calibrate_flags_refuse_every_hostile_text(config_class, name, text, capsys):
    """A flag's hostile text is a usage error naming the flag: argparse's own (its `ascii_int`
    integers, choices, switches; exit 2) or the row's `ConfigError` (exit 2 at the entry point)."""
    read, flag_of = FLAG_DOORS[config_class]
    with pytest.raises((ConfigError, SystemExit)) as caught:
        read(name, text)
    if isinstance(caught.value, SystemExit):
        assert caught.value.code == 2 and f"argument {flag_of(name)}" in capsys.readouterr().err
    else:
        assert caught.value.field == f"{name} ({flag_of(name)})"
        assert str(caught.value).startswith(f"{name} ({flag_of(name)}): must be ")


SPECS = {OpenAICompatibleChat: "openai:m@http://127.0.0.1:9/v1", LocalGGUFChat: "local"}


@pytest.mark.parametrize(("config_class", "name", "text"), _text_cases(list(SPECS)))
def test_llm_spec_options_refuse_every_hostile_text(config_class, name, text):
    with pytest.raises(ConfigError, match=f"^--llm option {name}: must be "):
        chat_model_from_spec(f"{SPECS[config_class]}?{name}={quote(text)}", reuse_local=False)


def test_the_issue_examples_are_refused_or_kept_as_typed():
    with pytest.raises(ConfigError, match="^--llm option n_threads: must be an integer in"):
        chat_model_from_spec("local?n_threads=1000", reuse_local=False)
    with pytest.raises(ConfigError, match="^OpenAICompatibleChat.api_key|^api_key: must be "):
        OpenAICompatibleChat(model="m", api_key=[1])  # type: ignore[arg-type]
    assert parse_overrides(["n_agents=12"]) == {"n_agents": 12}


# --- formulas at their bounds stay finite and give an answer -------------------------------------


def test_weights_stay_finite_for_any_finite_eta():
    for eta in (100.0, 1e308):
        weights = update_weights([0.5, 0.5, 0.0], [1.0, -1.0, 1.0], eta)
        assert all(math.isfinite(w) for w in weights) and math.isclose(sum(weights), 1.0)
        assert weights[0] == 1.0


def test_aggregate_at_the_largest_gamma_and_agent_count_still_has_support():
    n_agents = table_of(BACKENDS["acemad"][0])["n_agents"].high
    gamma = table_of(BACKENDS["acemad"][0])["gamma"].high
    weights = [1.0 / n_agents] * n_agents
    support = aggregate(weights, [(0.9, 0.1)] * n_agents, gamma)
    assert support[0] > support[1] > 0.0 and all(math.isfinite(s) for s in support)
