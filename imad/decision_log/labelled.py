"""The labelled decisions of a log, as a calibrator fits on them.

`imad calibrate --recalibrate … --log PATH` fits a calibrator on the router's raw scores and
the labels users gave. A label is about the answer that was *served*: only rows that served the
single answer (kept, or any row in shadow mode) say whether the answer the router scored was
right; a row that served the debate's answer is skipped, as is a row without a score. The
result names the log, the rows used and their time range, for the new checkpoint's model card.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from imad.decision_log.columns import ID, RAW, SERVED, TIME, iso_time, served_an_answer
from imad.decision_log.location import open_for_reading
from imad.decision_log.replica import REPLICA_COLUMNS, Replica, of_replica
from imad.decision_log.scorer import SCORER_COLUMNS, Scorer, scorer_of
from imad.errors import DecisionLogError


@dataclass(frozen=True)
class LabelledScores:
    """Raw score, p and label of each usable labelled decision, in time order."""

    log: str
    ids: tuple[str, ...]
    raw_scores: np.ndarray
    probabilities: np.ndarray
    correct: np.ndarray
    """1.0 where the served single answer was right, 0.0 where it was wrong (NaN: unlabelled,
    only with `include_unlabelled`)."""
    first_time: float | None
    last_time: float | None
    skipped_debate_served: int
    skipped_unscored: int
    scorers: tuple[Scorer, ...] = ()
    """The routers the rows were scored by, as the rows name them (sorted)."""

    @property
    def labelled(self) -> int:
        return int(np.sum(~np.isnan(self.correct)))

    @property
    def rows(self) -> int:
        return len(self.ids)

    def describe(self) -> str:
        """One line for a model card: the log, the rows used, their time range."""
        if not self.rows:
            return f"no usable labelled decisions in {self.log}"
        return (f"{self.rows} decisions of {self.log} ({self.labelled} labelled, "
                f"{int(np.nansum(self.correct))} correct), "
                f"{iso_time(self.first_time)} to {iso_time(self.last_time)}; skipped "
                f"{self.skipped_debate_served} that served the debate's answer and "
                f"{self.skipped_unscored} without a score")


def labelled_scores(path: str | Path, *, since: float | None = None, until: float | None = None,
                    model: str | None = None, min_rows: int = 0,
                    include_unlabelled: bool = False, replica: Replica | None = None
                    ) -> LabelledScores:
    """Read the log's labelled single-answer decisions with `since <= time < until`
    (`include_unlabelled`: the unlabelled ones too, for a label-free calibrator).

    `min_rows`: fewer usable rows is a `DecisionLogError` saying how many there are and why
    the others were skipped (a calibrator fitted on a handful of labels would be noise).
    `replica`: only the rows one replica of a fleet wrote."""
    store = open_for_reading(path)
    shown = str(store.path)  # a URL's password hidden
    try:
        ids, raw, p, correct, times, scorers = [], [], [], [], [], set()
        debate_served = unscored = 0
        for row in of_replica(store.rows(since=since, until=until, model=model, names=(
                ID, TIME, SERVED, RAW, "p", *SCORER_COLUMNS, *REPLICA_COLUMNS)), replica):
            if row["correct"] is None and not include_unlabelled:
                continue
            if row.get(SERVED) == "debate":
                debate_served += 1
                continue
            if row.get(RAW) is None or row.get("p") is None or not served_an_answer(row):
                unscored += 1
                continue
            ids.append(row[ID])
            raw.append(row[RAW])
            p.append(row["p"])
            correct.append(np.nan if row["correct"] is None else float(row["correct"]))
            times.append(row[TIME])
            scorers.add(scorer_of(row))
    finally:
        store.close()
    result = LabelledScores(
        log=shown, ids=tuple(ids), raw_scores=np.asarray(raw, dtype=np.float64),
        probabilities=np.asarray(p, dtype=np.float64), correct=np.asarray(correct, dtype=np.float64),
        first_time=min(times) if times else None, last_time=max(times) if times else None,
        skipped_debate_served=debate_served, skipped_unscored=unscored,
        scorers=tuple(sorted(scorers, key=Scorer.describe)))
    if result.rows < min_rows:
        raise DecisionLogError(f"{result.describe()}: {result.rows} usable, at least {min_rows} "
                               "needed; label more decisions (imad log label) or widen --since")
    return result
