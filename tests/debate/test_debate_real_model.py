"""Every back-end completes a debate on a MedQA question with the real embedded model.

Configs are shrunk (fewer agents and rounds) so the whole module runs in a few minutes on two
CPU cores; the protocol code is the same at any size.
"""

from __future__ import annotations

import json

import pytest

from imad.debate import BACKENDS, MADConfig, create_backend
from imad.question import Question, TaskType

pytestmark = pytest.mark.llm

SMALL = {
    "acemad": {"n_agents": 3, "n_rounds": 2},
    "svrmad": {"n_agents": 3, "consensus_agree": 3, "max_debates": 2},
    "cot": {},
    "self_consistency": {"n_samples": 3},
    "mad": {"n_agents": 2, "n_rounds": 2},
    "liang": {"max_rounds": 2},
    # θ = 1: always debate, so both the confidence gate and the inner back-end run.
    "down": {"theta": 1.0, "debate_config": MADConfig(n_agents=2, n_rounds=2)},
}


@pytest.fixture(scope="module")
def medqa_question(data_dir) -> Question:
    """The shortest of the first 20 MedQA test questions (read with the stdlib)."""
    path = data_dir / "medqa" / "test_4options.jsonl"
    with path.open(encoding="utf-8") as lines:
        records = [json.loads(line) for _, line in zip(range(20), lines, strict=False)]
    record = min(records, key=lambda r: len(r["question"]))
    return Question(record["question"], TaskType.MULTIPLE_CHOICE,
                    tuple(record["options"][k] for k in sorted(record["options"])),
                    id=record["id"], dataset="medqa", gold=record["answer_idx"])


QUICK = {"cot", "self_consistency"}
"""The back-ends whose real run takes seconds; the others' take a minute each on two busy cores
and run in the `long_e2e` set (`.ci/run`), their protocol covered by the scripted tests."""
CASES = [pytest.param(name, SMALL[name], id=name,
                      marks=() if name in QUICK else pytest.mark.long_e2e)
         for name in sorted(BACKENDS)] + [
    pytest.param("svrmad", {**SMALL["svrmad"], "score_rule": "survival"}, id="svrmad-survival",
                 marks=pytest.mark.long_e2e),
]


@pytest.mark.parametrize(("name", "fields"), CASES)
def test_backend_completes_a_medqa_debate(name, fields, embedded_model, medqa_question):
    result = create_backend(name, embedded_model, **fields).run(medqa_question)
    assert result.backend == name
    assert result.final_answer in medqa_question.option_letters
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    assert result.prompt_tokens == sum(c.prompt_tokens for c in result.trace)
    assert all(c.error is None for c in result.trace), [c.error for c in result.trace]
    assert result.rounds and all(set(r.values()) <= {*medqa_question.option_letters, ""}
                                 for r in result.rounds)
    json.dumps(result.to_dict())  # well-formed and serialisable
    if name == "acemad":
        assert result.details["belief_source"] == "logprobs"
        for round_details in result.details["rounds"]:
            for belief in round_details["beliefs"].values():
                assert sum(belief) == pytest.approx(1.0)
        assert not any(f.startswith("belief_fallback") for f in result.flags), result.flags
    if name == "svrmad":
        assert result.details["prior_source"] == "perplexity"
        assert result.details["score_rule"] == fields.get("score_rule", "beta")
        assert all(0 < p <= 1 for p in result.details["priors"].values())
    if name == "down":
        assert result.details["confidence_source"] == "answer_prob"
        assert result.stop_reason.startswith("debated")
