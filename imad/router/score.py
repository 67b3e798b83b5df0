"""The scores of a batch of feature rows, as arrays.

`Router.scored_rows` computes a `ScoredRows`: small and quick to send between processes (the
server's scoring processes return it); `ScoredRows.score(row, id)` builds one answer's
`imad.decide.RouterScore`, the scorer's whole output that a policy decides on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from imad.decide.schema import NON_FINITE
from imad.decide.score import Cue, RouterScore, ood_flag

if TYPE_CHECKING:
    from imad.critique.schema import CritiqueResponse
    from imad.question import Question


@dataclass(frozen=True)
class ScoredRows:
    """The scores of a batch of feature rows as arrays: what `Router.scored_rows` computes, small
    and quick to send between processes; `score(row, id)` builds one row's `RouterScore`."""

    feature_names: tuple[str, ...]
    vectors: np.ndarray
    """The raw feature rows, (n, F)."""
    p: np.ndarray
    """(n,) p after the calibrator."""
    raw: np.ndarray
    uncertainty: np.ndarray
    effects: np.ndarray
    """(n, F): p minus p with each feature at its training mean (the cues' effects)."""
    ood_scores: np.ndarray | None = None
    """(n,) OOD scores; None without OOD statistics."""
    ood_threshold: float | None = None

    def __len__(self) -> int:
        return len(self.p)

    def score(self, row: int, question_id: str) -> RouterScore:
        """The `RouterScore` of row `row`."""
        p, raw, u = float(self.p[row]), float(self.raw[row]), float(self.uncertainty[row])
        features = tuple(zip(self.feature_names, map(float, self.vectors[row]), strict=True))
        if not (math.isfinite(p) and math.isfinite(u)):
            return RouterScore(id=question_id, p=None, raw=raw, uncertainty=u,
                               score_status=NON_FINITE, feature_values=features)
        cues = tuple(Cue(name, float(value), float(effect)) for name, value, effect
                     in zip(self.feature_names, self.vectors[row], self.effects[row], strict=True))
        ood_score = None if self.ood_scores is None else float(self.ood_scores[row])
        ood_score, ood, doubtful = ood_flag(ood_score, self.ood_threshold)
        return RouterScore(id=question_id, p=p, raw=raw, uncertainty=u, cues=cues,
                           ood_score=ood_score, ood_threshold=self.ood_threshold, ood=ood,
                           ood_doubtful=doubtful, feature_values=features)


Scorer = Callable[["Question", "CritiqueResponse"], RouterScore]
"""What a pipeline scores a parsed self-critique with, when not `Router.score` itself: the
server passes its cross-request batcher (`imad.serve.scoring.batcher.ScoreBatcher`)."""
