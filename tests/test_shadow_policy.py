"""The shadow policy (issue 32 item 1): `Policy(rule, shadow=True)` decides exactly as the same
policy without it, records the verdict in `would_escalate`, keeps a parsed answer (no debate),
and still escalates an unparsed one (nothing to serve); a shadow `Pipeline` makes one call and
`debate_in_shadow` runs the skipped debate later. The runner reports each count change."""

from __future__ import annotations

from dataclasses import replace

import pytest

from imad.critique.schema import CritiqueResponse
from imad.decide import FixedThreshold, Policy, RouterScore, unparsed_score
from imad.llm.scripted import ScriptedChat
from imad.pipeline import Pipeline
from imad.question import Question
from imad.shadow import ShadowRunner, shadow_debate_job
from tests.router.router_helpers import make_router
from tests.support.serving import echo_respond


def score(p: float) -> RouterScore:
    return RouterScore(id="q", p=p, raw=p, uncertainty=0.1)


@pytest.mark.parametrize(("p", "would"), [(0.5, True), (0.95, False)])
def test_shadow_decides_as_usual_and_keeps_the_answer(p, would):
    plain = Policy(FixedThreshold(0.9)).decide(score(p))
    shadow = Policy(FixedThreshold(0.9), shadow=True).decide(score(p))
    assert plain.escalate is would and plain.would_escalate is None
    assert (shadow.escalate, shadow.would_escalate, shadow.outcome) == (False, would, "kept")
    assert (shadow.p, shadow.tau, shadow.tau_source) == (plain.p, plain.tau, plain.tau_source)
    assert shadow.reasons[:len(plain.reasons)] == plain.reasons
    assert ("shadow mode: would escalate" in shadow.reasons[-1]) is would
    assert shadow.values()["would_escalate"] is would
    assert replace(shadow, escalate=would, would_escalate=None, reasons=plain.reasons) == plain


def test_an_unparsed_answer_still_escalates_in_shadow():
    decision = Policy(FixedThreshold(0.2), shadow=True).decide(unparsed_score("q", "no JSON"))
    assert (decision.escalate, decision.would_escalate) == (True, True)


def test_a_shadow_pipeline_serves_the_single_answer_and_debates_later():
    model = ScriptedChat(echo_respond)
    pipeline = Pipeline(make_router(), model, "svrmad", policy=Policy(FixedThreshold(1.0), shadow=True),
                        scorer=lambda question, response: score(0.4),
                        backend_options={"n_agents": 3, "consensus_agree": 3})
    answer = pipeline.answer(Question("Which number is tagged #4?", id="q"))
    assert (answer.source, answer.answer, answer.escalated) == ("single_agent", "4", False)
    assert answer.decision.would_escalate is True and len(model.calls) == 1
    amended = []

    class Log:
        def amend(self, values):
            amended.append(dict(values))

    changed = shadow_debate_job(pipeline, answer, "chatcmpl-1", Log())()
    assert changed is False and len(model.calls) > 1
    (values,) = amended
    assert values["response_id"] == "chatcmpl-1" and values["debate_answer"] == "4"
    assert values["shadow_debate"] is True and values["debate_prompt_tokens"] > 0


def test_the_runner_reports_each_count_change():
    events = []
    runner = ShadowRunner(4, on_count=lambda event, count: events.append((event, count)))
    runner.submit(lambda: True)
    runner.submit(lambda: False)
    runner.submit(lambda: 1 / 0)
    runner.close(wait=True)
    runner.submit(lambda: True)
    assert sorted(events) == sorted([("submitted", 1)] * 4 + [("run", 1)] * 2 + [("changed", 1),
                                     ("failed", 1), ("dropped", 1)])
    assert runner.stats.snapshot() == {"submitted": 4, "run": 2, "dropped": 1, "failed": 1, "changed": 1,
                                      "abandoned": 0}


def test_every_feature_is_kept_for_the_log():
    router = make_router()
    response = CritiqueResponse(initial_answer="4", initial_reasoning="It reads 4.",
                                critique="Clear.", alternative_answer="0", final_answer="4",
                                confidence_initial=0.9, confidence_critique=0.1)
    decision = Policy(FixedThreshold(0.5)).decide(router.score("Which number is tagged #4?", response))
    features = decision.values()["features"]
    assert list(features) == list(router.feature_names) and len(features) == 41
    assert len(decision.cues) <= 3  # the decision reports a few cues; the log keeps every feature
