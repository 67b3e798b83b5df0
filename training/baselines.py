"""The two reference scorers the router is compared with.

- `confidence_initial` (DOWN-style): the model's own `confidence_initial`, clipped to [0, 1],
  used as p directly. Nothing is fitted.
- `logistic_regression`: scikit-learn's default L2 logistic regression on the 41 features,
  scaled with the router's scaler, fitted on the rows the caller passes (in `training.fit` the
  router's training split; in `training.evaluate` the training split of the router's training
  corpus, then applied unchanged to the evaluation dataset).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression

BASELINES: dict[str, str] = {
    "confidence_initial": "the model's own confidence_initial as p (DOWN-style); nothing fitted",
    "logistic_regression": "L2 logistic regression on the 41 scaled features",
}
"""Baseline names (as in reports and checkpoint metrics) → what each one is."""


def confidence_probabilities(features: np.ndarray, confidence_column: int) -> np.ndarray:
    """p = the raw `confidence_initial` column, clipped to [0, 1]."""
    return np.clip(np.asarray(features, dtype=np.float64)[:, confidence_column], 0.0, 1.0)


@dataclass(frozen=True)
class LogisticBaseline:
    """A fitted logistic regression that scales rows as the runtime `Router` does."""

    regression: LogisticRegression
    scaler_mean: np.ndarray
    scaler_scale: np.ndarray

    def predict_proba(self, features: np.ndarray) -> np.ndarray:
        """P(answer correct) for each row of raw features."""
        scaled = (np.asarray(features, dtype=np.float64) - self.scaler_mean) / self.scaler_scale
        return self.regression.predict_proba(scaled)[:, 1]


def fit_logistic_baseline(train_features: np.ndarray, train_labels: np.ndarray,
                          scaler_mean: np.ndarray, scaler_scale: np.ndarray) -> LogisticBaseline:
    """Fit the logistic-regression baseline on raw training rows (needs both classes)."""
    mean = np.asarray(scaler_mean, dtype=np.float64)
    scale = np.asarray(scaler_scale, dtype=np.float64)
    scaled = (np.asarray(train_features, dtype=np.float64) - mean) / scale
    regression = LogisticRegression(max_iter=2000).fit(scaled, train_labels)
    return LogisticBaseline(regression, mean, scale)


def baseline_probabilities(
    train_features: np.ndarray,
    train_labels: np.ndarray,
    validation_features: np.ndarray,
    scaler_mean: np.ndarray,
    scaler_scale: np.ndarray,
    confidence_column: int,
) -> dict[str, np.ndarray]:
    """Both baselines' p on the validation rows, the regression fitted on the training rows."""
    regression = fit_logistic_baseline(train_features, train_labels, scaler_mean, scaler_scale)
    return {
        "confidence_initial": confidence_probabilities(validation_features, confidence_column),
        "logistic_regression": regression.predict_proba(validation_features),
    }
