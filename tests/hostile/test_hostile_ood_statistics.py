"""Hostile table for a checkpoint's OOD statistics (issue 23): huge integer literals, absurd but
finite values (a mean of 1e200, a covariance × 1e300, a threshold of 1e308 that never flags),
NaN, wrong types and nesting are a `CheckpointError` at `Router.load`, never a bare ValueError or
a router that loads and then scores NaN or never flags."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from imad import Router
from imad.errors import CheckpointError
from imad.router.checkpoint import CONFIG_FILE
from imad.router.ood import fit_mahalanobis, fit_quantile_range
from tests.router.router_helpers import make_router

N_FEATURES = 41


def _router_with(fit) -> Router:
    rng = np.random.default_rng(3)
    detector = fit(rng.normal(size=(300, N_FEATURES)), rng.normal(size=(100, N_FEATURES)))
    router = make_router(seed=5)
    return router.with_config(router.config.with_ood(detector))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ood")
    return {"mahalanobis": _router_with(fit_mahalanobis).save(root / "mahalanobis"),
            "quantile_range": _router_with(fit_quantile_range).save(root / "quantile_range")}


def _copy(pristine: dict[str, Path], method: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(pristine[method], tmp_path / method))


def _scale(key: str, factor: float):
    def edit(ood: dict[str, Any]) -> None:
        ood[key] = (np.asarray(ood[key]) * factor).tolist()
    return edit


def _put(key: str, value: Any):
    def edit(ood: dict[str, Any]) -> None:
        ood[key] = value
    return edit


def _first(key: str, value: Any):
    def edit(ood: dict[str, Any]) -> None:
        if isinstance(ood[key][0], list):
            ood[key][0][0] = value
        else:
            ood[key][0] = value
    return edit


VALUE_CASES = [
    # the absurd-but-finite statistics, which used to load
    ("mahalanobis", "mean all 1e200", _put("mean", [1e200] * N_FEATURES), "ood.mean: holds values beyond"),
    ("mahalanobis", "covariance × 1e300", _scale("covariance", 1e300), "ood.covariance: holds values beyond"),
    ("mahalanobis", "threshold 1e308", _put("threshold", 1e308), "ood.threshold"),
    ("quantile_range", "threshold 1e308", _put("threshold", 1e308), "ood.threshold"),
    ("quantile_range", "lower × 1e200", _scale("lower", 1e200), "ood.lower: holds values beyond"),
    ("quantile_range", "upper 1e300", _first("upper", 1e300), "ood.upper: holds values beyond"),
    ("mahalanobis", "covariance × 1e-300", _scale("covariance", 1e-300), "ood.covariance: a variance of"),
    ("mahalanobis", "nearly singular covariance",
     lambda ood: ood.__setitem__("covariance", (np.diag([1.0] * 40 + [1e-14])).tolist()),
     "a variance of 1e-14"),
    # non-finite and wrong types
    ("mahalanobis", "threshold NaN", _put("threshold", math.nan), "ood.threshold"),
    ("mahalanobis", "threshold Infinity", _put("threshold", math.inf), "ood.threshold"),
    ("mahalanobis", "threshold -1", _put("threshold", -1.0), "ood.threshold"),
    ("mahalanobis", "threshold '21'", _put("threshold", "21"), "ood.threshold"),
    ("mahalanobis", "threshold true", _put("threshold", True), "ood.threshold"),
    ("mahalanobis", "threshold 10**300 (an int)", _put("threshold", 10**300), "integer of 301 digits"),
    ("mahalanobis", "mean[0] NaN", _first("mean", math.nan), "ood.mean: holds NaN"),
    ("mahalanobis", "mean[0] 10**300 (an int)", _first("mean", 10**300), "integer of 301 digits"),
    ("mahalanobis", "covariance[0][0] -Infinity", _first("covariance", -math.inf), "ood.covariance"),
    ("mahalanobis", "mean a string", _put("mean", "zeros"), "ood.mean"),
    # issue 34: numpy reads "1.5" and true as numbers; a checkpoint must not
    ("mahalanobis", "mean of numeric strings", _put("mean", ["0.5"] * N_FEATURES),
     "ood.mean: not a numeric array (holds '0.5')"),
    ("mahalanobis", "mean[0] a numeric string", _first("mean", "1e-3"), "holds '1e-3'"),
    ("mahalanobis", "mean of booleans", _put("mean", [False] * N_FEATURES), "holds False"),
    ("mahalanobis", "mean[0] true", _first("mean", True), "ood.mean: not a numeric array (holds True)"),
    ("mahalanobis", "mean[0] null", _first("mean", None), "holds None"),
    ("mahalanobis", "mean nested", _put("mean", [[[0.0]]] * N_FEATURES), "ood.mean"),
    ("mahalanobis", "mean ragged", _put("mean", [0.0, [1.0]]), "ood.mean"),
    ("mahalanobis", "shrinkage 1e308", _put("shrinkage", 1e308), "ood.shrinkage"),
    ("mahalanobis", "method 7", _put("method", 7), "ood.method"),
    ("quantile_range", "lower > upper", _put("lower", [5.0] * N_FEATURES), "lower ≤ upper"),
    ("quantile_range", "upper missing", lambda ood: ood.pop("upper"), "ood.upper: missing"),
]


@pytest.mark.parametrize(("method", "label", "edit", "message"), VALUE_CASES,
                         ids=[f"{m}:{label}" for m, label, _, _ in VALUE_CASES])
def test_damaged_ood_statistics_are_refused_at_load(pristine, tmp_path, method, label, edit, message):
    checkpoint = _copy(pristine, method, tmp_path)
    config = json.loads((checkpoint / CONFIG_FILE).read_text())
    edit(config["ood"])
    (checkpoint / CONFIG_FILE).write_text(json.dumps(config, allow_nan=True))
    with pytest.raises(CheckpointError) as error:
        Router.load(checkpoint)
    assert message in str(error.value)
    assert len(str(error.value)) < 600


LITERAL_CASES = [
    ("threshold", "4" * 400), ("threshold", "4" * 5000), ("threshold", "-" + "4" * 400),
    ("shrinkage", "1" + "0" * 5000), ("threshold", "1e999"), ("threshold", "-1e999"),
    ("threshold", "[" * 100_000 + "]" * 100_000),
]


@pytest.mark.parametrize(("key", "literal"), LITERAL_CASES,
                         ids=[f"{key}={literal[:12]}…({len(literal)} chars)"
                              for key, literal in LITERAL_CASES])
def test_hostile_literals_in_the_ood_section_are_refused_at_load(pristine, tmp_path, key, literal):
    checkpoint = _copy(pristine, "mahalanobis", tmp_path)
    config = json.loads((checkpoint / CONFIG_FILE).read_text())
    config["ood"][key] = "@@LITERAL@@"
    text = json.dumps(config).replace('"@@LITERAL@@"', literal)
    (checkpoint / CONFIG_FILE).write_text(text)
    with pytest.raises(CheckpointError):
        Router.load(checkpoint)


@pytest.mark.parametrize("method", ["mahalanobis", "quantile_range"])
def test_the_pristine_statistics_load_and_flag(pristine, method):
    router = Router.load(pristine[method])
    far = np.full((1, N_FEATURES), 50.0)
    assert router.config.ood_detector().flag(router.scale(far)).tolist() == [True]
