"""Wire format: request parsing errors name the field; the decision header is compact ASCII JSON."""

from __future__ import annotations

import json

import pytest

from imad.errors import ServeError
from imad.serve.openai.protocol import ImadInfo, decision_header, parse_chat_request


def info(**changes) -> ImadInfo:
    fields = {"p": 0.41, "tau": 0.7, "escalated": True, "backend": "svrmad", "source": "debate",
              "reasons": ["p 0.41 < τ 0.70: escalate"], "parse_status": "parsed", "llm_calls": 4,
              "error": None, "upstream_model": "m", "tau_source": "checkpoint", "ood_score": None,
              "ood": None, "ood_policy": "flag", "would_escalate": None,
              "router_name": "imad-router-v2", "router_version": None, "router_hash": "0" * 64,
              "certificate": None}
    return ImadInfo(**{**fields, **changes})


def test_header_is_ascii_and_round_trips():
    header = decision_header(info())
    assert header.isascii() and " " not in header.replace("p 0.41", "")[:10]
    assert json.loads(header) == {"p": 0.41, "tau": 0.7, "tau_source": "checkpoint", "escalated": True,
                                  "ood": None, "would_escalate": None, "backend": "svrmad",
                                  "source": "debate", "reasons": ["p 0.41 < τ 0.70: escalate"]}


def test_a_huge_reason_is_cut_in_the_header_only():
    long_reason = "unparsed self-critique: " + "x" * 10_000
    header = json.loads(decision_header(info(p=None, reasons=[long_reason, "escalate"])))
    assert header["reasons"] == [long_reason[:200]] and header["p"] is None


def test_request_keeps_known_fields_and_tolerates_openai_extras():
    request = parse_chat_request(json.dumps({
        "model": "imad", "messages": [{"role": "user", "content": "hi", "name": "u"}],
        "temperature": 0.2, "stream": True, "stream_options": {"include_usage": True}, "n": 1,
        "imad": {"choices": ["a", "b"], "task_type": "multiple_choice"}}).encode())
    assert request.stream and request.stream_options.include_usage and request.imad.choices == ["a", "b"]


def test_validation_error_names_the_field():
    with pytest.raises(ServeError) as caught:
        parse_chat_request(json.dumps({"model": "imad", "messages": [{"content": "hi"}]}).encode())
    assert caught.value.param == "messages.0.role" and "messages.0.role" in caught.value.message


def test_the_imad_object_is_the_schemas_body_view():
    """The `imad` object's fields are the schema's `body` view (declared there once), each
    required, and nothing else may slip in (extra fields are refused)."""
    from imad.decide import schema

    assert tuple(ImadInfo.model_fields) == schema.keys_of("body")
    assert all(field.is_required() for field in ImadInfo.model_fields.values())
    with pytest.raises(ValueError, match="Field required"):
        ImadInfo(**{key: value for key, value in info().model_dump().items() if key != "ood"})
    assert info(p=float("nan")).p is None  # strict JSON: a non-finite score is null
    with pytest.raises(ValueError, match="Extra inputs"):
        info(score_status="scored")
