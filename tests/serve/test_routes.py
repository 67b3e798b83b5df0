"""Every route needs the API key unless it is on the public list (issue 33, item 3).

The static check enumerates the app's routes; the loopback check asks every route without a key
and expects 401 from all but the public ones (and 404 from a path that does not exist).
"""

from __future__ import annotations

import httpx
import pytest
from fastapi import APIRouter

import imad.serve.app as app_module
from imad.serve import ServeSettings, create_app
from imad.serve.routes.guard import public_paths, served_routes, unguarded_routes
from tests.serve.conftest import API_KEY
from tests.support.serving import echo_factory

SETTINGS = [ServeSettings(api_key=API_KEY, scoring_processes=0),
            ServeSettings(api_key=API_KEY, scoring_processes=0, metrics_public=True)]


def api_routes(app) -> list:
    return [route for route in served_routes(app.routes) if getattr(route, "methods", None)]


@pytest.mark.parametrize("settings", SETTINGS, ids=["metrics behind the key", "--metrics-public"])
def test_every_route_is_guarded_or_on_the_public_list(settings):
    app = create_app(settings, echo_factory())
    try:
        public = public_paths(settings)
        assert unguarded_routes(app.routes, public) == []
        # and the public list is exactly what goes unguarded: nothing on it is guarded by mistake
        assert unguarded_routes(app.routes, frozenset()) == sorted(public)
        assert {route.path for route in api_routes(app)} == {
            "/health", "/metrics", "/v1/imad/stats", "/v1/imad/feedback", "/v1/imad/admin/reload",
            "/v1/models", "/v1/models/{model_id}", "/v1/chat/completions"}
    finally:
        app.state.runner.close()


def test_a_route_added_without_the_guard_fails_the_check():
    settings = SETTINGS[0]
    app = create_app(settings, echo_factory())
    try:
        @app.get("/v1/throwaway")
        async def throwaway() -> dict[str, str]:
            return {"open": "to anyone"}

        assert unguarded_routes(app.routes, public_paths(settings)) == ["/v1/throwaway"]
    finally:
        app.state.runner.close()


def test_a_new_router_or_a_route_on_a_public_router_is_guarded_by_default(monkeypatch):
    extra, health_and_more = APIRouter(), APIRouter()

    @extra.get("/v1/extra")
    async def extra_endpoint() -> dict[str, str]:
        return {}

    @health_and_more.get("/health")
    @health_and_more.get("/v1/more")
    async def more() -> dict[str, str]:
        return {}

    monkeypatch.setattr(app_module, "ROUTERS", (extra, health_and_more))
    settings = SETTINGS[0]
    app = create_app(settings, echo_factory())
    try:
        # a router with any non-public path is guarded whole (so /health there needs the key too)
        assert unguarded_routes(app.routes, frozenset()) == []
    finally:
        app.state.runner.close()


def root_of(server) -> str:
    return server.base_url.removesuffix("/v1")


def example_path(path: str) -> str:
    return path.replace("{model_id}", "imad")


@pytest.mark.parametrize("settings", SETTINGS, ids=["metrics behind the key", "--metrics-public"])
def test_without_a_key_every_route_but_the_public_ones_is_a_401(start_server, settings):
    server = start_server(settings)
    app = server.server.config.app
    asked = {}
    for route in api_routes(app):
        for method in sorted(route.methods):
            response = httpx.request(method, root_of(server) + example_path(route.path), timeout=60)
            asked[(method, route.path)] = response.status_code
            if response.status_code == 401:
                assert response.json()["error"]["code"] == "missing_api_key"
                assert response.headers["www-authenticate"].startswith("Bearer")
    expected = {key: 200 if key[1] in public_paths(settings) else 401 for key in asked}
    assert asked == expected and asked[("POST", "/v1/chat/completions")] == 401
    for path in ("/v1/nope", "/nope", "/docs", "/redoc", "/openapi.json", "/v1/imad/nope"):
        response = httpx.get(root_of(server) + path, timeout=60)
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found", path
    with_key = httpx.get(root_of(server) + "/v1/imad/stats", timeout=60,
                         headers={"Authorization": f"Bearer {API_KEY}"})
    assert with_key.status_code == 200 and with_key.json()["router"]



WRONG_METHODS = [("GET", "/v1/chat/completions"), ("DELETE", "/v1/imad/stats"),
                 ("PUT", "/v1/imad/feedback"), ("GET", "/v1/imad/admin/reload"), ("POST", "/v1/models"),
                 ("PATCH", "/v1/models/imad")]


@pytest.mark.parametrize("settings", SETTINGS, ids=["metrics behind the key", "--metrics-public"])
def test_without_a_key_a_wrong_method_on_a_guarded_route_is_a_401_not_a_405(start_server, settings):
    """A 405 would tell a caller without the key which routes exist; the key check comes first."""
    server = start_server(settings)
    for method, path in [*WRONG_METHODS, ("POST", "/metrics")]:
        response = httpx.request(method, root_of(server) + path, timeout=60)
        if path in public_paths(settings):
            assert response.status_code == 405, (method, path)
            continue
        assert response.status_code == 401, (method, path)
        assert response.json()["error"]["code"] == "missing_api_key"
        assert response.headers["www-authenticate"].startswith("Bearer")
    for method, path in WRONG_METHODS:  # with the key, the method is what is wrong
        response = httpx.request(method, root_of(server) + path, timeout=60,
                                 headers={"Authorization": f"Bearer {API_KEY}"})
        assert response.status_code == 405 and response.json()["error"]["code"] == "method_not_allowed"
    assert httpx.post(root_of(server) + "/health", timeout=60).status_code == 405  # public


def test_head_health_answers_like_get_without_a_body(start_server):
    server = start_server()
    get = httpx.get(root_of(server) + "/health", timeout=60)
    head = httpx.head(root_of(server) + "/health", timeout=60)
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["content-type"] == get.headers["content-type"] == "application/json"
    assert int(head.headers["content-length"]) > 0
