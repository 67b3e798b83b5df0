"""Bearer-token auth of the routing server, compared in constant time.

Only the /v1 endpoints need the key; /health stays open so load balancers can probe it.
`hmac.compare_digest` keeps the comparison's time independent of where a guess first differs.
"""

from __future__ import annotations

import hmac

from imad.errors import ServeError

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="imad"'}


def check_bearer(authorization: str | None, api_key: str | None) -> None:
    """Pass when no key is configured or the header carries it; else raise ServeError 401."""
    if api_key is None:
        return
    if not authorization:
        raise ServeError(401, "missing API key: send the header 'Authorization: Bearer <key>'",
                         type="authentication_error", code="missing_api_key", headers=_CHALLENGE)
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise ServeError(401, "the Authorization header must read 'Bearer <key>'",  # never echo it
                         type="authentication_error", code="invalid_api_key", headers=_CHALLENGE)
    if not hmac.compare_digest(token.strip().encode("utf-8"), api_key.encode("utf-8")):
        raise ServeError(401, "incorrect API key", type="authentication_error",
                         code="invalid_api_key", headers=_CHALLENGE)
