"""Issue 33: every view of a decision carries exactly the fields `imad.decide.schema` declares
for it — the CLI's `--json` and text report, the server's `imad` object, header and log line, the
span attributes, the metrics' outcome labels — and each value is the one the decision or answer
gave. A field added to one view by hand, or declared but given no value, fails here."""

from __future__ import annotations

import json

import pytest

from imad.cli.ask import print_report
from imad.decide import FixedThreshold, RouterScore, schema
from imad.decision_log.answer_row import router_identity
from imad.llm.scripted import ScriptedChat
from imad.pipeline import Pipeline, PipelineAnswer
from imad.question import Question
from imad.serve.logs import decision_log_fields
from imad.serve.metrics import DECISION_OUTCOMES, OUTCOMES
from imad.serve.openai.model_names import ModelChoice
from imad.serve.openai.protocol import ImadInfo, completion_from_answer, decision_header
from imad.serve.reload.swap import identity_values
from imad.tracing.spans import decision_attributes
from tests.router.router_helpers import make_router
from tests.support.serving import echo_respond

LOG_COLUMNS = {"response_id", "time", "served_model", "router_name", "router_version",
               "router_hash", "certificate", "calibrator", "policy_rule", "tau", "tau_source", "raw",
               "p",
               "uncertainty", "ood_score", "ood", "outcome", "reasons", "features",
               "critique_prompt_tokens", "critique_completion_tokens", "debate_prompt_tokens",
               "debate_completion_tokens", "single_answer", "debate_answer", "served",
               "would_escalate"}
"""What the decision log (issue 32) asked for, by column."""


def answered(tau: float) -> PipelineAnswer:
    """A real pipeline's answer (the echo model; the score given, so no feature extraction)."""
    score = RouterScore(id="q-7", p=0.62, raw=0.58, uncertainty=0.1, ood_score=3.5,
                        ood_threshold=7.0, ood=False)
    pipeline = Pipeline(make_router(), ScriptedChat(echo_respond), "svrmad",
                        policy=FixedThreshold(tau), scorer=lambda question, response: score,
                        backend_options={"n_agents": 3, "consensus_agree": 3})
    return pipeline.answer(Question("Which number is tagged #7?", id="q-7"))


@pytest.fixture(scope="module", params=[0.5, 0.9], ids=["kept", "escalated"])
def answer(request) -> PipelineAnswer:
    return answered(request.param)


def test_values_are_given_for_every_declared_field_of_their_origin(answer):
    assert set(answer.decision.values()) == schema.names_from("decision")
    assert set(answer.values()) == schema.names_from("decision") | schema.names_from("answer")


def test_the_cli_json_is_the_answer_and_decision_views(answer):
    data = answer.to_dict()
    assert set(data) == set(schema.keys_of("answer")) | set(schema.ANSWER_EXTRAS)
    assert list(data["decision"]) == list(schema.keys_of("decision"))
    assert data["escalated"] is answer.decision.escalate and data["source"] == answer.source
    assert data["decision"]["tau"] == answer.decision.tau


def test_the_server_body_header_and_log_line_are_their_views(answer):
    choice = ModelChoice("imad-svrmad", "svrmad", None)
    router = identity_values(router_identity(make_router()))
    completion = completion_from_answer(answer, choice, completion_id="c", created=1,
                                        fingerprint="f", router=router)
    values = {**answer.values(), **router, "backend": "svrmad"}
    assert completion.imad.router_hash == router["router_hash"] and len(router["router_hash"]) == 64
    assert tuple(ImadInfo.model_fields) == schema.keys_of("body")
    assert completion.imad.model_dump() == schema.view("body", values)
    header = json.loads(decision_header(completion.imad))
    assert header == schema.view("header", values)
    assert decision_log_fields(completion) == schema.view("log_line", values)
    assert set(schema.keys_of("header")) <= set(schema.keys_of("body"))  # read from the body


def test_the_span_attributes_are_the_span_view(answer):
    attributes = decision_attributes(answer.decision)
    assert attributes == {f"imad.router.{key}": value
                          for key, value in schema.view("span", answer.decision.values()).items()}
    assert attributes["imad.router.outcome"] == answer.decision.outcome


def test_the_text_report_shows_the_text_view(answer, capsys):
    print_report(answer, "svrmad")
    lines = capsys.readouterr().out.splitlines()
    decision_line = next(line for line in lines if line.startswith("decision: "))
    shown = [pair.split(" ", 1)[0] for pair in decision_line.removeprefix("decision: ").split(", ")]
    view = schema.view("text", {**answer.values(), "backend": "svrmad"})
    assert shown == [key for key, value in view.items() if not isinstance(value, list)]
    assert [line.removeprefix("  - ") for line in lines if line.startswith("  - ")] == view["reasons"]


def test_the_metrics_label_every_declared_outcome():
    assert set(DECISION_OUTCOMES) == set(schema.FIELD["outcome"].values)
    assert set(DECISION_OUTCOMES.values()) <= set(OUTCOMES)
    assert schema.keys_of("metrics") == ("outcome",)


def test_the_decision_log_view_has_typed_columns():
    columns = {spec.key("log"): spec.sqlite_type for spec in schema.fields_of("log")}
    assert set(columns) >= LOG_COLUMNS and len(columns) == len(schema.fields_of("log"))
    assert columns["p"] == "REAL" and columns["reasons"] == "TEXT"
    assert columns["debate_prompt_tokens"] == "INTEGER" and columns["would_escalate"] == "INTEGER"


def test_a_view_missing_a_value_names_it_and_a_bad_declaration_is_refused():
    with pytest.raises(KeyError, match="the header view needs the value of 'backend'"):
        schema.view("header", {name: None for name in schema.names_from("decision")
                               | schema.names_from("answer")})
    with pytest.raises(KeyError, match="no decision view 'headers'"):
        schema.fields_of("headers")
    with pytest.raises(ValueError, match="declaration bug"):
        schema.Field("x", "number", "a number", frozenset({"body"}), keys={"span": "y"})


def test_the_log_keeps_the_verbal_confidence_training_evaluate_uses(answer):
    """The report card's baseline is `confidence_initial` (the initial answer's), as in
    training.evaluate and the Results page, not the alternative answer's `confidence_critique`."""
    from imad.decision_log.answer_row import answer_row, router_identity

    row = answer_row(answer, completion_id="c-1", model="imad", backend="svrmad",
                     identity=router_identity(make_router()), policy_rule="fixed")
    parsed = answer.critique.response
    assert parsed.confidence_initial != parsed.confidence_critique
    assert row["confidence_initial"] == parsed.confidence_initial and "confidence" not in row
