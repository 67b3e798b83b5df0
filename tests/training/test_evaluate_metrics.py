"""The numbers of the evaluation report against trusted references and hand-computed values.

Extends tests/training/test_metrics.py (which checks the bins against sklearn's
`calibration_curve`, Brier and AUROC against sklearn on smooth scores) with: calibrated and
known-miscalibrated samples, probabilities of exactly 0 and 1 (what a small model's verbal
confidence mostly is), the per-scorer numbers of `training.evaluation.scoring`, and the
JSON form of undefined metrics.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, roc_auc_score

from training.evaluation.report import json_text, macro_summary, to_jsonable
from training.evaluation.scoring import dataset_notes, reference_probabilities, scorer_metrics
from training.metrics import adaptive_calibration_error, brier_score, expected_calibration_error


def test_ece_of_a_calibrated_sample_is_zero():
    # Each of these p values appears 20 times with exactly 20·p right answers.
    p_values = [0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0]
    p = np.repeat(p_values, 20)
    y = np.concatenate([[1] * round(20 * v) + [0] * (20 - round(20 * v)) for v in p_values])
    assert expected_calibration_error(y, p) == pytest.approx(0.0, abs=1e-12)


def test_ece_of_a_large_bernoulli_sample_is_near_zero():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=200_000)
    y = (rng.uniform(size=p.size) < p).astype(int)
    assert expected_calibration_error(y, p) < 0.01
    assert adaptive_calibration_error(y, p) < 0.01


def test_ece_of_a_known_miscalibrated_sample():
    # Overconfident: p = 0.9 everywhere, 60% right → ECE = 0.3.
    assert expected_calibration_error(np.array([1] * 6 + [0] * 4), np.full(10, 0.9)) == \
        pytest.approx(0.3)
    # Two bins of 50: p 0.8 with 20 right, p 0.3 with 30 right → 0.5·0.4 + 0.5·0.3 = 0.35.
    p = np.repeat([0.8, 0.3], 50)
    y = np.array([1] * 20 + [0] * 30 + [1] * 30 + [0] * 20)
    assert expected_calibration_error(y, p) == pytest.approx(0.35)
    assert adaptive_calibration_error(y, p, n_bins=2) == pytest.approx(0.35)


@pytest.mark.parametrize(("y", "p", "ece", "brier", "auc"), [
    ([0, 0, 1, 1], [0.0, 0.0, 1.0, 1.0], 0.0, 0.0, 1.0),
    ([0, 0, 1, 1], [1.0, 1.0, 0.0, 0.0], 1.0, 1.0, 0.0),
    ([0, 1, 1, 0, 1], [0.0, 0.0, 1.0, 1.0, 1.0], 0.4, 0.4, 7 / 12),
])
def test_probabilities_of_exactly_zero_and_one(y, p, ece, brier, auc):
    y, p = np.array(y), np.array(p)
    assert expected_calibration_error(y, p) == pytest.approx(ece)
    assert brier_score(y, p) == pytest.approx(brier) == pytest.approx(brier_score_loss(y, p))
    report = scorer_metrics(y, p, tau=0.5, n_questions=len(y))
    assert report["auroc"] == pytest.approx(auc) == pytest.approx(roc_auc_score(y, p))
    # p = 0 falls into the first bin and p = 1 into the last, as in sklearn.
    prob_true, prob_pred = calibration_curve(y, p, n_bins=15)
    assert report["bins"]["index"] == [0, 14]
    np.testing.assert_array_equal(report["bins"]["accuracy"], prob_true)
    np.testing.assert_array_equal(report["bins"]["confidence"], prob_pred)


def test_scorer_metrics_against_sklearn_and_by_hand():
    rng = np.random.default_rng(3)
    p = np.concatenate([rng.beta(2, 2, 300), np.zeros(30), np.ones(30)])
    y = (rng.uniform(size=p.size) < p ** 1.3).astype(int)
    report = scorer_metrics(y, p, tau=0.6, n_questions=p.size + 40)  # 40 unparsed answers
    prob_true, prob_pred = calibration_curve(y, p, n_bins=15, strategy="uniform")
    np.testing.assert_array_equal(report["bins"]["accuracy"], prob_true)
    np.testing.assert_array_equal(report["bins"]["confidence"], prob_pred)
    counts = np.array(report["bins"]["count"])
    assert counts.sum() == p.size
    assert report["ece"] == pytest.approx(np.sum(counts / p.size * np.abs(prob_true - prob_pred)))
    assert report["brier"] == pytest.approx(brier_score_loss(y, p))
    assert report["auroc"] == pytest.approx(roc_auc_score(y, p))
    assert report["trigger_rate"] == pytest.approx(np.mean(p < 0.6))
    assert report["trigger_rate_all"] == pytest.approx((40 + np.sum(p < 0.6)) / (p.size + 40))
    assert report["kept"] == np.sum(p >= 0.6)
    assert report["kept_accuracy"] == pytest.approx(y[p >= 0.6].mean())


def test_degenerate_cases_become_null_in_json():
    one_class = scorer_metrics(np.ones(4, dtype=int), np.array([0.2, 0.5, 0.9, 1.0]), 0.7, 4)
    assert math.isnan(one_class["auroc"]) and one_class["ece"] == pytest.approx(0.35)
    nothing_kept = scorer_metrics(np.array([0, 1]), np.array([0.1, 0.2]), 0.7, 2)
    assert math.isnan(nothing_kept["kept_accuracy"]) and nothing_kept["kept"] == 0
    empty = scorer_metrics(np.zeros(0, dtype=int), np.zeros(0), 0.7, 3)
    assert empty["n"] == 0 and empty["trigger_rate_all"] == 1.0  # unparsed answers escalate
    assert empty["bins"] == {"index": [], "count": [], "accuracy": [], "confidence": []}
    text = json_text({"one_class": one_class, "empty": empty, "array": np.array([np.inf, 1.5])})
    data = json.loads(text)  # strict JSON: NaN would not parse with allow_nan=False
    assert data["one_class"]["auroc"] is None and data["one_class"]["n"] == 4
    assert all(data["empty"][k] is None for k in ("ece", "adaptive_ece", "brier", "auroc"))
    assert data["array"] == [None, 1.5]


def test_macro_summary_skips_undefined_values():
    def dataset(router, baseline):
        return {"scorers": {"router": router, "confidence_initial": baseline,
                            "logistic_regression": None}}

    row = {"ece": 0.1, "adaptive_ece": 0.2, "brier": 0.3, "auroc": None, "trigger_rate": 0.5,
           "kept_accuracy": 0.9}
    summary = macro_summary(to_jsonable({
        "a": dataset(row, row), "b": dataset({**row, "ece": 0.3, "auroc": 0.8}, row)}))
    assert summary["router"]["ece"] == pytest.approx(0.2)
    assert summary["router"]["auroc"] == pytest.approx(0.8) and summary["router"]["auroc_datasets"] == 1
    assert summary["logistic_regression"]["ece"] is None


def test_a_handful_of_right_answers_gets_an_auroc_warning():
    labels = np.array([1] + [0] * 176)
    (note,) = dataset_notes(labels, None)
    assert note.startswith("only 1 of 177 parsed answers are right")
    assert dataset_notes(np.array([1] * 10 + [0] * 10), None) == []


def test_reference_scorers_random_at_chance_oracle_perfect():
    rng = np.random.default_rng(5)
    labels = (rng.uniform(size=200) < 0.25).astype(np.int64)  # a 135M model's MedQA accuracy
    references = reference_probabilities(labels)
    np.testing.assert_array_equal(references["random"], np.random.default_rng(0).uniform(size=200))
    np.testing.assert_array_equal(reference_probabilities(labels)["random"], references["random"])
    random = scorer_metrics(labels, references["random"], tau=0.5, n_questions=200)
    assert random["auroc_low"] < 0.5 < random["auroc_high"] and abs(random["auroc"] - 0.5) < 0.1
    assert random["auroc"] == pytest.approx(roc_auc_score(labels, references["random"]))
    assert random["ece_low"] < random["ece"] < random["ece_high"]
    assert 0.2 < random["ece"] < 0.35  # uniform p against ~25% right: a blind guess's gap
    oracle = scorer_metrics(labels, references["oracle"], tau=0.5, n_questions=200)
    assert oracle["auroc"] == 1.0 and (oracle["auroc_low"], oracle["auroc_high"]) == (1.0, 1.0)
    assert oracle["ece"] == 0.0 and (oracle["ece_low"], oracle["ece_high"]) == (0.0, 0.0)
    assert oracle["brier"] == 0.0 and oracle["kept_accuracy"] == 1.0
    assert oracle["trigger_rate"] == pytest.approx(1 - labels.mean())  # it escalates every wrong one
