"""The request pipelines' shared parts: the router at each τ is built once, not per request."""

from __future__ import annotations

from imad.llm.openai_http import OpenAICompatibleChat
from imad.serve.factory import MAX_CACHED_THRESHOLDS
from imad.serve.model_names import ModelChoice
from tests.support.serving import echo_factory


def test_requests_with_one_tau_share_one_router_copy_set_to_it():
    factory = echo_factory()
    first = factory.build(ModelChoice("imad-acemad-0.3", "acemad", 0.3))
    second = factory.build(ModelChoice("imad-svrmad-0.3", "svrmad", 0.3))
    assert first.router is second.router and first.router is not factory.router
    assert (first.router.tau, first.tau_source, second.tau_source) == (0.3, "request", "request")
    assert first.router.tau_method == "set for this pipeline (--tau)"
    default = factory.build(ModelChoice("imad", "acemad", None))
    assert default.router is factory.router and default.tau_source == "checkpoint"


def test_the_cache_of_tau_routers_is_bounded():
    factory = echo_factory()
    for step in range(MAX_CACHED_THRESHOLDS + 10):
        factory.router_for(step / 1000)
    assert len(factory._tau_routers) == MAX_CACHED_THRESHOLDS
    assert min(factory._tau_routers) == 10 / 1000  # the oldest went first


def test_the_upstream_client_keeps_a_connection_per_slot():
    chat = OpenAICompatibleChat("m", base_url="http://127.0.0.1:9/v1", max_concurrency=32)
    pool = chat._http()._transport._pool
    assert (pool._max_connections, pool._max_keepalive_connections) == (32, 32)
    chat.close()
