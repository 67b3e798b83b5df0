"""Reliability diagrams: one PNG per dataset, one panel per scorer; and deferral plots.

Each panel shows, for the 15 equal-width bins of p that hold answers, the accuracy of the
answers in the bin (bars), the bin's mean p (red tick) and the gap between them (red line),
the diagonal of perfect calibration, τ (dotted) and the number of answers per bin (top).
The figure is built with `matplotlib.figure.Figure` (no pyplot, no global backend state), so
it works the same in a script, a test or a notebook; matplotlib is imported only when a
diagram is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from imad.errors import MissingDependencyError
from training.metrics import N_BINS, bin_indices, calibration_bins, expected_calibration_error

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from training.evaluation.deferral import DeferralCurve

PANEL_SIZE_IN = 4.0
DPI = 100
"""A diagram of k panels is k·400 × 400 pixels."""


def _figure_class():  # noqa: ANN202 - matplotlib's Figure, imported lazily
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise MissingDependencyError("matplotlib", "pip install 'imad[train]'",
                                     "reliability diagrams") from error
    return Figure


def reliability_figure(title: str, labels: np.ndarray,
                       probabilities: Mapping[str, np.ndarray | None], tau: float,
                       titles: Mapping[str, str] | None = None) -> Figure:
    """A figure with one reliability panel per scorer (a scorer whose p is None says so)."""
    figure = _figure_class()(figsize=(PANEL_SIZE_IN * len(probabilities), PANEL_SIZE_IN), dpi=DPI,
                             layout="constrained")
    axes = figure.subplots(1, len(probabilities), squeeze=False)[0]
    for index, (ax, (name, p)) in enumerate(zip(axes, probabilities.items(), strict=True)):
        _panel(ax, (titles or {}).get(name, name), labels, p, tau, legend=index == 0)
    figure.suptitle(title)
    return figure


def _panel(ax, title: str, labels: np.ndarray, p: np.ndarray | None, tau: float,  # noqa: ANN001
           legend: bool) -> None:
    width = 1.0 / N_BINS
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="perfect calibration")
    ax.axvline(tau, linestyle=":", color="black", linewidth=1, label=f"τ = {tau:.2f}")
    ax.set(xlim=(0, 1), ylim=(0, 1.08), xlabel="predicted p (bin)", ylabel="accuracy in bin")
    if p is None or p.size == 0:
        ax.set_title(f"{title}\n(no scores)")
        ax.text(0.5, 0.5, "not available" if p is None else "no parsed answers",
                ha="center", va="center")
        return
    bins = calibration_bins(labels, p)
    centres = (np.unique(bin_indices(p)) + 0.5) * width
    ax.bar(centres, bins.accuracy, width=width, edgecolor="black", color="tab:blue",
           alpha=0.8, label="accuracy")
    ax.vlines(centres, bins.accuracy, bins.mean_probability, color="tab:red", linewidth=2,
              label="gap to mean p")
    ax.scatter(centres, bins.mean_probability, color="tab:red", marker="_", s=120, zorder=3)
    for x, count in zip(centres, bins.counts, strict=True):
        ax.text(x, 1.01, str(int(count)), ha="center", va="bottom", fontsize=7)
    ece = expected_calibration_error(labels, p)
    ax.set_title(f"{title}\nECE {ece:.3f}, n = {p.size}")
    if legend:
        ax.legend(loc="upper left", fontsize=7, bbox_to_anchor=(0.0, 0.95))


def save_reliability_diagram(path: Path, title: str, labels: np.ndarray,
                             probabilities: Mapping[str, np.ndarray | None], tau: float,
                             titles: Mapping[str, str] | None = None) -> Path:
    """Draw and write the PNG (a fixed size: `PANEL_SIZE_IN` × `DPI` pixels per panel)."""
    figure = reliability_figure(title, labels, probabilities, tau, titles)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=DPI, metadata={"Software": None})
    return path


def save_deferral_plot(path: Path, title: str, curves: Mapping[str, DeferralCurve],
                       titles: Mapping[str, str] | None = None) -> Path:
    """Two panels, accuracy and tokens/question against the escalation rate, one line per gate."""
    figure = _figure_class()(figsize=(PANEL_SIZE_IN * 2, PANEL_SIZE_IN), dpi=DPI,
                             layout="constrained")
    accuracy_ax, tokens_ax = figure.subplots(1, 2)
    for name, curve in curves.items():
        label = f"{(titles or {}).get(name, name)} (AUC {curve.area:.3f})"
        accuracy_ax.plot(curve.rate, curve.accuracy, label=label)
        tokens_ax.plot(curve.rate, curve.tokens, label=label)
    accuracy_ax.set(xlim=(0, 1), xlabel="escalation rate", ylabel="accuracy of final answers")
    tokens_ax.set(xlim=(0, 1), xlabel="escalation rate", ylabel="tokens per question")
    accuracy_ax.legend(loc="best", fontsize=7)
    figure.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=DPI, metadata={"Software": None})
    return path
