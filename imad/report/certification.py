"""The report card's certification section: the risk–coverage curve of the labelled answers with
its upper confidence bound, the certified point, the naive point and the feasibility line; and,
for a router that carries a certificate, the certificate with the live check of its promise.

The curve, the points and the line answer "which τ could be signed off on this traffic" for the
asked error α (`imad report --max-error A`, or the certificate's α); the naive point is where a
hand-picked τ lands (the laxest whose labelled error is ≤ α, with no confidence at all). The live
check reads the labels of answers the certified τ kept after the certificate's labels ended, in
the order they were labelled (`imad.decide.certify.live`).

numpy and scipy only, and the router is read from its config.json: no torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from imad.decide.certify import GRID, Certificate, certify, live_check, risk_curve
from imad.decide.certify.feasibility import least_escalation
from imad.decision_log.columns import SERVED, TIME
from imad.errors import CheckpointError, ConfigError
from imad.jsonio import read_untrusted_file

__all__ = ["CURVE_STEP", "certification_section", "read_certificate"]

CURVE_STEP = 50
"""The curve is reported at every 50th grid threshold (τ = 0.05, 0.10, …)."""


def read_certificate(checkpoint: str | Path) -> Certificate | None:
    """The certificate in a checkpoint directory's config.json (None: τ is not certified);
    `CheckpointError` when it is damaged."""
    path = Path(checkpoint)
    path = path / "config.json" if path.is_dir() else path
    try:
        data = read_untrusted_file(path)
    except (OSError, ValueError) as error:
        raise CheckpointError(f"cannot read the router's config {path}: {error}") from None
    if not isinstance(data, dict) or data.get("certificate") is None:
        return None
    try:
        return Certificate.from_dict(data["certificate"])
    except ConfigError as error:
        raise CheckpointError(f"{path}: invalid {error}") from None


def certification_section(rows: list[dict[str, Any]], *, certificate: Certificate | None = None,
                          alpha: float | None = None, delta: float = 0.05,
                          why_none: str = "no router with a certificate was given (--certificate DIR)"
                          ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(the top-level `certificate` entry or None, the `certification` section) of the card."""
    if certificate is not None:
        alpha, delta = certificate.alpha, certificate.delta
    entry = None if certificate is None else {**certificate.to_dict(),
                                              "live_check": _live(rows, certificate)}
    scored = [row for row in rows if row["correct"] is not None and row.get(SERVED) != "debate"
              and row.get("p") is not None]
    section: dict[str, Any] = {"certificate_note": None if certificate is not None else why_none}
    if alpha is None:
        section["note"] = "give --max-error A (or a certified router) to see what can be certified"
        return entry, section
    if not scored:
        section["note"] = "no labelled answer served the router's own answer: nothing to certify on"
        return entry, section
    p = np.array([row["p"] for row in scored], dtype=np.float64)
    right = np.array([int(row["correct"]) for row in scored])
    traffic = np.array([row["p"] for row in rows if row.get("p") is not None], dtype=np.float64)
    curve = risk_curve(p, right)
    bounds, errors = curve.upper_bound(delta), curve.kept_error()
    points = range(CURVE_STEP - 1, GRID.size, CURVE_STEP)
    section.update(
        alpha=alpha, delta=delta, labelled=curve.labelled, base_error=curve.base_error,
        feasibility={"least_escalation": least_escalation(curve.base_error, alpha),
                     "note": "any method must escalate at least this share to keep error ≤ α"},
        curve=[{"tau": float(GRID[j]), "kept_share": curve.kept[j] / curve.labelled,
                "kept_error": None if curve.kept[j] == 0 else float(errors[j]),
                "upper_bound": float(bounds[j])} for j in points])
    naive = curve.naive_index(alpha)
    section["naive"] = None if naive is None else {
        "tau": float(GRID[naive]), "kept_share": curve.kept[naive] / curve.labelled,
        "kept_error": float(errors[naive]), "upper_bound": float(bounds[naive])}
    answer = certify(p, right, alpha=alpha, delta=delta, traffic=traffic)
    section["certified"] = ({"tau": answer.tau, "kept_share": answer.kept / answer.labelled,
                             "upper_bound": answer.upper_bound,
                             "escalation_rate": answer.escalation_rate}
                            if isinstance(answer, Certificate) else
                            {"tau": None, "reason": answer.reason, "message": answer.message})
    return entry, section


def _live(rows: list[dict[str, Any]], certificate: Certificate) -> dict[str, Any]:
    """The live check on the kept answers labelled after the certificate's labels."""
    after = certificate.labels.last
    kept = [row for row in rows if row["correct"] is not None and row.get(SERVED) != "debate"
            and row.get("p") is not None and row["p"] >= certificate.tau
            and (after is None or row[TIME] > after)]
    kept.sort(key=lambda row: (row.get("label_time") or row[TIME], row[TIME]))
    check = live_check([0 if row["correct"] else 1 for row in kept], certificate.alpha,
                       certificate.delta)
    return {**check.to_dict(), "evidence": check.evidence()}


def render_certification(card: dict[str, Any]) -> list[str]:
    """The markdown lines of the certification section."""
    section, certificate = card.get("certification"), card.get("certificate")
    if section is None:
        return []
    lines = ["", "## Certified threshold", ""]
    if certificate is None:
        lines.append(f"No certificate: {section['certificate_note']}.")
    else:
        live = certificate["live_check"]
        flag = "**VIOLATED**: " if live["violated"] else ""
        lines += [f"Certificate `{certificate['hash'][:12]}`: keep p ≥ {certificate['tau']:g}, at most "
                  f"{certificate['alpha']:g} wrong among kept answers with {1 - certificate['delta']:g} "
                  f"confidence. Live check: {flag}{live['evidence']}."]
    if "curve" not in section:
        lines += ["", section["note"][0].upper() + section["note"][1:] + "."]
        return lines
    certified, naive = section["certified"], section["naive"]
    lines += ["", f"At α = {section['alpha']:g}, δ = {section['delta']:g} on {section['labelled']} "
              f"labelled answers (base error {section['base_error']:.3f}; any method must escalate "
              f"at least {section['feasibility']['least_escalation']:.1%}):", "",
              "| τ | kept share | kept error | upper bound |", "|---:|---:|---:|---:|"]
    for point in section["curve"]:
        error = "—" if point["kept_error"] is None else f"{point['kept_error']:.3f}"
        lines.append(f"| {point['tau']:.2f} | {point['kept_share']:.3f} | {error} | "
                     f"{point['upper_bound']:.3f} |")
    lines.append("")
    lines.append(f"Certified point: τ = {certified['tau']:g}, keeps {certified['kept_share']:.1%} of "
                 f"the labelled answers, bound {certified['upper_bound']:.3f}." if certified["tau"]
                 is not None else f"Certified point: none ({certified['message']}).")
    lines.append("Naive point (the laxest τ whose labelled error is ≤ α, no confidence): " + (
        "none." if naive is None else f"τ = {naive['tau']:g}, keeps {naive['kept_share']:.1%}, "
        f"labelled error {naive['kept_error']:.3f}, upper bound {naive['upper_bound']:.3f}."))
    return lines
