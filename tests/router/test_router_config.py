"""`RouterConfig`: symmetric save/load, immutability, and the validated confidence source."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import imad
from imad.decide.policy import FixedThreshold, checkpoint_policy
from imad.errors import CheckpointError, ConfigError
from imad.router import Router, RouterConfig
from imad.router.checkpoint import CONFIG_FILE
from imad.router.registry import resolve_checkpoint
from tests.router.router_helpers import make_router, random_features


@pytest.mark.parametrize("name", ["imad-router-v1", "imad-router-v1.1", "imad-router-v2",
                                  "imad-router-v2.1"])
def test_shipped_config_json_round_trips_exactly(name):
    data = json.loads((resolve_checkpoint(name) / CONFIG_FILE).read_text(encoding="utf-8"))
    config = RouterConfig.from_dict(data)
    assert config.to_dict() == data
    assert RouterConfig.from_dict(config.to_dict()) == config


def test_save_records_the_imad_version_and_loads_an_equal_config(router, tmp_path):
    loaded = Router.load(router.save(tmp_path / "r"))
    assert loaded.config.imad_version == imad.__version__
    threshold = router.config.threshold
    assert loaded.config.with_threshold(threshold.tau, threshold.method) == loaded.config
    assert loaded.config.record == router.config.record
    assert loaded.config.weights_sha256 is not None and router.config.weights_sha256 is None


def test_with_config_is_a_proper_copy(router):
    x = random_features(20)
    before = router.predict_proba(x)
    clone = router.with_config(router.config.with_threshold(0.3, "by hand"))
    assert (clone.config.threshold.tau, clone.config.threshold.method) == (0.3, "by hand")
    assert router.config.threshold.tau == 0.7
    assert clone.net is not router.net
    with torch.no_grad():
        clone.net.bias.add_(5.0)
    assert np.array_equal(router.predict_proba(x), before)
    assert not np.array_equal(clone.predict_proba(x), before)


def test_no_caller_can_change_a_router_in_place(router):
    router.metadata["seed"] = 999
    router.metadata["data"]["model_ids"].append("other")
    assert router.metadata == {"seed": 0, "data": {"model_ids": ["unit-test"]}}
    with pytest.raises(TypeError):
        router.config.record["seed"] = 1  # type: ignore[index]
    with pytest.raises(ValueError, match="read-only"):
        router.scaler_mean[0] = 0.0
    with pytest.raises(AttributeError):
        router.config.threshold.tau = 0.1  # type: ignore[misc]
    assert router.with_record(seed=7).metadata["seed"] == 7 and router.metadata["seed"] == 0


@pytest.mark.parametrize("tau", [-0.01, 1.01, float("nan"), True, "0.5"])
def test_tau_is_checked_in_one_place(router, tau):
    with pytest.raises(ConfigError, match="tau: must be a number in"):
        router.config.with_threshold(tau, "by hand")
    with pytest.raises(ConfigError, match="tau: must be a number in"):
        FixedThreshold(tau)


def test_the_router_holds_no_threshold_logic(router):
    assert not hasattr(router, "with_threshold") and not hasattr(router, "with_ood_policy")
    policy = checkpoint_policy(router.config)
    assert policy.rule == FixedThreshold(0.7, source="checkpoint", method=router.config.threshold.method)
    assert policy.ood_policy == router.config.ood_policy == "flag"


@pytest.mark.parametrize(("sources", "expected"), [
    (None, "verbal"), ([], "verbal"), (["verbal"], "verbal"),
    (["token_probability"], "token_probability"),
])
def test_confidence_source(sources, expected):
    data = {} if sources is None else {"data": {"confidence_sources": sources}}  # [] records none
    assert make_router().with_record(**data).confidence_source == expected


@pytest.mark.parametrize("sources", [["psychic"], ["verbal", "token_probability"]])
def test_unknown_confidence_source_is_a_checkpoint_error(sources):
    router = make_router()
    with pytest.raises(CheckpointError, match="data.confidence_sources must name one of"):
        router.with_record(data={"confidence_sources": sources})


def test_a_confidence_source_that_is_not_a_list_is_refused_by_the_typed_record():
    with pytest.raises(ConfigError, match="data.confidence_sources: must be a list, got 'verbal'"):
        make_router().with_record(data={"confidence_sources": "verbal"})
