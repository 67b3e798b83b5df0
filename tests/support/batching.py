"""Calling a score batcher from many threads at once, as a server's pipelines do."""

from __future__ import annotations

import threading

from imad.critique.schema import CritiqueResponse
from imad.decide import RouterScore
from imad.errors import FeatureError
from imad.question import Question
from imad.serve.scoring.batcher import ScoreBatcher


def call_together(batcher: ScoreBatcher, calls: dict[int, tuple[Question, CritiqueResponse]]
                  ) -> dict[int, RouterScore | FeatureError]:
    """Call the batcher from one thread per entry, all released at once; each entry's score or
    its FeatureError."""
    start = threading.Barrier(len(calls))
    results: dict[int, RouterScore | FeatureError] = {}

    def call(index: int) -> None:
        start.wait(60)
        try:
            results[index] = batcher(*calls[index])
        except FeatureError as error:
            results[index] = error

    threads = [threading.Thread(target=call, args=(index,)) for index in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)  # bounds a broken test only
    return results
