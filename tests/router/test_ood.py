"""OOD detectors: Ledoit–Wolf equal to scikit-learn's, the validation share held near 1% on the
real corpus rows, shifted samples flagged, and the saved form checked on load."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom
from sklearn.covariance import LedoitWolf

from imad.errors import CheckpointError, FeatureError
from imad.router import Router
from imad.router.ood import (
    QuantileRangeOOD,
    fit_mahalanobis,
    fit_quantile_range,
    ledoit_wolf,
    ood_from_dict,
)

FITTERS = [fit_mahalanobis, fit_quantile_range]
CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "smollm2-135m-instruct-q4_1"


def correlated_rows(rng: np.random.Generator, n: int, d: int = 6) -> np.ndarray:
    mixing = np.eye(d) + 0.8 * np.tri(d, k=-1)
    return rng.standard_normal((n, d)) @ mixing.T


@pytest.mark.parametrize("shape", [(500, 6), (40, 30), (1000, 41)])
def test_ledoit_wolf_equals_scikit_learn(shape):
    rows = correlated_rows(np.random.default_rng(0), shape[0], shape[1]) + 3.0
    covariance, shrinkage = ledoit_wolf(rows)
    reference = LedoitWolf().fit(rows)
    np.testing.assert_allclose(covariance, reference.covariance_, rtol=1e-10, atol=1e-12)
    assert shrinkage == pytest.approx(reference.shrinkage_, rel=1e-10)


def test_mahalanobis_score_is_the_formula():
    rng = np.random.default_rng(1)
    detector = fit_mahalanobis(correlated_rows(rng, 300), correlated_rows(rng, 100))
    row = correlated_rows(rng, 1)
    centred = row[0] - detector.mean
    expected = np.sqrt(centred @ np.linalg.solve(detector.covariance, centred))
    assert detector.score(row)[0] == pytest.approx(expected, rel=1e-10)


def test_quantile_range_score_is_the_largest_excursion():
    detector = QuantileRangeOOD(0.5, lower=np.array([-1.0, 0.0]), upper=np.array([1.0, 2.0]))
    rows = np.array([[0.0, 1.0], [1.5, 1.0], [0.0, -3.0], [2.0, 4.5]])
    np.testing.assert_array_equal(detector.score(rows), [0.0, 0.5, 3.0, 2.5])
    np.testing.assert_array_equal(detector.flag(rows), [False, False, True, True])


@pytest.mark.parametrize("fit", FITTERS)
def test_threshold_is_the_validation_99th_percentile(fit):
    rng = np.random.default_rng(2)
    validation = correlated_rows(rng, 1000)
    detector = fit(correlated_rows(rng, 2000), validation)
    scores = detector.score(validation)
    assert detector.threshold == float(np.quantile(scores, 0.99, method="inverted_cdf"))
    assert detector.flag(validation).sum() == 10  # the 1% above the 990th of 1,000 scores


@pytest.mark.parametrize("fit", FITTERS)
def test_a_shifted_sample_is_flagged_far_more_often(fit):
    rng = np.random.default_rng(3)
    detector = fit(correlated_rows(rng, 2000), correlated_rows(rng, 1000))
    same = detector.flag(correlated_rows(rng, 2000)).mean()
    shifted = correlated_rows(rng, 2000) + np.array([4.0, 0, 0, 0, 0, 0])  # 4 std in feature 0
    assert same < 0.025
    assert detector.flag(shifted).mean() > 0.25 > 10 * same


def test_mahalanobis_sees_a_broken_correlation_that_no_single_feature_shows():
    rng = np.random.default_rng(4)
    def pairs(n: int) -> np.ndarray:
        first = rng.standard_normal(n)
        return np.column_stack([first, first + 0.2 * rng.standard_normal(n)])

    train, validation = pairs(3000), pairs(1000)
    # The two features move together; (1.2, −1.2) is usual for each but unlike any pair.
    unusual = np.array([[1.2, -1.2]])
    assert fit_quantile_range(train, validation).flag(unusual).tolist() == [False]
    assert fit_mahalanobis(train, validation).flag(unusual).tolist() == [True]


@pytest.mark.parametrize("fit", FITTERS)
def test_json_round_trip_scores_identically(fit):
    rng = np.random.default_rng(5)
    detector = fit(correlated_rows(rng, 400), correlated_rows(rng, 200))
    restored = ood_from_dict(json.loads(json.dumps(detector.to_dict())), n_features=6)
    assert type(restored) is type(detector)
    assert restored.threshold == detector.threshold
    probe = correlated_rows(rng, 50) * 2
    np.testing.assert_array_equal(restored.score(probe), detector.score(probe))


def test_scoring_refuses_rows_of_the_wrong_shape_or_non_finite():
    rng = np.random.default_rng(6)
    detector = fit_mahalanobis(correlated_rows(rng, 100), correlated_rows(rng, 50))
    with pytest.raises(FeatureError, match=r"shape \(n, 6\)"):
        detector.score(np.zeros((2, 5)))
    with pytest.raises(FeatureError, match="NaN"):
        detector.score(np.full((1, 6), np.nan))
    with pytest.raises(FeatureError, match="train_scaled"):
        fit_quantile_range(np.zeros((1, 6)), np.zeros((3, 6)))


def saved_mahalanobis() -> dict:
    rng = np.random.default_rng(7)
    return fit_mahalanobis(correlated_rows(rng, 200, 3), correlated_rows(rng, 100, 3)).to_dict()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"method": "knn"}, r"ood\.method"),
        ({"threshold": float("nan")}, r"ood\.threshold"),
        ({"threshold": -1.0}, r"ood\.threshold"),
        ({"mean": [0.0, float("inf"), 0.0]}, r"ood\.mean: holds NaN"),
        ({"mean": [0.0, 0.0]}, r"ood\.covariance: expected shape \(2, 2\)"),
        ({"covariance": [[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]}, "positive definite"),
        ({"covariance": "identity"}, r"ood\.covariance"),
        ({"shrinkage": 1.5}, r"ood\.shrinkage"),
    ],
)
def test_bad_saved_statistics_raise_checkpoint_error(change, message):
    with pytest.raises(CheckpointError, match=message):
        ood_from_dict({**saved_mahalanobis(), **change})


def test_saved_statistics_must_match_the_router_width():
    with pytest.raises(CheckpointError, match="statistics of 3 features for a router with 41"):
        ood_from_dict(saved_mahalanobis(), n_features=41)
    with pytest.raises(CheckpointError, match="lower ≤ upper"):
        ood_from_dict({"method": "quantile_range", "threshold": 1.0, "lower": [0.0, 2.0],
                       "upper": [1.0, 1.0]})
    with pytest.raises(CheckpointError, match="expected an object"):
        ood_from_dict([1, 2])


# --- the real corpus --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_rows(tmp_path_factory) -> dict[str, np.ndarray]:
    """The shipped router's scaled training and validation rows and MedQA answers' rows."""
    from training.datamodule import load_corpus
    from training.evaluation.training_rows import router_training_rows

    router = Router.load()
    cache = tmp_path_factory.mktemp("features")
    rows = router_training_rows(router, feature_cache=cache)
    medqa = load_corpus([CORPUS / "eval" / "medqa.jsonl"], feature_cache=cache,
                        schema_version=router.feature_schema_version)

    def scale(raw: np.ndarray) -> np.ndarray:
        return (raw - router.scaler_mean) / router.scaler_scale

    return {"train": scale(rows.train_features), "validation": scale(rows.validation_features),
            "medqa": scale(medqa.features)}


@pytest.mark.slow
@pytest.mark.parametrize("fit", FITTERS)
def test_real_validation_share_is_within_binomial_bounds_of_one_percent(corpus_rows, fit):
    train, validation = corpus_rows["train"], corpus_rows["validation"]
    # Threshold on one half of the validation split, share measured on the other half.
    order = np.random.default_rng(42).permutation(len(validation))
    calibration, held_out = validation[order[::2]], validation[order[1::2]]
    detector = fit(train, calibration)
    n = len(calibration)
    assert detector.flag(calibration).mean() == (n - np.ceil(0.99 * n)) / n  # by construction
    low, high = binom.ppf([0.0005, 0.9995], len(held_out), 0.01)
    assert low <= detector.flag(held_out).sum() <= high
    assert detector.flag(train).mean() <= 0.02  # the rows it was fitted on are not stranger


@pytest.mark.slow
@pytest.mark.parametrize("fit", FITTERS)
def test_real_answers_of_an_unseen_dataset_are_flagged_far_more_often(corpus_rows, fit):
    detector = fit(corpus_rows["train"], corpus_rows["validation"])
    assert detector.flag(corpus_rows["validation"]).mean() <= 0.01
    # MedQA (4-option clinical vignettes) is unlike the PubMedQA + GQA training answers.
    assert detector.flag(corpus_rows["medqa"]).mean() > 0.2
