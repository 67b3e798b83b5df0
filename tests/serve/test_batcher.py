"""The cross-request score batcher: bit-identical to one-by-one scoring, batches under load."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from imad.critique.schema import CritiqueResponse
from imad.decide import RouterScore
from imad.errors import FeatureError
from imad.question import Question
from imad.router import Router
from imad.serve.scoring.batcher import ScoreBatcher
from tests.router.router_helpers import make_router
from tests.support.batching import call_together as call_together_on

pytest.importorskip("spacy")


def response(index: int) -> CritiqueResponse:
    return CritiqueResponse(
        initial_answer=f"Answer {index}", initial_reasoning=f"Paris is in France; I count {index} cities.",
        critique="However, I may be wrong about the count, perhaps it is more.",
        alternative_answer=str(index + 1), final_answer=f"Answer {index}",
        confidence_initial=0.9 - index / 100, confidence_critique=0.1 + index / 100)


def question(index: int) -> Question:
    return Question(f"Which city, #{index}?", id=f"q{index}")


def call_together(batcher: ScoreBatcher, indices: list[int]) -> dict[int, RouterScore | FeatureError]:
    return call_together_on(batcher, {index: (question(index), response(index)) for index in indices})


@pytest.mark.parametrize("router", [Router.load(), make_router(seed=3)], ids=["shipped", "random"])
def test_concurrent_calls_are_batched_and_bit_identical_to_single_scoring(router):
    n = 12
    batcher = ScoreBatcher(router, max_batch=8, window_s=60)  # the cap, not the window, closes a batch
    scores = call_together(batcher, list(range(n - 4)))
    batcher.window_s = 0.0  # the last few: whatever is waiting, no window
    scores |= call_together(batcher, list(range(n - 4, n)))
    batcher.close()
    assert batcher.batch_sizes[0] == 8 and sum(batcher.batch_sizes) == n
    for index in range(n):
        assert scores[index] == router.score(question(index), response(index))  # cues and OOD too


def test_a_failing_answer_gets_its_own_error_and_the_others_their_scores():
    router = Router.load()
    batcher = ScoreBatcher(router, max_batch=2, window_s=60)
    bad = dataclasses.replace(response(1), confidence_initial=float("nan"))
    results = call_together_on(batcher, {0: (question(1), response(1)), 1: (question(1), bad)})
    batcher.close()
    assert batcher.batch_sizes == [2]
    assert isinstance(results[1], FeatureError) and "confidence_initial" in str(results[1])
    assert results[0] == router.score(question(1), response(1))


def test_a_scorer_that_breaks_mid_batch_costs_no_answer():
    """The batch's scorer raising (a dead scoring process) re-scores each job in the batcher."""
    router = make_router(seed=4)

    def broken(texts, responses):
        raise RuntimeError("the scoring process died")

    batcher = ScoreBatcher(router, max_batch=3, window_s=60, lanes=[broken])
    scores = call_together(batcher, [1, 2, 3])
    batcher.close()
    assert batcher.batch_sizes == [3]
    assert all(scores[index] == router.score(question(index), response(index)) for index in (1, 2, 3))


def test_after_close_calls_score_in_their_own_thread():
    router = Router.load()
    closed: list[bool] = []
    batcher = ScoreBatcher(router, close_scorer=lambda: closed.append(True))
    batcher.close()
    batcher.close()  # twice is harmless
    assert closed == [True]
    assert batcher(question(2), response(2)) == router.score(question(2), response(2))
    assert batcher.batch_sizes == []


def test_a_lone_caller_does_not_wait_out_the_window():
    # An hour's window would hang this call if the batcher waited for company that cannot come.
    router = Router.load()
    batcher = ScoreBatcher(router, window_s=3600, expected=lambda: 1)
    scores = call_together(batcher, [3])
    batcher.close()
    assert batcher.batch_sizes == [1]
    assert scores[3] == router.score(question(3), response(3))


def test_the_window_waits_for_callers_that_are_still_expected():
    # Two pipelines running: whichever caller comes first, its batch waits for the other one.
    router = Router.load()
    batcher = ScoreBatcher(router, window_s=3600, expected=lambda: 2)
    first = threading.Thread(target=lambda: batcher(question(1), response(1)))
    first.start()
    scores = call_together(batcher, [2])
    first.join(120)
    batcher.close()
    assert batcher.batch_sizes == [2]
    assert scores[2] == router.score(question(2), response(2))


def test_two_lanes_score_two_batches_at_once_each_caller_its_own_score():
    """While one lane holds a batch, the next batch goes to the other lane (not behind it)."""
    router = make_router(seed=5)
    release = threading.Event()
    holding = [threading.Event(), threading.Event()]

    def lane(number):
        def score(texts, responses):
            holding[number].set()
            assert release.wait(60), "the other lane never took a batch"
            return router.features_scored(texts, responses)
        return score

    batcher = ScoreBatcher(router, max_batch=1, window_s=0.0, lanes=[lane(0), lane(1)])
    waiter = threading.Thread(target=lambda: (holding[0].wait(60), holding[1].wait(60), release.set()))
    waiter.start()
    scores = call_together(batcher, [1, 2])
    waiter.join(60)
    batcher.close()
    assert all(event.is_set() for event in holding)  # both lanes held a batch at the same time
    assert batcher.batch_sizes == [1, 1]
    assert all(scores[index] == router.score(question(index), response(index)) for index in (1, 2))


def test_a_broken_lane_costs_no_answer_and_the_other_lane_keeps_scoring():
    router = make_router(seed=6)
    used: list[str] = []
    broken_once = threading.Event()

    def broken(texts, responses):
        used.append("broken")
        broken_once.set()
        raise RuntimeError("the scoring process died")

    def working(texts, responses):
        used.append("working")
        assert broken_once.wait(60), "the broken lane never took a batch"
        return router.features_scored(texts, responses)

    batcher = ScoreBatcher(router, max_batch=1, window_s=0.0, lanes=[broken, working])
    scores = call_together(batcher, list(range(8)))
    batcher.close()
    assert sorted(batcher.batch_sizes) == [1] * 8 and len(used) == 8 and "broken" in used
    assert all(scores[index] == router.score(question(index), response(index)) for index in range(8))


def test_close_stops_every_lane_once_and_later_calls_score_in_their_own_thread():
    router = make_router(seed=7)
    closed: list[bool] = []
    batcher = ScoreBatcher(router, lanes=[router.features_scored] * 3,
                           close_scorer=lambda: closed.append(True))
    batcher.close()
    assert closed == [True]
    assert not any(thread.is_alive() for thread in batcher._threads)  # noqa: SLF001
    assert batcher(question(4), response(4)) == router.score(question(4), response(4))
