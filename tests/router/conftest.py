"""Fixtures of the router tests."""

from __future__ import annotations

import pytest

from imad.router import Router
from tests.router.router_helpers import make_router


@pytest.fixture
def router() -> Router:
    return make_router()


@pytest.fixture
def saved_router(tmp_path, router):
    path = tmp_path / "ckpt"
    router.save(path)
    return path
