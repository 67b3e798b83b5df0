"""Single and batched extraction give identical vectors (SPEC §4: extraction is batched),
under each feature schema."""

from __future__ import annotations

import json

import numpy as np
import pytest

from features import extract, extract_batch
from imad.critique.schema import CritiqueResponse


@pytest.fixture(scope="module")
def pairs(fixture_data_dir) -> tuple[list[str], list[CritiqueResponse]]:
    """20 PubMedQA items turned into self-critique responses, plus a few edge cases.

    The abstract's sections serve as the reasoning and the conclusion as the critique, so the
    texts have real length and vocabulary.
    """
    questions, responses = [], []
    path = fixture_data_dir / "pubmedqa" / "pqal.jsonl"
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        item = json.loads(line)
        label = item["final_decision"]
        changed = "maybe" if number % 3 == 0 else label
        questions.append(item["question"])
        responses.append(CritiqueResponse(
            initial_answer=label, initial_reasoning=" ".join(item["contexts"]),
            critique=item["long_answer"], alternative_answer="maybe", final_answer=changed,
            confidence_initial=(number % 10) / 10, confidence_critique=((number * 7) % 10) / 10,
        ))
    edge_texts = ["", "!!!", "这是一个测试。", "Yes. " * 300]
    for text in edge_texts:
        questions.append(text)
        responses.append(CritiqueResponse("yes", text, text[::-1], "no", "no", 0.5, 0.25))
    return questions, responses


@pytest.mark.parametrize("schema_version", [1, 2])
def test_batched_rows_equal_single_extraction(pairs, schema_version):
    questions, responses = pairs
    single = np.stack([extract(q, r, schema_version=schema_version)
                       for q, r in zip(questions, responses, strict=True)])
    assert single.shape == (len(questions), 41) and np.isfinite(single).all()
    for batch_size in (1, 7, 64):
        batched = extract_batch(questions, responses, batch_size=batch_size,
                                schema_version=schema_version)
        assert np.array_equal(batched, single), f"batch_size={batch_size}"


@pytest.mark.parametrize("schema_version", [1, 2])
def test_two_processes_give_the_same_rows(pairs, schema_version):
    questions, responses = pairs
    one = extract_batch(questions, responses, batch_size=4, schema_version=schema_version)
    two = extract_batch(questions, responses, batch_size=4, n_process=2,
                        schema_version=schema_version)
    assert np.array_equal(one, two)


def test_batch_accepts_any_sequences_and_keeps_the_order(pairs):
    questions, responses = pairs
    forward = extract_batch(tuple(questions), tuple(responses))
    backward = extract_batch(questions[::-1], responses[::-1])
    assert np.array_equal(forward, backward[::-1])
