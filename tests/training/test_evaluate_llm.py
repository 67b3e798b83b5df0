"""`training.evaluate` with the real embedded model (SmolLM2-135M) on two questions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.router.router_helpers import make_router
from training.evaluate import evaluate
from training.evaluation.config import EvaluateConfig

pytestmark = [pytest.mark.llm, pytest.mark.slow]
QUESTIONS = [
    {"id": "ice", "question": "Does ice float on water?", "answer": "yes", "task_type": "yes_no_maybe"},
    {"id": "planet", "question": "Which planet is closest to the Sun?",
     "choices": ["Venus", "Earth", "Mercury", "Mars"], "answer": "C"},
]


@pytest.mark.long_e2e
def test_real_model_answers_are_cached_and_scored(embedded_model, tmp_path):
    questions = tmp_path / "two.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    router = make_router(tau=0.5).save(tmp_path / "router")
    config = EvaluateConfig(datasets=(str(questions),), router=str(router),
                            corpus_dir=str(tmp_path / "corpus"), out=str(tmp_path / "out"),
                            feature_cache=None, progress=False)
    first = evaluate(config, model=embedded_model)
    data = first.document["datasets"]["two"]
    assert data["questions"] == 2 and data["generated_answers"] == 2
    assert first.document["llm"]["model_id"] == "SmolLM2-135M-Instruct-Q4_1"
    assert data["parsed"] == 2  # JSON-schema-constrained decoding always parses
    assert data["tokens"]["per_question"] > 100
    lines = Path(data["corpus"]).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["question_id"] for r in records] == ["ice", "planet"]
    assert all(0.0 <= a["p"]["router"] <= 1.0 for a in data["answers"])
    assert (tmp_path / "out" / "reliability-two.png").stat().st_size > 10_000
    # The second run answers from the corpus cache: no model call, identical numbers.
    second = evaluate(config, model=embedded_model)
    rerun = second.document["datasets"]["two"]
    assert rerun["generated_answers"] == 0 and rerun["reused_answers"] == 2
    assert rerun["scorers"] == data["scorers"]
