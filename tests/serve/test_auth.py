"""Bearer auth: no key configured → open; otherwise the exact key, compared in constant time."""

from __future__ import annotations

import hmac

import pytest

from imad.errors import ServeError
from imad.serve import auth
from imad.serve.auth import check_bearer


def test_open_without_a_key():
    check_bearer(None, None)
    check_bearer("Bearer anything", None)


@pytest.mark.parametrize("header", ["Bearer k3y", "bearer k3y", "Bearer  k3y "])
def test_the_right_key_passes(header):
    check_bearer(header, "k3y")


@pytest.mark.parametrize(("header", "code"), [
    (None, "missing_api_key"), ("", "missing_api_key"), ("Bearer wrong", "invalid_api_key"),
    ("Bearer k3", "invalid_api_key"), ("Bearer k3yy", "invalid_api_key"), ("Basic azN5", "invalid_api_key"),
    ("k3y", "invalid_api_key"), ("Bearer kéy", "invalid_api_key")])
def test_anything_else_is_a_401_with_a_challenge(header, code):
    with pytest.raises(ServeError) as caught:
        check_bearer(header, "k3y")
    error = caught.value
    assert (error.status, error.code, error.type) == (401, code, "authentication_error")
    assert error.headers["WWW-Authenticate"].startswith("Bearer")
    assert "k3y" not in error.message


def test_the_comparison_is_constant_time(monkeypatch):
    seen, compare = [], hmac.compare_digest

    def spy(a, b):
        seen.append((a, b))
        return compare(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    check_bearer("Bearer k3y", "k3y")
    assert seen == [(b"k3y", b"k3y")]
