"""`training.export`: OOD statistics written at export by `training.fit`, and added to an older
checkpoint by `python -m training.export --add-ood` with the weights byte-identical (issue 16)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from imad.router import Router
from imad.router.checkpoint import CONFIG_FILE, WEIGHTS_FILE
from tests.router.router_helpers import make_router
from training.config import FitConfig
from training.export import main
from training.fit import FitResult, fit

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "corpus_small"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[FitResult, Path]:
    workdir = tmp_path_factory.mktemp("export")
    result = fit(FitConfig(corpus=(str(FIXTURE),), epochs=2, progress_bar=False,
                           feature_cache=str(workdir / "cache"), output=str(workdir / "ckpt"),
                           run_dir=str(workdir / "run")))
    return result, workdir


def test_fit_exports_ood_statistics_flagging_at_most_1_percent_of_validation(trained):
    result, _ = trained
    router = Router.load(result.checkpoint)
    detector = router.ood_detector
    assert detector is not None and detector.method == "mahalanobis" and router.config.ood_policy == "flag"
    flagged = detector.flag(router.scale(result.validation_features))
    assert flagged.mean() <= 0.01  # the threshold is the validation rows' 99th percentile
    record = router.metadata["ood_statistics"]
    assert record["rows"]["validation"] == len(result.validation_features)
    assert record["command"] == "python -m training.fit (at export)"


def test_add_ood_recomputes_the_same_statistics_and_keeps_the_weights(trained, capsys):
    result, workdir = trained
    old = Router.load(result.checkpoint).with_ood(None).save(workdir / "old")
    assert "ood" not in json.loads((old / CONFIG_FILE).read_text())
    new = workdir / "new"
    assert main(["--add-ood", str(old), "--output", str(new),
                 "--feature-cache", str(workdir / "cache")]) == 0
    assert "weights unchanged" in capsys.readouterr().out
    assert (new / WEIGHTS_FILE).read_bytes() == (old / WEIGHTS_FILE).read_bytes()
    fitted, added = Router.load(result.checkpoint).ood_detector, Router.load(new).ood_detector
    assert added.threshold == fitted.threshold
    assert np.array_equal(added.mean, fitted.mean) and np.array_equal(added.covariance, fitted.covariance)
    assert Router.load(new).metadata["ood_statistics"]["command"].startswith(
        "python -m training.export --add-ood ")


def test_add_ood_without_a_recorded_corpus_is_a_clear_error(tmp_path, capsys):
    path = make_router().save(tmp_path / "r")
    assert main(["--add-ood", str(path)]) == 3
    assert "records no training corpus" in capsys.readouterr().err
    assert "ood" not in json.loads((path / CONFIG_FILE).read_text())
