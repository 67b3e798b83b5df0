"""How often the OOD detector flags a set's answers, and how well the router ranks the flagged
and the unflagged ones (issue 16, item 3).

One function for `python -m training.evaluate` (per dataset, with the checkpoint's own detector)
and `benchmarks/bench_budget.py` (both detectors, refitted): if the flag means "the router is out
of its depth", the router's AUROC on the flagged answers should be lower than on the rest.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from imad.router.ood import OODDetector
from training.metrics import auroc


def ood_split(detector: OODDetector, scaled: np.ndarray, labels: np.ndarray,
              p: np.ndarray) -> dict[str, Any]:
    """Share of rows flagged, and the router's AUROC on flagged / unflagged rows (NaN when a
    part holds one class). `scaled`: the router-scaled features of the rows scored `p`."""
    flagged = detector.flag(scaled) if len(scaled) else np.zeros(0, dtype=bool)
    labels, p = np.asarray(labels), np.asarray(p)
    return {
        "n": int(labels.size),
        "flagged": int(flagged.sum()),
        "flagged_share": float(flagged.mean()) if flagged.size else math.nan,
        "auroc_flagged": auroc(labels[flagged], p[flagged]) if flagged.any() else math.nan,
        "auroc_unflagged": auroc(labels[~flagged], p[~flagged]) if (~flagged).any() else math.nan,
        "threshold": detector.threshold,
        "method": detector.method,
    }


def auroc_text(value: float | None, n: int) -> str:
    """An AUROC with its sample size, or a dash when it is undefined (NaN, or null in JSON)."""
    return f"{value:.3f} (n={n})" if value is not None and math.isfinite(value) else f"— (n={n})"
