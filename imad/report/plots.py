"""The report card's pictures: the reliability diagram and the deferral curve (PNG).

matplotlib is imported here only, when pictures are asked for (`imad report --out DIR`); it
ships with the `train` extra. Without it the markdown is still written and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

RELIABILITY_PNG = "reliability.png"
DEFERRAL_PNG = "deferral.png"


def draw_pictures(card: dict[str, Any], out: Path) -> dict[str, str]:
    """Write the PNGs the card has data for into `out`; their role → file name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    quality = card["quality"]
    written: dict[str, str] = {}
    if quality["scored_labelled"]:
        figure, axes = plt.subplots(figsize=(5, 5))
        axes.plot([0, 1], [0, 1], color="grey", linestyle=":", label="perfect calibration")
        for key, label in (("router", "router p"), ("confidence", "verbal confidence (confidence_initial)")):
            bins = quality[key].get("reliability")
            if bins and bins["rows"]:
                axes.plot(bins["mean_p"], bins["accuracy"], marker="o", label=label)
                for x, y, count in zip(bins["mean_p"], bins["accuracy"], bins["rows"], strict=True):
                    axes.annotate(f"{count}", (x, y), textcoords="offset points", xytext=(0, 6),
                                  ha="center", fontsize=7)
        axes.set(xlabel="predicted P(correct)", ylabel="observed accuracy", xlim=(0, 1), ylim=(0, 1.05),
                 title="Reliability (15 bins; labelled answers per bin)")
        _legend_outside(axes)
        figure.savefig(out / RELIABILITY_PNG, dpi=100, bbox_inches="tight",
                       metadata={"Software": None})
        plt.close(figure)
        written["reliability"] = RELIABILITY_PNG
    curves = quality["deferral"]
    if "router" in curves:
        figure, axes = plt.subplots(figsize=(6, 4))
        for key, label in (("router", "router p"), ("confidence", "verbal confidence (confidence_initial)"),
                           ("random", "random gate"), ("oracle", "oracle gate")):
            if key in curves:  # a rate that keeps no answer has no accuracy: not drawn
                points = [(rate, value) for rate, value in zip(curves["escalation_rate"], curves[key],
                                                               strict=True) if value is not None]
                axes.plot([rate for rate, _ in points], [value for _, value in points], label=label)
        axes.set(xlabel="escalation rate", ylabel="accuracy of kept answers", xlim=(0, 1),
                 title="Deferral curve")
        _legend_outside(axes)
        figure.savefig(out / DEFERRAL_PNG, dpi=100, bbox_inches="tight", metadata={"Software": None})
        plt.close(figure)
        written["deferral"] = DEFERRAL_PNG
    return written


def _legend_outside(axes: Any) -> None:
    """The legend right of the plot, where it covers no line (the figure grows to hold it)."""
    axes.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=8)
