"""`python -m training.evaluate --recalibrate N`: the study's numbers equal a direct computation,
and it runs on the committed evaluation answers of the embedded model (no LLM call)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from imad.errors import ConfigError
from imad.router.calibrators import fit_calibrator
from tests.conftest import ANSWERED_MEDQA_DIR
from training.evaluate import main
from training.evaluation.recalibration import best_labelled_method, recalibration_study
from training.metrics import expected_calibration_error


def _synthetic(n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    scores = rng.uniform(0.05, 0.95, n)
    return scores, (rng.uniform(size=n) < 0.2 + 0.3 * scores).astype(int)


def test_every_number_equals_a_direct_computation() -> None:
    scores, labels = _synthetic()
    study = recalibration_study(scores, labels, 30, training_prior=0.4, splits=3, seed=5)
    eces = {"zero_shot": [], "auto": [], "platt": [], "prior_shift": []}
    for split in range(3):
        order = np.random.default_rng([5, split]).permutation(scores.size)
        fit, rest = order[:30], order[30:]
        eces["zero_shot"].append(expected_calibration_error(labels[rest], scores[rest]))
        auto = fit_calibrator(scores[fit], labels[fit])
        eces["auto"].append(expected_calibration_error(labels[rest], auto.apply(scores[rest])))
        platt = fit_calibrator(scores[fit], labels[fit], "platt")
        eces["platt"].append(expected_calibration_error(labels[rest], platt.apply(scores[rest])))
        shift = fit_calibrator(scores[rest], method="prior_shift", training_prior=0.4)
        eces["prior_shift"].append(expected_calibration_error(labels[rest], shift.apply(scores[rest])))
    for method, values in eces.items():
        assert study["methods"][method]["ece_mean"] == pytest.approx(np.mean(values))
        assert study["methods"][method]["ece_std"] == pytest.approx(np.std(values))
        assert study["methods"][method]["ece_median"] == pytest.approx(np.median(values))
    assert study["held_out"] == 90 and study["skipped_single_class"] == 0
    assert best_labelled_method(study) in ("platt", "isotonic", "temperature")


def test_single_class_samples_are_counted_not_hidden() -> None:
    scores = np.linspace(0.1, 0.9, 60)
    labels = np.zeros(60, dtype=int)
    labels[0] = 1  # one right answer: most 20-label samples miss it
    study = recalibration_study(scores, labels, 20, training_prior=0.3, splits=10)
    assert study["skipped_single_class"] + study["methods"]["platt"]["splits"] == 10
    assert study["skipped_single_class"] > 0
    assert study["methods"]["auto"]["splits"] == 10  # auto falls back to the base rate there
    assert sum(study["auto_choices"].values()) == 10


@pytest.mark.parametrize("n", [5, 9, 111])
def test_n_out_of_range_is_a_config_error(n) -> None:
    scores, labels = _synthetic()
    with pytest.raises(ConfigError, match="10 ≤ N"):
        recalibration_study(scores, labels, n, training_prior=0.3)


def test_report_on_the_committed_medqa_answers(tmp_path, capsys) -> None:
    out = tmp_path / "report"
    assert main(["--dataset", "medqa", "--data-dir", str(ANSWERED_MEDQA_DIR), "--limit", "100",
                 "--recalibrate", "50", "--out", str(out), "--no-progress", "--no-feature-cache",
                 "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    study = document["datasets"]["medqa"]["recalibration"]
    assert study["n_labels"] == 50 and study["splits"] == 20
    assert set(study["methods"]) == {"zero_shot", "auto", "platt", "isotonic", "temperature", "prior_shift",
                                     "base_rate"}
    assert "recalibrated on 50 labelled answers" in (out / "report.md").read_text()
    assert "auto chose:" in (out / "report.md").read_text()
    recalibrated = document["datasets"]["medqa"]["recalibrated"]
    assert list(recalibrated["scorers"]) == ["router", "confidence_initial", "logistic_regression",
                                             "random", "oracle"]
    assert recalibrated["scorers"]["router"]["auto"] == study["methods"]["auto"]
    assert recalibrated["scorers"]["oracle"]["zero_shot"]["ece_median"] == 0.0
    assert "| oracle (reference) | 0.000 [0.00, 0.00] |" in (out / "report.md").read_text()


def test_every_scorer_recalibrated_on_the_same_splits() -> None:
    from training.evaluation.recalibration import recalibrated_scorers
    from training.evaluation.scoring import reference_probabilities

    scores, labels = _synthetic()
    probabilities = {"router": scores, "logistic_regression": None, **reference_probabilities(labels)}
    board = recalibrated_scorers(probabilities, labels, 30, splits=4, seed=5)
    assert board["scorers"]["logistic_regression"] is None
    study = recalibration_study(scores, labels, 30, training_prior=None, splits=4, seed=5)
    for method in ("zero_shot", "auto"):
        assert board["scorers"]["router"][method] == study["methods"][method]
        values = []
        for split in range(4):
            order = np.random.default_rng([5, split]).permutation(scores.size)
            fit, rest = order[:30], order[30:]
            p = scores[rest] if method == "zero_shot" else \
                fit_calibrator(scores[fit], labels[fit]).apply(scores[rest])
            values.append(expected_calibration_error(labels[rest], p))
        row = board["scorers"]["router"][method]
        assert (row["ece_low"], row["ece_high"]) == pytest.approx(tuple(np.percentile(values, [2.5, 97.5])))
    oracle = board["scorers"]["oracle"]
    assert oracle["zero_shot"]["ece_median"] == 0.0 and oracle["zero_shot"]["auroc_median"] == 1.0
    assert oracle["auto"]["auroc_median"] == 1.0 and oracle["auto"]["ece_median"] < 0.05
    assert "base_rate" in board["scorers"]["random"]["auto_choices"]  # no signal: it counts
