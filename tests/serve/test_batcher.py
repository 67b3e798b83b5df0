"""The cross-request feature batcher: bit-identical to one-by-one extraction, batches under load."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from imad.critique.schema import CritiqueResponse
from imad.errors import FeatureError
from imad.router import featurize
from imad.serve.batcher import FeatureBatcher

pytest.importorskip("spacy")


def response(index: int) -> CritiqueResponse:
    return CritiqueResponse(
        initial_answer=f"Answer {index}", initial_reasoning=f"Paris is in France; I count {index} cities.",
        critique="However, I may be wrong about the count, perhaps it is more.",
        alternative_answer=str(index + 1), final_answer=f"Answer {index}",
        confidence_initial=0.9 - index / 100, confidence_critique=0.1 + index / 100)


@pytest.mark.parametrize("schema_version", [1, 2])
def test_concurrent_calls_are_batched_and_bit_identical_to_single_extraction(schema_version):
    n = 12
    batcher = FeatureBatcher(max_batch=8, window_s=60)  # the cap, not the window, closes a batch
    start = threading.Barrier(n - 4)
    vectors: dict[int, np.ndarray] = {}

    def call(index: int) -> None:
        start.wait(60)
        vectors[index] = batcher(f"Which city, #{index}?", response(index), schema_version)

    threads = [threading.Thread(target=call, args=(index,)) for index in range(n - 4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    batcher.window_s = 0.0  # the last few: whatever is waiting, no window
    start = threading.Barrier(4)
    threads = [threading.Thread(target=call, args=(index,)) for index in range(n - 4, n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    batcher.close()
    assert batcher.batch_sizes[0] == 8 and sum(batcher.batch_sizes) == n
    for index in range(n):
        single = featurize.extract(f"Which city, #{index}?", response(index), schema_version)
        assert vectors[index].dtype == single.dtype and np.array_equal(vectors[index], single)


def test_a_failing_job_gets_its_own_error_and_the_others_their_vectors():
    batcher = FeatureBatcher(max_batch=2, window_s=60)
    results: dict[str, object] = {}
    start = threading.Barrier(2)

    def call(name: str, schema_version: int) -> None:
        start.wait(60)
        try:
            results[name] = batcher("Why?", response(1), schema_version)
        except FeatureError as error:
            results[name] = error

    threads = [threading.Thread(target=call, args=("good", 2)), threading.Thread(target=call, args=("bad", 99))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    batcher.close()
    assert isinstance(results["bad"], FeatureError) and "unknown feature schema" in str(results["bad"])
    assert np.array_equal(results["good"], featurize.extract("Why?", response(1), 2))


def test_after_close_calls_extract_in_their_own_thread():
    batcher = FeatureBatcher()
    batcher.close()
    assert np.array_equal(batcher("Why?", response(2), 2), featurize.extract("Why?", response(2), 2))


def test_a_lone_caller_does_not_wait_out_the_window():
    # An hour's window would hang this call if the batcher waited for company that cannot come.
    batcher = FeatureBatcher(window_s=3600, expected=lambda: 1)
    result: list[np.ndarray] = []
    caller = threading.Thread(target=lambda: result.append(batcher("Why?", response(3), 2)))
    caller.start()
    caller.join(120)  # bounds a broken test only
    batcher.close()
    assert batcher.batch_sizes == [1]
    assert np.array_equal(result[0], featurize.extract("Why?", response(3), 2))


def test_the_window_waits_for_callers_that_are_still_expected():
    # Two pipelines running: whichever caller comes first, its batch waits for the other one.
    batcher = FeatureBatcher(window_s=3600, expected=lambda: 2)
    vectors: dict[int, np.ndarray] = {}
    first = threading.Thread(target=lambda: vectors.update({1: batcher("Why 1?", response(1), 2)}))
    first.start()
    second = threading.Thread(target=lambda: vectors.update({2: batcher("Why 2?", response(2), 2)}))
    second.start()
    for thread in (first, second):
        thread.join(120)
    batcher.close()
    assert batcher.batch_sizes == [2]
    for index in (1, 2):
        assert np.array_equal(vectors[index], featurize.extract(f"Why {index}?", response(index), 2))
