"""The report card of a decision log: one dict, from which the markdown, the
PNGs and `imad report --json` are all made.

Top level: `rows` (answered decisions in the selection), `unanswered` (rows of requests that
failed: no answer to label or measure), `excluded` (`p_out_of_range`: rows left out because
their p is not in [0, 1]) with `excluded_note` in words (null when none), `labelled` (of the
rows, with a label), `auroc`
(the router's, null when a class has fewer than 10 labels) and `auroc_note` (why, in words),
then the sections: `volume` (escalation served and would-be, OOD share, by model), `windows`
(the same per time window, with p's drift), `drift`, `quality` (labelled rows:
`imad.report.quality`) and `shadow` (`imad.report.shadow`). A missing number is null with a
note in words beside it; the card never holds NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from imad.decision_log.columns import ESCALATED, MODEL, TIME, iso_time, served_an_answer
from imad.report import metrics
from imad.report.drift import MIN_DRIFT_ROWS, PSI_THRESHOLD, drift_reading, psi
from imad.report.quality import labelled_quality, would_escalate
from imad.report.routers import router_label, routers_note
from imad.report.shadow import shadow_section

DEFAULT_WINDOW_S = 86_400.0


def build_report(rows: Sequence[dict[str, Any]], *, log: str, window_s: float = DEFAULT_WINDOW_S,
                 since: float | None = None, model: str | None = None, router: str | None = None,
                 samples: int = metrics.BOOTSTRAP_SAMPLES) -> dict[str, Any]:
    """The report card of `rows` (decoded log rows with their labels, in time order); `router`:
    the `--router` they were selected by. A row whose request failed (no answer served) counts in
    `unanswered` and nowhere else; rows whose p is not a probability are left out and counted
    (`excluded`)."""
    logged = list(rows)
    rows, out_of_range = probability_rows([row for row in logged if served_an_answer(row)])
    quality = labelled_quality(rows, samples=samples)
    windows = window_rows(rows, window_s)
    drift, window_cards = drift_by_window(windows)
    return {
        "log": log,
        "selection": {"since": iso_time(since) if since is not None else None, "model": model,
                      "router": router, "window_hours": window_s / 3600.0},
        "routers_note": routers_note(rows),
        "rows": len(rows),
        "unanswered": len(logged) - len(rows) - out_of_range,
        "excluded": {"p_out_of_range": out_of_range},
        "excluded_note": None if not out_of_range else (
            f"{out_of_range} decision{'s' if out_of_range > 1 else ''} left out: p outside [0, 1], "
            "a value imad never writes (the log was edited or damaged)"),
        "labelled": sum(1 for row in rows if row["correct"] is not None),
        "auroc": quality["router"]["auroc"],
        "auroc_note": quality["router"]["auroc_note"],
        "volume": volume(rows),
        "windows": window_cards,
        "drift": drift,
        "quality": quality,
        "shadow": shadow_section(rows),
    }


def probability_rows(rows: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The rows whose p is a probability in [0, 1] or absent (unscored), and how many were not:
    p = 1e308 made ECE and Brier infinite, p = 2.0 a reliability bin's mean p above 1."""
    kept = [row for row in rows if row.get("p") is None or 0.0 <= row["p"] <= 1.0]
    return kept, len(rows) - len(kept)


def volume(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Totals, escalation served and would-be, OOD share; the same for each model name."""
    result = rates(rows)
    if rows:
        result["first"] = iso_time(rows[0][TIME])
        result["last"] = iso_time(rows[-1][TIME])
    models = sorted({model_name(row) for row in rows})
    result["by_model"] = {name: rates([row for row in rows if model_name(row) == name])
                          for name in models}
    routers = sorted({router_label(row) for row in rows})
    result["by_router"] = {name: rates([row for row in rows if router_label(row) == name])
                           for name in routers}
    return result


def rates(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """`rows`, `escalation_rate` (debate served), `would_escalate_rate` and `ood_share`."""
    served = [bool(row[ESCALATED]) for row in rows if row.get(ESCALATED) is not None]
    flagged = [bool(row["ood"]) for row in rows if row.get("ood") is not None]
    return {"rows": len(rows), "escalation_rate": _share(served),
            "would_escalate_rate": _share([would_escalate(row) for row in rows]),
            "ood_share": _share(flagged)}


def window_rows(rows: Sequence[dict[str, Any]], window_s: float) -> list[tuple[float, list[dict]]]:
    """Rows grouped into windows of `window_s` seconds aligned to the unix epoch (UTC)."""
    windows: dict[float, list[dict]] = {}
    for row in rows:
        start = math.floor(row[TIME] / window_s) * window_s
        windows.setdefault(start, []).append(row)
    return sorted(windows.items())


def drift_by_window(windows: list[tuple[float, list[dict]]]) -> tuple[dict[str, Any], list[dict]]:
    """Each window's rates and PSI of p against the reference (the first window with enough
    scored rows: `imad.report.drift`)."""
    scores = [np.array([row["p"] for row in members if row.get("p") is not None])
              for _, members in windows]
    routers = [{router_label(row) for row in members} for _, members in windows]
    reference = next((index for index, values in enumerate(scores)
                      if values.size >= MIN_DRIFT_ROWS), None)
    cards = []
    for index, (start, members) in enumerate(windows):
        card = {"start": iso_time(start), **rates(members), "psi": None, "drift": None}
        if reference is None:
            card["psi_note"] = (f"no window has the {MIN_DRIFT_ROWS} scored rows a reference needs")
        elif index == reference:
            card["psi_note"] = "the reference window"
        elif routers[index] != routers[reference]:
            card["psi_note"] = (f"scored by {', '.join(sorted(routers[index]))}, not the reference "
                                "window's router: p moved with the router, so no PSI")
        elif scores[index].size < MIN_DRIFT_ROWS:
            card["psi_note"] = (f"too few scored rows for a PSI: {scores[index].size}, at least "
                                f"{MIN_DRIFT_ROWS} needed")
        else:
            value = psi(scores[reference], scores[index])
            card.update(psi=value, drift=drift_reading(value), psi_note=None)
        cards.append(card)
    flagged = [card["start"] for card in cards if card["psi"] is not None and card["psi"] > PSI_THRESHOLD]
    drift = {"threshold": PSI_THRESHOLD, "flagged_windows": flagged,
             "reference": None if reference is None else (
                 f"the log's first window with at least {MIN_DRIFT_ROWS} scored rows "
                 f"({cards[reference]['start']}); the checkpoints store no validation scores")}
    return drift, cards


def model_name(row: dict[str, Any]) -> str:
    return "(no model name)" if row.get(MODEL) is None else str(row[MODEL])


def _share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None
