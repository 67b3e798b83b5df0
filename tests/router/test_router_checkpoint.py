"""Checkpoint save/load (SPEC §7): bit-identical round trip, and every mismatch refused by name."""

from __future__ import annotations

import hashlib
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save as save_safetensors

import features
from features.names import schema_hash
from imad.errors import CheckpointError, ConfigError, ImadError
from imad.router import CHECKPOINT_SCHEMA_VERSION, Router
from imad.router.checkpoint import CARD_FILE, CONFIG_FILE, WEIGHTS_FILE
from tests.router.router_helpers import make_router, random_features

REPO_ROOT = Path(__file__).resolve().parents[2]


def _edit_config(path: Path, edit) -> None:
    config = json.loads((path / CONFIG_FILE).read_text())
    edit(config)
    (path / CONFIG_FILE).write_text(json.dumps(config, indent=2))


def _load_error(path: Path) -> str:
    with pytest.raises(CheckpointError) as error:
        Router.load(path)
    assert isinstance(error.value, ImadError)
    return str(error.value)


def test_round_trip_gives_bit_identical_probabilities(router, saved_router):
    rows = random_features(200, seed=5)
    loaded = Router.load(saved_router)
    assert np.array_equal(loaded.predict_proba(rows), router.predict_proba(rows))
    assert np.array_equal(loaded.predict_uncertainty(rows), router.predict_uncertainty(rows))
    assert loaded.config.threshold == router.config.threshold
    assert loaded.feature_names == router.feature_names
    assert np.array_equal(loaded.scaler_mean, router.scaler_mean)
    assert np.array_equal(loaded.scaler_scale, router.scaler_scale)
    assert loaded.metadata == router.metadata


def test_saving_twice_writes_identical_bytes(router, tmp_path):
    first, second = router.save(tmp_path / "a"), Router.load(router.save(tmp_path / "b"))
    second.save(tmp_path / "c")
    for name in (WEIGHTS_FILE, CONFIG_FILE, CARD_FILE):
        assert (first / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
        assert (first / name).read_bytes() == (tmp_path / "c" / name).read_bytes()


def test_config_json_records_what_rebuilds_the_router(router, saved_router):
    config = json.loads((saved_router / CONFIG_FILE).read_text())
    assert config["schema_version"] == CHECKPOINT_SCHEMA_VERSION
    assert config["features"]["names"] == list(features.FEATURE_NAMES)
    assert config["features"]["hash"] == features.FEATURE_SCHEMA_HASH
    assert config["model"] == {"n_features": 41, "width": 32, "depth": 3, "dropout": 0.2,
                               "confidence_clip": 0.01}
    assert config["scaler"]["mean"] == router.scaler_mean.tolist()
    assert config["threshold"]["tau"] == 0.7 and config["threshold"]["method"]
    assert config["seed"] == 0
    assert sorted(p.name for p in saved_router.iterdir()) == [CARD_FILE, CONFIG_FILE, WEIGHTS_FILE]


def test_loading_never_unpickles(monkeypatch, saved_router):
    def refuse(*args, **kwargs):
        raise AssertionError("pickle used")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(torch, "load", refuse)
    assert Router.load(saved_router).predict_proba(random_features(3)).shape == (3,)


@pytest.mark.parametrize("missing", [CONFIG_FILE, WEIGHTS_FILE])
def test_missing_file_is_named(saved_router, missing):
    (saved_router / missing).unlink()
    message = _load_error(saved_router)
    assert f"missing {missing}" in message and "python -m training.fit" in message


def test_missing_directory_is_named(tmp_path):
    assert "no router checkpoint directory" in _load_error(tmp_path / "nowhere")


def test_passing_a_file_instead_of_the_directory_says_so(saved_router):
    message = _load_error(saved_router / WEIGHTS_FILE)
    assert "pass the directory that holds it" in message


def test_truncated_weights_are_refused(saved_router):
    weights = saved_router / WEIGHTS_FILE
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    message = _load_error(saved_router)
    assert "corrupt or truncated" in message and WEIGHTS_FILE in message


def test_garbage_weights_are_refused(saved_router):
    (saved_router / WEIGHTS_FILE).write_bytes(b"\x00" * 7)
    assert "corrupt or truncated" in _load_error(saved_router)


def test_modified_weights_fail_the_checksum(saved_router):
    weights = saved_router / WEIGHTS_FILE
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF  # a tensor byte, the header stays valid
    weights.write_bytes(bytes(data))
    assert "does not match the sha256" in _load_error(saved_router)


def test_newer_schema_version_asks_for_an_upgrade(saved_router):
    _edit_config(saved_router, lambda c: c.update(schema_version=CHECKPOINT_SCHEMA_VERSION + 1))
    message = _load_error(saved_router)
    assert f"checkpoint schema {CHECKPOINT_SCHEMA_VERSION + 1}, newer than this imad" in message
    assert "pip install -U imad" in message


def test_older_schema_version_is_refused(saved_router):
    _edit_config(saved_router, lambda c: c.update(schema_version=CHECKPOINT_SCHEMA_VERSION - 1))
    message = _load_error(saved_router)
    assert f"schema version {CHECKPOINT_SCHEMA_VERSION - 1}" in message
    assert f"reads version {CHECKPOINT_SCHEMA_VERSION}" in message


def test_newer_major_imad_version_asks_for_an_upgrade(saved_router):
    import imad

    assert json.loads((saved_router / CONFIG_FILE).read_text())["imad_version"] == imad.__version__
    major = int(imad.__version__.split(".")[0])
    _edit_config(saved_router, lambda c: c.update(imad_version=f"{major + 1}.0.0"))
    message = _load_error(saved_router)
    assert f"written by imad {major + 1}.0.0" in message and "pip install -U imad" in message


def test_other_format_is_refused(saved_router):
    _edit_config(saved_router, lambda c: c.update(format="something-else"))
    assert "not an imad router config" in _load_error(saved_router)


def test_invalid_json_is_refused(saved_router):
    (saved_router / CONFIG_FILE).write_text("{not json")
    assert "not valid JSON" in _load_error(saved_router)


def test_edited_feature_list_without_new_hash_is_refused(saved_router):
    def rename(config):
        config["features"]["names"][3] = "q_is_because"

    _edit_config(saved_router, rename)
    assert "feature hash does not match the listed feature names" in _load_error(saved_router)


def test_changed_feature_list_is_refused_and_the_difference_named(saved_router):
    def rename(config):
        names = config["features"]["names"]
        names[names.index("r_hedge_count")] = "r_hedges"
        config["features"]["hash"] = schema_hash(config["features"]["schema_version"], names)

    _edit_config(saved_router, rename)
    message = _load_error(saved_router)
    assert f"trained on feature schema v{features.FEATURE_SCHEMA_VERSION}" in message
    assert "'r_hedge_count'" in message and "'r_hedges'" in message


def test_reordered_feature_list_is_refused(saved_router):
    def swap(config):
        names = config["features"]["names"]
        names[0], names[1] = names[1], names[0]
        config["features"]["hash"] = schema_hash(config["features"]["schema_version"], names)

    _edit_config(saved_router, swap)
    assert "another order (column 0: 'q_entities' vs 'q_tokens')" in _load_error(saved_router)


def test_feature_count_not_matching_the_network_is_refused(saved_router):
    _edit_config(saved_router, lambda c: c["features"]["names"].pop())
    assert "40 feature names for a network with 41 inputs" in _load_error(saved_router)


def test_network_shape_not_matching_the_weights_is_refused(saved_router):
    _edit_config(saved_router, lambda c: c["model"].update(width=64))
    message = _load_error(saved_router)
    assert "has shape (32, 41)" in message and "expects (64, 41)" in message


def test_wrong_tensor_shape_is_refused(router, saved_router):
    tensors = {k: v.clone() for k, v in router.net.state_dict().items()}
    tensors["head_u.weight"] = torch.zeros(1, 31)
    data = save_safetensors(tensors, metadata={"format": "pt"})
    (saved_router / WEIGHTS_FILE).write_bytes(data)
    _edit_config(saved_router,
                 lambda c: c["weights"].update(sha256=hashlib.sha256(data).hexdigest()))
    message = _load_error(saved_router)
    assert "'head_u.weight' has shape (1, 31)" in message and "expects (1, 32)" in message


def test_missing_tensor_is_refused(router, saved_router):
    tensors = {k: v for k, v in router.net.state_dict().items() if k != "bias"}
    data = save_safetensors(tensors, metadata={"format": "pt"})
    (saved_router / WEIGHTS_FILE).write_bytes(data)
    _edit_config(saved_router,
                 lambda c: c["weights"].update(sha256=hashlib.sha256(data).hexdigest()))
    assert "missing tensors ['bias']" in _load_error(saved_router)


def test_scaler_of_wrong_length_is_refused(saved_router):
    _edit_config(saved_router, lambda c: c["scaler"]["scale"].pop())
    assert "invalid scaler: 41 means but 40 scales" in _load_error(saved_router)


def test_zero_scale_is_refused(saved_router):
    _edit_config(saved_router, lambda c: c["scaler"]["scale"].__setitem__(0, 0.0))
    assert "scaler.scale[0]: must be a finite number in [1e-06, 1000000], got 0.0" in \
        _load_error(saved_router)


def test_tau_outside_unit_interval_is_refused(saved_router):
    _edit_config(saved_router, lambda c: c["threshold"].update(tau=1.5))
    assert "invalid tau: must be a number in [0, 1], got 1.5" in _load_error(saved_router)


def test_runtime_load_imports_no_training_lightning_or_sklearn(saved_router):
    code = (
        "import sys, numpy as np\n"
        "from imad.router import Router\n"
        f"r = Router.load({str(saved_router)!r})\n"
        "r.predict_proba(np.zeros((2, 41)))\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('training', 'lightning', 'pytorch_lightning', 'sklearn', 'spacy'))\n"
        "print(bad)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO_ROOT, env={"PYTHONPATH": str(REPO_ROOT), "PATH": ""},
                            check=True)
    assert result.stdout.strip() == "[]"


def test_a_new_stored_threshold_changes_only_tau(router):
    other = router.with_config(router.config.with_threshold(0.55, "trigger rate 20% on validation"))
    rows = random_features(4)
    assert other.config.threshold.tau == 0.55 and router.config.threshold.tau == 0.7
    assert other.config.threshold.method == "trigger rate 20% on validation"
    assert np.array_equal(other.predict_proba(rows), router.predict_proba(rows))
    assert router.config.with_threshold(1.0, "always escalate").threshold.tau == 1.0
    with pytest.raises(ConfigError, match="tau"):
        router.config.with_threshold(1.5, "x")


def test_different_seeds_give_different_routers():
    rows = random_features(10)
    first, second = make_router(1), make_router(2)
    assert not np.array_equal(first.predict_proba(rows), second.predict_proba(rows))
