"""Old checkpoints decide as before the policy redesign (issue 21, SPEC §14).

`tests/fixtures/policy/decisions_recorded.json` holds the four shipped routers' decisions on 18
recorded self-critiques of the embedded model (five parsed and one unparsed answer per evaluation
set), written by the code before the redesign (commit c90a807) with its `Router.decide`:
the checkpoint's policy, the OOD policy "escalate", a caller's τ 0.5, and a trigger budget (rate
0.3, window 8, warm-up 3 at the checkpoint's τ) observing the 18 answers in order. The new path —
`router.score` then a `Policy` — must give the same τ source, escalate, reasons, cues (features,
order, values), statuses and OOD flags exactly, and the same numbers (p, τ, u, OOD score, each
cue's delta_p) within `NUMBER_TOLERANCE`. Not to the bit, for two measured reasons: float32
matrix products round their last bits by the CPU's vector unit (on an AVX-only EPYC, without
AVX2, p moves by up to 1.8e-7, u by 2.1e-7 and a cue's effect by 4.2e-7 from the recording), and
since issue 20 an answer's cue probes go through the network as one 42-row product (a third of
the CPU), which moves a cue's effect by up to 5.7e-7 there (5.4e-7 on the recording's CPU).
Decisions and printed reasons do not move. The old calls were `router.decide(q, r, parse_error=e)`,
`router.with_ood_policy("escalate").decide(...)`, `router.with_threshold(0.5, "set for this
pipeline (--tau)").decide(..., tau_source="request")` and `router.decide(..., budget=TriggerBudget(
0.3, window=8, min_observations=3, initial_threshold=router.tau))`, over the inputs in order.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from imad.critique.schema import CritiqueResponse
from imad.decide import FixedThreshold, Policy, TriggerBudget, checkpoint_policy
from imad.router import Router

ROOT = Path(__file__).resolve().parents[2]
NUMBER_TOLERANCE = 1e-6
NUMBERS = ("p", "tau", "uncertainty", "ood_score")
RECORDED = json.loads((ROOT / "tests/fixtures/policy/decisions_recorded.json").read_text("utf-8"))
EVAL = ROOT / "corpus" / "smollm2-135m-instruct-q4_1" / "eval"


@cache
def _records() -> dict[str, dict]:
    records = {}
    for file in sorted({item["file"] for item in RECORDED["inputs"]}):
        for line in (EVAL / f"{file}.jsonl").read_text("utf-8").splitlines():
            record = json.loads(line)
            records[record["question_id"]] = record
    return records


def _inputs() -> list[tuple[str, CritiqueResponse | None, str | None]]:
    rows = []
    for item in RECORDED["inputs"]:
        record = _records()[item["question_id"]]
        parsed = record["parsed"]
        response = None if parsed is None else CritiqueResponse.from_dict(parsed)
        rows.append((record["question"]["text"], response,
                     None if parsed is not None else record["parse_error"] or "unparsed"))
    return rows


def _policies(router: Router) -> dict[str, Policy]:
    return {
        "default": checkpoint_policy(router.config),
        "ood_escalate": Policy(checkpoint_policy(router.config).rule, ood_policy="escalate"),
        "tau_request": Policy(FixedThreshold(0.5, method="set for this pipeline (--tau)")),
        "budget": Policy(TriggerBudget(0.3, window=8, min_observations=3,
                                       initial_threshold=router.config.threshold.tau)),
    }


@pytest.mark.parametrize("name", sorted(RECORDED["routers"]))
def test_the_new_path_decides_as_the_recorded_router(name):
    router = Router.load(name)
    policies = _policies(router)
    scores = [router.score(text, response, parse_error=error) for text, response, error in _inputs()]
    for case, recorded in RECORDED["routers"][name].items():
        decided = [policies[case].decide(score).to_dict() for score in scores]
        _assert_same_decisions(decided, recorded, f"{name} / {case}")


def _assert_same_decisions(decided: list[dict], recorded: list[dict], where: str) -> None:
    # recorded before shadow mode: a decision outside it says would_escalate None (issue 32)
    assert all(decision["would_escalate"] is None for decision in decided), where
    decided = [{key: value for key, value in decision.items() if key != "would_escalate"}
               for decision in decided]
    assert [_words(d) for d in decided] == [_words(d) for d in recorded], where
    now, then = [_numbers(d) for d in decided], [_numbers(d) for d in recorded]
    assert [n is None for n in sum(now, [])] == [n is None for n in sum(then, [])], where
    for a, b in zip(sum(now, []), sum(then, []), strict=True):
        assert a == b or a == pytest.approx(b, abs=NUMBER_TOLERANCE, rel=0), where


def _numbers(decision: dict) -> list[float | None]:
    """A decision's computed numbers, compared within the tolerance."""
    return [decision[key] for key in NUMBERS] + [cue["delta_p"] for cue in decision["cues"]]


def _words(decision: dict) -> dict:
    """Everything else in a decision, compared exactly."""
    return {**{key: value for key, value in decision.items() if key not in NUMBERS},
            "cues": [{key: value for key, value in cue.items() if key != "delta_p"}
                     for cue in decision["cues"]]}


def test_the_recording_covers_every_branch():
    decisions = [d for router in RECORDED["routers"].values() for case in router.values() for d in case]
    outcomes = {(d["parse_status"], d["escalate"], d["ood"], d["tau_source"]) for d in decisions}
    assert ("unparsed", True, None, "budget") in outcomes
    assert ("parsed", False, True, "checkpoint") in outcomes
    assert {d["tau_source"] for d in decisions} == {"checkpoint", "request", "budget"}
    # the OOD policy "escalate" escalated answers that p ≥ τ would keep
    assert any(d["escalate"] and d["p"] is not None and d["p"] >= d["tau"] for d in decisions)
