"""The request pipelines' shared parts: one router for every request, a policy per model name."""

from __future__ import annotations

from imad.llm.openai_http import OpenAICompatibleChat
from imad.serve.openai.model_names import ModelChoice
from tests.support.serving import echo_factory


def test_a_tau_suffix_builds_a_policy_and_shares_the_router():
    factory = echo_factory()
    first = factory.build(ModelChoice("imad-acemad-0.3", "acemad", 0.3))
    second = factory.build(ModelChoice("imad-svrmad-0.3", "svrmad", 0.3))
    assert first.router is factory.router and second.router is factory.router
    assert (first.policy.rule.tau, first.policy.rule.source) == (0.3, "request")
    default = factory.build(ModelChoice("imad", "acemad", None))
    assert default.router is factory.router
    stored = factory.router.config.threshold.tau
    assert (default.policy.rule.tau, default.policy.rule.source) == (stored, "checkpoint")


def test_the_upstream_client_keeps_a_connection_per_slot():
    chat = OpenAICompatibleChat("m", base_url="http://127.0.0.1:9/v1", max_concurrency=32)
    pool = chat._http()._transport._pool
    assert (pool._max_connections, pool._max_keepalive_connections) == (32, 32)
    chat.close()
