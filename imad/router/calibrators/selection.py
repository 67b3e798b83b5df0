"""`auto`: the calibrator for a few labels that is never meaningfully worse than their base rate.

On 50 labels a two-parameter Platt fit chases noise when the router's scores carry little
ranking signal on the user's traffic (issue 35: median held-out ECE 0.103 on MedQA against the
base rate's 0.04), and can invert the ranking outright. `auto` therefore keeps the labels' base
rate (`base_rate`) unless the labels show, beyond chance, that a map does better:

1. **Candidates**: Platt and isotonic (`platt`, `isotonic`, equal to scikit-learn's). Platt is a
   candidate only when its slope is ≥ 0, or when the labels show the inversion beyond chance: a
   one-sided Mann–Whitney test that right answers score *lower* than wrong ones, p < α = 0.05
   (normal approximation, tie-corrected, with continuity correction, as scipy's asymptotic
   `mannwhitneyu`). Platt with its slope held ≥ 0 would otherwise be the base rate. Isotonic
   never decreases.
2. **Cross-validated log loss**: each candidate and the base rate are fitted on 4 of 5
   stratified folds and scored on the fifth, the folds redrawn 4 times with a fixed seed, giving
   each labelled answer its mean held-out log loss (p clipped to [10⁻³, 1 − 10⁻³]).
3. **Beyond chance**: a candidate replaces the base rate only when its per-answer gain over the
   base rate is positive at α = 0.05 (one-sided paired z-test: mean gain > 1.645 standard
   errors); of those that pass, the lowest cross-validated loss wins.

With one class among the labels, fewer than `FOLDS` of the rarer one, or all scores equal, only
the base rate can be fitted. The same rule, α and folds apply on every data set: nothing here is
tuned to one model's answers. The choice and its reason are stored in the calibrator's record
(`CalibrationRecord.chosen_by`, `.reason`), so the checkpoint and the model card show them.
"""

from __future__ import annotations

import math

import numpy as np

from imad.metrics import average_ranks
from imad.router.calibrators import fitting
from imad.router.calibrators.base import CalibrationRecord, Calibrator, logit
from imad.router.calibrators.kinds import BaseRateCalibrator, IsotonicCalibrator, PlattCalibrator

ALPHA = 0.05
"""Significance level of both tests (the inversion, and a map's gain over the base rate)."""
FOLDS = 5
REPEATS = 4
SEED = 0
LOSS_CLIP = 1e-3
"""p is clipped to [10⁻³, 1 − 10⁻³] in the held-out log loss: one isotonic 0 or 1 on a wrong
side then costs log(1000) ≈ 6.9 rather than infinity, so a candidate is judged on every answer."""
_Z_ALPHA = 1.6448536269514722
"""The standard normal's 1 − α quantile for α = 0.05 (one-sided)."""


def mann_whitney_less(x: np.ndarray, y: np.ndarray) -> float:
    """One-sided p-value that the scores of right answers (`y` = 1) are stochastically lower
    than those of wrong ones: U of the right answers, normal approximation with tie correction
    and continuity correction (scipy's `mannwhitneyu(..., alternative="less",
    method="asymptotic")`). 1.0 when a class is missing or every score is equal."""
    right, n = int(y.sum()), y.size
    wrong = n - right
    ranks, counts = average_ranks(x)
    u = float(ranks[y == 1].sum()) - right * (right + 1) / 2.0
    ties = float(np.sum(counts ** 3 - counts))
    variance = right * wrong / 12.0 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    if right == 0 or wrong == 0 or variance <= 0:
        return 1.0
    z = (u - right * wrong / 2.0 + 0.5) / math.sqrt(variance)
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def choose_calibrator(raw: np.ndarray, y: np.ndarray, sources: tuple[str, ...] = ()) -> Calibrator:
    """The base rate, Platt or isotonic calibrator `auto` chooses for these labels (see the
    module docstring), its record saying which and why."""
    candidates, reason = _candidates(raw, y)
    if not candidates:
        return _chosen(BaseRateCalibrator, raw, y, sources, reason)
    losses = cross_validated_losses(raw, y, {"base_rate": BaseRateCalibrator, **candidates})
    base = losses.pop("base_rate")
    passed, shown = {}, [f"base rate {base.mean():.4f}"]
    for name, loss in losses.items():
        gain = base - loss
        z = gain.mean() / (gain.std(ddof=1) / math.sqrt(gain.size)) if gain.std() > 0 else 0.0
        shown.append(f"{name} {loss.mean():.4f} (gain z = {z:.2f})")
        if z > _Z_ALPHA:
            passed[name] = loss.mean()
    table = f"cross-validated log loss ({FOLDS} folds × {REPEATS}): {', '.join(shown)}"
    if not passed:
        return _chosen(BaseRateCalibrator, raw, y, sources, f"{reason}; {table}; no map beats the "
                       f"base rate beyond chance (z > {_Z_ALPHA:.3f}, α = {ALPHA})")
    best = min(passed, key=passed.__getitem__)
    return _chosen(candidates[best], raw, y, sources, f"{reason}; {table}; {best} beats the base "
                   f"rate beyond chance (α = {ALPHA})")


def cross_validated_losses(raw: np.ndarray, y: np.ndarray,
                           kinds: dict[str, type[Calibrator]]) -> dict[str, np.ndarray]:
    """Each kind's held-out log loss per labelled answer, averaged over `REPEATS` seeded
    stratified `FOLDS`-fold splits."""
    losses = {name: np.zeros(y.size) for name in kinds}
    rng = np.random.default_rng(SEED)
    for _ in range(REPEATS):
        folds = _stratified_folds(y, rng)
        for fold in range(FOLDS):
            train, test = folds != fold, folds == fold
            for name, kind in kinds.items():
                fitted = kind.fit(raw[train], y[train], CalibrationRecord(kind.kind, int(train.sum())),
                                  training_prior=None)
                p = np.clip(fitted.apply(raw[test]), LOSS_CLIP, 1 - LOSS_CLIP)
                losses[name][test] += -(y[test] * np.log(p) + (1 - y[test]) * np.log1p(-p)) / REPEATS
    return losses


def _candidates(raw: np.ndarray, y: np.ndarray) -> tuple[dict[str, type[Calibrator]], str]:
    """The maps worth cross-validating, and the words for why (or why none)."""
    right = int(y.sum())
    rarer = min(right, y.size - right)
    if rarer == 0:
        return {}, f"all {y.size} labelled answers are {'right' if right else 'wrong'}"
    if rarer < FOLDS:
        return {}, f"only {rarer} of the rarer class among {y.size} labels, too few to fit a map"
    if np.ptp(raw) == 0:
        return {}, "every labelled answer has the same score, so no map can rank them"
    slope, _ = fitting.fit_logistic(logit(raw), y)
    p_inverted = mann_whitney_less(raw, y)
    if slope >= 0:
        return ({"platt": PlattCalibrator, "isotonic": IsotonicCalibrator},
                f"Platt's slope {slope:.3g} ≥ 0")
    if p_inverted < ALPHA:
        return ({"platt": PlattCalibrator, "isotonic": IsotonicCalibrator},
                f"Platt's slope {slope:.3g} < 0 and the labels show the inversion beyond chance "
                f"(one-sided Mann–Whitney p = {p_inverted:.3g} < {ALPHA})")
    return ({"isotonic": IsotonicCalibrator},
            f"Platt's slope {slope:.3g} < 0 but the inversion is within chance (one-sided "
            f"Mann–Whitney p = {p_inverted:.3g} ≥ {ALPHA}), so no decreasing map is tried")


def _stratified_folds(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A fold number per answer, each class dealt round-robin in a random order."""
    folds = np.empty(y.size, dtype=np.int64)
    for value in (0, 1):
        members = rng.permutation(np.flatnonzero(y == value))
        folds[members] = np.arange(members.size) % FOLDS
    return folds


def _chosen(kind: type[Calibrator], raw: np.ndarray, y: np.ndarray, sources: tuple[str, ...],
            reason: str) -> Calibrator:
    chosen = CalibrationRecord(kind.kind, y.size, int(y.sum()), sources, chosen_by="auto",
                               reason=reason)
    return kind.fit(raw, y, chosen, training_prior=None)

