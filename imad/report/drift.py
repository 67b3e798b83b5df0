"""Drift of p: the population stability index of each time window against a reference.

PSI = Σ_b (a_b − e_b) · ln(a_b / e_b) over 10 bins cut at the reference's deciles, where e_b and
a_b are the reference's and the window's shares of rows in bin b (a share of 0 counts as 1e-4,
so an empty bin is a large but finite term). The usual reading, which the report uses:
below 0.1 stable, 0.1–0.2 a moderate shift, above `PSI_THRESHOLD` = 0.2 a significant shift
(Siddiqi 2006, "Credit Risk Scorecards"; the common industry rule).

The reference: the shipped checkpoints store no validation scores (their config.json holds the
validation metrics, not the scores), so the reference is the log's first window with enough
rows; `reference_label` says so in the report. A window (or reference) with fewer than
`MIN_DRIFT_ROWS` scored rows gets no PSI, with the reason in words.
"""

from __future__ import annotations

import numpy as np

PSI_BINS = 10
PSI_THRESHOLD = 0.2
MIN_DRIFT_ROWS = 30
EMPTY_SHARE = 1e-4


def psi(reference: np.ndarray, current: np.ndarray, bins: int = PSI_BINS) -> float:
    """The population stability index of `current` against `reference` (both non-empty)."""
    reference = np.asarray(reference, dtype=np.float64)
    current = np.asarray(current, dtype=np.float64)
    edges = np.unique(np.quantile(reference, np.linspace(0.0, 1.0, bins + 1)[1:-1]))
    expected = _shares(np.searchsorted(edges, reference, side="right"), edges.size + 1)
    actual = _shares(np.searchsorted(edges, current, side="right"), edges.size + 1)
    return float(np.sum((actual - expected) * np.log(actual / expected)))


def _shares(bin_ids: np.ndarray, n_bins: int) -> np.ndarray:
    shares = np.bincount(bin_ids, minlength=n_bins) / max(bin_ids.size, 1)
    return np.maximum(shares, EMPTY_SHARE)


def drift_reading(value: float) -> str:
    """The words for a PSI value."""
    if value > PSI_THRESHOLD:
        return "significant shift"
    if value > 0.1:
        return "moderate shift"
    return "stable"
